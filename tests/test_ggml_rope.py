"""posenc_cli.encodings.ggml_rope against ggml's own CPU rope output (tests/goldens/ggml) and mpmath.

The goldens are ``ggml_rope_ext`` run by ggml-python 0.0.45 (bundled ggml 0.15.3, built ``-O3 -march=native`` with
GCC 12 on an x86-64 with FMA, glibc 2.36; see tests/goldens/ggml/README.md). Measured agreement of the emulation
(every elementary function correctly rounded, ``fused=True``) with them, 128 positions x 64 pairs x (cos, sin) =
16,384 entries per golden, identical for the NORMAL and NEOX goldens of a case:

=============================  ===============  =========
golden                         bit-identical    max ulps
=============================  ===============  =========
plain_base1e4                  98.822 %         1
llama3_base5e5_freqfactors     99.176 %         1
yarn_scale0.25_ctx32768        99.316 %         2
linear_scale0.5                98.962 %         1
=============================  ===============  =========

Every difference is glibc's: with glibc's own ``powf``/``logf``/``cosf``/``sinf`` (ctypes) substituted for the
correctly rounded ones, the same operation sequence reproduces all eight goldens bit for bit (measured by hand
when the goldens were made; not a test, since it depends on the host's C library). ``fused=False`` (each product
rounded) is as good without YaRN and up to 1164 ulps off on the YaRN golden: the native build fuses.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import mpmath
import numpy as np
import pytest

from posenc_cli.encodings import ggml_rope

GOLDENS = Path(__file__).resolve().parent / "goldens" / "ggml"
MANIFEST = json.loads((GOLDENS / "manifest.json").read_text())

# measured (module docstring): the floor asserted is the measured percentage, rounded down
IDENTICAL_FLOOR = {
    "plain_base1e4": 98.8,
    "llama3_base5e5_freqfactors": 99.1,
    "yarn_scale0.25_ctx32768": 99.3,
    "linear_scale0.5": 98.9,
}


def ordered(a: np.ndarray) -> np.ndarray:
    """float32 bit patterns as integers in the order of the values (so a difference counts ulps)."""
    bits = np.asarray(a, np.float32).view(np.int32).astype(np.int64)
    return np.where(bits < 0, -(bits & 0x7FFFFFFF), bits)


def ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.asarray(np.abs(ordered(a) - ordered(b)))


def load(entry: dict[str, Any]) -> dict[str, np.ndarray]:
    with np.load(GOLDENS / entry["file"], allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def emulate(entry: dict[str, Any], arrays: dict[str, np.ndarray], fused: bool = True) -> tuple[np.ndarray, np.ndarray]:
    return ggml_rope.caches(
        arrays["positions"], freq_factors=arrays.get("freq_factors"), fused=fused, **entry["params"]
    )


def case_name(entry: dict[str, Any]) -> str:
    return str(entry["file"]).rsplit("_", 1)[0]


@pytest.mark.parametrize("entry", MANIFEST["goldens"], ids=lambda e: e["file"])
def test_agrees_with_ggml(entry: dict[str, Any]) -> None:
    arrays = load(entry)
    cos, sin = emulate(entry, arrays)
    assert cos.dtype == sin.dtype == np.float32
    assert cos.shape == arrays["cos"].shape and sin.shape == arrays["sin"].shape
    diff = np.concatenate([ulps(cos, arrays["cos"]).ravel(), ulps(sin, arrays["sin"]).ravel()])
    identical = 100.0 * float(np.mean(diff == 0))
    max_ulps = 2 if entry["params"]["ext_factor"] != 0 else 1  # YaRN's mscale multiplies a 1-ulp libm difference
    assert int(diff.max()) <= max_ulps, f"{entry['file']}: max {int(diff.max())} ulps"
    assert identical >= IDENTICAL_FLOOR[case_name(entry)], f"{entry['file']}: {identical:.3f}% bit-identical"


def test_golden_modes_agree() -> None:
    """NORMAL and NEOX read one cache: ggml's outputs, read out per mode, are the same arrays."""
    by_case: dict[str, list[dict[str, np.ndarray]]] = {}
    for entry in MANIFEST["goldens"]:
        by_case.setdefault(case_name(entry), []).append(load(entry))
    assert sorted(by_case) == sorted(IDENTICAL_FLOOR)
    for pair in by_case.values():
        assert len(pair) == 2
        for key in ("cos", "sin"):
            assert np.array_equal(pair[0][key].view(np.uint32), pair[1][key].view(np.uint32))


def test_yarn_golden_shows_fused_multiply_add() -> None:
    """The YaRN golden tells the fused build from the unfused one: only ``fused=True`` is within 2 ulps."""
    entry = next(e for e in MANIFEST["goldens"] if e["params"]["ext_factor"] != 0)
    arrays = load(entry)
    cos, sin = emulate(entry, arrays, fused=False)
    worst = max(int(ulps(cos, arrays["cos"]).max()), int(ulps(sin, arrays["sin"]).max()))
    assert worst > 100


@pytest.mark.parametrize(
    "entry", [e for e in MANIFEST["goldens"] if e["params"]["ext_factor"] == 0], ids=lambda e: e["file"]
)
def test_disagreements_are_libm_roundings(entry: dict[str, Any]) -> None:
    """Where ggml and the emulation differ (mscale 1), the exact cos/sin of the emulated angle (mpmath, 40 digits)
    lies between the two values and nearer the emulation's: ggml's C library rounded the other way."""
    assert entry["params"]["attn_factor"] == 1.0
    arrays = load(entry)
    theta = ggml_rope.angles(
        arrays["positions"],
        entry["params"]["n_dims"],
        entry["params"]["freq_base"],
        entry["params"]["freq_scale"],
        freq_factors=arrays.get("freq_factors"),
    )
    cos, sin = emulate(entry, arrays)
    checked = 0
    with mpmath.workdps(40):
        for ours, theirs, fn in ((cos, arrays["cos"], mpmath.cos), (sin, arrays["sin"], mpmath.sin)):
            for idx in zip(*np.nonzero(ours.view(np.uint32) != theirs.view(np.uint32)), strict=True):
                exact = fn(mpmath.mpf(float(theta[idx])))
                a, b = mpmath.mpf(float(ours[idx])), mpmath.mpf(float(theirs[idx]))
                assert min(a, b) <= exact <= max(a, b), idx
                assert abs(exact - a) <= abs(exact - b), idx
                checked += 1
    assert checked > 0


def mp_logf(x: float) -> float:
    """``ln x`` to 200 bits, then rounded to 24 bits (nearest, ties to even) by mpmath: float32's correct rounding
    for every normal result (no ``ln`` of a float32 is subnormal)."""
    with mpmath.workprec(200):
        v = mpmath.log(mpmath.mpf(x))
    with mpmath.workprec(24):
        return float(+v)


# ln x nearest a float32 rounding boundary among the float32s in [1, 2): within 2**-40 relative, so the float64
# approximation cannot decide them and the Decimal fallback does
HARD_LOGS = [0x3FD364D7, 0x3FC55379, 0x3FDC4750, 0x3FA66C0B, 0x3FCAF728, 0x3FB887C6]


def test_logf_is_correctly_rounded() -> None:
    rng = np.random.default_rng(27)
    sample = np.concatenate(
        [
            np.array(HARD_LOGS, np.uint32).view(np.float32),
            rng.integers(0x00800000, 0x7F800000, 3000, dtype=np.uint32).view(np.float32),  # all normal floats
            (np.uint32(0x3F800000) + rng.integers(-4000, 4000, 400).astype(np.uint32)).view(np.float32),  # near 1
            np.array([2.0, 0.5, 10000.0, 500000.0, 4.0, 0.25, 32768.0 / (64 * np.float32(np.pi))], np.float32),
            np.array([0x00000001, 0x007FFFFF], np.uint32).view(np.float32),  # subnormal inputs
        ]
    ).astype(np.float32)
    got = ggml_rope.logf(sample)
    assert got.dtype == np.float32
    want = np.array([mp_logf(float(x)) for x in sample], np.float32)
    bad = np.flatnonzero(got.view(np.uint32) != want.view(np.uint32))
    assert bad.size == 0, [(float(sample[i]), float(got[i]), float(want[i])) for i in bad[:5]]


def test_logf_special_values() -> None:
    got = ggml_rope.logf(np.array([1.0, 0.0, np.inf, -1.0], np.float32))
    assert got[0] == 0 and not np.signbit(got[0])
    assert got[1] == -np.inf and got[2] == np.inf and np.isnan(got[3])


def test_fma_rounds_once() -> None:
    """``_fma`` against the exact sum (mpmath), including a case where float64's sum lands on a float32 midpoint
    that the exact sum lies just below (naive double rounding would round up to even)."""
    f = np.float32
    a, b, c = f(1 + 2.0**-23), f(2.0**-24 * (1 - 2.0**-23)), f(1 + 2.0**-23)
    assert float(ggml_rope._fma(a, b, c)) == 1 + 2.0**-23
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 2000)).astype(np.float32)
    got = ggml_rope._fma(x[0], x[1], x[2])
    want = []
    for p, q, r in x.T:
        with mpmath.workprec(200):  # exact: the product has 48 bits, the operands' exponents differ little
            exact = mpmath.mpf(float(p)) * mpmath.mpf(float(q)) + mpmath.mpf(float(r))
        with mpmath.workprec(24):
            want.append(float(+exact))
    assert np.array_equal(got, np.array(want, np.float32))


def test_caches_against_mpmath_plain() -> None:
    """Without YaRN each entry is cos/sin of the float32 running product, correctly rounded: recomputed here with
    numpy float32 products and mpmath, independently of float32.py."""
    positions = np.array([0, 1, 7, 4095, 100000])
    cos, sin = ggml_rope.caches(positions, 16, 10000.0, freq_scale=0.5)
    ts = np.float32(mp_pow_f32(10000.0, float(np.float32(-2.0) / np.float32(16))))
    for r, p in enumerate(positions):
        theta = np.float32(p)
        for i in range(8):
            angle = np.float32(0.5) * theta
            with mpmath.workprec(200):
                c, s = mpmath.cos(mpmath.mpf(float(angle))), mpmath.sin(mpmath.mpf(float(angle)))
            with mpmath.workprec(24):
                assert float(cos[r, i]) == float(+c) and float(sin[r, i]) == float(+s), (p, i)
            theta = np.float32(theta * ts)


def mp_pow_f32(base: float, exponent: float) -> float:
    with mpmath.workprec(200):
        v = mpmath.power(mpmath.mpf(base), mpmath.mpf(exponent))
    with mpmath.workprec(24):
        return float(+v)


def test_parameter_errors() -> None:
    with pytest.raises(ValueError, match="n_dims must be a positive even integer"):
        ggml_rope.caches(np.arange(2), 7, 10000.0)
    with pytest.raises(ValueError, match="freq_factors must have at least"):
        ggml_rope.caches(np.arange(2), 8, 10000.0, freq_factors=np.ones(3, np.float32))
