"""Sphinx extension: execute the book's notebooks in parallel, into myst-nb's execution cache.

With ``execute_notebooks: cache`` myst-nb executes each notebook while Sphinx reads it, one at a
time. Before Sphinx reads anything (``env-before-read-docs``), this extension reads every
notebook that is about to be read exactly as myst-nb will (its own reader and configuration,
the page's ``mystnb`` metadata included), looks it up in the jupyter-cache, and executes the
ones missing from it in a pool of worker processes, each in the notebook's own folder as
myst-nb would. The executed notebooks go into the cache; when Sphinx then reads the pages,
myst-nb finds each one there and renders it from the cache.

Nothing is skipped or weakened: a notebook that fails here is left out of the cache, so that
myst-nb executes it again while reading it and reports the failure as it always does (a
warning that ``-W`` turns into a failed build, the traceback in the log). The longest
notebooks (by their last recorded execution time, else by size) start first.

The kernels are forked from one process that has imported numpy, matplotlib, SymPy and
refimpl once (``tools/fork_kernel.py``; ``REFIMPL_FORK_KERNELS=0`` starts each the ordinary way):
each notebook still has a kernel of its own, without paying those imports again.

Configuration: the environment variable ``REFIMPL_BOOK_JOBS`` sets the number of worker
processes (default: the number of CPUs; ``1`` turns the extension off). Where
``REFIMPL_EXECUTED_SIGNAL`` names a file, it is created once every notebook is in the cache, so
that a caller can start other work while Sphinx, on one core, reads and writes the pages
(``make test`` starts the tests that do not read the built book then).
"""

from __future__ import annotations

import importlib.util
import multiprocessing
import os
import pathlib
import time
import traceback

from sphinx.util import logging

LOG = logging.getLogger(__name__)
JOBS_ENV = "REFIMPL_BOOK_JOBS"
SIGNAL_ENV = "REFIMPL_EXECUTED_SIGNAL"

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _fork_kernel():
    """``tools/fork_kernel.py``, loaded by path (Sphinx's sys.path stays as it is)."""
    spec = importlib.util.spec_from_file_location("fork_kernel", ROOT / "tools" / "fork_kernel.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: The notebooks the workers execute, set in the parent before the pool forks.
_JOBS: list[dict] = []


def _jobs_wanted() -> int:
    raw = os.environ.get(JOBS_ENV, "")
    if raw:
        try:
            n = int(raw)
        except ValueError:
            msg = f"{JOBS_ENV} must be a whole number of processes, got {raw!r}"
            raise ValueError(msg) from None
        if n < 1:
            raise ValueError(f"{JOBS_ENV} must be at least 1, got {n}")
        return n
    return os.cpu_count() or 1


def _execute(index: int) -> tuple[int, object, float, str | None]:
    """Worker: execute job ``index`` in its notebook's folder (the fork holds ``_JOBS``)."""
    from jupyter_cache.executors.utils import single_nb_execution

    job = _JOBS[index]
    try:
        result = single_nb_execution(
            job["notebook"],
            cwd=job["cwd"],
            allow_errors=job["allow_errors"],
            timeout=job["timeout"],
            meta_override=True,
        )
    except Exception:  # a kernel that does not start: myst-nb retries and reports it
        return index, None, 0.0, traceback.format_exc()
    if result.err is not None:
        return index, None, result.time, f"{type(result.err).__name__}"
    return index, job["notebook"], result.time, None


def _last_runtimes(cache) -> dict[str, float]:
    """The last recorded execution time of each notebook in the cache, by path."""
    out: dict[str, float] = {}
    for record in cache.list_cache_records():
        seconds = (record.data or {}).get("execution_seconds")
        if seconds is not None:
            out[record.uri] = max(out.get(record.uri, 0.0), float(seconds))
    return out


def _pending(app, env, docnames) -> list[dict]:
    """The notebooks among ``docnames`` that the cache does not hold yet."""
    base = env.mystnb_config
    if base.execution_mode != "cache":
        return []
    from jupyter_cache import get_cache
    from myst_nb.core.nb_to_tokens import nb_node_to_dict
    from myst_nb.core.read import create_nb_reader

    cache = get_cache(base.execution_cache_path or ".jupyter_cache")
    jobs = []
    for docname in docnames:
        path = str(env.doc2path(docname))
        content = pathlib.Path(path).read_text(encoding="utf8")
        reader = create_nb_reader(path, env.myst_config, base, content)
        if reader is None:
            continue
        notebook = reader.read(content)
        config = base
        if base.metadata_key in notebook.metadata:
            overrides = nb_node_to_dict(notebook.metadata[base.metadata_key])
            overrides.pop("output_folder", None)
            config = base.copy(**overrides)
        if any(pathlib.PurePosixPath(path).match(p) for p in config.execution_excludepatterns):
            continue
        try:
            cache.match_cache_notebook(notebook)
            continue  # cached: myst-nb renders it from the cache
        except KeyError:
            pass
        jobs.append(
            {
                "path": path,
                "notebook": notebook,
                "cwd": str(pathlib.Path(path).parent),
                "timeout": config.execution_timeout,
                "allow_errors": config.execution_allow_errors,
            }
        )
    runtimes = _last_runtimes(cache)
    jobs.sort(key=lambda j: (runtimes.get(j["path"], 0.0), len(str(j["notebook"]))), reverse=True)
    return jobs


def _signal_executed() -> None:
    """Create the file ``REFIMPL_EXECUTED_SIGNAL`` names, if it names one."""
    path = os.environ.get(SIGNAL_ENV)
    if path:
        pathlib.Path(path).parent.mkdir(parents=True, exist_ok=True)
        pathlib.Path(path).touch()


def execute_in_parallel(app, env, docnames) -> None:
    """``env-before-read-docs``: fill the cache with the notebooks about to be read."""
    n_workers = _jobs_wanted()
    if n_workers < 2 or app.builder.format != "html":
        return  # myst-nb executes while reading: no signal, the caller waits for the build
    jobs = _pending(app, env, docnames)
    if len(jobs) < 2:
        if not jobs:
            _signal_executed()
        return
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    cache = get_cache(env.mystnb_config.execution_cache_path or ".jupyter_cache")
    _JOBS[:] = jobs
    LOG.info(f"parallel_execute: executing {len(jobs)} notebooks in {n_workers} processes")
    t0 = time.perf_counter()
    try:
        with (
            _fork_kernel().forked_kernels(),
            multiprocessing.get_context("fork").Pool(min(n_workers, len(jobs))) as pool,
        ):
            for index, executed, seconds, error in pool.imap_unordered(_execute, range(len(jobs))):
                path = jobs[index]["path"]
                if error is not None:
                    LOG.info(f"parallel_execute: {path} failed ({error}); myst-nb reruns it")
                    continue
                cache.cache_notebook_bundle(
                    CacheBundleIn(executed, path, data={"execution_seconds": seconds}),
                    check_validity=False,
                    overwrite=True,
                )
                LOG.info(f"parallel_execute: {path} executed in {seconds:.1f} s")
    finally:
        _JOBS.clear()
    LOG.info(f"parallel_execute: {len(jobs)} notebooks in {time.perf_counter() - t0:.1f} s")
    _signal_executed()


def setup(app):
    app.connect("env-before-read-docs", execute_in_parallel)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
