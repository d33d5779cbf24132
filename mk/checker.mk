# Checker (refimpl/check.py): its tests, its peers, its benchmark.
# Peers are installed with --no-deps so torch, transformers and numpy stay as pinned; the
# extra packages are the ones these peers import (see tests/parity/test_checker_peers.py);
# lmdeploy is FoPE's peer (tests/parity/test_fourier_parity.py loads four of its files);
# onnxruntime and onnx (with protobuf, the one package they import beyond NumPy, ml_dtypes and
# typing_extensions) run ONNX's RotaryEmbedding for tests/parity/test_check_onnxruntime.py.

CHECKER_PEERS_STAMP := $(VENV)/.installed-checker-peers
CHECKER_PEERS := torchtune==0.6.1 litgpt==0.5.13 lightning==2.6.6 lightning-utilities==0.15.3 \
	torchmetrics==1.9.0 x-transformers==2.31.10 einx==0.4.3 loguru==0.7.3 \
	mlx==0.32.4 mlx-cpu==0.32.4 mlx-lm==0.32.2 lmdeploy==0.18.0 \
	onnxruntime==1.31.1 onnx==1.23.2 protobuf==7.36.2

$(CHECKER_PEERS_STAMP): $(TORCH_STAMP) mk/checker.mk
	$(PY) -m pip install -q --no-deps $(CHECKER_PEERS)
	touch $(CHECKER_PEERS_STAMP)

.PHONY: venv-checker-peers test-checker test-checker-parity bench-check
venv-checker-peers: $(CHECKER_PEERS_STAMP)

test-checker: $(STAMP)
	HYPOTHESIS_PROFILE=ci $(VENV)/bin/pytest -q -p no:cacheprovider tests/test_check*.py \
		tests/test_cli_check.py

test-checker-parity: $(CHECKER_PEERS_STAMP)
	HYPOTHESIS_PROFILE=ci $(VENV)/bin/pytest -q -p no:cacheprovider -m parity \
		tests/parity/test_check_peers.py tests/parity/test_checker_peers.py \
		tests/parity/test_check_onnxruntime.py

bench-check: $(STAMP)
	cd benchmarks && OPENBLAS_NUM_THREADS=1 ../$(PY) bench_check.py

# The peer parity suite (make test-parity, run by CI) includes the checker's peers.
test-parity: $(CHECKER_PEERS_STAMP)
