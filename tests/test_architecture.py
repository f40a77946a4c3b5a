"""The house as docs/explanation/architecture.md draws it: the layering holds in the code, and the page matches the tree.

The contracts are import-linter's (in pyproject.toml), run here as the real
`lint-imports` command; each is also shown to break on a copy of the package
with one forbidden import added, so a contract that checks nothing fails here.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "explanation" / "architecture.md"
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
MAX_LINES = 350


def _lint_imports(cwd: Path) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(cwd), "HOME": str(cwd), "LANG": "C.UTF-8"}
    return subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def _contracts() -> list[dict]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]


def test_every_contract_holds():
    done = _lint_imports(ROOT)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert f"Contracts: {len(_contracts())} kept, 0 broken." in done.stdout


# One forbidden import per contract: (module that gains it, what it imports, the contract that must break).
MUTATIONS = [
    ("checks/identity.py", "harness.targets.base", "Checks are pure over the journal"),
    ("report/junit.py", "harness.checks.evidence", "Reports render evidence"),
    ("fakeapi/script.py", "harness.run.runner", "The fake API knows no targets and no runs"),
    ("journal/exchange.py", "harness.commands.common", "Nothing imports the command line"),
    ("scenario/model.py", "harness.journal.exchange", "Arrows point down"),
]


@pytest.mark.parametrize("module, imported, contract", MUTATIONS, ids=[m[2].split(":")[0] for m in MUTATIONS])
def test_a_forbidden_import_breaks_its_contract(tmp_path, module, imported, contract):
    shutil.copytree(ROOT / "harness", tmp_path / "harness", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    assert _lint_imports(tmp_path).returncode == 0  # the copy is analysed, not the installed package
    target = tmp_path / "harness" / module
    target.write_text(target.read_text() + f"\nimport {imported}  # the forbidden arrow\n")
    done = _lint_imports(tmp_path)
    assert done.returncode != 0, done.stdout[-3000:]
    broken = [line for line in done.stdout.splitlines() if line.endswith(" BROKEN")]
    assert any(line.startswith(contract) for line in broken), done.stdout[-3000:]


def _fenced_after(marker: str) -> str:
    text = PAGE.read_text()
    start = text.index(marker)
    return text[start:].split("```", 2)[1]


def test_the_page_draws_the_layers_the_contract_enforces():
    layered = next(c for c in _contracts() if c["type"] == "layers")
    drawn = [line.strip() for line in _fenced_after("<!-- layers:").splitlines() if line.strip()]
    assert drawn == layered["layers"]


def _packages_on_the_page() -> list[str]:
    text = PAGE.read_text()
    table = text[text.index("<!-- packages:"):].split("\n## ", 1)[0]
    return re.findall(r"^\| `([\w.]+/?)` \|", table, re.M)


def test_the_page_names_every_package_and_only_those():
    named = _packages_on_the_page()
    tree = sorted(
        f"{p.name}/" if p.is_dir() else p.name
        for p in (ROOT / "harness").iterdir()
        if (p.is_dir() and (p / "__init__.py").exists()) or (p.suffix == ".py" and p.name not in ("__init__.py", "__main__.py"))
    )
    assert sorted(named) == tree
    assert len(named) == len(set(named))


def test_every_layer_is_a_package_on_the_page():
    layered = next(c for c in _contracts() if c["type"] == "layers")
    members = {m.strip() for layer in layered["layers"] for m in re.split(r"[|:]", layer)}
    on_the_page = {name.rstrip("/").removesuffix(".py") for name in _packages_on_the_page()}
    assert members == on_the_page


def test_no_module_holds_two_ideas_by_size():
    """Past ~350 lines a module probably holds two ideas: split it by idea, not by line count."""
    long = {str(p.relative_to(ROOT)): n for p in sorted((ROOT / "harness").rglob("*.py"))
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long
