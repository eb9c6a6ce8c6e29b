"""Each kind's table, made from its parameters: the functions behind ``posenc generate``, ``rope``, ``alibi``,
``sincos2d`` and ``convert`` (re-exported by :mod:`posenc_cli.api`, where users call them), and the index kinds'
``relative`` and ``window`` (:mod:`posenc_cli.make_index`, re-exported here).

Every value is checked here once, at the API's edge: against its parameter's range (:mod:`posenc_cli.ranges`, the
ranges the command line, a manifest and a file's recorded parameters are held to), then by the encoding that
defines its domain (:mod:`posenc_cli.encodings`); the row functions below take checked values and never check
again. Their keywords are the parameters of :data:`posenc_cli.kinds.KINDS`, spelled as the manifest keys and long
options are (``tests/test_kinds.py`` holds the two together). No paths, no printing.

``rope``, ``relative`` and ``window`` are imported from their modules the first time they are asked for (a module
``__getattr__``), so that making a sinusoid does not import the RoPE and index machinery: start-up time is part
of every build step's time.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _resources, ranges
from .dtypes import ElementType, decode
from .encodings import check_params, presets
from .encodings.sinusoidal import paper_rows
from .errors import SpecError
from .saturation import check_saturate, may_clip, refuse_clipping
from .table import Array, Param, RowSource, Table

if TYPE_CHECKING:
    from .make_index import relative, window
    from .make_rope import rope

#: The float64 table of the same parameters: the correctly rounded values a quantised table rounds from.
_FLOAT64 = ElementType.of("float64")
#: The makers defined elsewhere, by name: the module of this package that holds each.
_ELSEWHERE = {"relative": "make_index", "window": "make_index", "rope": "make_rope"}


def __getattr__(name: str) -> Any:
    """``rope``, ``relative``, ``window``: imported from their module when first asked for (PEP 562)."""
    if name in _ELSEWHERE:
        import importlib

        maker = getattr(importlib.import_module(f"{__package__}.{_ELSEWHERE[name]}"), name)
        globals()[name] = maker
        return maker
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["alibi", "convert", "generate", "relative", "rope", "sincos2d", "window"]


def generate(
    seq_len: int,
    d_model: int,
    *,
    base: float | None = None,
    dtype: str = "float32",
    scale: float | None = None,
    zero_point: int | None = None,
    lazy: bool = False,
    preset: str | None = None,
    layout: str | None = None,
    freq_shift: float | None = None,
    min_timescale: float | None = None,
    odd: str | None = None,
    start: float | None = None,
    step: float | None = None,
    padding_idx: int | str | None = None,
    no_padding: bool = False,
    amplitude: float | None = None,
    saturate: bool = False,
) -> Table:
    """A 1-D sinusoidal table as a :class:`Table` with its parameters: the paper's by default, any framework's with
    ``preset`` and the parameters of :mod:`posenc_cli.encodings.presets` (which override the preset's).

    The paper: ``PE[pos, 2i] = sin(pos / base**(2i/d_model))``, ``PE[pos, 2i+1] = cos(pos / base**(2i/d_model))``
    for ``pos`` in ``0..seq_len-1``; an odd ``d_model`` ends with a sine column. Every value is the exact value
    correctly rounded.

    ``padding_idx`` zeroes that row (fairseq); ``"none"`` (or ``no_padding=True``) drops a preset's padding row. A
    padding row past the last row could not take effect and is refused.

    Row ``r`` is at position ``start + step * r``: a negative ``step`` runs the positions down (Transformer-XL's
    relative positions), and ``step=0``, which would put every row at one position, is refused; every number is
    held to its range (:mod:`posenc_cli.ranges`).

    ``dtype`` is any element type of :data:`posenc_cli.dtypes.DTYPES` (``scale`` and ``zero_point`` for
    int8: the quantisation step; the table's own multiplier is ``amplitude``). The parameters record the dtype by
    name, the preset, and every value that differs from the paper's table.

    A fixed-point or int8 table whose values the type cannot hold (an ``amplitude`` beyond q15's [-1, 1]) is
    refused with the count of values that would clip (:mod:`posenc_cli.saturation`), unless ``saturate=True`` asks
    for them to be clipped to the type's ends; the table then records ``saturate``. When the amplitude fits the type
    no value can clip and nothing is counted; otherwise the values are computed once in float64 and counted here,
    before this returns (and so before any file is opened).

    With ``lazy=True`` the table's array is a :class:`~posenc_cli.table.RowSource`: nothing is computed until a
    writer asks for rows, block by block, so :func:`save` streams tables larger than memory with bounded memory.

    Examples
    --------
    >>> t = generate(4, 6, dtype="float64")
    >>> t.kind, t.array.shape, t.params["layout"]
    ('sinusoidal', (4, 6), 'interleaved')
    >>> generate(4, 6, preset="whisper").params["layout"]
    'sin-cos'
    """
    ranges.check(
        seq_len=seq_len, d_model=d_model, base=base, freq_shift=freq_shift, min_timescale=min_timescale, start=start,
        step=step, padding_idx=padding_idx, amplitude=amplitude, scale=scale, zero_point=zero_point,
    )  # fmt: skip
    seq_len, d_model, base_value, element = check_params(
        seq_len, d_model, 10000.0 if base is None else base, dtype, scale=scale, zero_point=zero_point
    )
    if padding_idx == "none":
        padding_idx, no_padding = None, True
    elif isinstance(padding_idx, str):
        raise SpecError(f"padding_idx must be a row index or 'none', got {padding_idx!r}", param="padding_idx")
    if isinstance(padding_idx, int) and not isinstance(padding_idx, bool) and padding_idx >= seq_len >= 1:
        raise SpecError(
            f"padding_idx {padding_idx} is past the last row: a table of seq_len {seq_len} has rows 0 to "
            f"{seq_len - 1}, so the padding row would not be in it",
            param="padding_idx",
        )
    if preset in presets.PRESETS and presets.PRESETS[preset].descending and start is None and step is None:
        start, step = float(seq_len - 1), -1.0
    spec = presets.resolve(
        preset, d_model=d_model, base=base_value, layout=layout, freq_shift=freq_shift, min_timescale=min_timescale,
        odd=odd, start=start, step=step, padding_idx=padding_idx, no_padding=no_padding, amplitude=amplitude,
    )  # fmt: skip
    quantisation: dict[str, Param] = {}
    if element.scale is not None:
        quantisation = {"scale": element.scale, "zero_point": element.zero_point}
    zero_point_arg = element.zero_point if element.scale is not None else None
    rows: Callable[[int, int], np.ndarray]  # checked here, once: the writer's thousands of blocks are not checked
    paper = spec == presets.SinusoidSpec(d_model, base_value)
    if paper:  # the paper's table: its own (identical, leaner) path
        rows = paper_rows(d_model, base_value, element)
    else:
        rows = presets.rows_of(spec, seq_len, element.name, quant_scale=element.scale, zero_point=zero_point_arg)
    saturated = check_saturate(saturate, element)
    reach = abs(spec.amplitude)  # |amplitude * sin| and |amplitude * cos| never exceed it
    if not saturated and may_clip(element, -reach, reach):
        exact = paper_rows(d_model, base_value, _FLOAT64) if paper else presets.rows_of(spec, seq_len, "float64")
        refuse_clipping(element, {"pe": RowSource((seq_len, d_model), np.float64, exact)})
    array: Array = RowSource((seq_len, d_model), element.storage, rows)
    if not lazy:
        _resources.check_memory(
            seq_len * d_model * _resources.WORK_BYTES_PER_VALUE["sinusoidal"],
            f"the {seq_len} x {d_model} table built whole (lazy=True streams it)",
        )
        array = np.asarray(array)
    params: dict[str, Param] = {
        "seq_len": seq_len,
        "d_model": d_model,
        "base": float(base_value),
        "dtype": element.name,
    }
    if preset is not None:
        params["preset"] = preset
    params.update(spec.params())
    params.update(quantisation)
    if saturated:
        params["saturate"] = True
    return Table("sinusoidal", {"pe": array}, params)


def alibi(
    heads: int,
    seq_len: int | None = None,
    *,
    variant: str = "bloom",
    dtype: str = "float32",
    scale: float | None = None,
    zero_point: int | None = None,
    saturate: bool = False,
) -> Table:
    """ALiBi slopes (and, with ``seq_len``, the bias matrix) as a :class:`Table` of kind ``"alibi"``.

    Arrays ``slopes`` (heads,) and ``bias`` (heads, seq_len) = ``slope[h] * j``, HF BLOOM's ``build_alibi_tensor``
    for an all-ones mask; ``variant="mpt"`` is HF MPT's ``build_mpt_alibi_tensor`` (the same slopes; the bias over
    positions ``1 - seq_len .. 0``). See :mod:`posenc_cli.encodings.alibi` for the slopes' rules and
    the exactness argument. Only the MPT variant is recorded (``variant``), BLOOM's being the default.

    The bias grows with ``seq_len``: in a fixed-point or int8 type that cannot hold it (q15 holds [-1, 1]) the table
    is refused with the count of values that would clip, unless ``saturate=True`` (recorded) asks to clip them.

    Examples
    --------
    >>> t = alibi(6, 4)
    >>> t.arrays["slopes"].tolist(), t.arrays["bias"][0].tolist()
    ([0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125], [0.0, 0.25, 0.5, 0.75])
    """
    from .encodings import alibi as alibi_encoding

    ranges.check(heads=heads, seq_len=seq_len, scale=scale, zero_point=zero_point)
    heads, seq_len = alibi_encoding.check(heads, seq_len)
    if variant not in alibi_encoding.VARIANTS:
        raise SpecError(
            f"variant must be one of {', '.join(alibi_encoding.VARIANTS)}, got {variant!r}", param="variant"
        )
    if seq_len is not None:
        _resources.check_memory(
            heads * seq_len * _resources.WORK_BYTES_PER_VALUE["alibi"], f"the ALiBi bias matrix ({heads} x {seq_len})"
        )
    element = ElementType.of(dtype, scale=scale, zero_point=zero_point)
    saturated = check_saturate(saturate, element)
    steepest = 2.0 ** float(max(alibi_encoding.exponents(heads, variant))) * (1 + 2.0**-40)  # above the slopes
    reach = steepest * max(1, seq_len - 1 if seq_len is not None else 1)  # |slope * position| never exceeds it
    if not saturated and may_clip(element, -reach, reach):  # the float64 table first, built and dropped
        refuse_clipping(element, alibi_encoding.slopes_and_bias(heads, seq_len, _FLOAT64, variant))
    arrays = alibi_encoding.slopes_and_bias(heads, seq_len, element, variant)
    params: dict[str, Param] = {"heads": heads, "dtype": element.name}
    if variant != "bloom":
        params["variant"] = variant
    if seq_len is not None:
        params["seq_len"] = seq_len
    if element.scale is not None:
        params.update(scale=element.scale, zero_point=element.zero_point)
    if saturated:
        params["saturate"] = True
    axes = {"slopes": ("heads",), "bias": ("heads", "seq_len")}
    return Table("alibi", arrays, params, {key: axes[key] for key in arrays})


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
) -> Table:
    """MAE's 2-D sincos position embedding as a :class:`Table` of kind ``"sincos2d"``, one array ``pe``.

    Rows are the patches in row-major order (``y * width + x``), after a zero row when ``cls_token``; columns
    ``[sin x | cos x | sin y | cos y]`` (:mod:`posenc_cli.encodings.sincos2d`). The grid is ``height, width`` or
    ``grid=(height, width)`` (as ``posenc sincos2d --grid`` and the manifest's ``grid`` give it), not both.
    Its values lie in [-1, 1], which every fixed-point type holds; an int8 ``scale`` too small for them is refused
    unless ``saturate=True`` (recorded).

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
    ranges.check(grid=(height, width), d_model=d_model, base=base, scale=scale, zero_point=zero_point)
    from .encodings import sincos2d as sincos2d_encoding

    height, width, d_model = sincos2d_encoding.check(height, width, d_model)
    rows = int(cls_token) + height * width
    _resources.check_memory(
        rows * d_model * _resources.WORK_BYTES_PER_VALUE["sincos2d"], f"the 2-D sincos table ({rows} x {d_model})"
    )
    _, _, base, element = check_params(1, 1, base, dtype, scale=scale, zero_point=zero_point)
    saturated = check_saturate(saturate, element)
    if not saturated and may_clip(element, -1.0, 1.0):
        exact = sincos2d_encoding.sincos2d(height, width, d_model, cls_token=cls_token, base=base, element=_FLOAT64)
        refuse_clipping(element, {"pe": exact})
        del exact
    array = sincos2d_encoding.sincos2d(height, width, d_model, cls_token=cls_token, base=base, element=element)
    params: dict[str, Param] = {
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
    return Table("sincos2d", {"pe": array}, params)


def convert(
    table: Table,
    *,
    dtype: str | None = None,
    scale: float | None = None,
    zero_point: int | None = None,
    key: str | None = None,
    saturate: bool = False,
) -> Table:
    """``table`` (or its array ``key``) with every value re-encoded as the element type ``dtype``.

    The stored values are read as the real numbers they stand for (:func:`~posenc_cli.dtypes.decode`:
    quantised codes and bfloat16 bits decoded), then each is rounded once to the new type, exactly as a generated
    table would be (float types to nearest, ties to even; q15/q7/int8 halves away from zero). Values that a
    fixed-point or int8 type cannot hold are refused, counted in one pass over the values before anything is
    converted, unless ``saturate=True`` (recorded) asks to clip them to the type's ends. Kind,
    parameters and axes are kept, with ``dtype`` (and int8's ``scale``/``zero_point``) updated and ``converted_from``
    naming the type the values were rounded from (a generated table converted is rounded twice; to change the type
    of a generated table, generate it again). Arrays are converted block by block as a writer asks for rows.
    ``dtype=None`` keeps the stored values as they are.

    Raises
    ------
    SpecError
        An unknown ``key`` or ``dtype``; NaN or infinite values for an integer type; values an integer type would
        clip (without ``saturate``); finite values that overflow a float type (a float16 table cannot hold 1e5).

    Examples
    --------
    >>> t = convert(generate(4, 4, dtype="float64"), dtype="q15")
    >>> t.params["dtype"], t.array.dtype.name, int(t.array[0, 1])
    ('q15', 'int16', 32767)
    """
    ranges.check(scale=scale, zero_point=zero_point)
    if key is not None:
        try:
            table = table.part(key)
        except KeyError as exc:
            raise SpecError(str(exc.args[0]), param="key") from None
    if dtype is None:
        if scale is not None or zero_point is not None:
            raise SpecError("--scale and --zero-point need --dtype int8", param="scale")
        if saturate:
            raise SpecError("--saturate needs --dtype: it lets a conversion clip", param="saturate")
        return table
    element = ElementType.of(dtype, scale=scale, zero_point=zero_point)
    saturated = check_saturate(saturate, element)
    source_params = dict(table.params)
    for name, array in table.arrays.items():
        if array.ndim == 0 or np.asarray(array[:0]).dtype.kind not in "biuf":
            raise SpecError(f"array {name!r} holds {array.dtype} values, not numbers", param="key")
    if element.is_integer and not saturated:  # one pass over the values, before a block is converted

        def real(name: str, block: np.ndarray) -> np.ndarray:
            return _finite(decode(np.asarray(block), source_params), name, element)

        refuse_clipping(element, table.arrays, values=real)
    arrays: dict[str, Array] = {}
    for name, array in table.arrays.items():
        check = functools.partial(_converted, array, name, source_params, element)
        if array.ndim == 1:
            arrays[name] = check(0, array.shape[0])
        else:
            arrays[name] = RowSource(array.shape, element.storage, check)
    params: dict[str, Param] = {k: v for k, v in source_params.items() if k not in ("scale", "zero_point")}
    params["dtype"] = element.name
    params.setdefault("converted_from", str(source_params.get("dtype", _dtype_name(table))))
    if element.scale is not None:
        params.update(scale=element.scale, zero_point=element.zero_point)
    if saturated:  # a saturate the source records (its generation's) stays: verify applies it where it can
        params["saturate"] = True
    return Table(table.kind, arrays, params, dict(table.axes))


def _dtype_name(table: Table) -> str:
    return str(np.dtype(next(iter(table.arrays.values())).dtype).name)


def _finite(real: np.ndarray, name: str, element: ElementType) -> np.ndarray:
    """``real``, refused when it holds NaN or an infinity that integer ``element`` cannot hold."""
    if element.is_integer and not np.isfinite(real).all():
        raise SpecError(f"array {name!r} holds NaN or infinite values, which {element.name} cannot hold", param="dtype")
    return real


def _converted(array: Array, name: str, params: dict[str, Param], element: ElementType, lo: int, hi: int) -> np.ndarray:
    from fractions import Fraction

    real = _finite(decode(np.asarray(array[lo:hi]), params), name, element)
    finite = np.isfinite(real)
    stored, undecided = element.convert(real)
    for index in zip(*np.nonzero(undecided), strict=True):  # exact inputs: decide each tie from the value itself
        stored[index] = element.from_exact(Fraction(float(real[index])))
    if element.is_float:
        widened = decode(stored, {"dtype": element.name})
        if np.any(finite & ~np.isfinite(widened)):
            big = float(np.max(np.abs(real[finite])))
            raise SpecError(f"array {name!r} holds {big!r}, beyond the largest {element.name}", param="dtype")
    return stored
