"""One module per subcommand: what the command line calls, and nothing imports."""
