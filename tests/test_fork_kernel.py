"""Kernels forked from a preloaded process (tools/fork_kernel.py, used by the book build and the
workbook tests) behave as kernels started the ordinary way: the same outputs for the same
cells, interrupts reach them, and a killed kernel does not outlive its launcher."""

from __future__ import annotations

import os
import pathlib
import re
import sys
import time

import pytest

nbclient = pytest.importorskip("nbclient")
jupyter_client = pytest.importorskip("jupyter_client")
from nbformat import v4  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import fork_kernel  # noqa: E402

#: What a page does, and what a kernel's start-up decides: streams, a warning, rich and
#: Markdown displays, an inline figure, a glued value, a subprocess, the working directory,
#: sys.argv[0], the cwd on sys.path, the matplotlib backend, an error.
CELLS = [
    "import os, sys, subprocess, warnings\n"
    "import numpy as np, matplotlib, matplotlib.pyplot as plt\n"
    "from IPython.display import Markdown, display\n"
    "from myst_nb import glue",
    "print('out'); print('err', file=sys.stderr); warnings.warn('careful')",
    "display(Markdown('| a |\\n| --- |\\n| 1 |')); np.arange(3)",
    "fig, ax = plt.subplots(figsize=(1, 1), dpi=20); ax.plot([0, 1]); glue('g', 3.5)",
    "print(subprocess.run(['echo', 'child'], capture_output=True, text=True).stdout)",
    "print(os.getcwd() == os.path.realpath('.'), os.path.basename(os.getcwd()))",
    "print(os.path.basename(sys.argv[0]), '' in sys.path, matplotlib.get_backend())",
    "print(os.environ.get('REFIMPL_FORK_KERNEL_TEST'))",
    "print(sorted(k for k in sys.modules if k.startswith('matplotlib_inline')))",
]


def _run(cells, cwd, allow_errors=False):
    nb = v4.new_notebook()
    nb.cells = [v4.new_code_cell(src) for src in cells]
    client = nbclient.NotebookClient(
        nb,
        kernel_name="python3",
        timeout=120,
        startup_timeout=300,
        allow_errors=allow_errors,
        resources={"metadata": {"path": str(cwd)}},
    )
    client.execute()
    return nb


def _outputs(nb) -> list:
    out = []
    for cell in nb.cells:
        for o in cell.outputs:
            o = dict(o)
            o.pop("execution_count", None)
            text = repr(o)
            out.append(re.sub(r"ipykernel_\d+", "ipykernel_PID", text))
    return out


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.setenv("REFIMPL_FORK_KERNEL_TEST", "seen")
    (tmp_path / "page").mkdir()
    return tmp_path / "page"


@pytest.fixture(scope="module")
def zygote():
    """One zygote for the tests of this module (starting one takes a few seconds)."""
    saved = os.environ.pop(fork_kernel.ENABLE_ENV, None)
    try:
        with fork_kernel.forked_kernels() as path:
            yield path
    finally:
        if saved is not None:
            os.environ[fork_kernel.ENABLE_ENV] = saved


def test_a_forked_kernel_gives_what_an_ordinary_kernel_gives(zygote, folder, monkeypatch):
    forked = _run(CELLS, folder)
    again = _run(CELLS, folder)  # a second kernel from the same zygote: a fresh one
    spec_dir = str(pathlib.Path(zygote).parent)
    rest = [p for p in os.environ["JUPYTER_PATH"].split(os.pathsep) if p != spec_dir]
    monkeypatch.setenv("JUPYTER_PATH", os.pathsep.join(rest))  # the ordinary python3 kernel
    ordinary = _run(CELLS, folder)
    assert _outputs(forked) == _outputs(ordinary)
    assert _outputs(again) == _outputs(ordinary)
    assert "page" in "".join(_outputs(forked)) and "seen" in "".join(_outputs(forked))


def test_the_environment_is_restored_and_the_zygote_stops(monkeypatch):
    monkeypatch.delenv(fork_kernel.ENABLE_ENV, raising=False)
    before = os.environ.get("JUPYTER_PATH")
    with fork_kernel.forked_kernels() as path:
        assert os.environ["JUPYTER_PATH"].split(os.pathsep)[0] == str(pathlib.Path(path).parent)
    assert os.environ.get("JUPYTER_PATH") == before
    assert not pathlib.Path(path).exists()


def _started(folder):
    km = jupyter_client.KernelManager(kernel_name="python3")
    km.start_kernel(cwd=str(folder))
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=300)
    return km, kc


def _kernel_pid(kc) -> int:
    found = []

    def hook(msg):
        if msg["msg_type"] == "stream":
            found.append(msg["content"]["text"])

    kc.execute_interactive("import os; print(os.getpid())", timeout=60, output_hook=hook)
    return int("".join(found))


def test_an_interrupt_reaches_the_forked_kernel(zygote, folder):
    km, kc = _started(folder)
    try:
        assert _kernel_pid(kc) != km.provisioner.process.pid  # a child of the zygote
        msg_id = kc.execute("import time; time.sleep(120)")
        time.sleep(1.0)
        km.interrupt_kernel()
        while True:
            reply = kc.get_shell_msg(timeout=60)
            if reply["parent_header"].get("msg_id") == msg_id:
                break
        assert reply["content"]["status"] == "error"
        assert reply["content"]["ename"] == "KeyboardInterrupt"
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=False)


def test_a_killed_launcher_takes_its_kernel_with_it(zygote, folder):
    km, kc = _started(folder)
    pid = _kernel_pid(kc)
    kc.stop_channels()
    km.shutdown_kernel(now=True)  # SIGKILL to the launcher's process group
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"the kernel {pid} outlived its killed launcher")


def test_turned_off_it_changes_nothing(monkeypatch):
    monkeypatch.setenv(fork_kernel.ENABLE_ENV, "0")
    before = os.environ.get("JUPYTER_PATH")
    with fork_kernel.forked_kernels() as path:
        assert path is None and os.environ.get("JUPYTER_PATH") == before
    monkeypatch.setenv(fork_kernel.ENABLE_ENV, "yes")
    with pytest.raises(ValueError, match="REFIMPL_FORK_KERNELS must be 0 or 1"):
        with fork_kernel.forked_kernels():
            pass
