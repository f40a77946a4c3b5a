"""The CI job `harness init` writes, and where that job gets the harness from.

A gate must run the same harness the team tried on its machine, so the job is
pinned to where this installation came from, as pip recorded it (PEP 610's
direct_url.json): installed from a git URL on GitHub, the workflow `uses:` the
composite action (action.yml at the harness's root) at that very commit.
Anywhere else (an index, a wheel, a local folder, another git host) no `uses:`
can name it, so the job runs the commands itself after `pip install
REQUIREMENT`, and says which line to edit when the requirement is only a guess.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from importlib import metadata
from urllib.parse import urlsplit, urlunsplit

from harness import DISTRIBUTION

GITHUB_WORKFLOW = ".github/workflows/harness.yml"
GITLAB_JOB = ".gitlab/harness.gitlab-ci.yml"
CI_CHOICES = ("github", "gitlab", "none")
GATE_REPORTS = "harness-reports/gate"
_GITHUB = re.compile(r"^(?:https?|ssh|git)://(?:[^@/]+@)?github\.com[:/](?P<owner>[A-Za-z0-9_.-]+)/"
                     r"(?P<repo>[A-Za-z0-9_.-]+?)(?:\.git)?/?$")
_COMMIT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


@dataclass(frozen=True)
class HarnessSource:
    """Where this harness was installed from, as a CI job can name it."""

    origin: str  # said in the workflow's comment: what pip recorded
    requirement: str  # what `pip install` takes to install the same harness (a guess when `guessed`)
    action: str | None = None  # OWNER/REPO[/SUBDIR]@COMMIT when the harness came from GitHub at a commit
    guessed: bool = False  # the requirement is the distribution's bare name: the job says to edit it
    given: bool = False  # the requirement came from --requirement


def harness_source(requirement: str | None = None) -> HarnessSource:
    """This installation's source; `requirement` (from --requirement) replaces the one derived from it."""
    try:
        text = metadata.distribution(DISTRIBUTION).read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        text = None
    try:
        recorded = json.loads(text) if text else None
    except json.JSONDecodeError:
        recorded = None
    source = from_direct_url(recorded if isinstance(recorded, dict) else None)
    if requirement:
        return HarnessSource(source.origin, requirement, source.action, guessed=False, given=True)
    return source


def from_direct_url(recorded: dict | None) -> HarnessSource:
    """What PEP 610's direct_url.json says, as a CI job can use it."""
    bare = DISTRIBUTION
    if not recorded or not isinstance(recorded.get("url"), str):
        return HarnessSource("a package index (pip recorded no direct URL)", bare, guessed=True)
    url = _without_credentials(recorded["url"])
    subdirectory = recorded.get("subdirectory") if isinstance(recorded.get("subdirectory"), str) else None
    fragment = f"#subdirectory={subdirectory}" if subdirectory else ""
    vcs = recorded.get("vcs_info") if isinstance(recorded.get("vcs_info"), dict) else None
    if url.startswith("file:"):
        kind = "a local folder" if "dir_info" in recorded else "a local file"
        return HarnessSource(f"{kind} (a file: URL), which a CI machine has no copy of", bare, guessed=True)
    if vcs is not None and vcs.get("vcs") == "git":
        commit = vcs.get("commit_id") if isinstance(vcs.get("commit_id"), str) else ""
        pinned = f"@{commit}" if _COMMIT.fullmatch(commit) else ""
        requirement = f"{bare} @ git+{url}{pinned}{fragment}"
        github = _GITHUB.match(url)
        if github and pinned:
            path = f"{github['owner']}/{github['repo']}" + (f"/{subdirectory.strip('/')}" if subdirectory else "")
            return HarnessSource(f"the git URL {url} at commit {commit}", requirement, action=f"{path}@{commit}")
        return HarnessSource(f"the git URL {url}{' at commit ' + commit if pinned else ''}", requirement)
    return HarnessSource(f"the URL {url}", f"{bare} @ {url}{fragment}")


def _without_credentials(url: str) -> str:
    """The URL less a user and password (pip keeps `git@`, and environment references, which stay)."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    user, _, host = parts.netloc.rpartition("@")
    if user == "git" or re.fullmatch(r"\$\{\w+\}(?::\$\{\w+\})?", user):
        return url
    return urlunsplit(parts._replace(netloc=host))


def _quoted(text: str) -> str:
    """A YAML double-quoted scalar (JSON's string syntax is YAML's)."""
    return json.dumps(text, ensure_ascii=False)


def github_workflow(source: HarnessSource, target_file: str, scenarios: str) -> str:
    """.github/workflows/harness.yml: the composite action at the harness's commit, or the commands themselves."""
    head = f"""\
# {GITHUB_WORKFLOW}, written by `harness init`: the harness as this repository's pull-request gate.
# On every pull request it runs `harness diff` over {scenarios}/ with {target_file} as it is at the pull
# request's base (the baseline) and at its head (the candidate), and fails when a check regresses.
"""
    if source.action is not None:
        requirement = "" if not source.given else (
            f"\n          harness-requirement: {_quoted(source.requirement)}  # what pip installs instead of the action's own")
        return head + f"""\
# The harness is its composite action at the commit this harness was installed from, pip recorded
# {source.origin}: the same harness in CI as on your machine. Change the commit after installing a newer one.
name: harness
on:
  pull_request:
permissions:
  contents: read
  pull-requests: write  # for `comment: "true"`; with comment off, `read` is enough
jobs:
  harness:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
        with:
          fetch-depth: 0  # both revisions must be in the clone
      - uses: {source.action}
        with:
          target-file: {target_file}  # with `repo:`, read as it is at each revision
          scenarios: {scenarios}  # scenario files or folders, one per line
          comment: "true"  # one pull-request comment holding the summary, updated on every push
          # baseline: ""  # default: the pull request's base
          # candidate: ""  # default: the pull request's head
          # extra-targets: ""  # more targets, one per line, run with `harness run` over the same scenarios
          # report-dir: harness-reports  # uploaded as the job's artifact; must be empty or absent{requirement}
"""
    edit = (f"EDIT HARNESS_REQUIREMENT below to what CI installs: a git URL pinned to a commit\n"
            f"# ({DISTRIBUTION} @ git+https://HOST/OWNER/REPO@COMMIT), a wheel's URL, or a released version."
            if source.guessed else "HARNESS_REQUIREMENT below is that source; edit it to install another harness.")
    return head + f"""\
# The harness was installed from {source.origin}.
# A workflow can `uses:` the harness's action only from GitHub at a commit, so this one runs its commands itself.
# {edit}
name: harness
on:
  pull_request:
permissions:
  contents: read
jobs:
  harness:
    runs-on: ubuntu-latest
    env:
      HARNESS_REQUIREMENT: {_quoted(source.requirement)}{"  # EDIT: where CI installs the harness from" if source.guessed else ""}
      REPORT_DIR: {GATE_REPORTS}
    steps:
      - uses: actions/checkout@v4
        with:
          fetch-depth: 0  # both revisions must be in the clone
      - uses: actions/setup-python@v5
        with:
          python-version: "3.11"
      - name: Install the harness
        run: python -m pip install "$HARNESS_REQUIREMENT"
      - name: "harness diff: the pull request's base against its head"
        env:
          BASE_SHA: ${{{{ github.event.pull_request.base.sha }}}}
          HEAD_SHA: ${{{{ github.event.pull_request.head.sha }}}}
        run: >-
          harness diff {scenarios}
          --baseline "{target_file}@$BASE_SHA" --candidate "{target_file}@$HEAD_SHA"
          --report-dir "$REPORT_DIR"
      - name: Summary on the job's page
        if: always()
        run: cat "$REPORT_DIR/summary.md" >> "$GITHUB_STEP_SUMMARY" || true
      - name: Keep the reports
        if: always()
        uses: actions/upload-artifact@v4
        with:
          name: harness-reports
          path: {GATE_REPORTS}
"""


def gitlab_job(source: HarnessSource, target_file: str, scenarios: str) -> str:
    """.gitlab/harness.gitlab-ci.yml: one self-contained merge-request job, extending nothing."""
    edit = (f"EDIT HARNESS_REQUIREMENT below to what CI installs: a git URL pinned to a commit\n"
            f"# ({DISTRIBUTION} @ git+https://HOST/OWNER/REPO@COMMIT), a wheel's URL, or a released version."
            if source.guessed else f"HARNESS_REQUIREMENT below is where this harness came from ({source.origin}).")
    return f"""\
# {GITLAB_JOB}, written by `harness init`: the harness as this repository's merge-request gate.
# It runs `harness diff` over {scenarios}/ with {target_file} as it is at the merge request's base and at
# its head, and fails when a check regresses. Include it from .gitlab-ci.yml:
#   include:
#     - local: {GITLAB_JOB}
# {edit}
harness:
  image: python:3.11
  rules:
    - if: $CI_PIPELINE_SOURCE == "merge_request_event"
  variables:
    GIT_DEPTH: "0"  # both revisions must be in the clone
    HARNESS_REQUIREMENT: {_quoted(source.requirement)}{"  # EDIT: where CI installs the harness from" if source.guessed else ""}
    REPORT_DIR: {GATE_REPORTS}
  script:
    - python -m pip install "$HARNESS_REQUIREMENT"
    - >-
      harness diff {scenarios}
      --baseline "{target_file}@$CI_MERGE_REQUEST_DIFF_BASE_SHA" --candidate "{target_file}@$CI_COMMIT_SHA"
      --report-dir "$REPORT_DIR"
  artifacts:
    when: always
    paths:
      - {GATE_REPORTS}/
    reports:
      junit: {GATE_REPORTS}/junit.xml
"""


def include_line() -> str:
    return f"include:\n  - local: {GITLAB_JOB}"
