# refimpl: every target builds or updates .venv itself (only Python 3.10+ is needed).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
TORCH_STAMP   := $(VENV)/.installed-torch
BROWSER_STAMP := $(VENV)/.installed-browser
JB     := $(VENV)/bin/jupyter-book
# pytest-xdist workers for the test targets (auto: one per core).
PYTEST_JOBS ?= auto
# The built book the browser and workbook suites read: `book` brings it up to date first; CI,
# which has just built it with `make test`, runs them side by side with BOOK_DEP= (two builds of
# one tree at once would race).
BOOK_DEP ?= book

.PHONY: help venv venv-torch book book-clean test test-fast lint format test-parity test-gpu \
	test-browser clean experiments bench

help:
	@echo "make book         build the book into _build/html (offline; open _build/html/index.html)"
	@echo "make test         lint, a clean -W book build (every page executed once), then the tests"
	@echo "make test-fast    the pytest suite only (no lint, no book build)"
	@echo "make test-parity  parity tests against transformers / rotary-embedding-torch (installs torch 2.13.0 CPU)"
	@echo "make test-gpu     GPU parity tests (run on the CPU when CUDA is absent)"
	@echo "make test-browser build the book and test it in headless Chromium"
	@echo "make format       apply ruff formatting"
	@echo "make bench        benchmark tables (apply, tables, book build, tests; installs torch)"
	@echo "make experiments  retrain the toy models and rewrite experiments/results/*.json (a few minutes)"
	@echo "make workbook     build the student notebooks into workbook/ (answers you wrote are kept)"
	@echo "make lab          install JupyterLab into .venv and open the workbook"
	@echo "make test-engines live ggml (built from source, cached) and MLX RoPE parity"
	@echo "make conformance-example  write a conformance suite, run the C++ example on it, verify"

# The base environment is installed by uv (pinned; pip installs it from its cache): the same
# versions pip resolves, in seconds instead of pip's half minute. The extras added later (torch
# and the peers) go through pip, which also reads this machine's local wheel folders.
UV_PIN := uv==0.13.9

$(STAMP): pyproject.toml
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q "$(UV_PIN)"
	$(VENV)/bin/uv pip install -q --python $(PY) -e ".[book,test]"
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $(STAMP)

venv: $(STAMP)

# torch 2.13.0 (CPU build), transformers and rotary-embedding-torch, pinned in pyproject's extras.
$(TORCH_STAMP): $(STAMP) pyproject.toml
	$(PY) -m pip install -q -e ".[book,test,parity]"
	touch $(TORCH_STAMP)

venv-torch: $(TORCH_STAMP)

# Playwright drives Debian's Chromium (no browser download); apt-get needs root, as in CI.
$(BROWSER_STAMP): $(STAMP) pyproject.toml
	$(PY) -m pip install -q -e ".[book,test,browser]"
	command -v chromium >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }
	touch $(BROWSER_STAMP)

book: $(STAMP)
	$(JB) build . -W --keep-going
	@echo
	@echo "Book built: open $(CURDIR)/_build/html/index.html"

book-clean:
	rm -rf _build

LINTED := refimpl tests benchmarks experiments examples tools book/_plots.py book/_plots_toy.py book/_ext

lint: $(STAMP)
	$(VENV)/bin/ruff check $(LINTED)
	$(VENV)/bin/ruff format --check $(LINTED)

format: $(STAMP)
	$(VENV)/bin/ruff format $(LINTED)
	$(VENV)/bin/ruff check --fix $(LINTED)

test-fast: $(STAMP)
	HYPOTHESIS_PROFILE=ci $(VENV)/bin/pytest -q -n $(PYTEST_JOBS)

# Every page is executed once, by the -W book build (book/_ext/parallel_execute.py runs the
# notebooks on both cores); pytest then skips those pages and reads the built book
# (REFIMPL_BUILT_BOOK=1: the shown-code budget, raw markup, the workbook). Once every notebook
# has run (the build creates $(EXEC_SIGNAL)), Sphinx reads and writes the pages on one core:
# the tests that do not read the built book run then, beside it; the build's log is printed
# when it ends, and the tests of the built book follow.
BOOK_TESTS  := tests/test_workbook.py tests/test_book_reader.py
BOOK_LOG    := artifacts/book-build.log
EXEC_SIGNAL := artifacts/book-executed

test: $(STAMP) lint
	rm -rf _build $(EXEC_SIGNAL)
	mkdir -p $(dir $(BOOK_LOG))
	@REFIMPL_EXECUTED_SIGNAL=$(EXEC_SIGNAL) $(JB) build . -W --keep-going --all >$(BOOK_LOG) 2>&1 & \
	book=$$!; \
	while kill -0 $$book 2>/dev/null && [ ! -e $(EXEC_SIGNAL) ]; do sleep 1; done; \
	echo "Notebooks executed; the tests that do not read the built book run beside the build."; \
	REFIMPL_BOOK_BUILD_EXECUTES=1 HYPOTHESIS_PROFILE=ci $(VENV)/bin/pytest -q -n $(PYTEST_JOBS) \
		$(addprefix --ignore=,$(BOOK_TESTS)); rest=$$?; \
	wait $$book; built=$$?; cat $(BOOK_LOG); \
	if [ $$built -ne 0 ]; then echo "The book build failed (exit $$built)."; exit 1; fi; \
	echo "Book built from a clean cache with zero warnings."; \
	[ $$rest -eq 0 ] || { echo "The tests beside the book build failed."; exit 1; }
	REFIMPL_BOOK_BUILD_EXECUTES=1 REFIMPL_BUILT_BOOK=1 HYPOTHESIS_PROFILE=ci \
		$(VENV)/bin/pytest -q -n $(PYTEST_JOBS) $(BOOK_TESTS)

test-parity: $(TORCH_STAMP)
	HYPOTHESIS_PROFILE=ci $(VENV)/bin/pytest -q -m parity tests/parity

test-gpu: $(TORCH_STAMP)
	HYPOTHESIS_PROFILE=ci $(VENV)/bin/pytest -q -rs -m gpu tests/gpu

test-browser: $(BROWSER_STAMP) $(BOOK_DEP)
	REFIMPL_BROWSER_TESTS=1 $(VENV)/bin/pytest -q -p no:cacheprovider -n $(PYTEST_JOBS) tests/browser

clean:
	rm -rf _build .pytest_cache .hypothesis artifacts

# Part "What the encodings do": trained toy models; each script writes experiments/results/NAME.json.
EXPERIMENTS := length_generalisation rope_extension attention_entropy rope_base nope_hybrid \
	partial_rotary

experiments: $(STAMP)
	@for e in $(EXPERIMENTS); do echo "== experiments/$$e.py"; $(PY) experiments/$$e.py || exit 1; done

bench: $(TORCH_STAMP)
	cd benchmarks && ../$(PY) bench_apply.py
	cd benchmarks && ../$(PY) bench_tables.py
	cd benchmarks && ../$(PY) bench_book.py
	cd benchmarks && ../$(PY) bench_tests.py


# Targets of individual areas (workbook, engines, conformance, ...) live in mk/*.mk.
-include $(wildcard mk/*.mk)

# CI: every suite's set-up, one after another (they install into one venv), so that the suites
# after `make test` can run side by side (.ci/run).
.PHONY: ci-setup
ci-setup: $(TORCH_STAMP) $(CHECKER_PEERS_STAMP) venv-timm $(BROWSER_STAMP) $(ENGINE_STAMP) vllm-rotary
