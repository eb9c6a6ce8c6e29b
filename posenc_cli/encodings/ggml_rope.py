"""RoPE caches as llama.cpp's ggml computes them on the CPU: float32, its operations in its order.

The spec is ggml's CPU rope kernel, ``ggml/src/ggml-cpu/ops.cpp`` (ggml 0.15.3 as bundled in ggml-python 0.0.45):
``ggml_compute_forward_rope_flt`` → ``ggml_rope_cache_init`` → ``rope_yarn`` / ``rope_yarn_ramp``, and
``ggml_rope_yarn_corr_dims`` / ``ggml_rope_yarn_corr_dim`` in ``ggml/src/ggml.c``. Every name below is a C
``float`` and every step one float32 operation (numpy's float32 ``+ - * /`` are the same IEEE operations); ``powf``,
``logf``, ``cosf``, ``sinf`` are taken **correctly rounded** (:mod:`posenc_cli.encodings.float32`, :func:`logf`
here), where glibc's are within an ulp::

    theta_scale = powf(freq_base, -2.0f / (float)n_dims)
    corr_dim(b) = (float)n_dims * logf((float)n_ctx_orig / ((b * 2.0f) * (float)M_PI)) / (2.0f * logf(freq_base))
    low         = max(0, floorf(corr_dim(beta_fast)));  high = min((float)(n_dims - 1), ceilf(corr_dim(beta_slow)))

    for a position p (ggml_rope_cache_init), pair i = 0 .. n_dims/2 - 1:
    theta_0     = (float)p;   theta_{i+1} = theta_i * theta_scale      (one running float32 product per position)
    extrap      = theta_i / freq_factors[i]                           (1.0f when there are none)
    interp      = freq_scale * extrap
    ext_factor == 0:   angle = interp;   mscale = attn_factor
    ext_factor != 0:   ramp   = 1 - min(1, max(0, ((float)i - low) / max(0.001f, high - low)))
                       mix    = ramp * ext_factor
                       angle  = interp * (1 - mix) + extrap * mix
                       mscale = attn_factor * (1.0f + 0.1f * logf(1.0f / freq_scale))
    cos[p, i]   = cosf(angle) * mscale;   sin[p, i] = sinf(angle) * mscale

``0.1f``, ``0.001f``, ``2.0f``, ``(float)M_PI`` are float constants (float32 here); ``i0 / 2`` is C integer
division (pair index ``i``). Pair ``i`` always uses ``theta_i``: ggml's NORMAL mode rotates adjacent elements
``(x[2i], x[2i+1])`` and NEOX mode the halves ``(x[i], x[i + n_dims/2])``, from the same cache, so both modes have
these ``cos``/``sin``. Note the angle is the running product **from p**, not ``p`` times a frequency table.

Fused multiply-add (``fused=True``, the default): ggml's CPU backend is built with ``-march=native`` and
``-std=gnu++17``, under which GCC contracts ``a * b + c`` into one ``fma`` on hardware that has it (every x86-64 with
FMA, every aarch64). In the kernel of ggml-python 0.0.45 built on an x86-64 with FMA the disassembly shows two
contractions, both reproduced here: ``angle = fma(interp, 1 - mix, round(extrap * mix))`` and ``1.0f + 0.1f *
logf(...) = fma(0.1f, logf(...), 1.0f)``. ``fused=False`` rounds each product (a build without FMA). Without YaRN
(``ext_factor == 0``) nothing is fused and both give the same table.

Examples
--------
>>> import numpy as np
>>> c, s = caches(np.array([0, 1]), 4, 10000.0)
>>> c.dtype, c.shape, float(c[1, 0]), float(s[1, 0])
(dtype('float32'), (2, 2), 0.5403022766113281, 0.8414709568023682)
"""

from __future__ import annotations

import decimal
import math
from decimal import Decimal
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from ..dtypes import nearest_bits
from ._exact import round_checked
from .float32 import TRUSTED, cos, pow_, sin

__all__ = ["angles", "caches", "corr_dims", "logf", "theta_scale"]

_F = np.float32
_MAX_DIGITS = 2000
_PI_F = _F(math.pi)  # (float)M_PI


def _log_enclosure(x: Fraction, digits: int) -> tuple[Fraction, Fraction]:
    """``ln(x)`` within ``10**(5 - digits)`` relative (Decimal's ``ln`` is correctly rounded to ``digits``)."""
    with decimal.localcontext() as ctx:
        ctx.prec = digits
        v = Fraction((Decimal(x.numerator) / Decimal(x.denominator)).ln())
    err = abs(v) * Fraction(1, 10 ** (digits - 5))
    return v - err, v + err


def logf(x: npt.ArrayLike) -> np.ndarray:
    """Natural logarithm of float32 ``x``, correctly rounded to float32 (``logf`` as IEEE 754 recommends it).

    ``log(1) = 0``, ``log(0) = -inf``, ``log(inf) = inf``, ``log(x < 0) = nan``. Otherwise: numpy's float64 ``log``
    (trusted to ``2**-40`` relative) rounded where :func:`~posenc_cli.encodings._exact.round_checked` proves it, the
    rest by Decimal enclosures of rising precision (Ziv). ``ln x`` of a positive float32 other than 1 is
    transcendental (Lindemann-Weierstrass), so never a rounding boundary, and the loop ends.
    """
    a = np.asarray(x, _F)
    flat = a.reshape(-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        approx = np.log(flat.astype(np.float64))
    regular = np.isfinite(approx) & (flat != 1)
    out = approx.astype(_F)  # -inf, inf, nan and log(1) = +0 exactly
    rounded, undecided = round_checked(approx[regular], np.abs(approx[regular]) * TRUSTED, _F)
    rounded = np.asarray(rounded, _F)
    idx = np.flatnonzero(regular)
    for j in np.flatnonzero(undecided).tolist():
        q = Fraction(float(flat[idx[j]]))
        digits = 40
        while True:
            lo, hi = _log_enclosure(q, digits)
            bits = nearest_bits(lo, _F)
            if bits == nearest_bits(hi, _F):
                rounded[j] = np.array(bits, np.uint32).view(_F)
                break
            digits *= 2
            if digits > _MAX_DIGITS:
                raise ArithmeticError(f"could not round log({float(q)!r}) to float32")
    out[idx] = rounded
    return out.reshape(a.shape)


def _fma(a: npt.ArrayLike, b: npt.ArrayLike, c: npt.ArrayLike) -> np.ndarray:
    """``a * b + c`` of float32 arrays with one rounding (IEEE ``fusedMultiplyAdd``), broadcasting.

    ``a * b`` is exact in float64 (48 bits); ``s = a*b + c`` in float64 and its error ``e`` (TwoSum) give the exact
    sum ``s + e``. ``s`` rounds to float32 as the exact sum does unless ``s`` is a float32 midpoint and ``e != 0``,
    where ``e``'s sign picks the neighbour.
    """
    a64, b64, c64 = (np.asarray(v, _F).astype(np.float64) for v in (a, b, c))
    p = a64 * b64
    s = p + c64
    bp = s - c64
    e = (p - bp) + (c64 - (s - bp))
    r = s.astype(_F)
    r64 = r.astype(np.float64)
    with np.errstate(invalid="ignore"):
        toward_s = np.nextafter(r, np.where(s > r64, _F(np.inf), _F(-np.inf)).astype(_F))
    tie = (s != r64) & (s == (r64 + toward_s.astype(np.float64)) / 2) & (e != 0)
    if np.any(tie):
        up = np.maximum(r, toward_s)
        down = np.minimum(r, toward_s)
        r = np.where(tie, np.where(e > 0, up, down), r)
    return np.asarray(r, _F)


def theta_scale(n_dims: int, freq_base: float) -> np.float32:
    """``powf(freq_base, -2.0f/n_dims)`` correctly rounded: the ratio of consecutive pair angles."""
    return _F(pow_(_F(freq_base), _F(-2.0) / _F(n_dims)).reshape(()))


def corr_dims(n_dims: int, n_ctx_orig: int, freq_base: float, beta_fast: float, beta_slow: float) -> np.ndarray:
    """YaRN's ``[low, high]`` pair indices, float32 (``ggml_rope_yarn_corr_dims`` in ggml.c).

    ``n_ctx_orig = 0`` gives ``logf(0) = -inf``: ``[0, -inf]``, as in C.
    """
    log_base = logf(_F(freq_base))

    def corr_dim(n_rot: float) -> np.float32:
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = _F(n_ctx_orig) / ((_F(n_rot) * _F(2.0)) * _PI_F)
            return _F(_F(_F(n_dims) * logf(ratio)) / (_F(2.0) * log_base))

    start, end = np.floor(corr_dim(beta_fast)), np.ceil(corr_dim(beta_slow))
    low = _F(0.0) if _F(0.0) > start else start
    high = _F(n_dims - 1) if _F(n_dims - 1) < end else end
    return np.array([low, high], _F)


def _ramp_mix(n_pairs: int, dims: np.ndarray, ext_factor: float) -> np.ndarray:
    """``rope_yarn_ramp(low, high, 2i) * ext_factor`` for each pair ``i``."""
    low, high = dims[0], dims[1]
    width = _F(high - low)
    denom = _F(0.001) if _F(0.001) > width else width
    y = (np.arange(n_pairs).astype(_F) - low) / denom
    clamped = np.minimum(_F(1.0), np.maximum(_F(0.0), y))  # MIN(1, MAX(0, y)); y is never nan here
    return np.asarray((_F(1.0) - clamped) * _F(ext_factor), _F)


def angles(
    positions: npt.ArrayLike,
    n_dims: int,
    freq_base: float,
    freq_scale: float = 1.0,
    ext_factor: float = 0.0,
    beta_fast: float = 32.0,
    beta_slow: float = 1.0,
    n_ctx_orig: int = 0,
    freq_factors: npt.ArrayLike | None = None,
    fused: bool = True,
) -> np.ndarray:
    """The float32 angle ggml passes to ``cosf``/``sinf``, shape ``(len(positions), n_dims // 2)``.

    Parameters are :func:`caches`' (``attn_factor`` does not touch the angle).
    """
    if n_dims <= 0 or n_dims % 2:
        raise ValueError(f"n_dims must be a positive even integer, got {n_dims}")
    pos = np.asarray(positions).reshape(-1)
    n_pairs = n_dims // 2
    ts = theta_scale(n_dims, freq_base)
    theta = np.empty((pos.size, n_pairs), _F)
    theta[:, 0] = pos.astype(_F)  # (float)p: int64 to float, round to nearest
    for i in range(1, n_pairs):
        theta[:, i] = theta[:, i - 1] * ts
    if freq_factors is None:
        extrap = theta
    else:
        ff = np.asarray(freq_factors, _F).reshape(-1)
        if ff.size < n_pairs:
            raise ValueError(f"freq_factors must have at least n_dims/2 = {n_pairs} values, got {ff.size}")
        extrap = theta / ff[:n_pairs]
    interp = _F(freq_scale) * extrap
    if _F(ext_factor) == 0:
        return np.asarray(interp, _F)
    mix = _ramp_mix(n_pairs, corr_dims(n_dims, n_ctx_orig, freq_base, beta_fast, beta_slow), ext_factor)
    keep = _F(1.0) - mix
    if fused:
        return _fma(interp, np.broadcast_to(keep, interp.shape), extrap * mix)
    return np.asarray(interp * keep + extrap * mix, _F)


def caches(
    positions: npt.ArrayLike,
    n_dims: int,
    freq_base: float,
    freq_scale: float = 1.0,
    ext_factor: float = 0.0,
    attn_factor: float = 1.0,
    beta_fast: float = 32.0,
    beta_slow: float = 1.0,
    n_ctx_orig: int = 0,
    freq_factors: npt.ArrayLike | None = None,
    fused: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """ggml's float32 ``cos`` and ``sin`` caches, shape ``(len(positions), n_dims // 2)``, pair ``i`` in column ``i``.

    Parameters
    ----------
    positions : array_like of int
        Token positions (ggml's int32 position tensor).
    n_dims : int
        Rotated dimensions (even); ``n_dims // 2`` pairs.
    freq_base, freq_scale, ext_factor, attn_factor, beta_fast, beta_slow, n_ctx_orig
        ``ggml_rope_ext``'s parameters (each float taken as a float32, as the C API receives it).
    freq_factors : array_like of float, optional
        ggml's ``c`` tensor (a GGUF's ``rope_freqs``): pair ``i``'s angle is divided by ``freq_factors[i]``.
    fused : bool
        Contract the two YaRN expressions into fused multiply-adds as GCC does for ggml's native build (module
        docstring); only matters when ``ext_factor != 0``.

    Returns
    -------
    cos, sin : numpy.ndarray of float32

    Examples
    --------
    >>> import numpy as np
    >>> c, s = caches(np.array([3]), 2, 10000.0, freq_scale=0.5)  # cos(1.5), sin(1.5)
    >>> float(c[0, 0]), float(s[0, 0])
    (0.07073719799518585, 0.9974949955940247)
    """
    theta = angles(positions, n_dims, freq_base, freq_scale, ext_factor, beta_fast, beta_slow, n_ctx_orig,
                   freq_factors, fused)  # fmt: skip
    mscale = _F(attn_factor)
    if _F(ext_factor) != 0:
        log_term = logf(_F(1.0) / _F(freq_scale))
        factor = _fma(_F(0.1), log_term, _F(1.0)) if fused else _F(1.0) + _F(0.1) * log_term
        mscale = _F(mscale * _F(factor))
    return np.asarray(cos(theta) * mscale, _F), np.asarray(sin(theta) * mscale, _F)
