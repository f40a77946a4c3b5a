"""A run as it happens: the run session, one scenario through one target, and the matrix (serial or pooled)."""
