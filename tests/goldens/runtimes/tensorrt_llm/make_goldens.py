#!/usr/bin/env python3
"""Make TensorRT-LLM RoPE table goldens by running TensorRT-LLM's own ``RopeEmbeddingUtils`` functions.

This script is NOT part of posenc and is never imported by the test suite. TensorRT-LLM does not install without
CUDA, so the script takes the text of ``tensorrt_llm/functional.py`` (NVIDIA/TensorRT-LLM at the commit README.md
names; ``--source PATH``), finds the classes ``RotaryScalingType`` and ``RopeEmbeddingUtils`` in it with ``ast``,
keeps the enum and the four methods below as they are written, and executes them with numpy (TensorRT-LLM pins
``numpy<2``: numpy 1's promotion rules are part of the arithmetic) and torch (YaRN's function is torch code). Nothing
else of the file is run, and nothing of it is copied into this repository: the goldens are the functions' output.

- ``create_sinusoidal_positions_for_attention_plugin`` (none, linear, dynamic, llama3; it calls
  ``apply_llama3_scaling``), with the arguments ``RopeParams.create_rope_const_params`` passes
  (``tensorrt_llm/_torch/attention_backend/interface.py``): ``scale`` the config's factor (1 without one) and
  ``rope_scaling_config`` with its factor, alpha (1 without one), low/high_freq_factor and original length;
- ``create_sinusoidal_positions_yarn`` with ``duplicate_data=False`` and ``RopeParams``' defaults ``mscale`` 1,
  ``mscale_all_dim`` 0 where a config gives none;
- ``create_sinusoidal_positions_long_rope`` with ``max_seq_len`` unset.

Writes ``<case>.npz`` (``rotary_inv_freq`` where the function returns one, ``embed_positions_for_gpt_attention``)
and ``manifest.json`` (each case's call, the posenc options that name the same table, sha256s, versions and the
sha256 of the functions' text as ``ast.unparse`` gives it, which a full ``functional.py`` and an excerpt holding the
same functions share). ``--check`` recomputes and compares with the files without writing.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import importlib.metadata
import io
import json
import platform
import sys
import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "manifest.json"
ZIP_DATE = (1980, 1, 1, 0, 0, 0)
METHODS = (
    "apply_llama3_scaling",
    "create_sinusoidal_positions_for_attention_plugin",
    "create_sinusoidal_positions_long_rope",
    "create_sinusoidal_positions_yarn",
)
SHORT = [1.0, 1.0, 1.02, 1.05, 1.1, 1.2, 1.35, 1.5, 1.8, 2.2, 2.7, 3.1, 3.6, 4.0, 4.4, 4.8]
LONG = [1.0, 1.1, 1.3, 1.6, 2.0, 2.6, 3.4, 4.5, 6.0, 8.0, 10.5, 14.0, 18.0, 23.0, 29.0, 36.0]


def _rsc(factor: float, alpha: float = 1.0, low: float = 1.0, high: float = 4.0, original: int = 1024) -> dict:
    """``rope_scaling_config`` as ``RopeParams.create_rope_const_params`` builds it."""
    return {"factor": factor, "alpha": alpha, "low_freq_factor": low, "high_freq_factor": high,
            "original_max_position_embeddings": original}  # fmt: skip


#: name: (function, its arguments (scale_type by name), posenc's options for the same table)
CASES: dict[str, tuple[str, dict[str, Any], dict[str, Any]]] = {
    "none_d64_n512": (
        "create_sinusoidal_positions_for_attention_plugin",
        {"num_pos": 512, "dim": 64, "theta": 10000.0, "scale": 1.0, "scale_type": "none",
         "rope_scaling_config": _rsc(1.0)},
        {"seq_len": 512, "head_dim": 64},
    ),
    "none_d128_theta1e6_n256": (
        "create_sinusoidal_positions_for_attention_plugin",
        {"num_pos": 256, "dim": 128, "theta": 1000000.0, "scale": 1.0, "scale_type": "none",
         "rope_scaling_config": _rsc(1.0)},
        {"seq_len": 256, "head_dim": 128, "theta": 1000000.0},
    ),
    "none_rotary32_of_d64_n128": (
        "create_sinusoidal_positions_for_attention_plugin",
        {"num_pos": 128, "dim": 32, "theta": 10000.0, "scale": 1.0, "scale_type": "none",
         "rope_scaling_config": _rsc(1.0)},
        {"seq_len": 128, "head_dim": 64, "rotary_dim": 32},
    ),
    "linear_factor3_d64_n256": (
        "create_sinusoidal_positions_for_attention_plugin",
        {"num_pos": 256, "dim": 64, "theta": 10000.0, "scale": 3.0, "scale_type": "linear",
         "rope_scaling_config": _rsc(3.0)},
        {"seq_len": 256, "head_dim": 64, "scaling": "linear", "factor": 3.0},
    ),
    "dynamic_factor2_d64_n256": (
        "create_sinusoidal_positions_for_attention_plugin",
        {"num_pos": 256, "dim": 64, "theta": 10000.0, "scale": 2.0, "scale_type": "dynamic",
         "rope_scaling_config": _rsc(2.0)},
        {"seq_len": 256, "head_dim": 64, "scaling": "dynamic", "factor": 2.0, "max_positions": 256},
    ),
    "llama3_factor8_d128_n512": (
        "create_sinusoidal_positions_for_attention_plugin",
        {"num_pos": 512, "dim": 128, "theta": 500000.0, "scale": 8.0, "scale_type": "llama3",
         "rope_scaling_config": _rsc(8.0, original=8192)},
        {"seq_len": 512, "head_dim": 128, "theta": 500000.0, "scaling": "llama3", "factor": 8.0,
         "original_max_positions": 8192, "low_freq_factor": 1.0, "high_freq_factor": 4.0},
    ),
    "yarn_factor4_d64_n256": (
        "create_sinusoidal_positions_yarn",
        {"num_pos": 256, "dim": 64, "base": 1000000.0, "scaling_factor": 4.0,
         "original_max_position_embeddings": 32768, "beta_fast": 32, "beta_slow": 1, "mscale": 1.0,
         "mscale_all_dim": 0.0, "duplicate_data": False},
        {"seq_len": 256, "head_dim": 64, "theta": 1000000.0, "scaling": "yarn", "factor": 4.0,
         "original_max_positions": 32768},
    ),
    "yarn_deepseek_factor40_d64_n256": (
        "create_sinusoidal_positions_yarn",
        {"num_pos": 256, "dim": 64, "base": 10000.0, "scaling_factor": 40.0,
         "original_max_position_embeddings": 4096, "beta_fast": 32, "beta_slow": 1, "mscale": 0.707,
         "mscale_all_dim": 0.707, "duplicate_data": False},
        {"seq_len": 256, "head_dim": 64, "scaling": "yarn", "factor": 40.0, "original_max_positions": 4096,
         "mscale": 0.707, "mscale_all_dim": 0.707},
    ),
    "yarn_mscale_only_factor16_d32_n128": (
        "create_sinusoidal_positions_yarn",
        {"num_pos": 128, "dim": 32, "base": 10000.0, "scaling_factor": 16.0,
         "original_max_position_embeddings": 2048, "beta_fast": 32, "beta_slow": 1, "mscale": 0.5,
         "mscale_all_dim": 0.0, "duplicate_data": False},
        {"seq_len": 128, "head_dim": 32, "scaling": "yarn", "factor": 16.0, "original_max_positions": 2048,
         "mscale": 0.5},
    ),
    "longrope_d32_n256_orig64": (
        "create_sinusoidal_positions_long_rope",
        {"num_pos": 256, "dim": 32, "theta": 10000.0, "original_max_pos": 64, "short_factor": SHORT,
         "long_factor": LONG},
        {"seq_len": 256, "head_dim": 32, "scaling": "longrope", "original_max_positions": 64,
         "short_factor": SHORT, "long_factor": LONG},
    ),
    "longrope_d32_n64_orig128": (
        "create_sinusoidal_positions_long_rope",
        {"num_pos": 64, "dim": 32, "theta": 10000.0, "original_max_pos": 128, "short_factor": SHORT,
         "long_factor": LONG},
        {"seq_len": 64, "head_dim": 32, "scaling": "longrope", "original_max_positions": 128,
         "short_factor": SHORT, "long_factor": LONG},
    ),
}  # fmt: skip


def load_functions(source: Path) -> tuple[Any, Any, str]:
    """``RotaryScalingType`` and ``RopeEmbeddingUtils`` (only :data:`METHODS`) from the file's text, executed with
    math, numpy, torch and typing; and the sha256 of their ``ast.unparse`` text."""
    tree = ast.parse(source.read_text(encoding="utf-8"))
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
    enum, utils = classes["RotaryScalingType"], classes["RopeEmbeddingUtils"]
    kept = [n for n in utils.body if isinstance(n, ast.FunctionDef) and n.name in METHODS]
    missing = set(METHODS) - {n.name for n in kept}
    if missing:
        raise SystemExit(f"{source}: RopeEmbeddingUtils has no {', '.join(sorted(missing))}")
    utils = ast.ClassDef(name=utils.name, bases=[], keywords=[], body=kept, decorator_list=[], type_params=[])
    module = ast.Module(body=[enum, utils], type_ignores=[])
    ast.fix_missing_locations(module)
    text = ast.unparse(module)
    import math
    import typing
    from enum import IntEnum

    import torch

    # the file's annotations name typing's List and Optional: list and typing.Optional stand for them
    namespace: dict[str, Any] = {"math": math, "np": np, "torch": torch, "IntEnum": IntEnum, "List": list,
                                 "Optional": typing.Optional}  # fmt: skip
    exec(compile(module, str(source), "exec"), namespace)  # noqa: S102 - TensorRT-LLM's own functions, as written
    return namespace["RotaryScalingType"], namespace["RopeEmbeddingUtils"], hashlib.sha256(text.encode()).hexdigest()


def run_case(scaling_type: Any, utils: Any, function: str, args: dict[str, Any]) -> dict[str, np.ndarray]:
    call = dict(args)
    if "scale_type" in call:
        call["scale_type"] = scaling_type[call["scale_type"]]
    inv, table = getattr(utils, function)(**call)
    out = {"embed_positions_for_gpt_attention": np.asarray(table)}
    if inv is not None:
        out["rotary_inv_freq"] = np.asarray(inv)
    return out


def npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    """A deterministic .npz (fixed member times, deflate level 9)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        for name in sorted(arrays):
            member = io.BytesIO()
            np.lib.format.write_array(member, np.ascontiguousarray(arrays[name]), allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, member.getvalue(), compresslevel=9)
    return buffer.getvalue()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, required=True, help="tensorrt_llm/functional.py (or an excerpt)")
    parser.add_argument("--check", action="store_true", help="recompute and compare, write nothing")
    ns = parser.parse_args()
    scaling_type, utils, functions_sha = load_functions(ns.source)
    entries, differ = {}, []
    for name, (function, args, posenc) in CASES.items():
        arrays = run_case(scaling_type, utils, function, args)
        data = npz_bytes(arrays)
        path = HERE / f"{name}.npz"
        if ns.check:
            if not path.exists() or path.read_bytes() != data:
                differ.append(name)
        else:
            path.write_bytes(data)
        entries[name] = {
            "file": path.name, "sha256": hashlib.sha256(data).hexdigest(), "function": function,
            "call": args, "posenc": posenc,
            "shapes": {k: list(v.shape) for k, v in sorted(arrays.items())},
        }  # fmt: skip
    manifest = {
        "generator": "tests/goldens/runtimes/tensorrt_llm/make_goldens.py",
        "repository": "NVIDIA/TensorRT-LLM",
        "commit": "2a9abd9536aa62ad3e4b9314be9286b1b1be523b",
        "path": "tensorrt_llm/functional.py",
        "class": "RopeEmbeddingUtils",
        "functions": list(METHODS),
        "functions_unparsed_sha256": functions_sha,
        "environment": {
            "python": platform.python_version(),
            "numpy": np.__version__,
            "torch": importlib.metadata.version("torch"),
            "zlib": zlib.ZLIB_VERSION,
            "machine": platform.machine(),
        },  # fmt: skip
        "cases": entries,
    }
    text = json.dumps(manifest, indent=1, sort_keys=True) + "\n"
    if ns.check:
        old = json.loads(MANIFEST.read_text()) if MANIFEST.exists() else {}
        if {k: v["sha256"] for k, v in old.get("cases", {}).items()} != {k: v["sha256"] for k, v in entries.items()}:
            differ.append("manifest.json")
        print("differ: " + ", ".join(differ) if differ else "all goldens reproduced byte for byte")
        return 1 if differ else 0
    MANIFEST.write_text(text)
    print(f"wrote {len(entries)} goldens and manifest.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
