#!/usr/bin/env python3
"""Make RoPE cos/sin goldens from published config.json files with HF transformers' own rotary classes.

This script is NOT part of posenc and is never imported by the test suite: it runs in a throwaway virtual
environment with torch 2.13.0 (CPU), transformers and numpy installed, and writes small ``<name>.npz`` files and one
``manifest.json`` that the suite reads without any of those libraries. See README.md beside this file for the exact
commands.

Every golden starts from a ``configs/<model>/config.json`` written as the model publishes it (transformers-4
spellings included: ``rope_scaling``/``type``, ``rotary_pct``, ``rotary_emb_base``, top-level
``partial_rotary_factor`` and ``original_max_position_embeddings``, ``rope_local_base_freq``). The script loads it with
``transformers.AutoConfig.from_pretrained``, builds the model's own rotary-embedding module the way the model's
``__init__`` builds it (``LlamaRotaryEmbedding(config=config)``, ``Gemma3RotaryEmbedding(text_config)``, ...) and calls
its ``forward(x, position_ids[, layer_type])``. It contains no framework code. The only arithmetic here is in the
``reference_check`` records (float64 numpy evaluation of the forward step from the module's own ``inv_freq``) and in
two exact re-arrangements that are named as such in the manifest (DeepSeek's complex output split into real and
imaginary parts and repeated pairwise; the M-RoPE section-selection check).

Nothing here depends on the clock; the .npz members carry a fixed zip timestamp and are deflated with a fixed
level, so a re-run with the same library versions gives byte-identical files. ``--check`` recomputes everything and
compares it with the files on disk without writing anything.
"""

from __future__ import annotations

import argparse
import copy
import glob
import hashlib
import importlib.util
import io
import json
import logging
import os
import platform
import sys
import tempfile
import types
import warnings
import zipfile
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
CONFIG_DIR = HERE / "configs"
MANIFEST = HERE / "manifest.json"
GENERATOR = "tests/goldens/rope_config/make_rope_config_goldens.py"
ZIP_DATE = (1980, 1, 1, 0, 0, 0)  # fixed zip member time: byte-identical re-runs
ZIP_LEVEL = 9  # fixed deflate level (the bytes also depend on zlib's version, recorded in the manifest)
ARRAY_DTYPES = (np.int64, np.float32, np.float64)
BOUND = 2.0**-22  # the float32 rule of tests/goldens/README.md: |err| <= 2^-22 * (1 + |angle|) * scale

# --------------------------------------------------------------------------------------------------------------
# The configs: where each config.json comes from
# --------------------------------------------------------------------------------------------------------------

CONFIGS: dict[str, dict[str, Any]] = {
    "llama-3.1-8b": {
        "model_id": "meta-llama/Llama-3.1-8B",
        "source": "the model's config.json as published (transformers-4 spelling: rope_scaling with rope_type "
        "'llama3', top-level rope_theta), written from the published file; every field kept",
        "rope_fields": [
            "rope_theta",
            "rope_scaling",
            "max_position_embeddings",
            "hidden_size",
            "num_attention_heads",
            "num_key_value_heads",
        ],
    },
    "qwen2.5-7b-yarn": {
        "model_id": "Qwen/Qwen2.5-7B-Instruct",
        "source": "the model's config.json as published plus the rope_scaling block its model card tells users to "
        'add for contexts over 32,768 tokens: {"factor": 4.0, "original_max_position_embeddings": 32768, '
        '"type": "yarn"} (max_position_embeddings stays 32768, as the card says); every published field kept',
        "rope_fields": [
            "rope_theta",
            "rope_scaling",
            "max_position_embeddings",
            "hidden_size",
            "num_attention_heads",
            "num_key_value_heads",
        ],
    },
    "mistral-7b-v0.1": {
        "model_id": "mistralai/Mistral-7B-v0.1",
        "source": "the model's config.json as published; every field kept",
        "rope_fields": [
            "rope_theta",
            "max_position_embeddings",
            "hidden_size",
            "num_attention_heads",
            "num_key_value_heads",
        ],
    },
    "phi-3-mini-128k": {
        "model_id": "microsoft/Phi-3-mini-128k-instruct",
        "source": 'the model\'s current config.json (the mid-2024 update): rope_scaling {"type": "longrope", '
        "short_factor[48], long_factor[48]} and top-level original_max_position_embeddings 4096, "
        'max_position_embeddings 131072. The first release (April 2024) said "type": "su" and had other factor '
        "lists; transformers 5.24 maps 'su' (and 'yarn') to 'longrope' for phi3 configs. The 96 factors were "
        "transcribed from a copy of these lists in a Microsoft repository (an evaluation script's LONGROPE_PARAMS) "
        "and agree with the excerpt llama.cpp's documentation quotes from the hub file. Bookkeeping fields "
        "_name_or_path, auto_map and transformers_version are left out (they do not reach the rotary class)",
        "rope_fields": [
            "rope_theta",
            "rope_scaling",
            "original_max_position_embeddings",
            "max_position_embeddings",
            "hidden_size",
            "num_attention_heads",
            "num_key_value_heads",
        ],
    },
    "phi-2": {
        "model_id": "microsoft/phi-2",
        "source": "the model's config.json as published (transformers-native version: top-level "
        "partial_rotary_factor 0.4, rope_scaling null); every field kept; agrees field for field with public copies "
        "of the published file",
        "rope_fields": [
            "rope_theta",
            "partial_rotary_factor",
            "rope_scaling",
            "max_position_embeddings",
            "hidden_size",
            "num_attention_heads",
            "num_key_value_heads",
        ],
    },
    "pythia-160m": {
        "model_id": "EleutherAI/pythia-160m",
        "source": "the model's config.json as published (GPT-NeoX spelling: rotary_pct 0.25, rotary_emb_base "
        "10000); every field kept",
        "rope_fields": [
            "rotary_pct",
            "rotary_emb_base",
            "max_position_embeddings",
            "hidden_size",
            "num_attention_heads",
        ],
    },
    "gemma-3-1b-it": {
        "model_id": "google/gemma-3-1b-it",
        "source": "the model's config.json as published (gemma3_text: rope_theta 1000000, rope_local_base_freq "
        "10000, rope_scaling null, sliding_window 512, sliding_window_pattern 6, no layer_types); every field kept; "
        "the RoPE fields agree with a public copy of the published file",
        "rope_fields": [
            "rope_theta",
            "rope_local_base_freq",
            "rope_scaling",
            "sliding_window",
            "sliding_window_pattern",
            "max_position_embeddings",
            "head_dim",
            "hidden_size",
            "num_attention_heads",
            "num_key_value_heads",
            "num_hidden_layers",
        ],
    },
    "gemma-3-4b-it": {
        "model_id": "google/gemma-3-4b-it",
        "source": "the model's config.json as published. Its text_config names only hidden_size, "
        "intermediate_size, model_type, num_hidden_layers, rope_scaling {factor 8, rope_type linear} and "
        "sliding_window 1024: rope_theta, rope_local_base_freq, head_dim, num_attention_heads, "
        "num_key_value_heads, max_position_embeddings and the layer pattern are Gemma3TextConfig's defaults "
        "(1000000 global / 10000 local, 256, 8, 4, 131072, pattern 6), exactly as when the model is loaded; "
        "every published field kept; agrees with public copies of the published file",
        "rope_fields": [
            "text_config.rope_scaling",
            "text_config.sliding_window",
            "text_config.hidden_size",
            "text_config.num_hidden_layers",
        ],
    },
    "deepseek-v2-lite": {
        "model_id": "deepseek-ai/DeepSeek-V2-Lite",
        "source": "the model's config.json as published (rope_scaling {type yarn, factor 40, beta_fast 32, "
        "beta_slow 1, mscale 0.707, mscale_all_dim 0.707, original_max_position_embeddings 4096}, "
        "qk_rope_head_dim 64, max_position_embeddings 163840); every field kept, auto_map included (AutoConfig "
        "uses transformers' native deepseek_v2 classes; no remote code is run); agrees with a public verbatim copy "
        "of the published file",
        "rope_fields": [
            "rope_theta",
            "rope_scaling",
            "qk_rope_head_dim",
            "qk_nope_head_dim",
            "max_position_embeddings",
        ],
    },
    "qwen2-vl-2b": {
        "model_id": "Qwen/Qwen2-VL-2B-Instruct",
        "source": "the model's config.json as published (flat text fields at the top level, rope_scaling "
        '{"type": "mrope", "mrope_section": [16, 24, 24]}, rope_theta 1000000, vision_config with '
        "spatial_merge_size 2); every field kept",
        "rope_fields": [
            "rope_theta",
            "rope_scaling",
            "max_position_embeddings",
            "hidden_size",
            "num_attention_heads",
            "num_key_value_heads",
            "vision_config.spatial_merge_size",
            "image_token_id",
            "vision_start_token_id",
            "vision_end_token_id",
        ],
    },
    "gemma-4-e2b-it": {
        "model_id": "google/gemma-4-E2B-it",
        "source": "the 'proportional' rope type's model family (Gemma 4: Gemma4TextConfig's default "
        "rope_parameters use it for full_attention layers). text_config as the model publishes it: nested "
        "rope_parameters {full_attention: {rope_type proportional, partial_rotary_factor 0.25, rope_theta 1e6}, "
        "sliding_attention: {rope_type default, rope_theta 1e4}}, head_dim 256, global_head_dim 512, "
        "layer_types (4 sliding + 1 full) x 7, sliding_window 512, max_position_embeddings 131072; the values "
        "agree across several public copies of the published file. Trimmed: vision_config, audio_config and the "
        "top-level special-token ids (Gemma4Config's defaults fill them; they do not reach the rotary class)",
        "rope_fields": [
            "text_config.rope_parameters",
            "text_config.head_dim",
            "text_config.global_head_dim",
            "text_config.layer_types",
            "text_config.sliding_window",
            "text_config.max_position_embeddings",
        ],
    },
    "llama-3.2-1b": {
        "model_id": "meta-llama/Llama-3.2-1B",
        "source": "the model's config.json as published (transformers-4 spelling: rope_scaling {factor 32.0, "
        "high_freq_factor 4.0, low_freq_factor 1.0, original_max_position_embeddings 8192, rope_type llama3}, "
        "rope_theta 500000.0, head_dim 64, max_position_embeddings 131072); every field kept; written from the "
        "published values (not downloaded here)",
        "rope_fields": [
            "rope_theta",
            "rope_scaling",
            "head_dim",
            "max_position_embeddings",
            "hidden_size",
            "num_attention_heads",
            "num_key_value_heads",
        ],
    },
    "llama-4-scout": {
        "model_id": "meta-llama/Llama-4-Scout-17B-16E-Instruct",
        "source": "the model's config.json, its text_config as published: rope_scaling {factor 16.0, "
        "high_freq_factor 1.0, low_freq_factor 1.0, original_max_position_embeddings 8192, rope_type llama3}, "
        "rope_theta 500000.0, head_dim 128, max_position_embeddings 10485760, attention_chunk_size 8192, "
        "attn_temperature_tuning, floor_scale 8192, attn_scale 0.1, use_qk_norm, 48 layers; written from the "
        "published values (not downloaded here). Trimmed: vision_config (Llama4Config's defaults fill it; it does "
        "not reach the text rotary class), the text_config's MoE layer list (moe_layers), no_rope_layers "
        "(Llama4TextConfig derives the same NoPE pattern, every 4th layer, when it is absent or empty), router and "
        "quantization fields",
        "rope_fields": [
            "text_config.rope_theta",
            "text_config.rope_scaling",
            "text_config.head_dim",
            "text_config.max_position_embeddings",
            "text_config.attention_chunk_size",
            "text_config.attn_temperature_tuning",
            "text_config.floor_scale",
            "text_config.attn_scale",
            "text_config.num_hidden_layers",
        ],
    },
    "qwen3-8b-yarn": {
        "model_id": "Qwen/Qwen3-8B",
        "source": "the model's config.json as published (rope_theta 1000000, head_dim 128, max_position_embeddings "
        "40960, rope_scaling null) with rope_scaling replaced by the block its model card tells users to add for "
        'contexts over 32,768 tokens: {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": '
        "32768}; every other published field kept; written from the published values (not downloaded here)",
        "rope_fields": [
            "rope_theta",
            "rope_scaling",
            "head_dim",
            "max_position_embeddings",
            "hidden_size",
            "num_attention_heads",
            "num_key_value_heads",
        ],
    },
    "deepseek-v3": {
        "model_id": "deepseek-ai/DeepSeek-V3",
        "source": "the model's config.json as published: rope_scaling {type yarn, factor 40, beta_fast 32, "
        "beta_slow 1, mscale 1.0, mscale_all_dim 1.0, original_max_position_embeddings 4096}, rope_theta 10000, "
        "qk_rope_head_dim 64, qk_nope_head_dim 128, v_head_dim 128, max_position_embeddings 163840; written from "
        "the published values (not downloaded here). Trimmed: auto_map, quantization_config (fp8) and "
        "transformers_version (they do not reach the rotary class or the attention's scaling)",
        "rope_fields": [
            "rope_theta",
            "rope_scaling",
            "qk_rope_head_dim",
            "qk_nope_head_dim",
            "max_position_embeddings",
        ],
    },
    "phi-3.5-mini": {
        "model_id": "microsoft/Phi-3.5-mini-instruct",
        "source": 'the model\'s config.json: rope_scaling {"type": "longrope", short_factor[48], long_factor[48]}, '
        "top-level original_max_position_embeddings 4096, max_position_embeddings 131072, rope_theta 10000.0. "
        "The 96 factors agree with several public copies of the published lists (an evaluation script's "
        "commented rope_scaling, an inference engine's preset, an NPU config). Trimmed: _name_or_path, auto_map, "
        "transformers_version",
        "rope_fields": [
            "rope_theta",
            "rope_scaling",
            "original_max_position_embeddings",
            "max_position_embeddings",
            "hidden_size",
            "num_attention_heads",
            "num_key_value_heads",
        ],
    },
    "phi-4-mini": {
        "model_id": "microsoft/Phi-4-mini-instruct",
        "source": 'the model\'s config.json: rope_scaling {"type": "longrope", short_factor (48 x 1.0), '
        "long_factor[48]}, partial_rotary_factor 0.75 (rotary dim 96 of head_dim 128 = 3072 / 24), top-level "
        "original_max_position_embeddings 4096, max_position_embeddings 131072, rope_theta 10000.0. The long "
        "factors agree with several public copies of the published list. Trimmed: _name_or_path, auto_map, "
        "transformers_version",
        "rope_fields": [
            "rope_theta",
            "rope_scaling",
            "partial_rotary_factor",
            "original_max_position_embeddings",
            "max_position_embeddings",
            "hidden_size",
            "num_attention_heads",
            "num_key_value_heads",
        ],
    },
    "gpt-oss-20b": {
        "model_id": "openai/gpt-oss-20b",
        "source": "the model's config.json as published: rope_scaling {rope_type yarn, factor 32.0, beta_fast "
        "32.0, beta_slow 1.0, original_max_position_embeddings 4096, truncate false}, rope_theta 150000, head_dim "
        "64, max_position_embeddings 131072, layer_types alternating sliding_attention / full_attention (24), "
        "sliding_window 128; written from the published values (not downloaded here). Trimmed: "
        "quantization_config (mxfp4), transformers_version",
        "rope_fields": [
            "rope_theta",
            "rope_scaling",
            "head_dim",
            "max_position_embeddings",
            "initial_context_length",
            "layer_types",
            "sliding_window",
        ],
    },
    "command-r-v01": {
        "model_id": "CohereForAI/c4ai-command-r-v01",
        "source": "the model's config.json as published (model_type cohere, rope_theta 8000000.0, hidden_size "
        "8192, 64 heads -> head_dim 128, max_position_embeddings 8192, no rope_scaling); every field kept; "
        "written from the published values (not downloaded here)",
        "rope_fields": [
            "rope_theta",
            "max_position_embeddings",
            "hidden_size",
            "num_attention_heads",
            "num_key_value_heads",
        ],
    },
    "falcon-7b": {
        "model_id": "tiiuae/falcon-7b",
        "source": "the model's config.json as published: no RoPE field at all (no rope_theta, rope_scaling or "
        "max_position_embeddings; alibi false), hidden_size 4544, 71 heads -> head_dim 64; FalconConfig's "
        "defaults give rope_theta 10000 and max_position_embeddings 2048. Trimmed: auto_map (AutoConfig uses "
        "transformers' native falcon classes)",
        "rope_fields": [
            "rope_theta",
            "rope_scaling",
            "max_position_embeddings",
            "alibi",
            "hidden_size",
            "num_attention_heads",
        ],
    },
    "llama-2-7b-dynamic": {
        "model_id": "meta-llama/Llama-2-7b-hf",
        "source": "the model's config.json as published (max_position_embeddings 4096, 32 heads of 128, no "
        'rope_theta: LlamaConfig\'s default 10000) plus rope_scaling {"type": "dynamic", "factor": 2.0}, the '
        "dynamic-NTK form transformers documents for rope_scaling, added here (no published checkpoint ships it): "
        "dynamic NTK is the type whose inv_freq depends on the call's max position; every published field kept",
        "rope_fields": [
            "rope_theta",
            "rope_scaling",
            "max_position_embeddings",
            "hidden_size",
            "num_attention_heads",
            "num_key_value_heads",
        ],
    },
    "qwen2.5-vl-3b": {
        "model_id": "Qwen/Qwen2.5-VL-3B-Instruct",
        "source": "the model's config.json as published (flat text fields at the top level, rope_scaling "
        '{"type": "mrope", "mrope_section": [16, 24, 24]}, rope_theta 1000000.0, max_position_embeddings 128000, '
        "vision_config with spatial_merge_size 2, tokens_per_second 2, temporal_patch_size 2); every field kept; "
        "written from the published values (not downloaded here)",
        "rope_fields": [
            "rope_theta",
            "rope_scaling",
            "max_position_embeddings",
            "hidden_size",
            "num_attention_heads",
            "num_key_value_heads",
            "vision_config.spatial_merge_size",
            "vision_config.tokens_per_second",
            "vision_config.temporal_patch_size",
            "image_token_id",
            "video_token_id",
            "vision_start_token_id",
            "vision_end_token_id",
        ],
    },
}

#: Goldens that posenc cannot reproduce from the config alone, with the reason and the exact failure of
#: tests/test_rope_config_goldens.py; the suite leaves out goldens whose "posenc_reads" is false. Keyed by config
#: name (every golden of it) or golden name. Empty: posenc reads every config here (issue #27 emptied it: the layout
#: from model_type, Falcon's class defaults, the dynamic-NTK rows asked as their 8192-position call).
POSENC_NOT_READ: dict[str, str] = {}

CONVENTIONS = {
    "arrays": (
        "cos, sin: (seq, dim) float32, the rotary module's forward output with the batch axis squeezed (DeepSeek: "
        "the real and imaginary parts of its complex output, (seq, qk_rope_head_dim / 2)). position_ids: int64, "
        "(seq,) or (3, seq) for M-RoPE, exactly the ids passed to forward. inv_freq: float32, the module's "
        "inv_freq buffer after the forward call (what forward multiplied). attention_scaling: float64 scalar, the "
        "module's attention_scaling after forward (cos and sin already include it)"
    ),
    "layout": (
        "half (rotate_half / GPT-NeoX, every model here except DeepSeek-V2): cos[:, j] = attention_scaling * "
        "cos(p * inv_freq[j % (dim / 2)]), dim = 2 * len(inv_freq); apply_rotary_pos_emb rotates the first dim "
        "columns of each head (q * cos + rotate_half(q) * sin) and passes the rest through (Phi-2, Pythia: dim < "
        "head_dim). interleaved-complex (DeepSeek-V2): forward returns freqs_cis = attention_scaling * "
        "exp(i p inv_freq) (seq, dim / 2); apply_rotary_emb views q_pe as complex pairs (q[2i], q[2i+1]) and "
        "multiplies. mrope (Qwen2-VL): see the golden's notes"
    ),
    "params": (
        "params are read from the config object transformers built (config.rope_parameters and attributes) and "
        "from the module, not from the JSON: rope_type as HF resolved it, theta, head_dim, rotary_dim (2 * "
        "len(inv_freq)), rotated_dim (2 * nonzero inv_freq entries), the layer type's rope_parameters dict, "
        "max_position_embeddings, original_max_position_embeddings, attention_scaling, seq_len_seen "
        "(max(position_ids) + 1, what dynamic_rope_update sees)"
    ),
    "agreement": (
        "float32 goldens computed by torch in float32: angle = fl32(p * inv_freq) then cos/sin, times "
        "attention_scaling. Against a correctly rounded posenc value use |posenc - golden| <= 2^-22 * (1 + "
        "|angle|) * max(1, attention_scaling) (tests/goldens/README.md), angle = p * inv_freq; at positions near "
        "131072 that allows ~0.03 and the float32 product alone can move cos by ~0.008. posenc reproducing the "
        "float32 chain (float32 inv_freq times float32 position, then cos) should meet the golden almost bit for "
        "bit; reference_check records the measured error against a float64 evaluation from the module's own "
        "inv_freq"
    ),
    "files": (
        "each .npz is a zip of .npy members (ZIP_DEFLATED, fixed timestamps), load with np.load(path, "
        "allow_pickle=False); every golden lists its file's sha256 and every config its config.json's sha256"
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


def jsonable(obj: Any) -> Any:
    """A JSON-safe deep copy (tuples to lists, numbers kept as Python numbers)."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, (bool, int, float, str)) or obj is None:
        return obj
    if isinstance(obj, np.generic):
        return obj.item()
    return repr(obj)


class Collector:
    """Collects goldens, configs and skips."""

    def __init__(self) -> None:
        self.goldens: dict[str, dict[str, Any]] = {}
        self.files: dict[str, bytes] = {}
        self.configs: dict[str, dict[str, Any]] = {}
        self.not_made: dict[str, dict[str, Any]] = {}

    def add(
        self,
        name: str,
        arrays: dict[str, np.ndarray],
        *,
        config: str,
        cls: str,
        call: str,
        params: dict[str, Any],
        array_notes: dict[str, str],
        notes: Sequence[str],
        attention_scaling: float,
        reference_check: dict[str, Any],
        layer_type: str | None = None,
    ) -> None:
        if name in self.goldens:
            raise ValueError(f"duplicate golden {name}")
        arrays = {k: np.asarray(v) for k, v in arrays.items()}
        missing = set(arrays) ^ set(array_notes)
        if missing:
            raise ValueError(f"{name}: array notes do not match arrays: {sorted(missing)}")
        data = npz_bytes(arrays)
        file = f"{name}.npz"
        self.goldens[name] = {
            "name": name,
            "file": file,
            "sha256": sha256(data),
            "config": config,
            "model_id": CONFIGS[config]["model_id"],
            "config_file": f"configs/{config}/config.json",
            "layer_type": layer_type,
            "framework": "transformers",
            "class": cls,
            "call": call,
            "params": params,
            "attention_scaling": attention_scaling,
            "arrays": {
                k: {"dtype": str(v.dtype), "shape": list(v.shape), "meaning": array_notes[k]} for k, v in arrays.items()
            },
            "notes": list(notes),
            "reference_check": reference_check,
        }
        reason = POSENC_NOT_READ.get(name, POSENC_NOT_READ.get(config))
        if reason is not None:
            self.goldens[name]["posenc_reads"] = False
            self.goldens[name]["posenc_reads_reason"] = reason
        self.files[file] = data

    def skip(self, name: str, reason: str) -> None:
        self.not_made[name] = {"reason": reason}


def t2np(t: Any) -> np.ndarray:
    return t.detach().cpu().numpy().copy()


# --------------------------------------------------------------------------------------------------------------
# Environment: torchvision must import beside the CPU torch (transformers imports it once it is installed)
# --------------------------------------------------------------------------------------------------------------

_TORCHVISION_SHIM: Any = None  # keeps the schema library alive for the whole run


def prepare_torchvision() -> str:
    """Make ``import torchvision`` work when its compiled ops cannot load; return what was done.

    Same workaround as tests/goldens/relative/make_relative_goldens.py: the torchvision wheel pip pairs with torch
    2.13.0 is a CUDA build whose _C.so needs libc10_cuda.so, which the CPU torch does not ship; then ``import
    torchvision`` fails ("operator torchvision::nms does not exist", from _meta_registrations' register_fake).
    transformers imports torchvision when it is installed (AutoConfig's lazy imports reach it), so the two schemas
    are declared (no kernels) before anything imports it. Nothing here runs a torchvision op.
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
    import huggingface_hub
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
        "huggingface_hub": huggingface_hub.__version__,
        "torchvision": tv,
        "torchvision_status": torchvision_status,
        "zlib": zlib.ZLIB_VERSION,
    }


# --------------------------------------------------------------------------------------------------------------
# Loading a config the way from_pretrained does, recording what transformers said
# --------------------------------------------------------------------------------------------------------------


class Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def load_config(c: Collector, name: str) -> Any:
    """AutoConfig.from_pretrained(configs/<name>); record the file, its RoPE fields and HF's resolution."""
    from transformers import AutoConfig

    path = CONFIG_DIR / name / "config.json"
    raw_bytes = path.read_bytes()
    raw = json.loads(raw_bytes)
    capture = Capture()
    logger = logging.getLogger("transformers")
    logger.addHandler(capture)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            config = AutoConfig.from_pretrained(str(CONFIG_DIR / name))
    finally:
        logger.removeHandler(capture)
    messages = sorted(set([str(w.message) for w in caught] + capture.messages))

    def pick(d: dict[str, Any], dotted: str) -> Any:
        cur: Any = d
        for part in dotted.split("."):
            if not isinstance(cur, dict) or part not in cur:
                return "(absent)"
            cur = cur[part]
        return cur

    info = CONFIGS[name]
    text = config.get_text_config()
    c.configs[name] = {
        "name": name,
        "file": f"configs/{name}/config.json",
        "sha256": sha256(raw_bytes),
        "model_id": info["model_id"],
        "source": info["source"],
        "published_rope_fields": {k: pick(raw, k) for k in info["rope_fields"]},
        "autoconfig": {
            "call": f"AutoConfig.from_pretrained('configs/{name}')",
            "config_class": f"{type(config).__module__}.{type(config).__name__}",
            "text_config_class": f"{type(text).__module__}.{type(text).__name__}",
            "rope_parameters": jsonable(copy.deepcopy(text.rope_parameters)),
            "messages": messages,
        },
    }
    return config


def rope_attr(cfg: Any, attr: str) -> Any:
    """A config attribute, or None (heterogeneous configs refuse global per-layer attributes)."""
    try:
        return jsonable(getattr(cfg, attr, None))
    except Exception as exc:  # noqa: BLE001
        return f"(not readable globally: {type(exc).__name__})"


# --------------------------------------------------------------------------------------------------------------
# One golden: a forward call of the model's own rotary module
# --------------------------------------------------------------------------------------------------------------


def float32_check(cos: np.ndarray, sin: np.ndarray, angle: np.ndarray, scale: float) -> dict[str, Any]:
    """Compare the float32 cache with scale * cos/sin(angle) evaluated in float64 (angle from the module's inv_freq)."""
    ref_c = scale * np.cos(angle)
    ref_s = scale * np.sin(angle)
    err = np.maximum(np.abs(cos.astype(np.float64) - ref_c), np.abs(sin.astype(np.float64) - ref_s))
    bound = BOUND * (1.0 + np.abs(angle)) * max(1.0, scale)
    worst = int(np.argmax(err / bound))
    return {
        "elements": int(cos.size) * 2,
        "max_abs_error": float(err.max()),
        "max_error_over_bound": float((err / bound).reshape(-1)[worst]),
        "max_angle": float(np.abs(angle).max()),
        "reference": "scale * cos/sin(p * inv_freq) in float64 numpy, with p the position id and inv_freq the "
        "module's own float32 inv_freq buffer (so this measures the forward's float32 product and cos/sin only, "
        "not inv_freq's own rounding); bound = 2^-22 * (1 + |angle|) * max(1, scale)",
    }


def position_block(start: int, count: int) -> Any:
    import torch

    return torch.arange(start, start + count, dtype=torch.int64)


def tag(pos: np.ndarray) -> str:
    return f"pos{int(pos.min())}-{int(pos.max())}"


def common_params(text: Any, rp: dict[str, Any], inv: np.ndarray, head_dim: int, scale: float) -> dict[str, Any]:
    return {
        "rope_type": rp.get("rope_type"),
        "theta": rp.get("rope_theta"),
        "head_dim": head_dim,
        "rotary_dim": int(2 * inv.size),
        "rotated_dim": int(2 * np.count_nonzero(inv)),
        "partial_rotary_factor": rp.get("partial_rotary_factor"),
        "rope_parameters": jsonable(copy.deepcopy(rp)),
        "max_position_embeddings": rope_attr(text, "max_position_embeddings"),
        "original_max_position_embeddings": rp.get("original_max_position_embeddings"),
        "attention_scaling": scale,
    }


def run_half(
    c: Collector,
    cfg_name: str,
    module: Any,
    cls: str,
    text: Any,
    head_dim: int,
    positions: list[tuple[int, int]],
    *,
    layer_type: str | None = None,
    extra_notes: Sequence[str] = (),
    ctor: str,
    layout: str = "half",
    module_factory: Any = None,
    extra_params: dict[str, Any] | None = None,
    extra_arrays: dict[str, tuple[np.ndarray, str]] | None = None,
) -> None:
    """Goldens for a module returning (cos, sin): one per (start, count) block of positions.

    A block (start, count, n) is cut from one forward call over positions 0..n-1 (rows start..start+count-1 kept),
    for dynamic types whose inv_freq depends on the call's max position. ``layout`` names how the columns map to
    inv_freq: 'half' (cat(freqs, freqs)), 'interleaved' (repeat_interleave(freqs, 2)), 'half-width' (freqs alone).
    ``module_factory`` builds a fresh module for each call (dynamic types change the buffer in forward).
    """
    import torch

    rp = text.rope_parameters[layer_type] if layer_type is not None else text.rope_parameters
    hidden = rope_attr(text, "hidden_size")
    for block in positions:
        start, count = block[0], block[1]
        evaluated = block[2] if len(block) > 2 else None
        if module_factory is not None:
            module = module_factory()
        pos = position_block(start, count) if evaluated is None else position_block(0, evaluated)
        x = torch.zeros(1, pos.numel(), hidden, dtype=torch.float32)
        with torch.no_grad():
            if layer_type is None:
                cos, sin = module(x, pos[None])
            else:
                cos, sin = module(x, pos[None], layer_type)
        if evaluated is not None:
            pos, cos, sin = pos[start : start + count], cos[:, start : start + count], sin[:, start : start + count]
        prefix = f"{layer_type}_" if layer_type is not None else ""
        inv_t = getattr(module, f"{prefix}inv_freq")
        scale = float(getattr(module, f"{prefix}attention_scaling"))
        inv = t2np(inv_t)
        cos_np, sin_np = t2np(cos[0]), t2np(sin[0])
        width = inv.size if layout == "half-width" else 2 * inv.size
        if cos_np.dtype != np.float32 or cos_np.shape != (count, width):
            raise AssertionError(f"{cfg_name}: unexpected forward output {cos_np.dtype} {cos_np.shape}")
        p64 = t2np(pos).astype(np.float64)
        col_freq = {
            "half": np.concatenate([inv, inv]),
            "interleaved": np.repeat(inv, 2),
            "half-width": inv,
        }[layout].astype(np.float64)
        col_rule = {"half": f"j % {inv.size}", "interleaved": "j // 2", "half-width": "j"}[layout]
        angle = p64[:, None] * col_freq[None, :]
        seq_seen = (int(pos.max()) + 1) if evaluated is None else evaluated
        params = common_params(text, rp, inv, head_dim, scale)
        params.update(
            {
                "layout": layout,
                "positions": {"kind": "arange", "start": start, "count": count},
                "seq_len_seen": seq_seen,
                "x": f"torch.zeros(1, {count if evaluated is None else evaluated}, {hidden}, dtype=torch.float32) "
                "(forward uses only its dtype/device)",
            }
        )
        if evaluated is not None:
            params["positions"] = {
                "kind": "rows of one call",
                "evaluated": {"start": 0, "count": evaluated},
                "rows_kept": {"start": start, "count": count},
            }
        params.update(extra_params or {})
        rtype = params["rope_type"]
        notes = list(extra_notes)
        arrays: dict[str, np.ndarray] = {
            "cos": cos_np,
            "sin": sin_np,
            "position_ids": t2np(pos),
            "inv_freq": inv,
            "attention_scaling": np.array(scale, dtype=np.float64),
        }
        passed = (
            f"the position ids passed to forward (as position_ids[None]): {start}..{start + count - 1}"
            if evaluated is None
            else f"the kept rows' position ids {start}..{start + count - 1} of the call with position ids "
            f"0..{evaluated - 1} (torch.arange({evaluated})[None]); cos/sin are those rows of its output"
        )
        array_notes = {
            "cos": f"forward(x, position_ids)[0][0] ({count}, {width}): attention_scaling * cos(p * "
            f"inv_freq[{col_rule}])",
            "sin": f"forward(x, position_ids)[1][0] ({count}, {width}): attention_scaling * sin(p * "
            f"inv_freq[{col_rule}])",
            "position_ids": passed,
            "inv_freq": f"the module's {prefix}inv_freq buffer after forward ({inv.size},)",
            "attention_scaling": f"float64 scalar: the module's {prefix}attention_scaling after forward",
        }
        for key, (value, meaning) in (extra_arrays or {}).items():
            arrays[key] = value
            array_notes[key] = meaning
        if rtype == "longrope":
            omp = int(rp["original_max_position_embeddings"])
            short = t2np(getattr(module, f"{prefix}original_inv_freq"))
            long_ = t2np(getattr(module, f"{prefix}long_inv_freq"))
            used = "long_factor" if seq_seen > omp else "short_factor"
            same = {"short_factor": bool(np.array_equal(inv, short)), "long_factor": bool(np.array_equal(inv, long_))}
            if not same[used] or same["short_factor"] == same["long_factor"]:
                raise AssertionError(f"{cfg_name}: longrope factor choice not as expected ({used}, {same})")
            params["longrope_factor_used"] = used
            arrays["inv_freq_short"] = short
            arrays["inv_freq_long"] = long_
            array_notes["inv_freq_short"] = (
                f"the module's {prefix}original_inv_freq buffer: the short_factor inv_freq (built at __init__, "
                "seq_len None)"
            )
            array_notes["inv_freq_long"] = (
                f"the module's {prefix}long_inv_freq attribute: ROPE_INIT_FUNCTIONS['longrope'](config, "
                f"seq_len={omp} + 1), set by the first forward"
            )
            notes.append(
                f"dynamic_rope_update (longrope): seq_len = max(position_ids) + 1 = {seq_seen}; HF uses "
                f"long_inv_freq when seq_len > original_max_position_embeddings ({omp}), else original_inv_freq: "
                f"{used} here, for every position of the call (the choice is per call, not per position). The "
                f"inv_freq buffer equals inv_freq_{used.split('_')[0]} bit for bit"
            )
        elif "dynamic" in rtype:
            notes.append(f"dynamic_rope_update: seq_len = max(position_ids) + 1 = {seq_seen}")
        else:
            notes.append(
                f"dynamic_rope_update is a no-op for rope_type {rtype!r} (only 'dynamic' types and 'longrope' update "
                "inv_freq in forward): the buffer is the __init__ value"
            )
        lt_call = f", {layer_type!r}" if layer_type is not None else ""
        name = f"{cfg_name}_{prefix}{tag(t2np(pos))}"
        call = f"{ctor}; module(x, torch.arange({start}, {start + count})[None]{lt_call})"
        if evaluated is not None:
            name = f"{cfg_name}_{prefix}n{evaluated}_{tag(t2np(pos))}"
            call = f"{ctor}; module(x, torch.arange({evaluated})[None]{lt_call}), rows {start}..{start + count - 1}"
        c.add(
            name,
            arrays,
            config=cfg_name,
            cls=cls,
            call=call,
            params=params,
            array_notes=array_notes,
            notes=notes,
            attention_scaling=scale,
            reference_check=float32_check(cos_np, sin_np, angle, scale),
            layer_type=layer_type,
        )


# --------------------------------------------------------------------------------------------------------------
# The models
# --------------------------------------------------------------------------------------------------------------


def make_simple(c: Collector) -> None:
    """Single-rope-dict decoder models: Llama, Qwen2, Mistral, Phi-3, Phi, GPT-NeoX."""
    from transformers.models.cohere.modeling_cohere import CohereRotaryEmbedding
    from transformers.models.falcon.modeling_falcon import FalconRotaryEmbedding
    from transformers.models.gpt_neox.modeling_gpt_neox import GPTNeoXRotaryEmbedding
    from transformers.models.gpt_oss.modeling_gpt_oss import GptOssRotaryEmbedding
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding
    from transformers.models.mistral.modeling_mistral import MistralRotaryEmbedding
    from transformers.models.phi.modeling_phi import PhiRotaryEmbedding
    from transformers.models.phi3.modeling_phi3 import Phi3RotaryEmbedding
    from transformers.models.qwen2.modeling_qwen2 import Qwen2RotaryEmbedding
    from transformers.models.qwen3.modeling_qwen3 import Qwen3RotaryEmbedding

    table = [
        (
            "llama-3.1-8b",
            LlamaRotaryEmbedding,
            "LlamaModel.__init__",
            [(0, 64), (8176, 32), (131040, 32)],
            [
                "llama3 is static: one inv_freq for every position; the blocks straddle "
                "original_max_position_embeddings (8192) and end at max_position_embeddings (131072)",
                "transformers 5.24 moves the transformers-4 'rope_scaling' dict into config.rope_parameters and adds "
                "rope_theta from the top level",
            ],
        ),
        (
            "qwen2.5-7b-yarn",
            Qwen2RotaryEmbedding,
            "Qwen2Model.__init__",
            [(0, 64), (32752, 32), (131040, 32)],
            [
                "YaRN is static in HF (no forward update): one inv_freq and attention_scaling = 0.1 * ln(4) + 1 for "
                "every position, also below 32768. Blocks: straddling original_max_position_embeddings 32768, and "
                "at the end of the 4x context (131072; max_position_embeddings stays 32768 in the config)",
                "rope_scaling's transformers-4 key 'type': 'yarn' is kept in rope_parameters beside the added "
                "rope_type 'yarn' (standardize_rope_params: rope_type = setdefault(get('type')))",
                "beta_fast/beta_slow default to 32/1, truncate to True (floor/ceil of the correction range)",
            ],
        ),
        (
            "mistral-7b-v0.1",
            MistralRotaryEmbedding,
            "MistralModel.__init__",
            [(0, 64), (32736, 32)],
            ["default rope: inv_freq = 1 / theta^(arange(0, head_dim, 2, dtype=float) / head_dim)"],
        ),
        (
            "phi-3-mini-128k",
            Phi3RotaryEmbedding,
            "Phi3Model.__init__",
            [(0, 64), (4064, 32), (4080, 32), (131040, 32)],
            [
                "LongRoPE: the top-level original_max_position_embeddings (4096) is copied into rope_parameters by "
                "standardize_rope_params (it wins over a value inside rope_scaling); rope_parameters has no 'factor', "
                "so _compute_longrope_parameters uses factor = max_position_embeddings / original = 32 and "
                "attention_factor = sqrt(1 + ln(32) / ln(4096)) for short and long alike",
                "inv_freq = 1 / (ext_factors * theta^(arange(0, dim, 2, int64).float() / dim)), ext_factors the "
                "short or long list as float32",
            ],
        ),
        (
            "phi-2",
            PhiRotaryEmbedding,
            "PhiModel.__init__",
            [(0, 64), (2016, 32)],
            [
                "partial rotary: the top-level partial_rotary_factor 0.4 goes into rope_parameters; dim = "
                "int(head_dim * 0.4) = int(80 * 0.4) = 32, inv_freq = 1 / theta^(arange(0, 32, 2) / 32) (the "
                "exponent's denominator is the rotary dim); apply_rotary_pos_emb rotates head dims 0..31 with "
                "rotate_half inside those 32 and passes 32..79 through",
            ],
        ),
        (
            "pythia-160m",
            GPTNeoXRotaryEmbedding,
            "GPTNeoXModel.__init__",
            [(0, 64), (2016, 32)],
            [
                "GPT-NeoX spellings: GPTNeoXConfig.convert_rope_params_to_dict sets rope_parameters.rope_theta from "
                "rotary_emb_base (default_theta 10000 if absent) and partial_rotary_factor from rotary_pct (0.25 "
                "if absent); dim = int(64 * 0.25) = 16",
            ],
        ),
        (
            "llama-3.2-1b",
            LlamaRotaryEmbedding,
            "LlamaModel.__init__",
            [(0, 64), (8160, 32), (131040, 32)],
            [
                "llama3 is static: one inv_freq for every position. Factor 32 (Llama 3.1: 8), low/high 1/4, "
                "original 8192, head_dim 64 (32 frequencies); blocks: the start, the end of the original 8192 "
                "context and the end of max_position_embeddings (131072)",
            ],
        ),
        (
            "qwen3-8b-yarn",
            Qwen3RotaryEmbedding,
            "Qwen3Model.__init__",
            [(0, 64), (8160, 32), (40928, 32), (131040, 32)],
            [
                "YaRN is static in HF: one inv_freq and attention_scaling = 0.1 * ln(4) + 1 for every position. The "
                "published rope_scaling uses the transformers-5 key 'rope_type' (no 'type'); factor 4.0 is given, so "
                "max_position_embeddings (40960) / original (32768) is not used. Blocks: the start, the end of an "
                "8192-position context, the end of max_position_embeddings (40960) and the end of the 4x context "
                "(131072) the model card names",
                "beta_fast/beta_slow default to 32/1, truncate to True (floor/ceil of the correction range)",
            ],
        ),
        (
            "phi-3.5-mini",
            Phi3RotaryEmbedding,
            "Phi3Model.__init__",
            [(0, 64), (4064, 32), (8160, 32), (131040, 32)],
            [
                "LongRoPE as for Phi-3-mini-128k (same rules, different factor lists): short_factor while "
                "max(position_ids) + 1 <= 4096, long_factor above, chosen per call; no 'factor' key, so factor = "
                "131072 / 4096 = 32 and attention_factor = sqrt(1 + ln(32) / ln(4096)) for short and long alike",
            ],
        ),
        (
            "phi-4-mini",
            Phi3RotaryEmbedding,
            "Phi3Model.__init__",
            [(0, 64), (4064, 32), (8160, 32), (131040, 32)],
            [
                "LongRoPE with partial rotary: partial_rotary_factor 0.75 of head_dim 128 (3072 / 24) -> rotary dim "
                "int(128 * 0.75) = 96, 48 frequencies, one short and one long factor each; the exponent's "
                "denominator is the rotary dim 96 (inv_freq = 1 / (ext_factors * theta^(arange(0, 96, 2) / 96))). "
                "apply_rotary_pos_emb rotates head dims 0..95 (rotate_half inside those 96) and passes 96..127 "
                "through",
                "short_factor is all ones (plain rope below 4096 positions, times the attention factor); factor = "
                "131072 / 4096 = 32 and attention_factor = sqrt(1 + ln(32) / ln(4096)) for short and long alike",
            ],
        ),
        (
            "gpt-oss-20b",
            GptOssRotaryEmbedding,
            "GptOssModel.__init__",
            [(0, 64), (8160, 32), (131040, 32)],
            [
                "layout half-width: GptOssRotaryEmbedding.forward returns cos/sin of freqs alone (no cat), shape "
                "(seq, head_dim / 2 = 32); _apply_rotary_emb splits q into halves (torch.chunk(x, 2)) and computes "
                "(x1 cos - x2 sin, x2 cos + x1 sin): the rotate_half pairing (j, j + 32) with a half-width cache. "
                "The full-width equivalent is cat((cos, cos), -1)",
                "YaRN with truncate false: the correction range bounds are not floored/ceiled (find_correction_range "
                "keeps the real low/high); factor 32, beta 32/1, original 4096 (initial_context_length 4096 is not "
                "read by the rotary class); attention_scaling = 0.1 * ln(32) + 1",
                "one rotary module serves both layer types (sliding_attention with window 128 and full_attention): "
                "GptOssModel builds a single rotary_emb and forward takes no layer_type",
            ],
            {"layout": "half-width"},
        ),
        (
            "command-r-v01",
            CohereRotaryEmbedding,
            "CohereModel.__init__",
            [(0, 64), (8160, 32)],
            [
                "layout interleaved: CohereRotaryEmbedding.forward builds emb = repeat_interleave(freqs, 2, -1) "
                "(not cat), so cos[:, 2i] = cos[:, 2i + 1] = cos(p * inv_freq[i]); Cohere's rotate_half pairs "
                "(x[2i], x[2i + 1]) (stack(-x[1::2], x[::2]).flatten): GPT-J / interleaved rotary on all 128 dims",
                "default rope, theta 8000000 (the top-level rope_theta), head_dim 8192 / 64 = 128; blocks end at "
                "max_position_embeddings 8192",
            ],
            {"layout": "interleaved"},
        ),
        (
            "falcon-7b",
            FalconRotaryEmbedding,
            "FalconModel.__init__",
            [(0, 64), (2016, 32), (8160, 32)],
            [
                "the published config has no RoPE field: FalconConfig defaults rope_theta 10000 and "
                "max_position_embeddings 2048 (alibi false selects rotary); head_dim 4544 / 71 = 64, default rope",
                "blocks: the start, the end of max_position_embeddings (2048) and, past it, the end of an "
                "8192-position context (default rope is static: nothing changes past 2048)",
            ],
        ),
    ]
    for cfg_name, klass, owner, positions, notes, *options in table:
        config = load_config(c, cfg_name)
        module = klass(config=config)
        head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
        run_half(
            c,
            cfg_name,
            module,
            f"{klass.__module__}.{klass.__name__}",
            config,
            head_dim,
            positions,
            extra_notes=notes + [f"module built as {owner} builds it: {klass.__name__}(config=config)"],
            ctor=f"{klass.__name__}(config=AutoConfig.from_pretrained('configs/{cfg_name}'))",
            **(options[0] if options else {}),
        )


def make_gemma3(c: Collector) -> None:
    from transformers.models.gemma3.modeling_gemma3 import Gemma3RotaryEmbedding

    for cfg_name, far in (("gemma-3-1b-it", 32736), ("gemma-3-4b-it", 131040)):
        config = load_config(c, cfg_name)
        text = config.get_text_config()
        module = Gemma3RotaryEmbedding(text)
        layer_types = sorted(set(text.layer_types))
        counts = {lt: text.layer_types.count(lt) for lt in layer_types}
        for lt in layer_types:
            notes = [
                "module built as Gemma3TextModel.__init__ builds it: Gemma3RotaryEmbedding(config) with the text "
                "config; Gemma3TextModel.forward calls it once per layer type: rotary_emb(hidden_states, "
                "position_ids, layer_type)",
                f"layer types ({len(text.layer_types)} layers): {counts}; the pattern comes from "
                "sliding_window_pattern (6: every 6th layer full_attention) since the config has no layer_types",
                "Gemma3TextConfig.convert_rope_params_to_dict: rope_parameters = {sliding_attention: {rope_type "
                "default}, full_attention: {rope_type default}}; a transformers-4 rope_scaling dict is merged into "
                "full_attention only; full_attention.rope_theta = rope_theta (default 1e6), "
                "sliding_attention.rope_theta = rope_local_base_freq (default 1e4)",
                "default rope here is Gemma3RotaryEmbedding.compute_default_rope_parameters: 1 / theta^(arange(0, "
                "head_dim, 2, dtype=float) / head_dim)",
            ]
            if cfg_name == "gemma-3-4b-it":
                notes.append(
                    "the published text_config names no rope_theta, head_dim or heads: they are Gemma3TextConfig "
                    "defaults; the linear factor 8 applies to full_attention layers only (sliding layers stay "
                    "default rope with theta 10000)"
                )
            run_half(
                c,
                cfg_name,
                module,
                "transformers.models.gemma3.modeling_gemma3.Gemma3RotaryEmbedding",
                text,
                int(text.head_dim),
                [(0, 64), (far, 32)],
                layer_type=lt,
                extra_notes=notes,
                ctor=f"Gemma3RotaryEmbedding(AutoConfig.from_pretrained('configs/{cfg_name}')"
                + (".text_config)" if cfg_name == "gemma-3-4b-it" else ")"),
            )


def make_gemma4(c: Collector) -> None:
    from transformers.models.gemma4.modeling_gemma4 import Gemma4TextRotaryEmbedding

    cfg_name = "gemma-4-e2b-it"
    config = load_config(c, cfg_name)
    text = config.text_config
    module = Gemma4TextRotaryEmbedding(text)
    layer_types = sorted(set(text.layer_types))
    counts = {lt: text.layer_types.count(lt) for lt in layer_types}
    for lt in layer_types:
        head_dim = int(text.per_layer_config[lt].head_dim)
        notes = [
            "module built as Gemma4TextModel.__init__ builds it: Gemma4TextRotaryEmbedding(config) with the text "
            "config; forward(hidden_states, position_ids, layer_type) per layer type",
            f"layer types ({len(text.layer_types)} layers): {counts}. head_dim per layer type comes from "
            f"config.per_layer_config[layer_type] (full_attention layers get global_head_dim 512): {head_dim} here",
            "Gemma4TextConfig.convert_rope_params_to_dict does no transformers-4 conversion: rope_parameters is "
            "read as nested per layer type",
        ]
        if text.rope_parameters[lt]["rope_type"] == "proportional":
            notes.append(
                "'proportional' (_compute_proportional_rope_parameters): rope_angles = int(partial_rotary_factor * "
                "head_dim // 2) = int(0.25 * 512 // 2) = 64; inv_freq[k] = 1 / theta^(2k / head_dim) for k < 64 "
                "(the exponent's denominator is the full head_dim 512, not the rotated dim 128), then head_dim/2 - "
                "64 = 192 zeros; inv_freq /= factor (factor 1.0 when absent); attention_factor 1. So cos = 1, sin = "
                "0 on columns 64..255 and 320..511, and the rotated pairs (rotate_half over the whole 512-dim head) "
                "are columns (j, j + 256) for j < 64 -- not the first 128 dims as in Phi/NeoX partial rotary"
            )
        run_half(
            c,
            cfg_name,
            module,
            "transformers.models.gemma4.modeling_gemma4.Gemma4TextRotaryEmbedding",
            text,
            head_dim,
            [(0, 64), (131040, 32)],
            layer_type=lt,
            extra_notes=notes,
            ctor=f"Gemma4TextRotaryEmbedding(AutoConfig.from_pretrained('configs/{cfg_name}').text_config)",
        )


def make_deepseek(c: Collector) -> None:
    import torch
    from transformers.models.deepseek_v2.modeling_deepseek_v2 import DeepseekV2RotaryEmbedding, yarn_apply_mscale

    cfg_name = "deepseek-v2-lite"
    config = load_config(c, cfg_name)
    module = DeepseekV2RotaryEmbedding(config=config)
    rp = config.rope_parameters
    qk_head_dim = config.qk_nope_head_dim + config.qk_rope_head_dim
    softmax_scale = float(yarn_apply_mscale(rp, qk_head_dim ** (-0.5)))
    for start, count in ((0, 64), (4080, 32), (163808, 32)):
        pos = position_block(start, count)
        x = torch.zeros(1, count, config.hidden_size, dtype=torch.float32)
        with torch.no_grad():
            freqs_cis = module(x, pos[None])
        if freqs_cis.dtype != torch.complex64:
            raise AssertionError(f"deepseek forward returned {freqs_cis.dtype}")
        inv = t2np(module.inv_freq)
        scale = float(module.attention_scaling)
        cos_np = t2np(freqs_cis[0].real).astype(np.float32)
        sin_np = t2np(freqs_cis[0].imag).astype(np.float32)
        p64 = t2np(pos).astype(np.float64)
        angle = p64[:, None] * inv.astype(np.float64)[None, :]
        params = common_params(config, rp, inv, int(config.qk_rope_head_dim), scale)
        params.update(
            {
                "layout": "interleaved-complex",
                "positions": {"kind": "arange", "start": start, "count": count},
                "seq_len_seen": int(pos.max()) + 1,
                "qk_rope_head_dim": config.qk_rope_head_dim,
                "qk_nope_head_dim": config.qk_nope_head_dim,
                "qk_head_dim": qk_head_dim,
                "softmax_scale": softmax_scale,
                "x": f"torch.zeros(1, {count}, {config.hidden_size}, dtype=torch.float32) (only dtype/device used)",
            }
        )
        arrays = {
            "cos": cos_np,
            "sin": sin_np,
            "cos_interleaved": np.repeat(cos_np, 2, axis=1),
            "sin_interleaved": np.repeat(sin_np, 2, axis=1),
            "position_ids": t2np(pos),
            "inv_freq": inv,
            "attention_scaling": np.array(scale, dtype=np.float64),
            "softmax_scale": np.array(softmax_scale, dtype=np.float64),
        }
        array_notes = {
            "cos": f"forward(x, position_ids)[0].real ({count}, 32): the complex64 freqs_cis = torch.polar(1, p * "
            "inv_freq) * attention_scaling, real part (exact split of the complex output)",
            "sin": f"forward(x, position_ids)[0].imag ({count}, 32): its imaginary part",
            "cos_interleaved": "np.repeat(cos, 2, axis=1) (seq, 64): not a framework output but an exact copy in "
            "the layout apply_rotary_emb applies: q_pe pairs (2i, 2i+1) are complex numbers multiplied by "
            "freqs_cis[i], i.e. column 2i and 2i+1 both use inv_freq[i]",
            "sin_interleaved": "np.repeat(sin, 2, axis=1) (seq, 64), as cos_interleaved",
            "position_ids": f"the position ids passed to forward: {start}..{start + count - 1}",
            "inv_freq": "the module's inv_freq buffer after forward (32,)",
            "attention_scaling": "float64 scalar: module.attention_scaling (the cos/sin factor): "
            "get_mscale(40, 0.707) / get_mscale(40, 0.707) = 1.0",
            "softmax_scale": "float64 scalar: DeepseekV2Attention.scaling = yarn_apply_mscale(rope_parameters, "
            "qk_head_dim ** -0.5) = 192^-0.5 * (0.1 * mscale_all_dim * ln(factor) + 1)^2, called from transformers",
        }
        notes = [
            "module built as DeepseekV2Model.__init__ builds it: DeepseekV2RotaryEmbedding(config=config); "
            "DeepseekV2Config.__post_init__ sets head_dim = qk_rope_head_dim (64), so the rotary dim is 64",
            "rope_scaling (transformers-4 spelling, 'type': 'yarn') becomes rope_parameters with rope_type 'yarn'; "
            "the integer rope_theta 10000 and factor 40 stay ints",
            "YaRN attention_factor: mscale and mscale_all_dim are both set, so attention_factor = get_mscale(factor, "
            "mscale) / get_mscale(factor, mscale_all_dim) = 1.0 exactly (get_mscale(s, m) = 0.1 m ln s + 1): the "
            "cos/sin carry no scaling. DeepSeek instead scales the softmax: DeepseekV2Attention.scaling = "
            "qk_head_dim^-0.5 * get_mscale(factor, mscale_all_dim)^2 (yarn_apply_mscale); recorded as softmax_scale",
            "forward returns one complex tensor, not (cos, sin): freqs_cis = torch.polar(ones, freqs) * "
            "attention_scaling, and apply_rotary_emb multiplies view_as_complex(q_pe.reshape(..., -1, 2)) by it: "
            "an interleaved (GPT-J style) layout on the 64 rope dims of q and k",
            "dynamic_rope_update is a no-op for 'yarn': the buffer is the __init__ value",
        ]
        c.add(
            f"{cfg_name}_{tag(t2np(pos))}",
            arrays,
            config=cfg_name,
            cls="transformers.models.deepseek_v2.modeling_deepseek_v2.DeepseekV2RotaryEmbedding",
            call=f"DeepseekV2RotaryEmbedding(config=AutoConfig.from_pretrained('configs/{cfg_name}')); "
            f"module(x, torch.arange({start}, {start + count})[None])",
            params=params,
            array_notes=array_notes,
            notes=notes,
            attention_scaling=scale,
            reference_check=float32_check(cos_np, sin_np, angle, scale),
        )


def make_deepseek_v3(c: Collector) -> None:
    import torch
    from transformers.models.deepseek_v3.modeling_deepseek_v3 import DeepseekV3Attention, DeepseekV3RotaryEmbedding

    cfg_name = "deepseek-v3"
    config = load_config(c, cfg_name)
    module = DeepseekV3RotaryEmbedding(config=config)
    with torch.device("meta"):
        attention = DeepseekV3Attention(config, layer_idx=0)  # no weights; only its scaling is read
    softmax_scale = float(attention.scaling)
    qk_head_dim = config.qk_nope_head_dim + config.qk_rope_head_dim
    run_half(
        c,
        cfg_name,
        module,
        "transformers.models.deepseek_v3.modeling_deepseek_v3.DeepseekV3RotaryEmbedding",
        config,
        int(config.qk_rope_head_dim),
        [(0, 64), (4080, 32), (8160, 32), (163808, 32)],
        extra_notes=[
            "module built as DeepseekV3Model.__init__ builds it: DeepseekV3RotaryEmbedding(config=config); "
            "DeepseekV3Config sets head_dim = qk_rope_head_dim (64), so the rotary dim is 64",
            "unlike DeepSeek-V2 (complex freqs_cis), V3's rotary class returns (cos, sin) = cat((freqs, freqs), -1) "
            "like Llama (layout half). The attention applies them with apply_rotary_pos_emb_interleave when "
            f"config.rope_interleave (default True; here {config.rope_interleave}): it takes the first 32 columns "
            "(cos[..., :32]) and rotates the interleaved pairs (q[2i], q[2i+1]) of q_pe by inv_freq[i], writing "
            "the result de-interleaved (evens' results then odds'). So the cache is half-layout, the pairing of q "
            "and k interleaved",
            "YaRN attention_factor: mscale = mscale_all_dim = 1.0, so attention_factor = get_mscale(40, 1.0) / "
            "get_mscale(40, 1.0) = 1.0 exactly: cos/sin carry no scaling; the attention scales the softmax instead "
            "(softmax_scale)",
            "dynamic_rope_update is a no-op for 'yarn': the buffer is the __init__ value",
        ],
        ctor=f"DeepseekV3RotaryEmbedding(config=AutoConfig.from_pretrained('configs/{cfg_name}'))",
        extra_params={
            "qk_rope_head_dim": config.qk_rope_head_dim,
            "qk_nope_head_dim": config.qk_nope_head_dim,
            "qk_head_dim": qk_head_dim,
            "rope_interleave": bool(config.rope_interleave),
            "application": "apply_rotary_pos_emb_interleave: pairs (2i, 2i+1) of q_pe/k_pe rotated by cos[..., i]",
            "softmax_scale": softmax_scale,
            "softmax_scale_rule": "DeepseekV3Attention.scaling = qk_head_dim^-0.5 * get_mscale(factor, "
            "mscale_all_dim)^2 = 192^-0.5 * (0.1 * 1.0 * ln 40 + 1)^2 (yarn_apply_mscale), read from a "
            "DeepseekV3Attention built on the meta device",
        },
        extra_arrays={
            "softmax_scale": (
                np.array(softmax_scale, dtype=np.float64),
                "float64 scalar: DeepseekV3Attention(config, layer_idx=0).scaling, the attention's softmax scale",
            )
        },
    )


def make_llama4(c: Collector) -> None:
    import torch
    from transformers.models.llama4.modeling_llama4 import Llama4TextRotaryEmbedding

    cfg_name = "llama-4-scout"
    config = load_config(c, cfg_name)
    text = config.text_config
    module = Llama4TextRotaryEmbedding(config=text)
    rp = text.rope_parameters
    rope_layers = [i for i, use in enumerate(text.no_rope_layers) if use]
    nope_layers = [i for i, use in enumerate(text.no_rope_layers) if not use]
    layer_types = list(text.layer_types)
    for start, count in ((0, 64), (8160, 32), (131040, 32)):
        pos = position_block(start, count)
        x = torch.zeros(1, count, text.hidden_size, dtype=torch.float32)
        with torch.no_grad():
            freqs_cis = module(x, pos[None])
        if freqs_cis.dtype != torch.complex64:
            raise AssertionError(f"llama4 forward returned {freqs_cis.dtype}")
        inv = t2np(module.inv_freq)
        scale = float(module.attention_scaling)
        cos_np = t2np(freqs_cis[0].real).astype(np.float32)
        sin_np = t2np(freqs_cis[0].imag).astype(np.float32)
        angle = t2np(pos).astype(np.float64)[:, None] * inv.astype(np.float64)[None, :]
        params = common_params(text, rp, inv, int(text.head_dim), scale)
        params.update(
            {
                "layout": "interleaved-complex",
                "positions": {"kind": "arange", "start": start, "count": count},
                "seq_len_seen": int(pos.max()) + 1,
                "rope_layers": rope_layers,
                "nope_layers": nope_layers,
                "layer_types": {lt: layer_types.count(lt) for lt in sorted(set(layer_types))},
                "layer_types_rule": "layer i is chunked_attention (attention_chunk_size 8192) and applies RoPE "
                "when no_rope_layers[i] is 1, else full_attention without RoPE (NoPE; every 4th layer: i % 4 == 3)",
                "attention_chunk_size": text.attention_chunk_size,
                "attn_temperature_tuning": text.attn_temperature_tuning,
                "floor_scale": text.floor_scale,
                "attn_scale": text.attn_scale,
                "x": f"torch.zeros(1, {count}, {text.hidden_size}, dtype=torch.float32) (only dtype/device used)",
            }
        )
        arrays = {
            "cos": cos_np,
            "sin": sin_np,
            "cos_interleaved": np.repeat(cos_np, 2, axis=1),
            "sin_interleaved": np.repeat(sin_np, 2, axis=1),
            "position_ids": t2np(pos),
            "inv_freq": inv,
            "attention_scaling": np.array(scale, dtype=np.float64),
        }
        array_notes = {
            "cos": f"forward(x, position_ids)[0].real ({count}, 64): freqs_cis = torch.polar(1, p * inv_freq) * "
            "attention_scaling, real part (exact split of the complex64 output)",
            "sin": f"forward(x, position_ids)[0].imag ({count}, 64): its imaginary part",
            "cos_interleaved": "np.repeat(cos, 2, axis=1) (seq, 128): not a framework output but an exact copy in "
            "the layout apply_rotary_emb applies: q pairs (2i, 2i+1) are complex numbers multiplied by "
            "freqs_cis[i]",
            "sin_interleaved": "np.repeat(sin, 2, axis=1) (seq, 128), as cos_interleaved",
            "position_ids": f"the position ids passed to forward: {start}..{start + count - 1}",
            "inv_freq": "the module's inv_freq buffer after forward (64,)",
            "attention_scaling": "float64 scalar: module.attention_scaling (1.0: llama3 has no attention factor)",
        }
        notes = [
            "module built as Llama4TextModel.__init__ builds it: Llama4TextRotaryEmbedding(config=text_config)",
            "forward returns one complex64 tensor freqs_cis = torch.polar(ones, p * inv_freq) * attention_scaling "
            "(seq, head_dim / 2), not (cos, sin); apply_rotary_emb views q as complex pairs "
            "view_as_complex(q.reshape(..., -1, 2)) and multiplies: interleaved (GPT-J style) on all 128 head dims",
            "llama3 with low_freq_factor == high_freq_factor == 1: low_freq_wavelen = high_freq_wavelen = 8192, so "
            "there is no smooth band (the smoothing formula divides by high - low = 0, but no wavelength equals "
            "8192 exactly, so its inf/nan never reaches inv_freq): wavelengths above 8192 are divided by factor 16, "
            "the rest kept",
            f"NoPE layers: {len(nope_layers)} of {len(layer_types)} layers ({nope_layers}) apply no rotary at all "
            "(Llama4TextAttention.use_rope = no_rope_layers[i]); with attn_temperature_tuning they scale the query "
            "by log1p(floor((p + 1) / floor_scale)) * attn_scale + 1 instead (not a cache here)",
            "dynamic_rope_update is a no-op for 'llama3': the buffer is the __init__ value",
        ]
        c.add(
            f"{cfg_name}_{tag(t2np(pos))}",
            arrays,
            config=cfg_name,
            cls="transformers.models.llama4.modeling_llama4.Llama4TextRotaryEmbedding",
            call=f"Llama4TextRotaryEmbedding(config=AutoConfig.from_pretrained('configs/{cfg_name}').text_config); "
            f"module(x, torch.arange({start}, {start + count})[None])",
            params=params,
            array_notes=array_notes,
            notes=notes,
            attention_scaling=scale,
            reference_check=float32_check(cos_np, sin_np, angle, scale),
        )


def make_dynamic(c: Collector) -> None:
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    cfg_name = "llama-2-7b-dynamic"
    config = load_config(c, cfg_name)
    n = 2 * int(config.max_position_embeddings)
    run_half(
        c,
        cfg_name,
        None,
        "transformers.models.llama.modeling_llama.LlamaRotaryEmbedding",
        config,
        config.hidden_size // config.num_attention_heads,
        [(0, 64), (0, 64, n), (n - 32, 32, n)],
        extra_notes=[
            "module built as LlamaModel.__init__ builds it: LlamaRotaryEmbedding(config=config); a fresh module "
            "for every call, since dynamic_rope_update changes the inv_freq buffer in forward",
            "dynamic NTK (_compute_dynamic_ntk_parameters via dynamic_rope_update): seq_len = max(position_ids) + "
            "1; if seq_len > max_position_embeddings (4096), base = theta * ((factor * seq_len / 4096) - (factor - "
            "1))^(dim / (dim - 2)) and inv_freq = 1 / base^(arange(0, dim, 2) / dim) for the whole call; else the "
            "original inv_freq. So the same positions 0..63 get different caches in a 64-position call (original "
            "inv_freq) and in a call over 0..8191 (base 10000 * 3^(128/126))",
            f"n{n} goldens: one forward over position ids 0..{n - 1} (2 x max_position_embeddings), rows kept",
        ],
        ctor=f"LlamaRotaryEmbedding(config=AutoConfig.from_pretrained('configs/{cfg_name}'))",
        module_factory=lambda: LlamaRotaryEmbedding(config=config),
    )


def make_qwen2_vl(c: Collector) -> None:
    import torch
    from transformers.models.qwen2_vl.modeling_qwen2_vl import Qwen2VLModel, Qwen2VLRotaryEmbedding
    from transformers.processing_utils import ProcessorMixin

    cfg_name = "qwen2-vl-2b"
    config = load_config(c, cfg_name)
    text = config.text_config
    module = Qwen2VLRotaryEmbedding(config=text)
    rp = text.rope_parameters
    head_dim = text.hidden_size // text.num_attention_heads
    section = list(rp["mrope_section"])
    axis_of_col = np.concatenate([np.full(s, i % 3) for i, s in enumerate(section)] * 2)  # check only

    def forward(pos3: Any) -> tuple[np.ndarray, np.ndarray]:
        x = torch.zeros(1, pos3.shape[-1], text.hidden_size, dtype=torch.float32)
        with torch.no_grad():
            cos, sin = module(x, pos3)
        return t2np(cos[0]), t2np(sin[0])

    # --- case (b): a prompt holding one image, position ids from the model's own get_rope_index
    grid = [1, 8, 12]
    merge = config.vision_config.spatial_merge_size
    n_image = grid[0] * grid[1] * grid[2] // merge**2
    prefix_text = [151644, 872, 198]  # <|im_start|> user \n (only the token types matter for the positions)
    suffix_text = [74785, 419, 2168, 13, 151645, 198, 151644]
    ids_list = (
        prefix_text
        + [config.vision_start_token_id]
        + [config.image_token_id] * n_image
        + [config.vision_end_token_id]
        + suffix_text
    )
    input_ids = torch.tensor([ids_list], dtype=torch.int64)
    stub = types.SimpleNamespace(
        image_token_ids=[config.image_token_id], video_token_ids=[config.video_token_id], audio_token_ids=[None]
    )
    mm_token_type_ids = torch.tensor(ProcessorMixin.create_mm_token_type_ids(stub, input_ids.tolist()))
    with torch.device("meta"):
        vl_model = Qwen2VLModel(config)  # no weights are allocated; get_rope_index uses only its config
    image_grid_thw = torch.tensor([grid], dtype=torch.int64)
    position_ids, rope_deltas = vl_model.get_rope_index(input_ids, mm_token_type_ids, image_grid_thw=image_grid_thw)
    if position_ids.device.type != "cpu" or position_ids.shape != (3, 1, len(ids_list)):
        raise AssertionError(f"get_rope_index returned {position_ids.device} {tuple(position_ids.shape)}")

    text_ids = torch.arange(64, dtype=torch.int64).view(1, 1, -1).expand(3, 1, -1)
    far_ids = torch.arange(32736, 32768, dtype=torch.int64).view(1, 1, -1).expand(3, 1, -1)
    cases = [
        (
            "text_pos0-63",
            text_ids,
            "text only: torch.arange(64).view(1, 1, -1).expand(3, 1, -1), as "
            "Qwen2VLTextModel.forward builds position ids when none are passed (all three axes equal)",
        ),
        ("text_pos32736-32767", far_ids, "text only, the last 32 positions of max_position_embeddings (32768)"),
        (
            f"image_{grid[0]}x{grid[1]}x{grid[2]}",
            position_ids,
            "a prompt with one image: position ids from "
            "Qwen2VLModel.get_rope_index(input_ids, mm_token_type_ids, image_grid_thw)",
        ),
    ]
    for case, pos3, how in cases:
        cos, sin = forward(pos3)
        axes_c, axes_s = [], []
        for a in range(3):
            ca, sa = forward(pos3[a : a + 1].expand(3, -1, -1))
            axes_c.append(ca)
            axes_s.append(sa)
        cos_axes, sin_axes = np.stack(axes_c), np.stack(axes_s)
        pos_np = t2np(pos3[:, 0, :])
        inv = t2np(module.inv_freq)
        scale = float(module.attention_scaling)
        if cos.shape != (pos_np.shape[1], head_dim):
            raise AssertionError(f"qwen2-vl forward shape {cos.shape}")
        # check only: cos picks, per column, the axis its mrope_section band belongs to
        cols = np.arange(head_dim)
        sel_c = cos_axes[axis_of_col, :, cols].T
        sel_s = sin_axes[axis_of_col, :, cols].T
        selection_ok = bool(np.array_equal(sel_c, cos) and np.array_equal(sel_s, sin))
        if not selection_ok:
            raise AssertionError("qwen2-vl: forward output is not the mrope_section selection of the axes")
        angle = pos_np[axis_of_col, :].T.astype(np.float64) * np.concatenate([inv, inv]).astype(np.float64)[None, :]
        params = common_params(text, rp, inv, head_dim, scale)
        params.update(
            {
                "layout": "mrope",
                "mrope_section": section,
                "mrope_axis_of_column": "column j takes axis 0 (temporal) if j % 64 < 16, axis 1 (height) if "
                "16 <= j % 64 < 40, axis 2 (width) otherwise",
                "positions": {"kind": "3d", "how": how},
                "seq_len_seen": int(pos_np.max()) + 1,
                "x": f"torch.zeros(1, {pos_np.shape[1]}, {text.hidden_size}, dtype=torch.float32) (only dtype/device "
                "used)",
            }
        )
        arrays: dict[str, np.ndarray] = {
            "cos": cos,
            "sin": sin,
            "cos_mrope": cos.copy(),
            "sin_mrope": sin.copy(),
            "cos_axes": cos_axes,
            "sin_axes": sin_axes,
            "position_ids": pos_np,
            "inv_freq": inv,
            "attention_scaling": np.array(scale, dtype=np.float64),
        }
        array_notes = {
            "cos": f"forward(x, position_ids)[0][0] ({pos_np.shape[1]}, {head_dim}) with position_ids (3, 1, seq): "
            "already the M-RoPE recomposition in transformers 5.24 (see notes)",
            "sin": "forward(x, position_ids)[1][0], as cos",
            "cos_mrope": "the recomposed cos as HF applies it (apply_rotary_pos_emb(q, k, cos, sin) with plain "
            "rotate_half): identical to cos, since Qwen2VLRotaryEmbedding.forward does the recomposition itself",
            "sin_mrope": "the recomposed sin, identical to sin",
            "cos_axes": "(3, seq, head_dim): forward(x, position_ids[a:a+1].expand(3, -1, -1))[0][0] for axis a = "
            "0 (temporal), 1 (height), 2 (width): the plain cache of one axis's ids (every band then picks that "
            "axis), so cos[:, j] = cos_axes[axis_of_column[j], :, j]",
            "sin_axes": "(3, seq, head_dim), as cos_axes",
            "position_ids": "(3, seq) int64: the temporal, height and width ids passed to forward (batch axis "
            "squeezed)",
            "inv_freq": f"the module's inv_freq buffer ({inv.size},)",
            "attention_scaling": "float64 scalar: module.attention_scaling",
        }
        notes = [
            "module built as Qwen2VLTextModel.__init__ builds it: Qwen2VLRotaryEmbedding(config=text_config); the "
            "flat published config is split by Qwen2VLConfig.__post_init__ into text_config (Qwen2VLTextConfig) "
            "and vision_config",
            "rope_scaling {type: mrope, mrope_section} becomes rope_parameters with rope_type 'default' "
            "(Qwen2VLTextConfig.convert_rope_params_to_dict maps 'mrope' to 'default'; 'type': 'mrope' and "
            "mrope_section stay in the dict, mrope_section is ignored by validation); inv_freq is plain default "
            "rope over head_dim 128",
            "M-RoPE in transformers 5.24 (Qwen2VLRotaryEmbedding.forward + recomposition_frequencies): position_ids "
            "(3, bs, seq) -> freqs (3, bs, seq, 64) = ids * inv_freq; cos/sin of them (times attention_scaling); "
            "then freq.split(mrope_section=[16, 24, 24], dim=-1) and chunk i is taken from axis i % 3 (half-dims "
            "0..15 temporal, 16..39 height, 40..63 width), concatenated, then cat((freq, freq), -1) to head_dim. "
            "The attention applies them with the ordinary apply_rotary_pos_emb (rotate_half); there is no "
            "apply_multimodal_rotary_pos_emb in qwen2_vl any more. Same result as transformers 4's "
            "apply_multimodal_rotary_pos_emb (split of the full head_dim by mrope_section * 2, chunk i from axis "
            "i % 3)",
            f"selection check (numpy indexing, not arithmetic): cos == cos_axes[axis_of_column[j], :, j] and the "
            f"same for sin, bit for bit: {selection_ok}",
            "dynamic_rope_update is a no-op for rope_type 'default'",
        ]
        arrays_extra = {}
        if case.startswith("image"):
            arrays_extra = {
                "input_ids": t2np(input_ids[0]),
                "mm_token_type_ids": t2np(mm_token_type_ids[0]).astype(np.int64),
                "image_grid_thw": t2np(image_grid_thw),
                "rope_deltas": t2np(rope_deltas).astype(np.int64).reshape(-1),
            }
            array_notes.update(
                {
                    "input_ids": f"the prompt: 3 text tokens, vision_start ({config.vision_start_token_id}), "
                    f"{n_image} x image_token_id ({config.image_token_id}), vision_end "
                    f"({config.vision_end_token_id}), {len(suffix_text)} text tokens (text ids are placeholders; "
                    "only which ids are image tokens matters)",
                    "mm_token_type_ids": "ProcessorMixin.create_mm_token_type_ids on input_ids (1 for image_token_id, "
                    "0 otherwise; vision_start/vision_end are text)",
                    "image_grid_thw": f"[[t, h, w]] = {[grid]} in patches; with spatial_merge_size {merge} the "
                    f"image is {grid[1] // merge} x {grid[2] // merge} merged tokens = {n_image} image tokens",
                    "rope_deltas": "get_rope_index's second output: max(position) + 1 - seq_len (what generation "
                    "adds to later text positions)",
                }
            )
            params["prompt"] = {
                "image_grid_thw": [grid],
                "spatial_merge_size": merge,
                "image_tokens": n_image,
                "seq_len": len(ids_list),
                "rope_deltas": int(rope_deltas.reshape(-1)[0]),
            }
            notes.append(
                "get_rope_index (transformers 5.24 signature: input_ids, mm_token_type_ids, image_grid_thw): text "
                "runs get arange positions on all three axes continuing from current_pos; an image run gets "
                "temporal = current_pos + t_index, height = current_pos + row, width = current_pos + column over "
                "the merged (t, h/merge, w/merge) grid (get_vision_position_ids), then current_pos += max(h, w) // "
                "merge (the temporal extent is not counted); called on a Qwen2VLModel built on the meta device "
                "(no weights), with the ids on CPU"
            )
        arrays.update(arrays_extra)
        c.add(
            f"{cfg_name}_{case}",
            arrays,
            config=cfg_name,
            cls="transformers.models.qwen2_vl.modeling_qwen2_vl.Qwen2VLRotaryEmbedding",
            call=f"Qwen2VLRotaryEmbedding(config=AutoConfig.from_pretrained('configs/{cfg_name}').text_config); "
            "module(x, position_ids)  # position_ids (3, 1, seq)",
            params=params,
            array_notes=array_notes,
            notes=notes,
            attention_scaling=scale,
            reference_check=float32_check(cos, sin, angle, scale),
        )


def make_qwen2_5_vl(c: Collector) -> None:
    import torch
    from transformers.models.qwen2_5_vl.modeling_qwen2_5_vl import Qwen2_5_VLModel, Qwen2_5_VLRotaryEmbedding
    from transformers.processing_utils import ProcessorMixin

    cfg_name = "qwen2.5-vl-3b"
    config = load_config(c, cfg_name)
    text = config.text_config
    module = Qwen2_5_VLRotaryEmbedding(config=text)
    rp = text.rope_parameters
    head_dim = text.hidden_size // text.num_attention_heads
    section = list(rp["mrope_section"])
    axis_of_col = np.concatenate([np.full(s, i % 3) for i, s in enumerate(section)] * 2)  # check only

    def forward(pos3: Any) -> tuple[np.ndarray, np.ndarray]:
        x = torch.zeros(1, pos3.shape[-1], text.hidden_size, dtype=torch.float32)
        with torch.no_grad():
            cos, sin = module(x, pos3)
        return t2np(cos[0]), t2np(sin[0])

    # --- a prompt holding one image and one video, position ids from the model's own get_rope_index
    grid = [1, 8, 12]
    vgrid = [2, 8, 12]
    second_per_grid = 1.0  # temporal_patch_size (2) / fps (2): what the processor passes for a 2-fps video
    merge = config.vision_config.spatial_merge_size
    n_image = grid[0] * grid[1] * grid[2] // merge**2
    n_video = vgrid[0] * vgrid[1] * vgrid[2] // merge**2
    prefix_text = [151644, 872, 198]  # <|im_start|> user \n (only the token types matter for the positions)
    middle_text = [198, 198]
    suffix_text = [74785, 419, 2168, 13, 151645, 198, 151644]
    ids_list = (
        prefix_text
        + [config.vision_start_token_id]
        + [config.image_token_id] * n_image
        + [config.vision_end_token_id]
        + middle_text
        + [config.vision_start_token_id]
        + [config.video_token_id] * n_video
        + [config.vision_end_token_id]
        + suffix_text
    )
    input_ids = torch.tensor([ids_list], dtype=torch.int64)
    stub = types.SimpleNamespace(
        image_token_ids=[config.image_token_id], video_token_ids=[config.video_token_id], audio_token_ids=[None]
    )
    mm_token_type_ids = torch.tensor(ProcessorMixin.create_mm_token_type_ids(stub, input_ids.tolist()))
    with torch.device("meta"):
        vl_model = Qwen2_5_VLModel(config)  # no weights are allocated; get_rope_index uses only its config
    image_grid_thw = torch.tensor([grid], dtype=torch.int64)
    video_grid_thw = torch.tensor([vgrid], dtype=torch.int64)
    second_per_grid_ts = torch.tensor([second_per_grid], dtype=torch.float32)
    position_ids, rope_deltas = vl_model.get_rope_index(
        input_ids,
        mm_token_type_ids,
        image_grid_thw=image_grid_thw,
        video_grid_thw=video_grid_thw,
        second_per_grid_ts=second_per_grid_ts,
    )
    if position_ids.device.type != "cpu" or position_ids.shape != (3, 1, len(ids_list)):
        raise AssertionError(f"get_rope_index returned {position_ids.device} {tuple(position_ids.shape)}")

    text_ids = torch.arange(64, dtype=torch.int64).view(1, 1, -1).expand(3, 1, -1)
    far_ids = torch.arange(127968, 128000, dtype=torch.int64).view(1, 1, -1).expand(3, 1, -1)
    cases = [
        (
            "text_pos0-63",
            text_ids,
            "text only: torch.arange(64).view(1, 1, -1).expand(3, 1, -1), as "
            "Qwen2_5_VLTextModel.forward builds position ids when none are passed (all three axes equal)",
        ),
        ("text_pos127968-127999", far_ids, "text only, the last 32 positions of max_position_embeddings (128000)"),
        (
            f"image_{grid[0]}x{grid[1]}x{grid[2]}_video_{vgrid[0]}x{vgrid[1]}x{vgrid[2]}",
            position_ids,
            "a prompt with one image and one video: position ids from Qwen2_5_VLModel.get_rope_index(input_ids, "
            "mm_token_type_ids, image_grid_thw, video_grid_thw, second_per_grid_ts)",
        ),
    ]
    for case, pos3, how in cases:
        cos, sin = forward(pos3)
        axes_c, axes_s = [], []
        for a in range(3):
            ca, sa = forward(pos3[a : a + 1].expand(3, -1, -1))
            axes_c.append(ca)
            axes_s.append(sa)
        cos_axes, sin_axes = np.stack(axes_c), np.stack(axes_s)
        pos_np = t2np(pos3[:, 0, :])
        inv = t2np(module.inv_freq)
        scale = float(module.attention_scaling)
        if cos.shape != (pos_np.shape[1], head_dim):
            raise AssertionError(f"qwen2.5-vl forward shape {cos.shape}")
        # check only: cos picks, per column, the axis its mrope_section band belongs to
        cols = np.arange(head_dim)
        sel_c = cos_axes[axis_of_col, :, cols].T
        sel_s = sin_axes[axis_of_col, :, cols].T
        selection_ok = bool(np.array_equal(sel_c, cos) and np.array_equal(sel_s, sin))
        if not selection_ok:
            raise AssertionError("qwen2.5-vl: forward output is not the mrope_section selection of the axes")
        angle = pos_np[axis_of_col, :].T.astype(np.float64) * np.concatenate([inv, inv]).astype(np.float64)[None, :]
        params = common_params(text, rp, inv, head_dim, scale)
        params.update(
            {
                "layout": "mrope",
                "mrope_section": section,
                "mrope_axis_of_column": "column j takes axis 0 (temporal) if j % 64 < 16, axis 1 (height) if "
                "16 <= j % 64 < 40, axis 2 (width) otherwise",
                "positions": {"kind": "3d", "how": how},
                "seq_len_seen": int(pos_np.max()) + 1,
                "x": f"torch.zeros(1, {pos_np.shape[1]}, {text.hidden_size}, dtype=torch.float32) (only dtype/device "
                "used)",
            }
        )
        arrays: dict[str, np.ndarray] = {
            "cos": cos,
            "sin": sin,
            "cos_mrope": cos.copy(),
            "sin_mrope": sin.copy(),
            "cos_axes": cos_axes,
            "sin_axes": sin_axes,
            "position_ids": pos_np,
            "inv_freq": inv,
            "attention_scaling": np.array(scale, dtype=np.float64),
        }
        array_notes = {
            "cos": f"forward(x, position_ids)[0][0] ({pos_np.shape[1]}, {head_dim}) with position_ids (3, 1, seq): "
            "already the M-RoPE recomposition in transformers 5.24 (see notes)",
            "sin": "forward(x, position_ids)[1][0], as cos",
            "cos_mrope": "the recomposed cos as HF applies it (apply_rotary_pos_emb(q, k, cos, sin) with plain "
            "rotate_half): identical to cos, since Qwen2_5_VLRotaryEmbedding.forward does the recomposition itself",
            "sin_mrope": "the recomposed sin, identical to sin",
            "cos_axes": "(3, seq, head_dim): forward(x, position_ids[a:a+1].expand(3, -1, -1))[0][0] for axis a = "
            "0 (temporal), 1 (height), 2 (width): the plain cache of one axis's ids (every band then picks that "
            "axis), so cos[:, j] = cos_axes[axis_of_column[j], :, j]",
            "sin_axes": "(3, seq, head_dim), as cos_axes",
            "position_ids": "(3, seq) int64: the temporal, height and width ids passed to forward (batch axis "
            "squeezed)",
            "inv_freq": f"the module's inv_freq buffer ({inv.size},)",
            "attention_scaling": "float64 scalar: module.attention_scaling",
        }
        notes = [
            "module built as Qwen2_5_VLTextModel.__init__ builds it: Qwen2_5_VLRotaryEmbedding(config=text_config); "
            "the flat published config is split by Qwen2_5_VLConfig.__post_init__ into text_config "
            "(Qwen2_5_VLTextConfig) and vision_config",
            "rope_scaling {type: mrope, mrope_section} becomes rope_parameters with rope_type 'default' "
            "(Qwen2_5_VLTextConfig.convert_rope_params_to_dict maps 'mrope' to 'default'; 'type': 'mrope' and "
            "mrope_section stay in the dict, mrope_section is ignored by validation); inv_freq is plain default "
            "rope over head_dim 128",
            "M-RoPE in transformers 5.24 (Qwen2_5_VLRotaryEmbedding.forward + recomposition_frequencies): position_ids "
            "(3, bs, seq) -> freqs (3, bs, seq, 64) = ids * inv_freq; cos/sin of them (times attention_scaling); "
            "then freq.split(mrope_section=[16, 24, 24], dim=-1) and chunk i is taken from axis i % 3 (half-dims "
            "0..15 temporal, 16..39 height, 40..63 width), concatenated, then cat((freq, freq), -1) to head_dim. "
            "The attention applies them with the ordinary apply_rotary_pos_emb (rotate_half); there is no "
            "apply_multimodal_rotary_pos_emb in qwen2_5_vl any more. Same result as transformers 4's "
            "apply_multimodal_rotary_pos_emb (split of the full head_dim by mrope_section * 2, chunk i from axis "
            "i % 3)",
            f"selection check (numpy indexing, not arithmetic): cos == cos_axes[axis_of_column[j], :, j] and the "
            f"same for sin, bit for bit: {selection_ok}",
            "dynamic_rope_update is a no-op for rope_type 'default'",
        ]
        arrays_extra = {}
        if case.startswith("image"):
            arrays_extra = {
                "input_ids": t2np(input_ids[0]),
                "mm_token_type_ids": t2np(mm_token_type_ids[0]).astype(np.int64),
                "image_grid_thw": t2np(image_grid_thw),
                "video_grid_thw": t2np(video_grid_thw),
                "second_per_grid_ts": t2np(second_per_grid_ts).astype(np.float64),
                "rope_deltas": t2np(rope_deltas).astype(np.int64).reshape(-1),
            }
            array_notes.update(
                {
                    "input_ids": f"the prompt: 3 text tokens, vision_start ({config.vision_start_token_id}), "
                    f"{n_image} x image_token_id ({config.image_token_id}), vision_end "
                    f"({config.vision_end_token_id}), {len(middle_text)} text tokens, vision_start, {n_video} x "
                    f"video_token_id ({config.video_token_id}), vision_end, {len(suffix_text)} text tokens (text "
                    "ids are placeholders; only which ids are image or video tokens matters)",
                    "mm_token_type_ids": "ProcessorMixin.create_mm_token_type_ids on input_ids (1 for image_token_id, "
                    "2 for video_token_id, 0 otherwise; vision_start/vision_end are text)",
                    "image_grid_thw": f"[[t, h, w]] = {[grid]} in patches; with spatial_merge_size {merge} the "
                    f"image is {grid[1] // merge} x {grid[2] // merge} merged tokens = {n_image} image tokens",
                    "video_grid_thw": f"[[t, h, w]] = {[vgrid]} in patches (t = frames / temporal_patch_size): "
                    f"{vgrid[0]} x {vgrid[1] // merge} x {vgrid[2] // merge} = {n_video} video tokens",
                    "second_per_grid_ts": f"[{second_per_grid}] seconds per temporal grid step (float64 copy of the "
                    "float32 tensor passed): temporal_patch_size 2 / 2 fps",
                    "rope_deltas": "get_rope_index's second output: max(position) + 1 - seq_len (what generation "
                    "adds to later text positions)",
                }
            )
            params["prompt"] = {
                "image_grid_thw": [grid],
                "video_grid_thw": [vgrid],
                "second_per_grid_ts": [second_per_grid],
                "tokens_per_second": config.vision_config.tokens_per_second,
                "spatial_merge_size": merge,
                "image_tokens": n_image,
                "video_tokens": n_video,
                "seq_len": len(ids_list),
                "rope_deltas": int(rope_deltas.reshape(-1)[0]),
            }
            notes.append(
                "get_rope_index (transformers 5.24 signature: input_ids, mm_token_type_ids, image_grid_thw, "
                "video_grid_thw, second_per_grid_ts): text runs get arange positions on all three axes continuing "
                "from current_pos; a vision run gets temporal = current_pos + int(t_index * time_interval), height "
                "= current_pos + row, width = current_pos + column over the merged (t, h/merge, w/merge) grid "
                "(get_vision_position_ids), then current_pos += max(h, w) // merge (the temporal extent is not "
                "counted). time_interval is 1 for images and tokens_per_second * second_per_grid_ts = 2 * 1.0 = 2 "
                "for videos (Qwen2.5-VL's absolute-time temporal ids; Qwen2-VL steps by 1). Called on a "
                "Qwen2_5_VLModel built on the meta device (no weights), with the ids on CPU"
            )
        arrays.update(arrays_extra)
        c.add(
            f"{cfg_name}_{case}",
            arrays,
            config=cfg_name,
            cls="transformers.models.qwen2_5_vl.modeling_qwen2_5_vl.Qwen2_5_VLRotaryEmbedding",
            call=f"Qwen2_5_VLRotaryEmbedding(config=AutoConfig.from_pretrained('configs/{cfg_name}').text_config); "
            "module(x, position_ids)  # position_ids (3, 1, seq)",
            params=params,
            array_notes=array_notes,
            notes=notes,
            attention_scaling=scale,
            reference_check=float32_check(cos, sin, angle, scale),
        )


# --------------------------------------------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------------------------------------------

CHECK_MODE = False


def run(c: Collector) -> dict[str, Any]:
    import torch
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    torch.set_num_threads(1)  # torch CPU kernels may round differently with other thread splits
    torch.set_default_dtype(torch.float32)
    make_simple(c)
    make_gemma3(c)
    make_deepseek(c)
    make_qwen2_vl(c)
    make_gemma4(c)
    make_deepseek_v3(c)
    make_llama4(c)
    make_dynamic(c)
    make_qwen2_5_vl(c)
    c.skip(
        "qwen3-vl interleaved M-RoPE",
        "not requested as a golden; its definition (Qwen3VLTextRotaryEmbedding.recomposition_frequencies) is "
        "described in README.md",
    )
    users = sorted(
        {
            Path(p).parent.name
            for p in glob.glob(
                os.path.join(os.path.dirname(sys.modules["transformers"].__file__), "models", "*", "configuration_*.py")
            )
            if '"proportional"' in Path(p).read_text(encoding="utf-8")
        }
    )
    return {
        "keys": sorted(ROPE_INIT_FUNCTIONS),
        "note": "transformers.modeling_rope_utils.ROPE_INIT_FUNCTIONS in this release. 'default' is not a key: each "
        "rotary class has its own compute_default_rope_parameters; 'axial' (vision) is not a key either",
        "proportional_in_model_configs": users,
    }


def build_manifest(c: Collector, env: dict[str, Any], rope_init: dict[str, Any]) -> dict[str, Any]:
    worst = max(g["reference_check"]["max_error_over_bound"] for g in c.goldens.values())
    return {
        "description": (
            "RoPE cos/sin goldens made by HF transformers' own rotary-embedding classes from published config.json "
            "files (configs/<model>/config.json) loaded with AutoConfig; see README.md. The suite reads the .npz "
            "files, the configs and this manifest without torch or transformers."
        ),
        "generator": GENERATOR,
        "format_version": 1,
        "environment": env,
        "conventions": CONVENTIONS,
        "rope_init_functions": rope_init,
        "summary": {
            "goldens": len(c.goldens),
            "configs": len(c.configs),
            "max_error_over_bound": worst,
            "note": "the largest reference_check.max_error_over_bound over all goldens (<= 1: inside the 2^-22 "
            "rule against a float64 evaluation from the module's own inv_freq)",
        },
        "configs": c.configs,
        "goldens": c.goldens,
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
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "warning")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    tv_status = prepare_torchvision()
    c = Collector()
    rope_init = run(c)
    env = versions(tv_status)
    manifest = build_manifest(c, env, rope_init)
    text = canonical_json(manifest)
    machine_paths = {str(HERE.parents[2]), sys.prefix, sys.base_prefix, tempfile.gettempdir(), str(Path.home())}
    for bad in sorted(machine_paths) + ["site-packages"]:
        if bad and bad in text:
            raise AssertionError(f"the manifest would name a machine path ({bad!r})")
    known_configs = {p.parent.name for p in CONFIG_DIR.glob("*/config.json")}
    if known_configs != set(CONFIGS):
        raise AssertionError(f"configs/ holds {sorted(known_configs)}, the script knows {sorted(CONFIGS)}")

    expected = set(c.files) | {"manifest.json", "README.md", Path(__file__).name}
    if args.check:
        diff = []
        for file, data in sorted(c.files.items()):
            path = HERE / file
            if not path.exists() or path.read_bytes() != data:
                diff.append(file)
        if not MANIFEST.exists() or MANIFEST.read_text(encoding="utf-8") != text:
            diff.append("manifest.json")
        extra = sorted(p.name for p in HERE.iterdir() if p.is_file() and p.name not in expected)
        print(
            f"checked {len(c.files)} files and the manifest: "
            + ("all identical" if not diff else f"DIFFERENT: {diff}")
            + (f"; files not made by this script: {extra}" if extra else "")
        )
        return 1 if diff or extra else 0

    stale = [p for p in HERE.iterdir() if p.is_file() and p.suffix == ".npz" and p.name not in expected]
    for p in stale:
        p.unlink()
    for file, data in sorted(c.files.items()):
        (HERE / file).write_bytes(data)
    MANIFEST.write_text(text, encoding="utf-8")
    total = sum(p.stat().st_size for p in HERE.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    for _name, g in sorted(c.goldens.items()):
        shapes = ", ".join(f"{k}{tuple(v['shape'])}:{v['dtype']}" for k, v in g["arrays"].items())
        rc = g["reference_check"]["max_error_over_bound"]
        print(f"{g['file']}: scale={g['attention_scaling']:.6g} err/bound={rc:.3f} {shapes}")
    for name, cf in sorted(c.configs.items()):
        for msg in cf["autoconfig"]["messages"]:
            print(f"config {name}: transformers said: {msg[:160]}")
    for name, r in sorted(c.not_made.items()):
        print(f"not made {name}: {r['reason'][:100]}")
    if stale:
        print(f"removed stale files: {[p.name for p in stale]}")
    users = rope_init["proportional_in_model_configs"]
    print(f"ROPE_INIT_FUNCTIONS: {rope_init['keys']}; 'proportional' in configs of: {users}")
    print(f"environment: {json.dumps(env, sort_keys=True)}")
    print(f"{len(c.goldens)} goldens from {len(c.configs)} configs; directory total {total} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
