"""The workbook as downloads that run on their own: one zip per chapter, and one of the whole.

A chapter's zip holds everything its notebook needs and nothing of the repository around it:

    refimpl-<chapter>/README.md                    how to install and open it, no clone needed
    refimpl-<chapter>/refimpl-<version>-py3-none-any.whl
    refimpl-<chapter>/workbook/<chapter>.ipynb     the student notebook
    refimpl-<chapter>/workbook/workbook_checks.py  the checks its check cells call
    refimpl-<chapter>/workbook/_plots.py ...       the book's helper modules it imports
    refimpl-<chapter>/experiments/results/...      data files it reads, at the relative paths
                                                   the notebook uses

The wheel is the package built from the repository (``pip wheel``); the README installs it with
the packages the chapter imports, at the versions the project pins.
"""

from __future__ import annotations

import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile

#: Data the chapters read by relative paths: the text a chapter's code must contain for the
#: data to be included, and the files (relative to the repository's root).
DATA = {
    "experiments/results": ("experiments/results/*.json",),
    "parity/configs": ("tests/parity/configs/*.json", "tests/parity/configs/*.md"),
    "engines/configs": ("tests/engines/configs/*.json",),
    "benchmarks/results": ("benchmarks/results/*.json",),
    "examples/": ("examples/*/*.py", "examples/*/*.cpp"),
}
#: Modules a chapter may import, and the distribution that provides each (pinned from
#: pyproject.toml's extras).
DISTRIBUTIONS = {
    "matplotlib": "matplotlib",
    "sympy": "sympy",
    "mpmath": "mpmath",
    "ml_dtypes": "ml_dtypes",
    "safetensors": "safetensors",
    "gguf": "gguf",
}
#: What opens the notebooks (pinned in pyproject.toml's ``lab`` extra).
OPENER = "jupyterlab"
IMPORT_RE = re.compile(r"^\s*(?:from\s+([\w.]+)\s+import|import\s+([\w.]+))", re.M)


def pins(pyproject: pathlib.Path) -> dict[str, str]:
    """``name -> "name==version"`` for every pinned requirement of pyproject.toml's extras."""
    out = {}
    for name, version in re.findall(
        r'"([A-Za-z0-9_.-]+)==([^";]+)"', pyproject.read_text(encoding="utf8")
    ):
        out.setdefault(name.lower().replace("-", "_"), f"{name}=={version}")
    return out


def requirements(sources: list[str], pinned: dict[str, str]) -> list[str]:
    """The pinned distributions that code in ``sources`` imports, plus the notebook opener."""
    modules = {(a or b).split(".")[0] for src in sources for a, b in IMPORT_RE.findall(src)}
    # the checks import sympy for the symbolic exercises; matplotlib draws every figure
    modules |= {"matplotlib", "sympy"}
    wanted = sorted({DISTRIBUTIONS[m] for m in modules if m in DISTRIBUTIONS})
    return [pinned.get(w.lower(), w) for w in wanted]


def data_files(sources: list[str], root: pathlib.Path) -> list[pathlib.Path]:
    """The repository's data files that code in ``sources`` reads (see :data:`DATA`)."""
    text = "\n".join(sources)
    files: list[pathlib.Path] = []
    for marker, patterns in DATA.items():
        if marker in text:
            for pattern in patterns:
                files += sorted(root.glob(pattern))
    return files


def build_wheel(root: pathlib.Path, dest: pathlib.Path) -> pathlib.Path:
    """Build the package's wheel into ``dest`` with pip (offline from the warm cache).

    The build runs on a copy of the package's sources in a temporary folder, so that the
    build backend's scratch folders never land in the repository."""
    dest.mkdir(parents=True, exist_ok=True)
    for old in dest.glob("refimpl-*.whl"):
        old.unlink()
    with tempfile.TemporaryDirectory() as tmp:
        src = pathlib.Path(tmp) / "src"
        shutil.copytree(
            root / "refimpl", src / "refimpl", ignore=shutil.ignore_patterns("__pycache__")
        )
        for name in ("pyproject.toml", "README.md", "LICENSE", "NOTICE"):
            if (root / name).is_file():
                shutil.copy2(root / name, src / name)
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dest), str(src)],
            capture_output=True,
            text=True,
            check=False,
        )
    wheels = sorted(dest.glob("refimpl-*.whl"))
    if proc.returncode != 0 or len(wheels) != 1:
        raise RuntimeError(f"pip wheel of {root} failed: {proc.stderr[-2000:]}")
    return wheels[0]


def readme(title: str, notebook: str, wheel: str, reqs: list[str], opener: str) -> str:
    """The README of a download: what it is and how to run it without a clone."""
    extra = " ".join([*reqs, opener])
    return f"""# {title}: the workbook

This folder runs on its own: the notebook `{notebook}`, the checks its check cells call
(`workbook/workbook_checks.py`), the helper modules and data it reads, and the `refimpl`
package as a wheel (`{wheel}`). You need Python 3.10 or newer.

## Install (once)

On Linux or macOS, from this folder:

    python3 -m venv .venv
    .venv/bin/pip install {wheel} {extra}

On Windows:

    py -m venv .venv
    .venv\\Scripts\\pip install {wheel} {extra}

## Open the notebook

    .venv/bin/jupyter lab {notebook}

(`.venv\\Scripts\\jupyter lab {notebook}` on Windows.) Run the cells from the top; for each
exercise write your answer in its answer cell, run it, then run the check cell below it: it
prints PASS or FAIL with a hint. Your answers are saved in the notebook.
"""


def chapter_zip(
    *,
    workbook: pathlib.Path,
    notebook: pathlib.Path,
    modules: list[str],
    data: list[pathlib.Path],
    wheel: pathlib.Path,
    root: pathlib.Path,
    title: str,
    reqs: list[str],
    zip_path: pathlib.Path,
) -> pathlib.Path:
    """Write one chapter's standalone zip (see the module docstring) atomically."""
    rel = notebook.relative_to(workbook)
    top = pathlib.PurePosixPath(zip_path.stem)
    members = {
        top / "workbook" / rel.as_posix(): notebook,
        top / "workbook" / "workbook_checks.py": workbook / "workbook_checks.py",
        top / wheel.name: wheel,
    }
    for name in modules:
        members[top / "workbook" / f"{name}.py"] = workbook / f"{name}.py"
    for f in data:
        members[top / f.relative_to(root).as_posix()] = f
    opener = pins(root / "pyproject.toml").get(OPENER, OPENER)
    text = readme(title, f"workbook/{rel.as_posix()}", wheel.name, reqs, opener)
    zip_path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=zip_path.parent, suffix=".tmp", delete=False) as tmp:
        tmp_path = pathlib.Path(tmp.name)
    try:
        with zipfile.ZipFile(tmp_path, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr(str(top / "README.md"), text)
            for arcname, src in sorted(members.items()):
                z.write(src, str(arcname))
        tmp_path.chmod(0o644)
        tmp_path.replace(zip_path)
    finally:
        tmp_path.unlink(missing_ok=True)
    return zip_path
