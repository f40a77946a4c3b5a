"""`harness serve` as a user runs it: a real subprocess, real requests, real signals.

A port out of range is one line and exit 2; SIGTERM finalises a recording as
Ctrl-C does; a journal the disk refuses is one line and exit 1, with every
request still answered.
"""

from __future__ import annotations

import json
import resource
import signal
import subprocess
import sys
from pathlib import Path

import anthropic
import pytest
from vocabulary import as_foreground

HARNESS = Path(sys.executable).parent / "harness"  # the console script pip installed, as a user runs it


def serve(*args: str, cwd: Path, preexec_fn=as_foreground) -> subprocess.Popen:
    return subprocess.Popen([str(HARNESS), "serve", *args], cwd=cwd, stderr=subprocess.PIPE, text=True,
                            preexec_fn=preexec_fn)


def base_url_of(proc: subprocess.Popen) -> str:
    first = proc.stderr.readline()
    assert first.startswith("fake model API listening on http://127.0.0.1:"), first
    return first.split()[-1]


@pytest.mark.parametrize("port", ["99999", "-1", "65536", "100000000000000000000"])
def test_a_port_out_of_range_is_one_line_and_exit_2(tmp_path, port):
    done = subprocess.run([str(HARNESS), "serve", "--port", port], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2
    assert done.stderr == f"harness: error: --port {port}: expected a port number from 0 to 65535 (0: any free port)\n"


def test_a_port_that_is_not_a_number_is_a_usage_error_naming_it(tmp_path):
    done = subprocess.run([str(HARNESS), "serve", "--port", "eighty"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr == "harness: error: --port eighty: expected a port number from 0 to 65535 (0: any free port)\n"


def test_sigterm_finalises_a_recording_as_ctrl_c_does(tmp_path):
    folder = tmp_path / "incident"
    proc = serve("--record", str(folder), cwd=tmp_path)
    try:
        base_url = base_url_of(proc)
        client = anthropic.Anthropic(base_url=base_url, api_key="sk-test-not-real", max_retries=0, timeout=30)
        client.messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "before the stop"}])
    finally:
        proc.send_signal(signal.SIGTERM)  # by its pid, as a service manager or `kill PID` does
        rest = proc.communicate(timeout=30)[1]
    assert proc.returncode == 0, rest  # as on Ctrl-C
    assert "Traceback" not in rest and f"recorded 1 request(s) in {folder}/" in rest
    session = json.loads((folder / "session.json").read_text())
    assert session["requests"] == 1 and session["ended"] is not None and session["base_url"] == base_url
    (record,) = [json.loads(line) for line in (folder / "journal.jsonl").read_text().splitlines()]
    assert json.loads(record["body"])["messages"][0]["content"] == "before the stop"


def test_a_journal_the_disk_refuses_is_one_line_and_exit_1_and_every_request_is_answered(tmp_path):
    """RLIMIT_FSIZE in the serving process: its journal may not grow past 4 KiB (EFBIG)."""
    journal = tmp_path / "serve.jsonl"

    def limited() -> None:
        as_foreground()
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    proc = serve("--journal", str(journal), cwd=tmp_path, preexec_fn=limited)
    try:
        client = anthropic.Anthropic(base_url=base_url_of(proc), api_key="sk-test-not-real", max_retries=0, timeout=30)
        for n in range(4):  # about 2 KiB of body each, journaled raw and normalized
            message = client.messages.create(model="m", max_tokens=5,
                                             messages=[{"role": "user", "content": f"{n} " + "x" * 1000}])
            assert message.content[0].text  # answered normally: the agent did nothing wrong
    finally:
        proc.send_signal(signal.SIGINT)
        rest = proc.communicate(timeout=30)[1]
    assert proc.returncode == 1, rest
    assert "Traceback" not in rest
    errors = [line for line in rest.splitlines() if line.startswith("harness: error: ")]
    assert errors == [f"harness: error: cannot write the journal {journal}: [Errno 27] File too large"]
    raw = journal.read_bytes()
    assert raw.endswith(b"\n") and [json.loads(line)["seq"] for line in raw.splitlines()] == [1]
