"""Golden vectors made by other projects, kept in the steering repository's shared/vectors/.

They sit beside a developer's or CI's checkout (``../shared/vectors``); a user's clone has no
such folder and these tests skip with that reason. The inputs of the CS336 vectors are drawn
with torch's generator, so torch is needed to rebuild them.
"""

import pathlib

import numpy as np
import pytest

import refimpl

VECTORS = pathlib.Path(__file__).resolve().parents[3] / "shared" / "vectors"
CS336 = VECTORS / "cs336-test_rope.npz"


@pytest.mark.skipif(not CS336.is_file(), reason=f"no shared golden vectors at {VECTORS}")
def test_cs336_autograder_rope_snapshot():
    torch = pytest.importorskip("torch")
    torch.manual_seed(4)
    x = torch.randn(4, 12, 64).numpy()  # float32, as the autograder draws it
    expected = np.load(CS336)["array"]
    assert expected.shape == (4, 12, 64) and expected.dtype == np.float32
    got = refimpl.apply_rope(x, np.arange(12), base=10000.0, pairing="interleaved")
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, expected, atol=1e-6, rtol=0)  # the autograder's tolerance
    # and it is not the half pairing: the two layouts differ far beyond that tolerance
    other = refimpl.apply_rope(x, np.arange(12), base=10000.0, pairing="half")
    assert np.max(np.abs(other - expected)) > 1e-2
