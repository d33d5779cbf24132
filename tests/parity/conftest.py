"""Parity tests run a peer implementation. They are collected by `make test` too and skip,
with a reason, when the peer is not installed; `make test-parity` installs the peers."""

import pathlib

import pytest

HERE = pathlib.Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items):
    # The hook sees every collected item of the session: mark only this folder's.
    for item in items:
        if HERE in pathlib.Path(item.path).resolve().parents:
            item.add_marker(pytest.mark.parity)
