"""The real code-puppy from PyPI, pinned and older releases, over both wire formats.

Each step is a real `code-puppy -p ... -r NAME` process in its own virtualenv
from the tool folder (`make test` installs both releases first; a missing one is
installed here, and one that cannot be installed fails with pip's reason, never
a skip). Verdicts must match the scenarios' measured expectations, and the
identity and prefix verdicts are re-derived here from the journal's raw request
bytes, without the harness's normalizer, so a check that drifted from the bytes
fails here too.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness.journal.exchange import MAIN
from harness.results import RunResult
from harness.run.runner import run_scenario
from harness.scenario.reader import load_scenario
from harness.targets import code_puppy, resolve_target

ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "scenarios" / "code-puppy"
PINNED, OLDER = code_puppy.PINNED_VERSION, code_puppy.OLDER_VERSION

# Every scenario on the pinned release in both formats; the memory plugin where it matters;
# the older release over OpenAI. The README's table comes from `make run`, which runs them all.
MATRIX = [
    *((path.name, f"code-puppy@{PINNED}+{wire}+no-memory") for path in sorted(SUITE.glob("*.yaml")) for wire in code_puppy.FORMATS),
    ("memory-plugin-grows-prefix.yaml", f"code-puppy@{PINNED}+openai+memory"),
    ("memory-plugin-grows-prefix.yaml", f"code-puppy@{PINNED}+anthropic+memory"),
    *((path.name, f"code-puppy@{OLDER}+openai+no-memory") for path in sorted(SUITE.glob("*.yaml"))),
]


def run(scenario_file: str, name: str, tmp_path: Path) -> tuple[RunResult, Path]:
    (target,) = resolve_target(name)  # inside the test: an install failure fails it with pip's reason
    journal = tmp_path / "journal.jsonl"
    return run_scenario(load_scenario(SUITE / scenario_file), target, journal), journal


# ---------------------------------------------------------------------------------------- the bytes, read again


def raw_main_requests(journal: Path) -> list[dict]:
    records = [json.loads(line) for line in journal.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [json.loads(r["body"]) for r in records if r["class"] == MAIN and r["status"] == 200]


def system_parts(body: dict) -> list[dict]:
    """System text as sent: Anthropic's `system` blocks, or OpenAI's leading system messages."""
    if "system" in body:
        system = body["system"]
        return [{"text": system}] if isinstance(system, str) else list(system)
    parts = []
    for message in body["messages"]:
        if message["role"] not in ("system", "developer"):
            break
        content = message["content"]
        parts.append({"text": content if isinstance(content, str) else "".join(p.get("text", "") for p in content)})
    return parts


def identity(body: dict) -> str | None:
    for part in system_parts(body):
        match = re.search(code_puppy.IDENTITY_REGEX, part["text"])
        if match:
            return match.group(0)
    return None


def prefix(body: dict) -> str:
    """What a provider caches of the system prompt: up to the last system breakpoint (all of it when none), plus tools."""
    parts = system_parts(body)
    marked = [i for i, p in enumerate(parts) if p.get("cache_control")]
    kept = parts[: marked[-1] + 1] if marked else parts
    return json.dumps(body.get("tools"), sort_keys=True) + "\n".join(p["text"] for p in kept)


def derived_verdicts(journal: Path) -> dict[str, str]:
    bodies = raw_main_requests(journal)
    assert bodies, "no main request reached the fake API"
    identities = {identity(b) for b in bodies}
    return {
        "identity_stable": "pass" if len(identities) == 1 and None not in identities else "fail",
        "prefix_stable": "pass" if len({prefix(b) for b in bodies}) == 1 else "fail",
    }


# ---------------------------------------------------------------------------------------- the runs


@pytest.mark.parametrize("scenario_file, name", MATRIX, ids=[f"{s.removesuffix('.yaml')}-{n}" for s, n in MATRIX])
def test_verdicts_match_the_measured_expectations_and_the_bytes(scenario_file, name, tmp_path):
    result, journal = run(scenario_file, name, tmp_path)
    assert result.error is None, result.error
    verdicts = {c.check: c.verdict for c in result.checks}
    unexpected = {c.check: f"expected {c.expected_verdict}, got {c.verdict}: {c.message}" for c in result.checks if not c.as_expected}
    assert not unexpected, unexpected
    for check, verdict in derived_verdicts(journal).items():
        if check in verdicts:
            assert verdicts[check] == verdict, f"{check}: the check says {verdicts[check]}, the raw bytes say {verdict}"


def test_every_step_is_a_fresh_process_and_the_session_is_resumed(tmp_path):
    result, journal = run("three-turns-three-processes.yaml", f"code-puppy@{PINNED}+openai+no-memory", tmp_path)
    assert result.error is None, result.error
    pids = [pid for step in result.steps for pid in step.pids]
    assert len(pids) == len(set(pids)) == 3, pids
    bodies = raw_main_requests(journal)
    assert [sum(m["role"] == "user" for m in b["messages"]) for b in bodies] == [1, 2, 3]
    assert all("\x1b" not in step.stdout_tail for step in result.steps), "escape codes reached the report"


def test_the_agent_id_is_minted_per_process_on_the_pinned_release(tmp_path):
    """The second seed's finding, from the bytes: three processes, three ids, all else in the prompt equal."""
    result, journal = run("three-turns-three-processes.yaml", f"code-puppy@{PINNED}+openai+no-memory", tmp_path)
    bodies = raw_main_requests(journal)
    ids = [identity(b) for b in bodies]
    assert len(set(ids)) == 3, ids
    scrubbed = {re.sub(code_puppy.IDENTITY_REGEX, "ID", prefix(b)) for b in bodies}
    assert len(scrubbed) == 1, "only the id line should differ between the three prompts"
