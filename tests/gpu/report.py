"""Print the worst error of each GPU parity case as a fraction of its error-model bound.

Run: .venv/bin/python tests/gpu/report.py   (after `make test-gpu` has installed torch)

The tests in test_gpu_parity.py assert error <= bound entry by entry; this prints, per device,
dtype and peer, the largest error, the ratio max(error / bound) and the position where the
error is largest, so a run on a GPU can be recorded. It imports torch only when run.
"""

from __future__ import annotations

import importlib.util
import pathlib


def _load_tests():
    path = pathlib.Path(__file__).with_name("test_gpu_parity.py")
    spec = importlib.util.spec_from_file_location("gpu_parity", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main() -> None:
    import numpy as np
    import torch
    from transformers import __version__ as tf_version

    import refimpl

    t = _load_tests()
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    name = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"
    print(f"torch {torch.__version__}, transformers {tf_version}, CUDA device: {name}")
    print(f"x (1, {t.HEADS}, {t.SEQ}, {t.DIM}), positions 5 + 3k up to {5 + 3 * (t.SEQ - 1)}\n")
    print("| device | dtype | peer | max error | max error / bound | position of max |")
    print("| --- | --- | --- | --- | --- | --- |")
    for device in devices:
        for dtype in t.DTYPES:
            q, pos = t._inputs(dtype, device)
            x64 = q.float().cpu().numpy().astype(np.float64)
            peers = {
                "transformers (half)": ("half", t._transformers_apply(q, pos, device)),
                "Meta complex (interleaved)": (
                    "interleaved",
                    t._meta_apply(q, t._meta_freqs_cis(t.DIM, pos, t.BASE, device)),
                ),
            }
            for peer, (pairing, got) in peers.items():
                ref = refimpl.apply_rope(x64, pos.numpy(), base=t.BASE, pairing=pairing)
                err = np.abs(got.float().cpu().numpy().astype(np.float64) - ref)
                ratio = err / t._bound(x64, pairing, dtype)
                where = np.unravel_index(np.argmax(err), err.shape)
                print(
                    f"| {device} | {dtype} | {peer} | {err.max():.3g} | {ratio.max():.3f} "
                    f"| {int(pos[where[-2]])} |"
                )


if __name__ == "__main__":
    main()
