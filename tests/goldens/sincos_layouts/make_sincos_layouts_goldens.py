#!/usr/bin/env python3
"""Make the 2-D and 3-D sincos layout goldens (``posenc sincos2d --layout``) with the libraries' own code.

This script is NOT part of posenc and is never imported by the test suite: it runs in a throwaway virtual
environment with torch (CPU), timm, diffusers, vit-pytorch and einops, and writes ``<name>.npz`` files and
``manifest.json`` (each golden's posenc API keywords and the library versions) that the suite reads with numpy
alone. README.md beside this file gives the commands.

Each ``.npz`` holds ``pe_t``: the library's table, float32 as the model holds it, stored transposed
(``(d_model, tokens)``, C order) so that deflate finds each column's period; the diffusers goldens also hold
``pe64_t``, the float64 table ``get_2d_sincos_pos_embed`` / ``get_3d_sincos_pos_embed`` return before ``.float()``
(small grids only). No posenc code and no framework arithmetic of posenc's is used here.

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
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path

import numpy as np
import torch

# torchvision's CUDA build cannot load its kernels beside CPU torch; diffusers only needs the operator schemas to
# exist when it imports it.
_LIB = torch.library.Library("torchvision", "DEF")
_LIB.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
_LIB.define("qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")

import diffusers  # noqa: E402
import timm  # noqa: E402
from diffusers.models.embeddings import PatchEmbed, get_2d_sincos_pos_embed, get_3d_sincos_pos_embed  # noqa: E402
from timm.layers.pos_embed_sincos import build_sincos2d_pos_embed  # noqa: E402

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "manifest.json"
ZIP_DATE = (1980, 1, 1, 0, 0, 0)

Arrays = dict[str, np.ndarray]


def timm_case(h: int, w: int, dim: int, temperature: float = 10000.0, reverse: bool = False, interleave: bool = False):
    def make() -> Arrays:
        pe = build_sincos2d_pos_embed(
            [h, w], dim, temperature=temperature, reverse_coord=reverse, interleave_sin_cos=interleave
        )
        return {"pe": pe.numpy()}

    params = {"layout": "timm", "grid": [h, w], "d_model": dim}
    if temperature != 10000.0:
        params["base"] = temperature
    if reverse:
        params["reverse_coord"] = True
    if interleave:
        params["interleave_sin_cos"] = True
    return params, make


def simple_vit_case(h: int, w: int, dim: int, patch: int = 16):
    def make() -> Arrays:
        from vit_pytorch import SimpleViT

        torch.manual_seed(0)
        model = SimpleViT(
            image_size=(h * patch, w * patch), patch_size=patch, num_classes=10, dim=dim, depth=1, heads=4,
            mlp_dim=2 * dim,
        )  # fmt: skip
        return {"pe": model.pos_embedding.numpy()}

    return {"layout": "simple-vit", "grid": [h, w], "d_model": dim}, make


def dit_model_case(sample: int, patch: int, dim: int, interpolation: float = 1.0):
    """A PatchEmbed as DiT and PixArt build it: its ``pos_embed`` buffer (``.float()`` of the float64 table)."""

    def make() -> Arrays:
        embed = PatchEmbed(height=sample, width=sample, patch_size=patch, in_channels=4, embed_dim=dim,
                           interpolation_scale=interpolation)  # fmt: skip
        return {"pe": embed.pos_embed[0].numpy()}

    side = sample // patch
    params = {"layout": "dit", "grid": [side, side], "d_model": dim, "base_size": side}
    if interpolation != 1.0:
        params["interpolation_scale"] = interpolation
    return params, make


def dit_case(h: int, w: int, dim: int, base_size: int, interpolation: float, extra: int = 0):
    """``get_2d_sincos_pos_embed`` as PatchEmbed.forward calls it at another grid than its own."""

    def make() -> Arrays:
        pe = get_2d_sincos_pos_embed(dim, (h, w), cls_token=extra > 0, extra_tokens=extra,
                                     interpolation_scale=interpolation, base_size=base_size)  # fmt: skip
        return {"pe": pe.float().numpy(), "pe64": pe.numpy()}

    params = {"layout": "dit", "grid": [h, w], "d_model": dim, "base_size": base_size}
    params["interpolation_scale"] = interpolation
    if extra:
        params["extra_tokens"] = extra
    return params, make


def dit_forward_case(sample: int, patch: int, dim: int, h: int, w: int, interpolation: float = 1.0):
    """A model's PatchEmbed at an image of another size (``h x w`` patches): the table ``PatchEmbed.forward``
    computes, with the module's own ``base_size`` and ``interpolation_scale`` (fractional positions)."""

    def make() -> Arrays:
        embed = PatchEmbed(height=sample, width=sample, patch_size=patch, in_channels=4, embed_dim=dim,
                           interpolation_scale=interpolation)  # fmt: skip
        pe = get_2d_sincos_pos_embed(embed_dim=embed.pos_embed.shape[-1], grid_size=(h, w), base_size=embed.base_size,
                                     interpolation_scale=embed.interpolation_scale, output_type="pt")  # fmt: skip
        return {"pe": pe.float().numpy()}

    params = {"layout": "dit", "grid": [h, w], "d_model": dim, "base_size": sample // patch}
    if interpolation != 1.0:
        params["interpolation_scale"] = interpolation
    return params, make


def sd3_case(latent_h: int, latent_w: int, patch: int, dim: int, sample: int, max_size: int, interp: float = 1.0):
    """PatchEmbed(pos_embed_max_size=...).cropped_pos_embed for a latent of ``latent_h x latent_w``."""

    def make() -> Arrays:
        embed = PatchEmbed(height=sample, width=sample, patch_size=patch, in_channels=16, embed_dim=dim,
                           interpolation_scale=interp, pos_embed_max_size=max_size)  # fmt: skip
        return {"pe": embed.cropped_pos_embed(latent_h, latent_w)[0].numpy()}

    params = {
        "layout": "sd3", "grid": [latent_h // patch, latent_w // patch], "d_model": dim,
        "base_size": sample // patch, "pos_embed_max_size": max_size,
    }  # fmt: skip
    if interp != 1.0:
        params["interpolation_scale"] = interp
    return params, make


def cogvideox_model_case():
    """CogVideoXPatchEmbed as CogVideoX-2b builds it (embed 1920, spatial scale 1.875), at 13 frames of a 12x16
    latent: T = 4, 6 x 8 patches; its buffer after the 226 text rows."""

    def make() -> Arrays:
        from diffusers.models.embeddings import CogVideoXPatchEmbed

        embed = CogVideoXPatchEmbed(patch_size=2, in_channels=16, embed_dim=1920, sample_width=16, sample_height=12,
                                    sample_frames=13, temporal_compression_ratio=4, spatial_interpolation_scale=1.875,
                                    temporal_interpolation_scale=1.0)  # fmt: skip
        pe = embed.pos_embedding[0, 226:]
        return {"pe": pe.float().numpy()}

    params = {"layout": "cogvideox", "grid": [6, 8], "frames": 4, "d_model": 1920, "interpolation_scale": 1.875}
    return params, make


def cogvideox_case(t: int, h: int, w: int, dim: int, spatial: float, temporal: float):
    def make() -> Arrays:
        pe = get_3d_sincos_pos_embed(dim, (w, h), t, spatial, temporal).reshape(t * h * w, dim)
        return {"pe": pe.float().numpy(), "pe64": pe.numpy()}

    params = {"layout": "cogvideox", "grid": [h, w], "frames": t, "d_model": dim, "interpolation_scale": spatial,
              "temporal_interpolation_scale": temporal}  # fmt: skip
    return params, make


CASES: dict[str, tuple[dict, Callable[[], Arrays]]] = {
    "timm_vitb16_14x14_d768": timm_case(14, 14, 768),
    "timm_3x5_d16": timm_case(3, 5, 16),
    "timm_3x5_d16_reverse": timm_case(3, 5, 16, reverse=True),
    "timm_3x5_d16_interleave": timm_case(3, 5, 16, interleave=True),
    "timm_3x5_d16_reverse_interleave_t100": timm_case(3, 5, 16, temperature=100.0, reverse=True, interleave=True),
    "simple_vit_b16_14x14_d768": simple_vit_case(14, 14, 768),
    "simple_vit_3x5_d32": simple_vit_case(3, 5, 32),
    "dit_xl2_256_16x16_d1152": dit_model_case(32, 2, 1152),
    "pixart_alpha_512_32x32_d1152": dit_model_case(64, 2, 1152),
    # PixArt-alpha 512 (sample 64, patch 2: base_size 32) at its 384x640 aspect-ratio bin: a 48x80 latent
    "pixart_alpha_512_bin384x640_24x40_d1152": dit_forward_case(64, 2, 1152, 24, 40),
    "dit_6x10_d16_base4_interp2": dit_case(6, 10, 16, 4, 2.0),
    "dit_5x7_d32_base6_interp0.75_extra2": dit_case(5, 7, 32, 6, 0.75, extra=2),
    "sd3_medium_latent64_32x32_d1536": sd3_case(64, 64, 2, 1536, 128, 192),
    "sd3_latent6x10_3x5_d16_max9": sd3_case(6, 10, 2, 16, 8, 9),
    "sd3_latent8x4_4x2_d16_max7_interp1.5": sd3_case(8, 4, 2, 16, 6, 7, 1.5),
    "cogvideox_2b_4x6x8_d1920": cogvideox_model_case(),
    "cogvideox_2x3x5_d32_s1.5_t0.75": cogvideox_case(2, 3, 5, 32, 1.5, 0.75),
}


def _npz(arrays: Arrays) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for name, array in arrays.items():
            member = io.BytesIO()
            np.lib.format.write_array(member, np.ascontiguousarray(array.T), allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}_t.npy", ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, member.getvalue(), compresslevel=9)
    return buffer.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="recompute and compare with the files; write nothing")
    args = parser.parse_args(argv)
    manifest = {
        "generator": "tests/goldens/sincos_layouts/make_sincos_layouts_goldens.py",
        "versions": {
            "python": platform.python_version(), "torch": torch.__version__, "timm": timm.__version__,
            "diffusers": diffusers.__version__, "vit-pytorch": version("vit-pytorch"), "numpy": np.__version__,
        },
        "goldens": {},
    }  # fmt: skip
    stale = []
    for name, (params, make) in CASES.items():
        arrays = make()
        assert arrays["pe"].dtype == np.float32, (name, arrays["pe"].dtype)
        assert "pe64" not in arrays or arrays["pe64"].dtype == np.float64, name
        manifest["goldens"][name] = {"file": f"{name}.npz", "params": params, "shape": list(arrays["pe"].shape)}
        data = _npz(arrays)
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
    print(f"wrote {len(CASES)} goldens and {MANIFEST.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
