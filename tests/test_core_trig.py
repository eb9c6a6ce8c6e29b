"""The compiled core's ``trig32`` (posenc_cli/_core/core.c), the cos and sin of ``--arithmetic framework``
(:func:`~posenc_cli.encodings.float32.trig_columns`, :func:`~posenc_cli.encodings.float32.cos_sin_columns`),
against the pure path bit for bit and against mpmath.

Every value either path writes is the float32 nearest the exact cos or sin of a float32 angle, so the two must agree
on every input: checked on angles aimed at the hard cases (the float32 nearest each multiple of pi/2 and pi/4, where
cos or sin crosses zero or a float32 tie may lie close; tiny, subnormal and huge angles; whole RoPE caches), with
both thread counts, and on a sample against mpmath (50 digits, rounded to float32 in exact rational arithmetic
here, not by posenc). Skipped where the core is not built; CI builds it.
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np
import pytest

import posenc_cli
from posenc_cli import _native
from posenc_cli.encodings import float32 as f32ops

from .test_core import core  # noqa: F401  (the fixture: the compiled module, or a skip where it is not built)

pytestmark = pytest.mark.usefixtures("core")


#: The bits of float32 angles whose cos or sin lies within 2**-45 (relative) of a float32 midpoint: found by a search
#: over 2**22 consecutive float32 values in each of seven binades (NumPy's float64 cos and sin, 2.5 s), kept here.
#: At these a bound of 2**-46 cannot always decide the rounding: the compiled path hands them to the exact one.
NEAR_TIES = [
    1057018918,
    1057174495,
    1058433669,
    1059194397,
    1059580736,
    1059951596,
    1060468048,
    1074832575,
    1075781888,
    1076077182,
    1076107271,
    1076207484,
    1091031745,
    1091874648,
    1092170718,
    1093924100,
    1094180506,
    1094582131,
    1107333498,
    1107760539,
    1107960260,
    1108721632,
    1108958650,
    1109575854,
    1110937016,
    1111124912,
    1111145828,
    1141174098,
    1142577986,
    1142722895,
    1143382082,
    1143656376,
    1174778311,
    1176069860,
    1176082840,
    1176158285,
    1176585647,
    1176951521,
    1177166393,
    1177423808,
    1177550622,
    1191673733,
    1191943589,
    1194234381,
    1195360881,
]


def hard_angles() -> np.ndarray:
    """float32 angles whose cos or sin is near a float32 midpoint (:data:`NEAR_TIES`), near multiples of pi/4 (and
    their neighbours), tiny, subnormal, huge and random ones."""
    rng = np.random.default_rng(7)
    k = np.concatenate([np.arange(1, 4000), rng.integers(4000, 2**26, 4000)])
    near = (k * (np.pi / 4)).astype(np.float32)
    steps = np.stack([np.nextafter(near, np.float32(np.inf)), near, np.nextafter(near, np.float32(0))])
    tiny = np.float32([1e-45, 1e-40, 2.0**-126, 1e-20, 2.0**-12, 0.0, 3.4e38, 1e30, 2.0**24, 2.0**24 + 2])
    rand = rng.uniform(-1e5, 1e5, 20000).astype(np.float32)
    ties = np.array(NEAR_TIES, np.uint32).view(np.float32)
    angles = np.concatenate([ties, -ties, steps.reshape(-1), tiny, -tiny, rand])
    return angles[: angles.size // 8 * 8].reshape(-1, 8)


def exact_f32(x: float, want_cos: bool) -> int:
    """The bits of the float32 nearest ``cos x`` or ``sin x`` (mpmath at 50 digits, rounded here: ties never occur
    for a nonzero rational angle, the values being transcendental)."""
    with mpmath.workdps(50):
        v = Fraction(str((mpmath.cos if want_cos else mpmath.sin)(mpmath.mpf(x))))
    c = np.float32(float(v))
    candidates = [c, np.nextafter(c, np.float32(np.inf)), np.nextafter(c, np.float32(-np.inf))]
    best = min(candidates, key=lambda f: abs(Fraction(float(f)) - v))
    return int(np.float32(best).view(np.uint32))


@pytest.mark.parametrize("threads", ["1", "2"])
@pytest.mark.parametrize("want_cos", [True, False], ids=["cos", "sin"])
def test_trig_columns_is_the_pure_paths_bits(monkeypatch: pytest.MonkeyPatch, want_cos: bool, threads: str):
    monkeypatch.setenv("POSENC_THREADS", threads)
    angles = np.tile(hard_angles(), (1, 2))  # more than _PART_MIN entries: the threaded split runs at 2
    cols = [3, 0, 0, 15, 7, 3, 9, 1]
    monkeypatch.setenv("POSENC_CORE", "pure")
    pure = f32ops.trig_columns(angles, cols, want_cos)
    monkeypatch.setenv("POSENC_CORE", "compiled")
    compiled = f32ops.trig_columns(angles, cols, want_cos)
    assert compiled.dtype == pure.dtype == np.float32 and compiled.shape == (angles.shape[0], len(cols))
    assert np.array_equal(compiled.view(np.uint32), pure.view(np.uint32))


@pytest.mark.parametrize("want_cos", [True, False], ids=["cos", "sin"])
def test_compiled_trig_against_mpmath(want_cos: bool):
    angles = hard_angles().reshape(-1)
    rng = np.random.default_rng(11)
    sample = np.concatenate([angles[:700], angles[-40:], rng.choice(angles, 300, replace=False)])
    sample = sample[sample != 0]  # zeros: test_signed_zeros
    got = f32ops.trig_columns(sample.reshape(-1, 1), [0], want_cos).reshape(-1).view(np.uint32)
    want = [exact_f32(float(x), want_cos) for x in sample]
    assert got.tolist() == want


@pytest.mark.parametrize("scaling", [dict(), dict(scaling="llama3", factor=8.0, original_max_positions=8192),
                                     dict(scaling="yarn", factor=4.0, original_max_positions=4096)],
                         ids=["plain", "llama3", "yarn"])  # fmt: skip
def test_framework_rope_caches_are_the_same_bytes_both_ways(monkeypatch: pytest.MonkeyPatch, scaling):
    tables = []
    for choice in ("pure", "compiled"):
        monkeypatch.setenv("POSENC_CORE", choice)
        table = posenc_cli.rope(3000, 96, theta=500000.0, arithmetic="framework", **scaling)
        tables.append({name: np.asarray(table.arrays[name]) for name in table.arrays})
    assert tables[0].keys() == tables[1].keys()
    for name in tables[0]:
        assert tables[0][name].tobytes() == tables[1][name].tobytes(), name


def test_both_parts_in_one_pass_are_each_parts_bits(monkeypatch: pytest.MonkeyPatch):
    angles, cols = hard_angles(), [5, 5, 2, 0, 7]
    pair = f32ops.cos_sin_columns(angles, cols)
    monkeypatch.setenv("POSENC_CORE", "pure")
    for got, want_cos in zip(pair, (True, False), strict=True):
        want = f32ops.trig_columns(angles, cols, want_cos)
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


def test_trig32_refuses_inconsistent_shapes():
    built = _native.native("_core")
    angles, one = np.zeros((4, 3), np.float32), np.array([0], np.int64)
    with pytest.raises(ValueError, match="inconsistent shapes"):
        built.trig32(angles, np.zeros((4, 2), np.float32), None, 3, np.array([0, 1, 2], np.int64))
    with pytest.raises(ValueError, match="inconsistent shapes"):
        built.trig32(angles, None, np.zeros((4, 1), np.float32), 3, np.array([3], np.int64))
    with pytest.raises(ValueError, match="inconsistent shapes"):
        built.trig32(angles, None, None, 3, one)
    with pytest.raises(TypeError, match="angles"):
        built.trig32(angles.astype(np.float64), np.zeros((4, 1), np.float32), None, 3, one)
    with pytest.raises(TypeError, match="sin_out"):
        built.trig32(angles, None, np.zeros((4, 1), np.float64), 3, one)


@pytest.mark.parametrize("choice", ["pure", "compiled"])
def test_signed_zeros(monkeypatch: pytest.MonkeyPatch, choice: str):
    """sin(+-0) = +-0 and cos(+-0) = 1, as IEEE (and torch) give them, on both cores."""
    monkeypatch.setenv("POSENC_CORE", choice)
    angles = np.float32([[-0.0, 0.0, 1.0]])
    cos, sin = f32ops.cos_sin_columns(angles, [0, 1, 2])
    assert sin[0, :2].view(np.uint32).tolist() == [0x80000000, 0]
    assert cos[0, :2].tolist() == [1.0, 1.0]
    assert f32ops.sin(np.float32([-0.0])).view(np.uint32).tolist() == [0x80000000]


@pytest.mark.parametrize("threads", ["1", "2"])
def test_products_are_the_angles_cos_and_sin(monkeypatch: pytest.MonkeyPatch, threads: str):
    """cos_sin_products(p, inv) is cos_sin_columns of fl32(fl32(p) * inv) (NumPy's operations, written out here), on
    both cores: positions past 2**24 (rounded to float32 first), and p = 1 against inverse frequencies equal to the
    near-tie angles of NEAR_TIES."""
    monkeypatch.setenv("POSENC_THREADS", threads)
    inv = np.concatenate([np.array(NEAR_TIES, np.uint32).view(np.float32), np.float32([1e-3, 0.5, 0.0, 2.5e-7])])
    positions = np.concatenate([[0, 1, 3, 2**24 + 1, 2**25 + 3, 123456789], np.arange(4000, 7000)])
    angles = positions.astype(np.float32)[:, None] * inv[None, :]
    cols = [0, 3, 3, 48, 47, 10]
    results = {}
    for choice in ("pure", "compiled"):
        monkeypatch.setenv("POSENC_CORE", choice)
        results[choice] = (f32ops.cos_sin_products(positions, inv, cols), f32ops.cos_sin_columns(angles, cols))
    for pair in (*results["pure"], *results["compiled"]):
        for got, want in zip(pair, results["pure"][1], strict=True):
            assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


def test_products_past_float32_fall_back(monkeypatch: pytest.MonkeyPatch):
    """Angles that would overflow float32 are not handed to the compiled loop (it takes finite angles only)."""
    positions, inv = np.array([0, 2**62]), np.float32([1.0, 3e30])
    with np.errstate(over="ignore"):
        angles = positions.astype(np.float32)[:, None] * inv[None, :]
    cos, sin = f32ops.cos_sin_products(positions, inv, [0, 1])
    assert np.isnan(cos[1, 1]) and np.isnan(sin[1, 1])
    assert cos[:, 0].tolist() == f32ops.cos_sin_columns(angles[:, :1], [0])[0][:, 0].tolist()


def test_trig32_products_refuse_inconsistent_shapes():
    built = _native.native("_core")
    out, cols = np.zeros((2, 1), np.float32), np.array([0], np.int64)
    with pytest.raises(ValueError, match="inconsistent shapes"):
        built.trig32(np.array([1, 2], np.int64), out, None, 2, cols, np.float32([1.0]))
    with pytest.raises(TypeError, match="positions"):
        built.trig32(np.float32([1, 2]), out, None, 1, cols, np.float32([1.0]))
    with pytest.raises(TypeError, match="inv"):
        built.trig32(np.array([1, 2], np.int64), out, None, 1, cols, np.float64([1.0]))
