# Model coverage (tools/model_coverage.py): every model type of the pinned transformers judged
# against refimpl's schedule reader. Rewrites tests/parity/model_coverage.json and
# tests/parity/model_coverage_configs.json (torch 2.13.0 CPU and transformers 5.24.0 from the
# parity extras); tests/parity/test_model_coverage.py checks the table without transformers.

.PHONY: model-coverage

model-coverage: $(TORCH_STAMP)
	OMP_NUM_THREADS=1 $(PY) tools/model_coverage.py
