# timm's ViT RoPE for tests/parity/test_timm_parity.py. timm's wheel requires torchvision, and
# installing that would replace the parity extra's torch 2.13.0, so timm is installed without its
# dependencies; the test loads only timm/layers/pos_embed_sincos.py and the three small modules
# it imports (timm's package __init__ imports torchvision), and skips if timm is absent.
TIMM_VERSION := 1.0.31
TIMM_STAMP   := $(VENV)/.installed-timm-$(TIMM_VERSION)

.PHONY: venv-timm

$(TIMM_STAMP): $(TORCH_STAMP) mk/multimodal.mk
	$(PY) -m pip install -q --no-deps timm==$(TIMM_VERSION)
	touch $(TIMM_STAMP)

venv-timm: $(TIMM_STAMP)

test-parity: venv-timm
