#!/usr/bin/env python3
"""Make the checkpoint-like fixtures of ``posenc identify`` by calling the real framework functions.

NOT part of posenc and never imported by the test suite: it runs by hand in a throwaway venv with torch,
transformers, diffusers, h5py and safetensors (README.md beside this file has the commands). It contains no
framework code: every positional table comes from the installed framework's own constructor or function, at
realistic shapes, and is stored like a checkpoint stores it (.safetensors via ``safetensors.torch.save_file``,
.npz, .h5 via h5py) under a realistic key, beside one or more unrelated tensors (random word embeddings with a
fixed seed, layer-norm ones, biases), so identify has to pick the right tensor.

For every table the manifest records the posenc command that regenerates it and which array of posenc's output
it is. ``--posenc PROG`` (default: ``posenc`` on PATH) runs each of those commands and records the measured error
against the agreement rule of ../manifest.json. ``--check`` rebuilds every file in memory and compares it with the
bytes on disk (exit 1 on a difference) without writing.

tensor2tensor (TensorFlow) is not installed here: its tables are the arrays of ../tensor2tensor_*.npz, re-stored.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import math
import os
import platform
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
GOLDENS = HERE.parent
MANIFEST = HERE / "manifest.json"
sys.path.insert(0, str(GOLDENS))
from make_goldens import canonical_json, llama_config, npz_bytes, t2np  # noqa: E402  (../make_goldens.py's helpers)

SEED = 20240518  # every random (unrelated / learned) tensor comes from this seed
F32 = 2.0**-22


class Fixtures:
    """Files (container -> {key: array}) and one manifest entry per stored tensor."""

    def __init__(self) -> None:
        self.files: dict[str, dict[str, np.ndarray]] = {}
        self.file_notes: dict[str, str] = {}
        self.entries: dict[str, dict[str, dict[str, Any]]] = {}
        self.bfloat16: set[tuple[str, str]] = set()  # (file, key) stored as bfloat16 (the array holds its bits)

    def file(self, name: str, note: str) -> None:
        self.files[name] = {}
        self.entries[name] = {}
        self.file_notes[name] = note

    def table(self, fname: str, key: str, arr: Any, *, angles: np.ndarray | None = None, **entry: Any) -> None:
        if not isinstance(arr, np.ndarray):  # a torch tensor in a type numpy lacks: bfloat16, kept as its bits
            import torch

            assert arr.dtype == torch.bfloat16, arr.dtype
            self.bfloat16.add((fname, key))
            entry.update(shape=list(arr.shape), dtype="bfloat16")
            arr = t2np(arr.contiguous().view(torch.int16)).view(np.uint16)
        else:
            entry.update(shape=list(arr.shape), dtype=str(arr.dtype))
        arr = np.ascontiguousarray(arr)
        self.files[fname][key] = arr
        if angles is not None:
            entry["_angles"] = angles
        self.entries[fname][key] = entry

    def bfloat16_keys(self, fname: str) -> frozenset[str]:
        return frozenset(k for f, k in self.bfloat16 if f == fname)

    def unrelated(self, fname: str, key: str, arr: np.ndarray, what: str) -> None:
        self.table(fname, key, arr.astype(np.float32), role="unrelated", what=what, expected=None)


# --------------------------------------------------------------------------------------------------------------
# float64 angle matrices, only for the float32 agreement bound |err| <= 2^-22 (1 + |angle|)
# --------------------------------------------------------------------------------------------------------------


def angles_1d(positions: np.ndarray, d: int, freqs: np.ndarray, layout: str) -> np.ndarray:
    h = d // 2
    cols = np.zeros(d)
    if layout == "interleaved":
        ks = np.arange(d) // 2
        fr = freqs[ks]
    elif layout == "marian":
        ns = (d + 1) // 2
        ks = np.where(np.arange(d) < ns, np.arange(d), np.arange(d) - ns)
        fr = freqs[ks]
    else:  # [S | C] or [C | S], trailing zero column when odd
        fr = cols.copy()
        fr[: 2 * h] = freqs[np.arange(2 * h) % h]
    return np.abs(np.asarray(positions, np.float64)[:, None] * fr[None, :])


def paper_freqs(d: int, base: float = 10000.0) -> np.ndarray:
    return np.power(base, -2.0 * np.arange((d + 1) // 2) / d)


def shift_freqs(d: int, shift: float, base: float = 10000.0) -> np.ndarray:
    return np.exp(-np.arange(d // 2) * math.log(base) / (d // 2 - shift))


# --------------------------------------------------------------------------------------------------------------
# the tables
# --------------------------------------------------------------------------------------------------------------


def make_sinusoids(fx: Fixtures, rng: np.random.Generator) -> None:
    import torch
    from diffusers import DDIMScheduler
    from diffusers.models.embeddings import get_timestep_embedding
    from transformers.models.distilbert.modeling_distilbert import create_sinusoidal_embeddings
    from transformers.models.m2m_100.modeling_m2m_100 import M2M100SinusoidalPositionalEmbedding
    from transformers.models.marian.modeling_marian import MarianSinusoidalPositionalEmbedding
    from transformers.models.whisper.modeling_whisper import sinusoids

    # ---- DistilBERT base: 512 x 768, float64 then rounded -------------------------------------------------------
    n, d = 512, 768
    out = torch.empty(n, d, dtype=torch.float32)
    create_sinusoidal_embeddings(n_pos=n, dim=d, out=out)
    fx.file("distilbert.safetensors", "DistilBERT-base (sinusoidal_pos_embds=True) embeddings, vocab cut to 16 rows")
    fx.table(
        "distilbert.safetensors",
        "distilbert.embeddings.position_embeddings.weight",
        t2np(out),
        role="positional",
        framework="transformers",
        function="transformers.models.distilbert.modeling_distilbert.create_sinusoidal_embeddings",
        call=f"out = torch.empty({n}, {d}); create_sinusoidal_embeddings(n_pos={n}, dim={d}, out=out)",
        params={"n_pos": n, "dim": d},
        what="DistilBERT-base position embedding weight (max_position_embeddings 512, dim 768)",
        compute="float64-then-round",
        expected={"command": f"posenc generate -n {n} -d {d} -p vaswani", "array": "pe"},
    )
    fx.unrelated(
        "distilbert.safetensors",
        "distilbert.embeddings.word_embeddings.weight",
        rng.normal(0.0, 0.02, (16, d)),
        "word embedding: normal(0, 0.02) random, vocab cut to 16",
    )
    fx.unrelated("distilbert.safetensors", "distilbert.embeddings.LayerNorm.weight", np.ones(d), "layer norm weight")
    fx.unrelated("distilbert.safetensors", "distilbert.embeddings.LayerNorm.bias", np.zeros(d), "layer norm bias")

    # ---- M2M100 (fairseq convention): 1024 positions + offset 2 = 1026 rows, padding_idx 1 ---------------------
    npos, d, pad = 1024, 64, 1
    mod = M2M100SinusoidalPositionalEmbedding(num_positions=npos, embedding_dim=d, padding_idx=pad)
    w = t2np(mod.weights)
    rows = w.shape[0]
    fx.file("m2m100.safetensors", "M2M100/fairseq-style encoder: sinusoid buffer with the padding rows")
    pos = np.arange(rows, dtype=np.float64)
    ang = angles_1d(pos, d, shift_freqs(d, 1.0), "sin|cos")
    ang[pad] = 0.0
    fx.table(
        "m2m100.safetensors",
        "model.encoder.embed_positions.weights",
        w,
        angles=ang,
        role="positional",
        framework="transformers",
        function="transformers.models.m2m_100.modeling_m2m_100.M2M100SinusoidalPositionalEmbedding",
        call=f"M2M100SinusoidalPositionalEmbedding(num_positions={npos}, embedding_dim={d}, padding_idx={pad}).weights",
        params={"num_positions": npos, "embedding_dim": d, "padding_idx": pad, "offset": 2},
        what=(
            f"the module's `weights` = get_embedding({rows}, {d}, padding_idx={pad}): row r is position r, row 1 "
            "(padding_idx) is all zeros, row 0 is position 0 (never used by forward: the first real token takes "
            "row padding_idx + 1 = 2)"
        ),
        compute="float32",
        expected={"command": f"posenc generate -n {rows} -d {d} -p fairseq", "array": "pe"},
    )
    fx.unrelated("m2m100.safetensors", "model.shared.weight", rng.normal(0.0, 0.02, (32, d)), "token embedding")
    fx.unrelated("m2m100.safetensors", "model.encoder.layer_norm.weight", np.ones(d), "layer norm weight")

    # ---- Marian: decoder sinusoid, [S | C], float64 then rounded ------------------------------------------------
    n, d = 512, 64
    mw = t2np(MarianSinusoidalPositionalEmbedding(n, d).create_weight())
    fx.file("marian.npz", "Marian decoder (opus-mt style) embed_positions beside a bias and token embedding")
    fx.table(
        "marian.npz",
        "model.decoder.embed_positions.weight",
        mw,
        role="positional",
        framework="transformers",
        function="transformers.models.marian.modeling_marian.MarianSinusoidalPositionalEmbedding.create_weight",
        call=f"MarianSinusoidalPositionalEmbedding(num_positions={n}, embedding_dim={d}).create_weight()",
        params={"num_positions": n, "embedding_dim": d},
        what="Marian's nn.Embedding weight as _init_weights fills it: [sin | cos], paper frequencies",
        compute="float64-then-round",
        expected={"command": f"posenc generate -n {n} -d {d} -p marian", "array": "pe"},
    )
    fx.unrelated("marian.npz", "final_logits_bias", np.zeros((1, 32)), "final logits bias (zeros)")
    fx.unrelated("marian.npz", "model.shared.weight", rng.normal(0.0, 0.02, (32, d)), "token embedding")

    # ---- Whisper: encoder sinusoids, first 256 of 1500 rows at a width of 128 ------------------------------------
    n, d = 256, 128
    wp = t2np(sinusoids(n, d))
    fx.file("whisper.safetensors", "Whisper-like encoder: embed_positions (persistent) and a conv bias")
    fx.table(
        "whisper.safetensors",
        "model.encoder.embed_positions.weight",
        wp,
        angles=angles_1d(np.arange(n), d, shift_freqs(d, 1.0), "sin|cos"),
        role="positional",
        framework="transformers",
        function="transformers.models.whisper.modeling_whisper.sinusoids",
        call=f"sinusoids(length={n}, channels={d})",
        params={"length": n, "channels": d, "max_timescale": 10000},
        what="Whisper encoder embed_positions weight (the model copies sinusoids() into it)",
        compute="float32",
        bound_constant="2^-21",
        agreement_note=(
            "sinusoids() takes exp of a float32 exponent -k ln(1e4)/(h-1), like diffusers (../README.md caveat 1): "
            "at 256 rows the golden itself is 1.097x the 2^-22 bound away from the exact values (checked in mpmath "
            "at 30 digits; posenc's table is correctly rounded in every element), so the rule is 2^-21"
        ),
        expected={"command": f"posenc generate -n {n} -d {d} -p whisper", "array": "pe"},
    )
    fx.unrelated("whisper.safetensors", "model.encoder.conv1.bias", rng.normal(0.0, 0.02, d), "conv bias")
    fx.unrelated("whisper.safetensors", "model.encoder.layer_norm.weight", np.ones(d), "layer norm weight")

    # ---- diffusion timestep tables at DDIM's 50 strided steps ---------------------------------------------------
    d = 128
    for name, spacing, kw, preset in (
        ("ddpm", "leading", {"flip_sin_to_cos": False, "downscale_freq_shift": 1}, "ddpm"),
        ("openai_diffusion", "trailing", {"flip_sin_to_cos": True, "downscale_freq_shift": 0}, "openai-diffusion"),
    ):
        sched = DDIMScheduler(num_train_timesteps=1000, timestep_spacing=spacing)
        sched.set_timesteps(50)
        ts = sched.timesteps
        tlist = [int(v) for v in ts]
        step = tlist[1] - tlist[0]
        assert tlist == list(range(tlist[0], tlist[0] + step * len(tlist), step)), tlist
        emb = t2np(get_timestep_embedding(ts, d, **kw))
        shift = float(kw["downscale_freq_shift"])
        fname = f"{name}_ddim50.npz"
        fx.file(fname, f"{preset} UNet timestep table at DDIM's 50 steps ({spacing} spacing), beside time MLP weights")
        fx.table(
            fname,
            "time_embedding.timestep_table",
            emb,
            angles=angles_1d(np.array(tlist, np.float64), d, shift_freqs(d, shift), "sin|cos"),
            role="positional",
            framework="diffusers",
            function="diffusers.models.embeddings.get_timestep_embedding",
            call=(
                f"s = DDIMScheduler(num_train_timesteps=1000, timestep_spacing={spacing!r}); s.set_timesteps(50); "
                f"get_timestep_embedding(s.timesteps, embedding_dim={d}, "
                + ", ".join(f"{k}={v}" for k, v in kw.items())
                + ")"
            ),
            params={"embedding_dim": d, "timesteps": tlist, "max_period": 10000, "scale": 1, **kw},
            what=f"rows are the timesteps {tlist[0]}, {tlist[1]}, ..., {tlist[-1]} (step {step}), in that order",
            compute="float32",
            bound_constant="2^-21",
            agreement_note=(
                "diffusers computes the exponent in float32: measured against 2^-21 (1 + |angle|), see "
                "../README.md caveat 1"
            ),
            expected={
                "command": f"posenc generate -n {len(tlist)} -d {d} -p {preset} --start {tlist[0]} --step {step}",
                "array": "pe",
            },
        )
        fx.unrelated(
            fname, "time_embedding.linear_1.weight", rng.normal(0.0, 0.02, (32, d)), "time MLP weight (cut to 32 rows)"
        )
        fx.unrelated(fname, "time_embedding.linear_1.bias", np.zeros(32), "time MLP bias")


def make_rope(fx: Fixtures, rng: np.random.Generator) -> None:
    import torch
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    hd, seq = 64, 256
    short = [1.0] * 16 + [1.0 + 0.0625 * i for i in range(16)]
    long_ = [1.0] * 4 + [1.0 + 0.5 * i for i in range(1, 29)]  # exact binary fractions; unused below 4096 rows
    # (file, mode, max_position_embeddings, rope_parameters, posenc options, note)
    cases: list[tuple[str, str, int, dict[str, Any], str, str]] = [
        ("rope_default.safetensors", "default", 4096, {"rope_theta": 10000.0}, "", "Llama 2 style"),
        (
            "rope_linear.npz",
            "linear",
            16384,
            {"rope_theta": 10000.0, "factor": 4.0},
            "--scaling linear --factor 4",
            "position interpolation",
        ),
        (
            "rope_dynamic.npz",
            "dynamic",
            128,
            {"rope_theta": 10000.0, "factor": 2.0},
            "--scaling dynamic --factor 2 --max-positions 128",
            "seq_len 256 > max_position_embeddings 128: forward rescales the base (NTK)",
        ),
        (
            "rope_yarn.h5",
            "yarn",
            16384,
            {"rope_theta": 10000.0, "factor": 4.0, "original_max_position_embeddings": 4096},
            "--scaling yarn --factor 4 --original-max-positions 4096 --max-positions 16384",
            "YaRN defaults (beta_fast 32, beta_slow 1, truncate)",
        ),
        (
            "rope_longrope.h5",
            "longrope",
            131072,
            {
                "rope_theta": 10000.0,
                "short_factor": short,
                "long_factor": long_,
                "original_max_position_embeddings": 4096,
            },
            "--scaling longrope --original-max-positions 4096 --max-positions 131072 "
            f"--short-factor {','.join(repr(v) for v in short)} --long-factor {','.join(repr(v) for v in long_)}",
            "Phi-3 style: 256 <= 4096 positions, so the short factors; attention scaling from factor 32",
        ),
        (
            "rope_llama3.safetensors",
            "llama3",
            131072,
            {
                "rope_theta": 500000.0,
                "factor": 32.0,
                "low_freq_factor": 1.0,
                "high_freq_factor": 4.0,
                "original_max_position_embeddings": 8192,
            },
            "--theta 500000 --scaling llama3 --factor 32 --low-freq-factor 1 --high-freq-factor 4 "
            "--original-max-positions 8192",
            "Llama 3.2 1B parameters (head_dim 64)",
        ),
    ]
    for fname, mode, max_pos, extra, opts, note in cases:
        rp = {"rope_type": mode, **extra}
        mod = LlamaRotaryEmbedding(llama_config(hd, max_pos, rp))
        x = torch.zeros(1, seq, hd, dtype=torch.float32)
        cos, sin = mod(x, torch.arange(seq)[None])
        inv = t2np(mod.inv_freq).astype(np.float64)
        scaling = float(mod.attention_scaling)
        ang = np.abs(np.arange(seq, dtype=np.float64)[:, None] * np.concatenate([inv, inv])[None, :])
        cmd = f"posenc rope -n {seq} --head-dim {hd}" + (f" {opts}" if opts else "")
        fx.file(fname, f"one decoder layer's cached RoPE ({mode}) beside attention weights")
        for part, arr in (("cos", cos), ("sin", sin)):
            if part == "sin" and not fname.endswith(".safetensors"):
                continue  # the safetensors files hold both caches, the others only cos_cached
            fx.table(
                fname,
                f"model.layers.0.self_attn.rotary_emb.{part}_cached",
                t2np(arr[0]),
                angles=ang,
                role="positional",
                framework="transformers",
                function="transformers.models.llama.modeling_llama.LlamaRotaryEmbedding.forward",
                call=f"LlamaRotaryEmbedding(LlamaConfig(..., head_dim={hd}, max_position_embeddings={max_pos}, "
                f"rope_parameters={rp!r}))(x, position_ids=torch.arange({seq})[None])[{0 if part == 'cos' else 1}][0]",
                params={
                    "rope_type": mode,
                    "head_dim": hd,
                    "seq_len": seq,
                    "max_position_embeddings": max_pos,
                    "rope_parameters": rp,
                    "attention_scaling": scaling,
                },
                what=f"{part}(cat(freqs, freqs)) * attention_scaling ({scaling!r}), rows = positions 0..{seq - 1}; "
                + note,
                compute="float32",
                attention_scaling=scaling,
                expected={"command": cmd, "array": part},
            )
        fx.unrelated(
            fname, "model.layers.0.self_attn.q_proj.weight", rng.normal(0.0, 0.02, (16, 128)), "q_proj (cut to 16 rows)"
        )
        fx.unrelated(fname, "model.layers.0.input_layernorm.weight", np.ones(128), "RMSNorm weight")


def make_narrow(fx: Fixtures, rng: np.random.Generator) -> None:
    """Tables as half-precision checkpoints hold them: RoPE caches computed for bfloat16 activations (HF casts
    cos and sin to the input's dtype), and sinusoid weights of a model saved with ``.to(torch.bfloat16)`` or
    ``.half()``. Each is the framework's float32 table rounded once more, to the narrow type."""
    import torch
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding
    from transformers.models.marian.modeling_marian import MarianSinusoidalPositionalEmbedding
    from transformers.models.whisper.modeling_whisper import sinusoids

    def bf16(a: np.ndarray) -> Any:
        return torch.from_numpy(np.asarray(a, np.float32)).to(torch.bfloat16)

    llama32 = {
        "rope_type": "llama3",
        "rope_theta": 500000.0,
        "factor": 32.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192,
    }
    # (llama3 needs the longer cache: over 512 rows its band columns turn too little to show the factor in bfloat16)
    for fname, seq, hd, max_pos, rp, opts, note in (
        ("rope_default_bf16.safetensors", 256, 128, 4096, {"rope_type": "default", "rope_theta": 10000.0}, "",
         "Llama 2 7B (head_dim 128)"),
        ("rope_llama32_bf16.safetensors", 2048, 64, 131072, llama32,
         "--theta 500000 --scaling llama3 --factor 32 --low-freq-factor 1 --high-freq-factor 4 "
         "--original-max-positions 8192", "Llama 3.2 1B (head_dim 64)"),
        ("rope_yarn_bf16.safetensors", 1024, 64, 16384,
         {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0, "original_max_position_embeddings": 4096},
         "--scaling yarn --factor 4 --original-max-positions 4096 --max-positions 16384",
         "YaRN defaults; the attention scaling 1.1386 is itself rounded, to 1.140625"),
    ):  # fmt: skip
        mod = LlamaRotaryEmbedding(llama_config(hd, max_pos, rp))
        cos, sin = mod(torch.zeros(1, seq, hd, dtype=torch.bfloat16), torch.arange(seq)[None])
        assert cos.dtype == torch.bfloat16
        inv = t2np(mod.inv_freq).astype(np.float64)
        ang = np.abs(np.arange(seq, dtype=np.float64)[:, None] * np.concatenate([inv, inv])[None, :])
        cmd = f"posenc rope -n {seq} --head-dim {hd}" + (f" {opts}" if opts else "") + " --dtype bfloat16"
        fx.file(fname, f"one decoder layer's RoPE caches for bfloat16 activations ({rp['rope_type']})")
        for index, (part, arr) in enumerate((("cos", cos), ("sin", sin))):
            fx.table(
                fname,
                f"model.layers.0.self_attn.rotary_emb.{part}_cached",
                arr[0],
                angles=ang,
                role="positional",
                framework="transformers",
                function="transformers.models.llama.modeling_llama.LlamaRotaryEmbedding.forward",
                call=f"LlamaRotaryEmbedding(LlamaConfig(..., head_dim={hd}, max_position_embeddings={max_pos}, "
                f"rope_parameters={rp!r}))(torch.zeros(1, {seq}, {hd}, dtype=torch.bfloat16), "
                f"position_ids=torch.arange({seq})[None])[{index}][0]",
                params={"head_dim": hd, "seq_len": seq, "max_position_embeddings": max_pos, "rope_parameters": rp},
                what=f"{part}(cat(freqs, freqs)) in float32, then .to(x.dtype) = bfloat16; " + note,
                compute="float32-then-bfloat16",
                narrow="bfloat16",
                expected={"command": cmd, "array": part},
            )
        fx.table(fname, "model.layers.0.self_attn.q_proj.weight", bf16(rng.normal(0.0, 0.02, (16, 2 * hd))),
                 role="unrelated", what="q_proj (cut to 16 rows), bfloat16", expected=None)  # fmt: skip
        fx.table(fname, "model.layers.0.input_layernorm.weight", bf16(np.ones(2 * hd)), role="unrelated",
                 what="RMSNorm weight, bfloat16", expected=None)  # fmt: skip

    # ---- Marian (opus-mt) saved in bfloat16: float64, rounded to float32, then to bfloat16 ----------------------
    n, d = 512, 512
    weight = MarianSinusoidalPositionalEmbedding(n, d).create_weight().to(torch.bfloat16)
    fx.file("marian_bf16.safetensors", "Marian (opus-mt-en-de width) decoder embed_positions, model in bfloat16")
    fx.table(
        "marian_bf16.safetensors",
        "model.decoder.embed_positions.weight",
        weight,
        angles=angles_1d(np.arange(n), d, paper_freqs(d), "marian"),
        role="positional",
        framework="transformers",
        function="transformers.models.marian.modeling_marian.MarianSinusoidalPositionalEmbedding.create_weight",
        call=f"MarianSinusoidalPositionalEmbedding(num_positions={n}, embedding_dim={d}).create_weight()"
        ".to(torch.bfloat16)",
        params={"num_positions": n, "embedding_dim": d},
        what="Marian's embed_positions weight of a model saved with .to(torch.bfloat16)",
        compute="float64-then-float32-then-bfloat16",
        narrow="bfloat16",
        expected={"command": f"posenc generate -n {n} -d {d} -p marian --dtype bfloat16", "array": "pe"},
    )
    fx.table("marian_bf16.safetensors", "model.shared.weight", bf16(rng.normal(0.0, 0.02, (32, d))),
             role="unrelated", what="token embedding, bfloat16", expected=None)  # fmt: skip

    # ---- Whisper tiny encoder saved in float16 (.half()): 1500 x 384 -------------------------------------------
    n, d = 1500, 384
    half = t2np(sinusoids(n, d).half())
    fx.file("whisper_fp16.safetensors", "Whisper-tiny encoder embed_positions, model saved with .half()")
    fx.table(
        "whisper_fp16.safetensors",
        "model.encoder.embed_positions.weight",
        half,
        angles=angles_1d(np.arange(n), d, shift_freqs(d, 1.0), "sin|cos"),
        bound_constant="2^-21",
        role="positional",
        framework="transformers",
        function="transformers.models.whisper.modeling_whisper.sinusoids",
        call=f"sinusoids(length={n}, channels={d}).half()",
        params={"length": n, "channels": d, "max_timescale": 10000},
        what="Whisper-tiny encoder embed_positions weight in a float16 checkpoint",
        compute="float32-then-float16",
        narrow="float16",
        expected={"command": f"posenc generate -n {n} -d {d} -p whisper --dtype float16", "array": "pe"},
    )
    fx.table("whisper_fp16.safetensors", "model.encoder.conv1.bias", rng.normal(0.0, 0.02, d).astype(np.float16),
             role="unrelated", what="conv bias, float16", expected=None)  # fmt: skip


def make_yarn_no_truncate(fx: Fixtures, rng: np.random.Generator) -> None:
    """gpt-oss's RoPE: YaRN with ``truncate: false`` (the correction range not floored and ceiled), theta 150000,
    factor 32 over 4096, head_dim 64; HF's ``LlamaRotaryEmbedding`` with those rope_parameters, 256 positions."""
    import torch
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    hd, seq, max_pos = 64, 256, 131072
    rp = {
        "rope_type": "yarn",
        "rope_theta": 150000.0,
        "factor": 32.0,
        "beta_fast": 32.0,
        "beta_slow": 1.0,
        "truncate": False,
        "original_max_position_embeddings": 4096,
    }
    mod = LlamaRotaryEmbedding(llama_config(hd, max_pos, rp))
    cos, _ = mod(torch.zeros(1, seq, hd, dtype=torch.float32), torch.arange(seq)[None])
    inv = t2np(mod.inv_freq).astype(np.float64)
    scaling = float(mod.attention_scaling)
    fname = "rope_yarn_no_truncate.h5"
    fx.file(fname, "gpt-oss style RoPE (YaRN, truncate false): one layer's cos cache beside attention weights")
    fx.table(
        fname,
        "model/layers/0/self_attn/rotary_emb/cos_cached",
        t2np(cos[0]),
        angles=np.abs(np.arange(seq, dtype=np.float64)[:, None] * np.concatenate([inv, inv])[None, :]),
        role="positional",
        framework="transformers",
        function="transformers.models.llama.modeling_llama.LlamaRotaryEmbedding.forward",
        call=f"LlamaRotaryEmbedding(LlamaConfig(..., head_dim={hd}, max_position_embeddings={max_pos}, "
        f"rope_parameters={rp!r}))(x, position_ids=torch.arange({seq})[None])[0][0]",
        params={
            "head_dim": hd,
            "seq_len": seq,
            "max_position_embeddings": max_pos,
            "rope_parameters": rp,
            "attention_scaling": scaling,
        },  # fmt: skip
        what=f"cos(cat(freqs, freqs)) * attention_scaling ({scaling!r}), rows = positions 0..{seq - 1}",
        compute="float32",
        attention_scaling=scaling,
        expected={
            "command": f"posenc rope -n {seq} --head-dim {hd} --theta 150000 --scaling yarn --factor 32 "
            "--original-max-positions 4096 --max-positions 131072 --no-truncate",
            "array": "cos",
        },
    )
    fx.unrelated(fname, "model/layers/0/self_attn/q_proj/weight", rng.normal(0.0, 0.02, (16, 128)), "q_proj")


def make_alibi(fx: Fixtures, rng: np.random.Generator) -> None:
    import torch
    from transformers.models.bloom.modeling_bloom import _get_alibi_slopes, build_alibi_tensor

    fx.file("alibi_bloom.npz", "BLOOM-like: ALiBi slopes of 16 heads and of 112 heads, a 16-head bias, a LN weight")
    for heads in (16, 112):
        slopes = t2np(_get_alibi_slopes(heads, torch.device("cpu")))
        fx.table(
            "alibi_bloom.npz",
            f"transformer.alibi_slopes_h{heads}",
            slopes,
            role="positional",
            framework="transformers",
            function="transformers.models.bloom.modeling_bloom._get_alibi_slopes",
            call=f"_get_alibi_slopes({heads}, torch.device('cpu'))",
            params={"num_heads": heads},
            what=f"ALiBi slopes of {heads} heads (bloom-560m: 16; BLOOM-176B: 112, not a power of two)",
            compute="float32",
            agreement_note="relative: |posenc - golden| <= 2^-20 |golden| (BLOOM's float32 pow, ../README.md caveat 2)",
            expected={"command": f"posenc alibi -H {heads}", "array": "slopes"},
        )
    heads, n = 16, 256
    bias = t2np(build_alibi_tensor(torch.ones(1, n, dtype=torch.int64), heads, torch.float32))
    fx.table(
        "alibi_bloom.npz",
        "transformer.h.0.self_attention.alibi",
        bias,
        role="positional",
        framework="transformers",
        function="transformers.models.bloom.modeling_bloom.build_alibi_tensor",
        call=f"build_alibi_tensor(torch.ones(1, {n}, dtype=torch.int64), num_heads={heads}, dtype=torch.float32)",
        params={"num_heads": heads, "seq_len": n, "batch": 1},
        what=f"bias (batch*heads, 1, seq_len) = {list(bias.shape)}: slope[h] * key position 0..{n - 1}",
        compute="float32",
        agreement_note="relative: |posenc - golden| <= 2^-20 |golden|",
        expected={"command": f"posenc alibi -H {heads} -n {n}", "array": "bias", "reshape": [heads, n]},
    )
    fx.unrelated("alibi_bloom.npz", "transformer.word_embeddings_layernorm.weight", np.ones(64), "layer norm weight")


def make_sincos2d(fx: Fixtures, rng: np.random.Generator) -> None:
    from diffusers.models.embeddings import get_2d_sincos_pos_embed
    from transformers import ViTMAEConfig
    from transformers.models.vit_mae.modeling_vit_mae import ViTMAEEmbeddings

    cfg = ViTMAEConfig(hidden_size=256, image_size=128, patch_size=16, num_channels=3)
    emb = ViTMAEEmbeddings(cfg)
    emb.initialize_weights()
    pe = t2np(emb.position_embeddings)
    g = cfg.image_size // cfg.patch_size
    fx.file("vit_mae.h5", "ViTMAE encoder embeddings (128 px, patch 16, width 256): pos embed with cls row, cls token")
    fx.table(
        "vit_mae.h5",
        "/vit/embeddings/position_embeddings",
        pe,
        role="positional",
        framework="transformers",
        function="transformers.models.vit_mae.modeling_vit_mae.ViTMAEEmbeddings.initialize_weights",
        call="e = ViTMAEEmbeddings(ViTMAEConfig(hidden_size=256, image_size=128, patch_size=16)); "
        "e.initialize_weights(); e.position_embeddings",
        params={"hidden_size": 256, "image_size": 128, "patch_size": 16, "grid": g, "cls_token": True},
        what=f"(1, 1 + {g}*{g}, 256): a zero cls row then the {g}x{g} grid, MAE layout [sin x|cos x|sin y|cos y]",
        compute="float64-then-round",
        expected={"command": f"posenc sincos2d -g {g} -d 256 --cls-token", "array": "pe", "squeeze": 0},
    )
    fx.unrelated("vit_mae.h5", "/vit/embeddings/cls_token", rng.normal(0.0, 0.02, (1, 1, 256)), "cls token")
    fx.unrelated(
        "vit_mae.h5",
        "/vit/embeddings/patch_embeddings/projection/bias",
        np.zeros(256),
        "patch projection bias",
    )

    g, d = 16, 128
    pe2 = t2np(get_2d_sincos_pos_embed(d, g, base_size=g, output_type="pt"))
    fx.file("sd3_pos_embed.h5", "diffusers PatchEmbed-style 2-D sincos buffer without cls row")
    fx.table(
        "sd3_pos_embed.h5",
        "/model/pos_embed/pos_embed",
        pe2.astype(np.float32)[None],
        role="positional",
        framework="diffusers",
        function="diffusers.models.embeddings.get_2d_sincos_pos_embed",
        call=f"get_2d_sincos_pos_embed({d}, {g}, base_size={g}, output_type='pt').float().unsqueeze(0)",
        params={"embed_dim": d, "grid_size": g, "base_size": g, "interpolation_scale": 1.0, "cls_token": False},
        what=f"(1, {g}*{g}, {d}) as PatchEmbed registers it; base_size = grid gives MAE's integer positions",
        compute="float64-then-round",
        expected={"command": f"posenc sincos2d -g {g} -d {d}", "array": "pe", "squeeze": 0},
    )
    fx.unrelated("sd3_pos_embed.h5", "/model/proj/bias", rng.normal(0.0, 0.02, d), "patch projection bias")


def make_t2t_and_negatives(fx: Fixtures, rng: np.random.Generator) -> None:
    import torch
    from transformers.models.distilbert.modeling_distilbert import create_sinusoidal_embeddings

    gm = json.loads((GOLDENS / "manifest.json").read_text())["goldens"]
    fx.file("tensor2tensor.h5", "tensor2tensor-style: timing signals re-stored from ../tensor2tensor_*.npz")
    for src, key, opts in (
        ("tensor2tensor_d33", "/transformer/body/encoder/timing_signal", ""),
        ("tensor2tensor_d16_start5_mints2", "/transformer/body/decoder/timing_signal", " --start 5 --min-timescale 2"),
    ):
        arr = np.load(GOLDENS / f"{src}.npz", allow_pickle=False)["pe"]
        e = gm[src]
        p = e["params"]
        ch, n, m0, m1 = p["channels"], p["length"], p["min_timescale"], p["max_timescale"]
        h = ch // 2
        fr = m0 * np.exp(-np.arange(h) * math.log(m1 / m0) / max(h - 1, 1))
        freqs = np.zeros(ch)
        freqs[: 2 * h] = fr[np.arange(2 * h) % h]
        ang = np.abs((p["start_index"] + np.arange(n, dtype=np.float64))[:, None] * freqs[None, :])
        fx.table(
            "tensor2tensor.h5",
            key,
            arr,
            angles=ang,
            role="positional",
            framework="tensor2tensor",
            function=e["function"],
            call=e["call"] + " (reshaped to (length, channels))",
            params=p,
            what=f"the array 'pe' of ../{src}.npz (sha256 {e['sha256']}), re-stored; TensorFlow is not installed",
            compute="float32",
            version=gm[src]["environment"],
            expected={"command": f"posenc generate -n {n} -d {ch} -p tensor2tensor{opts}", "array": "pe"},
        )
    fx.unrelated(
        "tensor2tensor.h5", "/transformer/body/encoder/layer_prepostprocess/layer_norm/scale", np.ones(33), "LN"
    )

    # ---- negatives ---------------------------------------------------------------------------------------------
    fx.file("learned_negative.safetensors", "NEGATIVE: a learned (random) position embedding, no formula")
    fx.table(
        "learned_negative.safetensors",
        "bert.embeddings.position_embeddings.weight",
        rng.normal(0.0, 0.02, (512, 64)).astype(np.float32),
        role="negative",
        framework="numpy",
        function="numpy.random.Generator.normal",
        call=f"np.random.default_rng({SEED}) (after the tensors above) .normal(0, 0.02, (512, 64)).astype(float32)",
        params={"seed": SEED, "std": 0.02},
        what="BERT-style learned absolute position embedding at initialisation: identify must say 'no formula'",
        compute="float32",
        expected={"command": None, "answer": "not a known formula"},
    )
    fx.unrelated("learned_negative.safetensors", "bert.embeddings.LayerNorm.weight", np.ones(64), "LN weight")

    n, d = 128, 64
    out = torch.empty(n, d, dtype=torch.float32)
    create_sinusoidal_embeddings(n_pos=n, dim=d, out=out)
    arr = t2np(out)
    row, col, ulps = 37, 10, 3
    orig = arr[row, col]
    v = orig
    for _ in range(ulps):
        v = np.nextafter(v, np.float32(np.inf), dtype=np.float32)
    arr[row, col] = v
    fx.file("perturbed_negative.h5", "NEGATIVE: a DistilBERT sinusoid with one element moved by 3 float32 ulps")
    fx.table(
        "perturbed_negative.h5",
        "/model/embeddings/position_embeddings/weight",
        arr,
        role="negative",
        framework="transformers",
        function="transformers.models.distilbert.modeling_distilbert.create_sinusoidal_embeddings",
        call=f"create_sinusoidal_embeddings(n_pos={n}, dim={d}, out=out); then out[{row}, {col}] moved up {ulps} ulps",
        params={"n_pos": n, "dim": d},
        perturbation={
            "row": row,
            "column": col,
            "ulps": ulps,
            "direction": "towards +inf (np.nextafter, float32)",
            "original": float(orig),
            "perturbed": float(v),
            "original_hex": float(orig).hex(),
            "perturbed_hex": float(v).hex(),
        },
        what="bit-exact DistilBERT table (float64-then-round) except one element: identify must not claim it",
        compute="float64-then-round",
        expected={
            "command": None,
            "answer": "not bit-identical to any formula; nearest: vaswani, one element differs",
            "nearest_command": f"posenc generate -n {n} -d {d} -p vaswani",
            "array": "pe",
        },
    )
    fx.unrelated("perturbed_negative.h5", "/model/embeddings/LayerNorm/weight", np.ones(d), "LN weight")


# --------------------------------------------------------------------------------------------------------------
# containers (deterministic bytes)
# --------------------------------------------------------------------------------------------------------------


def container_bytes(name: str, arrays: dict[str, np.ndarray], bfloat16: frozenset[str] = frozenset()) -> bytes:
    if name.endswith(".npz"):
        assert not bfloat16, "bfloat16 tensors are stored in .safetensors only"
        return npz_bytes(arrays)
    if name.endswith(".safetensors"):
        import torch
        from safetensors.torch import save_file

        def tensor(key: str, v: np.ndarray) -> Any:
            t = torch.from_numpy(v.copy().view(np.int16) if key in bfloat16 else v.copy())
            return t.view(torch.bfloat16) if key in bfloat16 else t

        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, name)
            save_file({k: tensor(k, v) for k, v in arrays.items()}, path, metadata={"format": "pt"})
            return Path(path).read_bytes()
    if name.endswith(".h5"):
        import h5py

        buf = io.BytesIO()
        with h5py.File(buf, "w", libver="earliest", track_order=False) as fh:
            for key in sorted(arrays):
                fh.create_dataset(key, data=arrays[key], track_times=False)
        return buf.getvalue()
    raise ValueError(name)


def build() -> Fixtures:
    import torch

    torch.set_num_threads(1)
    rng = np.random.default_rng(SEED)
    fx = Fixtures()
    make_sinusoids(fx, rng)
    make_rope(fx, rng)
    make_alibi(fx, rng)
    make_sincos2d(fx, rng)
    make_t2t_and_negatives(fx, rng)
    make_narrow(fx, np.random.default_rng(SEED + 1))  # its own stream: the files above keep their bytes
    make_yarn_no_truncate(fx, np.random.default_rng(SEED + 2))
    return fx


def versions() -> dict[str, str]:
    import diffusers
    import h5py
    import safetensors
    import torch
    import transformers

    return {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "numpy": np.__version__,
        "torch": torch.__version__,
        "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "transformers": transformers.__version__,
        "diffusers": diffusers.__version__,
        "safetensors": safetensors.__version__,
        "h5py": h5py.__version__,
        "hdf5": h5py.version.hdf5_version,
    }


# --------------------------------------------------------------------------------------------------------------
# checking the expected posenc commands
# --------------------------------------------------------------------------------------------------------------


def widened(a: np.ndarray) -> np.ndarray:
    """Values as float64; ``uint16`` arrays are bfloat16 bit patterns (posenc's output and the fixtures' own)."""
    if a.dtype == np.uint16:
        return (a.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)
    return a.astype(np.float64)


def narrow_ulp(values: np.ndarray, narrow: str) -> np.ndarray:
    """The unit in the last place of ``narrow`` (bfloat16: 8 significant bits; float16) at each value."""
    if narrow == "float16":
        return np.spacing(np.abs(values).astype(np.float16)).astype(np.float64)
    magnitude = np.maximum(np.abs(values), 2.0**-126)
    return np.exp2(np.floor(np.log2(magnitude)) - 7)


def measure(posenc: str, entry: dict[str, Any], golden: np.ndarray, tmp: str) -> dict[str, Any]:
    exp = entry["expected"]
    cmd = exp.get("command") or exp.get("nearest_command")
    out = os.path.join(tmp, "out.npz")
    args = shlex.split(cmd)
    args[0] = posenc
    subprocess.run([*args, "-o", out], check=True, capture_output=True)
    ours = np.load(out, allow_pickle=False)[exp["array"]]
    g = golden
    if "squeeze" in exp:
        g = np.squeeze(g, axis=exp["squeeze"])
    if "reshape" in exp:
        g = g.reshape(exp["reshape"])
    if ours.shape != g.shape:
        return {"error": f"shape: posenc {list(ours.shape)}, golden {list(g.shape)}"}
    narrow = entry.get("narrow")
    if narrow is not None:  # posenc's --dtype bfloat16 output holds the bits; the rule: one unit of the narrow type
        ours, g = (widened(a) for a in (ours, g))
        diff = np.abs(ours - g)
        const = {"2^-22": F32, "2^-21": 2.0**-21}[entry.get("bound_constant", "2^-22")]
        ratio = diff / (narrow_ulp(g, narrow) + const * (1.0 + entry["angles"]))
        return {
            "max_abs_error": float(diff.max()),
            "elements_differing": int(np.count_nonzero(diff)),
            "elements": int(g.size),
            "bound": f"one unit in the last place of {narrow} at the golden + the float32 rule "
            f"{entry.get('bound_constant', '2^-22')} * (1 + |angle|)",
            "max_error_over_bound": float(ratio.max()),
            "within_rule": bool(ratio.max() <= 1.0),
        }
    diff = np.abs(ours.astype(np.float64) - g.astype(np.float64))
    res: dict[str, Any] = {
        "max_abs_error": float(diff.max()),
        "elements_differing": int(np.count_nonzero(ours != g)),
        "elements": int(g.size),
    }
    if entry["compute"] == "float64-then-round" or "angles" not in entry:
        if "alibi" in cmd:
            ratio = diff / (2.0**-20 * np.maximum(np.abs(g.astype(np.float64)), 2.0**-126))
            res["max_error_over_relative_bound_2^-20"] = float(ratio.max())
            res["within_rule"] = bool(ratio.max() <= 1.0)
        else:
            res["within_rule"] = res["elements_differing"] == 0
        return res
    ang = entry["angles"]
    scale = abs(entry.get("attention_scaling", 1.0))
    const = {"2^-22": F32, "2^-21": 2.0**-21}[entry.get("bound_constant", "2^-22")]
    unit = diff / ((1.0 + ang) * scale)
    res["bound"] = (
        entry.get("bound_constant", "2^-22") + " * (1 + |angle|)" + (" * attention_scaling" if scale != 1 else "")
    )
    res["max_error_over_bound"] = float(unit.max() / const)
    res["max_error_over_2^-22_bound"] = float(unit.max() / F32)
    ratio = unit / const
    res["within_rule"] = bool(ratio.max() <= 1.0)
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="rebuild in memory and compare with the files on disk")
    ap.add_argument("--posenc", default="posenc", help="the posenc program whose commands are measured")
    ns = ap.parse_args()
    fx = build()
    blobs = {name: container_bytes(name, arrays, fx.bfloat16_keys(name)) for name, arrays in fx.files.items()}
    again = {name: container_bytes(name, arrays, fx.bfloat16_keys(name)) for name, arrays in fx.files.items()}
    if ns.check:
        bad = [n for n, b in blobs.items() if not (HERE / n).exists() or (HERE / n).read_bytes() != b]
        for n in sorted(blobs):
            print(("DIFFERS " if n in bad else "same    ") + n)
        return 1 if bad else 0
    files: dict[str, Any] = {}
    not_reproducible: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in sorted(fx.files):
            tensors: dict[str, Any] = {}
            for key, entry in sorted(fx.entries[name].items()):
                if entry["expected"] is not None and (
                    entry["expected"].get("command") or "nearest_command" in entry["expected"]
                ):
                    m = measure(
                        ns.posenc,
                        {**entry, "angles": entry.get("_angles")} if "_angles" in entry else entry,
                        fx.files[name][key],
                        tmp,
                    )
                    if entry["role"] == "negative":
                        entry["measured_vs_nearest"] = m
                    else:
                        entry["measured"] = m
                        if not m.get("within_rule"):
                            not_reproducible[f"{name}:{key}"] = {"command": entry["expected"]["command"], "measured": m}
                entry.pop("_angles", None)
                tensors[key] = entry
            (HERE / name).write_bytes(blobs[name])
            files[name] = {
                "container": name.rsplit(".", 1)[1],
                "sha256": hashlib.sha256(blobs[name]).hexdigest(),
                "bytes": len(blobs[name]),
                "byte_reproducible_in_run": blobs[name] == again[name],
                "what": fx.file_notes[name],
                "tensors": tensors,
            }
    manifest = {
        "description": "checkpoint-like fixtures for posenc identify; see README.md",
        "generator": "tests/goldens/identify/make_identify_goldens.py",
        "seed": SEED,
        "environment": versions(),
        "agreement_rules": {
            "float64-then-round": "bit-identical",
            "narrow": "entries with 'narrow' (bfloat16, float16): |posenc - golden| <= one unit in the last place of "
            "that type at the golden + the float32 rule's bound (the framework's float32 value was rounded once more)",
            "float32": "|posenc - golden| <= 2^-22 (1 + |angle|) (times attention_scaling for RoPE); diffusers "
            "2^-21 (1 + |angle|); ALiBi |posenc - golden| <= 2^-20 |golden|",
        },
        "expected_fields": {
            "command": "the posenc command (without -o) whose output array regenerates the tensor",
            "array": "the array of that output",
            "squeeze": "drop this leading axis of the stored tensor first",
            "reshape": "reshape the stored tensor to this before comparing",
        },
        "files": files,
        "not_reproducible": not_reproducible,
        "reproducibility": (
            "two separate runs (seconds apart, same environment) gave byte-identical files for every container "
            "(safetensors save_file; .npz with fixed zip times; h5py libver='earliest', track_times=False) and an "
            "identical manifest; byte_reproducible_in_run is the same check within one run"
        ),
    }
    MANIFEST.write_text(canonical_json(manifest))
    for name in sorted(files):
        print(name, files[name]["bytes"], files[name]["sha256"][:12])
    for k, v in not_reproducible.items():
        print("NOT REPRODUCIBLE", k, v)
    return 0


if __name__ == "__main__":
    sys.exit(main())
