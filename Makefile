# Two entry points do all the set-up on a fresh machine with Python 3.11:
#   make figure1   reproduce the Duff paper's Figure 1 into results/figure1/
#   make test      lint + the test suite (what .ci/run calls)
# and a few more: make figure2, make regress (the CI accuracy gate), make benchmarks,
# make docs (the documentation, strictly: part of make test).
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
FIGURE1_DIR ?= results/figure1
FIGURE2_DIR ?= results/figure2
N_JOBS ?= -1

.PHONY: figure1 figure2 test lint docs regress benchmarks

$(INSTALLED): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test,peers,scale,docs,realdata]"
	touch $(INSTALLED)

figure1: $(INSTALLED)
	$(BIN)/python -m experiments.run experiment=figure1 results_dir=$(FIGURE1_DIR) n_jobs=$(N_JOBS)
	$(BIN)/python scripts/plot_figure1.py $(FIGURE1_DIR)

figure2: $(INSTALLED)
	$(BIN)/python -m experiments.run experiment=figure2 results_dir=$(FIGURE2_DIR) n_jobs=$(N_JOBS)
	$(BIN)/python scripts/plot_figure2.py $(FIGURE2_DIR)

lint: $(INSTALLED)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

test: lint docs
	$(BIN)/python -m pytest -n 2 --dist worksteal

# The documentation, strictly (a warning is an error), into docs/_build/html (git-ignored);
# docs/_ext/duff_docs.py first writes docs/generated/ (catalogue, config lists, API pages).
docs: $(INSTALLED)
	$(BIN)/sphinx-build -W --keep-going -q -b html docs docs/_build/html

regress: $(INSTALLED)
	$(BIN)/python -m experiments.regress --n-jobs $(N_JOBS)

benchmarks: $(INSTALLED)
	$(BIN)/python benchmarks/bench_release.py
	$(BIN)/python benchmarks/bench_sweep.py --dask --gate
	$(BIN)/python benchmarks/bench_memory.py
	$(BIN)/python benchmarks/bench_small.py --label after --out benchmarks/results/small_after.json
	$(BIN)/python benchmarks/bench_racing.py --out benchmarks/results/racing.json
	$(BIN)/python benchmarks/bench_harness.py --label after --out benchmarks/results/harness_after.json
	$(BIN)/python benchmarks/report.py
