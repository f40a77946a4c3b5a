"""harness: drive an agent through fresh-process steps against a journaling fake model API.

The import package and the command are `harness`; the distribution is
`launcher-harness`, because the PyPI name `harness` belongs to an unrelated
project: every install hint the harness prints names DISTRIBUTION, so
following one never installs somebody else's package.
"""

__version__ = "0.1.0"
DISTRIBUTION = "launcher-harness"


def install_hint(extra: str) -> str:
    """The pip command that installs the harness with one of its extras."""
    return f"pip install '{DISTRIBUTION}[{extra}]'"
