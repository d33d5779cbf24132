# vLLM's rotary-embedding sources for tests/engines/test_vllm_live.py. vLLM's wheel pins a CUDA
# build of torch (torch==2.14.0) and cannot be installed here, so the pinned wheel (one platform,
# its sha256 checked; ~340 MB, downloaded once) is fetched without dependencies into the wheel
# cache (outside the clone, reused by CI) and only its pure-torch files
# vllm/model_executor/layers/rotary_embedding/*.py are unpacked; the test loads them on the
# parity extra's CPU torch with vLLM's internal imports stubbed.
VLLM_VERSION := 0.33.0
VLLM_WHEEL   := vllm-$(VLLM_VERSION)-cp38-abi3-manylinux_2_28_x86_64.whl
VLLM_SHA256  := 4b6bdec4ab269990bf70d45a3c1e94c3760a27064513760193b26d6f0da883aa
VLLM_SRC     ?= $(HOME)/.cache/refimpl/vllm-$(VLLM_VERSION)
VLLM_STAMP   := $(VLLM_SRC)/.unpacked

.PHONY: vllm-rotary

$(VLLM_STAMP): mk/vllm.mk $(STAMP)
	mkdir -p $(WHEEL_CACHE) $(VLLM_SRC)
	test -f $(WHEEL_CACHE)/$(VLLM_WHEEL) || \
		$(PY) -m pip download -q --no-deps --only-binary=:all: \
			--platform manylinux_2_28_x86_64 vllm==$(VLLM_VERSION) -d $(WHEEL_CACHE)
	echo "$(VLLM_SHA256)  $(WHEEL_CACHE)/$(VLLM_WHEEL)" | sha256sum -c --quiet -
	$(PY) -c "import sys, zipfile; \
		z = zipfile.ZipFile(sys.argv[1]); \
		d = 'vllm/model_executor/layers/rotary_embedding/'; \
		[z.extract(n, sys.argv[2]) for n in z.namelist() if n.startswith(d) and n.endswith('.py')]" \
		"$(WHEEL_CACHE)/$(VLLM_WHEEL)" "$(VLLM_SRC)"
	touch $(VLLM_STAMP)

vllm-rotary: $(VLLM_STAMP)

test-engines: vllm-rotary
