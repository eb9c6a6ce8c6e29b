"""How each element type is declared and spelled in C (the type layer of :mod:`posenc_cli.formats.c.writer`).

==============  ======================  ===============================================  ==========
element         C type                  each value                                       needs
==============  ======================  ===============================================  ==========
float32         ``float``               shortest decimal + ``f`` (``0.84147096f``)       C89
float64         ``double``              shortest decimal (``0.8414709848078965``)        C89
float32, hex    ``float``               hexadecimal float + ``f`` (``0x1.aed548p-1f``)   C99/C++17
float64, hex    ``double``              hexadecimal float (``0x1.aed548f090cefp-1``)     C99/C++17
float32, bits   ``uint32_t``            IEEE bit pattern (``0x3F576AA4``)                C99/C++11
float64, bits   ``uint64_t``            IEEE bit pattern (``0x3FEAED548F090CEF``)        C99/C++11
float16         ``uint16_t``            binary16 bit pattern, value in a comment         C99/C++11
float16, native ``_Float16``/``__fp16`` decimal of the exact value + ``f``               compiler
bfloat16        ``uint16_t``            bfloat16 bit pattern, value in a comment         C99/C++11
q31             ``int32_t``             integer (CMSIS ``q31_t``); INT32_MIN spelled     C99/C++11
                                        as for int32
q15             ``int16_t``             integer (CMSIS ``q15_t``)                        C99/C++11
q7, int8        ``int8_t``              integer (CMSIS ``q7_t``, TFLite int8)            C99/C++11
fixedT.F        ``int8_t``..``int64_t`` integer code, the narrowest type of ``T`` bits;  C99/C++11
                                        literals as for that integer type
int8 (plain)    ``int8_t``              integer, the value itself                        C99/C++11
int16           ``int16_t``             integer, the value itself                        C99/C++11
int32           ``int32_t``             integer; INT32_MIN as ``(-2147483647 - 1)``      C99/C++11
int64           ``int64_t``             integer; past 32 bits ``INT64_C(5000000000)``,   C99/C++11
                                        INT64_MIN as ``(-INT64_C(9223372036854775807) - 1)``
==============  ======================  ===============================================  ==========

``<stdint.h>`` is included for the fixed-width types (C89 compilers ship it in practice; ``-std=c89 -pedantic``
accepts it with GCC and Clang). The native half-precision literals are float decimals whose value is exactly the
binary16 value, so the conversion to ``_Float16``/``__fp16`` is exact.

Integer literals: C gives an unsuffixed decimal constant the first of ``int``, ``long`` (C89: ``unsigned long``),
``long long`` that holds it, and ``-`` applies to that constant: ``-2147483648`` is ``-(2147483648)``, which is
``unsigned long`` in C89 on a 32-bit ``long`` (a warning) and beyond every type for ``-9223372036854775808``. So
every literal posenc writes is a constant of at most 31 bits, negated, except the two minima, spelled as the
arithmetic ``(-2147483647 - 1)``, and int64 values past 31 bits, spelled with ``<stdint.h>``'s ``INT64_C`` (the
suffix of this target's ``int64_t``). They compile warning-free with ``-std=c99``/``-std=c++11 -Wall -Wextra
-pedantic``, with a 16-bit ``int`` (AVR) and a 32-bit ``long`` (Cortex-M) too.

Each array has its own element type (:func:`~posenc_cli.formats.text.spell.element_name`): a table of int16 indices and
float32 coordinates declares an ``int16_t`` and a ``float`` array. ``float_literal`` applies to its float32 and
float64 arrays, ``c_half_type`` to its float16 ones; each is refused for a table that has none.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from ...dtypes import ElementType, fixed_format
from ...errors import FormatError, SpecError
from ...table import Table
from ..options import WriteOptions
from ..text.spell import (
    INTEGERS,
    Spell,
    decimal,
    element_name,
    float32_text,
    integers,
    is_affine,
    join_texts,
    per_value,
)


@dataclass(frozen=True)
class CElement:
    """The C side of an element type: declared type, headers, the standard it needs, how to read a value."""

    ctype: str
    includes: tuple[str, ...]
    needs: str
    reading: str
    spell: Spell
    per_line: int = 8
    #: Written before the declaration: ``__extension__`` keeps GCC's and Clang's -Wpedantic quiet about
    #: ``_Float16``/``__fp16``, which are compiler extensions in ISO C.
    prefix: str = ""


def c_elements(table: Table, options: WriteOptions) -> dict[str, CElement]:
    """How each array of ``table`` is written in C under ``options`` (float literal style, half type), by key."""
    names = {key: element_name(table, key) for key in table.arrays}
    kinds = ", ".join(dict.fromkeys(names.values()))
    if options.c_half_type is not None and "float16" not in names.values():
        raise SpecError(f"native half literals are for float16 tables, not {kinds}", param="c_half_type")
    if options.float_literal != "decimal" and not {"float32", "float64"} & set(names.values()):
        raise SpecError(f"float_literal applies to float32 and float64 tables, not {kinds}", param="float_literal")
    affine = is_affine(table.params)
    made = {name: c_element(name, options, affine=affine) for name in dict.fromkeys(names.values())}
    return {key: made[name] for key, name in names.items()}


def c_element(name: str, options: WriteOptions, *, affine: bool = False) -> CElement:
    """How values of the element type ``name`` are written in C under ``options`` (``affine``: int8 is the affine
    quantised type, :func:`~posenc_cli.formats.text.spell.is_affine`); ``FormatError`` for a type C output does not
    hold.
    """
    if name in ("float32", "float64"):
        ctype, suffix = ("float", b"f") if name == "float32" else ("double", b"")
        if options.float_literal == "decimal":
            return CElement(ctype, (), "C89", "", decimal(name, suffix))
        if options.float_literal == "hex":
            return CElement(
                ctype,
                (),
                "C99 or C++17 (hexadecimal floating literals)",
                "",
                per_value(lambda v: _hex_float(float(v)) + suffix.decode()),
            )
        width = 8 if name == "float32" else 16
        bits = "uint32_t" if name == "float32" else "uint64_t"
        return CElement(
            bits,
            ("<stdint.h>",),
            "C99 or C++11",
            f"IEEE {name} bit patterns: memcpy them into a {ctype}",
            _bits(width, comment=False),
        )
    if name == "float16":
        if options.c_half_type:
            return CElement(
                options.c_half_type,
                (),
                f"GCC or Clang with {options.c_half_type} on this target",
                "",
                per_value(lambda v: float32_text(np.float32(v)) + "f"),
                prefix="__extension__ ",
            )
        return CElement(
            "uint16_t",
            ("<stdint.h>",),
            "C99 or C++11",
            "IEEE binary16 bit patterns: memcpy into _Float16/__fp16, or convert with a half-to-float routine",
            _bits(4, comment=True),
            per_line=4,
        )
    if name == "bfloat16":
        return CElement(
            "uint16_t",
            ("<stdint.h>",),
            "C99 or C++11",
            "bfloat16 bit patterns: the float is the pattern shifted left by 16 "
            "(uint32_t u = (uint32_t)v << 16; memcpy(&f, &u, 4);)",
            _bits(4, comment=True, bfloat16=True),
            per_line=4,
        )
    fixed = fixed_format(name)
    if fixed is not None:
        total, frac = fixed
        integer = ElementType(name).storage.name
        if name in _CMSIS:
            reading = f"CMSIS {name}_t: value = v / {float(2**frac)!r}"
        else:
            reading = f"signed fixed point, {total} bits, {frac} fractional: value = v / 2^{frac}"
            if total < 8 * ElementType(name).storage.itemsize:
                reading += f" (codes in [-2^{total - 1}, 2^{total - 1} - 1])"
        return CElement(f"{integer}_t", ("<stdint.h>",), "C99 or C++11", reading, integers(_INTEGER_LITERALS[integer]))
    if name == "int8" and affine:
        reading = "affine int8: value = (v - ZERO_POINT) * SCALE (the macros below)"
        return CElement("int8_t", ("<stdint.h>",), "C99 or C++11", reading, decimal(name))
    if name in INTEGERS:
        return CElement(f"{name}_t", ("<stdint.h>",), "C99 or C++11", "", integers(_INTEGER_LITERALS[name]))
    raise FormatError(f"C output cannot hold {name} tables")


#: The fixed-point types CMSIS-DSP names (``q31_t``, ``q15_t``, ``q7_t``).
_CMSIS = ("q31", "q15", "q7")


def _int32_literal(value: int) -> str:
    return "(-2147483647 - 1)" if value == -(2**31) else str(value)


def _int64_literal(value: int) -> str:
    if value == -(2**63):
        return "(-INT64_C(9223372036854775807) - 1)"
    if abs(value) < 2**31:
        return str(value)
    return f"{'-' if value < 0 else ''}INT64_C({abs(value)})"


#: How each plain integer type's values are spelled (the module docstring says why).
_INTEGER_LITERALS: dict[str, Callable[[int], str]] = {
    "int8": str,
    "int16": str,
    "int32": _int32_literal,
    "int64": _int64_literal,
}


def summary(elements: Iterable[CElement]) -> tuple[tuple[str, ...], str, str]:
    """The ``#include`` lines, the ``Needs:`` text and the ``Values:`` text of a file holding arrays of these
    element types (in the table's order; one type: its own)."""
    kinds = list(elements)
    includes = tuple(dict.fromkeys(h for element in kinds for h in element.includes))
    needs = list(dict.fromkeys(element.needs for element in kinds))
    if len(needs) > 1:  # the strictest: C89 code is C99 code; hex floats need more of C++ than <cstdint> does
        needs = [n for n in needs if n != "C89"]
        if "C99 or C++17 (hexadecimal floating literals)" in needs:
            needs = [n for n in needs if n != "C99 or C++11"]
    readings = "; ".join(dict.fromkeys(element.reading for element in kinds if element.reading))
    return includes, ", and ".join(needs), readings


def _hex_float(value: float) -> str:
    """C99 hexadecimal floating literal without trailing zero digits: ``0x1.aed548p-1``, ``0x1p+0``, ``-0x0p+0``."""
    if not math.isfinite(value):
        raise FormatError("text formats cannot hold NaN or infinite values")
    text = value.hex()
    mantissa, exponent = text.split("p")
    return mantissa.rstrip("0").rstrip(".") + "p" + exponent


def _bits(width: int, *, comment: bool, bfloat16: bool = False) -> Spell:
    """Hexadecimal bit patterns (``0x3C00``), optionally followed by the value in a comment."""

    def spell(block: np.ndarray, seps: Sequence[bytes], row_start: bytes) -> bytes:
        bits = block.view(f"<u{width // 2}") if block.dtype.kind == "f" else block
        rows = []
        for raw, row in zip(bits, block, strict=True):
            texts = []
            for pattern, value in zip(raw.tolist(), row, strict=True):
                text = f"0x{pattern:0{width}X}"
                if comment:
                    real = np.uint32(pattern << 16).view(np.float32) if bfloat16 else np.float32(value)
                    text += f" /* {float32_text(real)} */"
                texts.append(text)
            rows.append(texts)
        return join_texts(rows, seps, row_start)

    return spell
