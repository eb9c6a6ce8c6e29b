"""Tests of posenc_cli.encodings: every value is checked against mpmath at 60 digits, never against posenc itself.

The reference rounds mpmath's value to the target dtype by comparing exact distances to the candidate floats (the
float nearest in float64 and its neighbours), and refuses cases that 60 digits cannot resolve.
"""

from __future__ import annotations

import functools
import importlib
import math
import random

import mpmath
import numpy as np
import pytest

from posenc_cli.encodings import MAX_POSITIONS, check_params, sinusoidal, sinusoidal_rows
from posenc_cli.encodings._exact import exact_value, pi_decimal, round_checked, turn_table
from posenc_cli.errors import SpecError

mpmath.mp.dps = 60


# ------------------------------------------------------------------------------------------------ the reference
@functools.lru_cache(maxsize=1 << 16)
def frequency(k: int, d_model: int, base: float) -> mpmath.mpf:
    return mpmath.mpf(base) ** (-mpmath.mpf(2 * k) / d_model)


def exact(pos: int, j: int, d_model: int, base: float) -> mpmath.mpf:
    """PE[pos, j] at 60 significant digits (mpmath's base is the exact value of the float)."""
    f = frequency(j // 2, d_model, base)
    return mpmath.sin(pos * f) if j % 2 == 0 else mpmath.cos(pos * f)


def _bits(value: np.generic) -> int:
    return int(np.array(value).view(f"u{np.dtype(type(value)).itemsize}"))


def _neighbours(c: np.generic) -> list[np.generic]:
    """The float below and above ``c`` in its own dtype, via the sign-magnitude bit pattern."""
    dt = np.dtype(type(c))
    ubits = np.dtype(f"u{dt.itemsize}")
    sign = 1 << (8 * dt.itemsize - 1)
    b = _bits(c)
    if b & (sign - 1) == 0:
        others = [1, sign | 1]
    else:
        others = [b - 1, b + 1]
    return [np.array(o, ubits).view(dt)[()] for o in others]


def rounded(z: mpmath.mpf, dtype: type) -> np.generic:
    """``z`` correctly rounded (half-even) to ``dtype``; fails the test if 60 digits cannot tell."""
    if z == 0:  # sin 0: the table holds +0.0
        return dtype(0.0)
    c = np.array(float(z)).astype(dtype)[()]
    cands = [x for x in [c, *_neighbours(c)] if math.isfinite(float(x))]
    dists = sorted((abs(mpmath.mpf(float(x)) - z), _bits(x) & 1, i) for i, x in enumerate(cands))
    assert dists[1][0] - dists[0][0] > abs(z) * mpmath.mpf(10) ** -45 + mpmath.mpf(10) ** -400, "unresolvable case"
    best = cands[dists[0][2]]
    if float(best) == 0.0:  # a tiny value rounds to a zero of its own sign
        best = np.array(math.copysign(0.0, float(z))).astype(dtype)[()]
    return best


def assert_entries(table: np.ndarray, start: int, cols, d_model: int, base: float) -> None:
    """Every ``table[r, j]`` (rows from position ``start``) is the correctly rounded exact value."""
    for r in range(table.shape[0]):
        for j in cols:
            want = rounded(exact(start + r, int(j), d_model, base), table.dtype.type)
            got = table[r, j]
            assert _bits(got) == _bits(want), f"PE[{start + r}, {j}] d={d_model} base={base}: {got!r} != {want!r}"


# ---------------------------------------------------------------------------------------------- random entries
CONFIGS = [
    (1, 10000.0),
    (2, 10000.0),
    (3, 10000.0),
    (512, 10000.0),
    (1024, 10000.0),
    (65536, 10000.0),
    (4097, 10000.0),
    (64, 2.0),
    (128, 500000.0),
    (33, 1.0001),
    (16, 1e300),
    (8, 1.0000000000000002),
]


@pytest.mark.parametrize(("d_model", "base"), CONFIGS)
def test_random_entries(d_model: int, base: float) -> None:
    rng = random.Random(f"{d_model}-{base}")
    for trial in range(12):
        hi = (2**24, 2**24, MAX_POSITIONS, 300)[trial % 4]  # the guaranteed range, its extension, small positions
        start = rng.randrange(0, hi - 2)
        cols = sorted({rng.randrange(d_model) for _ in range(6)} | {d_model - 1})
        for dtype in ("float32", "float64"):
            assert_entries(
                sinusoidal_rows(start, start + 2, d_model, base=base, dtype=dtype), start, cols, d_model, base
            )


def test_positions_near_1e5() -> None:
    """Where float64-then-cast misrounds: every entry of 12 rows around 1e5 at d_model=1024."""
    start, d_model = 99_994, 1024
    table = sinusoidal_rows(start, start + 12, d_model)
    assert_entries(table, start, range(d_model), d_model, 10000.0)
    assert_entries(
        sinusoidal_rows(start, start + 2, d_model, dtype="float64"), start, range(0, d_model, 3), d_model, 1e4
    )
    # the check has teeth: the naive computation gets some of these wrong
    pos = np.arange(start, start + 12)[:, None]
    f = 10000.0 ** (-2 * (np.arange(d_model) // 2) / d_model)
    naive = np.where(np.arange(d_model) % 2 == 0, np.sin(pos * f), np.cos(pos * f)).astype(np.float32)
    assert (naive != table).any()


# --------------------------------------------------------------------------------- tiny values near zeros
def _near_zeros(f: mpmath.mpf, limit: int) -> list[tuple[int, int]]:
    """``(pos, m)`` with ``pos * f`` closest to ``m * pi / 2``: convergents of ``(pi / 2) / f``, ``pos < limit``."""
    x, out = (mpmath.pi / 2) / f, []
    p0, q0, p1, q1 = 0, 1, 1, 0
    while True:
        a = int(mpmath.floor(x))
        p0, q0, p1, q1 = p1, q1, a * p1 + p0, a * q1 + q0
        if p1 >= limit:
            return out
        if p1 > 0 and q1 > 0:
            out.append((p1, q1))
        x = 1 / (x - a)


@pytest.mark.parametrize(
    ("d_model", "base", "k"),
    [(2, 10000.0, 0), (1024, 10000.0, 1), (1024, 10000.0, 37), (1024, 10000.0, 300), (512, 500000.0, 200), (6, 2.0, 2)],
)
def test_tiny_values_near_zeros(d_model: int, base: float, k: int, monkeypatch: pytest.MonkeyPatch) -> None:
    module = importlib.import_module("posenc_cli.encodings.sinusoidal")
    exact_calls = []

    def spy(pos: np.ndarray, *args: object) -> np.ndarray:
        exact_calls.append(len(pos))
        return module_exact_entries(pos, *args)

    module_exact_entries = module.exact_entries
    monkeypatch.setattr(module, "exact_entries", spy)
    f = mpmath.mpf(base) ** (-mpmath.mpf(2 * k) / d_model)
    smallest = mpmath.mpf(1)
    for pos, m in _near_zeros(f, MAX_POSITIONS):
        j = 2 * k + (m % 2)  # m even: sin(pos f) ~ 0; m odd: cos(pos f) ~ 0
        smallest = min(smallest, abs(exact(pos, j, d_model, base)))
        for dtype in ("float32", "float64"):
            assert_entries(
                sinusoidal_rows(pos, pos + 1, d_model, base=base, dtype=dtype), pos, [2 * k, 2 * k + 1], d_model, base
            )
    assert smallest < 1e-6  # the search found what it was meant to
    assert exact_calls  # and the values were small enough to need the exact path


# ------------------------------------------------------------------------------------ near rounding boundaries
# (d_model, base, pos, j) whose exact value lies within 1e-3 ulp of a midpoint between two floats of the dtype.
# Found by sampling 13,564 random entries (random.seed(12345); 60% of positions below 2**24, the rest below 2**32)
# and keeping those whose mpmath value (40 digits) lay that close; the test re-measures the distance.
NEAR_MIDPOINT_F32 = [
    (64, 2.0, 3670853, 9),
    (32, 1.0001, 1369720750, 23),
    (1024, 10000.0, 5259637, 861),
    (64, 2.0, 480742, 7),
    (32, 1.0001, 1880275989, 13),
    (1024, 10000.0, 12592409, 842),
    (64, 2.0, 7925641, 28),
    (3, 10000.0, 2420999, 2),
    (512, 10000.0, 457313240, 486),
    (1024, 10000.0, 175802232, 669),
    (3, 10000.0, 966887176, 1),
    (100, 500000.0, 1868770, 46),
    (64, 2.0, 14601078, 10),
    (100, 500000.0, 1218134998, 5),
    (100, 500000.0, 16094163, 27),
    (512, 10000.0, 8372908, 226),
    (64, 2.0, 8456176, 56),
    (64, 2.0, 468228, 42),
    (1024, 10000.0, 3406081, 434),
    (32, 1.0001, 419352, 13),
    (3, 10000.0, 16260076, 0),
    (32, 1.0001, 931991537, 18),
    (1024, 10000.0, 4944951, 50),
    (512, 10000.0, 2908904453, 384),
]
NEAR_MIDPOINT_F64 = [
    (3, 10000.0, 4032919270, 1),
    (3, 10000.0, 1921558610, 0),
    (100, 500000.0, 4038779283, 0),
    (64, 2.0, 909927, 62),
    (512, 10000.0, 8522572, 110),
    (65536, 10000.0, 653729590, 8323),
    (65536, 10000.0, 3603446162, 25140),
    (32, 1.0001, 14085945, 28),
    (65536, 10000.0, 3599458921, 58057),
    (64, 2.0, 11074935, 24),
    (64, 2.0, 3011996613, 4),
    (100, 500000.0, 2575469, 46),
]


def _midpoint_distance(z: mpmath.mpf, dtype: type) -> mpmath.mpf:
    """Distance from ``z`` to the nearest midpoint between neighbouring floats, in units of their spacing."""
    c = np.array(float(z)).astype(dtype)[()]
    return min(
        abs(z - (mpmath.mpf(float(c)) + mpmath.mpf(float(n))) / 2) / abs(mpmath.mpf(float(n)) - float(c))
        for n in _neighbours(c)
    )


@pytest.mark.parametrize(("dtype", "cases"), [(np.float32, NEAR_MIDPOINT_F32), (np.float64, NEAR_MIDPOINT_F64)])
def test_near_midpoints(dtype: type, cases: list) -> None:
    for d_model, base, pos, j in cases:
        assert _midpoint_distance(exact(pos, j, d_model, base), dtype) < 1e-3
        table = sinusoidal_rows(pos, pos + 1, d_model, base=base, dtype=dtype)
        assert_entries(table, pos, [j], d_model, base)


# ---------------------------------------------------------------------------------------------- table structure
def test_first_row_and_shape() -> None:
    for dtype in (np.float32, np.float64):
        table = sinusoidal(5, 7, dtype=dtype)
        assert table.shape == (5, 7) and table.dtype == dtype and table.flags.c_contiguous
        assert [_bits(v) for v in table[0]] == [_bits(dtype(v)) for v in [0, 1, 0, 1, 0, 1, 0]]  # +0.0, not -0.0
    assert sinusoidal(1, 1).tolist() == [[0.0]]


def test_odd_d_model_ends_with_a_sine() -> None:
    table = sinusoidal(50, 5, dtype="float64")
    assert_entries(table[45:], 45, [4], 5, 10000.0)  # sin(pos * 10000**(-4/5))
    assert table[10, 4] == pytest.approx(math.sin(10 * 10000 ** (-4 / 5)), rel=1e-12)


@pytest.mark.parametrize("d_model", [1, 2, 3, 64, 1000, 40000])
def test_rows_are_slices_of_the_table(d_model: int) -> None:
    n = 300 if d_model < 40000 else 12
    for dtype in ("float32", "float64"):
        full = sinusoidal(n, d_model, dtype=dtype)
        cuts = [0, 1, 7, 130, 131, n] if n > 131 else [0, 1, 5, n]
        parts = [sinusoidal_rows(a, b, d_model, dtype=dtype) for a, b in zip(cuts[:-1], cuts[1:], strict=True)]
        assert np.array_equal(np.concatenate(parts).view(f"u{full.itemsize}"), full.view(f"u{full.itemsize}"))
        assert_entries(full[-2:], n - 2, range(0, d_model, max(1, d_model // 7)), d_model, 10000.0)


def test_dtype_spellings_and_empty_rows() -> None:
    for spelling in ("float32", np.float32, np.dtype("float32"), "f4"):
        assert sinusoidal(2, 4, dtype=spelling).dtype == np.float32
    for spelling in ("float64", np.float64, np.dtype("float64"), float):
        assert sinusoidal(2, 4, dtype=spelling).dtype == np.float64
    empty = sinusoidal_rows(7, 7, 4)
    assert empty.shape == (0, 4) and empty.dtype == np.float32
    assert sinusoidal(3, 4, base=np.float64(10000.0)).tobytes() == sinusoidal(3, 4, base=10000).tobytes()


def test_large_table_matches_reference_on_a_sample() -> None:
    """The multi-threaded path: a 4096 x 1024 table, checked on a sample of rows and every column class."""
    table = sinusoidal(4096, 1024)
    rng = random.Random(7)
    for r in rng.sample(range(4096), 6):
        assert_entries(table[r : r + 1], r, rng.sample(range(1024), 40), 1024, 10000.0)


# ------------------------------------------------------------------------------------------------- validation
@pytest.mark.parametrize("bad", [True, False, 1.0, 2.5, 0, -3, "8", None, np.bool_(True)])
@pytest.mark.parametrize("param", ["seq_len", "d_model"])
def test_bad_counts(param: str, bad: object) -> None:
    kwargs = {"seq_len": 4, "d_model": 4, param: bad}
    with pytest.raises(SpecError, match=rf"^{param} must be a positive integer, got ") as info:
        sinusoidal(**kwargs)
    assert info.value.param == param


def test_count_messages_and_limits() -> None:
    with pytest.raises(SpecError, match=r"^seq_len must be a positive integer, got -3$"):
        check_params(-3, 4, 10000.0, "float32")
    with pytest.raises(SpecError, match=r"^seq_len must be at most 4294967296, got 4294967297$") as info:
        check_params(2**32 + 1, 4, 10000.0, "float32")
    assert info.value.param == "seq_len"
    with pytest.raises(SpecError, match=r"^d_model must be at most 1048576") as info:
        check_params(4, 2**20 + 1, 10000.0, "float32")
    assert info.value.param == "d_model"
    seq_len, d_model, base, element = check_params(np.int64(8), 2**20, 2, np.float64)
    assert (seq_len, d_model, base, element.name, element.storage) == (8, 2**20, 2.0, "float64", np.dtype("float64"))


@pytest.mark.parametrize(
    ("bad", "shown"),
    [
        (0, "0"),
        (-2.0, "-2.0"),
        (1, "1"),
        (1.0, "1.0"),
        (math.nan, "nan"),
        (math.inf, "inf"),
        (-math.inf, "-inf"),
        (True, "True"),
        ("10000", "'10000'"),
        (None, "None"),
        (10**400, "an integer of 401 digits"),  # not 401 digits on one line (nor 5000: Python refuses those)
    ],
)
def test_bad_base(bad: object, shown: str) -> None:
    with pytest.raises(SpecError, match=rf"^base must be a finite number greater than 1, got {shown}$") as info:
        sinusoidal(2, 2, base=bad)
    assert info.value.param == "base"


@pytest.mark.parametrize("bad", ["float8", "foo", None, np.int32, "complex128"])
def test_bad_dtype(bad: object) -> None:
    expected = r"^dtype must be one of float32, float64, float16, bfloat16, q31, q15, q7, int8 or fixed<total>\.<frac> "
    with pytest.raises(SpecError, match=expected) as info:
        sinusoidal(2, 2, dtype=bad)
    assert info.value.param == "dtype"


@pytest.mark.parametrize(
    ("start", "stop", "param", "message"),
    [
        (-1, 3, "start", "start must be a non-negative integer, got -1"),
        (1.0, 3, "start", "start must be a non-negative integer, got 1.0"),
        (0, True, "stop", "stop must be a non-negative integer, got True"),
        (5, 3, "stop", "stop must be at least start (5), got 3"),
        (0, 2**32 + 1, "stop", "stop must be at most 4294967296, got 4294967297"),
    ],
)
def test_bad_row_range(start: object, stop: object, param: str, message: str) -> None:
    with pytest.raises(SpecError) as info:
        sinusoidal_rows(start, stop, 4)
    assert str(info.value) == message and info.value.param == param


# ----------------------------------------------------------------------- the rounding helper and the exact path
@pytest.mark.parametrize("m", [2048, 64, 8])  # the kernel's M, smaller ones
def test_turn_table_is_the_correctly_rounded_double_double(m: int) -> None:
    """Every entry of the fast path's table (first octant rotated, the rest by symmetry) equals mpmath's sin and cos
    of 2 pi i / m at 80 digits, rounded to a double-double (hi nearest, lo nearest of the rest), bit for bit."""
    table = turn_table(m)
    expected = np.zeros((4, m))
    with mpmath.workdps(80):
        for i in range(m):
            x = 2 * mpmath.pi * i / m
            for row, value in ((0, mpmath.sin(x)), (2, mpmath.cos(x))):
                if abs(value) > mpmath.mpf(10) ** -70:  # exact zeros at 0, pi/2, pi, ...: +0.0 twice
                    hi = float(value)
                    expected[row, i], expected[row + 1, i] = hi, float(value - mpmath.mpf(hi))
    assert table.shape == (4, m)
    assert table.view(np.uint64).tolist() == expected.view(np.uint64).tolist()
    with pytest.raises(ValueError, match="multiple of 8"):
        turn_table(m + 4)


def test_pi_digits() -> None:
    assert abs(mpmath.mpf(str(pi_decimal(120))) - mpmath.pi) < mpmath.mpf(10) ** -58
    assert str(pi_decimal(50)) == mpmath.nstr(mpmath.pi, 50)


@pytest.mark.parametrize("dtype_name", ["float16", "bfloat16", "float32"])
def test_round_checked(dtype_name: str) -> None:
    """Decided entries are the correct rounding of the exact values; midpoints and unknown signs stay undecided."""
    dtype = np.dtype(pytest.importorskip("ml_dtypes").bfloat16) if dtype_name == "bfloat16" else np.dtype(dtype_name)
    rng = np.random.default_rng(3)
    c = rng.uniform(-1, 1, 4000).astype(dtype)
    c64 = c.astype(np.float64)
    up = np.array([float(_neighbours(x)[1]) for x in c])  # the neighbour away from zero (c is never 0 here)
    mids = (c64 + up) / 2  # exact midpoints, which must stay undecided
    exact_z = np.concatenate([c64 + (up - c64) * rng.uniform(-0.6, 0.6, c.size), mids, [1e-300, -1e-300, 0.0]])
    noise = rng.uniform(-1, 1, exact_z.size) * np.abs(exact_z) * 2.0**-40
    approx, err = exact_z + noise, np.abs(noise) * 1.5
    err[-3:] = 1e-290  # the sign of a tiny value cannot be proven with this bound
    got, undecided = round_checked(approx, err, dtype)
    assert undecided[c.size : 2 * c.size].all() and undecided[-3:].all()
    assert (~undecided).sum() > 0.9 * c.size
    for z, g in zip(exact_z[~undecided], got[~undecided], strict=True):
        assert _bits(g) == _bits(rounded(mpmath.mpf(float(z)), dtype.type))


@pytest.mark.parametrize("dtype_name", ["float16", "bfloat16", "float32", "float64"])
def test_exact_value(dtype_name: str) -> None:
    dtype = np.dtype(pytest.importorskip("ml_dtypes").bfloat16) if dtype_name == "bfloat16" else np.dtype(dtype_name)
    cases = [
        (0, 0, 4, 10000.0),
        (0, 1, 4, 10000.0),
        (355, 0, 2, 10000.0),
        (103993, 0, 2, 10000.0),
        (2**32 - 1, 5, 16, 10000.0),
        (12345, 3, 8, 1e300),
        (77, 6, 7, 1.0001),
        (1, 15, 16, 1.7e308),
        (1, 65534, 65536, 1.7976931348623157e308),  # about 5.7e-309: subnormal in float64
    ]
    for pos, j, d_model, base in cases:
        got = exact_value(pos, j, d_model, base, dtype)
        assert got.dtype == dtype
        assert _bits(got) == _bits(rounded(exact(pos, j, d_model, base), dtype.type))


def test_subnormal_float64_entries() -> None:
    """The largest base: the last columns of d_model=65536 hold values near 1e-308, subnormal in float64."""
    base, d_model = 1.7976931348623157e308, 65536
    cols = [0, 1, 60000, 65533, 65534, 65535]
    for dtype in ("float32", "float64"):
        table = sinusoidal_rows(1, 3, d_model, base=base, dtype=dtype)
        assert_entries(table, 1, cols, d_model, base)
    assert 0 < table[0, 65534] < np.finfo(np.float64).smallest_normal


def test_underflowing_constants() -> None:
    """Base near DBL_MAX at large positions: the kernel's constants of the last columns underflow float64 (their
    21-bit pieces fall below 2**-1074), which the error bound must cover; PE[4294967293, 65498] (about 3.6e-299) once
    came out one ulp off in float64."""
    base, d_model, pos = 1.7976931348623157e308, 65536, 4294967293
    for dtype in ("float32", "float64"):
        table = sinusoidal_rows(pos, pos + 1, d_model, base=base, dtype=dtype)
        assert_entries(table, pos, [65498, 65499, 65496, 65534, 65535], d_model, base)


# ------------------------------------------------------------------------------------------- exhaustive sweeps
@pytest.mark.slow
@pytest.mark.parametrize(("d_model", "base"), [(1024, 10000.0), (31, 2.0), (4096, 500000.0)])
def test_sweep(d_model: int, base: float) -> None:
    """Whole rows (every column, both dtypes) at random positions over the whole range: about 165k entries."""
    rng = random.Random(d_model)
    for _ in range(6 if d_model > 1024 else 16):
        start = rng.randrange(0, MAX_POSITIONS - 4)
        for dtype in ("float32", "float64"):
            assert_entries(
                sinusoidal_rows(start, start + 2, d_model, base=base, dtype=dtype), start, range(d_model), d_model, base
            )


@pytest.mark.parametrize(
    "check",
    [
        lambda big: importlib.import_module("posenc_cli.encodings.alibi").check(big, None),
        lambda big: importlib.import_module("posenc_cli.encodings.relative").check_lengths(big, 4, 0),
        lambda big: importlib.import_module("posenc_cli.encodings.window").check_window((big, 2)),
        lambda big: importlib.import_module("posenc_cli.encodings.sincos2d").check(big, 2, 8),
        lambda big: importlib.import_module("posenc_cli.encodings.sincos2d").check(2, 2, 4 * big),
        lambda big: check_params(big, 4),
    ],
)
def test_an_integer_python_will_not_print_is_refused_by_its_size(check):
    """``str(10**5000)`` raises ValueError (CPython's 4300-digit limit): an encoding's check that printed the value
    it refused crashed on it. The message says how long it is instead."""
    with pytest.raises(SpecError, match=r"got an integer of 500[12] digits"):
        check(10**5000)
