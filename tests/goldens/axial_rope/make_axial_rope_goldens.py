#!/usr/bin/env python3
"""Make axial RoPE goldens (``posenc axial``) with the frameworks' own vision towers and FLUX's position embedder.

This script is NOT part of posenc and is never imported by the test suite: it runs in a throwaway virtual
environment with torch (CPU), transformers, diffusers and numpy, and writes ``<name>.npz`` files (``cos``, ``sin``,
float32) and ``manifest.json`` (each golden's posenc parameters and the library versions) that the suite reads
without any of those libraries. README.md beside this file gives the commands.

The transformers goldens run the model itself: a vision tower of the published geometry (hidden size, heads,
patch and merge sizes, window size, rope theta) with one layer and random weights, fed pixels of the given grid; a
forward pre-hook on its first layer records the ``position_embeddings`` (cos, sin) the tower passes its attention,
after every reordering the tower applies. The FLUX golden calls diffusers' ``FluxPosEmbed`` on the ids
``FluxPipeline`` builds (``torch.zeros(text_len, 3)`` for the text, ``_prepare_latent_image_ids`` for the latent).
timm's pixel-band ``RotaryEmbedding`` is called as is (``get_embed``), and its two parts as it calls them
(``torch.linspace``, ``pixel_freq_bands``). No framework arithmetic is written here.

The .npz members carry a fixed zip timestamp and deflate level, so a re-run with the same versions gives identical
bytes. ``--check`` recomputes everything and compares it with the files on disk without writing anything.
"""

from __future__ import annotations

import argparse
import io
import json
import platform
import sys
import zipfile
from pathlib import Path

import numpy as np
import torch

# torchvision's CUDA build cannot load its kernels beside CPU torch; transformers and diffusers only need the
# operator schemas to exist when they import it.
_LIB = torch.library.Library("torchvision", "DEF")
_LIB.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
_LIB.define("qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")

import diffusers  # noqa: E402
import timm  # noqa: E402
import transformers  # noqa: E402

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "manifest.json"
ZIP_DATE = (1980, 1, 1, 0, 0, 0)


def _capture(model: torch.nn.Module, layer: torch.nn.Module, *args: object, **kwargs: object) -> tuple:
    seen: dict[str, tuple] = {}

    def hook(module: torch.nn.Module, a: tuple, kw: dict) -> None:
        seen.setdefault("pe", kw["position_embeddings"])

    handle = layer.register_forward_pre_hook(hook, with_kwargs=True)
    with torch.no_grad():
        model(*args, **kwargs)
    handle.remove()
    cos, sin = seen["pe"]
    return cos.reshape(-1, cos.shape[-1]).numpy(), sin.reshape(-1, sin.shape[-1]).numpy()


def pixtral(height: int, width: int, head_dim: int, theta: float) -> tuple:
    from transformers import PixtralVisionConfig, PixtralVisionModel

    heads = 16
    config = PixtralVisionConfig(
        hidden_size=head_dim * heads, num_attention_heads=heads, num_hidden_layers=1, intermediate_size=64,
        patch_size=16, image_size=1024, rope_parameters={"rope_type": "axial", "rope_theta": theta},
    )  # fmt: skip
    torch.manual_seed(0)
    model = PixtralVisionModel(config).eval()
    pixels = torch.randn(1, 3, 16 * height, 16 * width)
    return _capture(model, model.transformer.layers[0], pixels, image_sizes=[(16 * height, 16 * width)])


def qwen_vl(model_name: str, frames: int, height: int, width: int, head_dim: int, theta: float, window: int) -> tuple:
    heads = 16
    common = {"depth": 1, "num_heads": heads, "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2}
    common["rope_parameters"] = {"rope_type": "axial", "rope_theta": theta}
    if model_name == "qwen2-vl":
        from transformers.models.qwen2_vl import modeling_qwen2_vl as m
        from transformers.models.qwen2_vl.configuration_qwen2_vl import Qwen2VLVisionConfig

        config = Qwen2VLVisionConfig(embed_dim=head_dim * heads, hidden_size=64, mlp_ratio=1, **common)
        cls = m.Qwen2VisionTransformerPretrainedModel
    else:
        from transformers.models.qwen2_5_vl import modeling_qwen2_5_vl as m
        from transformers.models.qwen2_5_vl.configuration_qwen2_5_vl import Qwen2_5_VLVisionConfig

        config = Qwen2_5_VLVisionConfig(
            hidden_size=head_dim * heads, intermediate_size=64, out_hidden_size=64, window_size=window,
            fullatt_block_indexes=[], **common,
        )  # fmt: skip
        cls = m.Qwen2_5_VisionTransformerPretrainedModel
    torch.manual_seed(0)
    model = cls(config).eval()
    patches = frames * height * width
    pixels = torch.randn(patches, 3 * 2 * 14 * 14)
    grid = torch.tensor([[frames, height, width]])
    return _capture(model, model.blocks[0], pixels, grid_thw=grid)


def flux(text: int, latent_h: int, latent_w: int, axes_dim: list[int], theta: float) -> tuple:
    from diffusers.models.transformers.transformer_flux import FluxPosEmbed
    from diffusers.pipelines.flux.pipeline_flux import FluxPipeline

    text_ids = torch.zeros(text, 3)
    image_ids = FluxPipeline._prepare_latent_image_ids(1, latent_h // 2, latent_w // 2, "cpu", torch.float32)
    ids = torch.cat((text_ids, image_ids), dim=0)
    cos, sin = FluxPosEmbed(theta=int(theta), axes_dim=axes_dim)(ids)
    return cos.numpy(), sin.numpy()


def llama4(side: int, head_dim: int, theta: float) -> tuple:
    """``Llama4VisionRotaryEmbedding``'s ``freqs_ci`` (complex, ``(side**2 + 1, 1, head_dim / 2)``) in the real
    layout its ``vision_apply_rotary_emb`` consumes: query pairs ``(2c, 2c + 1)`` are one complex number, so each
    ``cos``/``sin`` column is repeated twice side by side. The layout is checked against the model's own function."""
    from transformers import Llama4VisionConfig
    from transformers.models.llama4 import modeling_llama4 as m

    heads = 16
    config = Llama4VisionConfig(
        hidden_size=head_dim * heads, num_attention_heads=heads, image_size=14 * side, patch_size=14,
        rope_parameters={"rope_type": "default", "rope_theta": theta},
    )  # fmt: skip
    freqs_ci = m.Llama4VisionRotaryEmbedding(config)(torch.zeros(1))
    cos = freqs_ci.real.reshape(side * side + 1, -1).repeat_interleave(2, dim=-1)
    sin = freqs_ci.imag.reshape(side * side + 1, -1).repeat_interleave(2, dim=-1)
    torch.manual_seed(0)
    q = torch.randn(1, side * side + 1, heads, head_dim)
    theirs, _ = m.vision_apply_rotary_emb(q, q, freqs_ci)
    pairs = torch.stack([-q[..., 1::2], q[..., ::2]], dim=-1).reshape(q.shape)  # (x0, x1) -> (-x1, x0)
    ours = q * cos[None, :, None, :] + pairs * sin[None, :, None, :]
    assert torch.allclose(ours, theirs, atol=1e-5), "freqs_ci's real layout is not interleaved pairs"
    return cos.numpy(), sin.numpy()


def eva02(height: int, width: int) -> tuple:
    """timm's EVA-02 B/14 (``eva02_base_patch14_224``: head_dim 64, ``ref_feat_shape`` 16x16) built with one block
    and random weights at ``img_size = 14 * (height, width)``: its ``RotaryEmbeddingCat.get_embed()``, split as its
    attention splits it (``apply_rot_embed_cat``: ``sin, cos = emb.chunk(2, -1)``)."""
    import timm

    model = timm.create_model("eva02_base_patch14_224", pretrained=False, depth=1, img_size=(14 * height, 14 * width))
    emb = model.rope.get_embed()
    assert emb.shape == (height * width, 2 * 64), emb.shape
    sin, cos = emb.chunk(2, -1)
    return cos.contiguous().numpy(), sin.contiguous().numpy()


#: name -> (posenc parameters, maker)
CASES = {
    "pixtral_12b_16x24_hd64": (
        {"model": "pixtral", "grid": [16, 24], "head_dim": 64, "theta": 10000.0},
        lambda: pixtral(16, 24, 64, 10000.0),
    ),
    "pixtral_5x3_hd16_theta100": (
        {"model": "pixtral", "grid": [5, 3], "head_dim": 16, "theta": 100.0},
        lambda: pixtral(5, 3, 16, 100.0),
    ),
    "qwen2_vl_8x12_hd80": (
        {"model": "qwen2-vl", "grid": [8, 12], "head_dim": 80, "theta": 10000.0, "spatial_merge_size": 2},
        lambda: qwen_vl("qwen2-vl", 1, 8, 12, 80, 10000.0, 112),
    ),
    "qwen2_5_vl_8x12_hd80_window112": (
        {
            "model": "qwen2.5-vl",
            "grid": [8, 12],
            "head_dim": 80,
            "theta": 10000.0,
            "spatial_merge_size": 2,
            "window_size": 112,
            "patch_size": 14,
        },
        lambda: qwen_vl("qwen2.5-vl", 1, 8, 12, 80, 10000.0, 112),
    ),  # fmt: skip
    "qwen2_5_vl_video_2x20x12_hd80_window112": (
        {
            "model": "qwen2.5-vl",
            "grid": [20, 12],
            "frames": 2,
            "head_dim": 80,
            "theta": 10000.0,
            "spatial_merge_size": 2,
            "window_size": 112,
            "patch_size": 14,
        },
        lambda: qwen_vl("qwen2.5-vl", 2, 20, 12, 80, 10000.0, 112),
    ),  # fmt: skip
    "flux_text4_latent4x6": (
        {
            "model": "flux",
            "grid": [4, 6],
            "head_dim": 128,
            "theta": 10000.0,
            "axes_dim": [16, 56, 56],
            "text_tokens": 4,
        },
        lambda: flux(4, 4, 6, [16, 56, 56], 10000.0),
    ),  # fmt: skip
    "flux_text2_latent64x96": (
        {
            "model": "flux",
            "grid": [64, 96],
            "head_dim": 128,
            "theta": 10000.0,
            "axes_dim": [16, 56, 56],
            "text_tokens": 2,
        },
        lambda: flux(2, 64, 96, [16, 56, 56], 10000.0),
    ),  # fmt: skip
    "llama4_scout_24x24_hd88": (
        {"model": "llama4", "grid": [24, 24], "head_dim": 88, "theta": 10000.0},
        lambda: llama4(24, 88, 10000.0),
    ),
    "llama4_5x5_hd16_theta100": (
        {"model": "llama4", "grid": [5, 5], "head_dim": 16, "theta": 100.0},
        lambda: llama4(5, 16, 100.0),
    ),
    "eva02_b14_16x16_ref16x16": (
        {"model": "eva02", "grid": [16, 16], "head_dim": 64, "theta": 10000.0, "ref_grid": [16, 16]},
        lambda: eva02(16, 16),
    ),
    "eva02_b14_12x20_ref16x16": (
        {"model": "eva02", "grid": [12, 20], "head_dim": 64, "theta": 10000.0, "ref_grid": [16, 16]},
        lambda: eva02(12, 20),
    ),
}


# Video styles (issue #28): diffusers' own rotary modules on a latent of the given frames x height x width.
def hunyuan_video(frames: int, latent_h: int, latent_w: int, axes_dim: list[int], theta: float) -> tuple:
    from diffusers.models.transformers.transformer_hunyuan_video import HunyuanVideoRotaryPosEmbed

    rope = HunyuanVideoRotaryPosEmbed(patch_size=2, patch_size_t=1, rope_dim=axes_dim, theta=theta)
    cos, sin = rope(torch.zeros(1, 16, frames, latent_h, latent_w))
    return cos.numpy(), sin.numpy()


def wan(frames: int, latent_h: int, latent_w: int, head_dim: int, theta: float) -> tuple:
    from diffusers.models.transformers.transformer_wan import WanRotaryPosEmbed

    rope = WanRotaryPosEmbed(attention_head_dim=head_dim, patch_size=(1, 2, 2), max_seq_len=1024, theta=theta)
    cos, sin = rope(torch.zeros(1, 16, frames, latent_h, latent_w))
    return cos.reshape(-1, head_dim).numpy(), sin.reshape(-1, head_dim).numpy()


_HUNYUAN = {"model": "hunyuan-video", "head_dim": 128, "theta": 256.0, "axes_dim": [16, 56, 56]}
_WAN = {"model": "wan", "head_dim": 128, "theta": 10000.0}
CASES.update(
    {
        "hunyuan_video_latent3x8x12": (
            {**_HUNYUAN, "grid": [3, 8, 12]}, lambda: hunyuan_video(3, 8, 12, [16, 56, 56], 256.0)
        ),
        "hunyuan_video_latent4x12x16": (
            {**_HUNYUAN, "grid": [4, 12, 16]}, lambda: hunyuan_video(4, 12, 16, [16, 56, 56], 256.0)
        ),
        "hunyuan_video_latent1x2x1024": (
            {**_HUNYUAN, "grid": [1, 2, 1024]}, lambda: hunyuan_video(1, 2, 1024, [16, 56, 56], 256.0)
        ),
        "wan_latent3x8x12_hd128": ({**_WAN, "grid": [3, 8, 12]}, lambda: wan(3, 8, 12, 128, 10000.0)),
        "wan_latent1x2x1024_hd128": ({**_WAN, "grid": [1, 2, 1024]}, lambda: wan(1, 2, 1024, 128, 10000.0)),
    }
)  # fmt: skip


# timm's pixel-band RotaryEmbedding (issue #28): the module itself, get_embed over the grid.
def timm_pixel(height: int, width: int, dim: int, max_res: int, linear: bool) -> tuple:
    """``timm.layers.RotaryEmbedding(dim, max_res, in_pixels=True, linear_bands=linear).get_embed((H, W))``: its
    ``(sin, cos)``, each ``(H * W, dim)``."""
    from timm.layers import RotaryEmbedding

    rope = RotaryEmbedding(dim, max_res=max_res, in_pixels=True, linear_bands=linear)
    sin, cos = rope.get_embed((height, width))
    return cos.numpy(), sin.numpy()


#: timm-pixel goldens depend on the CPU kernels torch picks (the manifest records which): torch's vectorised float32
#: ``pow`` (log bands) takes whole blocks of 16 (AVX2) or 32 (AVX-512) bands, its scalar loop the rest.
PIXEL_CASES = {
    f"timm_pixel_{h}x{w}_hd{dim}_max{res}_{'linear' if linear else 'log'}": (
        {"model": "timm-pixel", "grid": [h, w], "head_dim": dim, "max_res": res, "linear_bands": linear},
        lambda h=h, w=w, dim=dim, res=res, linear=linear: timm_pixel(h, w, dim, res, linear),
    )
    for h, w, dim, res, linear in [
        (7, 9, 64, 224, True), (7, 9, 64, 224, False), (14, 14, 64, 224, True), (14, 14, 64, 224, False),
        (8, 8, 128, 224, False),
    ]
}  # fmt: skip
CASES.update(PIXEL_CASES)
#: timm-pixel's parts, as its ``_build_grid`` and ``_build_bands`` call them: ``torch.linspace(-1, 1, s)`` for every
#: side to 70 (the scalar loop, and from 32 sides AVX-512's vectorised one) and ``pixel_freq_bands(n, max_res)``.
PIXEL_SIDES = list(range(1, 71))
PIXEL_BANDS = [[res, n] for res in (1, 7, 224, 225, 256, 384, 448, 1000, 65536) for n in (1, 2, 3, 8, 16)]


def timm_pixel_parts() -> dict[str, np.ndarray]:
    """The positions of every side in :data:`PIXEL_SIDES` and the bands of every ``(max_res, n)`` in
    :data:`PIXEL_BANDS`, each concatenated in that order."""
    from timm.layers.pos_embed_sincos import pixel_freq_bands

    positions = [torch.linspace(-1.0, 1.0, steps=s, dtype=torch.float32).numpy() for s in PIXEL_SIDES]
    bands = {
        f"bands_{kind}": np.concatenate(
            [pixel_freq_bands(n, float(res), linear_bands=linear).numpy() for res, n in PIXEL_BANDS]
        )
        for kind, linear in (("linear", True), ("log", False))
    }
    return {"positions": np.concatenate(positions), **bands}


PARTS = {"timm_pixel_parts": ({"sides": PIXEL_SIDES, "bands": PIXEL_BANDS}, timm_pixel_parts)}


def _npz(arrays: dict[str, np.ndarray]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for name, array in arrays.items():
            member = io.BytesIO()
            np.lib.format.write_array(member, np.ascontiguousarray(array), allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, member.getvalue(), compresslevel=9)
    return buffer.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="recompute and compare with the files; write nothing")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="make these goldens alone; keep the other entries")
    args = parser.parse_args(argv)
    manifest = {
        "generator": "tests/goldens/axial_rope/make_axial_rope_goldens.py",
        "versions": {
            "python": platform.python_version(), "torch": torch.__version__, "transformers": transformers.__version__,
            "diffusers": diffusers.__version__, "numpy": np.__version__, "timm": timm.__version__,
        },
        "goldens": {},
    }  # fmt: skip
    stale = []
    cases, parts = CASES, PARTS
    manifest["parts"] = {}
    if args.only:
        unknown = sorted(set(args.only) - set(CASES) - set(PARTS))
        if unknown:
            parser.error(f"no such golden: {', '.join(unknown)}")
        cases = {name: CASES[name] for name in args.only if name in CASES}
        parts = {name: PARTS[name] for name in args.only if name in PARTS}
        kept = json.loads(MANIFEST.read_text())
        if kept["versions"] != manifest["versions"]:
            parser.error(f"the manifest's goldens were made with {kept['versions']}: make them all again")
        manifest["goldens"], manifest["parts"] = kept["goldens"], kept.get("parts", {})
    for name, (meta, make_parts) in parts.items():
        arrays = make_parts()
        capability = torch.backends.cpu.get_cpu_capability()
        manifest["parts"][name] = {"file": f"{name}.npz", **meta, "cpu_capability": capability}
        data = _npz(arrays)
        path = HERE / f"{name}.npz"
        if args.check:
            if not path.exists() or path.read_bytes() != data:
                stale.append(path.name)
        else:
            path.write_bytes(data)
    for name, (params, make) in cases.items():
        cos, sin = make()
        assert cos.dtype == np.float32 and sin.dtype == np.float32, (name, cos.dtype)
        manifest["goldens"][name] = {"file": f"{name}.npz", "params": params, "shape": list(cos.shape)}
        if name in PIXEL_CASES:
            manifest["goldens"][name]["cpu_capability"] = torch.backends.cpu.get_cpu_capability()
        data = _npz({"cos": cos, "sin": sin})
        path = HERE / f"{name}.npz"
        if args.check:
            if not path.exists() or path.read_bytes() != data:
                stale.append(path.name)
        else:
            path.write_bytes(data)
    text = json.dumps(manifest, indent=1, sort_keys=True) + "\n"
    if args.check:
        if not MANIFEST.exists() or MANIFEST.read_text() != text:
            stale.append(MANIFEST.name)
        print("stale: " + ", ".join(stale) if stale else "up to date")
        return 1 if stale else 0
    MANIFEST.write_text(text)
    print(f"wrote {len(cases) + len(parts)} goldens and {MANIFEST.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
