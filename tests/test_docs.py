"""The documentation: the site builds strictly, so a broken link fails the suite, and the start page stays one page.

`mkdocs build --strict` runs as the real command `make docs` runs, into a
temporary folder; a copy of the docs with one link to a missing page, and one
with a page left out of the nav, must fail that same build, so a strictness
that checks nothing fails here. The CLI reference is generated from the argparse
parsers at build time: the built page must name every subcommand and every
option of `harness run`, whatever was added since.
"""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness.cli import COMMANDS, build_parser
from harness.commands import common

ROOT = Path(__file__).resolve().parent.parent
MKDOCS = Path(sys.executable).with_name("mkdocs")
README_MAX_LINES = 250


def _mkdocs_build(project: Path, site: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run([str(MKDOCS), "build", "--strict", "--config-file", str(project / "mkdocs.yml"),
                           "--site-dir", str(site)], cwd=project, env=env, capture_output=True, text=True,
                          timeout=300)


def _copy_of_the_docs(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(ROOT / "mkdocs.yml", project / "mkdocs.yml")
    shutil.copytree(ROOT / "docs", project / "docs", ignore=shutil.ignore_patterns("__pycache__"))
    return project


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("site")
    done = _mkdocs_build(ROOT, folder)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    return folder


def _page_text(site: Path, page: str) -> str:
    """A built page's article as text, tags stripped."""
    source = (site / page / "index.html").read_text(encoding="utf-8")
    article = source[source.index("<article"):source.index("</article>")]
    return html.unescape(re.sub(r"<[^>]+>", "", article))


def test_the_site_builds_strictly(site):
    assert (site / "index.html").is_file()
    assert (site / "reference" / "cli" / "index.html").is_file()


def test_a_link_to_a_missing_page_fails_the_build(tmp_path):
    project = _copy_of_the_docs(tmp_path)
    assert _mkdocs_build(project, tmp_path / "before").returncode == 0  # the copy builds as the tree does
    index = project / "docs" / "index.md"
    index.write_text(index.read_text() + "\nSee [a page nobody wrote](reference/no-such-page.md).\n")
    done = _mkdocs_build(project, tmp_path / "after")
    assert done.returncode != 0
    assert "no-such-page.md" in done.stdout + done.stderr


def test_a_link_to_a_missing_anchor_fails_the_build(tmp_path):
    project = _copy_of_the_docs(tmp_path)
    index = project / "docs" / "index.md"
    index.write_text(index.read_text() + "\nSee [a section nobody wrote](tutorial.md#no-such-section).\n")
    done = _mkdocs_build(project, tmp_path / "site")
    assert done.returncode != 0
    assert "no-such-section" in done.stdout + done.stderr


def test_a_page_left_out_of_the_nav_fails_the_build(tmp_path):
    project = _copy_of_the_docs(tmp_path)
    (project / "docs" / "how-to" / "orphan.md").write_text("# A page the nav forgot\n")
    done = _mkdocs_build(project, tmp_path / "site")
    assert done.returncode != 0
    assert "orphan.md" in done.stdout + done.stderr


def _nav_pages(entries) -> list[str]:
    pages = []
    for entry in entries:
        if isinstance(entry, str):
            pages.append(entry)
        elif isinstance(entry, dict):
            for value in entry.values():
                pages += _nav_pages(value) if isinstance(value, list) else [value]
    return pages


def test_every_page_is_in_the_nav_once():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    nav = _nav_pages(config["nav"])
    on_disk = sorted(str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md")
                     if "hooks" not in p.relative_to(ROOT / "docs").parts)
    assert sorted(nav) == on_disk
    assert len(nav) == len(set(nav))


def test_the_readme_is_one_page_that_starts_with_using_it_in_your_repository():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) < README_MAX_LINES
    headings = [line for line in lines if line.startswith("## ")]
    assert headings[0] == "## Use it in your repository"
    # the two commands for working on the harness itself, literally
    assert any(line.startswith("make run ") for line in lines) and any(line.startswith("make test ") for line in lines)


def test_every_link_of_the_readme_leads_to_a_file():
    """GitHub renders the README outside the site: its links into docs/ are checked here, not by mkdocs."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [link for link in links if "://" not in link]
    assert local, "the README links into the documentation"
    missing = [link for link in local if not (ROOT / link).exists()]
    assert not missing


def test_the_cli_page_names_every_subcommand_and_every_option_of_run(site):
    text = _page_text(site, "reference/cli")
    for name in COMMANDS:
        assert f"harness {name}" in text, name
    parser = build_parser()
    subparsers = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    run = subparsers.choices["run"]
    options = [option for action in run._actions for option in action.option_strings if option not in ("-h", "--help")]
    assert "--target" in options  # the parser is the one `harness run` uses, not an empty stand-in
    source = (site / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    start = source.index('id="harness-run"')
    section = html.unescape(re.sub(r"<[^>]+>", "", source[start:source.index("<h2", start)]))
    for option in options:
        assert option in section, option


def test_the_exit_codes_page_holds_every_code_the_commands_return(site):
    text = _page_text(site, "reference/exit-codes")
    codes = {name: value for name, value in vars(common).items() if name.startswith("EXIT_") and isinstance(value, int)}
    assert set(codes.values()) >= {0, 1, 2, 130}
    for name, value in codes.items():
        assert re.search(rf"\b{value}\s+{name}\b", text), name


def test_the_pytest_page_lists_every_option_of_the_plugin(site):
    text = _page_text(site, "reference/pytest-plugin")
    from harness import pytest_plugin

    declared = []

    class Recorder:
        def getgroup(self, *args, **kwargs):
            return self

        def addoption(self, *names, **kwargs):
            declared.extend(names)

        def addini(self, *args, **kwargs):
            pass

    pytest_plugin.pytest_addoption(Recorder())
    assert declared and all(name.startswith("--harness-") for name in declared)
    for name in declared:
        assert name in text, name


def _readme_yaml_blocks() -> list[str]:
    return re.findall(r"```yaml\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S)


def test_the_readmes_scenario_and_target_file_are_what_the_harness_reads(tmp_path):
    """A team copies these first: the harness's own readers take them as written."""
    import harness.fakeapi.formats.anthropic  # noqa: F401  (the rules the scenario reader is given)
    from harness.scenario.reader import scenario_from_text
    from harness.targets.target_file import load_target_file

    blocks = _readme_yaml_blocks()
    scenarios = [b for b in blocks if re.search(r"(?m)^steps:", b)]
    targets = [b for b in blocks if re.search(r"(?m)^session_id:", b)]
    assert len(scenarios) == 1 and len(targets) == 1, blocks
    assert scenario_from_text(scenarios[0], "README.md").steps
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)  # `repo: .`: the team's repository
    (tmp_path / "harness-target.yaml").write_text(targets[0])
    assert load_target_file(tmp_path / "harness-target.yaml").commands["resume"]


def test_the_readmes_ci_step_names_only_inputs_the_action_declares():
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    steps = [step for block in _readme_yaml_blocks() if "uses: OWNER/REPO@REF" in block
             for step in yaml.safe_load(block) if "OWNER/REPO" in str(step.get("uses", ""))]
    assert len(steps) == 1, steps
    given = set(steps[0]["with"])
    assert given <= set(action["inputs"]) and all(action["inputs"][k].get("required") is not True or k in given
                                                   for k in action["inputs"])
    commented = set(re.findall(r"(?m)^\s*# ([a-z-]+):", next(b for b in _readme_yaml_blocks() if "OWNER/REPO@REF" in b)))
    assert commented <= set(action["inputs"]), commented - set(action["inputs"])
