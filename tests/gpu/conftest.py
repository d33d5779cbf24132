"""GPU parity tests: parametrised over devices, run on the CPU whenever torch is installed and
on CUDA when available; skip with a reason otherwise. `make test-gpu` runs them."""

import pathlib

import pytest

HERE = pathlib.Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items):
    # The hook sees every collected item of the session: mark only this folder's.
    for item in items:
        if HERE in pathlib.Path(item.path).resolve().parents:
            item.add_marker(pytest.mark.gpu)
