"""Step scripts of the Claude Agent SDK targets: run by the SDK's own interpreter (python or node), never imported."""
