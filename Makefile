# Two commands for a fresh clone: `make run` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
# pytest workers: every scenario item has its own fake API, port and HOME.
WORKERS ?= auto

# The agent builds and suites `make run` uses are the [tool.harness] table's (pyproject.toml); `harness install`
# installs each family's pinned builds into its tools_dir (.tools/ here), reused across runs. inspect_swe's fix
# (examples/inspect-swe-fix) is a git repository of the measured release with the first seed's fix on top, built
# once into .tools/ for the inspect-swe suites.
INSPECT_SWE := $(shell sed -n 's/^MEASURED_VERSION = "\(.*\)"/\1/p' harness/targets/inspect_swe.py)
FIX_REPO    := .tools/inspect-swe-repo

# Root installs system packages directly; anyone else through sudo.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# The flakiness budget: the clean reference through the whole library, this many times, under -n 2.
SOAK_ROUNDS ?= 50

.PHONY: install tools browser run incidents test soak bench docs clean

install: $(STAMP)

tools: install $(FIX_REPO)
	$(BIN)/harness install

$(FIX_REPO): examples/inspect-swe-fix/every-launch.patch examples/inspect-swe-fix/make_repo.py | install
	rm -rf $(FIX_REPO)
	$(BIN)/python examples/inspect-swe-fix/make_repo.py $(FIX_REPO) --version $(INSPECT_SWE)

# Debian's Chromium and ChromeDriver: the HTML report is tested in a real headless browser.
browser:
	@if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then \
	  echo "installing Debian's chromium and chromium-driver for the HTML report's browser test"; \
	  $(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver; \
	fi

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	@# The distribution was called `harness` before it took a name of its own on PyPI: two would both register `harness`.
	$(BIN)/python -m pip uninstall --quiet --yes harness 2>/dev/null || true
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
	touch $(STAMP)

# Every suite of the [tool.harness] table in pyproject.toml, into one report folder (reports/run-<time>, linked as
# reports/latest): the scenario library against the clean reference agent and each of its known defects; the
# Claude Code suite against both Claude Code builds under every launch policy; auto-compaction against the pinned
# build (the older one refuses the turn instead of compacting); the code-puppy suite against both code-puppy
# releases (every format and memory setting on the pinned one) and the pydantic-ai example; the inspect-swe suite
# on the measured release with both Claude Code builds, pin on and off, and the fix commit (auto-compaction with
# the pinned build only, as above); inspect_swe's codex_cli, gemini_cli, opencode, kimi_code, mini_swe_agent and antigravity agents; the common set
# (launch, retry, compaction, resume) on Codex, Gemini CLI, Qwen Code, opencode, Claude Code and both Claude Agent
# SDKs under every launch policy; the Agent SDKs' own suite (launch checks, fork, continue); and Gemini CLI's and
# Codex's compaction by usage numbers. Exit 0 when every verdict matches the scenarios' expectations; a failed run
# does not stop later ones.
run: tools
	$(BIN)/harness run --suite all -n auto

# The incident catalog (incidents/, docs/findings/incidents.md): every entry on its own targets, the affected
# release and the fixed one, each installed on first use. Exit 0 when every entry judges as recorded.
incidents: tools
	$(BIN)/harness run incidents

test: tools browser
	$(BIN)/python -m pytest -n $(WORKERS) -p no:cacheprovider

# The flakiness budget (not part of make test): every run of the library attempted SOAK_ROUNDS times on the clean
# reference; a run whose attempts disagree is reported `flaky` (each attempt's journal kept) and fails the target.
# The report goes to reports/soak.
soak: install
	$(BIN)/harness run scenarios --target reference -n 2 --repeat $(SOAK_ROUNDS) --quiet --report-dir reports/soak

# What the harness costs, measured in one run (not part of make test): its overhead over the bare agent processes
# (reference and the pinned Claude Code), the fake API's added latency and throughput, in-process exploration
# speed, the whole reference library serial against -n 2, and the gate: each suite as make run runs it, its wall time
# against its agent processes' own CPU time over the cores. Writes reports/bench/bench.json and bench.md.
bench: tools
	$(BIN)/python -m harness.bench --out reports/bench

# The documentation site (mkdocs.yml, docs/) into site/, strictly: a broken link or anchor, or a page missing from
# the nav, fails it. tests/test_docs.py runs the same build in `make test`.
docs: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

clean:
	rm -rf $(VENV) .tools reports/run-* reports/latest site
