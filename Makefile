# refimpl: every target builds or updates .venv itself (only Python 3.10+ is needed).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
JB     := $(VENV)/bin/jupyter-book

.PHONY: help venv venv-torch book book-clean test test-fast lint format test-parity test-gpu clean bench

help:
	@echo "make book         build the book into _build/html (offline; opens at _build/html/index.html)"
	@echo "make test         lint, unit/property/doctest/notebook tests, and a clean -W book build"
	@echo "make test-fast    the pytest suite only (no lint, no book build)"
	@echo "make test-parity  parity tests against transformers / rotary-embedding-torch (installs torch 2.13.0 CPU)"
	@echo "make test-gpu     GPU parity tests (run on CPU when CUDA is absent)"
	@echo "make format       apply ruff formatting"
	@echo "make bench        benchmark tables (apply, tables, book build, tests; installs torch)"

$(STAMP): pyproject.toml
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[book,test]"
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $(STAMP)

venv: $(STAMP)

book: $(STAMP)
	$(JB) build . -W --keep-going
	@echo
	@echo "Book built: open $(CURDIR)/_build/html/index.html"

lint: $(STAMP)
	$(VENV)/bin/ruff check refimpl tests benchmarks
	$(VENV)/bin/ruff format --check refimpl tests benchmarks

format: $(STAMP)
	$(VENV)/bin/ruff format refimpl tests benchmarks
	$(VENV)/bin/ruff check --fix refimpl tests benchmarks

test-fast: $(STAMP)
	HYPOTHESIS_PROFILE=ci $(VENV)/bin/pytest -q

test: $(STAMP) lint test-fast
	rm -rf _build
	$(JB) build . -W --keep-going --all
	@echo "Book built from a clean cache with zero warnings."

TORCH_STAMP := $(VENV)/.installed-torch

# torch 2.13.0 (CPU build), transformers and rotary-embedding-torch, pinned in pyproject's extras.
$(TORCH_STAMP): $(STAMP) pyproject.toml
	$(PY) -m pip install -q -e ".[book,test,parity]"
	touch $(TORCH_STAMP)

venv-torch: $(TORCH_STAMP)

test-parity: $(TORCH_STAMP)
	HYPOTHESIS_PROFILE=ci $(VENV)/bin/pytest -q -m parity tests/parity

test-gpu: $(TORCH_STAMP)
	HYPOTHESIS_PROFILE=ci $(VENV)/bin/pytest -q -rs -m gpu tests/gpu

clean:
	rm -rf _build .pytest_cache .hypothesis

# Benchmarks (speed and memory tables; see benchmarks/README.md). Needs torch for the peers.
bench: $(TORCH_STAMP)
	cd benchmarks && ../$(PY) bench_apply.py
	cd benchmarks && ../$(PY) bench_build_tables.py
	cd benchmarks && ../$(PY) bench_book.py
	cd benchmarks && ../$(PY) bench_tests.py
