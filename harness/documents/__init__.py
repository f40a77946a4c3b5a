"""User-written YAML read with its locations and guarded, for every file reader (scenarios, target files)."""
