#!/usr/bin/env python3
"""Make the relative-position golden tables in this directory by running the real framework functions.

This script is NOT part of posenc and is never imported by the test suite: it runs in a throwaway virtual
environment with torch 2.13.0 (CPU), transformers, timm, safetensors and numpy installed, and writes small
``<name>.npz`` files, three ``.safetensors`` checkpoints of seeded random bias tables and one ``manifest.json``
that the suite reads without any of those libraries. See README.md beside this file for the exact commands.

It contains no framework code: every index, bias, coordinate table and embedding is what the installed function or
module returns (HF transformers' T5Attention, DeBERTa-v2's build_relative_position / make_log_bucket_position,
XLNet's relative_positional_encoding, MPT's build_mpt_alibi_tensor; timm's Swin, BEiT and SwinV2 window
attention). The only arithmetic done here is in the ``reference_check`` records: each golden is compared with the
exact value of the documented formula (Python integers and mpmath at 50 digits), so the manifest says where the
framework's float32 evaluation departs from the exact value. The suite does not need those records.

Nothing here depends on the clock; the .npz members carry a fixed zip timestamp and are deflated with a fixed
level, so a re-run with the same library versions gives byte-identical files. ``--check`` recomputes everything
and compares it with the files on disk without writing anything.
"""

from __future__ import annotations

import argparse
import functools
import glob
import hashlib
import importlib.util
import io
import json
import math
import os
import platform
import sys
import tempfile
import warnings
import zipfile
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "manifest.json"
GENERATOR = "tests/goldens/relative/make_relative_goldens.py"
ZIP_DATE = (1980, 1, 1, 0, 0, 0)  # fixed zip member time: byte-identical re-runs
ZIP_LEVEL = 9  # fixed deflate level (the bytes also depend on zlib's version, recorded in the manifest)
ARRAY_DTYPES = (np.int64, np.float32, np.float64)

# posenc's relative-position parameters (the `posenc relative` options) and window parameters
T5_DEFAULTS = {"buckets": 32, "max_distance": 128}

CONVENTIONS = {
    "params": (
        "params are posenc's terms. relative kinds: scheme (t5 | deberta), query_length Q, key_length K, offset O "
        "(query i sits at position O + i, key j at position j), buckets, max_distance, causal (t5 only: the "
        "decoder's unidirectional buckets; causal = HF is_decoder = bidirectional False). deberta without buckets "
        "has buckets = max_distance = null. window kinds: scheme (swin | beit | swinv2), window [H, W], "
        "pretrained_window [H, W] (swinv2; [0, 0] = none), heads (bias goldens). 1-D sweeps add r_start, r_stop "
        "(inclusive) and count: bucket[i] is the bucket of relative position r = r_start + i"
    ),
    "relative_position": (
        "t5: r = k - q (compute_bias's memory_position - context_position); deberta: r = q - k "
        "(build_relative_position's q_ids[:, None] - k_ids[None, :]). The sweeps are over r in that sign"
    ),
    "arrays": (
        "index (Q, K) or (N, N) int64 as the framework returns it; bias (heads, Q, K) / (heads, N, N) float32 (the "
        "bias the attention adds, batch axis squeezed); coords (2H-1, 2W-1, 2) float32; pos_emb (rows, d) float32 "
        "with positions float64; slopes (heads,) float32; bucket (count,) 1-D sweeps in the dtype the function "
        "returns (t5 int64; deberta's make_log_bucket_position returns float32 holding integers)"
    ),
    "files": (
        "each .npz is a zip of .npy members (ZIP_DEFLATED, fixed timestamps), load with np.load(path, "
        "allow_pickle=False); every golden lists its file's sha256. The .safetensors files are the checkpoints "
        "the bias goldens were gathered from (see `checkpoints`)"
    ),
    "agreement": (
        "integer goldens (index, bucket): equal element for element. bias goldens: gathers of stored table "
        "values, so equal bit for bit to table[index] of the checkpoint. coords, pos_emb, slopes: float32 "
        "computed by the framework in float32; compare posenc's correctly rounded values within the float32 error "
        "recorded in each golden's reference_check"
    ),
}


# --------------------------------------------------------------------------------------------------------------
# Output: deterministic .npz, canonical JSON
# --------------------------------------------------------------------------------------------------------------


def npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    """The bytes of an .npz holding ``arrays`` (np.savez_compressed's layout, fixed member timestamps)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=ZIP_LEVEL) as zf:
        for name in sorted(arrays):
            arr = np.ascontiguousarray(arrays[name])
            if arr.dtype not in ARRAY_DTYPES:
                raise TypeError(f"golden array {name!r} must be int64, float32 or float64, got {arr.dtype}")
            member = io.BytesIO()
            np.lib.format.write_array(member, arr, allow_pickle=False)
            info = zipfile.ZipInfo(name + ".npy", date_time=ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, member.getvalue(), compresslevel=ZIP_LEVEL)
    return buf.getvalue()


def canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, indent=2, allow_nan=False) + "\n"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Collector:
    """Collects goldens, checkpoints and skips."""

    def __init__(self) -> None:
        self.goldens: dict[str, dict[str, Any]] = {}
        self.files: dict[str, bytes] = {}  # file name -> bytes (npz and safetensors)
        self.checkpoints: dict[str, dict[str, Any]] = {}
        self.not_made: dict[str, dict[str, Any]] = {}

    def add(
        self,
        name: str,
        arrays: dict[str, np.ndarray],
        *,
        group: str,
        framework: str,
        function: str,
        call: str,
        params: dict[str, Any],
        array_notes: dict[str, str],
        notes: Sequence[str] = (),
        reference_check: dict[str, Any] | None = None,
        checkpoint: dict[str, Any] | None = None,
    ) -> None:
        if name in self.goldens:
            raise ValueError(f"duplicate golden {name}")
        arrays = {k: np.asarray(v) for k, v in arrays.items()}
        missing = set(arrays) ^ set(array_notes)
        if missing:
            raise ValueError(f"{name}: array notes do not match arrays: {sorted(missing)}")
        data = npz_bytes(arrays)
        file = f"{name}.npz"
        entry: dict[str, Any] = {
            "name": name,
            "file": file,
            "sha256": sha256(data),
            "group": group,
            "framework": framework,
            "function": function,
            "call": call,
            "params": params,
            "arrays": {
                k: {"dtype": str(v.dtype), "shape": list(v.shape), "meaning": array_notes[k]} for k, v in arrays.items()
            },
            "notes": list(notes),
        }
        if reference_check is not None:
            entry["reference_check"] = reference_check
        if checkpoint is not None:
            entry["checkpoint"] = checkpoint
        self.goldens[name] = entry
        self.files[file] = data

    def add_checkpoint(self, file: str, data: bytes, description: dict[str, Any]) -> None:
        self.files[file] = data
        self.checkpoints[file] = {"file": file, "sha256": sha256(data), **description}

    def skip(self, name: str, reason: str, **extra: Any) -> None:
        self.not_made[name] = {"reason": reason, **extra}


def t2np(t: Any) -> np.ndarray:
    return t.detach().cpu().numpy().copy()


# --------------------------------------------------------------------------------------------------------------
# Environment: torchvision (pulled in by timm) must import beside the CPU torch
# --------------------------------------------------------------------------------------------------------------

_TORCHVISION_SHIM: Any = None  # keeps the schema library alive for the whole run


def prepare_torchvision() -> str:
    """Make ``import torchvision`` work when its compiled ops cannot load; return what was done.

    timm requires torchvision (timm.layers imports torchvision.ops.misc.FrozenBatchNorm2d at import time) and
    transformers imports it too once it is installed. The torchvision wheel that pip pairs with torch 2.13.0 is a
    CUDA build: its _C.so needs libc10_cuda.so, which the CPU torch does not ship, so its ops do not load, and then
    ``import torchvision`` itself fails (``_meta_registrations`` calls ``torch.library.register_fake`` for
    ``torchvision::nms`` and ``torchvision::qnms`` whether or not the ops exist: "operator torchvision::nms does not
    exist"). Declaring those two schemas (no kernels) lets the real torchvision Python package import; nothing here
    uses a torchvision op.
    """
    global _TORCHVISION_SHIM
    import torch

    spec = importlib.util.find_spec("torchvision")
    if spec is None or not spec.submodule_search_locations:
        return "not installed"
    libs = sorted(glob.glob(os.path.join(list(spec.submodule_search_locations)[0], "_C*.so")))
    reason = "no _C library"
    if libs:
        try:
            torch.ops.load_library(libs[0])
        except OSError as exc:
            cause = exc.__cause__ if exc.__cause__ is not None else exc
            reason = str(cause).split(":")[0] + ": cannot open shared object file" if ".so" in str(cause) else "error"
        else:
            return "compiled ops loaded"
    lib = torch.library.Library("torchvision", "DEF")
    lib.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    lib.define("qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    _TORCHVISION_SHIM = lib
    return (
        f"compiled ops not loadable ({reason}); the schemas torchvision::nms and torchvision::qnms were declared "
        "(no kernels) so that the torchvision Python package imports"
    )


def versions(torchvision_status: str) -> dict[str, Any]:
    import mpmath
    import safetensors
    import timm
    import torch
    import transformers

    try:
        import torchvision

        tv = torchvision.__version__
    except Exception:  # noqa: BLE001
        tv = "not importable"
    return {
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
        "machine": platform.machine(),
        "numpy": np.__version__,
        "torch": torch.__version__,
        "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "torch_num_threads": torch.get_num_threads(),
        "transformers": transformers.__version__,
        "timm": timm.__version__,
        "safetensors": safetensors.__version__,
        "torchvision": tv,
        "torchvision_status": torchvision_status,
        "mpmath": mpmath.__version__,
        "zlib": zlib.ZLIB_VERSION,
    }


# --------------------------------------------------------------------------------------------------------------
# Exact references (for the reference_check records only)
# --------------------------------------------------------------------------------------------------------------


def mp() -> Any:
    import mpmath

    mpmath.mp.dps = 50
    return mpmath


TIE = 1e-35  # |v - round(v)| below this is decided by an exact integer comparison


@functools.cache
def exact_t5_bucket(a: int, n: int, d: int) -> tuple[int, dict[str, Any]]:
    """Exact bucket of distance a >= 0 among n buckets (already halved when bidirectional); info on the log value."""
    e = n // 2
    if a < e:
        return a, {}
    m = mp()
    v = m.mpf(n - e) * m.log(m.mpf(a) / e) / m.log(m.mpf(d) / e)
    s = int(m.nint(v))
    tie = abs(v - s) < TIE
    if tie:
        # floor(v) >= s  <=>  a**(n-e) * e**s >= d**s * e**(n-e)   (d > e)
        fl = s if a ** (n - e) * e**s >= d**s * e ** (n - e) else s - 1
    else:
        fl = int(m.floor(v))
    # a floor off by one near s matters only if e + s - 1 is below the cap n - 1
    return min(e + fl, n - 1), {"v": v, "tie": tie, "margin": abs(v - s), "matters": e + s - 1 < n - 1}


@functools.cache
def exact_deberta_bucket(r: int, bucket_size: int, max_position: int) -> tuple[int, dict[str, Any]]:
    """Exact make_log_bucket_position of r (q - k)."""
    mid = bucket_size // 2
    a = abs(r)
    if a <= mid:
        return r, {}
    m = mp()
    p = max_position - 1
    v = m.mpf(mid - 1) * m.log(m.mpf(a) / mid) / m.log(m.mpf(p) / mid)
    c = int(m.nint(v))
    tie = abs(v - c) < TIE
    if tie:
        # ceil(v) <= c  <=>  a**(mid-1) * mid**c <= p**c * mid**(mid-1)
        ce = c if a ** (mid - 1) * mid**c <= p**c * mid ** (mid - 1) else c + 1
    else:
        ce = int(m.ceil(v))
    sign = 1 if r > 0 else -1
    return sign * (mid + ce), {"v": v, "tie": tie, "margin": abs(v - c), "matters": True}


def check_integer(
    golden: np.ndarray, r: np.ndarray, exact: Callable[[int], tuple[int, dict[str, Any]]]
) -> dict[str, Any]:
    """Compare an integer golden with the exact bucket of each relative position r (same shape)."""
    g = np.asarray(golden).reshape(-1)
    rr = np.asarray(r).reshape(-1)
    cache: dict[int, tuple[int, dict[str, Any]]] = {}
    for v in np.unique(rr).tolist():
        cache[int(v)] = exact(int(v))
    ref = np.array([cache[int(v)][0] for v in rr.tolist()], dtype=np.int64)
    bad = np.nonzero(g.astype(np.int64) != ref)[0]
    mismatches = []
    for i in bad[:20].tolist():
        mismatches.append({"r": int(rr[i]), "framework": int(g[i]), "exact": int(ref[i])})
    # log-branch values whose rounding could change the bucket (T5: not hidden by the num_buckets - 1 cap)
    logs = {r_: info for r_, (_, info) in cache.items() if info and info["matters"]}
    out: dict[str, Any] = {
        "elements": int(g.size),
        "mismatch_vs_exact": int(bad.size),
        "mismatches": mismatches,
    }
    if logs:
        ties = sorted({abs(r_) for r_, info in logs.items() if info["tie"]})
        # nearest miss relative to the value's size (float32 errors scale with it)
        non_ties = [
            (float(info["margin"] / max(abs(info["v"]), 1)), abs(r_), info)
            for r_, info in logs.items()
            if not info["tie"]
        ]
        out["exact_integer_log_values_at_distance"] = ties
        if non_ties:
            rel_gap, at, info = min(non_ties, key=lambda t: (t[0], t[1]))
            out["closest_non_integer_log_value"] = {
                "distance": int(at),
                "abs_gap_to_integer": float(info["margin"]),
                "relative_gap": rel_gap,
                "log_value": float(info["v"]),
            }
    return out


def f32_round(x: Any) -> np.float32:
    """The float32 nearest to the mpmath number x (ties to even), without double-rounding error."""
    m = mp()
    c = np.float32(float(x))
    best = c
    best_err = abs(m.mpf(float(c)) - x)
    for cand in (np.nextafter(c, np.float32(np.inf)), np.nextafter(c, np.float32(-np.inf))):
        err = abs(m.mpf(float(cand)) - x)
        if err < best_err or (err == best_err and int(cand.view(np.uint32)) % 2 == 0):
            best, best_err = cand, err
    return np.float32(best)


def ulp_diff(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|a - b| in float32 ulps (as an integer distance between the two bit patterns; same sign assumed)."""
    ai = np.asarray(a, np.float32).view(np.int32).astype(np.int64)
    bi = np.asarray(b, np.float32).view(np.int32).astype(np.int64)
    ai = np.where(ai < 0, -(ai & 0x7FFFFFFF), ai)
    bi = np.where(bi < 0, -(bi & 0x7FFFFFFF), bi)
    return np.abs(ai - bi)


# --------------------------------------------------------------------------------------------------------------
# 1. T5
# --------------------------------------------------------------------------------------------------------------

T5_FN = "transformers.models.t5.modeling_t5.T5Attention"
T5_INDEX_CASES = [
    # (buckets, max_distance, causal, Q, K, offset)
    (32, 128, False, 40, 40, 0),
    (32, 128, False, 400, 400, 0),
    (32, 128, True, 40, 40, 0),
    (32, 128, True, 400, 400, 0),
    (32, 128, True, 4, 104, 100),
    (32, 128, False, 10, 37, 0),
    (32, 128, False, 37, 10, 0),
    (128, 128, False, 300, 300, 0),
    (128, 128, True, 300, 300, 0),
    (64, 256, False, 300, 300, 0),
    (64, 256, True, 300, 300, 0),
    (16, 64, False, 100, 100, 0),
    (16, 64, True, 100, 100, 0),
    (8, 20, False, 50, 50, 0),
    (8, 20, True, 50, 50, 0),
    (256, 1024, False, 300, 300, 0),
    (256, 1024, True, 300, 300, 0),
]
T5_SWEEP_BUCKETS = (8, 16, 32, 64, 128, 256)
T5_SWEEP_DISTANCES = (16, 32, 64, 128, 256, 512, 1024, 2048)


def t5_name(b: int, md: int, causal: bool, q: int, k: int, o: int) -> str:
    return f"t5_{'causal' if causal else 'bi'}_b{b}_md{md}_q{q}_k{k}" + (f"_o{o}" if o else "")


def division_probe() -> dict[str, Any]:
    """How torch divides a float32 tensor by a Python float (observed, for the notes)."""
    import torch

    rng = np.random.default_rng(12345)
    a = (rng.standard_normal(200_000) * 100).astype(np.float32)
    b = math.log(128 / 8)
    t = t2np(torch.from_numpy(a) / b)
    return {
        "divisor": b,
        "elements": int(a.size),
        "differ_from_float32_divisor": int(np.count_nonzero(t != a / np.float32(b))),
        "differ_from_float64_division_rounded_once": int(
            np.count_nonzero(t != (a.astype(np.float64) / b).astype(np.float32))
        ),
    }


def make_t5(c: Collector) -> None:
    import torch
    from transformers import T5Config
    from transformers.models.t5.modeling_t5 import T5Attention

    probe = division_probe()
    if probe["differ_from_float32_divisor"] != 0:
        raise AssertionError(f"torch's tensor / python float is not a float32 division here: {probe}")
    arith = (
        "arithmetic (read from the source): relative_position.float() / max_exact (float32 / int: float32 "
        "division), torch.log (float32), / math.log(max_distance / max_exact) (a Python float64 scalar: torch "
        "rounds it to float32 first and divides in float32; observed on "
        f"{probe['elements']} random values: {probe['differ_from_float32_divisor']} differ from dividing by "
        f"np.float32(divisor), {probe['differ_from_float64_division_rounded_once']} differ from a float64 division "
        "rounded once), * (num_buckets - max_exact) (float32), .to(torch.long) (truncation toward zero; the value "
        "is >= 0 there), torch.min(..., num_buckets - 1)"
    )

    def attention(b: int, md: int, causal: bool, heads: int = 1) -> Any:
        cfg = T5Config(
            vocab_size=8,
            d_model=8,
            d_kv=2,
            d_ff=8,
            num_heads=heads,
            num_layers=1,
            relative_attention_num_buckets=b,
            relative_attention_max_distance=md,
            is_decoder=causal,
        )
        return T5Attention(cfg, has_relative_attention_bias=True, layer_idx=0).eval()

    # ---- index matrices
    for b, md, causal, q, k, o in T5_INDEX_CASES:
        attn = attention(b, md, causal)
        with torch.no_grad():
            attn.relative_attention_bias.weight.copy_(torch.arange(b, dtype=torch.float32)[:, None])
            values = attn.compute_bias(q, k, past_seen_tokens=o)  # (1, 1, Q, K): the bucket ids as float32
        if values.shape != (1, 1, q, k) or values.dtype != torch.float32:
            raise AssertionError(f"compute_bias returned {values.shape} {values.dtype}")
        index = values[0, 0].to(torch.int64)
        if not torch.equal(index.to(torch.float32), values[0, 0]):
            raise AssertionError("compute_bias values are not integral")
        # the same through _relative_position_bucket on compute_bias's relative-position matrix
        context = torch.arange(q, dtype=torch.long)[:, None] + o
        memory = torch.arange(k, dtype=torch.long)[None, :]
        rel = memory - context
        direct = T5Attention._relative_position_bucket(rel, bidirectional=not causal, num_buckets=b, max_distance=md)
        if direct.dtype != torch.int64 or not torch.equal(direct, index):
            raise AssertionError("compute_bias and _relative_position_bucket disagree")
        nb = b if causal else b // 2
        name = t5_name(b, md, causal, q, k, o)
        c.add(
            name,
            {"index": t2np(index)},
            group="t5",
            framework="transformers",
            function=f"{T5_FN}.compute_bias",
            call=(
                f"T5Attention(T5Config(relative_attention_num_buckets={b}, relative_attention_max_distance={md}, "
                f"num_heads=1, is_decoder={causal}), has_relative_attention_bias=True, layer_idx=0) with "
                f"relative_attention_bias.weight[:, 0] = arange({b}); compute_bias({q}, {k}, past_seen_tokens={o})"
                "[0, 0].to(torch.int64)"
            ),
            params={
                "scheme": "t5",
                "query_length": q,
                "key_length": k,
                "offset": o,
                "buckets": b,
                "max_distance": md,
                "causal": causal,
            },
            array_notes={
                "index": f"index[i, j] = bucket of r = j - ({o} + i) as compute_bias gathers it, int64 "
                f"(values 0..{b - 1})"
            },
            notes=[
                "made through compute_bias itself: a one-head T5Attention whose relative_attention_bias weight "
                "holds the bucket ids (weight[bucket, 0] = bucket, exact in float32), so the bias it returns is the "
                "bucket matrix; checked equal to T5Attention._relative_position_bucket(memory_position - "
                "context_position, bidirectional=not is_decoder, ...) on the matrix built as compute_bias builds it "
                "(context_position = arange(Q)[:, None] + past_seen_tokens, memory_position = arange(K)[None, :])",
                "this transformers version takes the query offset as compute_bias's past_seen_tokens argument "
                "(T5Attention.forward passes cache.get_seq_length(layer_idx)); there is no cache_position "
                "parameter. During cached decoding forward calls compute_bias(Q_new, K = past + Q_new, "
                "past_seen_tokens=past)",
                "bidirectional = not config.is_decoder: the encoder (and cross-attention) uses bidirectional "
                "buckets, the decoder's self-attention causal ones",
                arith,
            ],
            reference_check=check_integer(
                t2np(index), t2np(rel), lambda r, nb=nb, md=md, causal=causal: t5_exact(r, nb, md, causal)
            ),
        )

    # ---- 1-D sweeps of _relative_position_bucket
    skipped = []
    for causal in (False, True):
        for b in T5_SWEEP_BUCKETS:
            for md in T5_SWEEP_DISTANCES:
                nb = b if causal else b // 2
                e = nb // 2
                if md <= e:
                    skipped.append({"buckets": b, "max_distance": md, "causal": causal, "max_exact": e})
                    continue
                r_start, r_stop = -4 * md, 4 * md
                r = torch.arange(r_start, r_stop + 1, dtype=torch.long)
                bucket = T5Attention._relative_position_bucket(
                    r, bidirectional=not causal, num_buckets=b, max_distance=md
                )
                if bucket.dtype != torch.int64:
                    raise AssertionError(bucket.dtype)
                name = f"t5_sweep_{'causal' if causal else 'bi'}_b{b}_md{md}"
                c.add(
                    name,
                    {"bucket": t2np(bucket)},
                    group="t5_sweep",
                    framework="transformers",
                    function=f"{T5_FN}._relative_position_bucket",
                    call=(
                        f"T5Attention._relative_position_bucket(torch.arange({r_start}, {r_stop + 1}), "
                        f"bidirectional={not causal}, num_buckets={b}, max_distance={md})"
                    ),
                    params={
                        "scheme": "t5",
                        "buckets": b,
                        "max_distance": md,
                        "causal": causal,
                        "r_start": r_start,
                        "r_stop": r_stop,
                        "count": r_stop - r_start + 1,
                    },
                    array_notes={
                        "bucket": f"bucket[i] = _relative_position_bucket(r) for r = {r_start} + i (r = k - q), int64"
                    },
                    notes=[
                        f"max_exact = {e} ({'num_buckets // 2, causal' if causal else 'num_buckets // 4'}); "
                        f"{'r > 0 (keys after the query) all map to bucket 0' if causal else 'r > 0 adds ' + str(nb)}",
                        arith,
                    ],
                    reference_check=check_integer(
                        t2np(bucket), t2np(r), lambda rr, nb=nb, md=md, causal=causal: t5_exact(rr, nb, md, causal)
                    ),
                )
    c.skip(
        "t5_sweeps_without_log_branch",
        "settings whose max_distance <= max_exact (bidirectional: buckets // 4; causal: buckets // 2) are not swept: "
        "there the log branch divides by math.log(max_distance / max_exact) <= 0. Below max_exact the divisor is "
        "negative and the 'log' buckets fall below max_exact (not monotonic in the distance); at equality it is a "
        "division by zero whose +inf / NaN is cast to int64 (an undefined value). No model uses them and posenc "
        "refuses them (check_t5: max_distance must exceed max_exact)",
        settings=skipped,
    )

    # ---- bias gathers from a real-layout checkpoint
    make_t5_bias(c)


def t5_exact(r: int, nb: int, md: int, causal: bool) -> tuple[int, dict[str, Any]]:
    if causal:
        return exact_t5_bucket(max(-r, 0), nb, md)
    bucket, info = exact_t5_bucket(abs(r), nb, md)
    return (nb if r > 0 else 0) + bucket, info


T5_ENC_KEY = "encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight"
T5_DEC_KEY = "decoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight"
SEEDS = {"t5_encoder": 5, "t5_decoder": 6, "t5_bf16": 7, "swin_7x7": 11, "swin_4x6": 12, "beit_7x7": 13, "beit_4x6": 14}
RNG_CALL = "numpy.random.default_rng(seed).standard_normal(shape, dtype=numpy.float32)"


def seeded(seed: int, shape: tuple[int, ...]) -> Any:
    import torch

    return torch.from_numpy(np.random.default_rng(seed).standard_normal(shape, dtype=np.float32))


def save_checkpoint(c: Collector, file: str, tensors: dict[str, Any], description: dict[str, Any], write: bool) -> Any:
    """Serialise with safetensors (save_file when writing), record it and return the tensors loaded back."""
    from safetensors.torch import load, load_file, save, save_file

    metadata = {"format": "pt"}
    data = save(tensors, metadata=metadata)
    path = HERE / file
    if write:
        save_file(tensors, str(path), metadata=metadata)
        on_disk = path.read_bytes()
        if on_disk != data:
            raise AssertionError(f"{file}: save_file and save wrote different bytes")
        loaded = load_file(str(path))
    else:
        loaded = load(data)
    keys = {
        k: {"dtype": str(v.dtype).replace("torch.", ""), "shape": list(v.shape)} for k, v in sorted(tensors.items())
    }
    c.add_checkpoint(
        file,
        data,
        {
            "framework": "safetensors",
            "function": "safetensors.torch.save_file",
            "call": f"save_file(tensors, {file!r}, metadata={metadata!r})",
            "metadata": metadata,
            "keys": keys,
            "random": RNG_CALL,
            **description,
        },
    )
    return loaded


def make_t5_bias(c: Collector) -> None:
    import torch
    from transformers import T5Config, T5Model

    b, md, heads = 32, 128, 8
    enc = seeded(SEEDS["t5_encoder"], (b, heads))
    dec = seeded(SEEDS["t5_decoder"], (b, heads))
    bf = seeded(SEEDS["t5_bf16"], (b, heads)).to(torch.bfloat16)
    write = not CHECK_MODE
    f32_file, bf_file = "t5_bias.safetensors", "t5_bias_bf16.safetensors"
    loaded = save_checkpoint(
        c,
        f32_file,
        {T5_ENC_KEY: enc, T5_DEC_KEY: dec},
        {
            "seeds": {T5_ENC_KEY: SEEDS["t5_encoder"], T5_DEC_KEY: SEEDS["t5_decoder"]},
            "meaning": "T5's relative_attention_bias.weight (buckets=32, heads=8) under a real T5 checkpoint's keys "
            "(the first block of the encoder and of the decoder own the bias); seeded standard-normal float32",
        },
        write,
    )
    loaded_bf = save_checkpoint(
        c,
        bf_file,
        {T5_ENC_KEY: bf},
        {
            "seeds": {T5_ENC_KEY: SEEDS["t5_bf16"]},
            "meaning": "a bfloat16 relative_attention_bias.weight (buckets=32, heads=8) under the encoder key: the "
            "seeded float32 standard-normal values rounded to bfloat16 by torch's .to(torch.bfloat16) (nearest even)",
        },
        write,
    )
    cfg = T5Config(
        vocab_size=8,
        d_model=16,
        d_kv=2,
        d_ff=8,
        num_layers=1,
        num_decoder_layers=1,
        num_heads=heads,
        relative_attention_num_buckets=b,
        relative_attention_max_distance=md,
    )
    torch.manual_seed(0)
    model = T5Model(cfg).eval()
    result = model.load_state_dict(loaded, strict=False)
    if result.unexpected_keys or T5_ENC_KEY in result.missing_keys or T5_DEC_KEY in result.missing_keys:
        raise AssertionError(f"checkpoint did not load: {result}")
    model_bf = T5Model(cfg).to(torch.bfloat16).eval()
    result = model_bf.load_state_dict(loaded_bf, strict=False)
    if result.unexpected_keys or T5_ENC_KEY in result.missing_keys:
        raise AssertionError(f"bf16 checkpoint did not load: {result}")

    enc_attn = model.encoder.block[0].layer[0].SelfAttention
    dec_attn = model.decoder.block[0].layer[0].SelfAttention
    cases = [
        ("t5_bias_encoder_q20_k20", model, enc_attn, f32_file, T5_ENC_KEY, False, 20, 20, 0, False),
        ("t5_bias_decoder_q20_k20", model, dec_attn, f32_file, T5_DEC_KEY, True, 20, 20, 0, False),
        ("t5_bias_decoder_q3_k53_o50", model, dec_attn, f32_file, T5_DEC_KEY, True, 3, 53, 50, False),
        (
            "t5_bias_bf16_encoder_q20_k20",
            model_bf,
            model_bf.encoder.block[0].layer[0].SelfAttention,
            bf_file,
            T5_ENC_KEY,
            False,
            20,
            20,
            0,
            True,
        ),
    ]
    for name, _model, attn, file, key, causal, q, k, o, is_bf in cases:
        if attn.is_decoder != causal or not attn.has_relative_attention_bias:
            raise AssertionError(f"{name}: unexpected module {attn.is_decoder} {attn.has_relative_attention_bias}")
        with torch.no_grad():
            out = attn.compute_bias(q, k, past_seen_tokens=o)
        expected_dtype = torch.bfloat16 if is_bf else torch.float32
        if out.dtype != expected_dtype or out.shape != (1, heads, q, k):
            raise AssertionError(f"{name}: compute_bias returned {out.dtype} {tuple(out.shape)}")
        bias = t2np(out[0].to(torch.float32))
        # the gather is exact: every value is an entry of the table in its bucket's row
        ref_index = exact_t5_index(q, k, o, causal, b, md)
        table = t2np((loaded_bf if is_bf else loaded)[key].to(torch.float32))
        gathered = table[ref_index].transpose(2, 0, 1)
        part = "model.encoder" if not causal else "model.decoder"
        c.add(
            name,
            {"bias": bias},
            group="t5_bias",
            framework="transformers",
            function=f"{T5_FN}.compute_bias",
            call=(
                f"T5Model(T5Config(num_heads={heads}, relative_attention_num_buckets={b}, "
                f"relative_attention_max_distance={md}, d_model=16, d_kv=2, num_layers=1))"
                + (".to(torch.bfloat16)" if is_bf else "")
                + f".load_state_dict(safetensors.torch.load_file({file!r}), strict=False); "
                f"{part}.block[0].layer[0].SelfAttention.compute_bias({q}, {k}, past_seen_tokens={o})[0]"
                + (".to(torch.float32)" if is_bf else "")
            ),
            params={
                "scheme": "t5",
                "query_length": q,
                "key_length": k,
                "offset": o,
                "buckets": b,
                "max_distance": md,
                "causal": causal,
                "heads": heads,
                "bias_file": file,
                "bias_key": key,
            },
            array_notes={
                "bias": (
                    "bias[h, i, j] = weight[index[i, j], h] (heads, Q, K) float32: compute_bias's (1, H, Q, K) "
                    "output with the batch axis squeezed"
                    + (
                        "; the module and table are bfloat16, compute_bias returns bfloat16 and it is widened to "
                        "float32 here (exact)"
                        if is_bf
                        else ""
                    )
                )
            },
            notes=[
                "the weight is loaded from the .safetensors checkpoint beside this file into a real T5Model "
                f"({'decoder: is_decoder=True, causal buckets' if causal else 'encoder: bidirectional buckets'})",
                "compute_bias gathers with nn.Embedding (an exact lookup) and permutes to (1, heads, Q, K); "
                "observed equal to the checkpoint table gathered at the exact bucket matrix: "
                f"{bool(np.array_equal(gathered, bias))}",
            ],
            checkpoint={"file": file, "key": key},
        )


def exact_t5_index(q: int, k: int, o: int, causal: bool, b: int, md: int) -> np.ndarray:
    """The exact bucket matrix (for the gather cross-check only)."""
    nb = b if causal else b // 2
    out = np.zeros((q, k), np.int64)
    for i in range(q):
        for j in range(k):
            out[i, j] = t5_exact(j - (o + i), nb, md, causal)[0]
    return out


# --------------------------------------------------------------------------------------------------------------
# 2. DeBERTa-v2
# --------------------------------------------------------------------------------------------------------------

DEB_MOD = "transformers.models.deberta_v2.modeling_deberta_v2"
DEB_INDEX_CASES = [
    # (bucket_size or None, max_position or None, Q, K)
    (None, None, 20, 20),
    (None, None, 7, 13),
    (256, 512, 600, 600),
    (128, 512, 300, 300),
    (64, 256, 300, 300),
    (256, 512, 50, 700),
]
DEB_SWEEPS = [(256, 512), (256, 1024), (128, 512), (64, 256), (32, 128), (16, 64)]
DEB_ARITH = (
    "arithmetic (read from the source): abs_pos = where(-mid < r < mid, mid - 1, |r|) (int64); abs_pos / mid "
    "(int64 / int: true division, float32); torch.log (float32); / torch.log(torch.tensor((max_position - 1) / "
    "mid)) (torch.tensor of a Python float is float32, so (max_position - 1) / mid is rounded to float32 before "
    "its float32 log; for every setting here mid is a power of two and the quotient is exact); * (mid - 1); "
    "torch.ceil; + mid (all float32); bucket = where(abs_pos <= mid, r.type_as(log_pos), log_pos * sign(r)): "
    "float32; build_relative_position then casts with .to(torch.long)"
)


def make_deberta(c: Collector) -> None:
    import torch
    from transformers.models.deberta_v2.modeling_deberta_v2 import build_relative_position, make_log_bucket_position

    for bs, mp_, q, k in DEB_INDEX_CASES:
        query = torch.zeros(1, q, 8)
        key = torch.zeros(1, k, 8)
        kw = {} if bs is None else {"bucket_size": bs, "max_position": mp_}
        out = build_relative_position(query, key, **kw)
        if out.dtype != torch.int64 or out.shape != (1, q, k):
            raise AssertionError(f"build_relative_position returned {out.dtype} {tuple(out.shape)}")
        index = t2np(out[0])
        rel = np.arange(q, dtype=np.int64)[:, None] - np.arange(k, dtype=np.int64)[None, :]
        name = f"deberta_nobuckets_q{q}_k{k}" if bs is None else f"deberta_b{bs}_md{mp_}_q{q}_k{k}"
        notes = [
            "r = q - k (query minus key: the opposite sign of T5's); queries and keys both start at position 0",
            "query_layer / key_layer only give the lengths (size(-2)); zeros of shape (1, Q, 8) and (1, K, 8)",
        ]
        if bs is None:
            notes.append("without bucket_size/max_position (the defaults -1) the index is r itself, unclipped")
            ref = check_integer(index, rel, lambda r: (r, {}))
        else:
            notes.append(
                "values past max_position keep growing (nothing is clipped here); the attention clips them later "
                "(c2p: clamp(relative_pos + att_span, 0, 2 * att_span - 1))"
            )
            notes.append(DEB_ARITH)
            ref = check_integer(index, rel, lambda r, bs=bs, mp_=mp_: exact_deberta_bucket(r, bs, mp_))
        c.add(
            name,
            {"index": index},
            group="deberta",
            framework="transformers",
            function=f"{DEB_MOD}.build_relative_position",
            call=(
                f"build_relative_position(torch.zeros(1, {q}, 8), torch.zeros(1, {k}, 8)"
                + ("" if bs is None else f", bucket_size={bs}, max_position={mp_}")
                + ")[0]"
            ),
            params={
                "scheme": "deberta",
                "query_length": q,
                "key_length": k,
                "offset": 0,
                "buckets": bs,
                "max_distance": mp_,
            },
            array_notes={
                "index": "index[i, j] = (log-bucketed) i - j, int64: build_relative_position's [1, Q, K] with the "
                "batch axis squeezed"
            },
            notes=notes,
            reference_check=ref,
        )

    lo, hi = -4000, 4000
    for bs, mp_ in DEB_SWEEPS:
        r = torch.arange(lo, hi + 1, dtype=torch.long)
        out = make_log_bucket_position(r, bs, mp_)
        if out.dtype != torch.float32:
            raise AssertionError(f"make_log_bucket_position returned {out.dtype}")
        bucket = t2np(out)
        if not np.array_equal(bucket, np.round(bucket)):
            raise AssertionError("non-integral DeBERTa bucket")
        c.add(
            f"deberta_sweep_b{bs}_md{mp_}",
            {"bucket": bucket},
            group="deberta_sweep",
            framework="transformers",
            function=f"{DEB_MOD}.make_log_bucket_position",
            call=f"make_log_bucket_position(torch.arange({lo}, {hi + 1}), bucket_size={bs}, max_position={mp_})",
            params={
                "scheme": "deberta",
                "buckets": bs,
                "max_distance": mp_,
                "r_start": lo,
                "r_stop": hi,
                "count": hi - lo + 1,
            },
            array_notes={
                "bucket": f"bucket[i] = make_log_bucket_position(r) for r = {lo} + i (r = q - k), float32 as the "
                "function returns it (every value an integer; build_relative_position casts it to int64)"
            },
            notes=[DEB_ARITH],
            reference_check=check_integer(
                bucket.astype(np.int64), t2np(r), lambda rr, bs=bs, mp_=mp_: exact_deberta_bucket(rr, bs, mp_)
            ),
        )


# --------------------------------------------------------------------------------------------------------------
# 3-5. timm window attention: Swin, BEiT, SwinV2
# --------------------------------------------------------------------------------------------------------------

SWIN_WINDOWS = [(7, 7), (12, 12), (8, 8), (4, 6), (6, 4), (1, 5), (2, 2)]
BEIT_WINDOWS = [(14, 14), (7, 7), (4, 6)]
BIAS_WINDOWS = [((7, 7), 4), ((4, 6), 3)]
SWINV2_CASES = [((8, 8), (0, 0)), ((16, 16), (8, 8)), ((12, 12), (12, 12)), ((8, 12), (0, 0)), ((6, 4), (4, 4))]


def window_exact_index(h: int, w: int, cls: bool) -> np.ndarray:
    """(for the cross-check record only) (i_h - j_h + H - 1) * (2W - 1) + (i_w - j_w + W - 1)."""
    ih, iw = np.divmod(np.arange(h * w), w)
    idx = (ih[:, None] - ih[None, :] + h - 1) * (2 * w - 1) + (iw[:, None] - iw[None, :] + w - 1)
    if not cls:
        return idx
    m = (2 * h - 1) * (2 * w - 1)
    out = np.zeros((h * w + 1,) * 2, np.int64)
    out[1:, 1:] = idx
    out[0, 1:] = m
    out[1:, 0] = m + 1
    out[0, 0] = m + 2
    return out


def make_swin(c: Collector) -> None:
    import torch
    from timm.models.swin_transformer import WindowAttention, get_relative_position_index

    for h, w in SWIN_WINDOWS:
        idx = get_relative_position_index(h, w)
        if idx.dtype != torch.int64 or idx.shape != (h * w, h * w):
            raise AssertionError(f"swin index {idx.dtype} {tuple(idx.shape)}")
        index = t2np(idx)
        c.add(
            f"swin_index_{h}x{w}",
            {"index": index},
            group="swin",
            framework="timm",
            function="timm.models.swin_transformer.get_relative_position_index",
            call=f"get_relative_position_index({h}, {w})",
            params={"scheme": "swin", "window": [h, w]},
            array_notes={
                "index": f"index[i, j] (HW, HW) = ({h}*{w} tokens, row-major: token = y * W + x) int64, the row of "
                f"relative_position_bias_table ((2H-1)(2W-1) = {(2 * h - 1) * (2 * w - 1)} rows) for query i and key j"
            },
            notes=[
                "coords via ndgrid (meshgrid indexing='ij'); relative = coords[:, :, None] - coords[:, None, :] "
                "(query minus key); index = (dy + H - 1) * (2W - 1) + (dx + W - 1)",
                "equal to (iy - jy + H - 1) * (2W - 1) + (ix - jx + W - 1): "
                f"{bool(np.array_equal(index, window_exact_index(h, w, False)))}",
            ],
        )

    tables = {}
    mods = {}
    for (h, w), heads in BIAS_WINDOWS:
        stage = 0 if (h, w) == (7, 7) else 1
        key = f"layers.{stage}.blocks.0.attn.relative_position_bias_table"
        tables[key] = seeded(SEEDS[f"swin_{h}x{w}"], ((2 * h - 1) * (2 * w - 1), heads))
        mods[key] = ((h, w), heads)
    loaded = save_checkpoint(
        c,
        "swin_bias.safetensors",
        tables,
        {
            "seeds": {k: SEEDS[f"swin_{v[0][0]}x{v[0][1]}"] for k, v in mods.items()},
            "meaning": "timm Swin relative_position_bias_table ((2H-1)(2W-1), heads) under timm SwinTransformer "
            "keys: layers.0 holds a 7x7-window table for 4 heads, layers.1 a 4x6-window table for 3 heads (a real "
            "Swin has one window size for all stages; two are stored to test non-square windows); seeded "
            "standard-normal float32",
        },
        not CHECK_MODE,
    )
    for key, ((h, w), heads) in mods.items():
        torch.manual_seed(0)
        attn = WindowAttention(dim=heads * 4, num_heads=heads, window_size=(h, w)).eval()
        prefix = key.rsplit(".", 1)[0] + "."
        result = attn.load_state_dict({k[len(prefix) :]: v for k, v in loaded.items() if k == key}, strict=False)
        if result.unexpected_keys or "relative_position_bias_table" in result.missing_keys:
            raise AssertionError(result)
        with torch.no_grad():
            out = attn._get_rel_pos_bias()
        if out.dtype != torch.float32 or out.shape != (1, heads, h * w, h * w):
            raise AssertionError(f"swin bias {out.dtype} {tuple(out.shape)}")
        bias = t2np(out[0])
        table = t2np(loaded[key])
        gathered = table[window_exact_index(h, w, False)].transpose(2, 0, 1)
        c.add(
            f"swin_bias_{h}x{w}_h{heads}",
            {"bias": bias},
            group="swin_bias",
            framework="timm",
            function="timm.models.swin_transformer.WindowAttention._get_rel_pos_bias",
            call=(
                f"WindowAttention(dim={heads * 4}, num_heads={heads}, window_size=({h}, {w})).load_state_dict("
                f"{{'relative_position_bias_table': load_file('swin_bias.safetensors')[{key!r}]}}, strict=False); "
                "_get_rel_pos_bias()[0]"
            ),
            params={
                "scheme": "swin",
                "window": [h, w],
                "heads": heads,
                "bias_file": "swin_bias.safetensors",
                "bias_key": key,
            },
            array_notes={
                "bias": "bias[h, i, j] = table[relative_position_index[i, j], h] (heads, HW, HW) float32, the "
                "(1, heads, HW, HW) tensor the attention adds with the batch axis squeezed"
            },
            notes=[
                "_get_rel_pos_bias: table[relative_position_index.view(-1)].view(N, N, -1).permute(2, 0, 1)."
                "contiguous().unsqueeze(0) (an exact gather)",
                f"observed equal to the checkpoint table gathered at the index: {bool(np.array_equal(gathered, bias))}",
            ],
            checkpoint={"file": "swin_bias.safetensors", "key": key},
        )


def make_beit(c: Collector) -> None:
    import torch
    from timm.layers.pos_embed_rel import gen_relative_position_index as layers_gen
    from timm.models.beit import Attention, gen_relative_position_index

    for h, w in BEIT_WINDOWS:
        idx = gen_relative_position_index((h, w))
        n = h * w + 1
        if idx.dtype != torch.int64 or idx.shape != (n, n):
            raise AssertionError(f"beit index {idx.dtype} {tuple(idx.shape)}")
        index = t2np(idx)
        alt = layers_gen((h, w), class_token=True)
        m = (2 * h - 1) * (2 * w - 1)
        c.add(
            f"beit_index_{h}x{w}",
            {"index": index},
            group="beit",
            framework="timm",
            function="timm.models.beit.gen_relative_position_index",
            call=f"gen_relative_position_index(({h}, {w}))",
            params={"scheme": "beit", "window": [h, w]},
            array_notes={
                "index": f"index (HW+1, HW+1) int64: row/column 0 is the class token, index[1:, 1:] is Swin's index "
                f"of the {h}x{w} window; the table has (2H-1)(2W-1) + 3 = {m + 3} rows"
            },
            notes=[
                f"class-token entries (M = (2H-1)(2W-1) = {m}): index[0, 1:] = M = {m} (class token as query -> "
                f"patch keys), index[1:, 0] = M + 1 = {m + 1} (patch queries -> class token key), index[0, 0] = "
                f"M + 2 = {m + 2}; timm writes row 0 = M, then column 0 = M + 1, then [0, 0] = M + 2",
                "equal to timm.layers.pos_embed_rel.gen_relative_position_index((H, W), class_token=True): "
                f"{bool(torch.equal(idx, alt))}",
                f"equal to the formula with those class-token entries: "
                f"{bool(np.array_equal(index, window_exact_index(h, w, True)))}",
            ],
        )

    tables = {}
    mods = {}
    for (h, w), heads in BIAS_WINDOWS:
        blk = 0 if (h, w) == (7, 7) else 1
        key = f"blocks.{blk}.attn.relative_position_bias_table"
        tables[key] = seeded(SEEDS[f"beit_{h}x{w}"], ((2 * h - 1) * (2 * w - 1) + 3, heads))
        mods[key] = ((h, w), heads)
    loaded = save_checkpoint(
        c,
        "beit_bias.safetensors",
        tables,
        {
            "seeds": {k: SEEDS[f"beit_{v[0][0]}x{v[0][1]}"] for k, v in mods.items()},
            "meaning": "timm BEiT relative_position_bias_table ((2H-1)(2W-1) + 3, heads) under timm Beit keys: "
            "blocks.0 holds a 7x7-window table for 4 heads, blocks.1 a 4x6-window table for 3 heads (a real BEiT "
            "has one window for all blocks); seeded standard-normal float32",
        },
        not CHECK_MODE,
    )
    for key, ((h, w), heads) in mods.items():
        torch.manual_seed(0)
        attn = Attention(dim=heads * 4, num_heads=heads, window_size=(h, w)).eval()
        prefix = key.rsplit(".", 1)[0] + "."
        result = attn.load_state_dict({k[len(prefix) :]: v for k, v in loaded.items() if k == key}, strict=False)
        if result.unexpected_keys or "relative_position_bias_table" in result.missing_keys:
            raise AssertionError(result)
        with torch.no_grad():
            out = attn._get_rel_pos_bias()
        n = h * w + 1
        if out.dtype != torch.float32 or out.shape != (1, heads, n, n):
            raise AssertionError(f"beit bias {out.dtype} {tuple(out.shape)}")
        bias = t2np(out[0])
        gathered = t2np(loaded[key])[window_exact_index(h, w, True)].transpose(2, 0, 1)
        c.add(
            f"beit_bias_{h}x{w}_h{heads}",
            {"bias": bias},
            group="beit_bias",
            framework="timm",
            function="timm.models.beit.Attention._get_rel_pos_bias",
            call=(
                f"Attention(dim={heads * 4}, num_heads={heads}, window_size=({h}, {w})).load_state_dict("
                f"{{'relative_position_bias_table': load_file('beit_bias.safetensors')[{key!r}]}}, strict=False); "
                "_get_rel_pos_bias()[0]"
            ),
            params={
                "scheme": "beit",
                "window": [h, w],
                "heads": heads,
                "bias_file": "beit_bias.safetensors",
                "bias_key": key,
            },
            array_notes={
                "bias": "bias[h, i, j] = table[relative_position_index[i, j], h] (heads, HW+1, HW+1) float32, "
                "class token first"
            },
            notes=[
                "_get_rel_pos_bias: table[index.view(-1)].view(HW+1, HW+1, -1).permute(2, 0, 1).contiguous()"
                ".unsqueeze(0) (an exact gather)",
                f"observed equal to the checkpoint table gathered at the index: {bool(np.array_equal(gathered, bias))}",
            ],
            checkpoint={"file": "beit_bias.safetensors", "key": key},
        )


def swinv2_reference(h: int, w: int, ph: int, pw: int, coords: np.ndarray) -> dict[str, Any]:
    """Compare timm's float32 coords with (a) the exact value correctly rounded, (b) timm's float32 op chain
    evaluated with every operation correctly rounded (log2 included)."""
    m = mp()
    dh = max((ph if ph > 0 else h) - 1, 1)
    dw = max((pw if pw > 0 else w) - 1, 1)
    exact = np.zeros_like(coords)
    chain = np.zeros_like(coords)
    cache: dict[tuple[int, int], tuple[np.float32, np.float32]] = {}
    for a in range(2 * h - 1):
        for b in range(2 * w - 1):
            for ch, (r, d) in enumerate(((a - (h - 1), dh), (b - (w - 1), dw))):
                if (r, d) not in cache:
                    x = m.mpf(8) * r / d
                    ex = f32_round(m.sign(x) * m.log(1 + abs(x), 2) / 3) if r else np.float32(0)
                    q = np.float32(r) / np.float32(d)  # IEEE float32 division (correctly rounded)
                    q = np.float32(q * np.float32(8))
                    s = np.float32(abs(q) + np.float32(1))
                    lg = f32_round(m.log(m.mpf(float(s)), 2))
                    v = np.float32(np.float32(np.sign(q)) * lg)
                    cr = np.float32(v / np.float32(3))
                    cache[(r, d)] = (ex, cr)
                exact[a, b, ch], chain[a, b, ch] = cache[(r, d)]
    du = ulp_diff(coords, exact)
    dc = ulp_diff(coords, chain)
    return {
        "elements": int(coords.size),
        "mismatch_vs_correctly_rounded": int(np.count_nonzero(du)),
        "max_ulp_vs_correctly_rounded": int(du.max()),
        "max_abs_error_vs_exact": float(np.max(np.abs(coords.astype(np.float64) - exact.astype(np.float64)))),
        "mismatch_vs_float32_chain_correctly_rounded_ops": int(np.count_nonzero(dc)),
        "max_ulp_vs_float32_chain": int(dc.max()),
        "float32_chain": "fl(fl(sign(x) * fl(log2(fl(|x| + 1)))) / 3) with x = fl(fl(r / d) * 8), each operation "
        "correctly rounded (what timm's sequence of float32 ops would give with a correctly rounded log2)",
    }


def make_swinv2(c: Collector) -> None:
    import torch
    from timm.models.swin_transformer import get_relative_position_index
    from timm.models.swin_transformer_v2 import WindowAttention

    for (h, w), (ph, pw) in SWINV2_CASES:
        torch.manual_seed(0)
        attn = WindowAttention(dim=16, window_size=(h, w), num_heads=2, pretrained_window_size=(ph, pw)).eval()
        ct = attn.relative_coords_table
        ri = attn.relative_position_index
        if ct.dtype != torch.float32 or ct.shape != (1, 2 * h - 1, 2 * w - 1, 2):
            raise AssertionError(f"swinv2 coords {ct.dtype} {tuple(ct.shape)}")
        if ri.dtype != torch.int64 or ri.shape != (h * w, h * w):
            raise AssertionError(f"swinv2 index {ri.dtype} {tuple(ri.shape)}")
        coords = t2np(ct[0])
        index = t2np(ri)
        dh = max((ph if ph > 0 else h) - 1, 1)
        dw = max((pw if pw > 0 else w) - 1, 1)
        c.add(
            f"swinv2_{h}x{w}_pre{ph}x{pw}",
            {"coords": coords, "index": index},
            group="swinv2",
            framework="timm",
            function="timm.models.swin_transformer_v2.WindowAttention (buffers relative_coords_table, "
            "relative_position_index, built by _make_pair_wise_relative_positions)",
            call=f"WindowAttention(dim=16, window_size=({h}, {w}), num_heads=2, pretrained_window_size=({ph}, {pw}))"
            ".relative_coords_table[0] and .relative_position_index",
            params={"scheme": "swinv2", "window": [h, w], "pretrained_window": [ph, pw]},
            array_notes={
                "coords": "coords[a, b] = (f(a - (H-1), dh), f(b - (W-1), dw)) (2H-1, 2W-1, 2) float32: channel 0 "
                f"is the row (height) offset, channel 1 the column offset; here dh = {dh}, dw = {dw}",
                "index": "relative_position_index (HW, HW) int64, the same formula as Swin's",
            },
            notes=[
                "timm (_make_pair_wise_relative_positions, all float32): relative_coords_h = arange(-(H-1), H, "
                "dtype=float32), likewise w; table = stack(ndgrid(h, w)).permute(1, 2, 0) (1, 2H-1, 2W-1, 2); "
                "if pretrained_window_size[0] > 0: table[..., 0] /= max(pretrained_h - 1, 1), table[..., 1] /= "
                "max(pretrained_w - 1, 1), else the same with the window size (in-place float32 division by a "
                "Python int, correctly rounded); table *= 8 (exact); table = torch.sign(table) * "
                "torch.log2(torch.abs(table) + 1.0) / math.log2(8) (math.log2(8) is exactly 3.0: a float32 "
                "division by 3); .to(dtype of the module, float32 here)",
                "the pretrained test is on pretrained_window_size[0] alone, and a pretrained or window size of 1 "
                "divides by max(1 - 1, 1) = 1",
                "equal to Swin's get_relative_position_index(H, W): "
                f"{bool(torch.equal(ri, get_relative_position_index(h, w)))}",
            ],
            reference_check=swinv2_reference(h, w, ph, pw, coords),
        )


# --------------------------------------------------------------------------------------------------------------
# 6. Transformer-XL (through XLNet), 7. MPT ALiBi
# --------------------------------------------------------------------------------------------------------------


def make_transformer_xl(c: Collector) -> None:
    import torch
    from transformers import XLNetConfig, XLNetModel

    m = mp()
    klen = 24
    qlen = 24
    for d in (16, 32):
        torch.manual_seed(0)
        model = XLNetModel(
            XLNetConfig(
                vocab_size=8, d_model=d, n_layer=1, n_head=2, d_inner=8, attn_type="bi", bi_data=False, clamp_len=-1
            )
        ).eval()
        if model.attn_type != "bi" or model.bi_data or model.clamp_len > 0:
            raise AssertionError("unexpected XLNet settings")
        with torch.no_grad():
            out = model.relative_positional_encoding(qlen, klen, bsz=None)
        if out.dtype != torch.float32 or out.shape != (klen + qlen, 1, d):
            raise AssertionError(f"xlnet pos_emb {out.dtype} {tuple(out.shape)}")
        full = t2np(out[:, 0, :])
        positions_full = np.arange(klen, -qlen, -1, dtype=np.float64)
        rows = slice(1, klen + 1)  # positions klen-1 .. 0
        pos_emb = full[rows]
        positions = positions_full[rows]
        # reference: [sin(p * f_k) | cos(p * f_k)], f_k = 10000^(-2k/d)
        h = d // 2
        err = []
        bound = []
        mism = 0
        for i, p in enumerate(positions_full.tolist()):
            for j in range(d):
                k = j % h
                ang = m.mpf(p) * m.power(10000, -m.mpf(2 * k) / d)
                v = m.sin(ang) if j < h else m.cos(ang)
                err.append(abs(float(full[i, j]) - v))
                bound.append(2.0**-22 * (1 + abs(float(ang))))
                mism += int(full[i, j] != f32_round(v))
        ratio = max(float(e) / b for e, b in zip(err, bound, strict=True))
        c.add(
            f"transformer_xl_xlnet_klen{klen}_d{d}",
            {"pos_emb": pos_emb, "positions": positions, "pos_emb_xlnet": full, "positions_xlnet": positions_full},
            group="transformer_xl",
            framework="transformers",
            function="transformers.models.xlnet.modeling_xlnet.XLNetModel.relative_positional_encoding",
            call=f"XLNetModel(XLNetConfig(d_model={d}, n_head=2, attn_type='bi', bi_data=False, clamp_len=-1))"
            f".relative_positional_encoding({qlen}, {klen}, bsz=None)[:, 0, :]",
            params={"scheme": "transformer-xl", "klen": klen, "qlen": qlen, "d_model": d},
            array_notes={
                "pos_emb": f"Transformer-XL's relative embedding R (klen, d) = rows 1..{klen} of XLNet's output: "
                f"positions {klen - 1} down to 0, [sin(p * inv_freq) | cos(p * inv_freq)]",
                "positions": "the relative position of each pos_emb row (klen-1 .. 0), float64",
                "pos_emb_xlnet": f"XLNet's whole output (klen + qlen, d): attn_type 'bi' positions {klen} down to "
                f"{-qlen + 1}",
                "positions_xlnet": "the position of each pos_emb_xlnet row, float64",
            },
            notes=[
                "Transformer-XL (TransfoXL) is no longer in this transformers (neither in models nor in "
                "models.deprecated), so XLNet's implementation of the same formula is called",
                "XLNet: freq_seq = arange(0, d, 2.0, dtype=int64).float(); inv_freq = 1 / torch.pow(10000, "
                "freq_seq / d) (float32); attn_type 'bi': pos_seq = arange(klen, -qlen, -1.0) (its comment says "
                "klen - 1, the code starts at klen); sinusoid = pos_seq[:, None] * inv_freq (float32); "
                "cat([sin, cos], -1)",
                "Transformer-XL's PositionalEmbedding used pos_seq = arange(klen - 1, -1, -1.0) with the same "
                "inv_freq and [sin | cos]: those are XLNet's rows 1..klen",
            ],
            reference_check={
                "elements": int(full.size),
                "mismatch_vs_correctly_rounded": mism,
                "max_abs_error": float(max(err)),
                "max_error_over_bound": ratio,
                "bound": "2**-22 * (1 + |angle|), angle = p * 10000^(-2k/d)",
            },
        )


def make_mpt(c: Collector) -> None:
    import torch

    try:
        from transformers.models.mpt.modeling_mpt import build_mpt_alibi_tensor
    except ImportError as exc:
        c.skip("mpt_alibi", f"transformers.models.mpt.modeling_mpt.build_mpt_alibi_tensor not importable: {exc}")
        return
    m = mp()
    n = 16
    for heads in (8, 12, 16, 40, 6):
        out = build_mpt_alibi_tensor(heads, n, alibi_bias_max=8)
        if out.dtype != torch.float32 or out.shape != (heads, 1, n):
            raise AssertionError(f"mpt alibi {out.dtype} {tuple(out.shape)}")
        bias = t2np(out[:, 0, :])
        slopes = -bias[:, n - 2]  # position -1: exactly -slope
        p = 2 ** math.ceil(math.log2(heads))
        ks = list(range(1, p + 1))
        order = ks if p == heads else (ks[1::2] + ks[::2])[:heads]
        exact_slopes = [m.power(2, -m.mpf(8) * k / p) for k in order]
        ex32 = np.array([f32_round(s) for s in exact_slopes], np.float32)
        bias_exact = np.array(
            [[f32_round(-(n - 1 - j) * s) if j < n - 1 else 0.0 for j in range(n)] for s in exact_slopes], np.float32
        )
        c.add(
            f"mpt_alibi_h{heads}_n{n}",
            {"bias": bias, "slopes": slopes},
            group="mpt_alibi",
            framework="transformers",
            function="transformers.models.mpt.modeling_mpt.build_mpt_alibi_tensor",
            call=f"build_mpt_alibi_tensor({heads}, {n}, alibi_bias_max=8)[:, 0, :]",
            params={"heads": heads, "seq_len": n, "alibi_bias_max": 8},
            array_notes={
                "bias": f"bias[h, j] = slope[h] * (j - {n - 1}) (heads, L) float32: the function returns (heads, 1, L) "
                "(its (1, heads, 1, L) squeezed at 0); the 1-axis is squeezed here",
                "slopes": "-bias[:, L - 2] (the position -1 column, so exactly the float32 slopes it multiplied)",
            },
            notes=[
                "positions are arange(1 - L, 1, dtype=int32): MPT's bias is <= 0 and 0 at the last key (not "
                "BLOOM's slope * j >= 0; equal after softmax's shift invariance along a row)",
                "slopes: P = 2**ceil(log2(H)); base = arange(1, P + 1).float() * (alibi_bias_max / P) (float32); "
                "slopes = 1.0 / torch.pow(2, base) (a float32 pow, then a float32 reciprocal: two roundings); for H "
                "not a power of two the P slopes are reordered as cat(slopes[1::2], slopes[::2])[:H] (the EVEN "
                "exponents k = 2, 4, ... first, then the odd ones): this differs from BLOOM's, which takes the "
                "largest power of two p <= H and then odd powers of the 2p base",
                "bias = alibi (int32) * slopes (float32): float32, exact multiples only when the product is exact",
                f"exponents k (slope = 2^(-8k/P), P = {p}) in head order: {order}",
            ],
            reference_check={
                "slopes_exact_exponents": [f"2^(-{8 * k}/{p})" for k in order],
                "slopes_mismatch_vs_correctly_rounded": int(np.count_nonzero(slopes != ex32)),
                "slopes_max_ulp_vs_correctly_rounded": int(ulp_diff(slopes, ex32).max()),
                "bias_mismatch_vs_correctly_rounded": int(np.count_nonzero(bias != bias_exact)),
                "bias_max_ulp_vs_correctly_rounded": int(ulp_diff(bias, bias_exact).max()),
                "bias_equals_float32_product_of_slopes": bool(
                    np.array_equal(bias, slopes[:, None] * np.arange(1 - n, 1, dtype=np.float32)[None, :])
                ),
                "note": "the slopes are the correctly rounded 2^(-8k/P); the bias is their float32 product with the "
                "integer position (one rounding), which can differ by 1 ulp from the correctly rounded exact "
                "product slope * position",
            },
        )


# --------------------------------------------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------------------------------------------

CHECK_MODE = False


def run(c: Collector) -> None:
    import torch

    torch.set_num_threads(1)  # torch CPU kernels may round differently with other thread splits
    torch.set_default_dtype(torch.float32)
    torch.manual_seed(0)
    make_t5(c)
    make_deberta(c)
    make_swin(c)
    make_beit(c)
    make_swinv2(c)
    make_transformer_xl(c)
    make_mpt(c)
    c.skip(
        "shaw",
        "Shaw goldens: tensor2tensor needs TensorFlow; the index is an integer clip checked in the suite against its "
        "definition",
    )


def summarize(c: Collector) -> dict[str, Any]:
    """What the reference checks found, over all goldens (for the reader)."""
    groups: dict[str, int] = {}
    for g in c.goldens.values():
        groups[g["group"]] = groups.get(g["group"], 0) + 1
    integer = [g for g in c.goldens.values() if "mismatch_vs_exact" in g.get("reference_check", {})]
    swinv2 = [g["reference_check"] for g in c.goldens.values() if g["group"] == "swinv2"]
    return {
        "goldens_per_group": groups,
        "t5_and_deberta_integer_goldens": len(integer),
        "t5_and_deberta_entries_checked": sum(g["reference_check"]["elements"] for g in integer),
        "t5_and_deberta_mismatches_vs_exact": sum(g["reference_check"]["mismatch_vs_exact"] for g in integer),
        "t5_and_deberta_exact_integer_log_values": (
            "reference_check.exact_integer_log_values_at_distance lists the distances whose log value is an exact "
            "integer (where a float32 error could flip floor/ceil) and closest_non_integer_log_value the nearest "
            "miss; "
            + (
                "the framework's float32 buckets equal the exact ones at every entry, those included"
                if not sum(g["reference_check"]["mismatch_vs_exact"] for g in integer)
                else "see each golden's reference_check.mismatches"
            )
        ),
        "swinv2_coords_max_ulp_vs_correctly_rounded": max(r["max_ulp_vs_correctly_rounded"] for r in swinv2),
        "swinv2_coords_mismatch_vs_correctly_rounded": sum(r["mismatch_vs_correctly_rounded"] for r in swinv2),
        "swinv2_coords_elements": sum(r["elements"] for r in swinv2),
        "swinv2_coords_mismatch_vs_float32_chain": sum(
            r["mismatch_vs_float32_chain_correctly_rounded_ops"] for r in swinv2
        ),
    }


def build_manifest(c: Collector, env: dict[str, Any]) -> dict[str, Any]:
    return {
        "summary": summarize(c),
        "description": (
            "Golden relative-position tables (T5, DeBERTa-v2, Swin, BEiT, SwinV2, Transformer-XL via XLNet, MPT "
            "ALiBi) made by running the real transformers/timm functions; see README.md. The suite reads the .npz "
            "files, the .safetensors checkpoints and this manifest without any of those libraries."
        ),
        "generator": GENERATOR,
        "format_version": 1,
        "environment": env,
        "conventions": CONVENTIONS,
        "goldens": c.goldens,
        "checkpoints": c.checkpoints,
        "not_made": c.not_made,
    }


def main(argv: Sequence[str] | None = None) -> int:
    global CHECK_MODE
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--check", action="store_true", help="recompute and compare with the files on disk; write nothing"
    )
    args = parser.parse_args(argv)
    CHECK_MODE = args.check
    warnings.filterwarnings("ignore")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    tv_status = prepare_torchvision()
    c = Collector()
    run(c)
    env = versions(tv_status)
    manifest = build_manifest(c, env)
    text = canonical_json(manifest)
    machine_paths = {str(HERE.parents[2]), sys.prefix, sys.base_prefix, tempfile.gettempdir(), str(Path.home())}
    for bad in sorted(machine_paths) + ["site-packages"]:
        if bad and bad in text:
            raise AssertionError(f"the manifest would name a machine path ({bad!r})")

    if args.check:
        diff = []
        for file, data in sorted(c.files.items()):
            path = HERE / file
            if not path.exists() or path.read_bytes() != data:
                diff.append(file)
        if not MANIFEST.exists() or MANIFEST.read_text(encoding="utf-8") != text:
            diff.append("manifest.json")
        expected = set(c.files) | {"manifest.json", "README.md", Path(__file__).name}
        extra = sorted(p.name for p in HERE.iterdir() if p.is_file() and p.name not in expected)
        print(
            f"checked {len(c.files)} files and the manifest: "
            + ("all identical" if not diff else f"DIFFERENT: {diff}")
            + (f"; files not made by this script: {extra}" if extra else "")
        )
        return 1 if diff or extra else 0

    expected = set(c.files) | {"manifest.json", "README.md", Path(__file__).name}
    made = (".npz", ".safetensors")
    stale = [p for p in HERE.iterdir() if p.is_file() and p.suffix in made and p.name not in expected]
    for p in stale:
        p.unlink()
    for file, data in sorted(c.files.items()):
        path = HERE / file
        if file.endswith(".npz"):
            path.write_bytes(data)
        elif path.read_bytes() != data:  # .safetensors: written by safetensors.torch.save_file above
            raise AssertionError(f"{file} on disk differs from its serialisation")
    MANIFEST.write_text(text, encoding="utf-8")
    total = sum(p.stat().st_size for p in HERE.iterdir() if p.is_file())
    for _name, g in sorted(c.goldens.items()):
        rc = g.get("reference_check", {})
        flag = ""
        if rc.get("mismatch_vs_exact"):
            flag = f"  MISMATCH vs exact: {rc['mismatch_vs_exact']}"
        shapes = ", ".join(f"{k}{tuple(v['shape'])}:{v['dtype']}" for k, v in g["arrays"].items())
        print(f"{g['file']}: {shapes}{flag}")
    for file, ck in sorted(c.checkpoints.items()):
        print(f"{file}: {ck['keys']}")
    for name, r in sorted(c.not_made.items()):
        print(f"not made {name}: {r['reason'][:100]}")
    if stale:
        print(f"removed stale files: {[p.name for p in stale]}")
    print(f"environment: {json.dumps(env, sort_keys=True)}")
    print(f"{len(c.goldens)} goldens, {len(c.checkpoints)} checkpoints; directory total {total} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
