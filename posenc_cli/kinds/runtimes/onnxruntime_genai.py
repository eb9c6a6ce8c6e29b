"""``--runtime onnxruntime-genai``: the ``cos_cache``/``sin_cache`` that ONNX Runtime GenAI's model builder bakes.

The builder (microsoft/onnxruntime-genai, ``src/python/py/models/builder.py`` and ``builders/``; followed at commit
``a0c04eb``) writes each model's RoPE table once, as constants of the ONNX graph that its com.microsoft
``RotaryEmbedding`` and ``GroupQueryAttention`` nodes read (their ``cos_cache`` and ``sin_cache`` inputs). It
makes them in ``Model.make_rotary_embedding_caches`` (``builders/base.py``), from
``make_rotary_embedding_caches_from_scratch``:

- **Shape** ``(context_length, dim / 2)``: one column per frequency, the first half of ``cat(freqs, freqs)``
  (posenc's ``half-width`` layout), ``dim = int(head_dim * partial_rotary_factor)`` (a partial rotary model's
  ``rotary_dim``: Phi-2's 32 of 80). The layout flag does not change it: the op's ``interleaved`` attribute
  (ChatGLM's 1) says how the pairs are taken.
- **Length** ``context_length``: the config's ``seq_length``, else ``max_position_embeddings``: here ``-n``, which
  a ``--config`` sets to its ``max_position_embeddings``.
- **Element type** the builder's io dtype (``float16`` for CUDA and DirectML, ``float32`` for the CPU,
  ``bfloat16`` where asked): ``--dtype``. The float32 values are cast once (``.to(io_dtype)``).
- **Names** ``cos_cache`` and ``sin_cache``; LongRoPE's two caches (``Phi3MiniLongRoPEModel``, through
  ``make_rotary_embedding_multi_cache``) ``cos_cache_small``/``sin_cache_small`` (``original_max_position_embeddings``
  rows, the short factors) and ``cos_cache_large``/``sin_cache_large`` (``context_length`` rows, the long factors),
  the two branches of the ``If`` node that picks one by the sequence length. DirectML and TensorRT-RTX builds hold
  instead one ``cos_cache`` of both, the small rows first (``np.concatenate``).

The scalings it makes, as ``make_rope_init`` reads a config (``rope_scaling``, or ``rope_parameters``):

``none``
    ``inv_freq = 1 / theta**(2k / dim)``.
``linear`` (``rope_type: linear``, the base ``Model``'s reading)
    ``1 / (factor * theta**(2k / dim))``.
``llama3`` (``LlamaModel``: ``low_freq_factor`` in the dict)
    transformers' llama3 rule: keep the short wavelengths, divide the long ones by ``factor``, smooth between.
``yarn`` (the base ``Model``: ``beta_fast`` in the dict)
    ``make_inv_freq_rescaled_with_ntk``: transformers' YaRN with the correction range never floored or ceiled
    (``truncate: false``), which the builder asserts lies within ``0 < low < high < head_dim / 2 - 1``;
    ``factor``, ``beta_fast`` and ``beta_slow`` read from the config, never defaulted. The cos/sin multiplier
    ``make_mscale``: ``get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim)`` when both are given,
    ``mscale`` itself when it alone is (Ministral 3), else ``0.1 ln factor + 1``; ``attention_factor`` is not read.
``longrope`` (``Phi3MiniLongRoPEModel``: ``short_factor`` in the dict, ``max_position_embeddings`` beyond
``original_max_position_embeddings``)
    both caches, each ``1 / (factor_k * theta**(2k / dim))``, times ``sqrt(1 + ln s / ln original)`` with ``s =
    max_position_embeddings / original``; ``factor`` and ``attention_factor`` are not read, nor are
    ``short_mscale``/``long_mscale`` (posenc's configs do not carry them).

What the builder does not make is refused, naming the option: dynamic NTK and proportional scaling (it reads
neither), YaRN without ``beta_fast``/``beta_slow``/``factor`` or with ``attention_factor``, ``--truncate``, a partial
rotary dimension or a range outside its assertion; LongRoPE with ``factor`` or ``attention_factor``, or not longer
than ``original_max_positions``; ``--no-attention-scaling`` where it folds one; a one-row cache (its ``squeeze()``
drops the axis); Gemma 3's ``--layer-type`` caches (``cos_cache_global``/``cos_cache_local``) and Qwen2.5-VL's
M-RoPE, made by code of their own; ``--arithmetic ggml``.

``--arithmetic exact``: every value correctly rounded from the real formula above (the yarn correction range and
the multiplier the float64 the builder computes); ``framework``: the builder's own float32 operations
(:mod:`posenc_cli.encodings.ort_rope`). The table's parameters are posenc's rope parameters of the same caches
(``layout`` ``half-width``, yarn's ``truncate`` false, LongRoPE's ``max_positions``) and ``runtime``.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from ...dtypes import ElementType
from ...encodings import ort_rope
from ...encodings import rope as rope_encoding
from ...errors import SpecError
from ...system.capacity import check_memory
from ...table import Array, RowSource, Table
from .request import Request

__all__ = ["MULTI_CACHE", "SCALINGS", "table"]

#: The scalings the builder makes (module docstring).
SCALINGS = ("none", "linear", "llama3", "yarn", "longrope")
#: LongRoPE's caches: posenc's names of the builder's ``If`` branches, the short factors' (``small``) first.
MULTI_CACHE = ("small", "large")
#: The rope keywords of a scaling mode (:func:`posenc_cli.encodings.rope.resolve`'s).
_MODES = (
    "factor", "original_max_positions", "max_positions", "low_freq_factor", "high_freq_factor", "beta_fast",
    "beta_slow", "truncate", "mscale", "mscale_all_dim", "attention_factor", "short_factor", "long_factor",
)  # fmt: skip
_WHY = "--runtime onnxruntime-genai"


def _refuse(message: str, param: str) -> SpecError:
    return SpecError(f"{_WHY}: {message}", param=param)


def _checked(request: Request) -> tuple[str, int]:
    """The scaling and the context length, every setting the builder does not make refused."""
    request.refuse_others()
    s = request.settings
    scaling = s["scaling"] or "none"
    if scaling not in SCALINGS:
        raise _refuse(f"the builder makes scaling {', '.join(SCALINGS)}, not {scaling} (it bakes those caches "
                      "unscaled)", "scaling")  # fmt: skip
    if request.arithmetic not in ("exact", "framework"):
        raise _refuse(f"arithmetic exact or framework (the builder's float32), not {request.arithmetic}", "arithmetic")
    if request.layer_type is not None:
        raise _refuse(
            "the builder makes Gemma 3's caches per layer type (cos_cache_global, cos_cache_local) with code of its "
            "own, which posenc does not reproduce; leave out --layer-type and --runtime",
            "layer_type",
        )
    if s.get("mrope_section") is not None:
        raise _refuse("the builder makes Qwen2.5-VL's M-RoPE caches with code of its own, which posenc does not "
                      "reproduce", "mrope_section")  # fmt: skip
    seq_len = request.seq_len
    if seq_len is None:
        raise _refuse("the caches have context_length rows: give -n (or a --config with max_position_embeddings)",
                      "seq_len")  # fmt: skip
    if seq_len < 2:
        raise _refuse(f"the builder's squeeze() drops the axis of a cache of {seq_len} row: -n must be at least 2",
                      "seq_len")  # fmt: skip
    if scaling in ("yarn", "longrope") and not request.attention_scaling:
        raise _refuse(f"the builder folds {scaling}'s scaling into cos_cache and sin_cache: leave out "
                      "--no-attention-scaling", "attention_scaling")  # fmt: skip
    if scaling == "yarn":
        _check_yarn(s)
    if scaling == "longrope":
        for key in ("factor", "attention_factor"):
            if s[key] is not None:
                raise _refuse(f"the builder's LongRoPE does not read {key} (its scaling is sqrt(1 + ln s / ln "
                              "original), s = max_positions / original); leave it out", key)  # fmt: skip
        if s["max_positions"] is not None and s["max_positions"] != seq_len:
            raise _refuse(
                f"the builder's large cache has max_position_embeddings rows: -n {seq_len} and max_positions "
                f"{s['max_positions']} disagree; give one",
                "seq_len",
            )
        original = s["original_max_positions"]
        if original is not None and seq_len <= original:
            raise _refuse(
                f"the builder makes LongRoPE's caches only when max_position_embeddings ({seq_len}) exceeds "
                f"original_max_positions ({original}); shorter, it bakes the unscaled cache",
                "seq_len",
            )
    return scaling, seq_len


def _check_yarn(s: dict[str, Any]) -> None:
    """The builder's YaRN: ``factor``, ``beta_fast``, ``beta_slow`` given, no ``attention_factor``, never truncated,
    over the whole head, with its correction range within its assertion."""
    for key in ("factor", "beta_fast", "beta_slow"):
        if s[key] is None:
            raise _refuse(f"the builder applies YaRN only with factor, beta_fast and beta_slow in the config (it "
                          f"defaults none of them): give --{key.replace('_', '-')}", key)  # fmt: skip
    if s["attention_factor"] is not None:
        raise _refuse("the builder's YaRN does not read attention_factor (its scaling is make_mscale's); leave it out",
                      "attention_factor")  # fmt: skip
    if s["truncate"]:
        raise _refuse("the builder never floors or ceils YaRN's correction range: leave out --truncate", "truncate")
    if s["rotary_dim"] is not None and s["rotary_dim"] != s["head_dim"]:
        raise _refuse("the builder's YaRN ramps over head_dim / 2 frequencies: not with a partial --rotary-dim",
                      "rotary_dim")  # fmt: skip
    if s["original_max_positions"] is None or s["head_dim"] is None:
        return  # posenc's own checks name what is missing
    theta = 10000.0 if s["theta"] is None else float(s["theta"])
    d_half = s["head_dim"] / 2

    def corr(beta: float) -> float:  # the builder's float64 (libm's log: a check only)
        arg = s["original_max_positions"] / (beta * 2 * math.pi)
        return d_half * math.log(arg) / math.log(theta) if arg > 0 and theta != 1 else math.nan

    low, high = corr(s["beta_fast"]), corr(s["beta_slow"])
    if not 0 < low < high < d_half - 1:
        raise _refuse(
            f"the builder asserts 0 < low < high < head_dim / 2 - 1 for YaRN's correction range; beta_fast "
            f"{s['beta_fast']:g} and beta_slow {s['beta_slow']:g} give low {low:.6g}, high {high:.6g} (head_dim "
            f"{s['head_dim']}, theta {theta:g}, original_max_positions {s['original_max_positions']})",
            "beta_fast",
        )


def _overrides(scaling: str, s: dict[str, Any]) -> dict[str, Any]:
    """The rope keywords that make posenc's caches the builder's: half-width; yarn untruncated, ``mscale`` alone as
    the multiplier itself (as ``attention_factor``)."""
    out: dict[str, Any] = {"layout": "half-width"}
    if scaling == "yarn":
        out["truncate"] = False
        if s["mscale"] and not s["mscale_all_dim"]:
            out.update(attention_factor=s["mscale"], mscale=None)
    return out


def _spec(request: Request, scaling: str, seq_len: int, overrides: dict[str, Any]) -> rope_encoding.RopeSpec:
    """posenc's resolved RoPE of these settings (already checked by :meth:`Request.caches`)."""
    s = {**request.settings, **overrides}
    dim = s["rotary_dim"] if s["rotary_dim"] is not None else s["head_dim"]
    modes = {key: s[key] for key in _MODES if s.get(key) is not None}
    theta = 10000.0 if s["theta"] is None else s["theta"]
    return rope_encoding.resolve(seq_len=seq_len, head_dim=dim, theta=theta, layout="half-width", scaling=scaling,
                                 **modes)  # fmt: skip


def _in_type(values: np.ndarray, element: ElementType) -> np.ndarray:
    """Float32 values in ``element``'s type, each rounded once (``.to(io_dtype)``)."""
    y = np.asarray(values, np.float64)
    out, undecided = element.convert(y)
    for at in np.argwhere(undecided):
        out[tuple(at)] = element.from_exact(Fraction(float(y[tuple(at)])))
    return out


def _framework(spec: rope_encoding.RopeSpec, part: str, rows: int, element: ElementType, lazy: bool) -> Array:
    inv = ort_rope.inv_freq(spec)
    width = spec.head_dim // 2
    source = RowSource((rows, width), element.storage,
                       lambda lo, hi: _in_type(ort_rope.cache_rows(spec, part, lo, hi, inv), element))  # fmt: skip
    return source if lazy else np.asarray(source)


def table(request: Request) -> Table:
    """The builder's caches for ``request`` (module docstring)."""
    scaling, seq_len = _checked(request)
    s = request.settings
    overrides = _overrides(scaling, s)
    lengths = {"": seq_len}
    if scaling == "longrope":
        overrides["max_positions"] = seq_len
        original = s["original_max_positions"]
        lengths = {"_small": original, "_large": seq_len} if original is not None else {"": seq_len}
    arrays: dict[str, Array] = {}
    axes: dict[str, tuple[str, ...]] = {}
    params: dict[str, Any] = {}
    for suffix, rows in lengths.items():
        spec = _spec(request, scaling, rows, overrides) if request.arithmetic == "framework" else None
        made = request.caches(seq_len=rows, lazy=request.lazy or spec is not None, **overrides)
        if spec is not None and not request.lazy:
            check_memory(2 * rows * spec.head_dim // 2 * request.work_per_value,
                         f"the RoPE caches ({rows} x {spec.head_dim // 2}) built whole")  # fmt: skip
        if not params or suffix == "_large":
            params = dict(made.params)
        for part in ("cos", "sin"):
            name = f"{part}_cache{suffix}"
            if spec is None:
                arrays[name] = made.arrays[part]
            else:
                arrays[name] = _framework(spec, part, rows, request.element, request.lazy)
            axes[name] = ("original_max_positions" if suffix == "_small" else "seq_len", "freqs")
    if "mscale" in overrides:  # mscale alone is the multiplier: recorded as given
        params.pop("attention_factor", None)
        params["mscale"] = s["mscale"]
    return Table("rope", arrays, params, axes)
