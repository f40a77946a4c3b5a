"""The incident catalog's metadata: read as strictly as a scenario, and each entry run on its own targets.

Every file in incidents/ is read here (no agent runs: the catalog's verdicts are `make incidents`' job, and the
fresh-clone run records them), so a broken entry fails `make test` at once.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.errors import InputError
from harness.scenario.reader import load_scenario, scenario_from_text
from harness.targets.registry import family_for

ROOT = Path(__file__).resolve().parent.parent
HARNESS = Path(sys.executable).parent / "harness"
ENTRY = """\
name: an-incident
incident:
  source: {repository: acme/agent, issue: 7, title: "Resume drops the rules", link: "https://github.com/acme/agent/issues/7"}
  affected: [reference:drop-append-on-resume]
  fixed: reference
  targets: ["reference:drop-append-on-resume", reference]
  outcome: reproduced
  bytes_show: the resumed request has no rules
append: "Rules: never delete files."
steps:
  - launch: {prompt: "Remember 17.", reply: "Noted."}
  - resume: {prompt: "Add 5.", reply: "22."}
checks: [appended_exactly_once]
expect:
  "reference:drop-append-on-resume": {appended_exactly_once: fail}
"""


def test_an_entry_reads_into_its_incident():
    incident = scenario_from_text(ENTRY, "e.yaml").incident
    assert incident.source.reference == "acme/agent#7" and incident.source.kind == "issue"
    assert incident.targets == ("reference:drop-append-on-resume", "reference") and incident.fixed == "reference"


@pytest.mark.parametrize("old, new, said", [
    ("issue: 7,", "issue: 0,", "e.yaml:3: incident.source.issue: expected a positive issue number"),
    ("issue: 7,", "issue: 7, pull: 8,", "incident.source: expected exactly one of issue or pull"),
    ("acme/agent, issue", "acme, issue", "incident.source.repository: expected owner/name"),
    ('link: "https://', 'link: "http://', "incident.source.link: expected an https:// link"),
    ("outcome: reproduced", "outcome: maybe", "e.yaml:7: incident.outcome: expected one of reproduced, differs"),
    ("  fixed: reference\n", "  fixed: reference\n  fixd: x\n", "unknown key 'fixd'"),
    ("  bytes_show: the resumed request has no rules\n", "", "incident: missing required key 'bytes_show'"),
    ("  targets: [\"reference:drop-append-on-resume\", reference]\n", "  targets: []\n",
     "incident.targets: expected a non-empty list"),
])
def test_a_broken_entry_is_one_line_naming_where(old, new, said):
    assert old in ENTRY
    with pytest.raises(InputError) as caught:
        scenario_from_text(ENTRY.replace(old, new), "e.yaml")
    assert said in str(caught.value)


def test_run_without_target_runs_each_entry_on_its_own_targets_and_target_overrides(tmp_path):
    (tmp_path / "entry.yaml").write_text(ENTRY)
    (tmp_path / "plain.yaml").write_text("name: plain\nsteps:\n  - launch: {prompt: hi, reply: hello}\nchecks: [identity_stable]\n")
    done = subprocess.run([str(HARNESS), "run", str(tmp_path), "--report-dir", str(tmp_path / "r"), "-q"],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    runs = {(r["scenario"], r["target"]) for r in json.loads((tmp_path / "r" / "results.json").read_text())["runs"]}
    assert runs == {("an-incident", "reference:drop-append-on-resume"), ("an-incident", "reference"), ("plain", "reference")}
    done = subprocess.run([str(HARNESS), "run", str(tmp_path / "entry.yaml"), "--target", "reference",
                           "--report-dir", str(tmp_path / "r2"), "-q"], capture_output=True, text=True, timeout=300)
    runs = {(r["scenario"], r["target"]) for r in json.loads((tmp_path / "r2" / "results.json").read_text())["runs"]}
    assert runs == {("an-incident", "reference")}


CATALOG = sorted((ROOT / "incidents").glob("*.yaml"))


def test_the_catalog_holds_at_least_twelve_entries():
    assert len(CATALOG) >= 12, [p.name for p in CATALOG]


@pytest.mark.parametrize("path", CATALOG, ids=lambda p: p.name)
def test_every_entry_is_an_incident_whose_targets_belong_to_a_family(path):
    scenario = load_scenario(path)
    incident = scenario.incident
    assert incident is not None, f"{path.name} has no incident: section"
    for spec in incident.targets:
        assert family_for(spec) is not None or spec.split("@")[0].endswith(".yaml"), spec
    # the affected release fails something it is expected to fail, unless the report did not reproduce
    affected = incident.targets[0]
    fails = [check for check in scenario.checks if scenario.expected_verdict(affected, check) == "fail"]
    assert fails or incident.outcome == "differs", f"{path.name}: its affected target {affected} is expected to pass"
