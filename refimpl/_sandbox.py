"""Running a reader's answer where it cannot hurt the grader: a forked child process with a time
limit, an address-space limit and its own output buffer.

A grader forks once per grading. The child holds the answer (and the grader's inputs, from the
fork) and serves requests over a pipe: call the answer on arrays the parent sends, call it on
the grader's ``k``-th input, or turn an answer value into an array. It sends back a float64
array or a one-line account of what went wrong (an exception, ``sys.exit``, a result that is
not a real numeric array). Whatever the answer does to its process -- patching refimpl,
exiting, sleeping, exhausting memory -- stays in the child; the parent computes the reference
and judges, and kills the child when the answer's time is up or the grading ends.

The parent also checks, before it trusts its own reference, that nothing has replaced
refimpl's functions (or NumPy's) since the graders were imported: an answer defined in the
same session could have patched them before the grader ran (:func:`tampered`).

Platforms without ``os.fork`` (Windows) run the answer in the grader's process: the time
limit and the isolation then do not apply there; every other rule does.
"""

from __future__ import annotations

import io
import json
import os
import select
import signal
import struct
import sys
import time
import types

import numpy as np

#: Time an answer may take in one grading, summed over its calls (seconds): wall time while
#: it sleeps or blocks, CPU time while it is runnable but waiting for a CPU (a loaded machine;
#: see ``Sandbox._starved``). A correct answer to any exercise takes milliseconds; on an idle
#: machine this bound keeps a whole check, the grader's own work included, under one second
#: for an answer that hangs.
ANSWER_TIME_LIMIT = 0.75
#: Address space the answer's process may add to what it inherits (bytes).
ANSWER_MEMORY_LIMIT = 2 * 2**30
#: Largest array an answer may return (bytes): far above any exercise's expected output.
MAX_ANSWER_BYTES = 2**28
#: Characters of the answer's printed output shown back to the reader.
MAX_ANSWER_OUTPUT = 4000
# Largest header of a message (JSON): a few numbers and one bounded message.
_MAX_HEADER = 2**16
_LEN = struct.Struct("<Q")
# Once the child starts to reply, the rest of its message follows at once (seconds allowed).
_MESSAGE_SECONDS = 10.0
# A runnable child short of CPU (a loaded machine) gets more wall time in these steps, up to
# a total that no grading of a correct answer needs even on a machine shared by many jobs.
_STARVED_STEP_SECONDS = 0.25
_HARD_WALL_SECONDS = 10.0
# A child whose pipe closed has exited or is about to: poll for its status this long.
_DEATH_POLLS, _DEATH_POLL_SECONDS = 40, 0.005


_KINDS = ("raised", "exit", "result", "timeout", "died", "interrupted")


class AnswerFailed(Exception):
    """The answer failed: ``kind`` is ``"raised"`` (``type_name`` and ``message`` say what),
    ``"exit"`` (sys.exit), ``"result"`` (not a real numeric array, the wrong shape, NaN),
    ``"timeout"`` or ``"died"``; ``fatal`` kinds end the grading."""

    FATAL = ("exit", "timeout", "died", "interrupted")

    def __init__(self, kind: str, message: str, type_name: str = ""):
        super().__init__(f"{type_name}: {message}" if type_name else message)
        self.kind, self.message, self.type_name = kind, message, type_name

    @property
    def fatal(self) -> bool:
        return self.kind in self.FATAL


# ----------------------------------------------------------------------------- framing
def _encode(header: dict, payload: bytes = b"") -> bytes:
    raw = json.dumps(header).encode()
    return _LEN.pack(len(raw)) + raw + _LEN.pack(len(payload)) + payload


def _array_header(arr: np.ndarray) -> dict:
    return {"dtype": arr.dtype.str, "shape": list(arr.shape)}


def _decode_array(meta: dict, payload: bytes) -> np.ndarray:
    dtype = np.dtype(meta["dtype"])
    if dtype.kind not in "biuf":
        raise ValueError(f"unexpected dtype {dtype}")
    return np.frombuffer(payload, dtype=dtype).reshape(meta["shape"]).copy()


def _read_exact(fd: int, n: int, deadline: float | None) -> bytes:
    chunks, left = [], n
    while left:
        if deadline is not None:
            wait = deadline - time.monotonic()
            if wait <= 0 or not select.select([fd], [], [], wait)[0]:
                raise TimeoutError
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _receive(fd: int, deadline: float | None, max_payload: int) -> tuple[dict, bytes]:
    (n,) = _LEN.unpack(_read_exact(fd, 8, deadline))
    if n > _MAX_HEADER:
        raise ValueError("message header too long")
    header = json.loads(_read_exact(fd, n, deadline))
    (m,) = _LEN.unpack(_read_exact(fd, 8, deadline))
    if m > max_payload:
        raise OverflowError(m)
    return header, _read_exact(fd, m, deadline)


def _send(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


# ------------------------------------------------------------------------- the child
class _Capture(io.TextIOBase):
    """The answer's stdout and stderr, kept up to MAX_ANSWER_OUTPUT characters."""

    def __init__(self):
        self.parts: list[str] = []
        self.size = 0

    def writable(self) -> bool:
        return True

    def write(self, s) -> int:
        s = str(s)
        if self.size < MAX_ANSWER_OUTPUT:
            self.parts.append(s[: MAX_ANSWER_OUTPUT - self.size])
            self.size += len(self.parts[-1])
        return len(s)

    def take(self) -> str:
        out, self.parts, self.size = "".join(self.parts), [], 0
        return out


def _describe(value) -> str:
    return "None" if value is None else type(value).__name__


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _as_result(out) -> np.ndarray:
    """The answer's result as a float64 array, or AnswerFailed("result") saying what it is."""
    if hasattr(out, "detach") and hasattr(out, "cpu"):  # a torch tensor
        out = out.detach().cpu().double().numpy()
    try:
        arr = np.asarray(out)
    except (TypeError, ValueError):
        raise AnswerFailed("result", "a ragged or mixed list, not an array of numbers") from None
    if arr.dtype == object:
        raise AnswerFailed("result", f"{_describe(out)}, not an array of real numbers")
    if arr.dtype.kind not in "biuf":
        raise AnswerFailed("result", f"an array of dtype {arr.dtype}, not of real numbers")
    if arr.nbytes > MAX_ANSWER_BYTES:
        raise AnswerFailed("result", f"{arr.nbytes} bytes, far more than any expected answer")
    return arr.astype(np.float64)


def _copies(args) -> tuple:
    return tuple(np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args)


def _run(fn, args, torch_args: bool):
    """``fn(*args)``; returns ``(result, mutated)``."""
    if torch_args:
        import torch

        args = tuple(torch.from_numpy(a) for a in args)
    before = [np.array(a, copy=True) if isinstance(a, np.ndarray) else None for a in args]
    out = fn(*args)
    mutated = any(
        b is not None and not np.array_equal(a, b, equal_nan=b.dtype.kind in "fc")
        for a, b in zip(args, before, strict=True)
    )
    return _as_result(out), mutated


def _handle(answer, inputs, header: dict, payload: bytes):
    op = header["op"]
    if op == "value":
        return _as_result(answer), False
    if op == "input":
        return _run(answer, _copies(inputs[header["index"]]), False)
    arrays, offset = [], 0
    for meta in header["arrays"]:
        n = int(np.prod(meta["shape"], dtype=np.int64)) * np.dtype(meta["dtype"]).itemsize
        arrays.append(_decode_array(meta, payload[offset : offset + n]))
        offset += n
    return _run(answer, arrays, header.get("torch", False))


def _serve(answer, inputs, rfd: int, wfd: int) -> None:
    capture = _Capture()
    sys.stdout = sys.stderr = capture
    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    except ValueError:  # forked from a thread other than the main one
        pass
    if "torch" in sys.modules:  # OpenMP thread pools do not survive a fork
        sys.modules["torch"].set_num_threads(1)
    _limit_memory()
    while True:
        try:
            header, payload = _receive(rfd, None, 2**62)
        except EOFError:
            return
        try:
            result, mutated = _handle(answer, inputs, header, payload)
        except AnswerFailed as exc:
            reply = {"ok": False, "kind": exc.kind, "message": exc.message}
            data = b""
        except SystemExit as exc:
            reply = {"ok": False, "kind": "exit", "message": f"called sys.exit({exc.code!r})"}
            data = b""
        except KeyboardInterrupt:
            reply = {"ok": False, "kind": "interrupted", "message": "was interrupted"}
            data = b""
        except BaseException as exc:  # the answer's own error, reported by name
            try:
                message = _short(exc) or "(no message)"
            except BaseException:
                message = "(its message cannot be shown)"
            reply = {"ok": False, "kind": "raised", "type": type(exc).__name__, "message": message}
            data = b""
        else:
            reply = {"ok": True, "mutated": mutated, **_array_header(result)}
            data = result.tobytes()
        reply["output"] = capture.take()
        _send(wfd, _encode(reply, data))


def _limit_memory() -> None:
    try:
        import resource

        with open("/proc/self/statm") as fh:
            pages = int(fh.read().split()[0])
        size = pages * os.sysconf("SC_PAGE_SIZE") + ANSWER_MEMORY_LIMIT
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            size = min(size, hard)
        if soft == resource.RLIM_INFINITY or soft > size:
            resource.setrlimit(resource.RLIMIT_AS, (size, hard))
    except (OSError, ValueError, ImportError):  # no /proc (macOS): the time limit still holds
        return


# ------------------------------------------------------------------------ the parent
class Sandbox:
    """One grading's child process: ``with Sandbox(answer, inputs) as box: box.call(...)``.

    ``box.error`` is the first failure of the answer (an :class:`AnswerFailed`), ``box.fatal``
    the one that ended the grading (time, exit, death), ``box.mutated`` whether the answer
    wrote into its inputs, ``box.output`` what it printed."""

    def __init__(self, answer, inputs=()):
        self.answer, self.inputs = answer, list(inputs)
        self.used = 0.0
        self.error: AnswerFailed | None = None
        self.fatal: AnswerFailed | None = None
        self.mutated = False
        self.output: list[str] = []
        self.pid = None

    def __enter__(self) -> Sandbox:
        if not hasattr(os, "fork"):
            return self
        sys.stdout.flush()
        sys.stderr.flush()
        to_child, self._to_child = os.pipe()
        self._from_child, from_child = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child never returns into the caller's frames
            code = 0
            try:
                os.close(self._to_child)
                os.close(self._from_child)
                _serve(self.answer, self.inputs, to_child, from_child)
            except BaseException:
                code = 1
            finally:
                os._exit(code)
        os.close(to_child)
        os.close(from_child)
        self.pid = pid
        return self

    def __exit__(self, *exc) -> None:
        if self.pid is None:
            return
        for fd in (self._to_child, self._from_child):
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            os.kill(self.pid, signal.SIGKILL)
        except OSError:
            pass
        os.waitpid(self.pid, 0)
        self.pid = None

    # requests -------------------------------------------------------------------------
    def call(self, *arrays, torch_args: bool = False) -> np.ndarray:
        """The answer on ``arrays`` (NumPy arrays of real numbers)."""
        arrays = [np.ascontiguousarray(a) for a in arrays]
        header = {"op": "call", "torch": torch_args, "arrays": [_array_header(a) for a in arrays]}
        return self._request(header, b"".join(a.tobytes() for a in arrays))

    def call_input(self, index: int) -> np.ndarray:
        """The answer on the grader's ``index``-th input tuple."""
        return self._request({"op": "input", "index": index}, b"")

    def value(self) -> np.ndarray:
        """The answer (a value, not a function) as a float64 array."""
        return self._request({"op": "value"}, b"")

    def _fail(self, exc: AnswerFailed) -> AnswerFailed:
        if self.error is None:
            self.error = exc
        if exc.fatal and self.fatal is None:
            self.fatal = exc
        return exc

    def _request(self, header: dict, payload: bytes) -> np.ndarray:
        if self.fatal is not None:
            raise self.fatal
        if self.pid is None:
            return self._in_process(header, payload)
        start = time.monotonic()
        try:
            _send(self._to_child, _encode(header, payload))
            self._wait_for_reply(start)
            reply, data = _receive(
                self._from_child, time.monotonic() + _MESSAGE_SECONDS, MAX_ANSWER_BYTES
            )
        except TimeoutError:
            raise self._fail(
                AnswerFailed(
                    "timeout",
                    f"did not finish within {ANSWER_TIME_LIMIT:g} s (it hangs or is far too "
                    "slow; a vectorised NumPy answer takes milliseconds)",
                )
            ) from None
        except (EOFError, OSError, ValueError, OverflowError, RecursionError):
            raise self._fail(AnswerFailed("died", self._death())) from None
        finally:
            self.used += time.monotonic() - start
        try:
            return self._reply(reply, data)
        except (KeyError, TypeError, ValueError):  # not what the child's code sends
            raise self._fail(AnswerFailed("died", "answered the grader with garbage")) from None

    def _wait_for_reply(self, start: float) -> None:
        """Wait until the child starts to reply, within the answer's time. A child that is
        runnable but has used less CPU than the limit (a loaded machine) is given more wall
        time, up to ``_HARD_WALL_SECONDS``; one that sleeps or has used its CPU time is not."""
        deadline = start + max(ANSWER_TIME_LIMIT - self.used, 0.0)
        while True:
            wait = max(deadline - time.monotonic(), 0.0)
            if select.select([self._from_child], [], [], wait)[0]:
                return
            if not self._starved(start):
                raise TimeoutError
            deadline = time.monotonic() + _STARVED_STEP_SECONDS

    def _starved(self, start: float) -> bool:
        """Whether the child is waiting for a CPU rather than sleeping or spinning on its own
        (Linux /proc: its state and its CPU time); False where that cannot be read."""
        if time.monotonic() - start > _HARD_WALL_SECONDS:
            return False
        try:
            with open(f"/proc/{self.pid}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            return False
        cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime
        return fields[0] == "R" and cpu < ANSWER_TIME_LIMIT

    def _reply(self, reply: dict, data: bytes) -> np.ndarray:
        if reply.get("output"):
            self.output.append(str(reply["output"])[:MAX_ANSWER_OUTPUT])
        if not reply["ok"]:
            kind = reply["kind"] if reply["kind"] in _KINDS else "died"
            raise self._fail(
                AnswerFailed(kind, _short(reply["message"]), _short(reply.get("type", ""), 80))
            )
        self.mutated = self.mutated or bool(reply.get("mutated"))
        if np.dtype(reply["dtype"]) != np.float64:
            raise ValueError("not float64")
        return _decode_array(reply, data)

    def _death(self) -> str:
        """How the child ended (its exit status or signal) once it stopped answering; a child
        still running after a short wait is killed."""
        status = None
        for _ in range(_DEATH_POLLS):
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if done:
                break
            status = None
            time.sleep(_DEATH_POLL_SECONDS)
        if status is None:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
            self.pid = None
            return "stopped answering the grader"
        self.pid = None
        if os.WIFSIGNALED(status):
            name = signal.Signals(os.WTERMSIG(status)).name
            return f"ended its process with signal {name} (a crash, or memory beyond the limit)"
        return f"ended its process with exit status {os.WEXITSTATUS(status)} (os._exit?)"

    def _in_process(self, header: dict, payload: bytes) -> np.ndarray:
        try:
            result, mutated = _handle(self.answer, self.inputs, header, payload)
        except AnswerFailed as exc:
            raise self._fail(exc) from None
        except SystemExit as exc:
            raise self._fail(AnswerFailed("exit", f"called sys.exit({exc.code!r})")) from None
        except Exception as exc:
            raise self._fail(AnswerFailed("raised", _short(exc), type(exc).__name__)) from None
        self.mutated = self.mutated or mutated
        return result


# --------------------------------------------------------------- the grader's own code
_WATCHED = ("numpy", "numpy.linalg", "math", "cmath")


def _code_of(obj):
    return getattr(obj, "__code__", None)


def _watched(mod_name: str) -> bool:
    return mod_name == "refimpl" or mod_name.startswith("refimpl.") or mod_name in _WATCHED


def _add_module(out: dict, mod_name: str, mod) -> None:
    for name, obj in list(vars(mod).items()):
        if isinstance(obj, (types.FunctionType, types.BuiltinFunctionType, type, np.ufunc)):
            out["entries"][(mod_name, name)] = (obj, _code_of(obj))
    out["modules"].add(mod_name)


def snapshot() -> dict:
    """Every function and class of refimpl's modules (and NumPy's main namespace) as loaded
    now: ``{"entries": {(module, name): (object, code object)}, "modules": names seen}``."""
    out: dict = {"modules": set(), "entries": {}}
    for mod_name, mod in list(sys.modules.items()):
        if isinstance(mod, types.ModuleType) and _watched(mod_name):
            _add_module(out, mod_name, mod)
    return out


def tampered(before: dict) -> str | None:
    """The first function of ``before`` that has been replaced (or whose code has), as
    ``"module.name"``; None when every one is as loaded. A refimpl module loaded after the
    snapshot is added to it at first sight; a public function or class of the package must be
    one defined in a refimpl module."""
    for mod_name, mod in list(sys.modules.items()):
        if mod_name not in before["modules"] and isinstance(mod, types.ModuleType):
            if _watched(mod_name):
                _add_module(before, mod_name, mod)
    for (mod_name, name), (obj, code) in before["entries"].items():
        mod = sys.modules.get(mod_name)
        now = getattr(mod, name, None) if mod is not None else None
        if now is not obj or _code_of(now) is not code:
            return f"{mod_name}.{name}"
    package = sys.modules.get("refimpl")
    for name in getattr(package, "__all__", ()):
        obj = getattr(package, name, None)
        if not isinstance(obj, (types.FunctionType, type)):
            continue
        home = getattr(obj, "__module__", "") or ""
        if not (home == "refimpl" or home.startswith("refimpl.")):
            return f"refimpl.{name}"
    return None


def plain_value(value, budget: int = 10**6) -> bool:
    """Whether ``value`` is data NumPy converts without running any of the reader's code:
    exact ndarrays, built-in and NumPy scalars, and lists or tuples of them (a class the
    reader wrote could run anything from ``__array__``, ``__len__`` or ``__float__``)."""
    stack, seen = [value], 0
    while stack:
        v = stack.pop()
        seen += 1
        if seen > budget:
            return False
        if type(v) is np.ndarray:
            if v.dtype == object:
                stack.extend(v.ravel().tolist())
        elif type(v) in (list, tuple):
            stack.extend(v)
        elif type(v) not in _BUILTIN_DATA and not (
            isinstance(v, np.generic) and type(v).__module__ == "numpy"
        ):
            return False
    return True


# Values NumPy converts without calling anything the reader wrote.
_BUILTIN_DATA = (int, float, bool, complex, str, bytes, type(None), dict, set, frozenset)


def finite(arr: np.ndarray) -> bool:
    """Whether every entry of a float64 array is finite."""
    return bool(np.all(np.isfinite(arr)))
