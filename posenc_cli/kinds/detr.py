"""``posenc detr``: DETR's normalised 2-D sine position embedding (:mod:`posenc_cli.encodings.detr`): parameters,
maker, record, help, and the reader of its pixel-mask file."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..dtypes import ElementType
from ..errors import SpecError
from ..params import BOOLEAN, NUMBER, TEXT, Choice, Param, ValueType
from ..ranges import Range
from ..saturation import check_saturate, may_clip, refuse_clipping
from ..system.capacity import check_memory
from ..table import Param as Value
from ..table import Table, array_sha256
from ._shared import BASE, D_MODEL, ELEMENT_KEYS, GRID_SIDE, GRID_SIDES, QUANTISATION, Kind, arithmetic, check

__all__ = ["KIND", "PARAMS", "detr", "read_mask"]

SCALE_RANGE = NUMBER.within(Range("0 < x <= 1e6", "the normalised coordinates' span (DETR: 2*pi)"))
VARIANTS = ("detr", "deformable")

PARAMS: tuple[Param, ...] = (
    Param("grid", GRID_SIDES, "Feature-map cells: H (square) or HxW (from --mask when omitted).", short="-g"),
    Param("d_model", D_MODEL, "Embedding width, 2 * num_pos_feats (a multiple of 4).", required=True, short="-d"),
    Param("mask", TEXT, "A .npy pixel mask (H, W) of bool or uint8: 1 a real pixel, 0 padding (DETR's pixel_mask)."),
    Param("normalize", BOOLEAN, "Divide by the column's / row's total, times --norm-scale.", default=True, pair=True),
    Param("norm_scale", SCALE_RANGE, "DETR's scale: with --normalize, the coordinates' span.  [default: 2*pi]"),
    Param("temperature", BASE, "Wavelength base.", default=10000.0, always_recorded=True),
    Param(
        "variant",
        Choice(VARIANTS),
        "detr: DetrSinePositionEmbedding; deformable: Deformable DETR's (subtracts 0.5 before normalising).",
        default="detr",
    ),
    arithmetic("HF DetrSinePositionEmbedding (DeformableDetrSinePositionEmbedding)"),
)

DOC = """Write DETR's 2-D sine position embedding (HF DetrSinePositionEmbedding, normalize=True).

Rows are the feature map's cells in row-major order (DETR's pos.flatten(2).transpose(1, 2)); columns are
[sin y0, cos y0, sin y1, ... | the same of x], d_model/2 each, y and x the cumulative sums of the pixel mask,
normalised to (0, scale]: y / (y_last + 1e-6) * scale, frequencies temperature^(-2(c//2)/(d_model/2)). Every value
is the exact value correctly rounded, or with --arithmetic framework the float32 values transformers computes.

\b
Examples:
  posenc detr -g 25x34 -d 256 -o detr_pos.npy             # DETR-R50, an 800x1066 image
  posenc detr --mask pixel_mask.npy -d 256 -o detr_pos.npy
  posenc detr -g 100x134 -d 256 --variant deformable -o deformable_pos.h
"""

#: The largest mask file read (bytes of a uint8 array at the largest grid, and its header).
_MASK_BYTES = 4096 * 4096 * 8 + 4096


def read_mask(path: object) -> np.ndarray:
    """The pixel mask of an .npy file (or an array): 2-D, bool or uint8 of 0 and 1, sides 1 to 4096; anything else
    is refused (``SpecError`` naming ``mask``). Read through posenc's own readers, which refuse object arrays and
    check sizes before allocating."""
    if isinstance(path, (str, os.PathLike)):
        from ..read import existing, load

        table = load(existing(path, "mask", "the mask file"), max_memory=_MASK_BYTES)
        if len(table.arrays) != 1:
            raise SpecError(f"{os.fspath(path)!r} holds {len(table.arrays)} arrays; a mask is one", param="mask")
        path = np.asarray(next(iter(table.arrays.values())))
    mask = np.asarray(path)
    if mask.dtype not in (np.dtype(np.bool_), np.dtype(np.uint8)):
        raise SpecError(f"a pixel mask must be bool or uint8, got {mask.dtype.name}", param="mask")
    if mask.ndim != 2 or not all(1 <= side <= 4096 for side in mask.shape):
        raise SpecError(f"a pixel mask must be 2-D (H, W), sides 1 to 4096, got shape {mask.shape}", param="mask")
    if mask.dtype == np.uint8 and int(mask.max()) > 1:
        raise SpecError(f"a uint8 pixel mask holds 0 and 1, got {int(mask.max())}", param="mask")
    return mask.astype(np.bool_)


def detr(
    grid: tuple[int, int] | None = None,
    d_model: int | None = None,
    *,
    mask: object | None = None,
    normalize: bool = True,
    norm_scale: float | None = None,
    temperature: float = 10000.0,
    variant: str = "detr",
    dtype: str = "float32",
    scale: float | None = None,
    zero_point: int | None = None,
    saturate: bool = False,
    arithmetic: str = "exact",
) -> Table:
    """DETR's sine position embedding as a :class:`Table` of kind ``"detr_sine"``, one array ``pe`` of shape
    ``(H * W, d_model)`` (:mod:`posenc_cli.encodings.detr`).

    ``grid=(H, W)``, or ``mask`` (an .npy path or a 2-D array, 1 = a real pixel), or both when they agree.
    ``norm_scale`` (DETR's ``scale``, default 2*pi) needs ``normalize``, as in DETR (``scale`` is the int8 element
    type's step, as on every kind). ``arithmetic="framework"`` gives transformers' float32 values (recorded).

    Examples
    --------
    >>> detr((25, 34), 256).array.shape
    (850, 256)
    """
    if arithmetic not in ("exact", "framework"):
        raise SpecError(f"arithmetic must be one of exact, framework, got {arithmetic!r}", param="arithmetic")
    if variant not in VARIANTS:
        raise SpecError(f"variant must be one of {', '.join(VARIANTS)}, got {variant!r}", param="variant")
    if norm_scale is not None and not normalize:
        raise SpecError("norm_scale needs normalize (DETR refuses a scale without it)", param="norm_scale")
    check(KIND.inputs, grid=grid, d_model=d_model, norm_scale=norm_scale, temperature=temperature, scale=scale)
    check(KIND.inputs, zero_point=zero_point)
    pixels = None if mask is None else read_mask(mask)
    if grid is None:
        if pixels is None:
            raise SpecError("give the grid (--grid HxW) or a pixel mask (--mask)", param="grid")
        grid = pixels.shape
    if not isinstance(grid, (tuple, list)) or len(grid) != 2:
        raise SpecError(f"grid must be (height, width), got {grid!r}", param="grid")
    from ..encodings import detr as detr_encoding

    height, width, d_model = detr_encoding.check(grid[0], grid[1], d_model)
    if pixels is not None and pixels.shape != (height, width):
        raise SpecError(f"the mask is {pixels.shape[0]}x{pixels.shape[1]}, the grid {height}x{width}", param="mask")
    check_memory(height * width * d_model * KIND.work_per_value, f"the DETR table ({height * width} x {d_model})")
    element = ElementType.of(dtype, scale=scale, zero_point=zero_point)
    saturated = check_saturate(saturate, element)
    settings: dict[str, Any] = {"mask": pixels, "normalize": bool(normalize), "scale": norm_scale}
    settings.update(temperature=float(temperature), variant=variant)
    if arithmetic == "framework":
        from ..encodings import framework

        float32 = detr_encoding.framework(height, width, d_model, **settings)
        if not saturated and may_clip(element, -1.0, 1.0):
            refuse_clipping(element, {"pe": float32.astype(np.float64)})
        array = framework.to_element(float32, element)
    else:
        if not saturated and may_clip(element, -1.0, 1.0):
            wide = detr_encoding.exact(height, width, d_model, element=ElementType.of("float64"), **settings)
            refuse_clipping(element, {"pe": wide})
        array = detr_encoding.exact(height, width, d_model, element=element, **settings)
    params: dict[str, Value] = {
        "grid_height": height, "grid_width": width, "d_model": d_model, "normalize": bool(normalize),
        "temperature": float(temperature), "dtype": element.name,
        "layout": "[sin y, cos y, ... | sin x, cos x, ...] interleaved, rows y * width + x",
    }  # fmt: skip
    if norm_scale is not None:
        params["norm_scale"] = float(norm_scale)
    if variant != "detr":
        params["variant"] = variant
    if pixels is not None:
        params["mask_sha256"] = array_sha256(pixels.astype(np.uint8))
    if element.scale is not None:
        params.update(scale=element.scale, zero_point=element.zero_point)
    if saturated:
        params["saturate"] = True
    if arithmetic != "exact":
        params["arithmetic"] = arithmetic
    return Table("detr_sine", {"pe": array}, params)


def _detr_from_record(p: Mapping[str, Any]) -> dict[str, Any]:
    if "mask_sha256" in p:
        raise SpecError(
            "the table was made from a pixel mask (--mask), which the file does not hold: it cannot be made again "
            "from its parameters",
            param="mask",
        )
    keys = ("d_model", "normalize", "norm_scale", "temperature", "variant", "arithmetic", *ELEMENT_KEYS)
    args = {key: p[key] for key in keys if key in p}
    if "grid_height" in p and "grid_width" in p:
        args["grid"] = (p["grid_height"], p["grid_width"])
    return args


def _detr_work(p: Mapping[str, Any]) -> int:
    return int(p["grid_height"]) * int(p["grid_width"]) * int(p["d_model"]) * KIND.work_per_value


# fmt: off
RECORDED: dict[str, ValueType] = {
    "grid_height": GRID_SIDE, "grid_width": GRID_SIDE, "d_model": D_MODEL, "normalize": BOOLEAN,
    "norm_scale": SCALE_RANGE, "temperature": BASE, "variant": TEXT, "mask_sha256": TEXT, **QUANTISATION,
    "arithmetic": TEXT, "layout": TEXT,
}
# fmt: on

KIND = Kind(
    command="detr",
    table="detr_sine",
    short_help="Write DETR's 2-D sine position embedding.",
    doc=DOC,
    params=PARAMS,
    make=detr,
    lazy=False,
    recorded=RECORDED,
    recorded_as={"grid": ("grid_height", "grid_width"), "mask": ("mask_sha256",)},
    from_record=_detr_from_record,
    work_per_value=64,
    work=_detr_work,
    files=("mask",),
    identify=(5, "_vision:detr_hypotheses"),
)
