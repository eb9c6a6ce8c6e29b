"""``posenc convert``'s re-encoding: a table's values rounded once to another element type (the API's
:func:`convert`); what a file holds comes from :func:`posenc_cli.api.load`, where it goes to from
:func:`~posenc_cli.api.save`."""

from __future__ import annotations

import functools

import numpy as np

from .dtypes import ElementType, decode
from .errors import SpecError
from .kinds import CONVERT, check
from .saturation import check_saturate, refuse_clipping
from .table import Array, Param, RowSource, Table

__all__ = ["convert"]


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
    >>> from posenc_cli import generate
    >>> t = convert(generate(4, 4, dtype="float64"), dtype="q15")
    >>> t.params["dtype"], t.array.dtype.name, int(t.array[0:1][0, 1])  # a lazy table is read by row slices
    ('q15', 'int16', 32767)
    """
    check(CONVERT, scale=scale, zero_point=zero_point)
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
        rows = functools.partial(_converted, array, name, source_params, element)
        if array.ndim == 1:
            arrays[name] = rows(0, array.shape[0])
        else:
            arrays[name] = RowSource(array.shape, element.storage, rows)
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
