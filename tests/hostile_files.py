"""Crafted input files for the hostile-file suites (``test_hostile_gguf.py`` in process,
``test_hostile_cli_files.py`` through the command line).

GGUF files are built here from raw bytes (so that any field can be wrong: a type, a count, a
length, a nesting) and, for files a converter writes, with the ``gguf`` package's writer.
:data:`CRAFTED_GGUF` maps a name to ``(builder, words)``: ``builder()`` returns the file's
bytes and ``words`` are what the one-line refusal must contain (None: the file is valid and
reads). Every file here is hand-made; none is copied from a model.
"""

from __future__ import annotations

import functools
import struct

import numpy as np

U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 = range(13)
GGML_F32, GGML_F16, GGML_I32 = 0, 1, 26


def gstr(text) -> bytes:
    raw = text.encode() if isinstance(text, str) else bytes(text)
    return struct.pack("<Q", len(raw)) + raw


def kv(key: str, code: int, payload: bytes) -> bytes:
    return gstr(key) + struct.pack("<I", code) + payload


def u32(key, value):
    return kv(key, U32, struct.pack("<I", value))


def i32(key, value):
    return kv(key, I32, struct.pack("<i", value))


def f32(key, value):
    return kv(key, F32, struct.pack("<f", value))


def text(key, value):
    return kv(key, STRING, gstr(value))


def array(key, code, values, fmt):
    body = b"".join(struct.pack(fmt, v) for v in values)
    return kv(key, ARRAY, struct.pack("<IQ", code, len(values)) + body)


def strings(key, values):
    return kv(key, ARRAY, struct.pack("<IQ", STRING, len(values)) + b"".join(map(gstr, values)))


def gguf_bytes(kvs, tensors=(), data=b"", *, version=3, n_kv=None, n_tensors=None) -> bytes:
    """A GGUF file: header, key-value pairs, tensor descriptions ``(name, shape, ggml type,
    offset)``, padding to 32 bytes and ``data``. ``n_kv`` / ``n_tensors`` override the
    declared counts."""
    head = b"GGUF" + struct.pack(
        "<IQQ",
        version,
        len(tensors) if n_tensors is None else n_tensors,
        len(kvs) if n_kv is None else n_kv,
    )
    out = head + b"".join(kvs)
    for name, shape, ggml_type, offset in tensors:
        dims = b"".join(struct.pack("<Q", d) for d in shape)
        out += gstr(name) + struct.pack("<I", len(shape)) + dims
        out += struct.pack("<IQ", ggml_type, offset)
    if data:
        out += b"\0" * (-len(out) % 32) + data
    return out


ARCH = text("general.architecture", "llama")
HEAD = u32("llama.attention.key_length", 64)
BASE = f32("llama.rope.freq_base", 10000.0)
VALID = [ARCH, HEAD, BASE]
FACTORS = np.linspace(1.0, 8.0, 32, dtype=np.float32)


def _cut_in_last_byte() -> bytes:
    """``rope.scaling.type = "yarn"`` with the file ending one byte before the string does
    (a reader that slices would read "yar")."""
    full = gguf_bytes([*VALID, text("llama.rope.scaling.type", "yarn")])
    return full[:-1]


def _nested(depth: int) -> bytes:
    """An array of arrays ``depth`` deep (llama.cpp refuses any nesting)."""
    body = struct.pack("<IQ", ARRAY, 1) * depth + struct.pack("<IQ", U8, 0)
    return gguf_bytes([*VALID, kv("llama.rope.dimension_sections", ARRAY, body)])


def _huge_last_array() -> bytes:
    """About 180 bytes whose last key declares 2**40 strings (no bytes follow)."""
    bad = kv("tokenizer.ggml.tokens", ARRAY, struct.pack("<IQ", STRING, 2**40))
    return gguf_bytes([*VALID, u32("llama.context_length", 4096), bad])


@functools.lru_cache(maxsize=2)
def tokenizer_file(n_tokens: int) -> bytes:
    """A tokenizer of ``n_tokens`` strings, scores and types, then six rope keys (after the
    tokenizer, so the reader must step over it) and a rope_freqs tensor."""
    kvs = [
        ARCH,
        strings("tokenizer.ggml.tokens", [f"tok{i}" for i in range(n_tokens)]),
        array("tokenizer.ggml.scores", F32, [0.0] * n_tokens, "<f"),
        array("tokenizer.ggml.token_type", I32, [1] * n_tokens, "<i"),
        u32("llama.attention.key_length", 64),
        u32("llama.rope.dimension_count", 64),
        f32("llama.rope.freq_base", 500000.0),
        u32("llama.context_length", 8192),
        u32("llama.block_count", 16),
        u32("llama.embedding_length", 2048),
    ]
    return gguf_bytes(kvs, [("rope_freqs.weight", (32,), GGML_F32, 0)], FACTORS.tobytes())


def tensor_file(shape, ggml_type, payload=None) -> bytes:
    payload = FACTORS.tobytes() if payload is None else payload
    return gguf_bytes(VALID, [("rope_freqs.weight", shape, ggml_type, 0)], payload)


CRAFTED_GGUF = {
    # valid files
    "valid minimal": (lambda: gguf_bytes(VALID), None),
    "factor without scaling type": (
        lambda: gguf_bytes([*VALID, f32("llama.rope.scaling.factor", 4.0)]),
        None,
    ),
    "legacy rope.scale_linear": (
        lambda: gguf_bytes([*VALID, f32("llama.rope.scale_linear", 4.0)]),
        None,
    ),
    "50k-entry tokenizer": (lambda: tokenizer_file(50_000), None),
    "rope_freqs 1-D F32": (lambda: tensor_file((32,), GGML_F32), None),
    # refused: llama.cpp refuses them, or they are damaged or hostile
    "empty file": (lambda: b"", ("not a GGUF",)),
    "wrong magic": (lambda: b"GGML" + bytes(40), ("not a GGUF",)),
    "GGUF version 1": (lambda: gguf_bytes(VALID, version=1), ("version 1",)),
    "GGUF version 99": (lambda: gguf_bytes(VALID, version=99), ("version 99",)),
    "unknown scaling type": (
        lambda: gguf_bytes([*VALID, text("llama.rope.scaling.type", "yarn2")]),
        ("llama.rope.scaling.type", "'yarn2'", "llama.cpp knows"),
    ),
    "string cut inside its last byte": (
        _cut_in_last_byte,
        ("truncated", "llama.rope.scaling.type"),
    ),
    "freq_base as a string": (
        lambda: gguf_bytes([ARCH, HEAD, text("llama.rope.freq_base", "10000")]),
        ("llama.rope.freq_base", "string", "float32"),
    ),
    "dimension_count 64.7": (
        lambda: gguf_bytes([*VALID, f32("llama.rope.dimension_count", 64.7)]),
        ("llama.rope.dimension_count", "float32", "uint32"),
    ),
    "rope_freqs as I32": (
        lambda: tensor_file((32,), GGML_I32),
        ("rope_freqs.weight", "F32"),
    ),
    "rope_freqs as F16": (
        lambda: tensor_file((32,), GGML_F16),
        ("rope_freqs.weight", "F32"),
    ),
    "rope_freqs 2-D": (
        lambda: tensor_file((16, 2), GGML_F32),
        ("rope_freqs.weight", "1-D"),
    ),
    "rope_freqs of the wrong length": (
        lambda: tensor_file((16,), GGML_F32, FACTORS[:16].tobytes()),
        ("rope_freqs.weight", "n_rot/2 = 32"),
    ),
    "rope_freqs past the end": (
        lambda: tensor_file((32,), GGML_F32, FACTORS[:8].tobytes()),
        ("rope_freqs.weight", "past the end"),
    ),
    "180-byte file, last key 2**40 strings": (_huge_last_array, ("truncated", "tokenizer")),
    "block_count 2**32-1": (
        lambda: gguf_bytes([*VALID, u32("llama.block_count", 2**32 - 1)]),
        ("llama.block_count", "512"),
    ),
    "block_count -3": (
        lambda: gguf_bytes([*VALID, i32("llama.block_count", -3)]),
        ("llama.block_count", "int32", "uint32"),
    ),
    "infinite scaling factor": (
        lambda: gguf_bytes([*VALID, f32("llama.rope.scaling.factor", float("inf"))]),
        ("llama.rope.scaling.factor", "finite"),
    ),
    "NaN freq_base": (
        lambda: gguf_bytes([ARCH, HEAD, f32("llama.rope.freq_base", float("nan"))]),
        ("llama.rope.freq_base", "finite"),
    ),
    "full_attention_interval 0": (
        lambda: gguf_bytes(
            [
                text("general.architecture", "qwen3next"),
                u32("qwen3next.attention.key_length", 64),
                u32("qwen3next.block_count", 8),
                u32("qwen3next.full_attention_interval", 0),
            ]
        ),
        ("qwen3next.full_attention_interval", "positive"),
    ),
    "nesting 5000 deep": (lambda: _nested(5000), ("llama.rope.dimension_sections", "nested")),
    "duplicate rope key": (
        lambda: gguf_bytes([*VALID, f32("llama.rope.freq_base", 500000.0)]),
        ("duplicate", "llama.rope.freq_base"),
    ),
    "no general.architecture": (
        lambda: gguf_bytes([HEAD, BASE]),
        ("general.architecture",),
    ),
    "2**62 keys declared": (lambda: gguf_bytes(VALID, n_kv=2**62), ("truncated", "keys")),
    "key length 2**63": (
        lambda: gguf_bytes([ARCH, struct.pack("<Q", 2**63) + b"x"]),
        ("truncated",),
    ),
    "a key that is not UTF-8 (llama.cpp takes any bytes)": (
        lambda: gguf_bytes([*VALID, kv("llama.\xff".encode("latin-1"), U32, b"\0\0\0\0")]),
        None,
    ),
    "scaling type not UTF-8": (
        lambda: gguf_bytes([*VALID, kv("llama.rope.scaling.type", STRING, gstr(b"\xffyarn"))]),
        ("llama.rope.scaling.type", "UTF-8"),
    ),
    "alignment 3": (
        lambda: gguf_bytes([*VALID, u32("general.alignment", 3)]),
        ("general.alignment", "power of 2"),
    ),
    "tensor with 5 dimensions": (
        lambda: tensor_file((32, 1, 1, 1, 1), GGML_F32),
        ("rope_freqs.weight", "dimensions"),
    ),
    "invalid value type 99": (
        lambda: gguf_bytes([*VALID, kv("llama.other", 99, b"")]),
        ("invalid GGUF type 99",),
    ),
    "sections as float32 array": (
        lambda: gguf_bytes(
            [*VALID, array("llama.rope.dimension_sections", F32, [16.0, 8.0, 8.0, 0.0], "<f")]
        ),
        ("llama.rope.dimension_sections", "array<float32>", "array<int32>"),
    ),
}
