"""harness: drive an agent through fresh-process steps against a journaling fake model API."""

__version__ = "0.1.0"
