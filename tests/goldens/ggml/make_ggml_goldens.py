#!/usr/bin/env python3
"""Make RoPE cos/sin goldens from ggml's own CPU rope op (``ggml_rope_ext``) through ggml-python.

This script is NOT part of posenc and is never imported by the test suite: it runs in a throwaway virtual
environment with ``ggml-python==0.0.45`` (which builds its bundled ggml 0.15.3 from source with ggml's default CMake
options: the CPU backend, ``-O3 -march=native``) and numpy, and writes small ``<name>.npz`` files and one
``manifest.json`` that the suite reads without ggml. See README.md beside this file for the exact commands.

How a golden is made: an input row of ``n_dims`` float32 values whose rotation pairs are ``(1, 0)`` (NORMAL mode:
``x[2i] = 1, x[2i + 1] = 0``; NEOX mode: ``x[i] = 1, x[i + n_dims/2] = 0``), one row per position (``ne = [n_dims, 1,
n_pos]``), an int32 position vector, optionally a float32 ``freq_factors`` vector, and one ``ggml_rope_ext`` node
computed on the CPU with one thread. ggml's ``rotate_pairs`` writes ``x0*cos - x1*sin`` and ``x0*sin + x1*cos``;
with ``x0 = 1`` and ``x1 = 0`` both products with 0 are exactly 0 and ``1*c`` is exactly ``c``, so the output pairs
are ggml's cached ``(cos, sin)`` bit for bit (fused or not). The script only reads them out (an exact re-arrangement).

Its own arithmetic is named where it happens: the Llama-3 ``freq_factors`` (``llama3_rope_factors``: float64, then
float32) and the YaRN ``attn_factor`` (``llama_yarn_attn_factor``: llama.cpp's float32 expression with the C
library's own ``logf`` through ctypes). Both are inputs to ggml, stored in the golden, and fed unchanged to the code
under test.

Nothing here depends on the clock; the .npz members carry a fixed zip timestamp and a fixed deflate level, so a
re-run on the same machine with the same versions gives byte-identical files. ``--check`` recomputes everything and
compares it with the files on disk without writing anything.
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import hashlib
import importlib.metadata
import io
import json
import math
import platform
import sys
import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "manifest.json"
GENERATOR = "tests/goldens/ggml/make_ggml_goldens.py"
GGML_PYTHON_VERSION = "0.0.45"
ZIP_DATE = (1980, 1, 1, 0, 0, 0)  # fixed zip member time: byte-identical re-runs
ZIP_LEVEL = 9  # fixed deflate level (the bytes also depend on zlib's version, recorded in the manifest)
GGML_ROPE_TYPE_NORMAL = 0  # ggml.h: adjacent pairs (x[2i], x[2i+1])
GGML_ROPE_TYPE_NEOX = 2  # ggml.h: halves (x[i], x[i + n_dims/2])
MODES = {"normal": GGML_ROPE_TYPE_NORMAL, "neox": GGML_ROPE_TYPE_NEOX}

POSITIONS = np.concatenate(
    [np.arange(0, 64), np.arange(8176, 8208), np.arange(99984, 100016)]  # 0..63, around 8192, around 100000
).astype(np.int32)

_libm = ctypes.CDLL(ctypes.util.find_library("m"))
_libm.logf.restype = ctypes.c_float
_libm.logf.argtypes = [ctypes.c_float]


def c_logf(x: float) -> np.float32:
    """The C library's ``logf`` (what llama.cpp's host code calls), for the host-side ``attn_factor``."""
    return np.float32(_libm.logf(ctypes.c_float(x)))


def llama3_rope_factors(
    base: float, dim: int, factor: float, low_freq_factor: float, high_freq_factor: float, old_context_len: int
) -> np.ndarray:
    """Llama 3.1's ``rope_freqs`` as convert_hf_to_gguf.py's ``LlamaModel.generate_extra_tensors`` defines them
    (wavelength bands below ``old_context_len / high_freq_factor`` keep 1, above ``old_context_len / low_freq_factor``
    get ``factor``, the band between gets ``1 / ((1 - smooth) / factor + smooth)``), evaluated here in float64 and
    rounded once to float32. (The script itself evaluates in torch float32; a factor in the smooth band may differ
    from a converted GGUF's by an ulp or so. It is an input: the golden stores the exact float32 values used.)"""
    freqs = 1.0 / (base ** (np.arange(0, dim, 2, dtype=np.float64) / dim))
    low_wavelen = old_context_len / low_freq_factor
    high_wavelen = old_context_len / high_freq_factor
    out = []
    for freq in freqs:
        wavelen = 2 * math.pi / freq
        if wavelen < high_wavelen:
            out.append(1.0)
        elif wavelen > low_wavelen:
            out.append(factor)
        else:
            smooth = (old_context_len / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return np.array(out, np.float64).astype(np.float32)


def llama_yarn_attn_factor(freq_scale: float, rope_attn_factor: float = 1.0) -> np.float32:
    """``cparams.yarn_attn_factor`` as llama.cpp's ``llama_context`` constructor sets it for a YaRN model without
    ``rope_yarn_log_mul`` (src/llama-context.cpp): ``factor = 1.0f / freq_scale``; ``get_mscale(factor, 1.0f) =
    0.1f * 1.0f * logf(factor) + 1.0f`` (factor > 1); then ``*= 1.0f / (1.0f + 0.1f * logf(factor))`` (cancelling
    the factor ggml's kernel multiplies back in) and ``*= hparams.rope_attn_factor`` (1.0 by default). float32
    throughout, each operation rounded (llama.cpp's host code is not built with ``-march=native``, so no fused
    multiply-add is assumed here)."""
    f32 = np.float32
    factor = f32(1.0) / f32(freq_scale)
    log_factor = c_logf(float(factor))
    get_mscale = f32(f32(f32(0.1) * f32(1.0)) * log_factor) + f32(1.0)
    cancel = f32(1.0) / (f32(1.0) + f32(0.1) * log_factor)
    return f32(f32(get_mscale * cancel) * f32(rope_attn_factor))


CASES: list[dict[str, Any]] = [
    {"name": "plain_base1e4", "n_dims": 128, "freq_base": 10000.0, "note": "plain RoPE, base 10000"},
    {
        "name": "llama3_base5e5_freqfactors",
        "n_dims": 128,
        "freq_base": 500000.0,
        "freq_factors": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "old_context_len": 8192},
        "note": "Llama 3.1 style: base 500000 and rope_freqs (factor 8, low 1, high 4, original context 8192)",
    },
    {
        "name": "yarn_scale0.25_ctx32768",
        "n_dims": 128,
        "freq_base": 1000000.0,
        "freq_scale": 0.25,
        "ext_factor": 1.0,
        "attn_factor": "llama",
        "n_ctx_orig": 32768,
        "beta_fast": 32.0,
        "beta_slow": 1.0,
        "note": "YaRN (Qwen2.5 style: base 1e6, factor 4, original context 32768), attn_factor as llama.cpp sets it",
    },
    {"name": "linear_scale0.5", "n_dims": 128, "freq_base": 10000.0, "freq_scale": 0.5, "note": "linear scaling"},
]


def rope_params(case: dict[str, Any]) -> dict[str, Any]:
    """The full ``ggml_rope_ext`` parameter set of a case, ggml's defaults filled in, as float32-exact values."""
    freq_scale = float(np.float32(case.get("freq_scale", 1.0)))
    attn = case.get("attn_factor", 1.0)
    attn = float(llama_yarn_attn_factor(freq_scale)) if attn == "llama" else float(np.float32(attn))
    return {
        "n_dims": int(case["n_dims"]),
        "freq_base": float(np.float32(case["freq_base"])),
        "freq_scale": freq_scale,
        "ext_factor": float(np.float32(case.get("ext_factor", 0.0))),
        "attn_factor": attn,
        "beta_fast": float(np.float32(case.get("beta_fast", 32.0))),
        "beta_slow": float(np.float32(case.get("beta_slow", 1.0))),
        "n_ctx_orig": int(case.get("n_ctx_orig", 0)),
    }


def ggml_rope(params: dict[str, Any], mode: int, positions: np.ndarray, freq_factors: np.ndarray | None) -> np.ndarray:
    """``ggml_rope_ext`` of the (1, 0)-pair input on ggml's CPU backend: the raw output, shape (n_pos, n_dims)."""
    import ggml  # noqa: PLC0415 - only in the throwaway venv
    import ggml.utils  # noqa: PLC0415

    n_dims, n_pos = params["n_dims"], len(positions)
    x = np.zeros((n_pos, 1, n_dims), np.float32)
    if mode == GGML_ROPE_TYPE_NORMAL:
        x[:, :, 0::2] = 1.0
    else:
        x[:, :, : n_dims // 2] = 1.0
    init = ggml.ggml_init_params(mem_size=64 * 1024 * 1024, mem_buffer=None, no_alloc=False)
    ctx = ggml.ggml_init(init)
    try:
        a = ggml.utils.from_numpy(x, ctx)
        b = ggml.utils.from_numpy(positions.astype(np.int32), ctx)
        c = ggml.utils.from_numpy(freq_factors.astype(np.float32), ctx) if freq_factors is not None else None
        y = ggml.ggml_rope_ext(
            ctx,
            a,
            b,
            c,
            n_dims,
            mode,
            params["n_ctx_orig"],
            params["freq_base"],
            params["freq_scale"],
            params["ext_factor"],
            params["attn_factor"],
            params["beta_fast"],
            params["beta_slow"],
        )
        graph = ggml.ggml_new_graph(ctx)
        ggml.ggml_build_forward_expand(graph, y)
        ggml.ggml_graph_compute_with_ctx(ctx, graph, 1)
        out = np.array(ggml.utils.to_numpy(y), np.float32, copy=True)
    finally:
        ggml.ggml_free(ctx)
    return out.reshape(n_pos, n_dims)


def split_pairs(out: np.ndarray, mode: int) -> tuple[np.ndarray, np.ndarray]:
    """(cos, sin) of shape (n_pos, n_dims/2) from the raw output: pair i is (2i, 2i+1) or (i, i + n_dims/2)."""
    half = out.shape[1] // 2
    if mode == GGML_ROPE_TYPE_NORMAL:
        return out[:, 0::2].copy(), out[:, 1::2].copy()
    return out[:, :half].copy(), out[:, half:].copy()


def npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    """A .npz archive with fixed member timestamps and deflate level (sorted member names)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=ZIP_LEVEL) as zf:
        for name in sorted(arrays):
            member = io.BytesIO()
            np.lib.format.write_array(member, np.ascontiguousarray(arrays[name]), allow_pickle=False)
            info = zipfile.ZipInfo(name + ".npy", date_time=ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, member.getvalue(), compresslevel=ZIP_LEVEL)
    return buf.getvalue()


def glibc_version() -> str:
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    libc.gnu_get_libc_version.restype = ctypes.c_char_p
    return libc.gnu_get_libc_version().decode()


def cpu_flags() -> list[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return []
    for line in text.splitlines():
        if line.startswith("flags"):
            have = set(line.split(":", 1)[1].split())
            return sorted(have & {"fma", "avx", "avx2", "avx512f", "f16c", "sse4_2"})
    return []


def build() -> tuple[dict[str, bytes], dict[str, Any]]:
    files: dict[str, bytes] = {}
    goldens = []
    for case in CASES:
        params = rope_params(case)
        ff = None
        if "freq_factors" in case:
            spec = case["freq_factors"]
            ff = llama3_rope_factors(
                params["freq_base"],
                params["n_dims"],
                spec["factor"],
                spec["low_freq_factor"],
                spec["high_freq_factor"],
                spec["old_context_len"],
            )
        for mode_name, mode in MODES.items():
            out = ggml_rope(params, mode, POSITIONS, ff)
            cos, sin = split_pairs(out, mode)
            arrays = {"positions": POSITIONS, "cos": cos, "sin": sin}
            if ff is not None:
                arrays["freq_factors"] = ff
            name = f"{case['name']}_{mode_name}.npz"
            data = npz_bytes(arrays)
            files[name] = data
            goldens.append(
                {
                    "file": name,
                    "sha256": hashlib.sha256(data).hexdigest(),
                    "mode": mode_name,
                    "ggml_mode": mode,
                    "params": params,
                    "attn_factor_bits": f"0x{np.float32(params['attn_factor']).view(np.uint32):08x}",
                    "freq_factors": case.get("freq_factors"),
                    "note": case["note"],
                    "arrays": {k: [str(v.dtype), list(v.shape)] for k, v in sorted(arrays.items())},
                }
            )
    manifest = {
        "format_version": 1,
        "generator": GENERATOR,
        "description": "cos/sin caches of ggml's CPU ggml_rope_ext, read out of its output for (1, 0) input pairs; "
        "cos[p, i] and sin[p, i] are pair i (theta_i) at positions[p], float32, identical layout for both modes",
        "positions": "0..63, 8176..8207, 99984..100015 (int32)",
        "environment": {
            "ggml_python": importlib.metadata.version("ggml-python"),
            "ggml": "0.15.3 (bundled in ggml-python's sdist, vendor/ggml)",
            "build": "pip install builds the bundled ggml: CMake Release, CPU backend, -O3 -march=native (GGML_NATIVE)",
            "numpy": np.__version__,
            "python": platform.python_version(),
            "glibc": glibc_version(),
            "machine": platform.machine(),
            "cpu_flags": cpu_flags(),
            "zlib": zlib.ZLIB_VERSION,
        },
        "goldens": goldens,
    }
    files["manifest.json"] = (json.dumps(manifest, indent=1, sort_keys=True) + "\n").encode()
    return files, manifest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="recompute and compare with the files on disk")
    args = parser.parse_args(argv)
    files, manifest = build()
    if args.check:
        bad = [n for n, data in files.items() if not (HERE / n).exists() or (HERE / n).read_bytes() != data]
        for n in bad:
            sys.stderr.write(f"differs: {n}\n")
        return 1 if bad else 0
    for name, data in files.items():
        (HERE / name).write_bytes(data)
        sys.stdout.write(f"wrote {name} ({len(data)} bytes)\n")
    sys.stdout.write(json.dumps(manifest["environment"], sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
