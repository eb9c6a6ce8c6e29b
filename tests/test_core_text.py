"""The compiled text core (``posenc_cli._ctext``, ``posenc_cli/_core/text.c``) against independent references.

The references are NumPy's ``str(np.float32(v))`` (Dragon4, "unique" mode) and Python's ``repr(float(v))``, never
the module under test; the byte-identity tests then compare the compiled core with the pure path
(``POSENC_CORE=pure``) on the writers' real layouts, the suite's golden tables and the sample outputs' kinds. The
core's own claims are checked too: its tables against exact big integers (``selfcheck``), and every scaled floor it
computes with a 64- or 128-bit product against the exact one (``check``).

Skipped where the extension is not built, except under ``POSENC_CORE=compiled`` (CI's compiled run), where a missing
core fails the import.
"""

from __future__ import annotations

import importlib
import os
import threading
from pathlib import Path

import numpy as np
import pytest

import posenc_cli
from posenc_cli.errors import FormatError
from posenc_cli.formats.text import floats
from posenc_cli.formats.text._records import positional_range32
from posenc_cli.formats.text.floats import join_rows

if os.environ.get("POSENC_CORE", "").strip().lower() == "compiled":
    core = importlib.import_module("posenc_cli._ctext")
else:
    core = pytest.importorskip("posenc_cli._ctext", reason="the compiled text core is not built")

GOLDENS = Path(__file__).parent / "goldens"
NUMPY_2_3 = np.lib.NumpyVersion(np.__version__) >= "2.3.0"


@pytest.fixture(autouse=True)
def _compiled(monkeypatch):
    """Every test here runs the compiled core unless it says otherwise."""
    monkeypatch.setenv("POSENC_CORE", "compiled")


def ref(values: np.ndarray) -> bytes:
    """NumPy's str of each float32 value, or Python's repr of each float64 value, one a line."""
    values = np.asarray(values).ravel()
    if values.dtype == np.float32:
        with np.printoptions(legacy=False):
            texts = [str(v) for v in values]
    else:
        texts = [repr(v) for v in values.tolist()]
    return ("\n".join(texts) + "\n").encode("ascii")


def ours(values: np.ndarray, width: int = 4096) -> bytes:
    """The compiled core's text of each value, one a line (through join_rows, in rows of ``width``)."""
    values = np.asarray(values).ravel()
    out = []
    for start in range(0, values.size, width):
        row = values[start : start + width].reshape(1, -1)
        out.append(join_rows(row, seps=[b"\n"] * row.shape[1]))
    return b"".join(out)


def assert_matches(values: np.ndarray, chunk: int = 1 << 20) -> None:
    values = np.asarray(values).ravel()
    for start in range(0, values.size, chunk):
        part = values[start : start + chunk]
        got, want = ours(part), ref(part)
        if got != want:
            bad = [(g, w) for g, w in zip(got.split(b"\n"), want.split(b"\n"), strict=True) if g != w]
            pytest.fail(f"{len(bad)} of {part.size} differ, e.g. (ours, reference): {bad[:5]}")


def finite(values: np.ndarray) -> np.ndarray:
    return values[np.isfinite(values)]


def random_bits(dtype: type, count: int, seed: int) -> np.ndarray:
    """Finite values uniform over bit patterns: every exponent, subnormals, both signs."""
    rng = np.random.default_rng(seed)
    if dtype is np.float32:
        bits = rng.integers(0, 2**32, size=count, dtype=np.uint64).astype(np.uint32)
        return finite(bits.view(np.float32))
    return finite(rng.integers(0, 2**64, size=count, dtype=np.uint64, endpoint=False).view(np.float64))


def binade32(biased_exponent: int, step: int = 1) -> np.ndarray:
    """Every ``step``-th positive float32 with this biased exponent (0: the subnormals), and its negative."""
    bits = np.arange(biased_exponent << 23, (biased_exponent + 1) << 23, step, dtype=np.uint32)
    values = bits.view(np.float32)
    return np.concatenate([values, -values[:: 1 + 1000 // step]])


def powers_of_two_and_neighbours(dtype: type) -> np.ndarray:
    info = np.finfo(dtype)
    lowest = int(np.log2(info.smallest_subnormal))
    powers = np.array([np.ldexp(dtype(1), k) for k in range(lowest, int(info.maxexp))], dtype)
    up, down = np.nextafter(powers, dtype(np.inf)), np.nextafter(powers, dtype(0))
    values = np.concatenate([powers, up, down, np.nextafter(up, dtype(np.inf)), np.nextafter(down, dtype(0))])
    values = finite(values[values != 0])
    return np.concatenate([values, -values])


# ------------------------------------------------------------------------------------------ the core's own claims


def test_tables_match_exact_big_integers():
    core.selfcheck()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_every_scaled_floor_is_exact(dtype):
    """``check`` decides every floor the digits use exactly (big integers) and counts the fast ones that differ."""
    values = np.concatenate([random_bits(dtype, 200_000, seed=11), powers_of_two_and_neighbours(dtype)])
    block = values.reshape(1, -1)
    lo, hi = positional_range32()
    undecided, wrong = core.check(block, [b","] * block.shape[1], b"", lo, hi)
    assert wrong == 0
    assert undecided < values.size // 1000  # the exact path is for rare products (none is known)
    assert core.join(block, [b","] * block.shape[1], b"", lo, hi, verify=True) == core.join(
        block, [b","] * block.shape[1], b"", lo, hi
    )


# --------------------------------------------------------------------------------------------- float32 digits


def test_random_float32_bit_patterns_match_numpy():
    assert_matches(random_bits(np.float32, 1_000_000, seed=1))


def test_float32_powers_of_two_and_neighbours_match_numpy():
    assert_matches(powers_of_two_and_neighbours(np.float32))


@pytest.mark.parametrize("exponent", [0, 1, 100, 125, 126, 127, 140, 151, 152, 254])
def test_float32_binades_sampled_match_numpy(exponent):
    """Every 61st value of a binade: subnormals (0), the smallest normals, sinusoid tables' magnitudes (100 to 126),
    around 1 and the integers with ties (151, 152: 2**24 to 2**26), the largest."""
    assert_matches(binade32(exponent, step=61))


@pytest.mark.slow
@pytest.mark.parametrize("exponent", [0, 125, 126, 152, 254])
def test_float32_full_binades_match_numpy(exponent):
    """All 2**23 values of a binade (about ten seconds each: NumPy's str is the slow side)."""
    assert_matches(binade32(exponent))


def test_float32_notation_switches_and_short_decimals():
    lo, hi = positional_range32()
    edges = np.array([lo, hi, 1e-4, 1e-5, 1e6, 1e16, 1.0, 0.1, 0.5], np.float32)
    near = np.concatenate([edges, np.nextafter(edges, np.float32(0)), np.nextafter(edges, np.float32(np.inf))])
    decimals = (np.arange(1, 2000)[:, None] * 10.0 ** np.arange(-45, 39)[None, :]).ravel()
    decimals = decimals[decimals < 3.4e38].astype(np.float32)
    values = finite(np.concatenate([near, decimals, [0.0, -0.0, 3.4028235e38, 1e-45, 0.84147096]]).astype(np.float32))
    assert_matches(values)


def test_float32_known_spellings():
    block = np.array([[0.0, -0.0, 1.0, 1e-5, 3.4028235e38, 1e-45, 0.84147096, 999999.94, 1.2345679e8]], np.float32)
    text = join_rows(block, seps=[b","] * 8 + [b"\n"]).decode()
    big = "1.2345679e+08" if NUMPY_2_3 else "123456790.0"
    assert text == f"0.0,-0.0,1.0,1e-05,3.4028235e+38,1e-45,0.84147096,999999.94,{big}\n"


def test_float32_positional_up_to_1e16_when_numpy_is_older(monkeypatch):
    """NumPy < 2.3 wrote float32 values up to 1e16 positionally; the core follows the switch it is given."""
    monkeypatch.setattr(floats, "positional_range32", lambda: (positional_range32()[0], float(np.float32(1e16))))
    values = finite(np.concatenate([random_bits(np.float32, 20_000, 6), np.geomspace(1e5, 1e17, 3001, np.float32)]))
    values = values.astype(np.float32)
    want = []
    for v in values:
        if v == 0 or 1e-4 <= abs(float(v)) < float(np.float32(1e16)):
            want.append(np.format_float_positional(v, unique=True, trim="0"))
        else:
            want.append(np.format_float_scientific(v, unique=True, trim="-"))
    assert ours(values).decode().split("\n")[:-1] == want
    assert "1000000.0" in want and "1e+16" in want


# --------------------------------------------------------------------------------------------- float64 digits


def test_random_float64_bit_patterns_match_repr():
    assert_matches(random_bits(np.float64, 1_000_000, seed=2))


@pytest.mark.slow
def test_many_random_float64_bit_patterns_match_repr_and_exact_floors():
    """1e7 random bit patterns against repr, and 1e6 more with every scaled floor checked exactly (a minute)."""
    for seed in range(200, 210):
        assert_matches(random_bits(np.float64, 1_000_000, seed=seed))
    block = random_bits(np.float64, 1_000_000, seed=210).reshape(1, -1)
    lo, hi = positional_range32()
    assert core.check(block, [b","] * block.shape[1], b"", lo, hi)[1] == 0


def test_float64_powers_of_two_and_neighbours_match_repr():
    assert_matches(powers_of_two_and_neighbours(np.float64))


def test_float64_subnormals_notation_switches_and_short_decimals_match_repr():
    rng = np.random.default_rng(3)
    subnormals = rng.integers(1, 2**52, 100_000, dtype=np.uint64).view(np.float64)
    edges = np.array([1e-4, 1e-5, 1e15, 1e16, 1e17, 1e22, 1e23, 5e-324, 2.2250738585072014e-308, np.finfo(float).max])
    with np.errstate(over="ignore"):
        near = np.concatenate([edges, np.nextafter(edges, 0.0), np.nextafter(edges, np.inf)])
    decimals = (np.arange(1, 3000)[:, None] * 10.0 ** np.arange(-320, 300, 7)[None, :]).ravel()
    sinusoid = np.sin(np.arange(20_000)[:, None] * 10000.0 ** (-np.arange(0, 64, 4) / 64)).ravel()
    integers = np.concatenate([np.arange(2.0**53 - 3000, 2.0**53 + 3000), 2.0 ** np.arange(53, 60) * 10 + 6])
    assert_matches(finite(np.concatenate([subnormals, -subnormals, near, decimals, sinusoid, integers, [0.0, -0.0]])))


# ------------------------------------------------------------------------------- byte-identical to the pure path


def both_ways(monkeypatch, block: np.ndarray, seps: list[bytes], suffix: bytes, start: bytes) -> tuple[bytes, bytes]:
    """``join_rows`` on the pure path and with the compiled core."""
    out = []
    for name in ("pure", "compiled"):
        monkeypatch.setenv("POSENC_CORE", name)
        out.append(join_rows(block, seps=seps, suffix=suffix, row_start=start))
    return out[0], out[1]


def c_layout(cols: int, per_line: int = 3) -> list[bytes]:
    seps = [b",\n     " if (j + 1) % per_line == 0 else b", " for j in range(cols)]
    seps[-1] = b"},\n"
    return seps


def golden_blocks() -> list[tuple[str, np.ndarray]]:
    blocks = []
    for path in sorted(GOLDENS.rglob("*.npz")):
        with np.load(path, allow_pickle=False) as archive:
            for key in archive.files:
                array = archive[key]
                if array.dtype.kind == "f" and array.size:
                    array = np.atleast_2d(array)
                    blocks.append((f"{path.relative_to(GOLDENS)}:{key}", array.reshape(-1, array.shape[-1])))
    return blocks


def test_golden_tables_as_csv_and_c_text_are_the_pure_paths_bytes(monkeypatch):
    blocks = golden_blocks()
    assert len(blocks) > 100
    for name, array in blocks:
        for dtype in (np.float32, np.float64):
            with np.errstate(over="ignore"):
                block = array.astype(dtype)
            block = np.where(np.isfinite(block), block, dtype(0))  # masks hold infinities, text cannot
            cols = block.shape[1]
            for seps, suffix, start in (([b","] * (cols - 1) + [b"\n"], b"", b""), (c_layout(cols), b"f", b"    {")):
                pure, compiled = both_ways(monkeypatch, block, seps, suffix, start)
                assert compiled == pure, name


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("suffix", [".csv", ".h", ".rs", ".c"])
def test_writers_write_the_pure_paths_bytes(monkeypatch, tmp_path, dtype, suffix):
    tables = [
        posenc_cli.generate(300, 48, dtype=dtype),
        posenc_cli.generate(17, 6, base=500.0, dtype=dtype),
        np.ascontiguousarray(random_bits(np.dtype(dtype).type, 4000, seed=5)[:3600].reshape(60, 60)),
    ]
    for k, table in enumerate(tables):
        out = []
        for core_name in ("pure", "compiled"):
            monkeypatch.setenv("POSENC_CORE", core_name)
            path = tmp_path / core_name / f"t{k}{suffix}"
            path.parent.mkdir(exist_ok=True)
            posenc_cli.save(table, path, name="t")
            out.append(path.read_bytes())
        assert out[1] == out[0], (k, suffix)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_layouts_chunks_and_threads_are_the_pure_paths_bytes(monkeypatch, dtype):
    """Long separators (past the core's 16-byte slots), a row start, non-contiguous blocks, many small chunks on two
    worker threads, one column, one row."""
    monkeypatch.setattr(floats, "_CHUNK", 500)
    monkeypatch.setattr(floats, "_WORKERS", 2)
    values = random_bits(dtype, 30_000, seed=7)[:24_000].reshape(400, 60)
    cases = [
        (values, [b","] * 59 + [b"\n"], b"", b""),
        (values, [b" /* a separator longer than sixteen bytes */ "] * 59 + [b"\n"], b"", b"  "),
        (values[::3, ::2], c_layout(30, 4), b"f", b"    {"),
        (values.T, [b"\t"] * 399 + [b"\r\n"], b"", b"row:"),
        (values[:, :1], [b"\n"], b"", b""),
        (values[:1], [b";"] * 60, b"L", b"["),
    ]
    for block, seps, suffix, start in cases:
        pure, compiled = both_ways(monkeypatch, block, seps, suffix, start)
        assert compiled == pure


def test_threads_formatting_at_once_get_their_own_bytes():
    """The core releases the GIL: several threads in it at once, each with its own block."""
    dtypes = [np.float64, np.float32] * 2
    blocks = [random_bits(dtype, 40_000, seed=20 + k)[:36_000].reshape(60, 600) for k, dtype in enumerate(dtypes)]
    want = [ref(b).replace(b"\n", b",") for b in blocks]
    got: dict[int, bytes] = {}

    def run(k: int) -> None:
        got[k] = join_rows(blocks[k], seps=[b","] * 600)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [got[k] for k in range(4)] == want


# ------------------------------------------------------------------------------------- selection and refusals


def test_posenc_core_selects_the_path(monkeypatch):
    monkeypatch.setenv("POSENC_CORE", "pure")
    assert floats._compiled() is None
    monkeypatch.setenv("POSENC_CORE", "compiled")
    assert floats._compiled() is core
    monkeypatch.delenv("POSENC_CORE")
    assert floats._compiled() is core


def test_a_missing_core_is_an_error_only_when_required(monkeypatch):
    from posenc_cli import _native
    from posenc_cli.errors import PosencError

    monkeypatch.setitem(_native._BUILT, "_ctext", None)
    monkeypatch.setenv("POSENC_CORE", "compiled")
    with pytest.raises(PosencError, match="_ctext is not built"):
        floats._compiled()
    monkeypatch.setenv("POSENC_CORE", "")
    assert floats._compiled() is None
    block = np.array([[0.1, 1e16]], np.float32)
    assert join_rows(block, seps=[b" ", b"\n"]) == b"0.1 1e+16\n"  # the pure path


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_non_finite_values_are_refused(bad, dtype):
    block = np.array([[1.0, bad]], dtype)
    with pytest.raises(FormatError, match="NaN or infinite"):
        join_rows(block, seps=[b",", b"\n"])
    lo, hi = positional_range32()
    with pytest.raises(ValueError, match="NaN or infinite"):
        core.join(block, [b",", b"\n"], b"", lo, hi)


def test_a_non_finite_value_in_a_worker_threads_chunk_is_refused(monkeypatch):
    monkeypatch.setattr(floats, "_CHUNK", 1000)
    monkeypatch.setattr(floats, "_WORKERS", 2)
    block = np.ones((400, 100), np.float32)
    block[-1, -1] = np.nan
    with pytest.raises(FormatError, match="NaN or infinite"):
        join_rows(block, seps=[b","] * 100)


def test_the_core_refuses_what_it_cannot_format():
    lo, hi = positional_range32()
    ok = np.zeros((2, 3), np.float32)
    for block in (np.zeros((2, 3), np.int32), np.zeros(6, np.float32), np.zeros((2, 3), ">f4"), np.zeros((4, 6))[::2]):
        with pytest.raises((ValueError, BufferError)):
            core.join(block, [b","] * block.shape[-1], b"", lo, hi)
    with pytest.raises(ValueError, match="one tail per column"):
        core.join(ok, [b","] * 2, b"", lo, hi)
    with pytest.raises(TypeError, match="bytes"):
        core.join(ok, [b",", b",", ","], b"", lo, hi)
    for bad_lo, bad_hi in ((0.1, 1e30), (1e-20, 1e6), (0.1 + 1e-12, 1e6)):
        with pytest.raises(ValueError, match="thresholds"):
            core.join(ok, [b","] * 3, b"", bad_lo, bad_hi)
    assert core.join(ok, [b","] * 3, b"", lo, hi) == b"0.0,0.0,0.0,0.0,0.0,0.0,"
