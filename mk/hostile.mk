# Hostile inputs (included by the Makefile).
#   make test-hostile   every command of python -m refimpl on the crafted files and options of
#                       tests/test_hostile_cli_files.py, each as a subprocess under a wall-time and
#                       an address-space limit (minutes on a shared machine), plus the in-process
#                       hostile-file and position suites.

.PHONY: test-hostile

test-hostile: $(STAMP)
	REFIMPL_HOSTILE_CLI=1 HYPOTHESIS_PROFILE=ci $(VENV)/bin/pytest -q -rs \
		tests/test_hostile_cli_files.py tests/test_hostile_gguf.py tests/test_hostile_positions.py
