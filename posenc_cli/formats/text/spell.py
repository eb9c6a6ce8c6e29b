"""Values as decimal text, for every element type: what CSV writes, and what C writes for integer types.

- float32, float64: :func:`~posenc_cli.formats.text.floats.join_rows` (shortest round-trip decimals, vectorised).
- float16: the shortest decimal that reads back to the same binary16 (NumPy's Dragon4 for ``float16``).
- bfloat16 (stored as bit patterns): the shortest decimal whose correct rounding to bfloat16 gives the same bits,
  found by trying 1 to 9 significant digits.
- the fixed-point types (q31, q15, q7, fixed<T>.<F>), int8 and the plain integers (int16, int32, int64): the
  integers.

Float texts always hold a ``.`` or an exponent. All but float32/float64 go value by value (about a microsecond
each for the floats, a tenth of that for integers).

Element types, per array (:func:`element_name`): a table's ``dtype`` parameter names the element type of the arrays
stored as that type stores them (:func:`storage`: ``<u2`` for bfloat16, ``<i2`` for q15 and int16, ...); an array
stored otherwise is of its own numpy type. A window table (``dtype`` int16) holds int16 ``index`` and float32
``coords``: the one is int16, the other float32. The name ``int8`` is two types: with a ``scale`` parameter it is
affine quantised int8 (:func:`is_affine`: the codes mean ``(code - zero_point) * scale``), without one the plain
integers, the values themselves (relative position indices), like int16, int32 and int64.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np

from ...dtypes import INDEX_DTYPES, ElementType, element_of, fixed_format, is_element_type
from ...errors import FormatError
from ...table import Table
from .floats import join_rows, shortest

Spell = Callable[[np.ndarray, Sequence[bytes], bytes], bytes]


def join_texts(texts: Iterable[list[str]], seps: Sequence[bytes], row_start: bytes) -> bytes:
    """Lay out per-row lists of value texts exactly as :func:`~posenc_cli.formats.text.floats.join_rows` does."""
    out = []
    for row in texts:
        out.append(row_start.decode())
        out.extend(text + sep.decode() for text, sep in zip(row, seps, strict=True))
    return "".join(out).encode("ascii")


def per_value(spell_one: Callable[[np.generic], str]) -> Spell:
    """A :data:`Spell` that formats each value with ``spell_one``."""

    def spell(block: np.ndarray, seps: Sequence[bytes], row_start: bytes) -> bytes:
        return join_texts(([spell_one(v) for v in row] for row in block), seps, row_start)

    return spell


def float32_text(value: np.floating) -> str:
    """The shortest round-trip text of one float32."""
    return next(shortest(np.array([[value]], np.float32)))[0]


def bfloat16_text(bits: int) -> str:
    """The shortest decimal that rounds (half-even) to the bfloat16 with these bits."""
    value = float(np.array(bits << 16, np.uint32).view(np.float32))
    if value == 0.0:
        return "-0.0" if bits & 0x8000 else "0.0"
    bfloat16 = ElementType.of("bfloat16")
    for digits in range(1, 10):
        text = f"{value:.{digits}g}"
        out, undecided = bfloat16.convert(np.array([float(text)]))
        if int(out[0]) == bits and not undecided[0]:
            return text if any(c in text for c in ".e") else text + ".0"
    return float32_text(np.float32(value))


#: The plain integer element types (the values themselves, no scale) and their storage.
INTEGERS: dict[str, np.dtype] = {name: np.dtype(name) for name in INDEX_DTYPES}


def storage(name: object) -> np.dtype | None:
    """The numpy storage (native byte order) of the element type ``name``; ``None`` for a name that is none.

    Examples
    --------
    >>> storage("bfloat16"), storage("int32"), storage("complex64")
    (dtype('uint16'), dtype('int32'), None)
    """
    if is_element_type(name):
        return ElementType(str(name)).storage
    return INTEGERS.get(name) if isinstance(name, str) else None


def element_name(table: Table, key: str) -> str:
    """The element type of ``table.arrays[key]``: the table's ``dtype`` parameter when the array is stored as that
    type stores its values, else the array's numpy dtype name (:func:`posenc_cli.dtypes.element_of`).

    Examples
    --------
    >>> t = Table("window", {"index": np.zeros((2, 2), np.int16), "coords": np.zeros((3, 3, 2), np.float32)},
    ...           {"dtype": "int16"})
    >>> element_name(t, "index"), element_name(t, "coords")
    ('int16', 'float32')
    >>> element_name(Table("rope", {"cos": np.zeros((2, 2), np.int16)}, {"dtype": "q15"}), "cos")
    'q15'
    """
    return element_of(table.params, table.arrays[key].dtype)


def is_affine(params: Mapping[str, object]) -> bool:
    """Whether ``int8`` arrays of a table with these parameters are affine quantised (``dtype`` int8 and a ``scale``)
    rather than plain integers."""
    return params.get("dtype") == "int8" and "scale" in params


def integers(spell_one: Callable[[int], str] = str) -> Spell:
    """A :data:`Spell` of integer arrays: each value, a Python ``int``, spelled by ``spell_one``."""

    def spell(block: np.ndarray, seps: Sequence[bytes], row_start: bytes) -> bytes:
        return join_texts(([spell_one(v) for v in row] for row in np.asarray(block).tolist()), seps, row_start)

    return spell


def decimal(element: str, suffix: bytes = b"") -> Spell:
    """How values of ``element`` are spelled in decimal (``suffix`` after each float, e.g. ``f`` in C)."""
    if element in ("float32", "float64"):
        return lambda block, seps, row_start: join_rows(block, seps=seps, suffix=suffix, row_start=row_start)
    end = suffix.decode()
    if element == "float16":
        return per_value(lambda v: _with_point(str(np.float16(v))) + end)
    if element == "bfloat16":
        return per_value(lambda v: bfloat16_text(int(v)) + end)
    if fixed_format(element) is not None or np.dtype(element).kind in "iu":
        return integers()
    raise FormatError(f"text formats cannot hold {element} values")


def _with_point(text: str) -> str:
    if not np.isfinite(float(text)):
        raise FormatError("text formats cannot hold NaN or infinite values")
    return text if any(c in text for c in ".e") else text + ".0"
