"""``--runtime llama.cpp``: the RoPE tensors and metadata keys llama.cpp reads from a GGUF file, with the values its
converter writes.

Spec: llama.cpp's ``convert_hf_to_gguf.py`` (repository ggml-org/llama.cpp, commit 0c1e57098bba, the copy vendored
in the llama-cpp-python 0.3.36 sdist): ``TextModel.set_gguf_parameters`` (``conversion/base.py``: the context
length and the rope scaling keys), ``LlamaModel.set_gguf_parameters`` and ``generate_extra_tensors``
(``conversion/llama.py``: ``rope.dimension_count``, Llama 3's ``rope_freqs``), ``Phi3MiniModel.set_gguf_parameters``
and ``generate_extra_tensors`` (``conversion/phi.py``: LongRoPE's keys and its two factor tensors). llama.cpp keeps
no RoPE cache in its files: ggml's rope op computes cos and sin from these keys and tensors as it runs
(``ggml_rope_cache_init``, :mod:`posenc_cli.encodings.ggml_rope`).

Architecture (``gguf_arch``, recorded; :data:`~posenc_cli.formats.gguf_llama.ARCHITECTURES`): as given, else the
one the converter makes of the config's ``model_type`` (:data:`MODEL_TYPES`; the converter picks its model class by
the config's ``architectures``, and each of these model types publishes one: ``LlamaForCausalLM``,
``MistralForCausalLM`` and ``MixtralForCausalLM`` are ``LlamaModel``, arch ``llama``; ``Qwen2ForCausalLM``
``qwen2``; ``Qwen3ForCausalLM`` ``qwen3``; ``Phi3ForCausalLM`` ``Phi3MiniModel``, ``phi3``), else ``llama``
without a config. A config of another model type is refused unless ``gguf_arch`` says whose keys to write.

The keys (recorded as ``gguf_<key>``, written to ``.gguf`` by :mod:`posenc_cli.formats.gguf_llama`), as each
architecture's converter class writes them:

- ``context_length``: the config's ``max_position_embeddings`` (else ``max_positions`` where given);
- ``rope.dimension_count`` (``llama``: ``head_dim``; ``phi3``: the rotated dimensions, ``rotary_dim``); ``qwen2``
  and ``qwen3`` write none (llama.cpp takes the head size);
- ``rope.freq_base``: ``theta`` (transformers' default 10000 where the config gives none: the converter reads the
  config through ``AutoConfig``, which fills it in);
- ``linear``: ``rope.scaling.type`` ``"linear"``, ``rope.scaling.factor``; ``yarn``: ``rope.scaling.type``
  ``"yarn"``, ``rope.scaling.factor``, ``rope.scaling.original_context_length``, and ``rope.scaling.yarn_beta_fast``
  / ``yarn_beta_slow`` where the config gives ``beta_fast`` / ``beta_slow``; ``none`` and ``llama3``: none;
- ``phi3`` (LongRoPE): ``context_length`` = ``max_positions``, ``rope.scaling.original_context_length``, and
  ``rope.scaling.attn_factor`` = ``sqrt(1 + ln(s) / ln(original))``, ``s = max_positions / original``
  (:func:`~posenc_cli.encodings.rope_freqs.longrope_attn_factor`, the converter's Python floats), and no scaling
  type (``Phi3MiniModel`` does not write one: llama.cpp's phi3 graph takes the factor tensors).

The arrays, by scaling:

- ``llama3`` (``llama``): ``rope_freqs`` (``rotary_dim / 2``,), the divisor of each frequency
  (:mod:`posenc_cli.encodings.rope_freqs`): 1, ``factor``, or ``1 / ((1 - s) / factor + s)`` between;
- ``longrope`` (``phi3``): ``rope_factors_long`` and ``rope_factors_short`` (``rotary_dim / 2``,), the config's
  ``long_factor`` and ``short_factor`` lists;
- ``none``, ``linear``, ``yarn`` (``llama``, ``qwen2``, ``qwen3``): llama.cpp's file holds no RoPE tensor, only the
  keys. The table holds ``cos`` and ``sin`` (``seq_len``, ``rotary_dim / 2``), one column per rotated pair
  (``layout`` ``half-width``): what ggml's rope computes from those keys, the cache ``ggml_rope_cache_init`` fills
  for each position (both of llama.cpp's rotation modes, NORM's adjacent pairs and NEOX's halves, read pair ``i``
  from it). These are the only values of llama.cpp's RoPE that exist, a GGUF of keys alone would be no table that
  ``.npy``, C or ``identify`` could hold, and refusing would leave those models without a ``--runtime llama.cpp``
  table; the keys are recorded and written beside them all the same.

Arithmetic: ``exact``, every value correctly rounded from the real formula (``rope_freqs``: ``1 / m_k`` of HF's
llama3 multipliers, :mod:`posenc_cli.encodings.rope`; the caches: posenc's exact caches of the same RoPE, the real
function ggml's kernel evaluates); ``framework`` or ``ggml`` (the same here: llama.cpp's own code), the converter's
torch float32 operations for ``rope_freqs`` (bit for bit with the converter; the LongRoPE lists are rounded to float32
as ``torch.tensor(..., dtype=float32)`` does, which is ``exact``'s value in float32) and ggml's CPU float32
operations for the caches (``arithmetic="ggml"`` of :func:`posenc_cli.kinds.rope.rope`). Either is recorded as given.
The tensors are floats (llama.cpp's are ``F32``): an integer ``dtype`` is refused for them.

Refused, each with what the converter does instead: scalings llama.cpp has no keys for (``dynamic``,
``proportional``: the converter writes none, and llama.cpp would run the model unscaled), ``llama3`` on another
architecture than ``llama`` and ``longrope`` on another than ``phi3`` (their converter classes write no tensor for
them), anything but ``longrope`` on ``phi3`` (``Phi3MiniModel`` writes no scaling keys), YaRN without ``factor``
(the converter writes YaRN's keys only with one) or with DeepSeek's ``mscale``/``mscale_all_dim``, a given
``attention_factor``, ``truncate`` off or its scaling left out of the caches (``--no-attention-scaling``): ggml's
kernel takes none of these; a partial ``rotary_dim`` on ``llama``/``qwen`` (their converters write the whole head
size), M-RoPE sections and per-layer-type RoPE (keys posenc does not write), and the arrays of a model class.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from ...dtypes import ElementType
from ...encodings import rope as rope_encoding
from ...encodings.float32 import f32
from ...encodings.rope_freqs import llama3_converter, llama3_exact, longrope_attn_factor
from ...errors import SpecError
from ...formats.gguf_llama import ARCHITECTURES
from ...table import Param, Table
from .request import Request

__all__ = ["MODEL_TYPES", "SCALINGS", "table"]

#: A config's ``model_type`` -> the llama.cpp architecture its converter class writes.
MODEL_TYPES = {"llama": "llama", "mistral": "llama", "mixtral": "llama", "qwen2": "qwen2", "qwen3": "qwen3",
               "phi3": "phi3"}  # fmt: skip
#: The scalings each architecture's converter writes keys and tensors for.
SCALINGS: dict[str, tuple[str, ...]] = {
    "llama": ("none", "linear", "yarn", "llama3"),
    "qwen2": ("none", "linear", "yarn"),
    "qwen3": ("none", "linear", "yarn"),
    "phi3": ("longrope",),
}
assert set(MODEL_TYPES.values()) <= set(ARCHITECTURES) == set(SCALINGS)

_FLOAT64 = ElementType.of("float64")
#: The settings that are no scaling mode's field.
_NOT_MODES = ("head_dim", "theta", "layout", "scaling", "rotary_dim", "mrope_section", "mrope_interleaved")
_WHY_NOT = {
    "dynamic": "llama.cpp has no dynamic NTK scaling: its converter writes no rope scaling key for it, and llama.cpp "
    "would run the model unscaled",
    "proportional": "its converter writes no rope scaling key for it",
    "llama3": "its converter writes Llama 3's rope_freqs tensor for the llama architecture only "
    "(LlamaModel.generate_extra_tensors)",
    "longrope": "its converter writes LongRoPE's factor tensors for the phi3 architecture only (Phi3MiniModel)",
    "phi3": "Phi3MiniModel writes no rope scaling keys, and posenc writes phi3's keys for LongRoPE (Phi-3 128k) only",
}


def _refuse(message: str, param: str) -> SpecError:
    return SpecError(f"--runtime llama.cpp: {message}", param=param)


def _architecture(request: Request) -> str:
    given = request.others.get("gguf_arch")
    if given is not None:
        if given not in ARCHITECTURES:
            raise SpecError(f"gguf_arch must be one of {', '.join(ARCHITECTURES)}, got {given!r}", param="gguf_arch")
        return str(given)
    config = request.from_config
    if config is None:
        return "llama"
    if config.model_type in MODEL_TYPES:
        return MODEL_TYPES[config.model_type]
    raise _refuse(
        f"the config's model_type {config.model_type!r} is not one posenc maps to a llama.cpp architecture (it maps "
        f"{', '.join(MODEL_TYPES)}); give --gguf-arch ({', '.join(ARCHITECTURES)}) to write that architecture's keys",
        "config",
    )


def _check(request: Request, arch: str, scaling: str) -> None:
    """Refuse what llama.cpp's file cannot say (the module docstring)."""
    s = request.settings
    if scaling not in SCALINGS[arch]:
        why = _WHY_NOT["phi3" if arch == "phi3" else scaling]
        raise _refuse(f"scaling {scaling} does not apply to architecture {arch}: {why}", "scaling")
    rotary = s.get("rotary_dim")
    if arch != "phi3" and rotary is not None and rotary != s.get("head_dim"):
        raise _refuse(
            f"llama.cpp's converter for {arch} rotates the whole head (head_dim), not rotary_dim {rotary}", "rotary_dim"
        )
    if s.get("mrope_section") is not None:
        raise _refuse(
            "M-RoPE's sections are llama.cpp's rope.dimension_sections, which posenc does not write", "config"
        )
    if request.layer_type is not None:
        raise _refuse(
            "RoPE per layer type is llama.cpp's rope.freq_base_swa, which posenc does not write", "layer_type"
        )
    if scaling == "yarn":
        if s.get("factor") is None:
            raise _refuse("llama.cpp's converter writes YaRN's keys only with a factor: give it", "factor")
        for key in ("mscale", "mscale_all_dim", "attention_factor"):
            if s.get(key) is not None:
                raise _refuse(f"the converter writes no key ggml's YaRN kernel takes for {key}", key)
        if s.get("truncate") is False:
            raise _refuse("ggml's YaRN kernel always floors and ceils the correction range", "truncate")
        if not request.attention_scaling:
            raise _refuse(
                "ggml's YaRN kernel folds the attention scaling into cos and sin: drop --no-attention-scaling",
                "attention_scaling",
            )
    if scaling == "longrope" and s.get("max_positions") is None:
        raise _refuse(
            "phi3's keys need max_positions (the converter's context_length and attn_factor)", "max_positions"
        )
    if scaling in ("llama3", "longrope") and not request.element.is_float:
        raise _refuse(f"llama.cpp's RoPE tensors are floats (F32), not {request.element.name}", "dtype")


def _keys(request: Request, arch: str, scaling: str) -> dict[str, Param]:
    """The llama.cpp keys' values, as ``gguf_<key>`` parameters (the module docstring)."""
    s = request.settings
    keys: dict[str, Param] = {}
    config = request.from_config
    context = config.seq_len if config is not None and config.seq_len is not None else s.get("max_positions")
    if context is not None:
        keys["gguf_context_length"] = int(context)
    if arch in ("llama", "phi3"):
        keys["gguf_rope_dimension_count"] = int(s.get("rotary_dim") or s["head_dim"])
    keys["gguf_rope_freq_base"] = float(s["theta"] if s.get("theta") is not None else 10000.0)
    if arch == "phi3":
        original, maximum = int(s["original_max_positions"]), int(s["max_positions"])
        keys["gguf_context_length"] = maximum
        keys["gguf_rope_scaling_original_context_length"] = original
        keys["gguf_rope_scaling_attn_factor"] = longrope_attn_factor(maximum, original)
    elif scaling in ("linear", "yarn"):
        keys["gguf_rope_scaling_type"] = scaling
        keys["gguf_rope_scaling_factor"] = float(s["factor"])
    if scaling == "yarn":
        keys["gguf_rope_scaling_original_context_length"] = int(s["original_max_positions"])
        for name in ("beta_fast", "beta_slow"):
            if s.get(name) is not None:
                keys[f"gguf_rope_scaling_yarn_{name}"] = float(s[name])
    return keys


def _in_type(values: list[Fraction], element: ElementType) -> np.ndarray:
    """Each exact value rounded once to ``element`` (a float type)."""
    return np.array([element.from_exact(q) for q in values], element.storage)


def _tensors(request: Request, scaling: str) -> Table:
    """llama3's ``rope_freqs`` or LongRoPE's two factor lists, with posenc's parameters of the same settings."""
    base = request.caches(seq_len=1, element=_FLOAT64, arithmetic="exact")  # checks every setting; its parameters
    s = request.settings
    dim = s.get("rotary_dim") or s["head_dim"]
    theta = s["theta"] if s.get("theta") is not None else 10000.0
    modes = {k: v for k, v in s.items() if k not in _NOT_MODES and v is not None}
    spec = rope_encoding.resolve(seq_len=1, head_dim=dim, theta=theta, scaling=scaling, **modes)
    exact = request.arithmetic == "exact"
    element = request.element
    arrays: dict[str, np.ndarray] = {}
    if scaling == "llama3":
        if exact:
            arrays["rope_freqs"] = _in_type(list(llama3_exact(spec)), element)
        else:
            low, high = spec.given.get("low_freq_factor", 1.0), spec.given.get("high_freq_factor", 4.0)
            original, factor = spec.given["original_max_positions"], spec.given["factor"]
            made = llama3_converter(dim, theta, factor, low, high, original)  # type: ignore[arg-type]
            arrays["rope_freqs"] = _in_type([Fraction(float(v)) for v in made], element)
    else:
        for which in ("long", "short"):
            listed = spec.given[f"{which}_factor"]
            assert isinstance(listed, tuple)
            taken = [Fraction(v) if exact else Fraction(float(f32(v))) for v in listed]
            arrays[f"rope_factors_{which}"] = _in_type(taken, element)
    params: dict[str, Param] = {k: v for k, v in base.params.items() if k not in ("seq_len", "dtype")}
    if request.seq_len is not None:
        params["seq_len"] = request.seq_len
    params["dtype"] = element.name
    if not exact:
        params["arithmetic"] = request.arithmetic
    return Table("rope", arrays, params, {key: ("freqs",) for key in arrays})


def _caches(request: Request) -> Table:
    """The cos and sin ggml's rope computes: one column per pair, in ``exact`` or ggml's float32 arithmetic."""
    arithmetic = "exact" if request.arithmetic == "exact" else "ggml"
    made = request.caches(layout="half-width", arithmetic=arithmetic, lazy=request.lazy)
    arrays = {key: made.arrays[key] for key in ("cos", "sin")}
    params: dict[str, Any] = dict(made.params)
    if request.arithmetic != "exact":
        params["arithmetic"] = request.arithmetic
    return Table("rope", arrays, params, {key: made.axes[key] for key in arrays})


def table(request: Request) -> Table:
    """The table of llama.cpp's RoPE for ``request`` (the module docstring): its tensors (``rope_freqs``,
    ``rope_factors_long``/``rope_factors_short``) or the caches ggml computes, the keys as ``gguf_*`` parameters
    and the architecture as ``gguf_arch``."""
    request.refuse_others(allowed=("gguf_arch",))
    arch = _architecture(request)
    scaling = request.settings.get("scaling") or "none"
    _check(request, arch, scaling)
    made = _tensors(request, scaling) if scaling in ("llama3", "longrope") else _caches(request)
    params = {**made.params, **_keys(request, arch, scaling), "gguf_arch": arch}
    return Table("rope", made.arrays, params, made.axes)
