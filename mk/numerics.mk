# Dense correct-rounding checks (included by the Makefile), outside the default test run.
#   make test-numerics   every entry of d = 64, 128, 256 at bases 1e4 .. 1e7 for positions
#                        0..4095 against MPFR (gmpy2, the `numerics` extra), and the table
#                        paths bit for bit (several minutes)
NUMERICS_STAMP := $(VENV)/.installed-numerics

.PHONY: test-numerics

$(NUMERICS_STAMP): $(STAMP) pyproject.toml
	$(PY) -m pip install -q -e ".[book,test,numerics]"
	touch $(NUMERICS_STAMP)

test-numerics: $(NUMERICS_STAMP)
	REFIMPL_NUMERICS=1 HYPOTHESIS_PROFILE=ci $(VENV)/bin/pytest -q -p no:cacheprovider tests/numerics
