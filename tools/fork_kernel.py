"""Python kernels forked from a process that has already imported the heavy modules.

A notebook's kernel normally starts a fresh interpreter, imports ipykernel, and then the
notebook imports numpy, matplotlib, SymPy and refimpl: about 4 s of CPU before the first line
of the page runs (``benchmarks/bench_kernels.py`` measures it), paid once per notebook. The book
executes over sixty notebooks and the workbook tests twenty more, so on a 2-core machine this
start-up is a large part of ``make test``.

:func:`forked_kernels` starts one *zygote*: a fresh interpreter (the same Python, the same
environment) that imports :data:`PRELOAD` and waits. While the context is open, the kernel
named ``python3`` is this module's launcher: jupyter_client starts it as it starts any kernel
(a process of its own, the connection file in its arguments); the launcher asks the zygote for
a kernel, and the zygote forks a child that takes the launcher's working directory,
environment and arguments and runs ``ipykernel``'s own ``launch_new_instance``, exactly what
``python -m ipykernel_launcher`` runs. The child is a copy of a process in which nothing but
imports happened (no thread, no event loop, no kernel), so each notebook still gets a kernel of
its own, with its own namespace and module state.

The launcher stands for the child towards jupyter_client: it forwards the signals it receives
(an interrupt is SIGINT), exits with the child's exit status, and when the launcher is killed
the child sees its connection close and exits too.

Nothing changes in what a notebook computes: modules a notebook imports are the same modules,
imported earlier. Modules whose import has effects that depend on the running kernel
(``matplotlib_inline.backend_inline``, ``matplotlib.pyplot``) are not preloaded. A kernel asked
for with a matplotlib backend other than the zygote's (``MPLBACKEND``) is started the ordinary
way by the launcher.
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import select
import signal
import socket
import subprocess
import sys
import tempfile

#: Modules the zygote imports before it forks kernels: what ipykernel and the book's pages
#: import, without the ones whose import depends on a running kernel (see the module doc).
PRELOAD = (
    "ipykernel.kernelapp",
    "ipykernel.ipkernel",
    "IPython",
    "numpy",
    "matplotlib",
    "matplotlib.figure",
    "matplotlib.axes",
    "matplotlib.backends.backend_agg",
    "sympy",
    "refimpl",
    "myst_nb",
)
#: The backend ipykernel sets when MPLBACKEND is unset (ipykernel.kernelapp.init_gui_pylab);
#: matplotlib reads MPLBACKEND when it is imported, so the zygote sets it before its imports.
INLINE_BACKEND = "module://matplotlib_inline.backend_inline"
#: Seconds the zygote may take to import PRELOAD (a few on an idle machine; a loaded 2-core
#: machine running a book build beside it is slower).
ZYGOTE_START_S = 120
#: How often the zygote checks that the process that started it is still there (seconds).
PARENT_POLL_S = 1.0
KERNEL_NAME = "python3"
#: ``REFIMPL_FORK_KERNELS=0`` turns the context into a no-op: every kernel starts the ordinary way.
ENABLE_ENV = "REFIMPL_FORK_KERNELS"
_LAUNCHER_FILE = "ipykernel_launcher"  # the path a kernel's sys.argv[0] holds, set by _preload


def _launcher_file() -> str:
    import importlib.util

    spec = importlib.util.find_spec("ipykernel_launcher")
    return spec.origin if spec and spec.origin else "ipykernel_launcher"


# --- the zygote --------------------------------------------------------------------------


def _preload() -> None:
    global _LAUNCHER_FILE
    _LAUNCHER_FILE = _launcher_file()
    os.environ.setdefault("MPLBACKEND", INLINE_BACKEND)
    for name in PRELOAD:
        with contextlib.suppress(ImportError):
            __import__(name)


def _serve(path: str, ready_fd: int) -> None:
    """The zygote: import PRELOAD, say so on ``ready_fd``, then fork a kernel per connection."""
    parent = os.getppid()
    _preload()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(64)
    signal.signal(signal.SIGCHLD, _reap)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a ^C is for the build, which stops us
    os.write(ready_fd, b"ready\n")
    os.close(ready_fd)
    while os.getppid() == parent:
        ready, _, _ = select.select([server], [], [], PARENT_POLL_S)
        if not ready:
            continue
        conn, _ = server.accept()
        if os.fork() == 0:
            server.close()
            _kernel_child(conn)  # never returns
        conn.close()


def _reap(_signum, _frame) -> None:
    """Wait for the kernels that ended (waited for, not ignored: their CPU time then counts in
    the zygote's children and so in the build's, as an ordinary kernel's does)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _read_request(conn: socket.socket) -> dict:
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(65536)
        if not chunk:
            os._exit(1)
        data += chunk
    return json.loads(data)


def _watch_launcher(conn: socket.socket) -> None:
    """Exit when the launcher's connection closes (the launcher was killed)."""
    import threading

    def watch():
        with contextlib.suppress(OSError):
            while conn.recv(1):
                pass
        os._exit(1)

    threading.Thread(target=watch, name="fork-kernel-watch", daemon=True).start()


def _environment_settings() -> dict:
    """The kernel-app settings whose defaults ipykernel reads from the environment when it is
    imported (in the zygote, before a launcher's environment was known), read again."""
    names = {"parent_handle": "JPY_PARENT_PID", "interrupt": "JPY_INTERRUPT_EVENT"}
    return {trait: int(os.environ.get(name) or 0) for trait, name in names.items()}


def _kernel_child(conn: socket.socket) -> None:
    """In the forked child: become the kernel the launcher stands for; never return."""
    code = 1
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # a notebook's subprocesses are waited
        signal.signal(signal.SIGINT, signal.default_int_handler)
        request = _read_request(conn)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = [_LAUNCHER_FILE, *request["args"]]
        conn.sendall(f"PID {os.getpid()}\n".encode())
        _watch_launcher(conn)
        from ipykernel import kernelapp

        try:  # ipykernel_launcher's launch_new_instance, with the settings above
            kernelapp.IPKernelApp.launch_instance(**_environment_settings())
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        import atexit

        atexit._run_exitfuncs()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
            conn.sendall(f"EXIT {code}\n".encode())
        os._exit(code)


# --- the launcher ------------------------------------------------------------------------


def _ordinary_kernel(args: list[str]) -> None:
    os.execv(sys.executable, [sys.executable, "-m", "ipykernel_launcher", *args])


def _launch(path: str, args: list[str]) -> int:
    """The kernel command: have the zygote fork a kernel, then stand for it until it ends."""
    if os.environ.get("MPLBACKEND", INLINE_BACKEND) != INLINE_BACKEND:
        _ordinary_kernel(args)
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
    except OSError:  # the zygote is gone: an ordinary kernel
        _ordinary_kernel(args)
    request = {"cwd": os.getcwd(), "env": dict(os.environ), "args": args}
    conn.sendall(json.dumps(request).encode() + b"\n")
    stream = conn.makefile("rb")
    first = stream.readline().decode()
    if not first.startswith("PID "):
        return 1
    child = int(first.split()[1])

    def forward(signum, _frame):
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signum)

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(signum, forward)
    last = stream.readline().decode()
    return int(last.split()[1]) if last.startswith("EXIT ") else 1


# --- the context -------------------------------------------------------------------------


def _kernel_spec(folder: pathlib.Path, path: str) -> None:
    spec = folder / "kernels" / KERNEL_NAME
    spec.mkdir(parents=True)
    argv = [sys.executable, str(pathlib.Path(__file__).resolve()), "--launch", path]
    argv += ["-f", "{connection_file}"]
    spec_json = {"argv": argv, "display_name": "Python 3 (forked)", "language": "python"}
    (spec / "kernel.json").write_text(json.dumps(spec_json))


def enabled() -> bool:
    raw = os.environ.get(ENABLE_ENV, "1")
    if raw not in ("0", "1"):
        raise ValueError(f"{ENABLE_ENV} must be 0 or 1, got {raw!r}")
    return raw == "1"


@contextlib.contextmanager
def forked_kernels():
    """While open, kernels named ``python3`` started from this process (and its children) are
    forked from a zygote that has imported :data:`PRELOAD` (unless ``REFIMPL_FORK_KERNELS=0``).

    Yields the zygote's socket path, or None when turned off."""
    if not enabled():
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="refimpl-kernels-") as tmp:
        path = os.path.join(tmp, "zygote.sock")
        read_fd, write_fd = os.pipe()
        zygote = subprocess.Popen(
            [sys.executable, str(pathlib.Path(__file__).resolve()), "--serve", path, str(write_fd)],
            pass_fds=(write_fd,),
        )
        os.close(write_fd)
        try:
            with os.fdopen(read_fd, "rb") as ready_pipe:
                ready, _, _ = select.select([ready_pipe], [], [], ZYGOTE_START_S)
                if not ready or ready_pipe.readline().strip() != b"ready":
                    msg = f"the kernel zygote did not start in {ZYGOTE_START_S} s"
                    raise RuntimeError(msg)
            _kernel_spec(pathlib.Path(tmp), path)
            saved = os.environ.get("JUPYTER_PATH")
            os.environ["JUPYTER_PATH"] = os.pathsep.join(filter(None, [tmp, saved]))
            try:
                yield path
            finally:
                if saved is None:
                    os.environ.pop("JUPYTER_PATH", None)
                else:
                    os.environ["JUPYTER_PATH"] = saved
        finally:
            zygote.terminate()
            try:
                zygote.wait(10)
            except subprocess.TimeoutExpired:
                zygote.kill()
                zygote.wait()


def main(argv: list[str]) -> int:
    if argv[:1] == ["--serve"] and len(argv) == 3:
        if sys.path and pathlib.Path(sys.path[0]).resolve() == pathlib.Path(__file__).parent:
            del sys.path[0]  # as ipykernel_launcher drops its own folder
        _serve(argv[1], int(argv[2]))
        return 0
    if argv[:1] == ["--launch"] and len(argv) >= 2:
        return _launch(argv[1], argv[2:])
    print("usage: fork_kernel.py --serve SOCKET READY_FD | --launch SOCKET -f CONNECTION_FILE")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
