"""``posenc rope --runtime tensorrt-llm``: TensorRT-LLM's RoPE table, the arrays its GPT attention plugin (and its
PyTorch backend's TRTLLM attention) reads, as ``RopeEmbeddingUtils`` in ``tensorrt_llm/functional.py`` makes them
(NVIDIA/TensorRT-LLM, commit 2a9abd9536aa62ad3e4b9314be9286b1b1be523b; the PyTorch backend calls them from
``RopeParams.create_rope_const_params`` in ``tensorrt_llm/_torch/attention_backend/interface.py``):

- ``rotary_inv_freq`` (float32, ``(dim/2,)``, axis ``freqs``): the frequencies;
- ``embed_positions_for_gpt_attention`` (float32, ``(1, rows * dim)``, axes ``batch`` and
  ``positions_freqs_cos_sin``): the fused table, row-major ``(rows, dim/2, 2)``: for each position ``p`` and
  frequency ``k`` the pair ``cos(p f_k), sin(p f_k)`` (the plugin's ``float2``), times the attention scaling for
  YaRN and LongRoPE. Position 0 holds ``A, 0`` pairs (``A`` the scaling, 1 without one).

``dim`` is ``rotary_dim`` (partial rotary) or ``head_dim``; ``rows`` is ``seq_len``, which defaults to the config's
``max_position_embeddings`` (TensorRT-LLM's ``max_positions``); LongRoPE's table has ``max(seq_len,
original_max_positions)`` rows. The table is the same for the plugin's ``rope_gpt_neox`` and ``rope_gptj`` rotations
(``--layout`` is recorded, and changes nothing). Per scaling (``RotaryScalingType``), the function that makes it:

``none``, ``linear`` (``create_sinusoidal_positions_for_attention_plugin``)
    ``inv_freq = scale / (theta ** (arange(0, dim, 2) / dim)).astype(float32)``: the power in float64, rounded to
    float32, ``scale`` 1, or ``1.0 / factor`` for linear.
``llama3`` (the same, then ``apply_llama3_scaling``)
    ``1.0 / (...)`` as above, then each frequency by HF's llama3 rule in float64 (numpy 1's promotion of a
    ``float32`` scalar met by a Python float; TensorRT-LLM pins ``numpy<2``), rounded to float32.
``dynamic`` (the same function's ``alpha`` branch)
    ``1.0 / (theta * alpha ** (dim / (dim - 2))) ** (arange(0, dim, 2, float32) / dim)`` in float32, with the
    ``alpha`` of 1 that ``RopeParams`` gives a config without one (HF's ``dynamic``: ``factor`` and
    ``max_positions`` are recorded, the table is at ``theta``; the plugin rescales the base at run time).
``yarn`` (``create_sinusoidal_positions_yarn``, torch float32, ``duplicate_data=False``)
    HF's YaRN frequencies with the correction range floored and ceiled; ``factor`` as given (1 when absent: the
    base is not derived from ``max_positions``), scaled by ``get_mscale(factor, mscale) / get_mscale(factor,
    mscale_all_dim)`` with ``RopeParams``' defaults ``mscale`` 1 and ``mscale_all_dim`` 0 (so ``0.1 ln factor + 1``
    without them; ``attention_factor`` and ``truncate: false`` are refused: TensorRT-LLM reads neither).
``longrope`` (``create_sinusoidal_positions_long_rope``)
    ``inv_freq = 1 / theta ** (arange(0, dim, 2, float32) / dim) / long_factor`` in float32 (the long factors:
    ``max_seq_len`` is unset), scaled by ``sqrt(1 + ln(seq_len / original) / ln(original))`` (1 when ``seq_len <=
    original``); ``factor`` and ``attention_factor`` do not enter. No ``rotary_inv_freq`` (the function returns
    none).

``--arithmetic exact``: every value correctly rounded from that real formula (the float64 ``alpha``/attention
scaling as TensorRT-LLM's Python computes it). ``framework``: TensorRT-LLM's own operations in order, in its types
(numpy 1's float64 and float32 arithmetic, torch's float32 for YaRN), ``pow``, ``log``, ``cos`` and ``sin``
correctly rounded in their type (numpy's own float32 ``cos``/``sin`` are within an ulp of these). The tables are
float32 (``--dtype float64`` holds the same values, for ``identify``); ``proportional``, position ids and M-RoPE
ids are refused.
"""

from __future__ import annotations

import decimal
import math
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

import numpy as np

from ...encodings import float32 as f32ops
from ...encodings import float64 as f64ops
from ...encodings.float32 import f32
from ...errors import SpecError
from ...system.capacity import check_memory
from ...table import Param as Value
from ...table import Table
from .request import Request

__all__ = ["INV_FREQ", "SCALINGS", "TABLE", "table"]

#: The runtime's names of its arrays.
INV_FREQ = "rotary_inv_freq"
TABLE = "embed_positions_for_gpt_attention"
#: The scalings TensorRT-LLM builds a table for (its ``RotaryScalingType`` less ``mrope``).
SCALINGS = ("none", "linear", "dynamic", "llama3", "yarn", "longrope")
_ELEMENTS = ("float32", "float64")


def _ln(x: float) -> float:
    """``math.log`` correctly rounded (60 digits decide the float64 rounding of these Python-side logarithms)."""
    return float(Decimal(x).ln(decimal.Context(prec=60)))


def _yarn_scaling(settings: Mapping[str, Any]) -> float:
    """``create_sinusoidal_positions_yarn``'s ``_mscale``, in float64 as its Python computes it."""
    factor = settings["factor"] if settings["factor"] is not None else 1.0
    mscale = settings["mscale"] if settings["mscale"] is not None else 1.0
    mscale_all_dim = settings["mscale_all_dim"] if settings["mscale_all_dim"] is not None else 0.0

    def get_mscale(scale: float, m: float) -> float:
        return 1.0 if scale <= 1 else 0.1 * m * _ln(scale) + 1.0

    return float(get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim))


def _checked(request: Request) -> tuple[str, int, int]:
    """The scaling, the table's positions (``seq_len``) and rows; refusals for what TensorRT-LLM does not make."""
    request.refuse_others()
    s = request.settings
    scaling = s["scaling"] or "none"
    if scaling not in SCALINGS:
        raise SpecError(
            f"--runtime tensorrt-llm makes scaling {', '.join(SCALINGS)}, not {scaling} (TensorRT-LLM's "
            "RotaryScalingType has none)",
            param="scaling",
        )
    if request.element.name not in _ELEMENTS:
        raise SpecError(
            f"--runtime tensorrt-llm writes float32 (TensorRT-LLM's rotary_inv_freq and "
            f"embed_positions_for_gpt_attention are float32 buffers) or float64, not {request.element.name}",
            param="dtype",
        )
    if request.arithmetic not in ("exact", "framework"):
        raise SpecError(
            f"--runtime tensorrt-llm computes in arithmetic exact or framework, not {request.arithmetic}",
            param="arithmetic",
        )
    if request.seq_len is None:
        raise SpecError(
            "--runtime tensorrt-llm needs seq_len: TensorRT-LLM's table has max_position_embeddings rows (give "
            "--seq-len, or a --config that has it)",
            param="seq_len",
        )
    if scaling == "yarn":
        if s["truncate"] is False:
            raise SpecError("TensorRT-LLM's YaRN always floors and ceils the correction range: drop truncate false",
                            param="truncate")  # fmt: skip
        if s["attention_factor"] is not None:
            raise SpecError(
                "TensorRT-LLM's YaRN scales by its mscale and mscale_all_dim and reads no attention_factor: drop it",
                param="attention_factor",
            )
    if scaling == "longrope" and s["attention_factor"] is not None:
        raise SpecError(
            "TensorRT-LLM's LongRoPE scales by sqrt(1 + ln(seq_len / original) / ln(original)) and reads no "
            "attention_factor: drop it",
            param="attention_factor",
        )
    dim = s["rotary_dim"] or s["head_dim"]
    if scaling == "dynamic" and dim == 2:
        raise SpecError("TensorRT-LLM's dynamic scaling needs a rotary dim above 2 (its exponent is dim / (dim - 2))",
                        param="head_dim")  # fmt: skip
    if scaling in ("yarn", "longrope") and not request.attention_scaling:
        raise SpecError(
            f"TensorRT-LLM folds {scaling}'s attention scaling into its table: drop --no-attention-scaling",
            param="attention_scaling",
        )
    rows = request.seq_len
    if scaling == "longrope" and s["original_max_positions"] is not None:
        rows = max(rows, int(s["original_max_positions"]))
    return scaling, request.seq_len, rows


def _overrides(request: Request, scaling: str, seq_len: int) -> dict[str, Any]:
    """What posenc's own caches (:meth:`Request.caches`) take to hold TensorRT-LLM's values: each frequency once
    (``half-width``), and the scaling as TensorRT-LLM reads it."""
    s = request.settings
    over: dict[str, Any] = {"layout": "half-width"}
    if scaling == "dynamic":  # alpha 1: theta itself
        over.update(scaling="none", factor=None, max_positions=None)
    elif scaling == "yarn":
        over.update(
            factor=s["factor"] if s["factor"] is not None else 1.0, mscale=None, mscale_all_dim=None,
            attention_factor=_yarn_scaling(s),
        )  # fmt: skip
    elif scaling == "longrope" and s["original_max_positions"] is not None:
        over.update(factor=seq_len / int(s["original_max_positions"]), longrope_pair=True)
    return over


def _params(request: Request, made: Table, over: Mapping[str, Any], seq_len: int) -> dict[str, Value]:
    """The posenc table's parameters with what the overrides changed given back as given, ``seq_len`` the
    positions asked for (LongRoPE's table may have more rows)."""
    params = dict(made.params)
    for key in (*over, "dynamic_base", "longrope_pair"):
        given = request.settings.get(key)
        if given is None:
            params.pop(key, None)
        elif key not in ("dynamic_base", "longrope_pair"):
            params[key] = ",".join(repr(float(v)) for v in given) if isinstance(given, (tuple, list)) else given
    params["seq_len"] = seq_len
    if request.arithmetic != "exact":
        params["arithmetic"] = request.arithmetic
    return params


# ------------------------------------------------------------------------------------ framework arithmetic
def _f32_powers(theta: float, dim: int) -> np.ndarray:
    """``theta ** (np.arange(0, dim, 2, dtype=np.float32) / dim)``: float32 exponents, the base rounded to float32
    (numpy 1 casts a Python float met by a float32 array), ``powf`` correctly rounded."""
    e = np.arange(0, dim, 2, dtype=np.float32) / np.float32(dim)
    return f32ops.pow_(np.full(e.shape, f32(theta)), e)


def _f64_powers(theta: float, dim: int) -> np.ndarray:
    """``(theta ** (np.arange(0, dim, 2) / dim)).astype(float32)``: float64 exponents and ``pow`` (correctly
    rounded), rounded to float32."""
    return f64ops.pow_(theta, np.arange(0, dim, 2) / dim).astype(np.float32)


def _llama3(inv: np.ndarray, s: Mapping[str, Any]) -> np.ndarray:
    """``apply_llama3_scaling``: each float32 frequency met by Python floats, so every step in float64 (numpy 1),
    the list then rounded to float32."""
    factor = float(s["factor"])
    low = float(s["low_freq_factor"] if s["low_freq_factor"] is not None else 1.0)
    high = float(s["high_freq_factor"] if s["high_freq_factor"] is not None else 4.0)
    original = int(s["original_max_positions"])
    low_wavelen, high_wavelen = original / low, original / high
    out = []
    for f in inv.astype(np.float64).tolist():
        wavelen = 2 * math.pi / f
        if wavelen < high_wavelen:
            out.append(f)
        elif wavelen > low_wavelen:
            out.append(f / factor)
        else:
            smooth = (original / wavelen - low) / (high - low)
            out.append((1 - smooth) * f / factor + smooth * f)
    return np.array(out, np.float64).astype(np.float32)


def _framework_inv(scaling: str, s: Mapping[str, Any], dim: int) -> np.ndarray:
    theta = float(s["theta"] if s["theta"] is not None else 10000.0)
    one = np.float32(1)
    if scaling in ("dynamic", "longrope"):
        inv = (one / _f32_powers(theta, dim)).astype(np.float32)
        if scaling == "longrope":
            inv = (inv / np.asarray(s["long_factor"], np.float32)).astype(np.float32)
        return inv
    powers = _f64_powers(theta, dim)
    if scaling == "llama3":
        return _llama3((one / powers).astype(np.float32), s)
    scale = 1.0 if scaling == "none" else 1.0 / float(s["factor"])
    scaled: np.ndarray = (f32(scale) / powers).astype(np.float32)
    return scaled


def _framework_caches(inv: np.ndarray, rows: int, scaling: float) -> tuple[np.ndarray, np.ndarray]:
    """``einsum("i , j -> i j", arange(rows, float32), inv_freq)`` (one float32 product each), its ``cos`` and
    ``sin`` correctly rounded, times ``fl32(scaling)`` when it is not 1."""
    angles = (np.arange(rows, dtype=np.float32)[:, None] * inv[None, :]).astype(np.float32)
    cos, sin = f32ops.cos(angles), f32ops.sin(angles)
    if scaling != 1.0:
        cos, sin = (cos * f32(scaling)).astype(np.float32), (sin * f32(scaling)).astype(np.float32)
    return cos, sin


# -------------------------------------------------------------------------------------------------- the table
def table(request: Request) -> Table:
    """TensorRT-LLM's ``rotary_inv_freq`` and ``embed_positions_for_gpt_attention`` for ``request`` (module
    docstring); ``SpecError`` for what TensorRT-LLM does not make."""
    scaling, seq_len, rows = _checked(request)
    over = _overrides(request, scaling, seq_len)
    suffix = "_long" if over.get("longrope_pair") else ""
    dim = request.settings["rotary_dim"] or request.settings["head_dim"]
    own = request.arithmetic == "framework" and scaling != "yarn"  # YaRN: transformers' operations, TensorRT-LLM's
    made = request.caches(seq_len=1 if own else rows, arithmetic="exact" if own else request.arithmetic, **over)
    if own:
        assert isinstance(dim, int)
        check_memory(rows * dim * request.work_per_value, f"TensorRT-LLM's RoPE table ({rows} x {dim}) built whole")
        inv = _framework_inv(scaling, request.settings, dim)
        amplitude = float(made.params["attention_scaling"]) if scaling == "longrope" else 1.0
        cos, sin = _framework_caches(inv, rows, amplitude)
        storage = request.element.storage
        cos, sin, inv = cos.astype(storage), sin.astype(storage), inv.astype(storage)
    else:
        cos, sin = (np.asarray(made.arrays[part + suffix]) for part in ("cos", "sin"))
        inv = np.asarray(made.arrays["inv_freq" + suffix])
    fused = np.stack([cos, sin], axis=-1).reshape(1, -1)
    arrays: dict[str, np.ndarray] = {} if scaling == "longrope" else {INV_FREQ: inv}
    arrays[TABLE] = fused
    axes = {INV_FREQ: ("freqs",), TABLE: ("batch", "positions_freqs_cos_sin")}
    return Table("rope", arrays, _params(request, made, over, seq_len), {k: axes[k] for k in arrays})
