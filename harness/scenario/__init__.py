"""Scenarios: the model, the file's grammar read by one reader per section (composed, never inherited), the writer."""
