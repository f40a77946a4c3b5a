"""The seams of the scenario grammar: its own check names, the rules installed from above, readers composed.

The grammar (harness/scenario/) imports nothing above it. What it needs from
above is either its own data kept equal to the layer that implements it (the
check names, the default reply text) or a rule that layer installs when
imported (harness/scenario/installed_rules.py): which built-in target names an
`expect:` key may give, and how many events a reply streams. Every entry point
must have both installed before it reads a scenario, or its load-time errors
would differ from the others'.
"""

from __future__ import annotations

import inspect
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness.errors import InputError
from harness.scenario import checks_section, failures, installed_rules, model, reader, replies, steps
from harness.scenario.reader import load_scenario, scenario_from_text

ROOT = Path(__file__).resolve().parent.parent
BAD_EXPECT = (
    "name: bad-expect\nchecks: [identity_stable, prefix_stable]\nsteps: [{launch: {prompt: hi}}]\n"
    "expect:\n  reference:drop-apend: {prefix_stable: fail}\n",
    "expect['reference:drop-apend']: unknown reference defect 'drop-apend'",
)
BAD_CUT = (
    "name: bad-cut\nchecks: [identity_stable]\n"
    "steps: [{launch: {prompt: hi, reply: [{fault: {kind: cut_stream, after_events: 999}}]}}]\n",
    "steps[1].launch.reply[1].fault.after_events: expected at most ",
)


def test_the_grammar_names_the_checks_harness_checks_implements_in_the_same_order():
    from harness.checks import CHECK_NAMES, OPT_IN_CHECKS

    assert checks_section.CHECK_NAMES == tuple(CHECK_NAMES)  # the order is the default list's order
    assert checks_section.OPT_IN_CHECKS == tuple(OPT_IN_CHECKS)


def test_the_default_reply_is_the_one_the_fake_api_answers_with():
    from harness.fakeapi import script

    assert model.DEFAULT_REPLY == script.DEFAULT_REPLY


def test_a_target_file_has_one_command_per_step_kind():
    from harness.targets import target_file

    assert target_file.STEP_KINDS is model.STEP_KINDS  # one list: the grammar's, which the target file reads


def test_no_reader_inherits_another():
    """Each section has its own reader, handed the file's one Reader: none extends another."""
    for module in (checks_section, failures, replies, steps, reader):
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__ and name.endswith("Reader"):
                assert cls.__bases__ == (object,), f"{module.__name__}.{name} inherits {cls.__bases__}"


def _read_with(monkeypatch, kind: str, rule, text: str) -> InputError:
    monkeypatch.setitem(installed_rules._installed, kind, rule)
    with pytest.raises(InputError) as caught:
        scenario_from_text(text, "grammar.yaml")
    return caught.value


def test_expect_names_are_judged_by_the_installed_rule(monkeypatch):
    text = "name: s\nchecks: [identity_stable]\nsteps: [{launch: {prompt: hi}}]\nexpect:\n  my-agent: {identity_stable: fail}\n"
    error = _read_with(monkeypatch, "target_name", lambda name: f"no target {name} here", text)
    assert str(error) == "grammar.yaml:5: expect.my-agent: no target my-agent here"
    monkeypatch.setitem(installed_rules._installed, "target_name", lambda name: None)
    assert scenario_from_text(text).expect == {"my-agent": {"identity_stable": "fail"}}


def test_a_cut_streams_bound_is_the_installed_rules_event_count(monkeypatch):
    text = ("name: s\nchecks: [identity_stable]\n"
            "steps: [{launch: {prompt: hi, reply: [{fault: {kind: cut_stream, after_events: 3}}]}}]\n")
    error = _read_with(monkeypatch, "streamed_events", lambda blocks: ["start", "stop"], text)
    assert "expected at most 2: this turn streams 2 events (start, stop), got 3" in str(error)
    monkeypatch.setitem(installed_rules._installed, "streamed_events", lambda blocks: ["e"] * 3)
    assert scenario_from_text(text).steps[0].turns[0].fault.after_events == 3


def test_without_an_installed_rule_no_file_is_read_unchecked(monkeypatch):
    for (text, _), kind, package in ((BAD_EXPECT, "target_name", "harness.targets"),
                                     (BAD_CUT, "streamed_events", "harness.fakeapi.formats.anthropic")):
        monkeypatch.delitem(installed_rules._installed, kind)
        with pytest.raises(RuntimeError, match=f"{kind} rule is not installed: import {package}"):
            scenario_from_text(text, "grammar.yaml")


# Each entry point, run in a fresh interpreter, on a file that only an installed rule refuses: harness.targets
# and harness.fakeapi install theirs at import, and every entry point imports both before it reads.
_STRICT = textwrap.dedent("""
    import sys
    from harness.scenario import installed_rules

    def strict(kind):
        if kind not in installed_rules._installed:
            raise SystemExit(f"RULE NOT INSTALLED: {kind}")
        return installed_rules._installed[kind]

    installed_rules._installed_or_imported = strict
    entry, argv = sys.argv[1], sys.argv[2:]
    if entry == "pytest":
        import pytest
        sys.exit(pytest.main(["-p", "no:cacheprovider", *argv]))
    from harness import cli
    sys.exit(cli.main(argv))
""")
ENTRY_POINTS = {
    "run": lambda f: ["cli", "run", str(f), "--report-dir", str(f.parent / "report")],
    "run -n 2": lambda f: ["cli", "run", "-n", "2", str(f), "--report-dir", str(f.parent / "report")],
    "diff": lambda f: ["cli", "diff", str(f), "-b", "reference", "-c", "reference", "--report-dir", str(f.parent / "report")],
    "minimize": lambda f: ["cli", "minimize", str(f), "--target", "reference"],
    "pytest plugin": lambda f: ["pytest", str(f), "--harness-target", "reference", "-q"],
}


@pytest.mark.parametrize("document", [BAD_EXPECT, BAD_CUT], ids=["expect name", "cut_stream bound"])
@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_every_entry_point_has_the_rules_installed_before_it_reads(tmp_path, entry, document):
    text, fragment = document
    folder = tmp_path / "scenarios"
    folder.mkdir()
    scenario = folder / "bad.yaml"
    scenario.write_text(text)
    done = subprocess.run([sys.executable, "-c", _STRICT, *ENTRY_POINTS[entry](scenario)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    output = done.stdout + done.stderr
    assert "RULE NOT INSTALLED" not in output, output[-3000:]
    assert fragment in output, output[-3000:]


def test_loading_a_file_and_its_text_read_alike(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(BAD_EXPECT[0])
    with pytest.raises(InputError) as from_file:
        load_scenario(path)
    with pytest.raises(InputError) as from_text:
        scenario_from_text(BAD_EXPECT[0], path)
    assert str(from_file.value) == str(from_text.value)
