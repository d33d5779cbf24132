# Conformance suite targets (included by the Makefile).
#   make conformance-example [CONFORMANCE_CONFIG=config.json] [CONFORMANCE_DTYPE=bfloat16]
#     writes the suite, compiles the C++ example with $(CXX), runs it and verifies its results
#     (in $(CONFORMANCE_DIR), outside the clone).
#   make bench-conformance      suite generation and verification rates
#   make bench-complexity       re-measure benchmarks/results/complexity.json (the book plots it)

CONFORMANCE_CONFIG ?= tests/parity/configs/gpt-oss-20b.json
CONFORMANCE_DTYPE  ?= float32
CONFORMANCE_DIR    ?= $(or $(TMPDIR),/tmp)/refimpl-conformance

.PHONY: conformance-example bench-conformance bench-complexity

conformance-example: $(STAMP)
	mkdir -p $(CONFORMANCE_DIR)
	$(PY) -m refimpl._cli_conformance conformance $(CONFORMANCE_CONFIG) \
		--dtype $(CONFORMANCE_DTYPE) --out $(CONFORMANCE_DIR)/suite
	$(CXX) -std=c++17 -O2 -Wall -o $(CONFORMANCE_DIR)/rope_conformance \
		examples/cpp/rope_conformance.cpp
	$(CONFORMANCE_DIR)/rope_conformance $(CONFORMANCE_DIR)/suite $(CONFORMANCE_DIR)/results
	$(PY) -m refimpl._cli_conformance verify $(CONFORMANCE_DIR)/suite $(CONFORMANCE_DIR)/results

bench-conformance: $(STAMP)
	cd benchmarks && ../$(PY) bench_conformance.py

bench-complexity: $(STAMP)
	cd benchmarks && ../$(PY) bench_apply.py --complexity
