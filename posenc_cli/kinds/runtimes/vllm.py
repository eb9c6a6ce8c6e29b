"""``posenc rope --runtime vllm``: vLLM's ``cos_sin_cache``, which FlashInfer's ``apply_rope_with_cos_sin_cache``
reads as it is (``flashinfer/rope.py``: ``(max_seq_len, rotary_dim)``, cosine the first half, sine the second,
float32 only).

The layout (vLLM 0.34.0, ``vllm/model_executor/layers/rotary_embedding/``): one array ``cos_sin_cache`` of shape
``(rows, rotary_dim)``, row ``p`` the position ``p``, its first ``rotary_dim / 2`` columns ``cos(p * inv_freq[k])``
and the last ``rotary_dim / 2`` ``sin(p * inv_freq[k])``, ``k = 0 .. rotary_dim/2 - 1`` (``torch.cat((cos, sin),
dim=-1)`` of the half-width caches; ``is_neox_style`` says only how vLLM applies it). ``inv_freq[k] = base **
(-2k / rotary_dim)`` (``RotaryEmbeddingBase._compute_inv_freq``), the frequencies over ``rotary_dim``
(``int(head_size * partial_rotary_factor)``). ``get_rope`` (``__init__.py``) picks the class by ``rope_type``:

``none`` (``default``): ``RotaryEmbedding``, ``max_position`` rows.
``linear``: ``LinearScalingRotaryEmbedding``: ``ceil(max_position * factor)`` rows of the positions ``p / factor``
    (one factor; vLLM also takes a list, caches one after another for LoRA adapters, which posenc does not make).
``dynamic``: ``DynamicNTKScalingRotaryEmbedding``: ``max_position`` rows at the base ``theta * (factor *
    max_position / max_trained_positions - (factor - 1)) ** (d / (d - 2))``; ``max_trained_positions`` defaults to
    ``max_position`` (posenc does not read another), where the base is ``theta`` again (in float64, as vLLM
    computes it): unlike transformers, vLLM's dynamic cache is the default one.
``yarn``: ``YaRNScalingRotaryEmbedding``: ``ceil(original_max_positions * factor)`` rows, YaRN's blended
    frequencies (``yarn_find_correction_range`` over ``original_max_positions``, ``truncate``), cos and sin times
    its ``mscale`` (``attention_factor``, else ``yarn_get_mscale(factor, mscale) / yarn_get_mscale(factor,
    mscale_all_dim)`` when both are given, else ``0.1 ln(factor) + 1``): transformers' YaRN.
    ``DeepseekScalingRotaryEmbedding`` (``deepseek_scaling_rope.py``; vLLM's ``deepseek_v2.py`` turns a DeepSeek
    config's scaling into ``deepseek_yarn``): the same cache with ``mscale = yarn_get_mscale(factor, mscale) /
    yarn_get_mscale(factor, mscale_all_dim)`` (defaults 1 and 0), always truncated, no ``attention_factor``. posenc
    takes it for a config whose ``model_type`` starts with ``deepseek``, and for YaRN given ``mscale`` or
    ``mscale_all_dim`` without a config (with both, the two classes make the same cache).
``llama3``: ``Llama3RotaryEmbedding``: ``max_position`` rows, Llama 3's smoothed frequencies.
``longrope``: ``Phi3LongRoPEScaledRotaryEmbedding``: the array ``long_short_cos_sin_cache``, the short cache
    (``original_max_positions`` rows, ``short_factor``) then the long one (``max_position`` rows, ``long_factor``),
    ``inv_freq[k] = 1 / (factor_k * base ** (2k / d))``, both times ``sqrt(1 + ln(s) / ln(original))`` with ``s =
    max_position / original_max_positions`` (1 for ``s <= 1``); vLLM indexes the long rows at ``original + p``.
    (vLLM also reads ``short_mscale`` and ``long_mscale`` from a config, which posenc does not.)

``max_position`` is vLLM's argument of that name: a model's ``max_position_embeddings`` (``--max-positions``, or a
config's). ``-n`` writes the first ``n`` rows of that cache (past its end, the same formula goes on); without it
(a config's ``max_position_embeddings`` is not taken as ``-n`` here) the whole cache, as long as vLLM makes it.
M-RoPE, ``proportional`` (Gemma 4) and ``mllama4`` are other classes, not made here.

Values: ``arithmetic="exact"`` every entry correctly rounded from the real formula above (the float64 constants, the
YaRN range and the attention scaling, as vLLM computes them); ``"framework"`` vLLM's float32 operations on the CPU
(``inv_freq``, ``torch.einsum`` of the float32 positions, ``cos``, ``sin``, times the float32 ``mscale``; linear:
:func:`posenc_cli.encodings.vllm_rope.linear_positions`), each ``pow``/``cos``/``sin`` correctly rounded. vLLM
builds the cache in float32 and casts it to the model's dtype (not when FlashInfer applies it, which needs float32):
another ``--dtype`` is each value rounded once to that type.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ...encodings import rope as rope_encoding
from ...encodings import rope_framework
from ...encodings.framework import to_element
from ...encodings.sinusoid import MAX_POSITION
from ...encodings.vllm_rope import deepseek_mscale, linear_positions
from ...errors import SpecError
from ...system.capacity import check_memory
from ...table import Array, RowSource, Table
from ...table import Param as Value
from .request import Request

__all__ = ["CACHE", "LONGROPE_CACHE", "SCALINGS", "table"]

#: vLLM's buffer names: every class's, and Phi-3's LongRoPE class's.
CACHE = "cos_sin_cache"
LONGROPE_CACHE = "long_short_cos_sin_cache"
#: The scalings (posenc's names) whose vLLM class is made here.
SCALINGS = ("none", "linear", "dynamic", "yarn", "llama3", "longrope")
#: Every scaling field of the rope command.
FIELDS = (
    "factor", "original_max_positions", "max_positions", "low_freq_factor", "high_freq_factor", "beta_fast",
    "beta_slow", "truncate", "mscale", "mscale_all_dim", "attention_factor", "short_factor", "long_factor",
)  # fmt: skip
#: The fields each vLLM class reads (``max_positions``, vLLM's ``max_position``, every one), and those it needs.
USES: dict[str, tuple[str, ...]] = {
    "none": (),
    "linear": ("factor",),
    "dynamic": ("factor",),
    "yarn": ("factor", "original_max_positions", "beta_fast", "beta_slow", "truncate", "mscale", "mscale_all_dim",
             "attention_factor"),
    "deepseek": ("factor", "original_max_positions", "beta_fast", "beta_slow", "mscale", "mscale_all_dim"),
    "llama3": ("factor", "original_max_positions", "low_freq_factor", "high_freq_factor"),
    "longrope": ("original_max_positions", "short_factor", "long_factor"),
}  # fmt: skip
NEEDS: dict[str, tuple[str, ...]] = {
    "linear": ("factor",),
    "dynamic": ("factor", "max_positions"),
    "yarn": ("factor", "original_max_positions"),
    "deepseek": ("factor", "original_max_positions"),
    "llama3": ("factor", "original_max_positions"),
    "longrope": ("original_max_positions", "short_factor", "long_factor", "max_positions"),
}
#: The class of each, for messages.
CLASSES = {
    "none": "RotaryEmbedding", "linear": "LinearScalingRotaryEmbedding", "dynamic": "DynamicNTKScalingRotaryEmbedding",
    "yarn": "YaRNScalingRotaryEmbedding", "deepseek": "DeepseekScalingRotaryEmbedding",
    "llama3": "Llama3RotaryEmbedding", "longrope": "Phi3LongRoPEScaledRotaryEmbedding",
}  # fmt: skip


def _typed(request: Request, name: str) -> bool:
    """Whether ``name`` was given as a keyword (not only by the config, whose fields vLLM may ignore)."""
    value = request.settings.get(name)
    config = request.from_config
    return value is not None and (config is None or config.settings.get(name) != value)


def _vllm_class(request: Request, scaling: str) -> str:
    """The key of :data:`USES` for vLLM's class (module docstring)."""
    config = request.from_config
    model_type = config.model_type if config is not None else None
    deepseek = isinstance(model_type, str) and model_type.startswith("deepseek")
    if deepseek and scaling not in ("none", "yarn"):
        raise SpecError(
            f"vLLM turns a DeepSeek config's scaling into its DeepSeek YaRN class, which needs YaRN's fields, not "
            f"{scaling}'s",
            param="scaling",
        )
    s = request.settings
    if scaling == "yarn" and (
        deepseek or (config is None and (s["mscale"] is not None or s["mscale_all_dim"] is not None))
    ):
        return "deepseek"
    return scaling


def _checked(request: Request, cls: str) -> dict[str, Any]:
    """The fields vLLM's class reads, each as given; one typed that it does not read is refused, one a config gave
    is left out (vLLM ignores it too); a missing one it needs is refused."""
    s = request.settings
    used: dict[str, Any] = {}
    for name in FIELDS:
        if s.get(name) is None:
            continue
        if name in USES[cls] or name == "max_positions":
            used[name] = s[name]
        elif _typed(request, name):
            raise SpecError(
                f"{name} does not apply to vLLM's {CLASSES[cls]} (--runtime vllm): vLLM's cache ignores it; leave "
                "it out",
                param=name,
            )
    if used.get("max_positions") is None and request.from_config is not None:
        used["max_positions"] = request.from_config.seq_len  # the config's max_position_embeddings
    for name in NEEDS.get(cls, ()):
        if used.get(name) is None:
            why = "vLLM's max_position, a model's max_position_embeddings" if name == "max_positions" else "vLLM"
            raise SpecError(f"--runtime vllm's {CLASSES[cls]} needs {name} ({why} reads it)", param=name)
    if cls == "deepseek" and used.get("truncate") is False:
        raise SpecError("vLLM's DeepSeek YaRN class always truncates the correction range", param="truncate")
    return {k: v for k, v in used.items() if v is not None}


def _default_rows(cls: str, used: dict[str, Any]) -> int | None:
    """How many rows vLLM's class makes (``None``: it needs ``max_position``, not given)."""
    m = used.get("max_positions")
    if cls in ("yarn", "deepseek"):
        return math.ceil(float(used["original_max_positions"]) * float(used["factor"]))  # torch.arange(original * f)
    if m is None:
        return None
    if cls == "linear":
        return math.ceil(float(m) * float(used["factor"]))
    if cls == "longrope":
        return int(used["original_max_positions"]) + int(m)
    return int(m)


def _rows(request: Request, cls: str, used: dict[str, Any]) -> int:
    given = request.seq_len_given
    rows = request.seq_len if given else _default_rows(cls, used)
    if rows is None:
        raise SpecError(
            "--runtime vllm needs the cache's length: -n (rows), or --max-positions (vLLM's max_position, a model's "
            "max_position_embeddings), or a --config",
            param="seq_len",
        )
    if not 1 <= rows <= MAX_POSITION:
        raise SpecError(
            f"vLLM's {CLASSES[cls]} makes {rows} rows here; posenc writes 1 to 2**32 (give -n for fewer)",
            param="seq_len" if given else "factor",
        )
    return int(rows)


def _engine_settings(request: Request, cls: str, used: dict[str, Any], rotary_dim: int) -> dict[str, Any]:
    """posenc's RoPE settings whose half-width caches are vLLM's halves (the real values alike)."""
    s = request.settings
    over: dict[str, Any] = {name: None for name in FIELDS}
    over.update(layout="half-width", attention_scaling=True, scaling=cls if cls in ("none", "linear") else None)
    theta = 10000.0 if s["theta"] is None else s["theta"]
    if cls == "linear":
        over["factor"] = used["factor"]
    elif cls == "dynamic":  # the default cache at the base vLLM computes: transformers' at seq_len = max_position
        m = int(used["max_positions"])
        spec = rope_encoding.resolve(
            seq_len=m, head_dim=rotary_dim, theta=theta, scaling="dynamic", factor=used["factor"], max_positions=m
        )
        over.update(scaling="none", theta=spec.base)
    elif cls == "yarn":
        over.update(scaling="yarn", **{k: used.get(k) for k in USES["yarn"]})
    elif cls == "deepseek":
        mscale = deepseek_mscale(used["factor"], used.get("mscale", 1.0), used.get("mscale_all_dim", 0.0))
        kept = ("factor", "original_max_positions", "beta_fast", "beta_slow")  # its mscale is the attention factor
        over.update(scaling="yarn", attention_factor=mscale, **{k: used.get(k) for k in kept})
    elif cls == "llama3":
        over.update(scaling="llama3", **{k: used.get(k) for k in USES["llama3"]})
    elif cls == "longrope":
        over.update(scaling="longrope", max_positions=used["max_positions"], longrope_pair=True,
                    **{k: used.get(k) for k in USES["longrope"]})  # fmt: skip
    return over


def _linear_rows(
    request: Request, theta: float, rotary_dim: int, factor: float, rows: int
) -> dict[str, Callable[[int, int], np.ndarray]]:
    """vLLM's float32 linear caches: ``fl32(p / factor)`` times the default ``inv_freq``, in the element type."""
    spec = rope_encoding.resolve(seq_len=rows, head_dim=rotary_dim, theta=theta, layout="half-width")

    def part_rows(part: str) -> Callable[[int, int], np.ndarray]:
        def rows_of(lo: int, hi: int) -> np.ndarray:
            values = rope_framework.cache_rows(spec, part, 0, 0, linear_positions(lo, hi, factor))
            return to_element(values, request.element)

        return rows_of

    return {"cos": part_rows("cos"), "sin": part_rows("sin")}


def _cat(
    cos: Callable[[int, int], np.ndarray], sin: Callable[[int, int], np.ndarray]
) -> Callable[[int, int], np.ndarray]:
    return lambda lo, hi: np.concatenate([cos(lo, hi), sin(lo, hi)], axis=1)


def _short_long(
    short: Callable[[int, int], np.ndarray],
    long: Callable[[int, int], np.ndarray],
    original: int,
    width: int,
    storage: np.dtype,
) -> Callable[[int, int], np.ndarray]:
    """Rows of the short cache below ``original``, of the long cache (at ``row - original``) from there."""

    def rows_of(lo: int, hi: int) -> np.ndarray:
        parts = [np.empty((0, width), storage)]
        if lo < original:
            parts.append(short(lo, min(hi, original)))
        if hi > original:
            parts.append(long(max(lo, original) - original, hi - original))
        return np.concatenate(parts)

    return rows_of


def _source(array: Array) -> Callable[[int, int], np.ndarray]:
    assert isinstance(array, RowSource)
    return lambda lo, hi: array[lo:hi]


def table(request: Request) -> Table:
    """vLLM's cache for ``request`` (module docstring): a table of kind ``"rope"`` holding ``cos_sin_cache`` (or
    ``long_short_cos_sin_cache``), its parameters those of the command that makes it again."""
    request.refuse_others()
    if request.arithmetic not in ("exact", "framework"):
        raise SpecError(
            f"--runtime vllm makes arithmetic exact or framework (vLLM's float32 operations), not {request.arithmetic}",
            param="arithmetic",
        )
    if not request.attention_scaling:
        raise SpecError(
            "vLLM folds the attention scaling (mscale) into its cache: --no-attention-scaling does not apply to "
            "--runtime vllm",
            param="attention_scaling",
        )
    s = request.settings
    if s.get("mrope_section") is not None:
        raise SpecError(
            "vLLM keeps M-RoPE's cache in its MRotaryEmbedding (a length of its own per model), which --runtime vllm "
            "does not make",
            param="config" if request.from_config is not None else "mrope_section",
        )
    if _typed(request, "layout"):
        raise SpecError(
            "vLLM's cos_sin_cache has one layout (cos half, then sin half; is_neox_style says how vLLM applies it): "
            "leave --layout out",
            param="layout",
        )
    scaling = s["scaling"] or "none"
    if scaling not in SCALINGS:
        raise SpecError(f"--runtime vllm makes scaling {', '.join(SCALINGS)}, not {scaling}", param="scaling")
    cls = _vllm_class(request, scaling)
    used = _checked(request, cls)
    rows = _rows(request, cls, used)
    head_dim = s["head_dim"]
    rotary_dim = s["rotary_dim"] or head_dim
    if head_dim is None:
        raise SpecError("rope needs head_dim (or a config that gives it)", param="head_dim")
    over = _engine_settings(request, cls, used, rotary_dim)
    original = int(used.get("original_max_positions", 0))
    length = max(original, rows - original, 1) if cls == "longrope" else rows
    made = request.caches(seq_len=length, lazy=True, **over)
    half = rotary_dim // 2
    storage = request.element.storage
    if cls == "longrope":
        a = made.arrays
        short = _cat(_source(a["cos_short"]), _source(a["sin_short"]))
        long = _cat(_source(a["cos_long"]), _source(a["sin_long"]))
        rows_of = _short_long(short, long, original, 2 * half, storage)
    elif cls == "linear" and request.arithmetic == "framework":
        theta = 10000.0 if s["theta"] is None else s["theta"]
        parts = _linear_rows(request, theta, rotary_dim, float(used["factor"]), rows)
        rows_of = _cat(parts["cos"], parts["sin"])
    else:
        rows_of = _cat(_source(made.arrays["cos"]), _source(made.arrays["sin"]))
    name = LONGROPE_CACHE if cls == "longrope" else CACHE
    source = RowSource((rows, 2 * half), storage, rows_of)
    array: Array = source
    if not request.lazy:
        check_memory(rows * 2 * half * request.work_per_value, f"vLLM's {name} ({rows} x {2 * half}) built whole")
        array = np.asarray(source)
    return Table("rope", {name: array}, _params(request, made.params, used, rows), {name: ("seq_len", "rotary_dim")})


#: What posenc's own table records that a vLLM cache records otherwise, or not at all.
_REPLACED = (*FIELDS, "layout", "dynamic_base", "longrope_pair", "theta", "scaling", "seq_len", "head_dim")


def _params(request: Request, made: Mapping[str, Value], used: dict[str, Any], rows: int) -> dict[str, Value]:
    """The parameters that make the cache again without a config: posenc's own table's, the scaling as given, the
    fields vLLM's class read."""
    s = request.settings
    params = {k: v for k, v in made.items() if k not in _REPLACED}
    params.update(
        seq_len=rows, head_dim=s["head_dim"], theta=10000.0 if s["theta"] is None else s["theta"],
        scaling=s["scaling"] or "none", attention_scaling_folded=True,
    )  # fmt: skip
    for name, value in used.items():
        params[name] = ",".join(repr(float(v)) for v in value) if isinstance(value, (tuple, list)) else value
    return params
