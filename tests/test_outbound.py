"""Traffic meant for other hosts: caught through the proxy variables, journaled as outbound, refused, never forwarded."""

from __future__ import annotations

import http.client
import json
import socket
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from harness.journal.exchange import MAIN, OUTBOUND
from harness.journal.requests import read_journal
from harness.targets import resolve_target
from harness.isolation.workspace import Workspace, step_environment
from vocabulary import messages_body, parse, post


# ============================================================================ 4. outbound traffic


def assert_never_contacted(listener: socket.socket) -> None:
    time.sleep(0.05)
    try:
        conn, _ = listener.accept()
    except BlockingIOError:
        return
    conn.close()
    raise AssertionError("the fake API forwarded a request to another host")


def test_connect_is_refused_journaled_as_outbound_and_never_opened(served, bystander):
    api, server, path = served
    destination = f"127.0.0.1:{bystander.getsockname()[1]}"
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    conn.set_tunnel("127.0.0.1", bystander.getsockname()[1])
    with pytest.raises(OSError, match="Tunnel connection failed: 403"):
        conn.request("GET", "/")
    conn.close()
    assert_never_contacted(bystander)
    for journal in (api.journal.exchanges(), read_journal(path)):
        assert [(e.klass, e.method, e.status) for e in journal] == [(OUTBOUND, "CONNECT", 403)]
        assert journal[0].path == destination
        assert destination in journal[0].error and "refused" in journal[0].error


def test_absolute_uri_request_is_refused_with_403_journaled_and_never_forwarded(served, bystander):
    api, server, _ = served
    url = f"http://127.0.0.1:{bystander.getsockname()[1]}/upload"
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": server.base_url}))
    with pytest.raises(urllib.error.HTTPError) as caught:
        opener.open(urllib.request.Request(url, data=b'{"secret": 1}', method="POST"), timeout=10)
    assert caught.value.code == 403
    body = json.loads(caught.value.read())
    assert body["type"] == "error" and body["error"]["type"] == "permission_error"
    assert_never_contacted(bystander)
    (exchange,) = api.journal.exchanges()
    assert (exchange.klass, exchange.method, exchange.status) == (OUTBOUND, "POST", 403)
    assert f"127.0.0.1:{bystander.getsockname()[1]}" in exchange.error
    assert exchange.body == b'{"secret": 1}'  # journaled as it arrived


def test_https_through_the_proxy_variables_is_refused_and_the_api_keeps_serving(served):
    api, server, _ = served
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({"https": server.base_url}))
    with pytest.raises(urllib.error.URLError, match="403"):
        opener.open("https://example.invalid/v1/messages", timeout=10)
    status, _, _ = post(server, messages_body())
    assert status == 200
    assert [(e.klass, e.method, e.path) for e in api.journal.exchanges()] == [
        (OUTBOUND, "CONNECT", "example.invalid:443"), (MAIN, "POST", "/v1/messages"),
    ]


def test_every_proxy_variable_leads_to_the_fake_api_and_loopback_is_exempt(tmp_path):
    workspace = Workspace.create("proxy", parent=tmp_path)
    inherited = {"PATH": "/usr/bin", "HTTPS_PROXY": "http://corp-proxy.example:3128", "all_proxy": "socks5://x:1080"}
    env = step_environment(workspace, "http://127.0.0.1:4242", {}, inherited=inherited)
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        assert env[name] == "http://127.0.0.1:4242", name
    assert "127.0.0.1" in env["NO_PROXY"].split(",") and "127.0.0.1" in env["no_proxy"].split(",")


PROBE_AGENT = """\
import json, os, urllib.error, urllib.request
body = {"model": "m", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]}
request = urllib.request.Request(os.environ["ANTHROPIC_BASE_URL"] + "/v1/messages", data=json.dumps(body).encode(),
                                 headers={"content-type": "application/json"})
urllib.request.urlopen(request, timeout=10).read()
for url in ("http://example.invalid/telemetry", "https://updates.example.invalid/latest"):
    try:
        urllib.request.urlopen(url, timeout=10)
    except (urllib.error.URLError, OSError):
        pass
print(json.dumps({"session_id": "probe-session"}))
"""


def test_a_run_whose_agent_reaches_for_another_host_gets_a_step_note_naming_it(run, tmp_path):
    (tmp_path / "probe.py").write_text(PROBE_AGENT)
    target_file = tmp_path / "probe.yaml"
    target_file.write_text(
        "name: probe\n"
        'launch: ["{python}", "{target_dir}/probe.py"]\n'
        'resume: ["{python}", "{target_dir}/probe.py"]\n'
        "session_id: {stdout_json: session_id}\n"
        "timeout_s: 20\n"
    )
    sc = parse("name: probe", "checks: [identity_stable]", "steps:", "  - launch: {prompt: hi}")
    result = run(sc, resolve_target(str(target_file))[0])
    assert result.error is None, result.error
    (step,) = result.steps
    assert step.classes == {MAIN: 1, OUTBOUND: 2}
    (note,) = [n for n in step.notes if "another host" in n]
    assert "example.invalid" in note and "updates.example.invalid" in note and note.startswith("2 ")
    journal = read_journal(Path(result.journal))
    assert sorted(e.method for e in journal if e.klass == OUTBOUND) == ["CONNECT", "GET"]
    assert all(e.status == 403 and e.step == 1 for e in journal if e.klass == OUTBOUND)


def test_a_key_in_an_outbound_url_is_redacted_in_the_journal_and_the_notes(served):
    api, server, path = served
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": server.base_url}))
    with pytest.raises(urllib.error.HTTPError):
        opener.open("http://example.invalid/v1/data?api_key=SECRET123&page=2", timeout=10)
    (exchange,) = api.journal.exchanges()
    assert (exchange.klass, exchange.path, exchange.destination) == (OUTBOUND, "http://example.invalid/v1/data", "example.invalid")
    assert exchange.query == "api_key=[redacted]&page=2"
    assert "SECRET123" not in path.read_text() and "SECRET123" not in (exchange.error or "")


def test_a_proxy_request_for_the_api_itself_is_answered_as_a_direct_one(served):
    """code-puppy 0.0.827 sends even loopback through the proxy variables: that reaches nothing but this API."""
    api, server, _ = served
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": server.base_url}))
    request = urllib.request.Request(f"{server.base_url}/v1/messages", data=json.dumps(messages_body()).encode(),
                                     headers={"content-type": "application/json"}, method="POST")
    with opener.open(request, timeout=10) as response:
        assert response.status == 200
        assert json.loads(response.read())["type"] == "message"
    (exchange,) = api.journal.exchanges()
    assert (exchange.klass, exchange.path, exchange.status) == (MAIN, "/v1/messages", 200)
    assert exchange.notes == ["sent through the proxy variables to this API's own address", "request outside any step"]


@pytest.mark.parametrize("request_line", [
    "GET http://deploy:hunter2PLANTED@example.invalid/v1/data HTTP/1.1",
    "CONNECT deploy:hunter2PLANTED@example.invalid:443 HTTP/1.1",
])
def test_a_password_in_an_outbound_address_is_redacted_in_the_journal_and_the_error(served, request_line):
    api, server, path = served
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as conn:
        conn.sendall(f"{request_line}\r\nHost: example.invalid\r\nContent-Length: 0\r\n\r\n".encode())
        assert conn.recv(65536).startswith(b"HTTP/1.1 403")
    (exchange,) = api.journal.exchanges()
    assert exchange.klass == OUTBOUND and "deploy:[redacted]@example.invalid" in exchange.path
    assert "hunter2PLANTED" not in path.read_text() and "hunter2PLANTED" not in (exchange.error or "")
