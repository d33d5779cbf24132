"""Dense checks of the correctly rounded tables: run by ``make test-numerics`` (which installs
gmpy2 and sets REFIMPL_NUMERICS=1), skipped in the default run (they take minutes)."""

import os

import pytest


def pytest_collection_modifyitems(config, items):
    if os.environ.get("REFIMPL_NUMERICS") == "1":
        return
    skip = pytest.mark.skip(reason="dense numerics checks: run `make test-numerics`")
    for item in items:
        item.add_marker(skip)
