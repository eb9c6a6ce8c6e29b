"""``posenc sincos2d``: 2-D and 3-D sincos position embeddings in each library's layout
(:mod:`posenc_cli.encodings.sincos2d`): parameters, maker, record, help."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..dtypes import ElementType
from ..encodings.names import SINCOS_LAYOUTS
from ..encodings.sinusoid import check_base
from ..errors import SpecError
from ..params import BOOLEAN, INTEGER, NUMBER, TEXT, Choice, Param, ValueType
from ..ranges import Range
from ..saturation import check_saturate, may_clip, refuse_clipping
from ..system.capacity import check_memory
from ..table import Param as Value
from ..table import Table
from ._shared import BASE, D_MODEL, ELEMENT_KEYS, GRID_SIDE, GRID_SIDES, QUANTISATION, Kind, arithmetic, check
from .axial import FRAMES

__all__ = ["KIND", "PARAMS", "sincos2d"]

#: The float64 table of the same parameters: the correctly rounded values a quantised table rounds from.
_FLOAT64 = ElementType.of("float64")

INTERPOLATION = NUMBER.within(
    Range("2**-16 <= x <= 2**16", "diffusers' interpolation_scale: 1 in DiT and PixArt-512, 2 in PixArt-1024, 1.875 "
          "in CogVideoX's space")
)  # fmt: skip
EXTRA_TOKENS = INTEGER.within(Range("0 <= x <= 1024", "zero rows before the grid (diffusers' extra_tokens)"))

PARAMS: tuple[Param, ...] = (
    Param(
        "grid",
        GRID_SIDES,
        "Patches per side: H (square) or HxW.",
        required=True,
        short="-g",
        near=("-n", "--seq-len"),
    ),
    Param(
        "d_model",
        D_MODEL,
        "Embedding width, a multiple of 4 (cogvideox: 16).",
        required=True,
        short="-d",
        always_recorded=True,
    ),  # fmt: skip
    Param("layout", Choice(SINCOS_LAYOUTS), "Whose table (docs/tables.md).", default="mae"),
    Param("cls_token", BOOLEAN, "mae, dit: prepend one all-zero class-token row.", default=False),
    Param("base", BASE, "Wavelength base (timm's temperature).", default=10000.0, always_recorded=True),
    Param("reverse_coord", BOOLEAN, "timm: x before y, rows column-major (reverse_coord).", default=False),
    Param("interleave_sin_cos", BOOLEAN, "timm: [sin y | cos y | sin x | cos x] (interleave_sin_cos).", default=False),
    Param("extra_tokens", EXTRA_TOKENS, "dit: zero rows first (extra_tokens).  [default: 0]"),
    Param("base_size", GRID_SIDE, "dit, sd3: base_size (PatchEmbed's sample size / patch).  [default: dit: H]"),
    Param(
        "interpolation_scale", INTERPOLATION, "dit, sd3, cogvideox: the (spatial) interpolation_scale.  [default: 1]"
    ),
    Param("pos_embed_max_size", GRID_SIDE, "sd3: the side of the table it crops the grid from (192 in SD3)."),
    Param("frames", FRAMES, "cogvideox: T, frames after temporal compression (or -g TxHxW).  [default: 1]"),
    Param("temporal_interpolation_scale", INTERPOLATION, "cogvideox: temporal_interpolation_scale.  [default: 1]"),
    arithmetic(
        "the layout's code: numpy/torch float64 for mae, dit, sd3, cogvideox; torch float32 for timm, simple-vit"
    ),
)


DOC = """Write a 2-D (or CogVideoX's 3-D) sincos position embedding, in the layout of MAE, timm, vit-pytorch's
SimpleViT, DiT/PixArt, SD3 or CogVideoX (--layout).

Rows are the grid's patches (row-major but for timm --reverse-coord), after zero rows (--cls-token,
--extra-tokens); mae's columns are [sin x | cos x | sin y | cos y], each d_model/4 wide, frequencies
base^(-k/(d_model/4)); docs/tables.md gives every layout's. Every value is the exact value correctly rounded (dit,
sd3, cogvideox: at the exact rational positions); --arithmetic framework gives the library's own values (its types
and order, each function correctly rounded).

\b
Examples:
  posenc sincos2d -g 14 -d 768 --cls-token -o vit_pos.npy      # ViT-B/16 at 224 px, MAE
  posenc sincos2d -g 16x24 -d 256 -o pos2d.h
  posenc sincos2d --layout dit -g 32 -d 1152 -o pixart512.npy    # PixArt-alpha 512 px
  posenc sincos2d --layout sd3 -g 32 -d 1536 --base-size 64 --pos-embed-max-size 192 -o sd3.npy
  posenc sincos2d --layout cogvideox -g 4x6x8 -d 1920 --interpolation-scale 1.875 -o cog.npy
"""

#: Which layouts take each layout option.
_OWNERS: dict[str, tuple[str, ...]] = {
    "cls_token": ("mae", "dit"), "reverse_coord": ("timm",), "interleave_sin_cos": ("timm",),
    "extra_tokens": ("dit",), "base_size": ("dit", "sd3"), "interpolation_scale": ("dit", "sd3", "cogvideox"),
    "pos_embed_max_size": ("sd3",), "frames": ("cogvideox",), "temporal_interpolation_scale": ("cogvideox",),
}  # fmt: skip
_OPTIONS = tuple(_OWNERS)[1:]
_MAE_COLUMNS = "[sin x | cos x | sin y | cos y], rows y * width + x"


def _columns(plan: Any) -> str:
    names = {0: "sin", 1: "cos"}
    blocks = " | ".join(f"{names[part]} {axis}" for axis, part in plan.blocks)
    rows = " + ".join(
        " * ".join([axis] + [{"t": "frames", "y": "height", "x": "width"}[a] for a in plan.order[i + 1 :]])
        for i, axis in enumerate(plan.order)
    )
    return f"[{blocks}], rows {rows}"


def sincos2d(
    height: int | None = None,
    width: int | None = None,
    d_model: int | None = None,
    *,
    grid: tuple[int, ...] | None = None,
    layout: str = "mae",
    cls_token: bool = False,
    base: float = 10000.0,
    reverse_coord: bool = False,
    interleave_sin_cos: bool = False,
    extra_tokens: int | None = None,
    base_size: int | None = None,
    interpolation_scale: float | None = None,
    pos_embed_max_size: int | None = None,
    frames: int | None = None,
    temporal_interpolation_scale: float | None = None,
    dtype: str = "float32",
    scale: float | None = None,
    zero_point: int | None = None,
    saturate: bool = False,
    arithmetic: str = "exact",
) -> Table:
    """A 2-D (or 3-D) sincos position embedding as a :class:`Table` of kind ``"sincos2d"``, one array ``pe``.

    ``layout`` (:data:`~posenc_cli.encodings.names.SINCOS_LAYOUTS`) picks whose table
    (:mod:`posenc_cli.encodings.sincos2d` gives each one's rows and columns); ``"mae"`` (the default): rows the
    patches in row-major order (``y * width + x``), after a zero row when ``cls_token``, columns
    ``[sin x | cos x | sin y | cos y]``. The grid is ``height, width`` or ``grid=(height, width)`` (as ``posenc
    sincos2d --grid`` and the manifest's ``grid`` give it), not both; ``cogvideox`` also takes
    ``grid=(frames, height, width)``. A layout's options given to another layout are refused. Its values lie in
    [-1, 1], which every fixed-point type holds; an int8 ``scale`` too small for them is refused unless
    ``saturate=True`` (recorded).

    ``arithmetic="framework"`` gives the table the layout's code computes: float64 operations after float32
    positions, then one rounding to float32 (MAE's, HF ViTMAE's ``build_2d_sinusoidal_position_embedding``,
    diffusers'), or torch float32 throughout (timm, vit-pytorch), each elementary function correctly rounded in its
    type (:mod:`posenc_cli.encodings.framework_grids`); other element types round those float32 values. It is
    recorded; ``"exact"`` (the default) is not.

    Examples
    --------
    >>> sincos2d(14, 14, 768, cls_token=True).array.shape
    (197, 768)
    >>> sincos2d(grid=(16, 24), d_model=256).array.shape
    (384, 256)
    >>> sincos2d(grid=(4, 6, 8), d_model=64, layout="cogvideox").params["layout"]
    'cogvideox: [sin t | cos t | sin x | cos x | sin y | cos y], rows t * height * width + y * width + x'
    """
    if layout not in SINCOS_LAYOUTS:
        raise SpecError(f"layout must be one of {', '.join(SINCOS_LAYOUTS)}, got {layout!r}", param="layout")
    if grid is not None:
        if height is not None or width is not None:
            raise SpecError("give the grid as height and width or as grid=(height, width), not both", param="grid")
        if isinstance(grid, (tuple, list)) and len(grid) == 3:
            if layout != "cogvideox":
                raise SpecError(
                    f"grid must be (height, width) for {layout}; only cogvideox takes (frames, height, width), "
                    f"got {grid!r}",
                    param="grid",
                )
            if frames is not None:
                raise SpecError("give frames in grid=(frames, height, width) or as frames, not both", param="frames")
            frames, grid = grid[0], tuple(grid[1:])
        if not isinstance(grid, (tuple, list)) or len(grid) != 2:
            raise SpecError(f"grid must be (height, width), got {grid!r}", param="grid")
        height, width = grid
    if arithmetic not in ("exact", "framework"):
        raise SpecError(f"arithmetic must be one of exact, framework, got {arithmetic!r}", param="arithmetic")
    given = {
        "cls_token": cls_token or None, "reverse_coord": reverse_coord or None,
        "interleave_sin_cos": interleave_sin_cos or None, "extra_tokens": extra_tokens, "base_size": base_size,
        "interpolation_scale": interpolation_scale, "pos_embed_max_size": pos_embed_max_size, "frames": frames,
        "temporal_interpolation_scale": temporal_interpolation_scale,
    }  # fmt: skip
    for name, value in given.items():
        if value is not None and layout not in _OWNERS[name]:
            raise SpecError(f"{name} is {'/'.join(_OWNERS[name])}'s; layout {layout} does not take it", param=name)
    if cls_token and extra_tokens is not None:
        raise SpecError("give cls_token (one zero row) or extra_tokens, not both", param="extra_tokens")
    check(KIND.inputs, grid=(height, width), d_model=d_model, base=base, scale=scale, zero_point=zero_point)
    check(KIND.inputs, extra_tokens=extra_tokens, base_size=base_size, interpolation_scale=interpolation_scale)
    check(KIND.inputs, pos_embed_max_size=pos_embed_max_size, frames=frames)
    check(KIND.inputs, temporal_interpolation_scale=temporal_interpolation_scale)
    from ..encodings import sincos2d as sincos2d_encoding

    height, width, d_model = sincos2d_encoding.check(height, width, d_model)
    plan = sincos2d_encoding.plan(
        layout, height, width, d_model, frames=1 if frames is None else frames,
        zero_rows=int(bool(cls_token)) if extra_tokens is None else extra_tokens,
        reverse_coord=bool(reverse_coord), interleave_sin_cos=bool(interleave_sin_cos), base_size=base_size,
        interpolation_scale=1.0 if interpolation_scale is None else interpolation_scale,
        temporal_interpolation_scale=1.0 if temporal_interpolation_scale is None else temporal_interpolation_scale,
        pos_embed_max_size=pos_embed_max_size,
    )  # fmt: skip
    check_memory(
        plan.rows * d_model * KIND.work_per_value,
        f"the {'3-D' if layout == 'cogvideox' else '2-D'} sincos table ({plan.rows} x {d_model})",
    )
    base, element = check_base(base), ElementType.of(dtype, scale=scale, zero_point=zero_point)
    saturated = check_saturate(saturate, element)
    mae = layout == "mae"
    if not saturated and may_clip(element, -1.0, 1.0):
        exact = sincos2d_encoding.layout_table(plan, base=base, element=_FLOAT64)
        refuse_clipping(element, {"pe": exact})
        del exact
    if arithmetic == "framework" and mae:
        from ..encodings import framework_grids

        array = framework_grids.sincos2d(height, width, d_model, cls_token=bool(cls_token), base=base, element=element)
    elif arithmetic == "framework":
        array = sincos2d_encoding.framework_table(plan, base=base, element=element)
    elif mae:
        array = sincos2d_encoding.sincos2d(height, width, d_model, cls_token=cls_token, base=base, element=element)
    else:
        array = sincos2d_encoding.layout_table(plan, base=base, element=element)
    params: dict[str, Value] = {
        "grid_height": height,
        "grid_width": width,
        "d_model": d_model,
        "cls_token": bool(cls_token),
        "base": base,
        "dtype": element.name,
        # mae's tables keep the record they always had, the columns; the others name their layout first
        "layout": _MAE_COLUMNS if mae else f"{layout}: {_columns(plan)}",
    }
    if not mae:
        for name in _OPTIONS:
            value = given[name]
            if value is not None:
                params[name] = value if isinstance(value, bool) else (float(value) if "scale" in name else int(value))
        if layout in ("dit", "sd3") and base_size is None:
            params["base_size"] = height
    if element.scale is not None:
        params.update(scale=element.scale, zero_point=element.zero_point)
    if saturated:
        params["saturate"] = True
    if arithmetic != "exact":
        params["arithmetic"] = arithmetic
    return Table("sincos2d", {"pe": array}, params)


def _sincos2d_from_record(p: Mapping[str, Any]) -> dict[str, Any]:
    args = {key: p[key] for key in ("d_model", "cls_token", "base", "arithmetic", *_OPTIONS, *ELEMENT_KEYS) if key in p}
    named = str(p.get("layout", "")).split(":")[0]
    if named in SINCOS_LAYOUTS:
        args["layout"] = named
    if "grid_height" in p and "grid_width" in p:
        args["grid"] = (p["grid_height"], p["grid_width"])
    return args


def _sincos2d_work(p: Mapping[str, Any]) -> int:
    rows = int(p.get("extra_tokens", 1)) + int(p["grid_height"]) * int(p["grid_width"]) * int(p.get("frames", 1))
    return rows * int(p["d_model"]) * KIND.work_per_value


# fmt: off
RECORDED: dict[str, ValueType] = {
    "grid_height": GRID_SIDE, "grid_width": GRID_SIDE, "d_model": D_MODEL, "cls_token": BOOLEAN,
    "base": BASE, **QUANTISATION, "layout": TEXT, "arithmetic": TEXT,
    "reverse_coord": BOOLEAN, "interleave_sin_cos": BOOLEAN, "extra_tokens": EXTRA_TOKENS, "base_size": GRID_SIDE,
    "interpolation_scale": INTERPOLATION, "pos_embed_max_size": GRID_SIDE, "frames": FRAMES,
    "temporal_interpolation_scale": INTERPOLATION,
}

# fmt: on

KIND = Kind(
    command="sincos2d",
    table="sincos2d",
    short_help="Write a 2-D or 3-D sincos table (MAE, timm, DiT, SD3, CogVideoX).",
    doc=DOC,
    params=PARAMS,
    make=sincos2d,
    lazy=False,
    recorded=RECORDED,
    recorded_as={"grid": ("grid_height", "grid_width")},
    from_record=_sincos2d_from_record,
    work_per_value=16,  # its own size and a little
    work=_sincos2d_work,
    identify=(3, "_vision:sincos2d_hypotheses"),
)
