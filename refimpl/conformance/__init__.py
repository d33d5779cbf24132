r"""A language-neutral conformance suite for RoPE kernels: golden cases and a verifier.

:func:`write_suite` writes, for one model configuration and one input dtype, a suite in the
format ``refimpl-conformance/2`` (book page "Suite format"):

* ``inputs/CASE.safetensors`` and ``inputs/CASE.npz`` -- what a kernel reads: ``q`` and ``k``
  (or ``query``/``key``, ``qkv``, strided buffers) in the dtype, the positions in the case's
  form, ``inv_freq`` (unless the suite is written with ``frequencies="computed"``) and, in
  the safetensors metadata, everything else a kernel needs;
* ``expected/CASE.safetensors`` and ``.npz`` -- the expected outputs (float64), the allowed
  error of every element and ``inv_freq``, for the verifier;
* ``manifest.json`` -- written last: every case (layout, position form, the rotation with its
  scaling parameters, inputs, outputs), the formulas, the tolerance model, the pipeline
  classes accepted for the dtype and every file's sha256.

A kernel writes each case's outputs (the names of its ``outputs``) into a results directory
of its own, ``RESULTS/CASE.safetensors`` or ``.npz``, and :func:`verify_outputs`
(``python -m refimpl verify SUITE RESULTS``) gives one verdict per case -- the worst element,
its error and allowed error, the tightest pipeline class met -- before any diagnosis of the
failing cases (the layout causes the suite alone can see, and the checker's stages
(:func:`refimpl.check.check_rope_arrays`) on the probe rows).

The tolerance of every element comes from the pipeline classes of
:data:`refimpl.pipelines.PIPELINE_CLASSES` (:mod:`refimpl.conformance._layout`): a correct
kernel of any accepted recipe passes; bfloat16/float16 positions, frequencies or angles, and
half-precision tables in a float32 suite, fail with the class named.
"""

from __future__ import annotations

from .._pipeline_classes import PIPELINE_CLASSES, SUITE_DTYPES, accepted_classes
from ._files import SuiteFileError, read_safetensors, write_safetensors
from ._layout import MARGIN, allowed_error
from ._verify import (
    EXIT_FAIL,
    EXIT_PASS,
    EXIT_SUITE,
    EXIT_USAGE,
    CaseResult,
    VerifyReport,
    verify_outputs,
)
from ._write import FORMAT, FREQUENCY_MODES, write_suite

__all__ = [
    "DTYPES",
    "EXIT_FAIL",
    "EXIT_PASS",
    "EXIT_SUITE",
    "EXIT_USAGE",
    "FORMAT",
    "FREQUENCY_MODES",
    "MARGIN",
    "PIPELINES",
    "CaseResult",
    "SuiteFileError",
    "VerifyReport",
    "accepted_classes",
    "allowed_error",
    "read_safetensors",
    "verify_outputs",
    "write_safetensors",
    "write_suite",
]

#: Input dtypes a suite is written for.
DTYPES = SUITE_DTYPES
#: The pipeline classes, a view of :data:`refimpl.pipelines.PIPELINE_CLASSES` (the manifest's
#: ``pipelines`` and ``accepted_pipelines`` name them).
PIPELINES = PIPELINE_CLASSES
