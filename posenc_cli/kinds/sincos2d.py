"""``posenc sincos2d``: MAE's 2-D sincos position embedding (:mod:`posenc_cli.encodings.sincos2d`): parameters,
maker, record, help."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..dtypes import ElementType
from ..encodings.sinusoid import check_base
from ..errors import SpecError
from ..params import BOOLEAN, TEXT, Param, ValueType
from ..saturation import check_saturate, may_clip, refuse_clipping
from ..system.capacity import check_memory
from ..table import Param as Value
from ..table import Table
from ._shared import BASE, D_MODEL, ELEMENT_KEYS, GRID_SIDE, GRID_SIDES, QUANTISATION, Kind, arithmetic, check

__all__ = ["KIND", "PARAMS", "sincos2d"]

#: The float64 table of the same parameters: the correctly rounded values a quantised table rounds from.
_FLOAT64 = ElementType.of("float64")


PARAMS: tuple[Param, ...] = (
    Param(
        "grid",
        GRID_SIDES,
        "Patches per side: H (square) or HxW.",
        required=True,
        short="-g",
        near=("-n", "--seq-len"),
    ),
    Param("d_model", D_MODEL, "Embedding width, a multiple of 4.", required=True, short="-d", always_recorded=True),
    Param("cls_token", BOOLEAN, "Prepend MAE's all-zero class-token row.", default=False),
    Param("base", BASE, "Wavelength base.", default=10000.0, always_recorded=True),
    arithmetic("MAE's get_2d_sincos_pos_embed (float64; HF ViTMAE's, diffusers')"),
)


DOC = """Write MAE's 2-D sincos position embedding (get_2d_sincos_pos_embed).

Rows are the grid's patches in row-major order, after a zero row with --cls-token; columns are
[sin x | cos x | sin y | cos y], each d_model/4 wide, frequencies base^(-k/(d_model/4)). Every value is the
exact value correctly rounded; --arithmetic framework gives the float64 values HF ViTMAE's, MAE's and diffusers'
code computes, rounded to float32 once (the same but where an exact value lies within 1e-15 of a rounding boundary).

\b
Examples:
  posenc sincos2d -g 14 -d 768 --cls-token -o vit_pos.npy      # ViT-B/16 at 224 px, MAE
  posenc sincos2d -g 16x24 -d 256 -o pos2d.h
"""


def sincos2d(
    height: int | None = None,
    width: int | None = None,
    d_model: int | None = None,
    *,
    grid: tuple[int, int] | None = None,
    cls_token: bool = False,
    base: float = 10000.0,
    dtype: str = "float32",
    scale: float | None = None,
    zero_point: int | None = None,
    saturate: bool = False,
    arithmetic: str = "exact",
) -> Table:
    """MAE's 2-D sincos position embedding as a :class:`Table` of kind ``"sincos2d"``, one array ``pe``.

    Rows are the patches in row-major order (``y * width + x``), after a zero row when ``cls_token``; columns
    ``[sin x | cos x | sin y | cos y]`` (:mod:`posenc_cli.encodings.sincos2d`). The grid is ``height, width`` or
    ``grid=(height, width)`` (as ``posenc sincos2d --grid`` and the manifest's ``grid`` give it), not both.
    Its values lie in [-1, 1], which every fixed-point type holds; an int8 ``scale`` too small for them is refused
    unless ``saturate=True`` (recorded).

    ``arithmetic="framework"`` gives the table transformers' ``build_2d_sinusoidal_position_embedding`` (and MAE's
    and diffusers' ``get_2d_sincos_pos_embed``) computes: float64 operations, each function correctly rounded, then
    one rounding to float32 (:mod:`posenc_cli.encodings.framework_grids`); other element types round those float32
    values. It is recorded; ``"exact"`` (the default) is not.

    Examples
    --------
    >>> sincos2d(14, 14, 768, cls_token=True).array.shape
    (197, 768)
    >>> sincos2d(grid=(16, 24), d_model=256).array.shape
    (384, 256)
    """
    if grid is not None:
        if height is not None or width is not None:
            raise SpecError("give the grid as height and width or as grid=(height, width), not both", param="grid")
        if not isinstance(grid, (tuple, list)) or len(grid) != 2:
            raise SpecError(f"grid must be (height, width), got {grid!r}", param="grid")
        height, width = grid
    if arithmetic not in ("exact", "framework"):
        raise SpecError(f"arithmetic must be one of exact, framework, got {arithmetic!r}", param="arithmetic")
    check(KIND.inputs, grid=(height, width), d_model=d_model, base=base, scale=scale, zero_point=zero_point)
    from ..encodings import sincos2d as sincos2d_encoding

    height, width, d_model = sincos2d_encoding.check(height, width, d_model)
    rows = int(cls_token) + height * width
    check_memory(rows * d_model * KIND.work_per_value, f"the 2-D sincos table ({rows} x {d_model})")
    base, element = check_base(base), ElementType.of(dtype, scale=scale, zero_point=zero_point)
    saturated = check_saturate(saturate, element)
    if not saturated and may_clip(element, -1.0, 1.0):
        exact = sincos2d_encoding.sincos2d(height, width, d_model, cls_token=cls_token, base=base, element=_FLOAT64)
        refuse_clipping(element, {"pe": exact})
        del exact
    if arithmetic == "framework":
        from ..encodings import framework_grids

        array = framework_grids.sincos2d(height, width, d_model, cls_token=bool(cls_token), base=base, element=element)
    else:
        array = sincos2d_encoding.sincos2d(height, width, d_model, cls_token=cls_token, base=base, element=element)
    params: dict[str, Value] = {
        "grid_height": height,
        "grid_width": width,
        "d_model": d_model,
        "cls_token": bool(cls_token),
        "base": base,
        "dtype": element.name,
        "layout": "[sin x | cos x | sin y | cos y], rows y * width + x",
    }
    if element.scale is not None:
        params.update(scale=element.scale, zero_point=element.zero_point)
    if saturated:
        params["saturate"] = True
    if arithmetic != "exact":
        params["arithmetic"] = arithmetic
    return Table("sincos2d", {"pe": array}, params)


def _sincos2d_from_record(p: Mapping[str, Any]) -> dict[str, Any]:
    args = {key: p[key] for key in ("d_model", "cls_token", "base", "arithmetic", *ELEMENT_KEYS) if key in p}
    if "grid_height" in p and "grid_width" in p:
        args["grid"] = (p["grid_height"], p["grid_width"])
    return args


def _sincos2d_work(p: Mapping[str, Any]) -> int:
    rows = 1 + int(p["grid_height"]) * int(p["grid_width"])
    return rows * int(p["d_model"]) * KIND.work_per_value


# fmt: off
RECORDED: dict[str, ValueType] = {
    "grid_height": GRID_SIDE, "grid_width": GRID_SIDE, "d_model": D_MODEL, "cls_token": BOOLEAN,
    "base": BASE, **QUANTISATION, "layout": TEXT, "arithmetic": TEXT,
}

# fmt: on

KIND = Kind(
    command="sincos2d",
    table="sincos2d",
    short_help="Write a 2-D sincos (MAE) table.",
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
