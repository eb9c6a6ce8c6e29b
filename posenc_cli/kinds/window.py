"""``posenc window``: window attention's relative-position index of Swin, BEiT, SwinV2 and SwinV2-CR
(:mod:`posenc_cli.encodings.window`), with the bias a checkpoint's learned table gives: parameters, maker, record,
help."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..encodings.names import WINDOW_SCHEMES
from ..errors import SpecError
from ..params import GRID, INTEGER, TEXT, Choice, Param, ValueType
from ..ranges import Range
from ..read import PathLike
from ..system.capacity import check_memory
from ..table import Array, Table
from ..table import Param as Value
from ._bias import BIAS_PARAMS, BIAS_RECORDED, gather, index_dtype
from ._shared import INDEX_ELEMENT, Kind, arithmetic, check

__all__ = ["KIND", "PARAMS", "window"]

_WINDOW_SIDE = Range(
    "1 <= x <= 256", "Swin 7 or 12, SwinV2 up to 24, BEiT 14 to 24; the index of a 256 x 256 window holds 2**32 entries"
)


WINDOW_SIDES = GRID.within(_WINDOW_SIDE)


WINDOW_SIDE = INTEGER.within(_WINDOW_SIDE)  # as a table records it


_PRETRAINED_SIDE = Range("0 <= x <= 256", "as the window's; 0x0 is timm's default: no pretrained window")


PRETRAINED_SIDES = GRID.within(_PRETRAINED_SIDE)


PRETRAINED_SIDE = INTEGER.within(_PRETRAINED_SIDE)  # as a table records it


PARAMS: tuple[Param, ...] = (
    Param("scheme", Choice(WINDOW_SCHEMES), "Whose window attention.", required=True),
    Param("window", WINDOW_SIDES, "Window size in tokens: H (square) or HxW.", required=True, short="-w"),
    Param(
        "pretrained_window",
        PRETRAINED_SIDES,
        "swinv2: the window the model was pretrained with (scales the coords).",
    ),
    arithmetic("HF Swinv2SelfAttention / timm WindowAttention's coords (swin, beit: integers only)"),
    *BIAS_PARAMS,
)


DOC = """Write window attention's relative-position index (Swin, BEiT, SwinV2) and SwinV2's coordinates.

index is timm's relative_position_index: (HW, HW) for a window of H x W tokens, row-major; beit adds the class
token's row and column ((HW+1, HW+1), its three extra offsets). swinv2 also writes coords, (2H-1, 2W-1, 2), the
log-spaced coordinates its bias MLP reads (--pretrained-window scales them as timm does), each correctly rounded
to float32, or with --arithmetic framework as timm's and HF's float32 code computes them (the indices are
integers, the same either way). swinv2-cr writes timm's SwinV2-CR relative_coordinates_log as coords,
(HW*HW, 2), sign(d) * ln(1 + |d|) of each token pair's offsets (the same bits in either arithmetic). --bias FILE
gathers a relative_position_bias_table into bias[h, i, j] as the attention adds it.

\b
Examples:
  posenc window --scheme swin -w 7 -o swin_index.h
  posenc window --scheme swinv2 -w 16 --pretrained-window 12 -o swinv2.npz
  posenc window --scheme swinv2-cr -w 8 -o swinv2_cr.npz
  posenc window --scheme beit -w 14 -o beit_index.npy
"""


def window(
    scheme: str,
    window: tuple[int, int],
    *,
    pretrained_window: tuple[int, int] | None = None,
    bias: PathLike | np.ndarray | None = None,
    key: str | None = None,
    dtype: str | None = None,
    arithmetic: str = "exact",
) -> Table:
    """Window attention's relative-position tables (Swin, BEiT, SwinV2, SwinV2-CR) as a ``"window"`` :class:`Table`.

    ``window`` is ``(H, W)`` tokens. Arrays: ``index`` (timm's ``relative_position_index``: ``(HW, HW)``; BEiT
    ``(HW + 1, HW + 1)`` with its class-token row and column); for ``swinv2`` also ``coords`` ``(2H - 1, 2W - 1,
    2)``, the log-spaced coordinates its bias MLP reads (divided by ``pretrained_window``'s sides minus one when
    given); for ``swinv2-cr`` also ``coords`` ``(HW * HW, 2)``, timm's ``relative_coordinates_log`` (row
    ``t * HW + u`` for the token pair ``(t, u)``); with ``bias`` (a ``relative_position_bias_table`` of
    ``(2H - 1)(2W - 1)`` rows, BEiT's 3 more, one column per head) also ``bias`` ``(heads, *index.shape)`` as the
    attention adds it. SwinV2 and SwinV2-CR compute their tables with an MLP, so they take no ``bias``.
    :mod:`posenc_cli.encodings.window` defines each array.

    ``arithmetic="framework"`` gives SwinV2's ``coords`` as timm's and transformers' float32 code computes them
    (:mod:`posenc_cli.encodings.framework_grids`); the indices are integers, the same in either mode, and so are
    SwinV2-CR's ``coords`` (timm's float32 code adds integers exactly and takes one logarithm). It is
    recorded; ``"exact"`` (the default) is not.

    Examples
    --------
    >>> t = window("swin", (2, 2))
    >>> t.arrays["index"].tolist()[0], t.params["dtype"]
    ([4, 3, 1, 0], 'int8')
    """
    from ..encodings import window as window_encoding

    if arithmetic not in ("exact", "framework"):
        raise SpecError(f"arithmetic must be one of exact, framework, got {arithmetic!r}", param="arithmetic")
    check(KIND.inputs, window=window, pretrained_window=pretrained_window)
    if scheme not in window_encoding.SCHEMES:
        raise SpecError(f"scheme must be one of {', '.join(window_encoding.SCHEMES)}, got {scheme!r}", param="scheme")
    height, width = window_encoding.check_window(tuple(window) if isinstance(window, list) else window)
    if pretrained_window is not None and tuple(pretrained_window) == (0, 0):
        pretrained_window = None  # timm's "no pretrained window"
    if pretrained_window is not None and scheme != "swinv2":  # SwinV2-CR has no pretrained window
        raise SpecError(f"pretrained_window applies to swinv2's coordinates, not {scheme}", param="pretrained_window")
    if bias is not None and scheme in ("swinv2", "swinv2-cr"):
        raise SpecError(
            f"{scheme}'s bias table is the output of the model's MLP; posenc gathers stored tables (swin, beit) "
            f"and writes {scheme}'s coords, the MLP's input",
            param="bias",
        )
    pretrained = None
    if pretrained_window is not None:
        pretrained = window_encoding.check_window(
            tuple(pretrained_window) if isinstance(pretrained_window, list) else pretrained_window, "pretrained_window"
        )
    tokens = height * width + (scheme == "beit")
    what = "index and coords" if scheme == "swinv2-cr" else "index"
    check_memory(tokens * tokens * KIND.work_per_value, f"the window {what} ({tokens} x {tokens})")
    index = window_encoding.beit_index(height, width) if scheme == "beit" else window_encoding.swin_index(height, width)
    stored = index_dtype(index, dtype)
    params: dict[str, Value] = {"scheme": scheme, "window_height": height, "window_width": width}
    arrays: dict[str, Array] = {"index": stored}
    if scheme == "swinv2":
        arrays["coords"] = window_encoding.swinv2_coords(height, width, pretrained)
        if arithmetic == "framework":
            from ..encodings import framework_grids

            arrays["coords"] = framework_grids.swinv2_coords(height, width, pretrained)  # its sides checked above
        if pretrained is not None:
            params.update(pretrained_height=pretrained[0], pretrained_width=pretrained[1])
    if scheme == "swinv2-cr":
        arrays["coords"] = window_encoding.swinv2_cr_coords(height, width)  # framework: the same bits
    params["dtype"] = stored.dtype.name
    rows = (2 * height - 1) * (2 * width - 1) + 3 * (scheme == "beit")
    what = f"the relative_position_bias_table ({rows}, heads)"
    extra, bias_params = gather(stored, bias, key, rows, what)
    arrays.update(extra)
    params.update(bias_params)
    if arithmetic != "exact":
        params["arithmetic"] = arithmetic
    axes = {"index": ("query", "key"), "coords": ("dy", "dx", "yx"), "bias": ("heads", "query", "key")}
    if scheme == "swinv2-cr":
        axes["coords"] = ("pair", "yx")
    return Table("window", arrays, params, {name: axes[name] for name in arrays})


def _window_from_record(p: Mapping[str, Any]) -> dict[str, Any]:
    args = {key: p[key] for key in ("scheme", "dtype", "arithmetic") if key in p}
    if "window_height" in p and "window_width" in p:
        args["window"] = (p["window_height"], p["window_width"])
    if "pretrained_height" in p and "pretrained_width" in p:
        args["pretrained_window"] = (p["pretrained_height"], p["pretrained_width"])
    return args


def _window_work(p: Mapping[str, Any]) -> int:
    tokens = int(p["window_height"]) * int(p["window_width"]) + 1
    return tokens * tokens * KIND.work_per_value


# fmt: off
RECORDED: dict[str, ValueType] = {
    "scheme": TEXT, "window_height": WINDOW_SIDE, "window_width": WINDOW_SIDE,
    "pretrained_height": PRETRAINED_SIDE, "pretrained_width": PRETRAINED_SIDE, "dtype": TEXT,
    "bias_key": TEXT, "bias_heads": INTEGER, "bias_sha256": TEXT, "arithmetic": TEXT,
}

# fmt: on

KIND = Kind(
    command="window",
    table="window",
    short_help="Write a window attention index (Swin, BEiT, SwinV2, SwinV2-CR).",
    doc=DOC,
    params=PARAMS,
    make=window,
    lazy=False,
    recorded=RECORDED,
    recorded_as={
        "window": ("window_height", "window_width"),
        "pretrained_window": ("pretrained_height", "pretrained_width"),
        **BIAS_RECORDED,
    },
    from_record=_window_from_record,
    work_per_value=48,
    work=_window_work,
    element=INDEX_ELEMENT,
    files=("bias",),
)
