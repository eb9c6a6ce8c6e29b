"""Make the goldens of what a model class adds beside its RoPE cache, with transformers itself (not part of posenc).

Run by hand in a venv with torch and transformers (README.md). No framework arithmetic is written here:

- ``no_rope_layers``: ``AutoConfig.from_pretrained(folder)`` of each ``configs/<model>/config.json`` (the
  ``text_config``'s for Llama 4), as the config class fills it in.
- ``attn_scales``: the query a real ``Llama4TextAttention`` (a NoPE layer: ``no_rope_layers=[0]``) hands to its
  attention function, captured by an attention implementation registered for the purpose. Its ``q_proj`` has zero
  weights and a bias of ones, so the query entering the temperature tuning is exactly 1 at every position and what
  arrives is ``1 * attn_scales`` in float32; positions past 0 come from a cache object reporting ``past_seen_tokens``.
- ``softmax_scale``: ``DeepseekV3Attention(config, 0).scaling`` / ``DeepseekV2Attention(config, 0).scaling`` of the
  loaded configs, built on the meta device (no weights are allocated).

Writes ``rope_model_goldens.npz`` (fixed member timestamps) and ``manifest.json`` (sorted keys) here.
"""

from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path

import numpy as np
import torch
import transformers
from transformers import AttentionInterface, AutoConfig
from transformers.models.deepseek_v2.modeling_deepseek_v2 import DeepseekV2Attention
from transformers.models.deepseek_v3.modeling_deepseek_v3 import DeepseekV3Attention
from transformers.models.llama4.configuration_llama4 import Llama4TextConfig
from transformers.models.llama4.modeling_llama4 import Llama4TextAttention

HERE = Path(__file__).resolve().parent
CONFIGS = HERE / "configs"
ROPE_CONFIGS = HERE.parent / "rope_config" / "configs"

#: (name, config folder, first position, count, floor_scale and attn_scale given over the config's, or None)
WINDOWS = [
    ("llama-4-scout_pos0-20479", ROPE_CONFIGS / "llama-4-scout", 0, 20480, None),
    ("llama-4-scout_pos10481664-10485759", ROPE_CONFIGS / "llama-4-scout", 10485760 - 4096, 4096, None),
    ("llama-4-scout_pos16773120-16777727", ROPE_CONFIGS / "llama-4-scout", (1 << 24) - 4096, 4608, None),
    ("floor3_scale0.37_pos0-4095", ROPE_CONFIGS / "llama-4-scout", 0, 4096, (3, 0.37)),
]

_captured: list[torch.Tensor] = []


def _capture(module, query, key, value, attention_mask, **kwargs):  # an attention implementation: keeps the query
    _captured.append(query.detach().clone())
    return torch.zeros_like(query).transpose(1, 2), None


class _Past:
    """The one thing the attention asks of a cache: how many tokens it has seen (and ``update`` passes through)."""

    def __init__(self, seen: int) -> None:
        self.seen = seen

    def get_seq_length(self, layer_idx: int = 0) -> int:
        return self.seen

    def update(self, key, value, layer_idx, **kwargs):
        return key, value


def attn_scales(folder: Path, first: int, count: int, override) -> tuple[np.ndarray, dict]:
    text = AutoConfig.from_pretrained(folder).text_config
    floor_scale, attn_scale = override if override else (text.floor_scale, text.attn_scale)
    config = Llama4TextConfig(
        hidden_size=8, num_attention_heads=1, num_key_value_heads=1, head_dim=8, num_hidden_layers=1,
        no_rope_layers=[0], attn_temperature_tuning=True, floor_scale=floor_scale, attn_scale=attn_scale,
        attention_bias=True, use_qk_norm=text.use_qk_norm,
    )  # fmt: skip
    config._attn_implementation = "posenc_capture"
    attention = Llama4TextAttention(config, layer_idx=0)
    with torch.no_grad():
        attention.q_proj.weight.zero_()
        attention.q_proj.bias.fill_(1.0)
    _captured.clear()
    hidden = torch.zeros(1, count, 8)
    with torch.no_grad():
        attention(hidden, position_embeddings=None, attention_mask=None, cache=_Past(first) if first else None)
    query = _captured[0][0, 0]  # (seq, head_dim): every column the same scale
    assert bool((query == query[:, :1]).all())
    scales = query[:, 0].numpy().astype(np.float32)
    where = str(folder.relative_to(HERE.parent))
    return scales, {"first_position": first, "floor_scale": floor_scale, "attn_scale": attn_scale,
                    "config": where, "use_rope_of_layer": int(attention.use_rope)}  # fmt: skip


def main() -> None:
    torch.set_num_threads(1)
    AttentionInterface.register("posenc_capture", _capture)
    arrays: dict[str, np.ndarray] = {}
    manifest: dict = {"attn_scales": {}, "no_rope_layers": {}, "softmax_scale": {}}
    for name, folder, first, count, override in WINDOWS:
        arrays[f"attn_scales/{name}"], manifest["attn_scales"][name] = attn_scales(folder, first, count, override)
    for name, folder in [("llama-4-scout", ROPE_CONFIGS / "llama-4-scout"), *(
        (f.name, f) for f in sorted(CONFIGS.iterdir()) if f.is_dir() and (f / "config.json").is_file()
    )]:  # fmt: skip
        config = AutoConfig.from_pretrained(folder)
        config = getattr(config, "text_config", config)
        arrays[f"no_rope_layers/{name}"] = np.array(config.no_rope_layers, np.int64)
        manifest["no_rope_layers"][name] = {"num_hidden_layers": config.num_hidden_layers,
                                            "config": str(folder.relative_to(HERE.parent))}  # fmt: skip
    for name, cls in [("deepseek-v3", DeepseekV3Attention), ("deepseek-v2-lite", DeepseekV2Attention)]:
        config = AutoConfig.from_pretrained(ROPE_CONFIGS / name)
        with torch.device("meta"):
            attention = cls(config, layer_idx=0)
        manifest["softmax_scale"][name] = {"scaling": attention.scaling, "class": cls.__name__,
                                           "qk_head_dim": attention.qk_head_dim}  # fmt: skip
    manifest["environment"] = {"torch": torch.__version__, "transformers": transformers.__version__,
                               "numpy": np.__version__, "python": sys.version.split()[0]}  # fmt: skip
    out = HERE / "rope_model_goldens.npz"
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as zf:
        for key in sorted(arrays):
            info = zipfile.ZipInfo(key.replace("/", "__") + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            with zf.open(info, "w") as fp:
                np.lib.format.write_array(fp, np.ascontiguousarray(arrays[key]), allow_pickle=False)
    (HERE / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    for key in sorted(arrays):
        print(key, arrays[key].shape, np.unique(arrays[key])[:6])
    print(json.dumps(manifest["softmax_scale"]))


if __name__ == "__main__":
    main()
