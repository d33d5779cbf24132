# vLLM's rotary-embedding sources for tests/engines/test_vllm_live.py. vLLM's wheel pins a CUDA
# build of torch (torch==2.14.0) and cannot be installed here, so the pinned wheel is downloaded
# without dependencies into the wheel cache (outside the clone, reused by CI) and only its
# pure-torch files vllm/model_executor/layers/rotary_embedding/*.py are unpacked; the test loads
# them on the parity extra's CPU torch with vLLM's internal imports stubbed.
VLLM_VERSION := 0.33.0
VLLM_SRC     ?= $(HOME)/.cache/refimpl/vllm-$(VLLM_VERSION)
VLLM_STAMP   := $(VLLM_SRC)/.unpacked

.PHONY: vllm-rotary

$(VLLM_STAMP): mk/vllm.mk $(STAMP)
	mkdir -p $(WHEEL_CACHE) $(VLLM_SRC)
	ls $(WHEEL_CACHE)/vllm-$(VLLM_VERSION)-*.whl >/dev/null 2>&1 || \
		$(PY) -m pip download -q --no-deps vllm==$(VLLM_VERSION) -d $(WHEEL_CACHE)
	$(PY) -c "import glob, sys, zipfile; \
		z = zipfile.ZipFile(sorted(glob.glob(sys.argv[1]))[-1]); \
		d = 'vllm/model_executor/layers/rotary_embedding/'; \
		[z.extract(n, sys.argv[2]) for n in z.namelist() if n.startswith(d) and n.endswith('.py')]" \
		"$(WHEEL_CACHE)/vllm-$(VLLM_VERSION)-*.whl" "$(VLLM_SRC)"
	touch $(VLLM_STAMP)

vllm-rotary: $(VLLM_STAMP)

test-engines: vllm-rotary
