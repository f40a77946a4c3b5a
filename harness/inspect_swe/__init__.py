"""inspect_swe's claude_code() driven by a real `inspect eval`: the scenario's plan, the task file, the launcher."""
