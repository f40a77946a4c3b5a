"""`harness explore`: generated step sequences against a target, shrunk to the shortest failure, saved as scenarios."""
