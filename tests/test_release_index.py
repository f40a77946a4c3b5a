"""The registries' lists of releases, asked for real: the order a bisection walks, the times an install resolves as of.

The npm registry and the package index are reachable where these tests run;
failures are produced for real too (a refused port, a local server answering
nonsense, a PATH without npm), never by replacing the code under test.
"""

from __future__ import annotations

import threading
from datetime import timezone
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from harness.errors import InputError
from harness.targets import release_index
from harness.targets.release_index import Release, release, releases


@pytest.fixture(autouse=True)
def fresh_cache():
    """Each test asks the registry itself (the per-process cache would otherwise carry one test's answer to the next)."""
    release_index._releases.cache_clear()
    yield
    release_index._releases.cache_clear()


def assert_in_order_and_utc(listed: list[Release], earlier: str, later: str) -> None:
    versions = [r.version for r in listed]
    assert versions.index(earlier) < versions.index(later)
    first, second = (listed[versions.index(v)] for v in (earlier, later))
    assert first.uploaded < second.uploaded
    assert all(r.uploaded.tzinfo is not None and r.uploaded.utcoffset().total_seconds() == 0 for r in listed)


def test_the_package_index_lists_inspect_swe_in_version_order_with_upload_times():
    listed = releases("pypi", "inspect-swe")
    assert_in_order_and_utc(listed, "0.2.45", "0.2.72")
    versions = [r.version for r in listed]
    assert versions.index("0.2.42.dev3") < versions.index("0.2.42") < versions.index("0.2.43")  # pre-releases kept
    assert versions.index("0.2.9") < versions.index("0.2.10")  # by version, not by text
    assert release("pypi", "inspect-swe", "0.2.45").uploaded.isoformat() == "2026-03-20T20:45:39.665181+00:00"
    assert release("pypi", "inspect-swe", "0.2.45.0").version == "0.2.45"  # PEP 440 spells it either way


def test_the_npm_registry_lists_claude_code_in_semver_order_with_upload_times():
    listed = releases("npm", "@anthropic-ai/claude-code")
    assert_in_order_and_utc(listed, "2.1.236", "2.1.332")
    versions = [r.version for r in listed]
    assert "created" not in versions and "modified" not in versions
    assert versions.index("2.1.9") < versions.index("2.1.10") < versions.index("2.1.98") < versions.index("2.1.100")
    assert release("npm", "@anthropic-ai/claude-code", "2.1.236").uploaded.tzinfo == timezone.utc


def test_a_second_ask_is_answered_from_the_process_cache():
    releases("pypi", "inspect-swe")
    releases("pypi", "inspect-swe")
    assert release_index._releases.cache_info().hits == 1
    mine = releases("pypi", "inspect-swe")
    mine.clear()  # the caller's list is its own
    assert releases("pypi", "inspect-swe")


@pytest.mark.parametrize("registry, package, version, words", [
    ("pypi", "inspect-swe", "9.9.9", ["package index has no release 9.9.9 of inspect-swe", "newest listed"]),
    ("npm", "@anthropic-ai/claude-code", "0.0.0-nope", ["npm registry has no release 0.0.0-nope of @anthropic-ai/claude-code"]),
    ("pypi", "harness-no-such-package-zz9", "1.0", ["package index has no package harness-no-such-package-zz9"]),
    ("npm", "harness-no-such-package-zz9", "1.0.0", ["npm registry has no package harness-no-such-package-zz9"]),
    ("cargo", "serde", "1.0.0", ["unknown registry 'cargo'"]),
])
def test_what_a_registry_does_not_list_is_one_clear_line(registry, package, version, words):
    with pytest.raises(InputError) as caught:
        release(registry, package, version)
    message = str(caught.value)
    assert "\n" not in message and all(word in message for word in words), message


def test_an_unreachable_index_is_an_input_error_not_a_traceback(monkeypatch):
    monkeypatch.setattr(release_index, "PYPI_JSON_URL", "http://127.0.0.1:9/pypi/{package}/json")  # discard port: refused
    with pytest.raises(InputError, match="cannot reach the package index to list the releases of inspect-swe"):
        releases("pypi", "inspect-swe")


@pytest.mark.parametrize("body", [b"<html>not json</html>", b'{"info": {}}', b'{"releases": {"1.0": [{"size": 1}]}}'])
def test_an_index_answering_nonsense_is_an_input_error(monkeypatch, body):
    class Nonsense(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Nonsense)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setattr(release_index, "PYPI_JSON_URL", f"http://127.0.0.1:{server.server_port}/pypi/{{package}}/json")
        with pytest.raises(InputError, match="answer about demo is not the expected JSON"):
            releases("pypi", "demo")
    finally:
        server.shutdown()


def test_without_npm_on_path_the_error_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(InputError, match="releases of left-pad: npm is not on PATH"):
        releases("npm", "left-pad")


# --------------------------------------------------------------------------- the orders themselves

SEMVER_ORDER = ["0.9.0", "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2",
                "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.1", "1.2.0", "1.10.0", "2.0.0"]  # SemVer 2.0's own example
PEP440_ORDER = ["0.9", "1.0.dev1", "1.0a1.dev1", "1.0a1", "1.0a2", "1.0b1", "1.0rc1", "1.0c2", "1.0", "1.0+local.1",
                "1.0.post1.dev1", "1.0.post1", "1.0-2", "1.0.1", "1.1.dev0", "1.1", "1.10", "1!0.1"]


def test_semver_order_is_the_specifications():
    assert sorted(reversed(SEMVER_ORDER), key=release_index._semver_key) == SEMVER_ORDER
    assert release_index._semver_key("1.0.0+build.5") == release_index._semver_key("1.0.0")


def test_the_own_pep440_key_orders_as_packaging_does():
    """The key used where packaging is not importable: checked against packaging itself where it is."""
    shuffled = PEP440_ORDER[::-1]
    assert sorted(shuffled, key=release_index._own_pep440_key) == PEP440_ORDER
    assert release_index._own_pep440_key("1.0.0") == release_index._own_pep440_key("1.0")
    assert release_index._own_pep440_key("not a version")[0] == -1  # sorts first, never raises
    from packaging.version import Version  # pytest's own dependency: always here when this runs

    assert sorted(shuffled, key=Version) == PEP440_ORDER
