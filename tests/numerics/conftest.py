"""Dense checks of the correctly rounded tables: run by ``make test-numerics`` (which installs
gmpy2 and sets REFIMPL_NUMERICS=1), skipped in the default run (they take minutes)."""

import os
import pathlib

import pytest

HERE = pathlib.Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items):
    # The hook sees every collected item of the session, not only this folder's: skip ours.
    if os.environ.get("REFIMPL_NUMERICS") == "1":
        return
    skip = pytest.mark.skip(reason="dense numerics checks: run `make test-numerics`")
    for item in items:
        if HERE in pathlib.Path(item.path).resolve().parents:
            item.add_marker(skip)
