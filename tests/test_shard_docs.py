"""docs/how-to/shards.md: its GitHub Actions workflow and Kubernetes Jobs are valid YAML whose harness commands the
harness's own argument parser accepts, with as many shards as the matrix (or the Indexed Job) starts.

Neither CI can run here; what can drift is checked: a renamed option, a `--shard` whose n is not the matrix's,
the 0-based JOB_COMPLETION_INDEX taken for a 1-based shard, a merge that names other folders than were uploaded.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import yaml

from harness.cli import build_parser

PAGE = Path(__file__).resolve().parent.parent / "docs" / "how-to" / "shards.md"


def _yaml_blocks() -> list[list[dict]]:
    blocks = re.findall(r"```yaml\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)
    return [list(yaml.safe_load_all(block)) for block in blocks]


def _harness_commands(script: str, values: dict[str, str]) -> list[list[str]]:
    """Each `harness ...` command of a shell line, with the CI's expressions replaced by the values they take."""
    for pattern, value in values.items():
        script = script.replace(pattern, value)
    assert "${{" not in script and "$((" not in script, script
    commands = []
    for part in re.split(r"\|\||&&|;|\|", script):
        words = shlex.split(part)
        if words and words[0] == "harness":
            commands.append(words[1:])
    return commands


def _parses(argv: list[str]):
    return build_parser().parse_args(argv)  # argparse exits (SystemExit) on an unknown option: the test fails


def test_the_github_workflow_shards_and_merges_with_real_options():
    (workflow,), _ = _yaml_blocks()
    jobs = workflow["jobs"]
    shards = jobs["shard"]["strategy"]["matrix"]["shard"]
    assert shards == list(range(1, len(shards) + 1))
    uploaded = []
    ran = []
    for shard in shards:
        for step in jobs["shard"]["steps"]:
            values = {"${{ matrix.shard }}": str(shard)}
            for argv in _harness_commands(step.get("run", ""), values):
                args = _parses(argv)
                if args.command == "run":
                    ran.append(args.shard)
                    report_dir = args.report_dir
            if step.get("uses", "").startswith("actions/upload-artifact"):
                name = step["with"]["name"].replace("${{ matrix.shard }}", str(shard))
                assert step["with"]["path"].replace("${{ matrix.shard }}", str(shard)).rstrip("/") == report_dir
                uploaded.append(name)
    assert ran == [f"{i}/{len(shards)}" for i in shards]
    merge = jobs["merge"]
    assert merge["needs"] == "shard" and "cancelled()" in merge["if"]
    download = next(s for s in merge["steps"] if s.get("uses", "").startswith("actions/download-artifact"))
    (argv,) = [a for s in merge["steps"] for a in _harness_commands(s.get("run", ""), {})]
    args = _parses(argv)
    assert args.command == "merge-reports"
    assert args.shards == [f"{download['with']['path']}/{name}" for name in uploaded]


def test_the_kubernetes_indexed_job_turns_the_0_based_index_into_a_1_based_shard():
    _, (shards_job, merge_job) = _yaml_blocks()
    spec = shards_job["spec"]
    assert spec["completionMode"] == "Indexed" and spec["completions"] == spec["parallelism"]
    count = spec["completions"]
    (container,) = spec["template"]["spec"]["containers"]
    folders = []
    for index in range(count):  # what JOB_COMPLETION_INDEX is in each pod: 0 .. completions-1
        (argv,) = _harness_commands(container["args"][0], {"$((JOB_COMPLETION_INDEX+1))": str(index + 1)})
        args = _parses(argv)
        assert args.command == "run" and args.shard == f"{index + 1}/{count}"
        folders.append(args.report_dir)
    (merger,) = merge_job["spec"]["template"]["spec"]["containers"]
    (argv,) = _harness_commands(merger["args"][0], {})
    args = _parses(argv)
    assert args.command == "merge-reports" and args.shards == folders
