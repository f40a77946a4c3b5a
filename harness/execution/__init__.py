"""How one step runs: the StepExecutor protocol (a subprocess, in-process, or a launcher's process), chosen once per target."""
