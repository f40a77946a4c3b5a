# Two commands for a fresh clone: `make run` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
# pytest workers: every scenario item has its own fake API, port and HOME.
WORKERS ?= auto

.PHONY: install run test clean

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
	touch $(STAMP)

# The scenario library against the clean reference agent and each of its known
# defects; exit 0 when every verdict matches the scenarios' expectations.
run: install
	$(BIN)/harness run scenarios --target 'reference:*'

test: install
	$(BIN)/python -m pytest -n $(WORKERS) -p no:cacheprovider

clean:
	rm -rf $(VENV) reports/run-* reports/latest
