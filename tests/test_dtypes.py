"""Element types: float16, bfloat16, the fixed-point types (q31, q15, q7, fixed<T>.<F>) and int8 entries equal the
exact value rounded once (mpmath reference).

bfloat16 neighbours and values come from ml_dtypes, float16 from numpy; the exact values from mpmath. None of the
code under test is used to compute an expected value.
"""

from __future__ import annotations

import math
import random
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from posenc_cli.dtypes import ElementType
from posenc_cli.encodings import sinusoidal_rows
from posenc_cli.errors import SpecError

from .test_encodings import exact, rounded

ml_dtypes = pytest.importorskip("ml_dtypes")


def bfloat16_bits(z: mpmath.mpf) -> int:
    """The bfloat16 nearest to ``z`` (ties to even), found among ml_dtypes' neighbours by mpmath distance."""
    if z == 0:  # sin 0: the table holds +0.0
        return 0
    start = int(np.array(ml_dtypes.bfloat16(float(z))).view(np.uint16))
    cands = [c for c in (start, start + 1, start - 1) if 0 <= c <= 0xFFFF]
    values = [float(np.array(c, np.uint16).view(ml_dtypes.bfloat16)) for c in cands]
    scored = sorted((abs(mpmath.mpf(v) - z), c & 1, c) for c, v in zip(cands, values, strict=True) if math.isfinite(v))
    assert scored[1][0] > scored[0][0], "a tie: cannot happen for transcendental values"
    return scored[0][2]


def half_away(z: mpmath.mpf) -> int:
    n = int(mpmath.floor(abs(z) + mpmath.mpf("0.5")))
    return n if z >= 0 else -n


def fixed_widths(name: str) -> tuple[int, int] | None:
    """(total, fractional) bits of a fixed-point name, read here from the spelling (CMSIS: q<F> has F + 1 bits)."""
    if name in ("q7", "q15", "q31"):
        return int(name[1:]) + 1, int(name[1:])
    if name.startswith("fixed"):
        total, frac = name[len("fixed") :].split(".")
        return int(total), int(frac)
    return None


def reference(z: mpmath.mpf, element: ElementType) -> int | float:
    if element.name == "float16":
        return float(rounded(z, np.float16))
    if element.name == "bfloat16":
        return bfloat16_bits(z)
    widths = fixed_widths(element.name)
    if widths is not None:
        total, frac = widths
        return max(-(2 ** (total - 1)), min(2 ** (total - 1) - 1, half_away(z * 2**frac)))
    return max(-128, min(127, half_away(z / element.scale) + element.zero_point))


ELEMENTS = [
    ElementType.of("float16"),
    ElementType.of("bfloat16"),
    ElementType.of("q15"),
    ElementType.of("q7"),
    ElementType.of("q31"),
    ElementType.of("fixed16.14"),
    ElementType.of("fixed18.16"),
    ElementType.of("fixed12.11"),
    ElementType.of("fixed24.20"),
    ElementType.of("fixed8.0"),
    ElementType.of("fixed40.38"),
    ElementType.of("fixed64.62"),
    ElementType.of("int8", scale=1 / 127),
    ElementType.of("int8", scale=0.0078125, zero_point=-3),
]


@pytest.mark.parametrize("element", ELEMENTS, ids=lambda e: f"{e.name}-{e.scale}-{e.zero_point}")
@pytest.mark.parametrize(("d_model", "base"), [(64, 10000.0), (37, 500.0)])
def test_sampled_entries_are_the_exact_value_rounded_once(element, d_model, base):
    rng = random.Random(f"{element}{d_model}")
    starts = [0, 1000, 99_990, 2**24 - 8] + [rng.randrange(0, 2**24) for _ in range(3)]
    for start in starts:
        block = sinusoidal_rows(
            start,
            start + 4,
            d_model,
            base=base,
            dtype=element.name,
            scale=element.scale,
            zero_point=None if element.name != "int8" else element.zero_point,
        )
        assert block.dtype == element.storage
        for r in range(4):
            for j in rng.sample(range(d_model), 12):
                want = reference(exact(start + r, j, d_model, base), element)
                got = block[r, j].item()
                assert got == want, (element, start + r, j, got, want)


def test_q15_saturates_one_to_0x7fff_and_row_zero_is_exact():
    row = sinusoidal_rows(0, 1, 6, dtype="q15")[0].tolist()
    assert row == [0, 0x7FFF, 0, 0x7FFF, 0, 0x7FFF]
    assert sinusoidal_rows(0, 1, 4, dtype="q7")[0].tolist() == [0, 127, 0, 127]
    assert sinusoidal_rows(0, 1, 2, dtype="bfloat16")[0].tolist() == [0, 0x3F80]


def test_boundaries_are_handed_to_the_exact_path():
    """A float64 that is exactly a rounding boundary cannot decide; the exact value then does."""
    q15 = ElementType.of("q15")
    y = np.array([[0.5 / 32768, 1.5 / 32768, 0.25]])
    _, undecided = q15.convert(y)
    assert undecided.tolist() == [[True, True, False]]
    assert q15.from_exact(Fraction(1, 65536) - Fraction(1, 10**30)) == 0
    assert q15.from_exact(Fraction(1, 65536) + Fraction(1, 10**30)) == 1
    f16 = ElementType.of("float16")
    midpoint = 1 + 2.0**-11  # half-way between 1 and the next float16
    assert f16.convert(np.array([midpoint]))[1].tolist() == [True]
    assert f16.from_exact(Fraction(midpoint) + Fraction(1, 10**30)) == 1 + 2.0**-10
    bf16 = ElementType.of("bfloat16")
    assert bf16.convert(np.array([1 + 2.0**-8]))[1].tolist() == [True]
    assert bf16.from_exact(Fraction(1 + 2.0**-8) - Fraction(1, 10**30)) == 0x3F80


@pytest.mark.parametrize(
    ("kwargs", "param", "message"),
    [
        ({"dtype": "float8"}, "dtype", "dtype must be one of"),
        ({"dtype": "int8"}, "scale", "needs a scale"),
        ({"dtype": "int8", "scale": 0.0}, "scale", "greater than 0"),
        ({"dtype": "int8", "scale": float("nan")}, "scale", "greater than 0"),
        ({"dtype": "int8", "scale": 0.1, "zero_point": 300}, "zero_point", "[-128, 127]"),
        ({"dtype": "q15", "scale": 0.1}, "scale", "int8 only"),
        ({"dtype": "float32", "zero_point": 1}, "zero_point", "int8 only"),
    ],
)
def test_bad_element_types(kwargs, param, message):
    with pytest.raises(SpecError, match=message.replace("[", r"\[").replace("]", r"\]")) as err:
        sinusoidal_rows(0, 1, 4, **kwargs)
    assert err.value.param == param
