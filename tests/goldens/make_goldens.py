#!/usr/bin/env python3
"""Make the golden tables in this directory by running the real framework functions.

This script is NOT part of posenc and is never imported by the test suite: it runs in a throwaway virtual
environment that has the frameworks installed, and writes small ``<name>.npz`` files plus one ``manifest.json``
that the suite reads without any of those libraries. See README.md beside this file for the exact commands.

Two environments feed one manifest:

* ``torch``: torch 2.13.0 (CPU), transformers, diffusers, numpy (mpmath comes with torch). Makes every golden
  except tensor2tensor's.
* ``tensorflow``: tensorflow-cpu 2.15.1 + tensorflow-addons + tf-slim + tensor2tensor (``--no-deps``). Makes the
  tensor2tensor goldens (``get_timing_signal_1d``).

Each run (re)writes the goldens of the environment it runs in and keeps the other environment's entries, so
running the script in both venvs, in either order, gives the same directory. Nothing here depends on the clock,
and the .npz files are written with fixed zip timestamps, so a re-run with the same library versions gives
byte-identical files. ``--check`` recomputes everything this environment can make and compares it with the files
on disk without writing.

Besides the arrays, every entry carries a ``reference_check``: the golden compared with the formula documented in
shared/reference/framework-conventions.md, evaluated here in mpmath (50 digits). It is a record for the reader
(where a framework departs from the documented formula, it shows), not something the suite must reproduce.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import logging
import math
import os
import platform
import sys
import warnings
import zipfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "manifest.json"
ZIP_DATE = (1980, 1, 1, 0, 0, 0)  # fixed zip member time: byte-identical re-runs
N = 24  # rows of every 1-D sinusoid golden unless a test case says otherwise
F32_ULP_BOUND = 2.0**-22  # the agreement rule's constant: |err| <= 2^-22 * (1 + |angle|)

AGREEMENT_RULE = {
    "float64-then-round": (
        "bit-identical: the framework evaluates in float64 and rounds once to float32, so posenc's float32 output "
        "(float64 or better, rounded once) must equal the golden bit for bit"
    ),
    "float32": (
        "within the framework's own float32 error: |posenc - golden| <= 2**-22 * (1 + |angle|) elementwise, where "
        "angle is the exact argument of sin/cos for that element (position * frequency * scale); for RoPE caches "
        "multiply the bound by attention_scaling; for ALiBi slopes/bias a relative bound: BLOOM raises a "
        "float32-rounded base to integer powers, which drifts from the exact slopes (up to ~4.4 float32 ulps at 40 "
        "heads, see each golden's reference_check.max_rel_error_ulp), so |posenc - golden| <= 2**-20 * |golden| "
        "unless posenc reproduces that arithmetic"
    ),
}


# --------------------------------------------------------------------------------------------------------------
# Output: deterministic .npz and the manifest
# --------------------------------------------------------------------------------------------------------------


def npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    """The bytes of an .npz holding ``arrays`` (what np.savez writes, but with fixed member timestamps)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zf:
        for name in sorted(arrays):
            arr = np.ascontiguousarray(arrays[name])
            if arr.dtype not in (np.float32, np.float64):
                raise TypeError(f"golden array {name!r} must be float32 or float64, got {arr.dtype}")
            member = io.BytesIO()
            np.lib.format.write_array(member, arr, allow_pickle=False)
            info = zipfile.ZipInfo(name + ".npy", date_time=ZIP_DATE)
            info.external_attr = 0o644 << 16
            zf.writestr(info, member.getvalue())
    return buf.getvalue()


def canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, indent=2, allow_nan=False) + "\n"


def f(x: float) -> float:
    """A JSON-safe float (plain Python float; json writes the shortest repr that round-trips)."""
    return float(x)


def positions_arange(count: int, start: float = 0, step: float = 1) -> dict[str, Any]:
    return {"kind": "arange", "start": start, "step": step, "count": count}


def positions_list(values: Iterable[float]) -> dict[str, Any]:
    return {"kind": "list", "values": [v if isinstance(v, int) else f(v) for v in values]}


class Collector:
    """Collects goldens, errors and skips for one environment."""

    def __init__(self, environment: str) -> None:
        self.environment = environment
        self.goldens: dict[str, dict[str, Any]] = {}
        self.files: dict[str, bytes] = {}
        self.raises: dict[str, dict[str, Any]] = {}
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
        compute: str,
        array_notes: dict[str, str],
        preset: str | None = None,
        positions: dict[str, Any] | None = None,
        layout: str | None = None,
        notes: Sequence[str] = (),
        reference_check: dict[str, Any] | None = None,
    ) -> None:
        if name in self.goldens:
            raise ValueError(f"duplicate golden {name}")
        if compute not in AGREEMENT_RULE:
            raise ValueError(f"compute must be one of {sorted(AGREEMENT_RULE)}, got {compute!r}")
        arrays = {k: np.asarray(v) for k, v in arrays.items()}
        missing = set(arrays) ^ set(array_notes)
        if missing:
            raise ValueError(f"{name}: array notes do not match arrays: {sorted(missing)}")
        data = npz_bytes(arrays)
        entry: dict[str, Any] = {
            "file": f"{name}.npz",
            "sha256": hashlib.sha256(data).hexdigest(),
            "environment": self.environment,
            "group": group,
            "framework": framework,
            "function": function,
            "call": call,
            "params": params,
            "compute": compute,
            "agreement": "bit-identical" if compute == "float64-then-round" else "float32-tolerance",
            "arrays": {
                k: {"dtype": str(v.dtype), "shape": list(v.shape), "meaning": array_notes[k]} for k, v in arrays.items()
            },
            "notes": list(notes),
        }
        if preset is not None:
            entry["preset"] = preset
        if positions is not None:
            entry["positions"] = positions
        if layout is not None:
            entry["layout"] = layout
        if reference_check is not None:
            entry["reference_check"] = reference_check
        self.goldens[name] = entry
        self.files[name] = data

    def add_raise(self, name: str, *, function: str, call: str, params: dict[str, Any], fn: Callable[[], Any]) -> None:
        try:
            result = fn()
        except Exception as exc:  # noqa: BLE001 - the point is to record whatever the framework raises
            self.raises[name] = {
                "environment": self.environment,
                "function": function,
                "call": call,
                "params": params,
                "error_type": type(exc).__name__,
                "message": str(exc),
            }
            return
        shape = list(getattr(result, "shape", []))
        raise AssertionError(f"{name}: expected {call} to raise, it returned shape {shape}")

    def skip(self, name: str, reason: str, superseded_by_preset: str | None = None) -> None:
        entry: dict[str, Any] = {"environment": self.environment, "reason": reason}
        if superseded_by_preset is not None:
            entry["superseded_by_preset"] = superseded_by_preset
        self.not_made[name] = entry


# --------------------------------------------------------------------------------------------------------------
# Independent reference (mpmath, from framework-conventions.md) used only for the reference_check records
# --------------------------------------------------------------------------------------------------------------


def mp() -> Any:
    import mpmath

    mpmath.mp.dps = 50
    return mpmath


def check_close(
    golden: np.ndarray, ref: Sequence[Sequence[Any]] | np.ndarray, angle: np.ndarray | None, scale: float = 1.0
) -> dict[str, Any]:
    """Compare a float32/float64 golden with an mpmath reference.

    Returns the number of elements whose float32 rounding differs from the correctly rounded reference
    (``mismatch_vs_correctly_rounded``) and the largest error measured against the agreement rule's float32 bound
    (``max_error_over_bound``: <= 1 means inside the rule).
    """
    ref64 = np.array([[float(v) for v in row] for row in ref], dtype=np.float64)
    ref32 = np.array([[np.float32(float(v)) for v in row] for row in ref], dtype=np.float32)
    g = np.asarray(golden, dtype=np.float64).reshape(ref64.shape)
    out: dict[str, Any] = {
        "mismatch_vs_correctly_rounded": int(
            np.count_nonzero(np.asarray(golden, np.float32).reshape(ref32.shape) != ref32)
        ),
        "elements": int(ref32.size),
        "max_abs_error": f(np.max(np.abs(g - ref64))) if ref64.size else 0.0,
    }
    if angle is not None and ref64.size:
        bound = F32_ULP_BOUND * (1.0 + np.abs(angle)) * abs(scale)
        ratio = np.abs(g - ref64) / bound
        out["max_error_over_bound"] = f(np.max(ratio))
        # the same as a power of two: err <= 2**log2_error_per_unit_angle * (1 + |angle|) * scale
        worst = float(np.max(ratio)) * F32_ULP_BOUND
        out["log2_error_per_unit_angle"] = round(math.log2(worst), 3) if worst > 0 else None
    return out


def check_relative(golden: np.ndarray, ref: Sequence[Any]) -> dict[str, Any]:
    """Relative comparison for a 1-D array of frequencies or slopes; ``max_rel_error_ulp`` in float32 ulps (2^-23)."""
    ref64 = np.array([float(v) for v in ref], dtype=np.float64)
    g = np.asarray(golden, dtype=np.float64).reshape(ref64.shape)
    rel = np.abs(g - ref64) / np.where(ref64 == 0, 1.0, np.abs(ref64))
    ref32 = np.array([np.float32(float(v)) for v in ref], dtype=np.float32)
    return {
        "mismatch_vs_correctly_rounded": int(
            np.count_nonzero(np.asarray(golden, np.float32).reshape(ref32.shape) != ref32)
        ),
        "elements": int(ref32.size),
        "max_rel_error_ulp": f(np.max(rel) / 2.0**-23) if rel.size else 0.0,
    }


def ref_sinusoid(
    positions: Sequence[float],
    d: int,
    freq: Callable[[int], Any],
    layout: str,
    odd: str,
    scale: float = 1.0,
    padding_row: int | None = None,
) -> tuple[list[list[Any]], np.ndarray]:
    """Reference table and angle matrix for a 1-D sinusoid.

    layout: "interleaved" ([s0 c0 s1 c1 ...]), "sin|cos", "cos|sin", "marian" ([S(ceil d/2) | C(floor d/2)]).
    odd: "zero" (trailing zero column) or "natural" (interleaved/marian: the extra column is a sine).
    """
    m = mp()
    rows: list[list[Any]] = []
    angles = np.zeros((len(positions), d))
    h = d // 2
    for r, p in enumerate(positions):
        pm = m.mpf(p) * m.mpf(scale)
        row: list[Any] = []
        if layout == "interleaved":
            for j in range(d):
                a = pm * freq(j // 2)
                row.append(m.sin(a) if j % 2 == 0 else m.cos(a))
                angles[r, j] = float(a)
        elif layout == "marian":
            ns = (d + 1) // 2
            for j in range(d):
                k = j if j < ns else j - ns
                a = pm * freq(k)
                row.append(m.sin(a) if j < ns else m.cos(a))
                angles[r, j] = float(a)
        else:
            first, second = (m.sin, m.cos) if layout == "sin|cos" else (m.cos, m.sin)
            for j in range(2 * h):
                a = pm * freq(j % h)
                row.append(first(a) if j < h else second(a))
                angles[r, j] = float(a)
            if d % 2:
                if odd != "zero":
                    raise ValueError(odd)
                row.append(m.mpf(0))
        if padding_row is not None and r == padding_row:
            row = [m.mpf(0)] * d
            angles[r, :] = 0.0
        rows.append(row)
    return rows, angles


def freq_paper(d: int, base: float = 10000.0) -> Callable[[int], Any]:
    m = mp()
    return lambda k: m.power(m.mpf(base), -m.mpf(2 * k) / d)


def freq_shifted(d: int, shift: float, max_period: float = 10000.0, guard: bool = False) -> Callable[[int], Any]:
    """exp(-k ln(P) / (h - shift)); guard=True uses max(h - shift, 1) like tensor2tensor."""
    m = mp()
    denom = m.mpf(d // 2) - m.mpf(shift)
    if guard:
        denom = max(denom, m.mpf(1))
    return lambda k: m.exp(-m.mpf(k) * m.log(m.mpf(max_period)) / denom)


# --------------------------------------------------------------------------------------------------------------
# torch environment: transformers + diffusers
# --------------------------------------------------------------------------------------------------------------


def torch_versions() -> dict[str, Any]:
    import diffusers
    import torch
    import transformers

    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "diffusers": diffusers.__version__,
        "mpmath": mp().__version__,
        "machine": platform.machine(),
        "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "torch_num_threads": torch.get_num_threads(),
    }


def t2np(t: Any) -> np.ndarray:
    return np.ascontiguousarray(t.detach().cpu().numpy().copy())


def llama_config(head_dim: int, max_pos: int, rope_parameters: dict[str, Any]) -> Any:
    """The smallest LlamaConfig whose rotary embedding has ``head_dim`` and ``rope_parameters`` (two heads of one
    layer; the RoPE tables depend on nothing else). Shared by this script and identify/make_identify_goldens.py."""
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=32,
        hidden_size=head_dim * 2,
        intermediate_size=8,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        head_dim=head_dim,
        max_position_embeddings=max_pos,
        rope_parameters=dict(rope_parameters),
    )


def make_sinusoid_presets(c: Collector) -> None:
    import torch
    from diffusers.models.embeddings import get_timestep_embedding
    from transformers.models.distilbert.modeling_distilbert import create_sinusoidal_embeddings
    from transformers.models.fsmt.modeling_fsmt import SinusoidalPositionalEmbedding as FSMTSinusoidal
    from transformers.models.m2m_100.modeling_m2m_100 import M2M100SinusoidalPositionalEmbedding
    from transformers.models.marian.modeling_marian import MarianSinusoidalPositionalEmbedding
    from transformers.models.musicgen.modeling_musicgen import MusicgenSinusoidalPositionalEmbedding
    from transformers.models.pegasus.modeling_pegasus import PegasusSinusoidalPositionalEmbedding
    from transformers.models.speech_to_text.modeling_speech_to_text import Speech2TextSinusoidalPositionalEmbedding
    from transformers.models.whisper.modeling_whisper import sinusoids
    from transformers.models.xlm.modeling_xlm import create_sinusoidal_embeddings as xlm_create

    tf_ = "transformers"
    # ---- vaswani: DistilBERT create_sinusoidal_embeddings (fills `out` in place) ---------------------------------
    for d in (16, 33):
        out = torch.empty(N, d, dtype=torch.float32)
        create_sinusoidal_embeddings(n_pos=N, dim=d, out=out)
        xlm_out = torch.empty(N, d, dtype=torch.float32)
        xlm_create(N, d, xlm_out)
        same_xlm = bool(torch.equal(out, xlm_out))
        ref, ang = ref_sinusoid(range(N), d, freq_paper(d), "interleaved", "natural")
        c.add(
            f"vaswani_distilbert_d{d}",
            {"pe": t2np(out)},
            group="sinusoid",
            preset="vaswani",
            framework=tf_,
            function="transformers.models.distilbert.modeling_distilbert.create_sinusoidal_embeddings",
            call=(
                f"out = torch.empty({N}, {d}, dtype=torch.float32); "
                f"create_sinusoidal_embeddings(n_pos={N}, dim={d}, out=out)"
            ),
            params={"n_pos": N, "dim": d, "out": f"torch.empty(({N}, {d}), dtype=float32), filled in place"},
            positions=positions_arange(N),
            layout="interleaved [s0 c0 s1 c1 ...]; odd dim: last column is a sine",
            compute="float64-then-round",
            array_notes={"pe": "the `out` tensor after the call (N, dim)"},
            notes=[
                "numpy float64 position_enc, np.sin/np.cos in float64, torch.FloatTensor rounds once",
                "transformers.models.xlm.modeling_xlm.create_sinusoidal_embeddings gives the identical table: "
                f"{same_xlm}",
            ],
            reference_check=check_close(t2np(out), ref, ang),
        )

    # ---- marian: MarianSinusoidalPositionalEmbedding.create_weight ----------------------------------------------
    for d in (16, 33):
        mod = MarianSinusoidalPositionalEmbedding(N, d)
        w = mod.create_weight()
        peg = PegasusSinusoidalPositionalEmbedding(N, d).create_weight()
        ref, ang = ref_sinusoid(range(N), d, freq_paper(d), "marian", "natural")
        c.add(
            f"marian_d{d}",
            {"pe": t2np(w)},
            group="sinusoid",
            preset="marian",
            framework=tf_,
            function="transformers.models.marian.modeling_marian.MarianSinusoidalPositionalEmbedding.create_weight",
            call=f"MarianSinusoidalPositionalEmbedding(num_positions={N}, embedding_dim={d}).create_weight()",
            params={"num_positions": N, "embedding_dim": d},
            positions=positions_arange(N),
            layout="[S | C] with paper frequencies; odd dim: ceil(d/2) sines then floor(d/2) cosines",
            compute="float64-then-round",
            array_notes={"pe": "create_weight() result (N, d); _init_weights copies it into the nn.Embedding weight"},
            notes=[
                "the method is `create_weight` in this transformers release "
                "(framework-conventions.md names `_init_weight`)",
                "positions used by forward: arange(cache_length, cache_length + seq_len), no offset",
                "PegasusSinusoidalPositionalEmbedding.create_weight gives the identical table: "
                f"{bool(torch.equal(w, peg))}",
            ],
            reference_check=check_close(t2np(w), ref, ang),
        )

    # ---- fairseq: M2M100 get_embedding with padding_idx=1, plus the module's forward positions ------------------
    pad = 1
    for d in (16, 33):
        num_emb = N + pad + 1  # M2M100SinusoidalPositionalEmbedding(num_positions=N) builds N + offset(2) rows
        table = M2M100SinusoidalPositionalEmbedding.get_embedding(num_emb, d, pad)
        mod = M2M100SinusoidalPositionalEmbedding(num_positions=N, embedding_dim=d, padding_idx=pad)
        tok = 5
        ids = torch.tensor([[tok] * N, [tok] * (N - 4) + [pad] * 4])
        fwd = mod(input_ids=ids)
        pos_ids = M2M100SinusoidalPositionalEmbedding.create_position_ids_from_input_ids(ids, pad, 0)
        s2t = Speech2TextSinusoidalPositionalEmbedding.get_embedding(num_emb, d, pad)
        fsmt = FSMTSinusoidal.get_embedding(num_emb, d, pad)
        ref, ang = ref_sinusoid(range(num_emb), d, freq_shifted(d, 1), "sin|cos", "zero", padding_row=pad)
        c.add(
            f"fairseq_m2m100_d{d}_pad1",
            {"table": t2np(table), "forward": t2np(fwd)},
            group="sinusoid",
            preset="fairseq",
            framework=tf_,
            function="transformers.models.m2m_100.modeling_m2m_100.M2M100SinusoidalPositionalEmbedding.get_embedding",
            call=(
                f"get_embedding(num_embeddings={num_emb}, embedding_dim={d}, padding_idx={pad}); "
                f"forward: M2M100SinusoidalPositionalEmbedding(num_positions={N}, embedding_dim={d}, padding_idx={pad})"
                f"(input_ids=ids)"
            ),
            params={
                "num_embeddings": num_emb,
                "embedding_dim": d,
                "padding_idx": pad,
                "module_num_positions": N,
                "module_offset": 2,
                "forward_input_ids": ids.tolist(),
                "forward_positions": pos_ids.tolist(),
            },
            positions=positions_arange(num_emb),
            layout=(
                "[S | C], fairseq frequencies exp(-k ln(1e4)/(h-1)); odd: trailing zero column; row padding_idx zero"
            ),
            compute="float32",
            array_notes={
                "table": "get_embedding rows 0..num_embeddings-1 (row = position); row padding_idx (1) is all zeros",
                "forward": (
                    "module forward for a batch of 2 (B, N, d): row b, column t = table[forward_positions[b][t]]; "
                    "sequence 2 is right-padded with 4 padding tokens, which take the zero row"
                ),
            },
            notes=[
                f"forward_positions (create_position_ids_from_input_ids) = {pos_ids.tolist()}: the first real token "
                "takes row padding_idx + 1 = 2, padding tokens take row padding_idx = 1",
                f"Speech2Text get_embedding identical: {bool(torch.equal(table, s2t))}; "
                f"FSMT SinusoidalPositionalEmbedding.get_embedding identical: {bool(torch.equal(table, fsmt))}",
                "c = math.log(10000) / (h - 1) is a Python float64; torch multiplies a float32 arange by it",
            ],
            reference_check=check_close(t2np(table), ref, ang),
        )
    # d=20: h-1 = 9, where float32 vs float64 division of ln(1e4) differs (framework-conventions.md section 0.3)
    d = 20
    table = M2M100SinusoidalPositionalEmbedding.get_embedding(N, d, None)
    ref, ang = ref_sinusoid(range(N), d, freq_shifted(d, 1), "sin|cos", "zero")
    c.add(
        "fairseq_m2m100_d20_nopad",
        {"table": t2np(table)},
        group="sinusoid",
        preset="fairseq",
        framework=tf_,
        function="transformers.models.m2m_100.modeling_m2m_100.M2M100SinusoidalPositionalEmbedding.get_embedding",
        call=f"get_embedding(num_embeddings={N}, embedding_dim={d}, padding_idx=None)",
        params={"num_embeddings": N, "embedding_dim": d, "padding_idx": None},
        positions=positions_arange(N),
        layout="[S | C]",
        compute="float32",
        array_notes={"table": "rows 0..N-1, no zeroed row"},
        notes=["d=20 (h-1=9) is one of the widths where tensor2tensor's float32 step constant differs by 1 ulp"],
        reference_check=check_close(t2np(table), ref, ang),
    )
    for d in (2, 3):
        c.add_raise(
            f"fairseq_m2m100_d{d}",
            function="transformers.models.m2m_100.modeling_m2m_100.M2M100SinusoidalPositionalEmbedding.get_embedding",
            call=f"get_embedding(num_embeddings={N}, embedding_dim={d}, padding_idx=1)",
            params={"num_embeddings": N, "embedding_dim": d, "padding_idx": 1},
            fn=lambda d=d: M2M100SinusoidalPositionalEmbedding.get_embedding(N, d, 1),
        )

    # ---- whisper: sinusoids(length, channels, max_timescale) ----------------------------------------------------
    for d, mts in ((16, 10000.0), (32, 1000.0)):
        pe = sinusoids(N, d) if mts == 10000.0 else sinusoids(N, d, max_timescale=mts)
        ref, ang = ref_sinusoid(range(N), d, freq_shifted(d, 1, mts), "sin|cos", "zero")
        c.add(
            f"whisper_d{d}" + ("" if mts == 10000.0 else f"_maxts{int(mts)}"),
            {"pe": t2np(pe)},
            group="sinusoid",
            preset="whisper",
            framework=tf_,
            function="transformers.models.whisper.modeling_whisper.sinusoids",
            call=f"sinusoids(length={N}, channels={d}" + ("" if mts == 10000.0 else f", max_timescale={mts}") + ")",
            params={"length": N, "channels": d, "max_timescale": mts},
            positions=positions_arange(N),
            layout="[S | C], exp(-k ln(max_timescale)/(h-1))",
            compute="float32",
            array_notes={"pe": "sinusoids() result (length, channels)"},
            notes=["HF Whisper stores this table as the encoder's embed_positions weight (checkpointed)"],
            reference_check=check_close(t2np(pe), ref, ang),
        )
    for d in (33, 2):
        c.add_raise(
            f"whisper_d{d}",
            function="transformers.models.whisper.modeling_whisper.sinusoids",
            call=f"sinusoids(length={N}, channels={d})",
            params={"length": N, "channels": d},
            fn=lambda d=d: sinusoids(N, d),
        )

    # ---- musicgen: get_embedding, [C | S] ---------------------------------------------------------------------
    for d in (16, 33):
        pe = MusicgenSinusoidalPositionalEmbedding.get_embedding(N, d)
        ref, ang = ref_sinusoid(range(N), d, freq_shifted(d, 1), "cos|sin", "zero")
        c.add(
            f"musicgen_d{d}",
            {"pe": t2np(pe)},
            group="sinusoid",
            preset="musicgen",
            framework=tf_,
            function="transformers.models.musicgen.modeling_musicgen.MusicgenSinusoidalPositionalEmbedding.get_embedding",
            call=f"get_embedding(num_embeddings={N}, embedding_dim={d})",
            params={"num_embeddings": N, "embedding_dim": d},
            positions=positions_arange(N),
            layout="[C | S] with fairseq frequencies; odd: trailing zero column; no padding row, no offset",
            compute="float32",
            array_notes={"pe": "get_embedding result (N, d); forward uses rows arange(seq_len) + cache_length"},
            reference_check=check_close(t2np(pe), ref, ang),
        )
    c.add_raise(
        "musicgen_d3",
        function="transformers.models.musicgen.modeling_musicgen.MusicgenSinusoidalPositionalEmbedding.get_embedding",
        call=f"get_embedding(num_embeddings={N}, embedding_dim=3)",
        params={"num_embeddings": N, "embedding_dim": 3},
        fn=lambda: MusicgenSinusoidalPositionalEmbedding.get_embedding(N, 3),
    )

    # ---- ddpm / openai-diffusion: diffusers get_timestep_embedding -------------------------------------------
    settings = {
        "ddpm": {"flip_sin_to_cos": False, "downscale_freq_shift": 1},
        "openai_diffusion": {"flip_sin_to_cos": True, "downscale_freq_shift": 0},
    }
    cases: list[tuple[str, list[float], int, float]] = [
        ("d16", [float(t) for t in range(N)], 16, 1.0),
        ("d33", [float(t) for t in range(N)], 33, 1.0),
        ("d16_fractional", [0.0, 0.5, 3.25, 999.0], 16, 1.0),
        ("d16_strided", [float(t) for t in range(0, 1000, 37)], 16, 1.0),
        ("d16_scale1000", [0.0, 0.001, 0.25, 0.5, 0.999, 1.0], 16, 1000.0),
        ("d3", [0.0, 1.0, 2.0, 3.0], 3, 1.0),
    ]
    for preset, kw in settings.items():
        for suffix, ts, d, scale in cases:
            t = torch.tensor(ts, dtype=torch.float32)
            call_kw = dict(kw)
            if scale != 1.0:
                call_kw["scale"] = scale
            emb = get_timestep_embedding(t, d, **call_kw)
            arr = t2np(emb)
            layout = "[C | S]" if kw["flip_sin_to_cos"] else "[S | C]"
            t32 = [float(np.float32(v)) for v in ts]  # the positions the function actually saw
            notes = [
                "exponent = -ln(max_period) * arange(h, float32) / (h - downscale_freq_shift); "
                "emb = t.float()[:, None] * exp(exponent); emb = scale * emb",
                "timesteps are passed as a float32 tensor; `positions` lists them as float32 values",
            ]
            name = f"{preset}_diffusers_{suffix}"
            call = (
                f"get_timestep_embedding(torch.tensor({ts}, dtype=torch.float32), embedding_dim={d}, "
                + ", ".join(f"{k}={v}" for k, v in call_kw.items())
                + ")"
            )
            params = {
                "timesteps": t32,
                "embedding_dim": d,
                "flip_sin_to_cos": kw["flip_sin_to_cos"],
                "downscale_freq_shift": kw["downscale_freq_shift"],
                "scale": scale,
                "max_period": 10000,
            }
            if not np.all(np.isfinite(arr)):
                notes.append(
                    "DEGENERATE: h - downscale_freq_shift = 0, so the exponent is 0/0; the framework returns NaN "
                    "(no exception). Kept so posenc can decide to refuse this width explicitly."
                )
                # NaN cannot go through the reference check; keep the raw array (np.nan is a valid float32)
                ref_check = {"skipped": "non-finite output"}
            else:
                ref_layout = "cos|sin" if kw["flip_sin_to_cos"] else "sin|cos"
                freq = freq_shifted(d, kw["downscale_freq_shift"])
                ref, ang = ref_sinusoid(t32, d, freq, ref_layout, "zero", scale=scale)
                ref_check = check_close(arr, ref, ang)
            c.add(
                name,
                {"pe": arr},
                group="sinusoid",
                preset=preset.replace("_", "-"),
                framework="diffusers",
                function="diffusers.models.embeddings.get_timestep_embedding",
                call=call,
                params=params,
                positions=positions_list(t32),
                layout=f"{layout}; odd: trailing zero column (F.pad)",
                compute="float32",
                array_notes={"pe": "get_timestep_embedding result (len(timesteps), embedding_dim)"},
                notes=notes,
                reference_check=ref_check,
            )


def make_rope(c: Collector) -> None:
    import torch
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
    from transformers.models.gptj.modeling_gptj import create_sinusoidal_positions
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    m = mp()
    rope_types_available = sorted(ROPE_INIT_FUNCTIONS)

    class Capture(logging.Handler):
        def __init__(self) -> None:
            super().__init__()
            self.messages: list[str] = []

        def emit(self, record: logging.LogRecord) -> None:
            self.messages.append(record.getMessage())

    def config(head_dim: int, max_pos: int, rope_parameters: dict[str, Any]) -> tuple[Any, list[str]]:
        capture = Capture()
        logger = logging.getLogger("transformers")
        logger.addHandler(capture)
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                cfg = llama_config(head_dim, max_pos, rope_parameters)
        finally:
            logger.removeHandler(capture)
        return cfg, [str(w.message) for w in caught] + capture.messages

    def ref_inv_freq(kind: str, hd: int, max_pos: int, rp: dict[str, Any], seq_len: int) -> tuple[list[Any], Any]:
        """inv_freq and attention scaling from framework-conventions.md section 10, in mpmath."""
        theta = m.mpf(rp["rope_theta"])
        half = hd // 2
        base_inv = [m.power(theta, -m.mpf(2 * k) / hd) for k in range(half)]
        if kind == "default":
            return base_inv, m.mpf(1)
        if kind == "linear":
            return [v / rp["factor"] for v in base_inv], m.mpf(1)
        if kind == "dynamic":
            L = max(seq_len, max_pos)
            fac = m.mpf(rp["factor"])
            b = theta * ((fac * L / max_pos) - (fac - 1)) ** (m.mpf(hd) / (hd - 2))
            return [m.power(b, -m.mpf(2 * k) / hd) for k in range(half)], m.mpf(1)
        if kind == "llama3":
            fac, lo, hi, L0 = (
                m.mpf(rp[k])
                for k in ("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings")
            )
            out = []
            for v in base_inv:
                wl = 2 * m.pi / v
                if wl < L0 / hi:
                    out.append(v)
                elif wl > L0 / lo:
                    out.append(v / fac)
                else:
                    s = (L0 / wl - lo) / (hi - lo)
                    out.append((1 - s) * v / fac + s * v)
            return out, m.mpf(1)
        if kind == "yarn":
            fac = m.mpf(rp["factor"])
            L0 = m.mpf(rp["original_max_position_embeddings"])
            bf, bs = m.mpf(rp.get("beta_fast", 32)), m.mpf(rp.get("beta_slow", 1))

            def corr(r: Any) -> Any:
                return hd * m.log(L0 / (r * 2 * m.pi)) / (2 * m.log(theta))

            low, high = corr(bf), corr(bs)
            if rp.get("truncate", True):
                low, high = m.floor(low), m.ceil(high)
            low, high = max(low, 0), min(high, hd - 1)
            if low == high:
                high += m.mpf("0.001")
            out = []
            for k, v in enumerate(base_inv):
                ramp = min(max((k - low) / (high - low), 0), 1)
                out.append((v / fac) * ramp + v * (1 - ramp))
            if "mscale" in rp and "mscale_all_dim" in rp:

                def ms(s: Any, mm: Any) -> Any:
                    return m.mpf(1) if s <= 1 else m.mpf("0.1") * mm * m.log(s) + 1

                att = ms(fac, m.mpf(rp["mscale"])) / ms(fac, m.mpf(rp["mscale_all_dim"]))
            else:
                att = m.mpf("0.1") * m.log(fac) + 1
            return out, att
        if kind == "longrope":
            L0 = rp["original_max_position_embeddings"]
            ext = rp["long_factor"] if seq_len > L0 else rp["short_factor"]
            fac = m.mpf(max_pos) / L0
            att = m.sqrt(1 + m.log(fac) / m.log(L0)) if fac > 1 else m.mpf(1)
            return [v / m.mpf(e) for v, e in zip(base_inv, ext, strict=True)], att
        raise ValueError(kind)

    long_16 = [1.0, 1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 12.0, 16.0, 20.0, 24.0]
    short_16 = [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0625, 1.125, 1.25, 1.375, 1.5, 1.75, 2.0]
    cases: list[tuple[str, str, int, int, int, dict[str, Any], str]] = [
        ("rope_default_hd32_n64", "default", 32, 64, 64, {"rope_theta": 10000.0}, "Llama 2 style"),
        (
            "rope_default_hd16_n24_theta1e6",
            "default",
            16,
            24,
            4096,
            {"rope_theta": 1000000.0},
            "Qwen/Mistral-style theta",
        ),
        (
            "rope_linear_hd32_n64",
            "linear",
            32,
            64,
            256,
            {"rope_theta": 10000.0, "factor": 4.0},
            "position interpolation",
        ),
        (
            "rope_dynamic_hd32_n64",
            "dynamic",
            32,
            64,
            32,
            {"rope_theta": 10000.0, "factor": 2.0},
            "seq_len 64 > max_position_embeddings 32: NTK base rescaled in forward",
        ),
        (
            "rope_dynamic_hd32_n24_inactive",
            "dynamic",
            32,
            24,
            32,
            {"rope_theta": 10000.0, "factor": 2.0},
            "seq_len 24 <= max_position_embeddings 32: scaling inactive (equals default)",
        ),
        (
            "rope_yarn_hd32_n64",
            "yarn",
            32,
            64,
            16384,
            {"rope_theta": 10000.0, "factor": 4.0, "original_max_position_embeddings": 4096},
            "YaRN defaults: beta_fast 32, beta_slow 1, truncate True, attention_factor 0.1 ln(factor) + 1",
        ),
        (
            "rope_yarn_hd32_n64_notruncate_mscale",
            "yarn",
            32,
            64,
            131072,
            {
                "rope_theta": 150000.0,
                "factor": 32.0,
                "original_max_position_embeddings": 4096,
                "beta_fast": 32.0,
                "beta_slow": 1.0,
                "truncate": False,
                "mscale": 1.0,
                "mscale_all_dim": 0.5,
            },
            "gpt-oss-like (truncate False, theta 150000, factor 32) plus DeepSeek-style mscale/mscale_all_dim",
        ),
        (
            "rope_llama3_hd32_n64",
            "llama3",
            32,
            64,
            131072,
            {
                "rope_theta": 500000.0,
                "factor": 8.0,
                "low_freq_factor": 1.0,
                "high_freq_factor": 4.0,
                "original_max_position_embeddings": 8192,
            },
            "Llama 3.1 parameters",
        ),
        (
            "rope_longrope_hd32_n64_long",
            "longrope",
            32,
            64,
            128,
            {
                "rope_theta": 10000.0,
                "short_factor": short_16,
                "long_factor": long_16,
                "original_max_position_embeddings": 32,
            },
            "Phi-3 style: factor = max_position_embeddings / original = 4; seq_len 64 > 32 -> long_factor",
        ),
        (
            "rope_longrope_hd32_n24_short",
            "longrope",
            32,
            24,
            128,
            {
                "rope_theta": 10000.0,
                "short_factor": short_16,
                "long_factor": long_16,
                "original_max_position_embeddings": 32,
            },
            "Phi-3 style: seq_len 24 <= 32 -> short_factor (attention scaling still from factor 4)",
        ),
    ]
    for name, kind, hd, seq, max_pos, extra, note in cases:
        rp = {"rope_type": kind, **extra}
        cfg, cfg_warnings = config(hd, max_pos, rp)
        mod = LlamaRotaryEmbedding(cfg)
        init_scaling = float(mod.attention_scaling)
        x = torch.zeros(1, seq, hd, dtype=torch.float32)
        pos = torch.arange(seq)[None]
        cos, sin = mod(x, pos)
        inv_used = t2np(mod.inv_freq)
        scaling = float(mod.attention_scaling)
        # the same cache with the attention scaling left out (posenc's flag to omit it)
        mod.attention_scaling = 1.0
        cos1, sin1 = mod(x, pos)
        mod.attention_scaling = scaling
        fn_name = (
            "transformers.models.llama.modeling_llama.LlamaRotaryEmbedding.compute_default_rope_parameters"
            if kind == "default"
            else f"transformers.modeling_rope_utils.ROPE_INIT_FUNCTIONS[{kind!r}]"
        )
        notes = [note, f"inv_freq/attention_scaling from {fn_name}; cos/sin from LlamaRotaryEmbedding.forward"]
        if kind in ("dynamic", "longrope"):
            fn = ROPE_INIT_FUNCTIONS[kind]
            inv_fn, _ = fn(cfg, None, seq_len=seq)
            same = bool(np.array_equal(t2np(inv_fn), inv_used))
            notes.append(
                f"forward runs dynamic_rope_update with seq_len = max(position_ids) + 1 = {seq} (a tensor); calling "
                f"ROPE_INIT_FUNCTIONS[{kind!r}](config, seq_len={seq}) directly (a Python int) gives an inv_freq "
                f"bit-identical to the buffer forward used: {same}"
            )
        if cfg_warnings:
            notes.append("config warnings/log messages: " + " | ".join(cfg_warnings))
        ref_inv, ref_att = ref_inv_freq(kind, hd, max_pos, rp, seq)
        ref_cos = [[ref_att * m.cos(p * v) for v in ref_inv * 2] for p in range(seq)]
        ref_sin = [[ref_att * m.sin(p * v) for v in ref_inv * 2] for p in range(seq)]
        ang = np.array([[float(p * v) for v in ref_inv * 2] for p in range(seq)])
        ref_check = {
            "inv_freq": check_relative(inv_used, ref_inv),
            "attention_scaling_ref": f(ref_att),
            "attention_scaling_abs_diff": f(abs(scaling - float(ref_att))),
            "cos": check_close(t2np(cos[0]), ref_cos, ang, scale=float(ref_att)),
            "sin": check_close(t2np(sin[0]), ref_sin, ang, scale=float(ref_att)),
        }
        params: dict[str, Any] = {
            "rope_type": kind,
            "head_dim": hd,
            "seq_len": seq,
            "max_position_embeddings": max_pos,
            "rope_parameters": rp,
            "config": "LlamaConfig(vocab_size=32, hidden_size=2*head_dim, intermediate_size=8, num_hidden_layers=1, "
            "num_attention_heads=2, num_key_value_heads=2, head_dim, max_position_embeddings, rope_parameters)",
            "attention_scaling": scaling,
            "attention_scaling_at_init": init_scaling,
            "position_ids": f"torch.arange({seq})[None]",
            "x": f"torch.zeros(1, {seq}, {hd}, dtype=float32) (only its dtype/device are used)",
        }
        arrays = {
            "cos": t2np(cos[0]),
            "sin": t2np(sin[0]),
            "inv_freq": inv_used,
            "attention_scaling": np.array(scaling, dtype=np.float64),
        }
        array_notes = {
            "cos": "forward()[0][0]: cos(pos * inv_freq) * attention_scaling, (seq_len, head_dim)",
            "sin": "forward()[1][0]: sin(pos * inv_freq) * attention_scaling, (seq_len, head_dim)",
            "inv_freq": "the module's inv_freq buffer after forward (head_dim/2,)",
            "attention_scaling": "float64 scalar: module.attention_scaling after forward",
        }
        if scaling != 1.0:
            arrays["cos_unscaled"] = t2np(cos1[0])
            arrays["sin_unscaled"] = t2np(sin1[0])
            array_notes["cos_unscaled"] = (
                "forward with module.attention_scaling set to 1.0 (attention scaling left out)"
            )
            array_notes["sin_unscaled"] = (
                "forward with module.attention_scaling set to 1.0 (attention scaling left out)"
            )
        else:
            notes.append("attention_scaling is 1.0: the cache with the scaling left out is the same as cos/sin")
        c.add(
            name,
            arrays,
            group="rope",
            framework="transformers",
            function="transformers.models.llama.modeling_llama.LlamaRotaryEmbedding.forward",
            call=f"LlamaRotaryEmbedding(config)(x, position_ids=torch.arange({seq})[None])",
            params=params,
            positions=positions_arange(seq),
            layout="half (rotate_half / GPT-NeoX): emb = cat(freqs, freqs), column j uses inv_freq[j % (head_dim/2)]",
            compute="float32",
            array_notes=array_notes,
            notes=notes,
            reference_check=ref_check,
        )

    # ---- GPT-J: interleaved (rotate_every_two) layout ------------------------------------------------------------
    num_pos, dim = 64, 32
    table = create_sinusoidal_positions(num_pos, dim)
    ref_inv = [m.power(10000, -m.mpf(2 * k) / dim) for k in range(dim // 2)]
    ref_sc = [[m.sin(p * v) for v in ref_inv] + [m.cos(p * v) for v in ref_inv] for p in range(num_pos)]
    ang = np.array([[float(p * v) for v in ref_inv * 2] for p in range(num_pos)])
    c.add(
        "rope_gptj_interleaved_hd32_n64",
        {"table": t2np(table)},
        group="rope",
        framework="transformers",
        function="transformers.models.gptj.modeling_gptj.create_sinusoidal_positions",
        call=f"create_sinusoidal_positions(num_pos={num_pos}, dim={dim})",
        params={"num_pos": num_pos, "dim": dim, "base": 10000},
        positions=positions_arange(num_pos),
        layout=(
            "table: [sin | cos] of width dim. The interleaved caches GPT-J applies (llama.cpp NORMAL mode) are "
            "sin = repeat_interleave(table[:, :dim/2], 2, -1), cos = repeat_interleave(table[:, dim/2:], 2, -1): "
            "column j uses inv_freq[j // 2] (modeling_gptj.apply_rotary_pos_emb)"
        ),
        compute="float32",
        array_notes={"table": "create_sinusoidal_positions result (num_pos, dim) = [sin(p*inv) | cos(p*inv)]"},
        notes=[
            "inv_freq = 1.0 / (10000 ** (arange(0, dim, 2, int64) / dim)) in float32 (int64 / int -> float32)",
            "GPTJRotaryEmbedding.forward indexes this table with position_ids and splits it into (sin, cos)",
            "no attention scaling and no rope scaling types in GPT-J",
        ],
        reference_check=check_close(t2np(table), ref_sc, ang),
    )
    c.goldens["rope_default_hd32_n64"]["notes"].append(
        f"ROPE_INIT_FUNCTIONS keys in this release: {rope_types_available} ('default' is not among them: it is the "
        "model's own compute_default_rope_parameters)"
    )


def make_alibi(c: Collector) -> None:
    import torch
    from transformers.models.bloom.modeling_bloom import _get_alibi_slopes, build_alibi_tensor

    m = mp()
    seq = 16

    def ref_slopes(n: int) -> list[Any]:
        p = 2 ** int(math.floor(math.log2(n)))
        start = m.power(2, -m.mpf(8) / p)
        s = [start ** (i + 1) for i in range(p)]
        if p != n:
            start2 = m.power(2, -m.mpf(8) / (2 * p))
            s += [start2 ** (2 * j + 1) for j in range(n - p)]
        return s

    for heads in (6, 12, 16, 40):
        mask = torch.ones(1, seq, dtype=torch.int64)
        alibi = build_alibi_tensor(mask, heads, torch.float32)
        returned_shape = list(alibi.shape)
        bias = alibi.reshape(heads, seq)
        slopes = _get_alibi_slopes(heads, torch.device("cpu"))
        alibi_bf16 = build_alibi_tensor(mask, heads, torch.bfloat16)
        left_mask = torch.tensor([[0, 0, 0] + [1] * (seq - 3)], dtype=torch.int64)
        alibi_left = build_alibi_tensor(left_mask, heads, torch.float32).reshape(heads, seq)
        rs = ref_slopes(heads)
        rbias = [[s * p for p in range(seq)] for s in rs]
        c.add(
            f"alibi_bloom_h{heads}_n{seq}",
            {
                "slopes": t2np(slopes),
                "bias": t2np(bias),
                "bias_bf16": t2np(alibi_bf16.reshape(heads, seq).float()),
                "bias_left_padded": t2np(alibi_left),
            },
            group="alibi",
            framework="transformers",
            function="transformers.models.bloom.modeling_bloom.build_alibi_tensor",
            call=f"build_alibi_tensor(attention_mask=torch.ones(1, {seq}, dtype=torch.int64), num_heads={heads}, "
            "dtype=torch.float32)",
            params={
                "num_heads": heads,
                "seq_len": seq,
                "attention_mask": f"torch.ones(1, {seq}, dtype=int64)",
                "dtype": "float32",
                "returned_shape": returned_shape,
                "reshape": f"alibi.reshape({heads}, {seq}) (batch_size 1: (B*H, 1, L) -> (H, L))",
                "slopes_function": "transformers.models.bloom.modeling_bloom._get_alibi_slopes(num_heads, device)",
                "left_padded_mask": left_mask.tolist(),
            },
            positions=positions_arange(seq),
            layout="bias[h, j] = slopes[h] * j (key position j; same for every query: softmax shift invariance)",
            compute="float32",
            array_notes={
                "slopes": "_get_alibi_slopes(num_heads) (H,), float32 torch.pow(base, arange(1, p+1)) (+ odd powers "
                "of the 2p base for the remaining heads)",
                "bias": f"build_alibi_tensor(ones mask, H, float32) reshaped from {returned_shape} to (H, L)",
                "bias_bf16": "the same call with dtype=torch.bfloat16 (BLOOM's dtype), widened to float32 exactly",
                "bias_left_padded": "mask [0,0,0,1,...]: positions (cumsum(mask)-1)*mask -> 0,0,0,0,1,2,... ",
            },
            notes=[
                "positive slope * position; BLOOM adds it to the scores, the causal mask supplies -inf",
                "power-of-two head counts: slopes 2^(-8/H * (i+1)); otherwise p = 2^floor(log2 H) slopes plus the odd "
                "powers of 2^(-8/(2p)) for the other H - p heads",
            ],
            reference_check={
                "slopes": check_relative(t2np(slopes), rs),
                "bias": check_relative(t2np(bias).reshape(-1), [v for row in rbias for v in row]),
            },
        )


def make_sincos2d(c: Collector) -> None:
    import torch
    from diffusers.models.embeddings import get_2d_sincos_pos_embed, get_2d_sincos_pos_embed_from_grid
    from transformers import ViTMAEConfig
    from transformers.models.vit_mae.modeling_vit_mae import ViTMAEEmbeddings, build_2d_sinusoidal_position_embedding

    m = mp()
    D = 16

    def ref_mae(h: int, w: int, d: int, cls: bool) -> tuple[list[list[Any]], np.ndarray]:
        """MAE layout: row = y*W + x; [sin(x w) | cos(x w) | sin(y w) | cos(y w)], w_k = 10000^(-k/(d/4))."""
        q = d // 4
        om = [m.power(10000, -m.mpf(k) / q) for k in range(q)]
        rows, angs = [], []
        if cls:
            rows.append([m.mpf(0)] * d)
            angs.append([0.0] * d)
        for y in range(h):
            for x in range(w):
                ax = [x * v for v in om]
                ay = [y * v for v in om]
                rows.append(
                    [m.sin(a) for a in ax] + [m.cos(a) for a in ax] + [m.sin(a) for a in ay] + [m.cos(a) for a in ay]
                )
                angs.append([float(a) for a in ax * 2 + ay * 2])
        return rows, np.array(angs)

    # transformers builder: raw output ([sin_h|cos_h|sin_w|cos_w], H-outer) and the ViTMAE half-swapped layout
    for h, w in ((4, 4), (3, 5)):
        for cls in (False, True):
            pe32 = build_2d_sinusoidal_position_embedding(h, w, embed_dim=D, cls_token=cls, dtype=torch.float32)
            pe64 = build_2d_sinusoidal_position_embedding(h, w, embed_dim=D, cls_token=cls, dtype=torch.float64)
            half = D // 2
            mae32 = torch.cat([pe32[..., half:], pe32[..., :half]], dim=-1)
            mae64 = torch.cat([pe64[..., half:], pe64[..., :half]], dim=-1)
            ref, ang = ref_mae(h, w, D, cls)
            c.add(
                f"sincos2d_hf_{h}x{w}_d{D}" + ("_cls" if cls else ""),
                {"pe_mae": t2np(mae32), "pe_mae_f64": t2np(mae64), "builder_raw": t2np(pe32)},
                group="sincos2d",
                framework="transformers",
                function="transformers.models.vit_mae.modeling_vit_mae.build_2d_sinusoidal_position_embedding",
                call=f"build_2d_sinusoidal_position_embedding(height={h}, width={w}, embed_dim={D}, cls_token={cls}, "
                "dtype=torch.float32 / torch.float64)",
                params={
                    "grid_height": h,
                    "grid_width": w,
                    "embed_dim": D,
                    "temperature": 10000.0,
                    "cls_token": cls,
                },
                positions={"kind": "grid", "row_order": "row-major: row = y * width + x (after the cls row)"},
                layout=(
                    "pe_mae: MAE's [sin(x) | cos(x) | sin(y) | cos(y)] (x = column, y = row), each block D/4 wide, "
                    "omega_k = 10000^(-k/(D/4)); cls row all zeros"
                ),
                compute="float64-then-round",
                array_notes={
                    "pe_mae": "float32 builder output with its halves swapped, cat(pe[:, D/2:], pe[:, :D/2]), exactly "
                    "as ViTMAEEmbeddings.initialize_weights does: this is MAE's table",
                    "pe_mae_f64": "the same from the builder's dtype=torch.float64 output (no float32 rounding)",
                    "builder_raw": "the builder's own float32 output: [sin(y) | cos(y) | sin(x) | cos(x)]",
                },
                notes=[
                    "transformers v5 replaced ViTMAE's numpy get_2d_sincos_pos_embed with this torch builder; it "
                    "computes in float64 (torch) and rounds once (.to(dtype))",
                    "ViTMAEEmbeddings/ViTMAEDecoder only ever call it for square grids; the 3x5 case uses the builder "
                    "directly with the same half swap",
                ],
                reference_check=check_close(t2np(mae32), ref, ang),
            )
    # the model's own table: ViTMAEEmbeddings.initialize_weights on a 4x4 patch grid
    cfg = ViTMAEConfig(hidden_size=D, image_size=16, patch_size=4, num_channels=3)
    emb = ViTMAEEmbeddings(cfg)
    with torch.no_grad():
        emb.position_embeddings.zero_()
    emb.initialize_weights()
    table = t2np(emb.position_embeddings[0])
    ref, ang = ref_mae(4, 4, D, True)
    c.add(
        "sincos2d_vitmae_embeddings_4x4_d16_cls",
        {"pe": table},
        group="sincos2d",
        framework="transformers",
        function="transformers.models.vit_mae.modeling_vit_mae.ViTMAEEmbeddings.initialize_weights",
        call="ViTMAEEmbeddings(ViTMAEConfig(hidden_size=16, image_size=16, patch_size=4, num_channels=3))"
        ".initialize_weights(); position_embeddings[0]",
        params={
            "grid_height": 4,
            "grid_width": 4,
            "embed_dim": D,
            "cls_token": True,
            "image_size": 16,
            "patch_size": 4,
        },
        positions={"kind": "grid", "row_order": "row 0 = cls (zeros); row 1 + y*4 + x"},
        layout="[sin(x) | cos(x) | sin(y) | cos(y)] (MAE)",
        compute="float64-then-round",
        array_notes={"pe": "the position_embeddings parameter (1 + 16, 16) after initialize_weights"},
        notes=["the table a ViT-MAE model is initialised with (and that pretrained checkpoints carry)"],
        reference_check=check_close(table, ref, ang),
    )

    # diffusers: square grids through get_2d_sincos_pos_embed (base_size = grid, so positions are 0..gs-1),
    # the non-square grid through get_2d_sincos_pos_embed_from_grid with MAE's integer grid
    gs = 4
    for cls in (False, True):
        kw: dict[str, Any] = {"base_size": gs, "interpolation_scale": 1.0}
        if cls:
            kw.update(cls_token=True, extra_tokens=1)
        pe = get_2d_sincos_pos_embed(D, gs, **kw)
        ref, ang = ref_mae(gs, gs, D, cls)
        hf64 = build_2d_sinusoidal_position_embedding(gs, gs, D, cls_token=cls, dtype=torch.float64)
        hf64 = torch.cat([hf64[..., D // 2 :], hf64[..., : D // 2]], dim=-1)
        c.add(
            f"sincos2d_diffusers_{gs}x{gs}_d{D}" + ("_cls" if cls else ""),
            {"pe_f64": t2np(pe), "pe": t2np(pe.to(torch.float32))},
            group="sincos2d",
            framework="diffusers",
            function="diffusers.models.embeddings.get_2d_sincos_pos_embed",
            call=f"get_2d_sincos_pos_embed(embed_dim={D}, grid_size={gs}, "
            + ", ".join(f"{k}={v}" for k, v in kw.items())
            + ")",
            params={
                "embed_dim": D,
                "grid_size": gs,
                "cls_token": cls,
                "extra_tokens": 1 if cls else 0,
                "base_size": gs,
                "interpolation_scale": 1.0,
            },
            positions={"kind": "grid", "row_order": "row-major: row index = y * W + x (after the cls row)"},
            layout="[sin(x) | cos(x) | sin(y) | cos(y)] (MAE)",
            compute="float64-then-round",
            array_notes={
                "pe_f64": "the float64 tensor the function returns",
                "pe": "pe_f64.to(torch.float32) (one rounding, as a model's float32 parameter would hold it)",
            },
            notes=[
                "diffusers computes in torch float64 (float32 on MPS) and returns float64",
                "base_size must equal grid_size for MAE positions: grid = arange(gs) / (gs / base_size) / "
                "interpolation_scale; the default base_size=16 would scale the positions",
                "cls_token=True alone adds NO row: the zero rows come from extra_tokens (cls_token and "
                "extra_tokens > 0)",
                f"bit-identical in float64 to transformers' builder (halves swapped): {bool(torch.equal(pe, hf64))}",
            ],
            reference_check=check_close(t2np(pe), ref, ang),
        )
    h, w = 3, 5
    gw, gh = torch.meshgrid(torch.arange(w, dtype=torch.float32), torch.arange(h, dtype=torch.float32), indexing="xy")
    grid = torch.stack([gw, gh], dim=0).reshape(2, 1, h, w)
    pe = get_2d_sincos_pos_embed_from_grid(D, grid)
    ref, ang = ref_mae(h, w, D, False)
    c.add(
        f"sincos2d_diffusers_fromgrid_{h}x{w}_d{D}",
        {"pe_f64": t2np(pe), "pe": t2np(pe.to(torch.float32))},
        group="sincos2d",
        framework="diffusers",
        function="diffusers.models.embeddings.get_2d_sincos_pos_embed_from_grid",
        call=f"get_2d_sincos_pos_embed_from_grid(embed_dim={D}, grid) with grid = stack(meshgrid(arange({w}), "
        f"arange({h}), indexing='xy')).reshape(2, 1, {h}, {w}) (float32)",
        params={"embed_dim": D, "grid_height": h, "grid_width": w, "cls_token": False},
        positions={"kind": "grid", "row_order": "row-major: row index = y * W + x; grid[0] = x (column), grid[1] = y"},
        layout="[sin(x) | cos(x) | sin(y) | cos(y)] (MAE)",
        compute="float64-then-round",
        array_notes={"pe_f64": "the float64 tensor returned", "pe": "pe_f64.to(torch.float32)"},
        notes=[
            "get_2d_sincos_pos_embed itself cannot give MAE positions on a non-square grid: it scales each axis by "
            "base_size / its own length, so the integer grid is passed to the _from_grid function instead",
        ],
        reference_check=check_close(t2np(pe), ref, ang),
    )
    c.add_raise(
        "sincos2d_hf_d18",
        function="transformers.models.vit_mae.modeling_vit_mae.build_2d_sinusoidal_position_embedding",
        call="build_2d_sinusoidal_position_embedding(4, 4, embed_dim=18)",
        params={"grid_height": 4, "grid_width": 4, "embed_dim": 18},
        fn=lambda: build_2d_sinusoidal_position_embedding(4, 4, embed_dim=18),
    )
    c.add_raise(
        "sincos2d_diffusers_d18",
        function="diffusers.models.embeddings.get_2d_sincos_pos_embed",
        call="get_2d_sincos_pos_embed(18, 4, base_size=4)",
        params={"embed_dim": 18, "grid_size": 4, "base_size": 4},
        fn=lambda: get_2d_sincos_pos_embed(18, 4, base_size=4),
    )
    cls_alone = get_2d_sincos_pos_embed(D, gs, cls_token=True, base_size=gs)
    c.goldens[f"sincos2d_diffusers_{gs}x{gs}_d{D}_cls"]["notes"].append(
        f"observed: get_2d_sincos_pos_embed({D}, {gs}, cls_token=True, base_size={gs}) returns shape "
        f"{list(cls_alone.shape)} (no cls row)"
    )


FAIRSEQ_NOT_MADE = (
    "fairseq.modules.sinusoidal_positional_embedding.SinusoidalPositionalEmbedding.get_embedding was not called: "
    "fairseq 0.12.2 (the latest release) builds from source on Python 3.11 with torch 2.13.0 (pip install --no-deps), "
    "but `import fairseq` fails: ValueError: mutable default <class 'fairseq.dataclass.configs.CommonConfig'> for "
    "field common is not allowed: use default_factory (its dataclass configs predate Python 3.11); a plain "
    "`pip install fairseq` would also pull torchaudio 2.11.1, i.e. another torch. The fairseq preset is pinned by "
    "HF's M2M100/Speech2Text/FSMT get_embedding, which framework-conventions.md section 3 documents as the fairseq "
    "formula verbatim"
)


def run_torch(c: Collector) -> None:
    import torch

    torch.set_num_threads(1)  # torch CPU kernels may round differently with other thread splits
    torch.set_default_dtype(torch.float32)
    torch.manual_seed(0)  # nothing here is random; set anyway so module construction is reproducible
    make_sinusoid_presets(c)
    make_rope(c)
    make_alibi(c)
    make_sincos2d(c)
    c.skip("fairseq", FAIRSEQ_NOT_MADE)
    c.skip(
        "tensor2tensor",
        "get_timing_signal_1d needs TensorFlow: made in the tensorflow environment (tensorflow-cpu 2.15.1 + "
        "tensor2tensor); see README.md",
        superseded_by_preset="tensor2tensor",
    )


# --------------------------------------------------------------------------------------------------------------
# tensorflow environment: tensor2tensor get_timing_signal_1d
# --------------------------------------------------------------------------------------------------------------


def tf_versions() -> dict[str, Any]:
    import tensor2tensor
    import tensorflow as tf

    try:
        from importlib.metadata import version

        t2t_version = version("tensor2tensor")
    except Exception:  # noqa: BLE001
        t2t_version = getattr(tensor2tensor, "__version__", "unknown")
    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "tensorflow": tf.__version__,
        "tensor2tensor": t2t_version,
        "mpmath": mp().__version__,
        "machine": platform.machine(),
    }


def run_tensorflow(c: Collector) -> None:
    import tensorflow as tf
    from tensor2tensor.layers.common_attention import get_timing_signal_1d

    tf.random.set_seed(0)
    cases = [
        ("tensor2tensor_d16", N, 16, {}),
        ("tensor2tensor_d33", N, 33, {}),
        ("tensor2tensor_d20", N, 20, {}),
        ("tensor2tensor_d3", N, 3, {}),
        ("tensor2tensor_d16_start5_mints2", N, 16, {"min_timescale": 2.0, "start_index": 5}),
        ("tensor2tensor_d16_maxts1000", N, 16, {"max_timescale": 1000.0}),
    ]
    m = mp()
    for name, length, ch, kw in cases:
        sig = get_timing_signal_1d(length, ch, **kw)
        if tf.executing_eagerly():
            arr = np.asarray(sig.numpy())
        else:  # tensor2tensor may switch TF to graph mode on import
            with tf.compat.v1.Session() as sess:
                arr = np.asarray(sess.run(sig))
        if arr.dtype != np.float32:
            raise TypeError(f"get_timing_signal_1d returned {arr.dtype}, expected float32")
        returned_shape = list(arr.shape)
        arr = arr.reshape(length, ch)
        mn, mx, start = kw.get("min_timescale", 1.0), kw.get("max_timescale", 1.0e4), kw.get("start_index", 0)
        h = ch // 2
        denom = max(h - 1, 1)

        def freq(k: int, mn: float = mn, mx: float = mx, denom: int = denom) -> Any:
            return m.mpf(mn) * m.exp(-m.mpf(k) * m.log(m.mpf(mx) / m.mpf(mn)) / denom)

        ref, ang = ref_sinusoid([start + p for p in range(length)], ch, freq, "sin|cos", "zero")
        c.add(
            name,
            {"pe": arr},
            group="sinusoid",
            preset="tensor2tensor",
            framework="tensor2tensor",
            function="tensor2tensor.layers.common_attention.get_timing_signal_1d",
            call=f"get_timing_signal_1d(length={length}, channels={ch}"
            + "".join(f", {k}={v}" for k, v in kw.items())
            + ")",
            params={
                "length": length,
                "channels": ch,
                "min_timescale": mn,
                "max_timescale": mx,
                "start_index": start,
                "returned_shape": returned_shape,
                "reshape": f"[1, {length}, {ch}] -> ({length}, {ch})",
            },
            positions=positions_arange(length, start=start),
            layout="[S | C]; inv_timescales = min_timescale * exp(k * -log(max/min) / max(h - 1, 1)); "
            "odd: trailing zero column",
            compute="float32",
            array_notes={"pe": "get_timing_signal_1d(...)[0] (length, channels)"},
            notes=[
                "log_timescale_increment is divided in float32 (python float / tf.float32 tensor)",
                "min_timescale multiplies the frequencies (tensor2tensor#1923), it is not a divisor of the timescale",
            ],
            reference_check=check_close(arr, ref, ang),
        )


# --------------------------------------------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------------------------------------------


ENVIRONMENTS: dict[str, tuple[Callable[[], dict[str, Any]], Callable[[Collector], None]]] = {
    "torch": (torch_versions, run_torch),
    "tensorflow": (tf_versions, run_tensorflow),
}


def detect_environment() -> str:
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError:
        pass
    else:
        return "torch"
    try:
        import tensor2tensor  # noqa: F401
        import tensorflow  # noqa: F401
    except ImportError:
        pass
    else:
        return "tensorflow"
    raise SystemExit(
        "neither torch+transformers nor tensorflow+tensor2tensor is importable: run this script in one of the "
        "throwaway venvs described in tests/goldens/README.md"
    )


def load_manifest() -> dict[str, Any]:
    if MANIFEST.exists():
        return json.loads(MANIFEST.read_text(encoding="utf-8"))
    return {}


def merge(old: dict[str, Any], c: Collector, versions: dict[str, Any]) -> dict[str, Any]:
    def keep_other(section: str) -> dict[str, Any]:
        return {k: v for k, v in old.get(section, {}).items() if v.get("environment") != c.environment}

    goldens = keep_other("goldens") | c.goldens
    raises = keep_other("raises") | c.raises
    not_made = keep_other("not_made") | c.not_made
    # an entry made by another environment supersedes a "not made here" note
    made_presets = {g["preset"] for g in goldens.values() if "preset" in g}
    not_made = {
        k: v for k, v in not_made.items() if k not in goldens and v.get("superseded_by_preset") not in made_presets
    }
    environments = dict(old.get("environments", {}))
    environments[c.environment] = versions
    return {
        "description": (
            "Golden positional tables made by running the real framework functions; see README.md. Each golden's "
            "`compute` says how the framework evaluates it and `agreement` which rule applies."
        ),
        "generator": "tests/goldens/make_goldens.py",
        "format_version": 1,
        "agreement_rules": AGREEMENT_RULE,
        "float32_bound": "2**-22 * (1 + |angle|)",
        "environments": environments,
        "goldens": goldens,
        "raises": raises,
        "not_made": not_made,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--check", action="store_true", help="recompute and compare with the files on disk; write nothing"
    )
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

    env = detect_environment()
    versions_fn, run = ENVIRONMENTS[env]
    c = Collector(env)
    run(c)
    versions = versions_fn()

    if args.check:
        bad = []
        for name, data in sorted(c.files.items()):
            path = HERE / f"{name}.npz"
            if not path.exists() or path.read_bytes() != data:
                bad.append(name)
        old = load_manifest()
        for name, entry in c.goldens.items():
            if old.get("goldens", {}).get(name) != json.loads(canonical_json(entry)):
                bad.append(f"{name} (manifest entry)")
        print(f"[{env}] checked {len(c.files)} goldens: " + ("all identical" if not bad else f"DIFFERENT: {bad}"))
        return 1 if bad else 0

    old = load_manifest()
    stale = [k for k, v in old.get("goldens", {}).items() if v.get("environment") == env and k not in c.goldens]
    for name in stale:
        (HERE / f"{name}.npz").unlink(missing_ok=True)
    for name, data in sorted(c.files.items()):
        path = HERE / f"{name}.npz"
        path.write_bytes(data)
        shapes = ", ".join(f"{k}{tuple(v['shape'])}:{v['dtype']}" for k, v in c.goldens[name]["arrays"].items())
        print(f"wrote {path.relative_to(HERE.parent.parent)} ({len(data)} bytes): {shapes}")
    manifest = merge(old, c, versions)
    MANIFEST.write_text(canonical_json(manifest), encoding="utf-8")
    for name, r in sorted(c.raises.items()):
        print(f"raises {name}: {r['call']} -> {r['error_type']}: {r['message']}")
    for name, r in sorted(c.not_made.items()):
        print(f"not made here {name}: {r['reason']}")
    if stale:
        print(f"removed stale goldens: {stale}")
    total = sum(p.stat().st_size for p in HERE.iterdir() if p.is_file())
    print(
        f"wrote {MANIFEST.relative_to(HERE.parent.parent)}; environment {env}: {json.dumps(versions, sort_keys=True)}"
    )
    print(f"{len(manifest['goldens'])} goldens in the manifest; directory total {total} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
