#!/usr/bin/env python3
"""Make the llama.cpp GGUF goldens with llama.cpp's own converter, ``convert_hf_to_gguf.py``.

This script is NOT part of posenc and is never imported by the test suite: it runs in a throwaway virtual
environment with torch 2.13.0 (CPU), transformers and numpy, and the llama.cpp sources vendored in the
llama-cpp-python sdist (``--llama-cpp DIR``: the sdist's ``vendor/llama.cpp``, holding ``convert_hf_to_gguf.py``,
its ``conversion/`` package and ``gguf-py``). See README.md beside this file for the exact commands.

For every case it makes a fake model folder (the case's ``config.json``, as the model publishes it, and a
``model.safetensors`` holding one float32 tensor, ``model.norm.weight``, of ones) and runs the converter's own
``main()`` on it (``convert_hf_to_gguf.py DIR --outfile OUT --outtype f32``), with one change: the model class's
``set_vocab`` does nothing, since the folder has no tokenizer. Everything else is the converter's code: the model
class its ``architectures`` selects, ``set_gguf_parameters``, ``generate_extra_tensors`` (Llama 3's
``rope_freqs``, Phi-3's ``rope_factors_long``/``rope_factors_short``) and gguf-py's ``GGUFWriter``. The file it
writes is read back with the same gguf-py's ``GGUFReader``; the script keeps ``general.architecture``, every
``{arch}.rope.*`` key and ``{arch}.context_length`` (key, GGUF value type name, value) and every ``rope_*`` tensor
(name, ggml type, shape, float32 values). It contains no converter code and no arithmetic.

Writes ``<case>.npz`` (the tensors by GGUF name, float32; an empty file where there are none) and
``goldens.json`` (per case: the config used, the keys, the tensors' names, types, shapes, sha256 of the ``.npz``,
and the environment). ``--check`` recomputes and compares without writing (exit 1 on any difference).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import platform
import runpy
import struct
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
CONFIGS = HERE.parents[1] / "rope_config" / "configs"  # the published config.json files the suite already holds
GOLDENS = HERE / "goldens.json"
ZIP_DATE = (1980, 1, 1, 0, 0, 0)

#: case name -> the config.json (a folder of tests/goldens/rope_config/configs, or a dict written here).
CASES: dict[str, Any] = {
    "llama-3.1-8b": "llama-3.1-8b",  # llama3: rope_freqs
    "llama-3.2-1b": "llama-3.2-1b",  # llama3, factor 32, head_dim 64
    "phi-3-mini-128k": "phi-3-mini-128k",  # longrope: rope_factors_long/short, attn_factor
    "phi-3.5-mini": "phi-3.5-mini",
    "phi-4-mini": "phi-4-mini",  # longrope with partial_rotary_factor 0.75
    "qwen2.5-7b-yarn": "qwen2.5-7b-yarn",  # yarn keys, arch qwen2
    "qwen3-8b-yarn": "qwen3-8b-yarn",  # yarn keys, arch qwen3
    "mistral-7b-v0.1": "mistral-7b-v0.1",  # plain, MistralForCausalLM -> arch llama
    # A linear one (lmsys/vicuna-7b-v1.5-16k's RoPE fields: a Llama 2 with linear factor 4) and a YaRN Llama with
    # beta_fast/beta_slow given, each written here as a minimal config.json of the fields the converter reads.
    "llama-linear4": {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
        "intermediate_size": 11008, "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 32,
        "max_position_embeddings": 4096, "rms_norm_eps": 1e-05, "rope_scaling": {"factor": 4.0, "type": "linear"},
        "vocab_size": 32000,
    },
    "llama-yarn-betas": {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 2048,
        "intermediate_size": 5632, "num_attention_heads": 32, "num_hidden_layers": 2, "num_key_value_heads": 4,
        "max_position_embeddings": 16384, "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "vocab_size": 32000,
        "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096,
                         "beta_fast": 16.0, "beta_slow": 2.0},
    },
    "mixtral-plain": {
        "architectures": ["MixtralForCausalLM"], "model_type": "mixtral", "hidden_size": 1024,
        "intermediate_size": 2048, "num_attention_heads": 8, "num_hidden_layers": 2, "num_key_value_heads": 8,
        "max_position_embeddings": 32768, "rms_norm_eps": 1e-05, "rope_theta": 1000000.0, "vocab_size": 32000,
        "num_local_experts": 8, "num_experts_per_tok": 2,
    },
}  # fmt: skip


def safetensors_bytes(name: str, values: np.ndarray) -> bytes:
    """A safetensors file holding one float32 tensor (8-byte header size, JSON header, data)."""
    data = values.astype("<f4").tobytes()
    header = json.dumps({name: {"dtype": "F32", "shape": list(values.shape), "data_offsets": [0, len(data)]}})
    raw = header.encode() + b" " * (-len(header) % 8)
    return struct.pack("<Q", len(raw)) + raw + data


def npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for name, array in arrays.items():
            member = io.BytesIO()
            np.lib.format.write_array(member, np.ascontiguousarray(array), allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=ZIP_DATE)
            archive.writestr(info, member.getvalue())
    return buffer.getvalue()


def convert(llama_cpp: Path, config: dict[str, Any], work: Path) -> Path:
    """Run the converter's main() on a fake model folder of ``config``; the path of the .gguf it wrote."""
    folder = work / "model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    (folder / "model.safetensors").write_bytes(
        safetensors_bytes("model.norm.weight", np.ones(int(config["hidden_size"]), np.float32))
    )
    out = work / "out.gguf"
    from conversion import get_model_class  # the converter's own package (sys.path set in main)

    model_class = get_model_class(config["architectures"][0])
    model_class.set_vocab = lambda self: None  # the one change: no tokenizer in the folder
    argv = sys.argv
    sys.argv = ["convert_hf_to_gguf.py", str(folder), "--outfile", str(out), "--outtype", "f32"]
    try:
        runpy.run_path(str(llama_cpp / "convert_hf_to_gguf.py"), run_name="__main__")
    finally:
        sys.argv = argv
    return out


def read_back(path: Path) -> tuple[dict[str, Any], dict[str, np.ndarray], dict[str, Any]]:
    """(keys, tensors, tensor infos) of the RoPE part of the file, read with gguf-py's GGUFReader."""
    import gguf

    reader = gguf.GGUFReader(path)
    arch_field = reader.fields["general.architecture"]
    arch = bytes(arch_field.parts[arch_field.data[0]]).decode()
    keys: dict[str, Any] = {}
    for name, field in reader.fields.items():
        if name == "general.architecture" or name.startswith(f"{arch}.rope.") or name == f"{arch}.context_length":
            kind = gguf.GGUFValueType(field.types[0])
            if kind == gguf.GGUFValueType.ARRAY:
                value: Any = [field.parts[i].tolist()[0] for i in field.data]
            elif kind == gguf.GGUFValueType.STRING:
                value = bytes(field.parts[field.data[0]]).decode()
            else:
                value = field.parts[field.data[0]].tolist()[0]
            keys[name] = {"type": kind.name, "value": value}
    tensors: dict[str, np.ndarray] = {}
    infos: dict[str, Any] = {}
    for tensor in reader.tensors:
        if tensor.name.startswith("rope_"):
            tensors[tensor.name] = np.array(tensor.data, dtype=np.float32)
            infos[tensor.name] = {"ggml_type": tensor.tensor_type.name, "ne": [int(n) for n in tensor.shape]}
    return keys, tensors, infos


def environment(llama_cpp: Path) -> dict[str, str]:
    import gguf
    import torch
    import transformers

    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "gguf-py": getattr(gguf, "__version__", "")
        or (llama_cpp / "gguf-py" / "pyproject.toml").read_text().split('version = "')[1].split('"')[0],
        "converter": "convert_hf_to_gguf.py of the llama-cpp-python 0.3.36 sdist (vendor/llama.cpp)",
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--llama-cpp", type=Path, required=True, help="the sdist's vendor/llama.cpp folder")
    parser.add_argument("--check", action="store_true", help="recompute and compare; write nothing")
    args = parser.parse_args()
    llama_cpp = args.llama_cpp.resolve()
    sys.path.insert(0, str(llama_cpp))
    sys.path.insert(1, str(llama_cpp / "gguf-py"))
    import logging

    logging.disable(logging.WARNING)
    goldens: dict[str, Any] = {"environment": environment(llama_cpp), "cases": {}}
    files: dict[str, bytes] = {}
    for case, source in CASES.items():
        if isinstance(source, str):
            config = json.loads((CONFIGS / source / "config.json").read_text())
            where = f"tests/goldens/rope_config/configs/{source}/config.json"
        else:
            config, where = source, "written in make_goldens.py (CASES)"
        with tempfile.TemporaryDirectory() as work:
            keys, tensors, infos = read_back(convert(llama_cpp, config, Path(work)))
        data = npz_bytes(tensors)
        files[f"{case}.npz"] = data
        goldens["cases"][case] = {
            "config": where,
            "inline_config": None if isinstance(source, str) else config,
            "keys": keys,
            "tensors": infos,
            "npz": f"{case}.npz",
            "sha256": hashlib.sha256(data).hexdigest(),
        }
        print(case, keys.get("general.architecture", {}).get("value"), sorted(keys), sorted(tensors))
    text = json.dumps(goldens, indent=2, sort_keys=True) + "\n"
    if args.check:
        bad = [n for n, d in files.items() if not (HERE / n).is_file() or (HERE / n).read_bytes() != d]
        if not GOLDENS.is_file() or GOLDENS.read_text() != text:
            bad.append(GOLDENS.name)
        print("differs:", bad if bad else "nothing")
        return 1 if bad else 0
    for name, data in files.items():
        (HERE / name).write_bytes(data)
    GOLDENS.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
