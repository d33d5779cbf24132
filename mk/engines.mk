# Live inference engines for tests/engines: ggml (ggml-python, built from its source package with
# the machine's compiler and cached as a wheel outside the clone, so CI reuses it) and MLX (CPU
# wheel), plus vLLM's rotary-embedding sources (mk/vllm.mk adds them as a prerequisite). The
# pins live in pyproject's `engines` extra; GGML_PYTHON must match it. The engines also run the
# conformance suites (tests/engines/test_conformance_engines.py), and the heavy conformance
# sweeps (every recipe and planted mistake, tests/engines/test_conformance_sweep.py) run here
# (REFIMPL_CONFORMANCE_SWEEP=1), not in the default `make test`.
ENGINE_STAMP := $(VENV)/.installed-engines
GGML_PYTHON  := ggml-python==0.0.45
WHEEL_CACHE  ?= $(HOME)/.cache/refimpl/wheels

.PHONY: test-engines

$(ENGINE_STAMP): $(TORCH_STAMP) pyproject.toml mk/engines.mk
	mkdir -p $(WHEEL_CACHE)
	ls $(WHEEL_CACHE)/ggml_python-0.0.45-*.whl >/dev/null 2>&1 || \
		$(PY) -m pip wheel -q --no-deps $(GGML_PYTHON) -w $(WHEEL_CACHE)
	$(PY) -m pip install -q --no-index --find-links $(WHEEL_CACHE) $(GGML_PYTHON)
	$(PY) -m pip install -q -e ".[book,test,parity,engines]"
	touch $(ENGINE_STAMP)

# VLLM_SRC (where vLLM's rotary sources are unpacked) is set in mk/vllm.mk.
test-engines: $(ENGINE_STAMP)
	REFIMPL_VLLM_SRC=$(VLLM_SRC) REFIMPL_CONFORMANCE_SWEEP=1 HYPOTHESIS_PROFILE=ci \
		$(VENV)/bin/pytest -q -rs -m engines tests/engines tests/test_gguf.py
