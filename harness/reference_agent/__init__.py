"""A small but real command-line agent the harness can be validated against.

It speaks the Anthropic Messages API (streaming or not) to any base URL,
persists sessions under HOME, and resumes and compacts in fresh processes,
like the launchers the harness judges. Its switchable known defects
(see defects.py) each reproduce a real class of launcher bug, so that every
check can be shown to fail on a broken agent and pass on the clean one.

Run it as ``python -m harness.reference_agent``; stdlib only.
"""

from .defects import DEFECT_DESCRIPTIONS, KNOWN_DEFECTS

__all__ = ["DEFECT_DESCRIPTIONS", "KNOWN_DEFECTS"]
