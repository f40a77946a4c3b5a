# Two commands for a fresh clone: `make run` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
# pytest workers: every scenario item has its own fake API, port and HOME.
WORKERS ?= auto

# Claude Code builds: the pinned one and an older one that behaves differently on
# resume (harness/targets/claude_code.py says which; `harness install` installs both
# into .tools/, reused across runs).
CLAUDE_CODE_PINNED := $(shell sed -n 's/^PINNED_VERSION = "\(.*\)"/\1/p' harness/targets/claude_code.py)
CLAUDE_CODE_OLDER  := $(shell sed -n 's/^OLDER_VERSION = "\(.*\)"/\1/p' harness/targets/claude_code.py)
# code-puppy releases from PyPI, the same way: the pinned one and the one the seeds' fixes were proposed against.
CODE_PUPPY_PINNED := $(shell sed -n 's/^PINNED_VERSION = "\(.*\)"/\1/p' harness/targets/code_puppy.py)
CODE_PUPPY_OLDER  := $(shell sed -n 's/^OLDER_VERSION = "\(.*\)"/\1/p' harness/targets/code_puppy.py)
# inspect_swe's claude_code() in a real Inspect eval: the release the README measured, and a git
# repository of it with the first seed's fix on top (examples/inspect-swe-fix), built once into .tools/.
INSPECT_SWE := $(shell sed -n 's/^MEASURED_VERSION = "\(.*\)"/\1/p' harness/targets/inspect_swe.py)
FIX_REPO    := .tools/inspect-swe-repo
FIX_TARGET   = +pin+checkout=$(CURDIR)/$(FIX_REPO)\#every-launch-fix
# The pydantic-ai example agent, in both builds (scenarios/code-puppy expects the one to pass, the other to fail).
EXAMPLE_AGENT := pydantic-ai:examples/pydantic-ai-agent/agent.py

# Root installs system packages directly; anyone else through sudo.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# The flakiness budget: the clean reference through the whole library, this many times, under -n 2.
SOAK_ROUNDS ?= 50

.PHONY: install tools browser run test soak bench clean

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

# The scenario library against the clean reference agent and each of its known
# defects; the Claude Code suite against both Claude Code builds under every launch
# policy; auto-compaction against the pinned build (the older one refuses the turn
# instead of compacting); the code-puppy suite against both code-puppy releases
# (every format and memory setting on the pinned one) and the pydantic-ai example;
# the inspect-swe suite on the measured release with both Claude Code builds, pin on
# and off, and the fix commit (auto-compaction with the pinned build only, as above); the common set
# (launch, retry, compaction, resume) on Codex, Gemini CLI, Qwen Code, opencode and Claude Code under every
# launch policy, and Gemini CLI's and Codex's compaction by usage numbers.
# Exit 0 when every verdict matches the scenarios' expectations. Every run happens
# even after a failed one; one report folder each.
run: tools
	@status=0; \
	$(BIN)/harness run scenarios --target 'reference:*' || status=$$?; \
	$(BIN)/harness run scenarios/claude-code \
	  --target 'claude-code@$(CLAUDE_CODE_PINNED)+*' --target 'claude-code@$(CLAUDE_CODE_OLDER)+*' || status=$$?; \
	$(BIN)/harness run scenarios/claude-code-auto-compaction --target 'claude-code@$(CLAUDE_CODE_PINNED)+*' || status=$$?; \
	$(BIN)/harness run scenarios/code-puppy \
	  --target 'code-puppy@$(CODE_PUPPY_PINNED)+*' --target 'code-puppy@$(CODE_PUPPY_OLDER)+openai' \
	  --target 'code-puppy@$(CODE_PUPPY_OLDER)+anthropic' \
	  --target '$(EXAMPLE_AGENT):persisted_agent+*+in-process' --target '$(EXAMPLE_AGENT):process_agent+*+in-process' || status=$$?; \
	$(BIN)/harness run scenarios/inspect-swe \
	  --target 'inspect-swe@$(INSPECT_SWE)+claude-code@$(CLAUDE_CODE_PINNED)+*' --target 'inspect-swe@$(INSPECT_SWE)+claude-code@$(CLAUDE_CODE_OLDER)+*' \
	  --target 'inspect-swe@$(INSPECT_SWE)+claude-code@$(CLAUDE_CODE_PINNED)$(FIX_TARGET)' \
	  --target 'inspect-swe@$(INSPECT_SWE)+claude-code@$(CLAUDE_CODE_OLDER)$(FIX_TARGET)' || status=$$?; \
	$(BIN)/harness run scenarios/inspect-swe-auto-compaction --target 'inspect-swe@$(INSPECT_SWE)+claude-code@$(CLAUDE_CODE_PINNED)+*' \
	  --target 'inspect-swe@$(INSPECT_SWE)+claude-code@$(CLAUDE_CODE_PINNED)$(FIX_TARGET)' || status=$$?; \
	$(BIN)/harness run scenarios/common -n 2 --target 'codex+*' --target 'gemini-cli+*' --target 'qwen-code+*' \
	  --target 'opencode+*' --target 'claude-code+*' || status=$$?; \
	$(BIN)/harness run scenarios/gemini-cli --target 'gemini-cli+*' || status=$$?; \
	$(BIN)/harness run scenarios/codex --target 'codex+*' || status=$$?; \
	exit $$status

test: tools browser
	$(BIN)/python -m pytest -n $(WORKERS) -p no:cacheprovider

# Every round is its own pytest item; one failure fails the target (not part of make test).
soak: install
	$(BIN)/python -m pytest scenarios -n 2 -p no:cacheprovider -q --harness-target reference --harness-repeat $(SOAK_ROUNDS)

# What the harness costs, measured in one run (not part of make test): its overhead over the bare agent processes
# (reference and the pinned Claude Code), the fake API's added latency and throughput, in-process exploration
# speed, and the whole reference library serial against -n 2. Writes reports/bench/bench.json and bench.md.
bench: tools
	$(BIN)/python -m harness.bench --out reports/bench

clean:
	rm -rf $(VENV) .tools reports/run-* reports/latest
