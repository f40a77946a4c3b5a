"""Scenarios: the model, the file's grammar read section by section, the replies, and the writer."""
