"""How each element type is declared and spelled in C (the type layer of :mod:`posenc_cli.formats.c`).

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
q15             ``int16_t``             integer (CMSIS ``q15_t``)                        C99/C++11
q7, int8        ``int8_t``              integer (CMSIS ``q7_t``, TFLite int8)            C99/C++11
==============  ======================  ===============================================  ==========

``<stdint.h>`` is included for the fixed-width types (C89 compilers ship it in practice; ``-std=c89 -pedantic``
accepts it with GCC and Clang). The native half-precision literals are float decimals whose value is exactly the
binary16 value, so the conversion to ``_Float16``/``__fp16`` is exact.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import FormatError, SpecError
from ..table import Table
from ._spell import Spell, decimal, element_name, float32_text, join_texts, per_value
from .options import WriteOptions


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


def c_element(table: Table, options: WriteOptions) -> CElement:
    """How ``table`` is written in C under ``options`` (float literal style, half type)."""
    name = element_name(table)
    if options.c_half_type is not None and name != "float16":
        raise SpecError(f"native half literals are for float16 tables, not {name}", param="c_half_type")
    if options.float_literal != "decimal" and name not in ("float32", "float64"):
        raise SpecError(f"float_literal applies to float32 and float64 tables, not {name}", param="float_literal")
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
    if name in ("q15", "q7", "int8"):
        ctype = "int16_t" if name == "q15" else "int8_t"
        reading = {
            "q15": "CMSIS q15_t: value = v / 32768.0",
            "q7": "CMSIS q7_t: value = v / 128.0",
            "int8": "affine int8: value = (v - ZERO_POINT) * SCALE (the macros below)",
        }[name]
        return CElement(ctype, ("<stdint.h>",), "C99 or C++11", reading, decimal(name))
    raise FormatError(f"C output cannot hold {name} tables")


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
