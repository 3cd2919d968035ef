# ndflow developer targets.  Everything runs inside ./.venv, which is created
# on first use, so `make demo` / `make test` work from a fresh clone on a
# machine that only has python3 (with venv and pip).

PYTHON     ?= python3
VENV       ?= .venv
VPY        := $(VENV)/bin/python
PIP        := $(VPY) -m pip
PIP_FLAGS  ?= --quiet --disable-pip-version-check
# pytest-xdist workers; override with `make test WORKERS=auto`
WORKERS    ?= 2
PYTEST_ARGS ?=
BENCH_ARGS ?=
SPHINX_ARGS ?=

.PHONY: all demo test bench docs venv clean

all: test

# --- virtual environment and installs (stamp files skip pip on re-runs) ----

$(VPY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install $(PIP_FLAGS) --upgrade pip

venv: $(VPY)

$(VENV)/.installed: pyproject.toml | $(VPY)
	$(PIP) install $(PIP_FLAGS) -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(VPY)
	$(PIP) install $(PIP_FLAGS) -e '.[test]'
	touch $@

$(VENV)/.installed-bench: pyproject.toml | $(VPY)
	$(PIP) install $(PIP_FLAGS) -e '.[bench]'
	touch $@

$(VENV)/.installed-docs: pyproject.toml | $(VPY)
	$(PIP) install $(PIP_FLAGS) -e '.[docs]'
	touch $@

# --- targets -----------------------------------------------------------------

demo: $(VENV)/.installed
	$(VPY) -m ndflow.tour

test: $(VENV)/.installed-test
	$(VPY) -m pytest -q -n $(WORKERS) --durations=15 $(PYTEST_ARGS)

bench: $(VENV)/.installed-bench
	$(VPY) -m benchmarks $(BENCH_ARGS)

# the documentation site, offline, every warning an error: open docs/_build/html/index.html
docs: $(VENV)/.installed-docs
	$(VPY) -m sphinx -b html -W --keep-going -n -q $(SPHINX_ARGS) docs docs/_build/html

clean:
	rm -rf $(VENV) build dist .pytest_cache .hypothesis docs/_build docs/reference
	rm -rf *.egg-info ndflow.egg-info
	find . -name __pycache__ -type d -prune -not -path './.git/*' -exec rm -rf {} +
