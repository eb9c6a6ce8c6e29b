"""``posenc axial``: axial RoPE over a patch grid, the ``cos`` and ``sin`` a vision tower (Pixtral, Qwen2-VL,
Qwen2.5-VL) or FLUX passes its attention (:mod:`posenc_cli.encodings.axial_rope`): parameters, maker, record,
help."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..dtypes import ElementType
from ..encodings.names import AXIAL_ROPE_MODELS
from ..encodings.sinusoid import check_base
from ..errors import SpecError
from ..params import INTEGER, INTEGERS, TEXT, Choice, Param, ValueType
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
PATCH = INTEGER.within(Range("1 <= x <= 1024", "pixels per patch side: 14 in Qwen-VL"))
TEXT_TOKENS = INTEGER.within(Range("0 <= x <= 2**22", "text tokens before the image: 512 in FLUX.1-dev's pipeline"))
AXES_DIM = INTEGERS.within(Range("2 <= x <= 4096", "columns per axis, each even: [16, 56, 56] in FLUX.1"))

PARAMS: tuple[Param, ...] = (
    Param("model", Choice(AXIAL_ROPE_MODELS), "Whose axial RoPE.", required=True, short="-m"),
    Param(
        "grid",
        GRID_SIDES,
        "Patches per side, H or HxW (flux: the latent's HxW, image pixels / 8).",
        required=True,
        short="-g",
    ),
    Param("head_dim", HEAD_DIM, "Attention head width (a multiple of 4; flux: sum of axes_dim).", required=True),
    Param("theta", THETA, "rope_theta.", default=10000.0, always_recorded=True),
    Param("frames", FRAMES, "qwen: temporal patches (grid_thw's T).  [default: 1]"),
    Param("spatial_merge_size", SPATIAL_MERGE_SIZE, "qwen: the vision config's spatial_merge_size.  [default: 2]"),
    Param("window_size", WINDOW, "qwen2.5-vl: reorder rows into its windows of this many pixels (112)."),
    Param("patch_size", PATCH, "qwen2.5-vl: pixels per patch, with --window-size.  [default: 14]"),
    Param("axes_dim", AXES_DIM, "flux: columns per id axis.  [default: 16,56,56]"),
    Param("text_tokens", TEXT_TOKENS, "flux: text tokens (ids 0,0,0) before the image.  [default: 512]"),
    arithmetic("transformers (float32) or diffusers (float64 on CPU)"),
)

DOC = """Write axial RoPE's cos and sin over a patch grid, as a vision tower or FLUX passes them to attention.

Arrays cos and sin, (tokens, head_dim), float32 as the model makes them. pixtral: [h | w | h | w], h the even and
w the odd frequencies theta^(-2k/head_dim), rows row-major. qwen2-vl, qwen2.5-vl: [h | w | h | w] with
theta^(-4j/head_dim) on both axes, rows in spatial-merge blocks, repeated per frame; --window-size reorders them
into Qwen2.5-VL's windows. flux: three axes of axes_dim columns, each frequency twice side by side, rows the text
tokens (ids 0) then the packed latent's (0, row, column). Every value is exact, correctly rounded, or with
--arithmetic framework the framework's own. docs/tables.md gives every rule.

\b
Examples:
  posenc axial -m pixtral -g 16x24 --head-dim 64 -o pixtral.npz
  posenc axial -m qwen2.5-vl -g 8x12 --head-dim 80 --window-size 112 -o qwen_vision.npz
  posenc axial -m flux -g 128x128 --head-dim 128 --text-tokens 512 -o flux_rope.npz
"""

_QWEN = ("qwen2-vl", "qwen2.5-vl")
#: Which style takes each of the style options.
_OWNERS = {
    "frames": _QWEN, "spatial_merge_size": _QWEN, "window_size": ("qwen2.5-vl",), "patch_size": ("qwen2.5-vl",),
    "axes_dim": ("flux",), "text_tokens": ("flux",),
}  # fmt: skip


def axial(
    model: str,
    grid: int | tuple[int, int],
    head_dim: int,
    *,
    theta: float = 10000.0,
    frames: int | None = None,
    spatial_merge_size: int | None = None,
    window_size: int | None = None,
    patch_size: int | None = None,
    axes_dim: tuple[int, ...] | list[int] | None = None,
    text_tokens: int | None = None,
    arithmetic: str = "exact",
    dtype: str = "float32",
    scale: float | None = None,
    zero_point: int | None = None,
    saturate: bool = False,
) -> Table:
    """Axial RoPE over a grid as ``model`` computes it, a :class:`Table` of kind ``"axial_rope"`` with arrays ``cos``
    and ``sin`` of shape ``(tokens, head_dim)`` (:mod:`posenc_cli.encodings.axial_rope` gives each style's rows and
    columns). A style's options given to another style are refused. ``arithmetic="framework"`` gives the
    framework's own float32 values (recorded).

    Examples
    --------
    >>> t = axial("pixtral", (16, 24), 64)
    >>> t.arrays["cos"].shape, t.params["layout"]
    ((384, 64), '[h | w | h | w], rows row-major')
    >>> axial("flux", (4, 6), 128, text_tokens=4).arrays["sin"].shape
    (10, 128)
    """
    if arithmetic not in ("exact", "framework"):
        raise SpecError(f"arithmetic must be one of exact, framework, got {arithmetic!r}", param="arithmetic")
    if model not in AXIAL_ROPE_MODELS:
        raise SpecError(f"model must be one of {', '.join(AXIAL_ROPE_MODELS)}, got {model!r}", param="model")
    if isinstance(grid, (int, np.integer)) and not isinstance(grid, bool):
        grid = (int(grid), int(grid))
    if not isinstance(grid, (tuple, list)) or len(grid) != 2:
        raise SpecError(f"grid must be (height, width), got {grid!r}", param="grid")
    axes = read_as(KIND.inputs, "axes_dim", axes_dim)
    check(KIND.inputs, grid=tuple(grid), head_dim=head_dim, theta=theta, frames=frames, axes_dim=axes)
    check(KIND.inputs, spatial_merge_size=spatial_merge_size, window_size=window_size, patch_size=patch_size)
    check(KIND.inputs, text_tokens=text_tokens, scale=scale, zero_point=zero_point)
    given = {
        "frames": frames, "spatial_merge_size": spatial_merge_size, "window_size": window_size,
        "patch_size": patch_size, "axes_dim": axes, "text_tokens": text_tokens,
    }  # fmt: skip
    for name, value in given.items():
        if value is not None and model not in _OWNERS[name]:
            raise SpecError(f"{name} is {'/'.join(_OWNERS[name])}'s; {model} does not take it", param=name)
    if patch_size is not None and window_size is None:
        raise SpecError("patch_size sizes Qwen2.5-VL's windows; give --window-size with it", param="patch_size")
    from ..encodings import axial_rope

    settings: dict[str, Any] = {k: v for k, v in given.items() if v is not None}
    if model == "flux":
        settings.setdefault("text_tokens", 512)
        settings.setdefault("axes_dim", (16, 56, 56))
    theta = check_base(theta)
    spec = axial_rope.resolve(model, (grid[0], grid[1]), head_dim, theta=theta, **settings)
    rows = len(spec.positions)
    check_memory(2 * rows * spec.head_dim * KIND.work_per_value, f"the axial RoPE caches (2 x {rows} x {head_dim})")
    element = ElementType.of(dtype, scale=scale, zero_point=zero_point)
    saturated = check_saturate(saturate, element)
    arrays: dict[str, np.ndarray] = {}
    for part in ("cos", "sin"):
        if arithmetic == "framework":
            from ..encodings import framework

            float32 = axial_rope.framework(spec, part)
            if not saturated and may_clip(element, -1.0, 1.0):
                refuse_clipping(element, {part: float32.astype(np.float64)})
            arrays[part] = framework.to_element(float32, element)
        else:
            if not saturated and may_clip(element, -1.0, 1.0):
                refuse_clipping(element, {part: axial_rope.exact(spec, part, ElementType.of("float64"))})
            arrays[part] = axial_rope.exact(spec, part, element)
    params: dict[str, Value] = {"model": model, "grid_height": int(grid[0]), "grid_width": int(grid[1])}
    params.update(head_dim=spec.head_dim, theta=theta)
    for name, value in settings.items():
        params[name] = ",".join(map(str, value)) if name == "axes_dim" else int(value)
    layouts = {
        "pixtral": "[h | w | h | w], rows row-major",
        "qwen2-vl": "[h | w | h | w], rows in spatial-merge blocks",
        "qwen2.5-vl": "[h | w | h | w], rows in spatial-merge blocks"
        + (", in window order" if window_size is not None else ""),
        "flux": "[axis 0 | axis 1 | axis 2], each frequency twice side by side, rows text then latent",
    }
    params.update(tokens=rows, dtype=element.name, layout=layouts[model])
    if element.scale is not None:
        params.update(scale=element.scale, zero_point=element.zero_point)
    if saturated:
        params["saturate"] = True
    if arithmetic != "exact":
        params["arithmetic"] = arithmetic
    return Table("axial_rope", arrays, params, {"cos": ("token", "dim"), "sin": ("token", "dim")})


_OPTIONS = ("frames", "spatial_merge_size", "window_size", "patch_size", "axes_dim", "text_tokens")


def _axial_from_record(p: Mapping[str, Any]) -> dict[str, Any]:
    keys = ("model", "head_dim", "theta", "arithmetic", *_OPTIONS, *ELEMENT_KEYS)
    args = {key: p[key] for key in keys if key in p}
    if "grid_height" in p and "grid_width" in p:
        args["grid"] = (p["grid_height"], p["grid_width"])
    return args


def _axial_work(p: Mapping[str, Any]) -> int:
    rows = int(p["grid_height"]) * int(p["grid_width"]) * int(p.get("frames", 1)) + int(p.get("text_tokens", 512))
    return 2 * rows * int(p["head_dim"]) * KIND.work_per_value


# fmt: off
RECORDED: dict[str, ValueType] = {
    "model": TEXT, "grid_height": GRID_SIDE, "grid_width": GRID_SIDE, "head_dim": HEAD_DIM,
    "theta": THETA, "frames": FRAMES, "spatial_merge_size": SPATIAL_MERGE_SIZE, "window_size": WINDOW,
    "patch_size": PATCH,
    "axes_dim": AXES_DIM, "text_tokens": TEXT_TOKENS, "tokens": INTEGER, **QUANTISATION,
    "arithmetic": TEXT, "layout": TEXT,
}
# fmt: on

KIND = Kind(
    command="axial",
    table="axial_rope",
    short_help="Write 2-D RoPE caches (Pixtral, Qwen-VL, FLUX).",
    doc=DOC,
    params=PARAMS,
    make=axial,
    lazy=False,
    recorded=RECORDED,
    recorded_as={"grid": ("grid_height", "grid_width")},
    from_record=_axial_from_record,
    work_per_value=32,
    work=_axial_work,
    identify=(4, "_vision:axial_hypotheses"),
)
