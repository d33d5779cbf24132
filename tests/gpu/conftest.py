"""GPU parity tests: parametrised over devices, run on the CPU whenever torch is installed and
on CUDA when available; skip with a reason otherwise. `make test-gpu` runs them."""

import pytest


def pytest_collection_modifyitems(config, items):
    for item in items:
        item.add_marker(pytest.mark.gpu)
