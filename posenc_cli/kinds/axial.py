"""``posenc axial``: axial RoPE over a patch grid, the ``cos`` and ``sin`` a vision tower (Pixtral, Qwen2-VL,
Qwen2.5-VL, Llama 4, EVA-02, timm's pixel-band ``RotaryEmbedding``), FLUX or a video transformer (HunyuanVideo, Wan)
passes its attention (:mod:`posenc_cli.encodings.axial_rope`, :mod:`posenc_cli.encodings.axial_pixel`): parameters,
maker, record, help."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..dtypes import ElementType
from ..encodings.names import AXIAL_ROPE_MODELS, AXIAL_ROPE_VIDEO
from ..encodings.sinusoid import check_base
from ..errors import SpecError
from ..params import BOOLEAN, INTEGER, INTEGERS, TEXT, Choice, Param, ValueType
from ..ranges import Range
from ..saturation import check_saturate, may_clip, refuse_clipping
from ..system.capacity import check_memory
from ..table import Param as Value
from ..table import Table
from ._shared import (
    ELEMENT_KEYS,
    GRID_SIDE,
    GRID_SIDES,
    HEAD_DIM,
    QUANTISATION,
    SPATIAL_MERGE_SIZE,
    THETA,
    Kind,
    arithmetic,
    check,
    read_as,
)

__all__ = ["KIND", "PARAMS", "axial"]

FRAMES = INTEGER.within(Range("1 <= x <= 4096", "temporal patches of a video (grid_thw's T): 1 for an image"))
WINDOW = INTEGER.within(Range("1 <= x <= 65536", "pixels per window side: 112 in Qwen2.5-VL"))
PATCH = INTEGER.within(Range("1 <= x <= 1024", "pixels per patch side: 14 in Qwen-VL, 2 latent pixels in HunyuanVideo"))
TEXT_TOKENS = INTEGER.within(Range("0 <= x <= 2**22", "text tokens before the image: 512 in FLUX.1-dev's pipeline"))
AXES_DIM = INTEGERS.within(Range("2 <= x <= 4096", "columns per axis, each even: [16, 56, 56] in FLUX.1"))
PATCH_T = INTEGER.within(Range("1 <= x <= 1024", "latent frames per patch: 1 in HunyuanVideo and Wan"))
MAX_RES = INTEGER.within(Range("1 <= x <= 65536", "timm's max_res: the top band is max_res / 2 cycles, 224 in timm"))

PARAMS: tuple[Param, ...] = (
    Param("model", Choice(AXIAL_ROPE_MODELS), "Whose axial RoPE.", required=True, short="-m"),
    Param(
        "grid",
        GRID_SIDES,
        "Patches per side, H or HxW (flux: the latent's HxW, image pixels / 8; hunyuan-video, wan: latent TxHxW).",
        required=True,
        short="-g",
    ),
    Param(
        "head_dim",
        HEAD_DIM,
        "Attention head width (a multiple of 4; flux, hunyuan-video: sum of axes_dim).",
        required=True,
    ),
    Param("theta", THETA, "rope_theta.  [default: 10000; hunyuan-video: 256]", always_recorded=True),
    Param("frames", FRAMES, "qwen: temporal patches (grid_thw's T).  [default: 1]"),
    Param("spatial_merge_size", SPATIAL_MERGE_SIZE, "qwen: the vision config's spatial_merge_size.  [default: 2]"),
    Param("window_size", WINDOW, "qwen2.5-vl: reorder rows into its windows of this many pixels (112)."),
    Param("patch_size", PATCH, "qwen2.5-vl: pixels per patch, with --window-size (14); video: latent side (2)."),
    Param("axes_dim", AXES_DIM, "flux, hunyuan-video: columns per id axis.  [default: 16,56,56]"),
    Param("text_tokens", TEXT_TOKENS, "flux: text tokens (ids 0,0,0) before the image.  [default: 512]"),
    Param("patch_size_t", PATCH_T, "hunyuan-video, wan: latent frames per patch.  [default: 1]"),
    arithmetic("transformers and timm (float32) or diffusers (FLUX, Wan: float64 on CPU; HunyuanVideo: float32)"),
    Param("ref_grid", GRID_SIDES, "eva02: timm's ref_feat_shape, positions scaled by ref/side (EVA-02: 16x16)."),
    Param("max_res", MAX_RES, "timm-pixel: timm's max_res, the top band max_res/2 cycles.  [default: 224]"),
    Param("linear_bands", BOOLEAN, "timm-pixel: linearly spaced bands (timm's default: log).", pair=True),
)

DOC = """Write axial RoPE's cos and sin over a patch grid, as a vision tower or FLUX passes them to attention.

Arrays cos and sin, (tokens, head_dim), float32 as the model makes them. pixtral: [h | w | h | w], h the even and
w the odd frequencies theta^(-2k/head_dim), rows row-major. qwen2-vl, qwen2.5-vl: [h | w | h | w] with
theta^(-4j/head_dim) on both axes, rows in spatial-merge blocks, repeated per frame; --window-size reorders them
into Qwen2.5-VL's windows. flux: three axes of axes_dim columns, each frequency twice side by side, rows the text
tokens (ids 0) then the packed latent's (0, row, column). hunyuan-video, wan: a video latent TxHxW, rows its
patches' (t, h, w) row-major, three axes as flux's (hunyuan-video: axes_dim, theta 256; wan: head_dim split
44,42,42 at 128). llama4: [w | h] at (column + 1, row + 1), each frequency theta^(-4k/head_dim) twice side by
side (freqs_ci's complex pairs), the class token last at angle 0. eva02: timm's RotaryEmbeddingCat, [h | w], each
frequency twice side by side; --ref-grid scales each position by ref/side as EVA-02 does. timm-pixel: timm's
RotaryEmbedding (in_pixels), [h | w] each twice side by side at positions linspace(-1, 1) per axis, head_dim/4
bands pi up to pi * max_res/2, log-spaced or --linear-bands. Every value is exact, correctly rounded, or with
--arithmetic framework the framework's own. docs/tables.md gives every rule.

\b
Examples:
  posenc axial -m pixtral -g 16x24 --head-dim 64 -o pixtral.npz
  posenc axial -m qwen2.5-vl -g 8x12 --head-dim 80 --window-size 112 -o qwen_vision.npz
  posenc axial -m flux -g 128x128 --head-dim 128 --text-tokens 512 -o flux_rope.npz
  posenc axial -m wan -g 21x60x104 --head-dim 128 -o wan_rope.npz
  posenc axial -m llama4 -g 24 --head-dim 88 -o llama4_vision.npz
  posenc axial -m eva02 -g 16 --head-dim 64 --ref-grid 16 -o eva02.npz
  posenc axial -m timm-pixel -g 14 --head-dim 64 --linear-bands -o timm_rope.npz
"""

_QWEN = ("qwen2-vl", "qwen2.5-vl")
#: Which style takes each of the style options.
_OWNERS = {
    "frames": _QWEN, "spatial_merge_size": _QWEN, "window_size": ("qwen2.5-vl",), "patch_size": ("qwen2.5-vl",),
    "axes_dim": ("flux",), "text_tokens": ("flux",),
}  # fmt: skip
#: The video styles' options (issue #28): HunyuanVideo's rope_axes_dim, each style's patch of the latent.
_OWNERS.update(axes_dim=("flux", "hunyuan-video"), patch_size=("qwen2.5-vl", *AXIAL_ROPE_VIDEO))
_OWNERS.update(patch_size_t=AXIAL_ROPE_VIDEO)
_OWNERS["ref_grid"] = ("eva02",)
_OWNERS.update(max_res=("timm-pixel",), linear_bands=("timm-pixel",))


def axial(
    model: str,
    grid: int | tuple[int, int] | tuple[int, int, int],
    head_dim: int,
    *,
    theta: float | None = None,
    frames: int | None = None,
    spatial_merge_size: int | None = None,
    window_size: int | None = None,
    patch_size: int | None = None,
    axes_dim: tuple[int, ...] | list[int] | None = None,
    text_tokens: int | None = None,
    patch_size_t: int | None = None,
    ref_grid: int | tuple[int, int] | None = None,
    max_res: int | None = None,
    linear_bands: bool | None = None,
    arithmetic: str = "exact",
    dtype: str = "float32",
    scale: float | None = None,
    zero_point: int | None = None,
    saturate: bool = False,
) -> Table:
    """Axial RoPE over a grid as ``model`` computes it, a :class:`Table` of kind ``"axial_rope"`` with arrays ``cos``
    and ``sin`` of shape ``(tokens, head_dim)`` (:mod:`posenc_cli.encodings.axial_rope` gives each style's rows and
    columns). A style's options given to another style are refused. ``arithmetic="framework"`` gives the
    framework's own float32 values (recorded). The video styles take ``grid=(frames, height, width)`` of the
    latent; ``theta`` defaults to 256 for ``hunyuan-video``, 10000 otherwise; ``timm-pixel`` takes no ``theta``
    (its bands are ``max_res``'s, :mod:`posenc_cli.encodings.axial_pixel`).

    Examples
    --------
    >>> t = axial("pixtral", (16, 24), 64)
    >>> t.arrays["cos"].shape, t.params["layout"]
    ((384, 64), '[h | w | h | w], rows row-major')
    >>> axial("flux", (4, 6), 128, text_tokens=4).arrays["sin"].shape
    (10, 128)
    >>> axial("wan", (3, 8, 12), 128).arrays["cos"].shape
    (72, 128)
    """
    if arithmetic not in ("exact", "framework"):
        raise SpecError(f"arithmetic must be one of exact, framework, got {arithmetic!r}", param="arithmetic")
    if model not in AXIAL_ROPE_MODELS:
        raise SpecError(f"model must be one of {', '.join(AXIAL_ROPE_MODELS)}, got {model!r}", param="model")
    if isinstance(grid, (int, np.integer)) and not isinstance(grid, bool):
        grid = (int(grid), int(grid))
    video = model in AXIAL_ROPE_VIDEO
    if not isinstance(grid, (tuple, list)) or len(grid) not in (2, 3):
        raise SpecError(
            f"grid must be (height, width) or a video's (frames, height, width), got {grid!r}", param="grid"
        )
    if video and len(grid) != 3:
        raise SpecError(
            f"{model} takes a video latent's grid TxHxW (frames, height, width), got {grid!r}", param="grid"
        )
    if len(grid) == 3 and not video:
        raise SpecError(f"{model} takes a grid HxW; a TxHxW grid is a video style's, got {grid!r}", param="grid")
    axes = read_as(KIND.inputs, "axes_dim", axes_dim)
    check(KIND.inputs, grid=tuple(grid), head_dim=head_dim, theta=theta, frames=frames, axes_dim=axes)
    check(KIND.inputs, spatial_merge_size=spatial_merge_size, window_size=window_size, patch_size=patch_size)
    check(KIND.inputs, text_tokens=text_tokens, scale=scale, zero_point=zero_point)
    check(KIND.inputs, patch_size_t=patch_size_t, max_res=max_res, linear_bands=linear_bands)
    if isinstance(ref_grid, (int, np.integer)) and not isinstance(ref_grid, bool):
        ref_grid = (int(ref_grid), int(ref_grid))
    if ref_grid is not None and (not isinstance(ref_grid, (tuple, list)) or len(ref_grid) != 2):
        raise SpecError(f"ref_grid must be (height, width), got {ref_grid!r}", param="ref_grid")
    check(KIND.inputs, ref_grid=None if ref_grid is None else tuple(ref_grid))
    given = {
        "frames": frames, "spatial_merge_size": spatial_merge_size, "window_size": window_size,
        "patch_size": patch_size, "axes_dim": axes, "text_tokens": text_tokens,
    }  # fmt: skip
    given["patch_size_t"] = patch_size_t
    given["ref_grid"] = None if ref_grid is None else (int(ref_grid[0]), int(ref_grid[1]))
    given.update(max_res=max_res, linear_bands=linear_bands)
    for name, value in given.items():
        if value is not None and model not in _OWNERS[name]:
            raise SpecError(f"{name} is {'/'.join(_OWNERS[name])}'s; {model} does not take it", param=name)
    if theta is not None and model == "timm-pixel":
        raise SpecError(
            "theta is not timm-pixel's: its bands are max_res's (timm's in_pixels=False temperature is eva02's theta)",
            param="theta",
        )
    if patch_size is not None and window_size is None and model == "qwen2.5-vl":
        raise SpecError("patch_size sizes Qwen2.5-VL's windows; give --window-size with it", param="patch_size")
    from ..encodings import axial_rope

    settings: dict[str, Any] = {k: v for k, v in given.items() if v is not None}
    if model == "flux":
        settings.setdefault("text_tokens", 512)
        settings.setdefault("axes_dim", (16, 56, 56))
    spec: Any
    encoding: Any = axial_rope
    theta = check_base(theta if theta is not None else 256.0 if model == "hunyuan-video" else 10000.0)
    if model == "timm-pixel":
        from ..encodings import axial_pixel

        settings.setdefault("max_res", 224)
        settings.setdefault("linear_bands", False)
        encoding = axial_pixel
        spec = axial_pixel.resolve(grid, head_dim, max_res=settings["max_res"], linear=settings["linear_bands"])
    elif video:
        if model == "hunyuan-video":
            settings.setdefault("axes_dim", (16, 56, 56))
        options = {k: v for k, v in settings.items() if k == "axes_dim"}
        patch = (int(settings.get("patch_size_t", 1)), int(settings.get("patch_size", 2)))
        spec = axial_rope.resolve(model, tuple(grid), head_dim, theta=theta, video_patch=(*patch, patch[1]), **options)
    else:
        spec = axial_rope.resolve(model, (grid[0], grid[1]), head_dim, theta=theta, **settings)
    rows = len(spec.positions)
    check_memory(2 * rows * spec.head_dim * KIND.work_per_value, f"the axial RoPE caches (2 x {rows} x {head_dim})")
    element = ElementType.of(dtype, scale=scale, zero_point=zero_point)
    saturated = check_saturate(saturate, element)
    arrays: dict[str, np.ndarray] = {}
    for part in ("cos", "sin"):
        if arithmetic == "framework":
            from ..encodings import framework

            float32 = encoding.framework(spec, part)
            if not saturated and may_clip(element, -1.0, 1.0):
                refuse_clipping(element, {part: float32.astype(np.float64)})
            arrays[part] = framework.to_element(float32, element)
        else:
            if not saturated and may_clip(element, -1.0, 1.0):
                refuse_clipping(element, {part: encoding.exact(spec, part, ElementType.of("float64"))})
            arrays[part] = encoding.exact(spec, part, element)
    params: dict[str, Value] = {"model": model, "grid_height": int(grid[-2]), "grid_width": int(grid[-1])}
    if video:
        params["grid_frames"] = int(grid[0])
    params.update(head_dim=spec.head_dim, **({} if model == "timm-pixel" else {"theta": theta}))
    for name, value in settings.items():
        if name == "linear_bands":
            params[name] = bool(value)
            continue
        if name == "ref_grid":
            params.update(ref_grid_height=int(value[0]), ref_grid_width=int(value[1]))
            continue
        params[name] = ",".join(map(str, value)) if name == "axes_dim" else int(value)
    layouts = {
        "pixtral": "[h | w | h | w], rows row-major",
        "qwen2-vl": "[h | w | h | w], rows in spatial-merge blocks",
        "qwen2.5-vl": "[h | w | h | w], rows in spatial-merge blocks"
        + (", in window order" if window_size is not None else ""),
        "flux": "[axis 0 | axis 1 | axis 2], each frequency twice side by side, rows text then latent",
        "hunyuan-video": "[t | h | w], each frequency twice side by side, rows (t, h, w) row-major",
        "wan": "[t | h | w], each frequency twice side by side, rows (t, h, w) row-major",
        "llama4": "[w | h] at column + 1 and row + 1, each frequency twice side by side (freqs_ci's complex pairs), "
        "rows row-major then the class token (angle 0)",
        "eva02": "[h | w], each frequency twice side by side (timm's get_embed is cat([sin, cos])), rows row-major"
        + (", positions scaled by ref_grid / grid" if ref_grid is not None else ""),
        "timm-pixel": "[h | w], each frequency twice side by side (timm's RotaryEmbedding, in_pixels), positions "
        f"linspace(-1, 1), {'linear' if settings.get('linear_bands') else 'log'} bands pi to pi * max_res / 2, "
        "rows row-major",
    }
    params.update(tokens=rows, dtype=element.name, layout=layouts[model])
    if element.scale is not None:
        params.update(scale=element.scale, zero_point=element.zero_point)
    if saturated:
        params["saturate"] = True
    if arithmetic != "exact":
        params["arithmetic"] = arithmetic
    return Table("axial_rope", arrays, params, {"cos": ("token", "dim"), "sin": ("token", "dim")})


_OPTIONS: tuple[str, ...] = ("frames", "spatial_merge_size", "window_size", "patch_size", "axes_dim", "text_tokens")
_OPTIONS += ("patch_size_t", "max_res", "linear_bands")


def _axial_from_record(p: Mapping[str, Any]) -> dict[str, Any]:
    keys = ("model", "head_dim", "theta", "arithmetic", *_OPTIONS, *ELEMENT_KEYS)
    args = {key: p[key] for key in keys if key in p}
    if "grid_height" in p and "grid_width" in p:
        args["grid"] = (p["grid_height"], p["grid_width"])
    if "grid_frames" in p and "grid" in args:
        args["grid"] = (p["grid_frames"], *args["grid"])
    if "ref_grid_height" in p and "ref_grid_width" in p:
        args["ref_grid"] = (p["ref_grid_height"], p["ref_grid_width"])
    return args


def _axial_work(p: Mapping[str, Any]) -> int:
    rows = int(p["grid_height"]) * int(p["grid_width"]) * int(p.get("frames", 1)) + int(p.get("text_tokens", 512))
    rows *= int(p.get("grid_frames", 1))
    return 2 * rows * int(p["head_dim"]) * KIND.work_per_value


# fmt: off
RECORDED: dict[str, ValueType] = {
    "model": TEXT, "grid_height": GRID_SIDE, "grid_width": GRID_SIDE, "head_dim": HEAD_DIM,
    "theta": THETA, "frames": FRAMES, "spatial_merge_size": SPATIAL_MERGE_SIZE, "window_size": WINDOW,
    "patch_size": PATCH,
    "axes_dim": AXES_DIM, "text_tokens": TEXT_TOKENS, "tokens": INTEGER, **QUANTISATION,
    "arithmetic": TEXT, "layout": TEXT,
    "ref_grid_height": GRID_SIDE, "ref_grid_width": GRID_SIDE,
}
# fmt: on
RECORDED.update(grid_frames=GRID_SIDE, patch_size_t=PATCH_T, max_res=MAX_RES, linear_bands=BOOLEAN)

KIND = Kind(
    command="axial",
    table="axial_rope",
    short_help="Write axial 2-D and 3-D RoPE caches (vision towers, FLUX, video).",
    doc=DOC,
    params=PARAMS,
    make=axial,
    lazy=False,
    recorded=RECORDED,
    recorded_as={"grid": ("grid_height", "grid_width"), "ref_grid": ("ref_grid_height", "ref_grid_width")},
    from_record=_axial_from_record,
    work_per_value=32,
    work=_axial_work,
    identify=(4, "_axial:axial_hypotheses"),
)
