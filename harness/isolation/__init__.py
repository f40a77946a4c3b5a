"""What keeps a step apart: its process group and warden, its disposable home and workdir, its network namespace, the launch shim."""
