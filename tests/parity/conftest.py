"""Parity tests run a peer implementation. They are collected by `make test` too and skip,
with a reason, when the peer is not installed; `make test-parity` installs the peers."""

import pytest


def pytest_collection_modifyitems(config, items):
    for item in items:
        item.add_marker(pytest.mark.parity)
