# seqheur — two commands on a fresh machine: `make demo` and `make test`.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
DEMO    := demo-out
PYTEST  := $(BIN)/python -m pytest

.PHONY: demo test test-slow test-oracle test-lab test-dist test-all bench bench-quick lab venv clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[test,dask]'
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	SEQHEUR_PROGRESS=1 $(BIN)/python -m seqheur.demo $(DEMO)

test: $(STAMP)
	$(PYTEST) -q

# Heavier suites, each behind a marker; pytest's exit 5 (no test selected) is not a failure.
test-slow: $(STAMP)
	$(PYTEST) -q -m slow || [ $$? -eq 5 ]
test-oracle: $(STAMP)
	$(PYTEST) -q -m oracle || [ $$? -eq 5 ]
test-lab: $(STAMP)
	$(PYTEST) -q -m lab || [ $$? -eq 5 ]
test-dist: $(STAMP)
	$(PYTEST) -q -m dist || [ $$? -eq 5 ]
test-all: test test-slow test-oracle test-dist

bench: $(STAMP)
	$(BIN)/python bench/run.py

bench-quick: $(STAMP)
	$(BIN)/python bench/run.py --quick

clean:
	rm -rf $(DEMO) bench/work .pytest_cache
