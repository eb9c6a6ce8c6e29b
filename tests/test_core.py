"""posenc's compiled core (posenc_cli/_core/core.c, selected by posenc_cli._native) against its pure path, in one
process, and against mpmath.

The compiled core must write the pure path's bytes for every table: its loop is the pure path's float64 arithmetic
operation for operation (posenc_cli/encodings/_combine.py). Checked here on the loop itself with inputs aimed at the
hard cases (float32 ties, subnormal and overflowing results, signed zeros, undecided entries, zero columns), on
whole tables of random specs in both dtypes and thread counts, on the committed sample outputs (byte goldens), and
on sampled entries against mpmath. Where the core is not built these tests skip; CI builds it (.ci/run), and runs the
rest of the suite once with POSENC_CORE=pure. The last test installs posenc where no C compiler works (CC=false).
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
from fractions import Fraction
from functools import partial
from pathlib import Path

import numpy as np
import pytest

import posenc_cli
from posenc_cli import _native
from posenc_cli.encodings import _combine
from posenc_cli.encodings.sinusoid import sinusoid_rows
from posenc_cli.errors import PosencError, SpecError

from .test_sinusoid import SPECS, Spec, assert_entries, random_columns

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def core(monkeypatch: pytest.MonkeyPatch):
    """The compiled module, or a skip where it is not built."""
    monkeypatch.delenv("POSENC_CORE", raising=False)
    module = _native.native("_core")
    if module is None:
        pytest.skip("posenc's compiled core is not built here (python setup.py build_ext --inplace)")
    return module


def both_ways(monkeypatch: pytest.MonkeyPatch, make):
    """``make()`` under the pure path and under the compiled core."""
    out = []
    for choice in ("pure", "compiled"):
        monkeypatch.setenv("POSENC_CORE", choice)
        out.append(make())
    monkeypatch.delenv("POSENC_CORE")
    return out


# ------------------------------------------------------------------------------------------- the loop itself
def hard_float32_inputs(rng: np.random.Generator, rows: int, d: int):
    """Offsets (rows x d) and one block's vectors (d) whose entries y = x*u + y*v land on float32 ties, subnormals,
    overflow, signed zeros, and ordinary values, with bounds from 0 (the tie decided by half-even) upwards."""
    xh, yh = rng.uniform(-1, 1, (rows, d)), rng.uniform(-1, 1, (rows, d))
    uh, vh = rng.uniform(-1, 1, d), rng.uniform(-1, 1, d)
    err = rng.choice([0.0, 2.0**-1060, 2.0**-49, 2.0**-30, 2.0**-24], d)
    f = np.sort(rng.uniform(-2, 2, rows * d).astype(np.float32).reshape(rows, d), axis=1)
    g = np.nextafter(f, np.float32(np.inf))
    tie = (f.astype(np.float64) + g.astype(np.float64)) / 2  # exactly halfway between two float32s
    special = {
        0: (tie, 1.0, 0.0),  # y = tie * 1 + 0
        1: (np.full((rows, d), 1e-40), 1.0, 0.0),  # float32 subnormals
        2: (np.full((rows, d), 2.0**-150), 1.0, 0.0),  # half the smallest subnormal: a tie with zero
        3: (np.full((rows, d), 3.5e38), 1.0, 0.0),  # above FLT_MAX: rounds to inf
        4: (np.full((rows, d), -0.0), 1.0, -0.0),  # -0 * 1 + 0 * -0 = -0 + -0: a negative zero
    }
    # A product that rounds to a float32 tie T = 1 + 2**-11 + 2**-24 from just above (x*u = T + 2**-61 or so), plus
    # 2**-53: unfused, T + 2**-53 is a float64 tie, rounded to the even T, then to the float32 below; a multiply-add
    # fused by the compiler rounds T + 2**-61 + 2**-53 once, to the float64 above T, then to the float32 above.
    t = 1 + 2.0**-11 + 2.0**-24
    for c in range(d):
        kind = c % 7
        if kind in special:
            values, u, v = special[kind]
            xh[:, c], uh[c], vh[c] = values[:, c], u, v
            yh[:, c] = 0.0
        elif kind in (5, 6):  # the inexact product first (x*u), or second (y*v)
            pair = ((t - 2.0**-50, 1 + 2.0**-50), (2.0**-53, 1.0))
            (xh[:, c], uh[c]), (yh[:, c], vh[c]) = pair if kind == 5 else pair[::-1]
            err[c] = 0.0
    return xh, yh, uh, vh, err


def test_combine32_matches_the_pure_loop_on_hard_inputs(core) -> None:
    rng = np.random.default_rng(30)
    outcomes = set()
    for d, size in ((1, 1), (7, 5), (63, 16), (200, 32)):
        xh, yh, uh, vh, err = hard_float32_inputs(rng, size, d)
        want = np.empty((1, size, d), np.float32)
        with np.errstate(over="ignore"):
            undecided = _combine.combine32(want, xh, yh, uh[None, None, :], vh[None, None, :], err)
        got = np.empty((size, d), np.float32)
        found = core.combine32(got, xh, yh, uh[None, :], vh[None, :], err, np.empty(0, np.int64), 0, size, 0)
        assert got.tobytes() == want.tobytes()
        assert np.frombuffer(found, np.int64).tolist() == np.flatnonzero(undecided).tolist()
        outcomes |= set(undecided.reshape(-1).tolist())
    assert outcomes == {False, True}  # the inputs reach both


def test_combine32_rows_blocks_and_zero_columns(core) -> None:
    """Rows lo.. of a table cut in blocks: row r takes offset r % size and block r // size; zero columns are +0.0
    and never undecided."""
    rng = np.random.default_rng(3)
    d, size, lo, n = 11, 4, 6, 9  # rows 6..14: blocks 1..3
    xh, yh = rng.uniform(-1, 1, (size, d)), rng.uniform(-1, 1, (size, d))
    uh, vh = rng.uniform(-1, 1, (4, d)), rng.uniform(-1, 1, (4, d))
    err = np.full(d, 2.0**-30)
    zeros = np.array([2, 7], np.int64)
    got = np.full((n, d), np.nan, np.float32)
    found = np.frombuffer(core.combine32(got, xh, yh, uh, vh, err, zeros, lo, size, 1), np.int64)
    for i in range(n):
        q, a = divmod(lo + i, size)
        want = np.empty((1, 1, d), np.float32)
        bad = _combine.combine32(want, xh[a : a + 1], yh[a : a + 1], uh[q - 1][None, None], vh[q - 1][None, None], err)
        want[0, 0, zeros], bad[0, 0, zeros] = 0.0, False
        assert got[i].tobytes() == want.tobytes()
        assert [int(j) - i * d for j in found if i * d <= j < (i + 1) * d] == np.flatnonzero(bad).tolist()
    assert found.size  # 2**-30 leaves some undecided


def test_combine32_refuses_inconsistent_shapes(core) -> None:
    x = np.zeros((4, 3))
    u = np.zeros((1, 3))
    err, none = np.zeros(3), np.empty(0, np.int64)
    with pytest.raises(ValueError):
        core.combine32(np.empty((5, 3), np.float32), x, x, u, u, err, none, 0, 4, 0)  # row 4 is in block 1
    with pytest.raises(ValueError):
        core.combine32(np.empty((4, 3), np.float32), x, x, u, u, err, np.array([3]), 0, 4, 0)  # no column 3
    with pytest.raises(TypeError):
        core.combine32(np.empty((4, 3), np.float64), x, x, u, u, err, none, 0, 4, 0)  # float32 output only
    with pytest.raises(ValueError):
        core.combine32(np.empty((4, 3), np.float32)[:, :2], x, x, u, u, err, none, 0, 4, 0)  # not contiguous


def test_combine64_matches_the_pure_loop_on_hard_inputs(core) -> None:
    from posenc_cli.encodings import _kernel as K

    rng = np.random.default_rng(64)
    size, d = 16, 40
    xh, yh = rng.uniform(-1, 1, (size, d)), rng.uniform(-1, 1, (size, d))
    xl, yl = xh * rng.uniform(-1, 1, (size, d)) * 2.0**-53, yh * rng.uniform(-1, 1, (size, d)) * 2.0**-53
    uh, vh = rng.uniform(-1, 1, d), rng.uniform(-1, 1, d)
    ul, vl = uh * rng.uniform(-1, 1, d) * 2.0**-53, vh * rng.uniform(-1, 1, d) * 2.0**-53
    xh[:, 0], xl[:, 0], yh[:, 0], yl[:, 0] = 0.0, 0.0, 0.0, 0.0  # y = 0: never decided
    xh[:, 1], yh[:, 1], xl[:, 1], yl[:, 1], uh[1], vh[1] = 1.0, 0.0, 0.0, 0.0, 1.0, 0.0  # exactly 1
    xh[:, 2] = np.ldexp(1.0, -1020)  # subnormal once scaled by p2 = 2**-40
    err_abs = rng.choice([0.0, 2.0**-1060, 2.0**-75, 2.0**-60], d)
    err_rel = rng.choice([0.0, 2.0**-104, 2.0**-90], d)
    tab = (xh, xl, *K.split(xh), yh, yl, *K.split(yh))
    vec = tuple(a[None, None, :] for a in (uh, ul, *K.split(uh), vh, vl, *K.split(vh)))
    for p2 in (1.0, 0.125, 2.0**-40, 2.0**600):
        want = np.empty((1, size, d))
        undecided = _combine.combine64(want, tab, vec, (err_abs, err_rel), p2)
        got = np.empty((size, d))
        found = core.combine64(
            got, xh, xl, yh, yl, uh[None], ul[None], vh[None], vl[None], err_abs, err_rel, p2,
            np.empty(0, np.int64), 0, size, 0,
        )  # fmt: skip
        assert got.tobytes() == want.tobytes()
        assert np.frombuffer(found, np.int64).tolist() == np.flatnonzero(undecided).tolist()
        assert undecided.any() and not undecided.all()


def test_kernel_matches_the_pure_kernel(core) -> None:
    """The sin/cos kernel on rows up to 2**32 - 1 and the constants of real specs: phases of both signs, negative
    steps, frequencies down to underflow (base 1e300), multipliers."""
    from posenc_cli.encodings import _kernel as K

    rng = np.random.default_rng(7)
    rows = np.concatenate([np.arange(40), rng.integers(0, 2**32, 200), [2**32 - 1, 2**31, 2**21, 2**21 - 1]])
    ks = np.arange(0, 120, 3, dtype=np.int64).tobytes()
    cases = [
        (10000.0, Fraction(64), 0.0, 1.0, None),
        (10000.0, Fraction(64), -20.5, 0.01, None),
        (5e5, Fraction(100), 1000.0, -1e-3, None),
        (2.0, Fraction(7, 3), 0.1, 0.1, None),
        (1e300, Fraction(3), 0.5, 3.0, None),
        (10000.0, Fraction(6), 3.0, 7.0, tuple(Fraction(1, 1 + k % 5) for k in range(120))),
    ]
    table, floats = K.kernel_constants()
    for base, denom, start, step, mults in cases:
        consts = K.constants(ks, base, denom, start, step, mults)
        g = consts[K.PIECES]
        for phase in (None, consts[K.PHASE]) if start else (None,):
            want = K.kernel(rows[:, None].astype(np.float64), g, phase)
            got = [np.empty((len(rows), g.shape[1])) for _ in range(4)]
            core.kernel(rows.astype(np.float64), g, phase, table, floats, *got)
            for w, h in zip(want, got, strict=True):
                assert h.tobytes() == w.tobytes(), (base, denom, start, step)


# ---------------------------------------------------------------------------------------------- whole tables
@pytest.mark.parametrize("threads", ["1", "2", "3"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_tables_are_the_same_bytes_both_ways(core, monkeypatch: pytest.MonkeyPatch, dtype: str, threads: str) -> None:
    """The specs of test_sinusoid.py (phases, amplitudes, crossings of zero, zero columns, odd widths) and random
    ones, at row ranges that start anywhere; large enough for several threads (POSENC_THREADS)."""
    monkeypatch.setenv("POSENC_THREADS", threads)
    rng = random.Random(f"{dtype}{threads}")
    specs = [*SPECS]
    for _ in range(6):
        specs.append(
            Spec(
                Fraction(rng.randrange(1, 600), rng.choice([1, 2, 3])),
                base=rng.choice([2.0, 10000.0, 5e5]),
                start=rng.choice([0.0, 1.0, -3.5, rng.uniform(-1e4, 1e4)]),
                step=rng.choice([1.0, -1.0, 0.001, rng.uniform(-40, 40)]),
                scale=rng.choice([1.0, -2.0, 22.627416997969522, 1e-30]),
            )
        )
    for spec in specs:
        d = rng.choice([3, 16, 63, 64, 256])
        columns = random_columns(rng, d, spec)
        first = rng.choice([0, 1, rng.randrange(10_000)])
        rows = (1 << 20) // d + rng.randrange(300) if rng.random() < 0.4 else rng.randrange(1, 400)
        rows = min(rows, spec.last_row() - first)
        pure, compiled = both_ways(
            monkeypatch,
            partial(sinusoid_rows, first, first + rows, columns, dtype=dtype, **spec.kwargs()),
        )
        assert compiled.tobytes() == pure.tobytes(), f"{spec}, rows {first}..{first + rows}, d={d}"


def test_compiled_entries_against_mpmath(core, monkeypatch: pytest.MonkeyPatch) -> None:
    """An independent reference for the compiled core: a 4096 x 1024 table with a phase, an amplitude and a crossing
    of zero (parts on both threads), sampled; and the paper's table at its last rows."""
    monkeypatch.setenv("POSENC_CORE", "compiled")
    spec = Spec(Fraction(511), start=-20.5, step=0.01, scale=22.627416997969522)
    columns = [(k, "sin") for k in range(512)] + [(k, "cos") for k in range(512)]
    rng = random.Random(30)
    for dtype in ("float32", "float64"):
        table = sinusoid_rows(0, 4096, columns, dtype=dtype, **spec.kwargs())
        for r in [0, 2049, 2050, *rng.sample(range(4096), 4)]:
            assert_entries(table[r : r + 1], r, columns, spec, rng.sample(range(1024), 20))
    paper = Spec(Fraction(512))
    interleaved = [(j // 2, "sin" if j % 2 == 0 else "cos") for j in range(1024)]
    table = sinusoid_rows(8190, 8192, interleaved, dtype="float32", **paper.kwargs())
    assert_entries(table, 8190, interleaved, paper, rng.sample(range(1024), 40))


def test_sample_outputs_are_the_same_bytes_both_ways(core, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """sample_outputs/ (every format, float32 and float64 tables among them) written under each core: the committed
    bytes both times."""
    from .test_samples import SAMPLES, load_script

    script = load_script()
    for choice in ("pure", "compiled"):
        monkeypatch.setenv("POSENC_CORE", choice)
        folder = tmp_path / choice
        folder.mkdir()
        written = script.make(folder)
        stale = [p.name for p in written if p.read_bytes() != (SAMPLES / p.name).read_bytes()]
        assert written and not stale, f"{choice}: {stale}"


# ------------------------------------------------------------------------------------ selection and threads
def test_posenc_core_selects_and_requires(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POSENC_CORE", "pure")
    assert _native.native("_core") is None
    monkeypatch.setenv("POSENC_CORE", "fastest")
    with pytest.raises(SpecError, match="POSENC_CORE must be one of auto, pure, compiled"):
        _native.native("_core")
    monkeypatch.setitem(_native._BUILT, "_core", None)  # as where the build was skipped
    for value in ("", "auto", "Pure"):
        monkeypatch.setenv("POSENC_CORE", value)
        assert _native.native("_core") is None
    monkeypatch.setenv("POSENC_CORE", "compiled")
    with pytest.raises(PosencError, match="POSENC_CORE=compiled, but posenc's compiled module _core is not built"):
        _native.native("_core")


def test_the_source_folder_is_not_taken_for_the_module() -> None:
    """posenc_cli/_core/ (the C sources) imports as a namespace package where the extension is not built: never a
    core."""
    loaded = _native._load("_core")
    assert loaded is None or hasattr(loaded, "combine32")
    assert _native._load("no_such_module") is None


def test_threads_follow_affinity_and_posenc_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    cpus = len(os.sched_getaffinity(0))
    monkeypatch.delenv("POSENC_THREADS", raising=False)
    assert _native.threads() == cpus
    monkeypatch.setenv("POSENC_THREADS", "1")
    assert _native.threads() == 1
    monkeypatch.setenv("POSENC_THREADS", str(cpus + 5))
    assert _native.threads() == cpus  # a limit, never more threads than CPUs
    for bad in ("0", "-2", "two", "1.5", "٣"):
        monkeypatch.setenv("POSENC_THREADS", bad)
        with pytest.raises(SpecError, match="POSENC_THREADS must be a positive integer"):
            _native.threads()
    monkeypatch.setenv("POSENC_THREADS", "2")
    monkeypatch.delattr(os, "sched_getaffinity")
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    assert _native.threads() == 2


def test_version_names_the_core(monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from posenc_cli.cli import cli

    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0 and result.stdout == f"posenc {posenc_cli.__version__} ({_native.CORE} core)\n"
    monkeypatch.setenv("POSENC_CORE", "fastest")
    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 2 and "POSENC_CORE must be one of" in result.stderr


# ----------------------------------------------------------------------------------- installing without a compiler
@pytest.mark.client
def test_installs_without_a_c_compiler_and_runs_the_pure_core(tmp_path: Path) -> None:
    """``CC=false pip wheel`` of this checkout (a copy of its sources; the build backend from the package index, as
    for any pip install): the optional extension's build fails, the wheel is made all the same, and installed in a
    fresh venv posenc runs its pure core, writing the bytes this checkout writes."""
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md", "LICENSE"):
        shutil.copy2(REPO / name, source / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.so", "*.pyd")
    shutil.copytree(REPO / "posenc_cli", source / "posenc_cli", ignore=ignore)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("POSENC_", "PYTHON"))}
    env["CC"] = "false"
    wheels = tmp_path / "wheels"
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-v", "-w", str(wheels), str(source)]
    built = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    assert 'building extension "posenc_cli._core" failed' in built.stdout + built.stderr
    (wheel,) = wheels.glob("posenc-*.whl")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout.strip()  # fmt: skip
    import click
    import h5py
    import rich

    dependencies = dict.fromkeys(str(Path(m.__file__).resolve().parents[1]) for m in (np, click, rich, h5py))
    (Path(site) / "test-dependencies.pth").write_text("\n".join(dependencies) + "\n")
    install = [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "-q"]
    done = subprocess.run([*install, "--ignore-installed", str(wheel)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    env.pop("CC")
    check = "from posenc_cli import _native; import posenc_cli; print(_native.CORE, posenc_cli.__file__)"
    printed = subprocess.run([str(python), "-c", check], capture_output=True, text=True, env=env, cwd=tmp_path)
    core_name, where = printed.stdout.split()
    assert core_name == "pure" and Path(where).is_relative_to(Path(site)), printed.stdout + printed.stderr
    version = subprocess.run([str(venv / "bin" / "posenc"), "--version"], capture_output=True, text=True, env=env)
    assert version.stdout.endswith("(pure core)\n"), version.stdout + version.stderr
    out = tmp_path / "pe.npy"
    args = ["generate", "-n", "600", "-d", "1000", "--base", "500", "-o", str(out)]
    made = subprocess.run([str(venv / "bin" / "posenc"), *args], capture_output=True, text=True, env=env)
    assert made.returncode == 0, made.stderr
    assert np.load(out).tobytes() == posenc_cli.sinusoidal(600, 1000, base=500).tobytes()
