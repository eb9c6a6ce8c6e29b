"""The text writers' number spelling (``posenc_cli.formats.text``) against independent references.

The references are NumPy's own ``str(np.float32(v))`` (Dragon4) and Python's ``repr(float(v))``, never the module
under test; every spelling is also read back with ``float()`` / ``np.float32()``. The fast float32 path is
vectorised and falls back to Dragon4 for the few values it cannot decide, so the tests sweep values where the
decisions are hardest: every exponent (random bit patterns, subnormals included), powers of two and their
neighbours, the switches to scientific notation, numbers with short decimal expansions, large integers whose
rounding interval ends exactly on a short decimal.
"""

from __future__ import annotations

import math
import multiprocessing
import os

import numpy as np
import pytest

from posenc_cli.errors import FormatError
from posenc_cli.formats.text import _digits, _records, floats
from posenc_cli.formats.text.floats import join_rows, shortest


def ref32(values: np.ndarray) -> list[str]:
    """NumPy's spelling of each float32 value (with the default print options)."""
    with np.printoptions(legacy=False):
        return [str(v) for v in np.asarray(values, np.float32).ravel()]


def fast32(values: np.ndarray, width: int = 1000) -> list[str]:
    """The module's spelling of each float32 value, through join_rows with CSV separators."""
    flat = np.asarray(values, np.float32).ravel()
    pad = (-flat.size) % width
    block = np.concatenate([flat, np.zeros(pad, np.float32)]).reshape(-1, width)
    text = join_rows(block, seps=[b","] * (width - 1) + [b"\n"]).decode("ascii")
    cells = text.replace("\n", ",").split(",")[:-1]
    return cells[: flat.size]


def assert_same32(values: np.ndarray) -> None:
    values = np.asarray(values, np.float32).ravel()
    got, want = fast32(values), ref32(values)
    bad = [(float(v), g, r) for v, g, r in zip(values, got, want, strict=True) if g != r]
    assert not bad, f"{len(bad)} of {values.size} differ, e.g. (value, got, numpy): {bad[:5]}"


def random_bits32(count: int, seed: int) -> np.ndarray:
    """Finite float32 values uniform over bit patterns: every exponent, subnormals, both signs."""
    bits = np.random.default_rng(seed).integers(0, 2**32, size=count, dtype=np.uint64).astype(np.uint32)
    values = bits.view(np.float32)
    return values[np.isfinite(values)]


# ------------------------------------------------------------------------------------------------ float32 digits


def test_random_bit_patterns_match_numpy():
    assert_same32(random_bits32(600_000, seed=1))


def test_random_bit_patterns_read_back():
    values = random_bits32(200_000, seed=2)
    back = np.array([np.float32(cell) for cell in fast32(values)], np.float32)
    assert back.tobytes() == values.tobytes()


@pytest.mark.parametrize("width", [1, 7, 1024, 40_000])
@pytest.mark.parametrize(("chunk", "workers"), [(None, None), (1000, 1), (1000, 3)])
def test_chunks_threads_and_row_widths_do_not_matter(width, chunk, workers, monkeypatch):
    """Chunks of whole rows or pieces of one row (a row wider than a chunk), in this thread or in workers."""
    if chunk:
        monkeypatch.setattr(floats, "_CHUNK", chunk)
        monkeypatch.setattr(floats, "_WORKERS", workers)
    values = random_bits32(30_000, seed=width)
    values[::3] = np.sin(np.arange(values[::3].size)).astype(np.float32)
    assert fast32(values, width) == ref32(values)


def test_sinusoid_table_matches_numpy():
    positions = np.arange(300)[:, None]
    frequencies = 10000.0 ** (-np.arange(0, 512, 2) / 512)
    angles = positions * frequencies
    table = np.concatenate([np.sin(angles), np.cos(angles)], axis=1).astype(np.float32)
    assert_same32(table)


def test_typical_values_of_positional_tables():
    angles = np.linspace(0, 2000 * np.pi, 200_001)
    assert_same32(np.sin(angles).astype(np.float32))
    assert_same32(np.cos(angles).astype(np.float32))
    assert_same32(np.sin(np.geomspace(1e-12, 1e3, 100_001)).astype(np.float32))


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.0, "0.0"),
        (-0.0, "-0.0"),
        (1.0, "1.0"),
        (-1.0, "-1.0"),
        (0.84147096, "0.84147096"),
        (1e-05, "1e-05"),
        (1e-04, "1e-04"),
        (9.9999997e-05, "1e-04"),
        (0.00012345, "0.00012345"),
        (0.1, "0.1"),
        (0.5, "0.5"),
        (100.0, "100.0"),
        (123456.7, "123456.7"),
        (1e16, "1e+16"),
        (3.4e38, "3.4e+38"),
        (3.4028235e38, "3.4028235e+38"),
        (1e-45, "1e-45"),
        (1.1754944e-38, "1.1754944e-38"),
        (1.5e16, "1.5e+16"),
        (1.6777218e-30, "1.6777218e-30"),
    ],
)
def test_known_spellings(value, text, small_blocks):
    assert ref32(np.array([value]))[0] == text  # the reference agrees: these document NumPy's rules
    assert fast32(np.array([value]))[0] == text


NUMPY_2_3 = np.lib.NumpyVersion(np.__version__) >= "2.3.0"


@pytest.mark.parametrize(
    ("value", "text", "before_2_3"),
    [
        (1e6, "1e+06", "1000000.0"),
        (1.2345679e08, "1.2345679e+08", "123456790.0"),
        (64311768.0, "6.431177e+07", "64311770.0"),  # the interval's upper end is included: even significand
        (101036264.0, "1.01036264e+08", "101036264.0"),  # the lower end, 101036260, is not: odd significand
    ],
)
def test_known_spellings_that_changed_in_numpy_2_3(value, text, before_2_3, small_blocks):
    expected = text if NUMPY_2_3 else before_2_3
    assert ref32(np.array([value]))[0] == expected
    assert fast32(np.array([value]))[0] == expected


def test_switches_to_scientific_notation():
    f32 = np.float32
    around = []
    for edge in (1e-4, 1e-5, 1e6, 1e7, 1e16, 1.0, 10.0, 0.1):
        centre = f32(edge)
        for direction in (f32(0), f32(np.inf)):
            step = centre
            for _ in range(40):
                step = np.nextafter(step, direction)
                around.append(step)
        around.append(centre)
    values = np.array(around, np.float32)
    assert_same32(np.concatenate([values, -values]))


def test_powers_of_two_and_their_neighbours():
    powers = np.array([math.ldexp(1.0, k) for k in range(-149, 128)], np.float32)
    below = np.nextafter(powers, np.float32(0))
    above = np.nextafter(powers, np.float32(np.inf))
    values = np.concatenate([powers, below, above])
    values = values[np.isfinite(values)]
    assert_same32(np.concatenate([values, -values]))


def test_powers_of_ten_and_their_neighbours():
    powers = np.array([10.0**k for k in range(-45, 39)], np.float32)
    values = [powers]
    for direction in (np.float32(0), np.float32(np.inf)):
        step = powers
        for _ in range(5):
            step = np.nextafter(step, direction)
            values.append(step)
    values = np.concatenate(values)
    values = values[np.isfinite(values)]
    assert_same32(np.concatenate([values, -values]))


def test_short_decimals_and_exact_ties():
    """Decimals with few digits, their float32 neighbours, and integers where interval ends are integers too."""
    short = np.array([d * 10.0**k for d in range(1, 1000) for k in range(-40, 36, 3)], np.float32)
    short = short[np.isfinite(short)]
    neighbours = np.concatenate([short, np.nextafter(short, np.float32(0)), np.nextafter(short, np.float32(np.inf))])
    assert_same32(neighbours)
    big_integers = np.arange(2**24, 2**24 + 300_000, 2, dtype=np.float64) * 3
    assert_same32(big_integers.astype(np.float32))


def test_subnormals():
    bits = np.concatenate([np.arange(1, 5000), np.random.default_rng(3).integers(1, 2**23, 100_000)]).astype(np.uint32)
    values = bits.view(np.float32)
    assert_same32(np.concatenate([values, -values]))


@pytest.mark.skipif(np.lib.NumpyVersion(np.__version__) < "2.0.0", reason="counts numpy 2's float formatting calls")
def test_slow_path_is_rare_in_positional_tables(monkeypatch):
    monkeypatch.setenv("POSENC_CORE", "pure")  # counts the pure path's Dragon4 calls
    calls = []
    original = _digits._dragon4_digits

    def counting(value):
        calls.append(value)
        return original(value)

    monkeypatch.setattr(_digits, "_dragon4_digits", counting)
    table = np.sin(np.arange(512)[:, None] * 10000.0 ** (-np.arange(512) / 512)).astype(np.float32)
    assert_same32(table)
    assert len(calls) == 0
    assert_same32(random_bits32(100_000, seed=4))
    assert 0 < len(calls) < 0.01 * 100_000


def _format_in_child(queue) -> None:
    values = np.sin(np.arange(300_000, dtype=np.float32)).reshape(300, 1000)
    queue.put(join_rows(values, seps=[b","] * 999 + [b"\n"]))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_worker_threads_survive_fork(monkeypatch):
    """A forked child (multiprocessing's default on Linux) formats with threads of its own."""
    monkeypatch.setattr(floats, "_WORKERS", 2)
    monkeypatch.setattr(floats, "_CHUNK", 50_000)
    values = np.sin(np.arange(300_000, dtype=np.float32)).reshape(300, 1000)
    want = join_rows(values, seps=[b","] * 999 + [b"\n"])  # the parent's pool exists now
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_format_in_child, args=(queue,))
    child.start()
    try:
        assert queue.get(timeout=60) == want
    finally:
        child.join(timeout=60)
        if child.is_alive():
            child.kill()


def test_print_options_do_not_matter():
    values = np.array([[1e6, 0.1, -2.5e-7, 123456.7] * 40], np.float32)
    want = join_rows(values, seps=[b","] * 159 + [b"\n"])
    with np.printoptions(legacy="1.13", precision=3, floatmode="fixed"):
        assert join_rows(values, seps=[b","] * 159 + [b"\n"]) == want
        assert list(shortest(values))[0][:4] == ["1e+06" if NUMPY_2_3 else "1000000.0", "0.1", "-2.5e-07", "123456.7"]


def test_numpy_before_2_3_keeps_values_below_1e16_positional(monkeypatch):
    """NumPy < 2.3 wrote float32 values up to 1e16 positionally (``1000000.0``); the module follows the installed
    NumPy. Emulated here by moving the switch, with NumPy's positional formatter as the reference."""
    monkeypatch.setattr(_records, "_POSITIONAL_MAX32", np.float32(1e16))
    values = np.concatenate([random_bits32(20_000, seed=6), np.geomspace(1e5, 1e17, 3001, dtype=np.float32)])
    values = values.reshape(1, -1)
    expected = []
    for v in values[0]:
        if 1e-4 <= abs(float(v)) < 1e16 or v == 0:
            expected.append(np.format_float_positional(v, unique=True, trim="0"))
        else:
            expected.append(np.format_float_scientific(v, unique=True, trim="-"))
    text = join_rows(values, seps=[b","] * (values.size - 1) + [b"\n"]).decode()
    assert text == ",".join(expected) + "\n"
    assert "1000000.0" in expected and "1e+16" in expected


# --------------------------------------------------------------------------------------------------- float64


def test_float64_is_python_repr():
    values = np.random.default_rng(5).integers(0, 2**64, size=20_000, dtype=np.uint64).view(np.float64)
    values = values[np.isfinite(values)]
    edge = np.array([0.0, -0.0, 1.0, 0.1, 1e-5, 1e-4, 1e16, 1e22, 5e-324, np.finfo(np.float64).max])
    values = np.concatenate([edge, values, np.sin(np.arange(1000.0))])
    block = values.reshape(1, -1)
    text = join_rows(block, seps=[b","] * (values.size - 1) + [b"\n"]).decode("ascii")
    assert text == ",".join(repr(float(v)) for v in values) + "\n"


# ---------------------------------------------------------------------------------------------------- layout


CSV_FLOAT32 = np.array([[0.0, 1.0, 0.84147096], [-0.0, 1e-05, 3.4028235e38]], np.float32)


def c_seps(columns: int, per_line: int = 8) -> list[bytes]:
    seps = [b",\n     " if (j + 1) % per_line == 0 else b", " for j in range(columns - 1)]
    return seps + [b"},\n"]


def test_csv_layout(small_blocks):
    text = join_rows(CSV_FLOAT32, seps=[b",", b",", b"\n"])
    assert text == b"0.0,1.0,0.84147096\n-0.0,1e-05,3.4028235e+38\n"


def test_c_layout(small_blocks):
    text = join_rows(CSV_FLOAT32, seps=c_seps(3, per_line=2), suffix=b"f", row_start=b"    {")
    assert text == b"    {0.0f, 1.0f,\n     0.84147096f},\n    {-0.0f, 1e-05f,\n     3.4028235e+38f},\n"


@pytest.fixture(params=["arrays", "one by one"])
def small_blocks(request, monkeypatch):
    """Run a test twice: small blocks through the array code too, and through the value-by-value code."""
    monkeypatch.setattr(floats, "_FEW", 0 if request.param == "arrays" else 10**9)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(1, 1), (1, 9), (9, 1), (3, 17), (12, 1100)])
@pytest.mark.parametrize("style", ["csv", "c", "spaces", "none"])
def test_layout_matches_plain_python(dtype, shape, style, small_blocks):
    rng = np.random.default_rng(sum(shape))
    block = (rng.standard_normal(shape) * 10.0 ** rng.integers(-8, 9, shape)).astype(dtype)
    block.flat[::5] = np.sin(np.arange(block.flat[::5].size))
    cols = shape[1]
    suffix, row_start = b"", b""
    if style == "csv":
        seps = [b","] * (cols - 1) + [b"\n"]
    elif style == "c":
        seps, suffix, row_start = c_seps(cols), b"f", b"    {"
    elif style == "spaces":
        seps = [b"  "] * (cols - 1) + [b";\r\n"]
    else:
        seps = [b""] * cols
    spell = (lambda v: repr(float(v))) if dtype == "float64" else str
    want = b"".join(
        row_start + b"".join(spell(v).encode() + suffix + sep for v, sep in zip(row, seps, strict=True))
        for row in block
    )
    assert join_rows(block, seps=seps, suffix=suffix, row_start=row_start) == want


def test_long_separators_and_non_contiguous_blocks():
    block = np.sin(np.arange(60, dtype=np.float32)).reshape(6, 10)[:, ::2]
    seps = [b" <<--long separator-->> "] * 4 + [b"\n"]
    want = b"".join(b"".join(str(v).encode() + s for v, s in zip(row, seps, strict=True)) for row in block)
    assert join_rows(block, seps=seps) == want
    assert join_rows(np.asfortranarray(block), seps=seps) == want


def test_empty_blocks(small_blocks):
    assert join_rows(np.zeros((0, 3), np.float32), seps=[b","] * 3) == b""
    assert join_rows(np.zeros((2, 0), np.float32), seps=[], row_start=b"{") == b"{{"


def test_shortest_yields_rows_of_strings():
    assert list(shortest(CSV_FLOAT32)) == [["0.0", "1.0", "0.84147096"], ["-0.0", "1e-05", "3.4028235e+38"]]
    assert list(shortest(np.array([[0.1, 1e16]]))) == [["0.1", "1e+16"]]


# ---------------------------------------------------------------------------------------------------- errors


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_non_finite_values_are_refused(bad, dtype):
    block = np.array([[1.0, bad]], dtype)
    with pytest.raises(FormatError, match="NaN or infinite"):
        join_rows(block, seps=[b",", b"\n"])
    with pytest.raises(FormatError, match="NaN or infinite"):
        list(shortest(block))


@pytest.mark.parametrize("dtype", ["float16", "int32", "complex64", "object"])
def test_other_dtypes_are_refused(dtype):
    block = np.ones((2, 2), dtype)
    with pytest.raises(FormatError, match="float32 or float64"):
        join_rows(block, seps=[b",", b"\n"])
    with pytest.raises(FormatError, match="float32 or float64"):
        list(shortest(block))


def test_other_shapes_and_separator_counts_are_refused():
    with pytest.raises(FormatError, match="2-D"):
        join_rows(np.ones(3, np.float32), seps=[b","] * 3)
    with pytest.raises(ValueError, match="one separator per column"):
        join_rows(np.ones((2, 3), np.float32), seps=[b","] * 2)


# ------------------------------------------------------------------------------------------------ slow sweeps


@pytest.mark.slow
def test_many_random_bit_patterns_match_numpy():
    """3e7 random bit patterns (about a minute: NumPy's str takes half a microsecond per value)."""
    for seed in range(100, 130):
        assert_same32(random_bits32(1_000_000, seed=seed))
