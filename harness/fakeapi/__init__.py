"""A local stand-in for model provider APIs that answers from a script and journals every byte.

Import the submodules (core, server, journal, exchange, protocols.*) directly:
the scenario model imports the checks, which read exchanges, so this package
must stay import-free to avoid a cycle.
"""
