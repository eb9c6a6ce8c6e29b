#!/usr/bin/env python3
"""Make golden RoPE caches from ONNX Runtime GenAI's own model builder (the ``cos_cache``/``sin_cache`` it bakes).

This script is NOT part of posenc and is never imported by the test suite: it runs in a throwaway virtual
environment with torch 2.13.0 (CPU) and numpy, and writes small ``<case>.npz`` files and one ``manifest.json`` that
the suite reads without torch. See README.md beside this file for the commands.

Where the code comes from: the builder's own source files at a fixed commit of microsoft/onnxruntime-genai
(``src/python/py/models/builders/base.py``, ``llama.py``, ``phi.py``, ``gptoss.py``), read from a local clone with
``git show COMMIT:PATH`` (or from a folder holding those four files). Its methods are taken out of the files with
``ast`` and executed unchanged on a minimal ``self``:

- ``Model.__init__``'s RoPE statements (``self.context_length`` .. ``self.rope_attrs`` and the call of
  ``make_rope_init``), gathered into one function; the rest of ``__init__`` (weights, EP options) is not run;
- ``Model``'s ``get_rope_parameters``, ``make_rope_init``, ``make_mscale*``, ``make_inv_freq_rescaled*``,
  ``make_rotary_embedding_caches_from_scratch``, ``make_rotary_embedding_caches`` and
  ``make_rotary_embedding_multi_cache``;
- the overrides of the model classes the builder picks for these configs (``builder.py``'s dispatch on
  ``architectures[0]``): ``LlamaModel.make_rope_init`` (llama3), ``Phi3MiniLongRoPEModel.make_rope_init``
  (LongRoPE), ``GPTOSSModel.make_rotary_embedding_caches_from_scratch`` (gpt-oss).

The stubs stand in for what those methods call outside RoPE: ``make_initializer`` (records the tensor under its
name), ``make_node``/``make_greater``/``make_value`` (record the ``If`` node whose branches hold LongRoPE's two caches
as ``Constant`` nodes), ``onnx_ir`` (``ir.node``/``ir.Value``/``ir.tensor``/``ir.Graph`` keep what they are given)
and ``to_torch_dtype`` (the io dtype's torch dtype). No arithmetic is done here: the arrays saved are the tensors the
builder's code produced, rows picked out (indexing only), and bfloat16 ones as their bit patterns (``uint16``).

The configs: ``config.json`` files of published models (``tests/goldens/rope_config/configs/``), read as a plain
object whose attributes are the JSON's top-level keys (what transformers 4's configs give the builder; the builder
tests ``hasattr``), and a few small synthetic ones for the builder's branches no published config here reaches
(linear scaling, YaRN with ``mscale`` alone and with ``mscale_all_dim``).

``--check`` recomputes everything and compares it with the files on disk, writing nothing.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import io
import json
import platform
import subprocess
import sys
import textwrap
import types
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
CONFIGS = HERE.parent.parent / "rope_config" / "configs"
MANIFEST = HERE / "manifest.json"
GENERATOR = "tests/goldens/runtimes/onnxruntime_genai/make_goldens.py"
REPOSITORY = "microsoft/onnxruntime-genai"
COMMIT = "a0c04eb1313b886c963e415bbd974748cb89a4eb"
BUILDERS = "src/python/py/models/builders"
FILES = ("base.py", "llama.py", "phi.py", "gptoss.py")
ZIP_DATE = (1980, 1, 1, 0, 0, 0)
ZIP_LEVEL = 9

#: The statements of ``Model.__init__`` that set up RoPE, by what they assign (kept in their order).
INIT_TARGETS = (
    "self.context_length", "rope_params", "self.original_context_length", "self.head_size", "position_scale",
    "partial_rotary_factor", "rope_dim", "rope_theta", "self.rope_attrs",
)  # fmt: skip
BASE_METHODS = (
    "get_rope_parameters", "make_rope_init", "make_mscale_su", "make_mscale_yarn", "make_mscale",
    "make_inv_freq_rescaled", "make_inv_freq_rescaled_with_freq_factors", "make_inv_freq_rescaled_with_ntk",
    "make_rotary_embedding_caches_from_scratch", "make_rotary_embedding_caches", "make_rotary_embedding_multi_cache",
)  # fmt: skip
OVERRIDES = {
    "llama": ("llama.py", "LlamaModel", ("make_rope_init",)),
    "phi3_longrope": ("phi.py", "Phi3MiniLongRoPEModel", ("make_rope_init",)),
    "gptoss": ("gptoss.py", "GPTOSSModel", ("make_rotary_embedding_caches_from_scratch",)),
}
TORCH_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


# ------------------------------------------------------------------------------------------- the builder's code
def sources(clone: Path | None, folder: Path | None) -> dict[str, str]:
    if folder is not None:
        return {name: (folder / name).read_text() for name in FILES}
    assert clone is not None
    out = {}
    for name in FILES:
        cmd = ["git", "--git-dir", str(clone), "show", f"{COMMIT}:{BUILDERS}/{name}"]
        out[name] = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return out


def _class(tree: ast.Module, name: str) -> ast.ClassDef:
    found = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name]
    assert len(found) == 1, name
    return found[0]


def _method(cls: ast.ClassDef, name: str) -> ast.FunctionDef:
    found = [n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == name]
    assert len(found) == 1, (cls.name, name)
    return found[0]


def _compiled(functions: list[ast.FunctionDef], namespace: dict[str, Any]) -> dict[str, Any]:
    module = ast.Module(body=functions, type_ignores=[])
    ast.fix_missing_locations(module)
    scope: dict[str, Any] = dict(namespace)
    exec(compile(module, "<onnxruntime-genai builder>", "exec"), scope)  # the builder's own functions
    return {f.name: scope[f.name] for f in functions}


def _rope_init(init: ast.FunctionDef) -> ast.FunctionDef:
    """``Model.__init__``'s RoPE statements as ``rope_init(self, config)`` (each target found exactly once)."""
    kept, seen = [], []
    for stmt in init.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target = ast.unparse(stmt.targets[0])
            if target in INIT_TARGETS:
                kept.append(stmt)
                seen.append(target)
        elif isinstance(stmt, ast.If) and ast.unparse(stmt.test) == "rope_params is not None":
            kept.append(stmt)
            seen.append("make_rope_init")
    assert seen == [*INIT_TARGETS, "make_rope_init"], seen
    args = ast.arguments(posonlyargs=[], args=[ast.arg("self"), ast.arg("config")], kwonlyargs=[], kw_defaults=[],
                         defaults=[])  # fmt: skip
    return ast.FunctionDef(name="rope_init", args=args, body=kept, decorator_list=[], returns=None, type_params=[])


# ------------------------------------------------------------------------------------------------- the stubs
def _ir() -> types.SimpleNamespace:
    """``onnx_ir`` as far as ``make_rotary_embedding_multi_cache`` uses it: each call keeps what it is given."""
    return types.SimpleNamespace(
        node=lambda op, inputs, outputs, name, attributes: types.SimpleNamespace(
            op=op, outputs=outputs, name=name, attributes=attributes
        ),
        Value=lambda name, type, shape: types.SimpleNamespace(name=name, type=type, shape=shape),
        TensorType=lambda dtype: dtype,
        Shape=lambda shape: tuple(shape),
        tensor=lambda value: value,
        Graph=lambda inputs, outputs, nodes, name: types.SimpleNamespace(outputs=outputs, nodes=nodes, name=name),
        DataType=types.SimpleNamespace(INT64="INT64", INT32="INT32"),
    )


class _Torch:
    """``torch`` as the builder's functions see it, with ``outer`` and ``einsum`` (the product of positions and
    ``inv_freq`` in ``make_rotary_embedding_caches_from_scratch``) noting the ``inv_freq`` they are given: the
    builder's own float32 frequencies, saved beside its caches."""

    def __init__(self) -> None:
        self.inv_freq: list[torch.Tensor] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(torch, name)

    def outer(self, t: torch.Tensor, inv_freq: torch.Tensor) -> torch.Tensor:
        self.inv_freq.append(inv_freq.clone())
        return torch.outer(t, inv_freq)

    def einsum(self, equation: str, t: torch.Tensor, inv_freq: torch.Tensor) -> torch.Tensor:
        assert equation == "i,j->ij"
        self.inv_freq.append(inv_freq.clone())
        return torch.einsum(equation, t, inv_freq)


SPY = _Torch()


def builder_classes(src: dict[str, str]) -> dict[str, type]:
    namespace = {"np": np, "torch": SPY, "Mapping": Mapping, "ir": _ir(), "to_torch_dtype": TORCH_DTYPES.__getitem__}
    base = _class(ast.parse(src["base.py"]), "Model")
    methods = _compiled([_rope_init(_method(base, "__init__"))] + [_method(base, m) for m in BASE_METHODS], namespace)

    class Builder:
        """A minimal ``self``: what the RoPE methods read and the calls they make outside RoPE, recorded."""

        def __init__(self, config: Any, io_dtype: str, ep: str = "cpu") -> None:
            self.io_dtype, self.ep, self.extra_options = io_dtype, ep, {}
            self.attention_attrs = {"op_type": "GroupQueryAttention"}
            self.ep_attrs: dict[str, dict[str, str]] = {"webgpu": {}, "trt-rtx": {}}
            self.initializers: dict[str, torch.Tensor] = {}
            self.nodes: list[tuple[str, dict[str, Any]]] = []
            self.rope_init(config)

        def make_initializer(self, tensor: torch.Tensor, name: str) -> None:
            assert name not in self.initializers, name
            self.initializers[name] = tensor

        def make_node(self, op_type: str, inputs: Any, outputs: Any, name: str, **kwargs: Any) -> None:
            self.nodes.append((op_type, {"outputs": outputs, **kwargs}))

        def make_greater(self, *args: Any, **kwargs: Any) -> None:
            pass

        def make_value(self, *args: Any, **kwargs: Any) -> None:
            pass

        def constants(self) -> dict[str, torch.Tensor]:
            """The ``Constant`` tensors of the ``If`` node's branches, by output name."""
            found = {}
            for op, kwargs in self.nodes:
                if op == "If":
                    for branch in (kwargs["then_branch"], kwargs["else_branch"]):
                        for node in branch.nodes:
                            assert node.op == "Constant"
                            found[node.outputs[0].name] = node.attributes["value"]
            return found

    for name, function in methods.items():
        setattr(Builder, name, function)
    classes: dict[str, type] = {"base": Builder}
    for key, (file, cls_name, names) in OVERRIDES.items():
        cls = _class(ast.parse(src[file]), cls_name)
        overridden = _compiled([_method(cls, n) for n in names], namespace)
        classes[key] = type(cls_name, (Builder,), overridden)
    return classes


# -------------------------------------------------------------------------------------------------- the cases
def config(spec: str | dict[str, Any]) -> types.SimpleNamespace:
    """A published model's config (its folder's name under CONFIGS) or a synthetic one (the dict), as an object."""
    fields = json.loads((CONFIGS / spec / "config.json").read_text()) if isinstance(spec, str) else spec
    return types.SimpleNamespace(**fields)


def rows(n: int, *extra: int) -> np.ndarray:
    """Rows 0..63, 32 around each ``extra`` position, the last 32: within ``0 .. n - 1``."""
    picked = [np.arange(0, min(64, n))] + [np.arange(max(0, p - 16), min(n, p + 16)) for p in extra]
    picked.append(np.arange(max(0, n - 32), n))
    return np.unique(np.concatenate(picked)).astype(np.int64)


#: name -> (builder class, config, io dtypes, what to call, positions around which rows are kept besides the ends;
#: ``None``: every row, a whole cache)
# fmt: off
CASES: dict[str, tuple[str, str | dict[str, Any], tuple[str, ...], str, tuple[int, ...] | None]] = {
    "mistral-7b-v0.1": ("base", "mistral-7b-v0.1", ("float32", "float16"), "single", (4096,)),
    "llama-3.1-8b": ("llama", "llama-3.1-8b", ("float32", "float16", "bfloat16"), "single", (8192,)),
    "phi-2": ("base", "phi-2", ("float32",), "single", None),
    "phi-3-mini-128k": ("phi3_longrope", "phi-3-mini-128k", ("float32", "float16"), "multi", (4096,)),
    "phi-4-mini": ("phi3_longrope", "phi-4-mini", ("float32",), "multi", (4096,)),
    "gpt-oss-20b": ("gptoss", "gpt-oss-20b", ("float32",), "single", (4096,)),
    "linear-qwen2-like": ("base", {
        "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 1024, "num_attention_heads": 16,
        "max_position_embeddings": 8192, "rope_theta": 1000000.0,
        "rope_scaling": {"rope_type": "linear", "factor": 2.5},  # not a power of two: (1 / pw) / f differs
    }, ("float32",), "single", (2048,)),
    "yarn-mscale-only": ("base", {  # Ministral 3's form: mscale alone is the multiplier
        "architectures": ["MistralForCausalLM"], "model_type": "mistral", "hidden_size": 2048,
        "num_attention_heads": 32, "head_dim": 128, "max_position_embeddings": 32768, "rope_theta": 1000000.0,
        "rope_scaling": {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 4096,
                         "beta_fast": 32.0, "beta_slow": 1.0, "mscale": 1.0},
    }, ("float32",), "single", (4096,)),
    "yarn-mscale-all-dim": ("base", {  # DeepSeek's form: get_mscale(factor, mscale) / get_mscale(factor, all_dim)
        "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 1024, "num_attention_heads": 16,
        "max_position_embeddings": 163840, "rope_theta": 10000.0,
        "rope_scaling": {"rope_type": "yarn", "factor": 40.0, "original_max_position_embeddings": 4096,
                         "beta_fast": 32.0, "beta_slow": 1.0, "mscale": 0.707, "mscale_all_dim": 1.0},
    }, ("float32", "float16"), "single", (4096,)),
}
# fmt: on


def _saved(tensor: torch.Tensor, picked: np.ndarray) -> np.ndarray:
    part = tensor[torch.from_numpy(picked)]
    if part.dtype == torch.bfloat16:
        return part.view(torch.int16).numpy().view(np.uint16)
    return part.numpy()


def run_case(classes: dict[str, type], name: str) -> dict[str, dict[str, np.ndarray]]:
    """The case's arrays per io dtype: each cache's kept rows (``<cache>``, ``<cache>_rows``), and its full shape."""
    key, spec, dtypes, call, around = CASES[name]
    make_config = lambda: config(spec)  # noqa: E731  (a fresh object per builder: make_rope_init may change it)
    out = {}
    for dtype in dtypes:
        model = classes[key](make_config(), dtype)
        SPY.inv_freq.clear()
        if call == "single":
            model.make_rotary_embedding_caches()
            caches = model.initializers
            frequencies = {"": SPY.inv_freq[0]}
            if key == "gptoss":  # GPTOSSModel's own from_scratch makes what the base Model's makes
                plain = classes["base"](make_config(), dtype)
                plain.make_rotary_embedding_caches()
                assert plain.initializers.keys() == caches.keys()
                assert all(torch.equal(plain.initializers[k], caches[k]) for k in caches)
        else:
            model.make_rotary_embedding_multi_cache()
            caches = model.constants()
            frequencies = {"_large": SPY.inv_freq[0], "_small": SPY.inv_freq[1]}  # the order the method makes them
            assert not model.initializers
            concatenated = classes[key](make_config(), dtype, ep="dml")  # DirectML: one cache, small rows then large
            concatenated.make_rotary_embedding_multi_cache()
            for part in ("cos", "sin"):
                whole = torch.cat((caches[f"{part}_cache_small"], caches[f"{part}_cache_large"]), dim=0)
                assert torch.equal(concatenated.initializers[f"{part}_cache"], whole)
        assert len(SPY.inv_freq) == len(frequencies) * (2 if call == "multi" or key == "gptoss" else 1)
        arrays: dict[str, np.ndarray] = {}
        for cache, tensor in caches.items():
            assert tensor.dtype == TORCH_DTYPES[dtype] and tensor.ndim == 2, (cache, tensor.dtype, tensor.shape)
            picked = np.arange(tensor.shape[0]) if around is None else rows(tensor.shape[0], *around)
            arrays[cache] = _saved(tensor, picked)
            arrays[cache + "_rows"] = picked
            arrays[cache + "_shape"] = np.array(tensor.shape, np.int64)
        for suffix, inv in frequencies.items():
            assert inv.dtype == torch.float32
            arrays["inv_freq" + suffix] = inv.numpy()
        out[dtype] = arrays
    return out


# ------------------------------------------------------------------------------------------------- the output
def npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in sorted(arrays):
            member = io.BytesIO()
            np.lib.format.write_array(member, np.ascontiguousarray(arrays[name]), allow_pickle=False)
            info = zipfile.ZipInfo(name + ".npy", date_time=ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, member.getvalue(), compresslevel=ZIP_LEVEL)
    return buffer.getvalue()


def build(src: dict[str, str]) -> tuple[dict[str, bytes], dict[str, Any]]:
    torch.set_num_threads(1)
    classes = builder_classes(src)
    files: dict[str, bytes] = {}
    entries = []
    for name, (key, spec, _, call, _) in CASES.items():
        for dtype, arrays in run_case(classes, name).items():
            file = f"{name}_{dtype}.npz"
            files[file] = npz_bytes(arrays)
            caches = sorted(k for k in arrays if not k.endswith(("_rows", "_shape")) and not k.startswith("inv_freq"))
            entries.append({
                "file": file, "sha256": hashlib.sha256(files[file]).hexdigest(), "class": key, "call": call,
                "io_dtype": dtype, "caches": {c: [int(n) for n in arrays[c + "_shape"]] for c in caches},
                "config": f"tests/goldens/rope_config/configs/{spec}/config.json" if isinstance(spec, str) else spec,
            })  # fmt: skip
    manifest = {
        "format_version": 1,
        "generator": GENERATOR,
        "description": "cos/sin caches that ONNX Runtime GenAI's model builder makes (rows picked; bfloat16 as uint16 "
        "bits); <cache>_rows: the row numbers kept, <cache>_shape: the whole cache's shape; inv_freq[_small|_large]: "
        "the float32 inv_freq its make_rotary_embedding_caches_from_scratch multiplied the positions by",
        "source": {
            "repository": REPOSITORY,
            "commit": COMMIT,
            "files": [f"{BUILDERS}/{f}" for f in FILES],
            "sha256": {f: hashlib.sha256(src[f].encode()).hexdigest() for f in FILES},
        },  # fmt: skip
        "environment": {
            "python": platform.python_version(),
            "machine": platform.machine(),
            "torch": torch.__version__,
            "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "numpy": np.__version__,
        },  # fmt: skip
        "goldens": entries,
    }
    return files, manifest


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clone", type=Path, help="a git directory of microsoft/onnxruntime-genai holding COMMIT")
    parser.add_argument("--sources", type=Path, help="a folder holding base.py, llama.py, phi.py, gptoss.py")
    parser.add_argument("--check", action="store_true", help="compare with the files on disk, write nothing")
    args = parser.parse_args()
    if (args.clone is None) == (args.sources is None):
        parser.error("give --clone or --sources")
    files, manifest = build(sources(args.clone, args.sources))
    text = json.dumps(manifest, indent=1, sort_keys=True) + "\n"
    if args.check:
        bad = [f for f, data in files.items() if not (HERE / f).exists() or (HERE / f).read_bytes() != data]
        if MANIFEST.read_text() != text:
            bad.append(MANIFEST.name)
        print("\n".join(f"differs: {f}" for f in bad) or "all files identical")
        return 1 if bad else 0
    for old in HERE.glob("*.npz"):
        if old.name not in files:
            old.unlink()
    for file, data in files.items():
        (HERE / file).write_bytes(data)
        print(
            file, textwrap.shorten(json.dumps(next(e["caches"] for e in manifest["goldens"] if e["file"] == file)), 100)
        )
    MANIFEST.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
