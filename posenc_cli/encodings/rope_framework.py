"""RoPE as HF transformers computes it: ``arithmetic="framework"``, the float32 tables a model actually saw.

posenc's exact caches are the real ``cos(p * f_k)`` correctly rounded. transformers computes ``inv_freq`` and the
caches in float32 (``src/transformers/modeling_rope_utils.py``, the ``_compute_*_parameters`` functions of
``ROPE_INIT_FUNCTIONS``, and each model's ``*RotaryEmbedding.forward``), and its float32 angle ``fl(p * inv_freq)``
alone is off by up to ``|angle| 2**-24``: about 3e-4 at 4k positions. This module follows that code's operations in
its order: ``+ - * /`` as numpy's float32 (IEEE, as torch's CPU kernels), ``pow``, ``cos``, ``sin`` correctly
rounded in float32 (:mod:`posenc_cli.encodings.float32`), the Python-side float64 arithmetic (YaRN's correction range
and attention factor, dynamic NTK's base, llama3's wavelength thresholds) as :mod:`posenc_cli.encodings.rope`
resolves it, and a Python float met by a float32 tensor rounded to float32 first (torch's scalar promotion).

``inv_freq`` (:func:`inv_freq`), with ``e_k = fl32(2k / dim)`` (``torch.arange(0, dim, 2).float() / dim``) and
``pw_k = pow(fl32(theta), e_k)``:

- default (``none``): ``1 / pw_k`` (``1.0 / t`` is ``t.reciprocal()``, one rounding);
- ``linear``: that, then ``/ fl32(factor)`` (``inv_freq /= factor``); ``proportional``: the first ``angles``
  frequencies over ``head_dim``, zeros after, then ``/ fl32(factor)``;
- ``dynamic``: the default with the rescaled base ``fl32(base)`` (the float64 ``base * (...) ** (dim / (dim - 2))``
  at ``max(seq_len, max_position_embeddings)``);
- ``llama3``: ``wavelen = (1 / inv) * fl32(2 pi)`` (``2 * math.pi / inv_freq`` is ``inv_freq.reciprocal() * 2pi``),
  ``inv / fl32(factor)`` where ``wavelen > original / low_freq_factor``, the smoothing
  ``s = ((1 / wavelen) * original - low) / (high - low)`` and ``((1 - s) * inv) / factor + s * inv`` in the band
  between, every step one float32 rounding; ``low == high`` (Llama 4) leaves no band;
- ``yarn``: ``extrapolation = 1 / pw``, ``interpolation = 1 / (fl32(factor) * pw)``, the ramp
  ``clamp((k - low) / (high - low), 0, 1)`` over ``k < dim / 2`` in float32, ``x = 1 - ramp``, and
  ``interpolation * (1 - x) + extrapolation * x``;
- ``longrope``: ``1 / (fl32(ext_k) * pw_k)`` with the short or the long factors.

The caches (:func:`angles`, :func:`cache_rows`): ``fl32(fl32(p) * inv_k)`` (``position_ids.float() * inv_freq``: a
position past ``2**24`` rounds as transformers rounds it), then ``cos`` or ``sin`` correctly rounded, then one
float32 product with ``fl32(attention_scaling)`` when it is folded in (``emb.cos() * self.attention_scaling``).
Other element types are rounded from those float32 values, as ``.to(dtype)`` does.

Examples
--------
>>> from posenc_cli.encodings.rope import resolve
>>> spec = resolve(seq_len=8, head_dim=4, theta=10000.0)
>>> inv_freq(spec).tolist()  # 1 / 10000**0.5 rounded to float32
[1.0, 0.009999999776482582]
>>> float(cache_rows(spec, "cos", 1, 2)[0, 1])  # cos(fl32(1 * 0.01)), rounded to float32
0.9999499917030334
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import SpecError
from . import float32 as f32ops
from . import ggml_rope
from .float32 import f32
from .rope import RopeSpec, frequencies

__all__ = ["angles", "cache_pair", "cache_rows", "check_ggml", "ggml_cache_rows", "ggml_inv_freq", "inv_freq"]


def _exponents(dim: int, count: int | None = None) -> np.ndarray:
    """``fl32(2k / dim)`` for ``k < count`` (default ``dim / 2``): ``torch.arange(0, dim, 2).float() / dim``."""
    k2 = np.arange(0, 2 * (dim // 2 if count is None else count), 2, dtype=np.float32)
    return k2 / np.float32(dim)


def _powers(base: float, dim: int, count: int | None = None) -> np.ndarray:
    """``base ** e_k`` with the base rounded to float32 (a Python float against a float32 tensor)."""
    e = _exponents(dim, count)
    return f32ops.pow_(np.full(e.shape, f32(base)), e)


def _reciprocal(x: np.ndarray) -> np.ndarray:
    return (np.float32(1) / x).astype(np.float32)


def _num(spec: RopeSpec, key: str, default: float) -> float:
    value = spec.given.get(key, default)
    assert isinstance(value, (int, float))
    return float(value)


def _llama3(spec: RopeSpec, inv: np.ndarray) -> np.ndarray:
    factor = f32(_num(spec, "factor", 1.0))
    original = _num(spec, "original_max_positions", 8192.0)
    low, high = _num(spec, "low_freq_factor", 1.0), _num(spec, "high_freq_factor", 4.0)
    low_wavelen, high_wavelen = f32(original / low), f32(original / high)  # float64 quotients met by float32
    wavelen = _reciprocal(inv) * f32(2 * math.pi)
    scaled = np.where(wavelen > low_wavelen, inv / factor, inv).astype(np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):  # low == high: no band, its NaNs never taken
        smooth = (_reciprocal(wavelen) * f32(original) - f32(low)) / f32(high - low)
        smoothed = ((np.float32(1) - smooth) * scaled) / factor + smooth * scaled
    medium = ~(wavelen < high_wavelen) & ~(wavelen > low_wavelen)
    return np.where(medium, smoothed, scaled).astype(np.float32)


def _yarn(spec: RopeSpec, dim: int) -> np.ndarray:
    low, high = spec.yarn_range if spec.yarn_range is not None else (0.0, 0.0)
    factor = f32(spec.yarn_factor if spec.yarn_factor is not None else 1.0)
    powers = _powers(spec.theta, dim)
    extrapolation = _reciprocal(powers)
    interpolation = _reciprocal(factor * powers)
    if low == high:
        high += 0.001
    k = np.arange(dim // 2, dtype=np.float32)
    ramp = np.clip((k - f32(low)) / f32(high - low), np.float32(0), np.float32(1)).astype(np.float32)
    x = np.float32(1) - ramp
    blended: np.ndarray = (interpolation * (np.float32(1) - x) + extrapolation * x).astype(np.float32)
    return blended


def inv_freq(spec: RopeSpec) -> np.ndarray:
    """``inv_freq`` (``head_dim / 2``,) as transformers' ``ROPE_INIT_FUNCTIONS[scaling]`` computes it, float32."""
    dim = spec.head_dim
    if spec.scaling == "yarn":
        return _yarn(spec, dim)
    if spec.scaling == "longrope":
        assert spec.ext_factors is not None
        return _reciprocal(f32(spec.ext_factors) * _powers(spec.theta, dim))
    if spec.scaling == "proportional":
        rotated = dim // 2 if spec.angles is None else spec.angles
        inv = np.zeros(dim // 2, np.float32)
        inv[:rotated] = _reciprocal(_powers(spec.theta, dim, rotated))
        scaled: np.ndarray = (inv / f32(_num(spec, "factor", 1.0))).astype(np.float32)
        return scaled
    inv = _reciprocal(_powers(spec.base, dim))  # dynamic: spec.base is the rescaled base
    if spec.scaling == "linear":
        linear: np.ndarray = (inv / f32(_num(spec, "factor", 1.0))).astype(np.float32)
        return linear
    if spec.scaling == "llama3":
        return _llama3(spec, inv)
    return inv


def angles(spec: RopeSpec, positions: np.ndarray, inv: np.ndarray | None = None) -> np.ndarray:
    """``fl32(fl32(p) * inv_freq[k])``, shape ``(len(positions), head_dim / 2)``: forward's ``freqs``."""
    inv = inv_freq(spec) if inv is None else inv
    p = np.asarray(positions).astype(np.float32)
    out: np.ndarray = (p[:, None] * inv[None, :]).astype(np.float32, copy=False)
    return out


def cache_rows(
    spec: RopeSpec, part: str, first_row: int, stop_row: int, positions: np.ndarray | None = None
) -> np.ndarray:
    """The float32 ``cos`` or ``sin`` cache at rows ``first_row .. stop_row - 1`` (or at ``positions``), columns in
    the layout's order (:func:`~posenc_cli.encodings.rope.frequencies`), the attention scaling folded in when the
    spec folds it."""
    theta = angles(spec, np.arange(first_row, stop_row, dtype=np.int64) if positions is None else positions)
    return _scaled(spec, f32ops.trig_columns(theta, frequencies(spec), part == "cos"))


def cache_pair(spec: RopeSpec, first_row: int, stop_row: int) -> tuple[np.ndarray, np.ndarray]:
    """``cache_rows(spec, "cos", ...)`` and ``cache_rows(spec, "sin", ...)`` at once: the angles made once, and
    both values of each from one pass (:func:`~posenc_cli.encodings.float32.cos_sin_columns`)."""
    positions = np.arange(first_row, stop_row, dtype=np.int64)
    cos, sin = f32ops.cos_sin_products(positions, inv_freq(spec), frequencies(spec))  # the angles of :func:`angles`
    return _scaled(spec, cos), _scaled(spec, sin)


def _scaled(spec: RopeSpec, values: np.ndarray) -> np.ndarray:
    if spec.fold_scaling and f32(spec.attention_scaling) != 1:  # x * 1 is x, bit for bit (NaN, -0.0 included)
        values = (values * f32(spec.attention_scaling)).astype(np.float32)
    return values


# ------------------------------------------------------------------------------------- llama.cpp's ggml (CPU)
#: The scalings ``arithmetic="ggml"`` makes: llama.cpp passes plain, linear (``freq_scale = 1 / factor``) and YaRN
#: (``ext_factor = 1``) to ggml's rope as these parameters alone; llama3 and LongRoPE need the model's GGUF
#: ``rope_freqs`` factors, which posenc does not yet compute as llama.cpp's converter does.
GGML_SCALINGS = ("none", "linear", "yarn")


def check_ggml(spec: RopeSpec) -> None:
    """Refuse, naming the parameter, what ``arithmetic="ggml"`` does not make (:data:`GGML_SCALINGS`; YaRN with
    DeepSeek's mscale or a given attention factor, YaRN without truncation; YaRN's scaling left out of cos/sin)."""
    if spec.scaling not in GGML_SCALINGS:
        raise SpecError(
            f"arithmetic ggml makes scaling {', '.join(GGML_SCALINGS)}, not {spec.scaling} (use framework or exact)",
            param="arithmetic",
        )
    if spec.scaling == "yarn":
        for key in ("mscale", "mscale_all_dim", "attention_factor"):
            if key in spec.given:
                raise SpecError(f"arithmetic ggml makes YaRN without {key} (ggml's kernel sets the scaling)",
                                param=key)  # fmt: skip
        if spec.given.get("truncate") is False:
            raise SpecError("arithmetic ggml makes YaRN with a truncated correction range only", param="truncate")
        if not spec.fold_scaling:
            raise SpecError(
                "arithmetic ggml folds YaRN's attention scaling into cos/sin, as ggml's kernel does: drop "
                "--no-attention-scaling",
                param="attention_scaling",
            )


def _ggml_settings(spec: RopeSpec) -> dict[str, object]:
    factor = _num(spec, "factor", 1.0) if spec.scaling == "linear" else spec.yarn_factor or 1.0
    settings: dict[str, object] = {"n_dims": spec.head_dim, "freq_base": spec.theta}
    if spec.scaling in ("linear", "yarn"):
        settings["freq_scale"] = 1.0 / factor
    if spec.scaling == "yarn":
        settings.update(
            ext_factor=1.0, beta_fast=_num(spec, "beta_fast", 32.0), beta_slow=_num(spec, "beta_slow", 1.0),
            n_ctx_orig=int(_num(spec, "original_max_positions", 0.0)),
        )  # fmt: skip
    return settings


def ggml_cache_rows(
    spec: RopeSpec, part: str, first_row: int, stop_row: int, positions: np.ndarray | None = None
) -> np.ndarray:
    """The float32 ``cos`` or ``sin`` cache as ggml's CPU rope computes it (:mod:`posenc_cli.encodings.ggml_rope`),
    columns in the layout's order (pair ``i`` of ggml is frequency ``k = i``)."""
    at = np.arange(first_row, stop_row, dtype=np.int64) if positions is None else positions
    cos, sin = ggml_rope.caches(at, **_ggml_settings(spec))  # type: ignore[arg-type]
    values: np.ndarray = (cos if part == "cos" else sin)[:, frequencies(spec)]
    return values


def ggml_inv_freq(spec: RopeSpec) -> np.ndarray:
    """ggml holds no ``inv_freq``: its angle at position 1 for each pair (the running product of ``theta_scale``,
    times ``freq_scale`` and YaRN's blend), the rate a cache built from this array would rotate by."""
    settings = {k: v for k, v in _ggml_settings(spec).items()}
    out: np.ndarray = ggml_rope.angles(np.array([1]), **settings)[0]  # type: ignore[arg-type]
    return out.astype(np.float32)
