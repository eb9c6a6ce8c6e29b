"""Make the vLLM ``cos_sin_cache`` goldens: vLLM's own rotary classes, run on CPU in float32.

Not part of posenc and not a test: run it in a throwaway venv (torch 2.13.0 CPU, transformers, numpy) with the
path of an unpacked vLLM wheel (``pip download --no-deps vllm==0.34.0`` then unzip it), from the repository root::

    python tests/goldens/runtimes/vllm/make_goldens.py /path/to/unpacked/wheel

It imports vLLM's real package ``vllm/model_executor/layers/rotary_embedding`` from that folder (``__init__.py``'s
``get_rope`` and every class it picks, unchanged), with light stand-ins for the vLLM modules those files import and
that have nothing to do with the cache (the custom-op registry, the platform, the logger, the config holder, triton).
Each case calls ``get_rope`` as a vLLM model file does, with the ``rope_parameters`` transformers makes from a
config (``tests/goldens/rope_config/configs``) or given here, and saves rows of the cache it builds
(``cos_sin_cache``, or Phi-3's ``long_short_cos_sin_cache``). README.md beside this file says what was run.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import logging
import sys
import types
from pathlib import Path

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
CONFIGS = HERE.parent.parent / "rope_config" / "configs"
PACKAGE = "vllm.model_executor.layers.rotary_embedding"


# ------------------------------------------------------------------------------------------- stand-ins for vLLM
class _Stub:
    """Whatever an unrelated vLLM module gives: callable, with any attribute, false."""

    def __getattr__(self, name):
        return _Stub()

    def __call__(self, *args, **kwargs):
        return args[0] if len(args) == 1 and callable(args[0]) and not kwargs else _Stub()

    def __bool__(self):
        return False


class CustomOp(torch.nn.Module):
    """vLLM's custom-op base: registration is a no-op, and the op is never "enabled" (the native path)."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    @classmethod
    def register(cls, name):
        return lambda op: op

    def enabled(self):
        return False


MAX_MODEL_LEN = {"value": 0}


def _model_config():
    return types.SimpleNamespace(model_config=types.SimpleNamespace(max_model_len=MAX_MODEL_LEN["value"]))


SPECIFIC = {
    "CustomOp": CustomOp,
    "PluggableLayer": CustomOp,
    "init_logger": logging.getLogger,
    "direct_register_custom_op": lambda *args, **kwargs: None,
    "has_flashinfer": lambda: False,
    "get_current_vllm_config": _model_config,
}


class _StubModule(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return SPECIFIC.get(name, _Stub())


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Real files for the rotary_embedding package, stand-ins for every other ``vllm`` module."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "vllm" and not fullname.startswith("vllm."):
            return None
        if fullname == PACKAGE or fullname.startswith(PACKAGE + "."):
            folder = self.root / PACKAGE.replace(".", "/")
            if fullname == PACKAGE:
                return importlib.util.spec_from_file_location(
                    fullname, folder / "__init__.py", submodule_search_locations=[str(folder)]
                )
            return importlib.util.spec_from_file_location(fullname, folder / (fullname.rsplit(".", 1)[1] + ".py"))
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec):
        module = _StubModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module):
        pass


# ------------------------------------------------------------------------------------------------- the cases
def config_parameters(name: str) -> tuple[dict, int, int, str]:
    """``rope_parameters`` (standardized by transformers, as vLLM's ``patch_rope_parameters`` has it), the
    ``max_position_embeddings``, the head size and the model type of a config of tests/goldens/rope_config."""
    from transformers import AutoConfig

    raw = json.loads((CONFIGS / name / "config.json").read_text())
    raw.pop("auto_map", None)
    model_type = raw.pop("model_type")
    config = AutoConfig.for_model(model_type, **raw)
    config.standardize_rope_params()
    head = getattr(config, "qk_rope_head_dim", None) if model_type.startswith("deepseek") else None
    head = head or getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    return dict(config.rope_parameters), int(config.max_position_embeddings), int(head), model_type


def inv_freqs(emb) -> dict[str, np.ndarray]:
    """The float32 ``inv_freq`` the class's own ``_compute_inv_freq`` gives (both of LongRoPE's; none for dynamic
    NTK, which computes its base inside ``_compute_cos_sin_cache``)."""
    if hasattr(emb, "long_short_cos_sin_cache"):
        return {
            "inv_freq_short": emb._compute_inv_freq(emb.short_factor).numpy(),
            "inv_freq_long": emb._compute_inv_freq(emb.long_factor).numpy(),
        }
    if type(emb).__name__ == "DynamicNTKScalingRotaryEmbedding":
        return {}
    argument = getattr(emb, "scaling_factor", emb.base) if hasattr(emb, "mscale") else emb.base
    return {"inv_freq": emb._compute_inv_freq(argument).numpy()}


def rows_kept(total: int, extra: tuple[int, ...] = ()) -> np.ndarray:
    """The first and last 64 rows (all of them when 192 or fewer), and the blocks of 32 starting at ``extra``."""
    if total <= 192:
        return np.arange(total)
    kept = [np.arange(64), np.arange(total - 64, total)]
    kept += [np.arange(s, s + 32) for s in extra]
    return np.unique(np.concatenate(kept))


CASES = {
    # name: (config or None, rope_parameters (None: the config's), head size, max_position, dtype, extra row blocks)
    "default_d128_n64": (None, {"rope_type": "default", "rope_theta": 10000.0}, 128, 64, "float32", ()),
    "default_d128_n64_bf16": (None, {"rope_type": "default", "rope_theta": 10000.0}, 128, 64, "bfloat16", ()),
    "linear_f2_d128_m32": (None, {"rope_type": "linear", "rope_theta": 10000.0, "factor": 2.0}, 128, 32, "float32", ()),
    "linear_f2.5_d64_m25": (None, {"rope_type": "linear", "rope_theta": 10000.0, "factor": 2.5}, 64, 25, "float32", ()),
    "linear_f3_d64_m8192": (None, {"rope_type": "linear", "rope_theta": 10000.0, "factor": 3.0}, 64, 8192, "float32",
                            (12000,)),
    "dynamic_f2_d128_m64": (None, {"rope_type": "dynamic", "rope_theta": 10000.0, "factor": 2.0}, 128, 64, "float32",
                            ()),
    "llama-2-7b-dynamic": ("llama-2-7b-dynamic", None, None, None, "float32", ()),
    "llama-3.1-8b": ("llama-3.1-8b", None, None, None, "float32", (8176,)),
    "qwen2.5-7b-yarn": ("qwen2.5-7b-yarn", None, None, None, "float32", (32752,)),
    "qwen3-8b-yarn": ("qwen3-8b-yarn", None, None, None, "float32", ()),
    "deepseek-v3": ("deepseek-v3", None, None, None, "float32", (4080,)),
    "deepseek-v2-lite": ("deepseek-v2-lite", None, None, None, "float32", ()),
    "deepseek_mscale_only_d64": (None, {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 40.0,
                                        "original_max_position_embeddings": 64, "mscale": 0.707}, 64, 2560,
                                 "float32", (), "deepseek_v3"),
    "phi-3-mini-128k": ("phi-3-mini-128k", None, None, None, "float32", (4064, 4080)),
    "phi-4-mini": ("phi-4-mini", None, None, None, "float32", (4064, 4080)),
}  # fmt: skip


def main(root: str) -> None:
    sys.meta_path.insert(0, _Finder(Path(root)))
    rope_module = importlib.import_module(PACKAGE)
    source_sha = {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted((Path(root) / PACKAGE.replace(".", "/")).glob("*.py"))
    }
    manifest: dict = {
        "vllm": "0.34.0 (wheel vllm-0.34.0-cp38-abi3-manylinux_2_28_x86_64.whl)",
        "torch": torch.__version__,
        "device": "cpu",
        "source_sha256": source_sha,
        "cases": {},
    }
    torch.set_default_device("cpu")
    for name, case in CASES.items():
        config, parameters, head, max_position, dtype, extra = case[:6]
        model_type = case[6] if len(case) > 6 else None
        if config is not None:
            parameters, max_position, head, model_type = config_parameters(config)
        parameters = dict(parameters)
        is_neox = True
        if model_type is not None and model_type.startswith("deepseek"):
            # vLLM's deepseek_v2.py (DeepseekV2MLAAttention): every scaled RoPE becomes deepseek_yarn (or
            # deepseek_llama_scaling for attention_factor 1), applied GPT-J style
            if parameters["rope_type"] != "default":
                parameters["rope_type"] = (
                    "deepseek_llama_scaling" if parameters.get("attention_factor") == 1.0 else "deepseek_yarn"
                )
            is_neox = False
        MAX_MODEL_LEN["value"] = max_position
        rope_module._ROPE_DICT.clear()
        emb = rope_module.get_rope(
            head, max_position, is_neox_style=is_neox, rope_parameters=parameters, dtype=getattr(torch, dtype)
        )
        array = "long_short_cos_sin_cache" if hasattr(emb, "long_short_cos_sin_cache") else "cos_sin_cache"
        cache = getattr(emb, array).detach().cpu()
        rows = rows_kept(cache.shape[0], extra)
        kept = cache[torch.from_numpy(rows)]
        values = kept.view(torch.uint16).numpy() if dtype == "bfloat16" else kept.numpy()
        out = HERE / f"{name}.npz"
        np.savez(out, rows=rows.astype(np.int64), values=values, **inv_freqs(emb))
        manifest["cases"][name] = {
            "file": out.name,
            "sha256": hashlib.sha256(out.read_bytes()).hexdigest(),
            "config": config,
            "model_type": model_type,
            "class": type(emb).__name__,
            "get_rope": {
                "head_size": head,
                "max_position": max_position,
                "is_neox_style": is_neox,
                "rope_parameters": parameters,
                "dtype": dtype,
            },
            "array": array,
            "shape": list(cache.shape),
            "stored": "bfloat16 bits as uint16" if dtype == "bfloat16" else dtype,
            "mscale": float(getattr(emb, "mscale", getattr(emb, "short_mscale", 1.0))),
            "long_mscale": float(getattr(emb, "long_mscale", getattr(emb, "mscale", 1.0))),
        }
        print(name, type(emb).__name__, tuple(cache.shape), len(rows))
    (HERE / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
