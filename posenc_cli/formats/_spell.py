"""Values as decimal text, for every element type: what CSV writes, and what C writes for integer types.

- float32, float64: :func:`~posenc_cli.formats._text.join_rows` (shortest round-trip decimals, vectorised).
- float16: the shortest decimal that reads back to the same binary16 (NumPy's Dragon4 for ``float16``).
- bfloat16 (stored as bit patterns): the shortest decimal whose correct rounding to bfloat16 gives the same bits,
  found by trying 1 to 9 significant digits.
- q15, q7, int8: the integers.

Float texts always hold a ``.`` or an exponent. All but float32/float64 go value by value (about a microsecond
each): such tables are small.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np

from ..errors import FormatError
from ..table import Table
from ._text import join_rows, shortest

Spell = Callable[[np.ndarray, Sequence[bytes], bytes], bytes]


def join_texts(texts: Iterable[list[str]], seps: Sequence[bytes], row_start: bytes) -> bytes:
    """Lay out per-row lists of value texts exactly as :func:`~posenc_cli.formats._text.join_rows` does."""
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
    from ..dtypes import ElementType

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


def element_name(table: Table) -> str:
    """The table's element type: its ``dtype`` parameter, else its array's dtype name (``float32``, ``int16``)."""
    name = table.params.get("dtype")
    return name if isinstance(name, str) else next(iter(table.arrays.values())).dtype.name


def decimal(element: str, suffix: bytes = b"") -> Spell:
    """How values of ``element`` are spelled in decimal (``suffix`` after each float, e.g. ``f`` in C)."""
    if element in ("float32", "float64"):
        return lambda block, seps, row_start: join_rows(block, seps=seps, suffix=suffix, row_start=row_start)
    end = suffix.decode()
    if element == "float16":
        return per_value(lambda v: _with_point(str(np.float16(v))) + end)
    if element == "bfloat16":
        return per_value(lambda v: bfloat16_text(int(v)) + end)
    if element in ("q15", "q7") or np.dtype(element).kind in "iu":
        return per_value(lambda v: str(int(v)))
    raise FormatError(f"text formats cannot hold {element} values")


def _with_point(text: str) -> str:
    if not np.isfinite(float(text)):
        raise FormatError("text formats cannot hold NaN or infinite values")
    return text if any(c in text for c in ".e") else text + ".0"
