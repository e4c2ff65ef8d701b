# Two entry points: `make demo` (embedded default, no servers) and `make test`
# (everything: system packages, Python dependencies, servers, lint, types, tests).
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
EDITABLE := --config-settings editable_mode=strict
# setuptools announces every strict editable install with a warning; it is information only.
QUIET  := PYTHONWARNINGS="ignore:Editable installation"
# Three workers on two cores: much of the suite waits on servers (Chromium, the
# Kubernetes controllers, SeaweedFS), and a third worker fills those waits (8 min 4 s
# with two, 7 min 27 s with three, measured alone on this kind of machine).  Tests that
# share a session server run on one worker (tests/conftest.py schedules them), so every
# server still starts once.
PYTEST_FLAGS ?= -n 3

.PHONY: demo test setup venv venv-all lint types unit bench bench-regret-harness bench-quick clean

$(VENV)/.base: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(QUIET) $(PIP) install -q -e . $(EDITABLE)
	touch $@

$(VENV)/.all: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(QUIET) $(PIP) install -q -e '.[all,dev]' $(EDITABLE)
	touch $@ $(VENV)/.base

venv: $(VENV)/.base
venv-all: $(VENV)/.all

demo: venv
	$(QUIET) $(PIP) install -q -e . $(EDITABLE)
	$(VENV)/bin/preimage demo

setup:
	bash fixtures/setup.sh

lint: venv-all
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports

types: venv-all
	$(VENV)/bin/mypy -p preimage

# setup and the virtual environment at once: both wait mostly on downloads, and setup's
# Go builds run in its background meanwhile (docs/development.md: the cold CI budget).
test:
	$(MAKE) --no-print-directory -j2 setup venv-all
	$(QUIET) $(PIP) install -q -e '.[all,dev,mysql-c]' $(EDITABLE)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy -p preimage
	$(PY) -m pytest $(PYTEST_FLAGS)

# The regret benchmark: every scenario, with the HTML report (bench-report/index.html).
bench: setup venv-all
	$(QUIET) $(PIP) install -q -e '.[all,dev,mysql-c]' $(EDITABLE)
	$(VENV)/bin/preimage bench --report bench-report

# The regret suite through each real harness, every protector that installs into one (long).
bench-regret-harness: setup venv-all
	$(QUIET) $(PIP) install -q -e '.[all,dev,mysql-c]' $(EDITABLE)
	for h in claude-code codex; do \
	  $(VENV)/bin/preimage bench --suite regret --harness $$h \
	    --protectors none,preimage,undo,observed,checkpoint,backupper --report bench-regret-$$h; \
	done

bench-quick: venv-all
	$(VENV)/bin/preimage bench --quick

unit: venv-all
	$(PY) -m pytest tests/core

clean:
	rm -rf $(VENV) build *.egg-info
