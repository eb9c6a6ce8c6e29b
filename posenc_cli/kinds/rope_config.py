"""A model's ``config.json`` read as HF transformers reads its RoPE: ``posenc rope --config``.

:func:`rope_settings` gives :func:`posenc_cli.kinds.rope.rope`'s keywords for the config (a file, or a folder holding
``config.json``) and the fields it took them from. It follows transformers 5's ``RotaryEmbeddingConfigMixin``
(``standardize_rope_params`` and the ``_compute_*_parameters`` functions) and the model configs that rename fields:

- the RoPE dict is ``rope_parameters`` (transformers 5) or ``rope_scaling`` (transformers 4), its type
  ``rope_type`` or ``type`` (``default`` when absent; ``su`` is LongRoPE's old name, ``mrope`` Qwen2-VL's default
  RoPE with an ``mrope_section``); a dict nested by layer type (``full_attention``, ``sliding_attention``) needs
  ``layer_type``, as do Gemma 3's transformers-4 configs (``rope_local_base_freq`` is the sliding layers' theta,
  ``rope_scaling`` applies to the full-attention layers only);
- ``rope_theta`` in the dict, else at the top (GPT-NeoX: ``rotary_emb_base``), else 10000;
- the rotary dimension ``int(head_dim * partial_rotary_factor)`` (GPT-NeoX: ``rotary_pct``), with ``head_dim`` the
  config's (DeepSeek-V2/V3: ``qk_rope_head_dim``) or ``hidden_size // num_attention_heads``;
- ``original_max_position_embeddings`` of llama3, yarn and longrope from the top level first (Phi-3), then the dict,
  then ``max_position_embeddings``; ``max_position_embeddings`` is dynamic's and longrope's ``max_positions`` and the
  default ``seq_len``;
- a multimodal config's ``text_config`` holds the language model's fields; an ``mrope_section`` is Qwen2-VL's
  M-RoPE, interleaved with ``mrope_interleaved`` or for Qwen3-VL (whose rotary class always interleaves);
- the ``layout`` is the cache the model multiplies ``q`` and ``k`` by, as its modeling file builds it, decided by
  ``model_type`` (:data:`LAYOUTS`; ``half`` for every other type): ``interleaved`` for Cohere (``cohere``,
  ``cohere2``, ``cohere2_moe``: the rotary class's ``repeat_interleave(freqs, 2)``) and GLM/GLM-4 (``glm``,
  ``glm4``: the rotary class returns ``cat(freqs, freqs)``, but ``apply_rotary_pos_emb`` takes its first half
  ``repeat_interleave``-d, so the interleaved cache is what the model uses; GLM-4.5's ``glm4_moe`` keeps the
  ``rotate_half`` cache, ``half``); ``half-width`` for gpt-oss (``gpt_oss``: forward returns ``(seq, dim/2)``),
  Llama 4 (``llama4``, ``llama4_text``) and DeepSeek-V2 (``deepseek_v2``), whose complex ``freqs_cis`` holds one
  value per frequency (cos its real part, sin its imaginary part; DeepSeek-V3's class returns the ``half`` cache);
- a config without RoPE fields takes its model class's defaults (:data:`_CLASS_DEFAULTS`: Falcon's
  ``FalconConfig``, theta 10000 and 2048 positions; Gemma 3's text config); a Falcon config with ``"alibi": true``
  has no RoPE (``FalconConfig.rotary`` is ``not alibi``) and is refused, naming ``posenc alibi``.

The file is untrusted: at most :data:`~posenc_cli.formats.limits.MAX_METADATA` bytes of strict JSON
(:func:`~posenc_cli.formats.limits.read_json`: no NaN or Infinity, no duplicate keys, nesting limited), a regular
file. Every value it gives is held to the range of the parameter it becomes (:data:`posenc_cli.kinds.rope.PARAMS`:
``rope_scaling.beta_fast`` is ``beta_fast``'s), of the type that parameter takes (a JSON number for a number, an
integer for an integer, ``true`` or ``false`` for a flag), before any arithmetic; ``partial_rotary_factor`` (and
``rotary_pct``) is a share of ``head_dim`` in ``0 < x <= 1``. A config without RoPE fields, with a rope type posenc
does not make, or that is no config at all (not JSON, not an object, too large) is refused naming it:
:class:`~posenc_cli.errors.SpecError` with ``param="config"`` (exit 2 on the command line, as any bad value of an
option), and the field, as ``rope_scaling.beta_fast``. Only a file that cannot be read (an I/O error) is a
:class:`~posenc_cli.errors.FormatError`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import FormatError, SpecError
from ..formats.limits import MAX_METADATA, read_json
from ..params import BOOLEAN, NUMBER, ValueType, Wrong, spell
from ..ranges import Range
from ..read import PathLike, existing
from ..system.files import open_regular

__all__ = ["CONFIG", "KNOWN_TYPES", "LAYOUTS", "RopeConfig", "config_file", "rope_settings"]

#: Fields of a model's config.json that are no parameter of posenc's but take a range of their own.
PARTIAL_ROTARY_FACTOR = NUMBER.within(
    Range("0 < x <= 1", "the share of head_dim rotated (GPT-NeoX rotary_pct 0.25, Phi-2 0.4, ChatGLM 0.5)")
)
CONFIG: dict[str, ValueType] = {"partial_rotary_factor": PARTIAL_ROTARY_FACTOR, "rotary_pct": PARTIAL_ROTARY_FACTOR}

#: HF rope types posenc makes, and the scaling mode each is (``su``: LongRoPE's first name).
KNOWN_TYPES = {
    "default": "none", "mrope": "none", "linear": "linear", "dynamic": "dynamic", "yarn": "yarn",
    "llama3": "llama3", "longrope": "longrope", "su": "longrope", "proportional": "proportional",
}  # fmt: skip
#: Each mode's keys of the RoPE dict, by the name :func:`posenc_cli.kinds.rope.rope` takes.
_KEYS = {
    "none": {},
    "linear": {"factor": "factor"},
    "dynamic": {"factor": "factor"},
    "yarn": {
        "factor": "factor", "beta_fast": "beta_fast", "beta_slow": "beta_slow", "mscale": "mscale",
        "mscale_all_dim": "mscale_all_dim", "attention_factor": "attention_factor", "truncate": "truncate",
    },
    "llama3": {"factor": "factor", "low_freq_factor": "low_freq_factor", "high_freq_factor": "high_freq_factor"},
    "longrope": {
        "factor": "factor", "short_factor": "short_factor", "long_factor": "long_factor",
        "attention_factor": "attention_factor",
    },
    "proportional": {"factor": "factor"},
}  # fmt: skip
LAYER_TYPES = ("full_attention", "sliding_attention")
#: The defaults of model config classes that published configs rely on (Gemma-3-4b-it's ``text_config`` gives no
#: theta, head_dim or length: ``Gemma3TextConfig``'s defaults apply; Falcon-7b's config has no RoPE field at all:
#: ``FalconConfig``'s ``max_position_embeddings`` and the RoPE mixin's default theta apply).
_CLASS_DEFAULTS: dict[str, dict[str, Any]] = {
    "gemma3_text": {
        "head_dim": 256, "rope_theta": 1_000_000.0, "rope_local_base_freq": 10_000.0, "max_position_embeddings": 131072,
    },
    "falcon": {"rope_theta": 10_000.0, "max_position_embeddings": 2048},
}  # fmt: skip
#: The cache layout of the model types whose modeling file does not use the ``half`` one (module docstring).
LAYOUTS = {
    "cohere": "interleaved", "cohere2": "interleaved", "cohere2_moe": "interleaved", "glm": "interleaved",
    "glm4": "interleaved", "gpt_oss": "half-width", "llama4": "half-width", "llama4_text": "half-width",
    "deepseek_v2": "half-width",
}  # fmt: skip


@dataclass(frozen=True)
class RopeConfig:
    """What a config gives: ``settings`` (``make.rope`` keywords), ``fields`` (the config fields read, dotted),
    and ``seq_len`` (its ``max_position_embeddings``, or ``None``)."""

    settings: dict[str, Any]
    fields: tuple[str, ...]
    seq_len: int | None
    #: The config's ``model_type`` (its text config's, for a multimodal one), where it gives one: the runtimes'
    #: layouts name a model's architecture by it (llama.cpp's ``general.architecture``).
    model_type: str | None = None


def config_file(path: PathLike) -> Path:
    """The file a ``--config`` path names: ``config.json`` in it when it is a folder (a model snapshot)."""
    file = Path(os.fspath(path))
    return file / "config.json" if file.is_dir() else file


def read_config(path: PathLike) -> tuple[Path, dict[str, Any]]:
    """The file ``path`` names (a ``config.json``, or the folder of one) and its JSON object, read as the module
    docstring says (strict JSON, at most ``MAX_METADATA`` bytes, a regular file); ``SpecError(param="config")`` for
    what is not a config, ``FormatError`` only when it cannot be read."""
    file = existing(path, "config", "the config")
    if file.is_dir():
        file = existing(file / "config.json", "config", "the model folder's config")

    # What the file holds is the user's choice of file: a config that is not one is a bad --config (SpecError,
    # exit 2), as a bad value of any option is; only a file that cannot be read at all is a failure (exit 1).
    try:
        with open_regular(file) as fp:
            data = fp.read(MAX_METADATA + 1)
    except OSError as exc:
        raise FormatError(f"cannot read {str(file)!r}: {exc.strerror or exc}") from None
    except FormatError as exc:
        raise SpecError(f"{str(file)!r}: {exc}", param="config") from None
    if len(data) > MAX_METADATA:
        raise SpecError(f"{str(file)!r} is larger than the {MAX_METADATA} bytes a config.json may take", param="config")
    try:
        doc = read_json(data, "config.json")
    except FormatError as exc:
        raise SpecError(f"{str(file)!r}: {exc}", param="config") from None
    if not isinstance(doc, dict):
        raise SpecError(f"{str(file)!r} is not a config.json: it does not hold a JSON object", param="config")
    return file, doc


def _checked(value: object, field: str, kind: ValueType) -> Any:
    """``value`` read as a JSON value of ``kind`` (JSON's numbers, arrays and booleans are TOML's), within its range;
    ``SpecError`` naming the config and the ``field`` otherwise."""
    try:
        return kind.from_toml(value)
    except Wrong:
        raise SpecError(f"the config's {field} must be {kind.expected}, got {spell(value)}", param="config") from None


def _count(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise SpecError(f"the config's {name} must be a positive integer, got {spell(value)}", param="config")
    return value


def rope_settings(path: PathLike, *, typed_as: Mapping[str, ValueType], layer_type: str | None = None) -> RopeConfig:
    """Read ``path`` (a ``config.json``, or the folder of one) as transformers reads its RoPE (module docstring).

    Raises :class:`~posenc_cli.errors.SpecError` (``param="config"`` or ``"layer_type"``) for a config without
    RoPE, an unknown rope type, a missing ``layer_type`` where the config has several, a field of the wrong type or
    outside its range (named as the config spells it: ``rope_scaling.beta_fast``), or a file that is not a
    config.json (not strict JSON, not an object); :class:`~posenc_cli.errors.FormatError` when it cannot be read.
    ``typed_as`` gives the type (with its range) of each keyword a field becomes: the kind's parameters'.
    """
    _, doc = read_config(path)
    fields: list[str] = []
    prefix = ""
    c = doc
    if isinstance(doc.get("text_config"), dict):
        c, prefix = doc["text_config"], "text_config."

    model_type = c.get("model_type", doc.get("model_type"))
    type_field = prefix + "model_type" if "model_type" in c else "model_type"
    if c.get("alibi") is not None and _checked(c["alibi"], prefix + "alibi", BOOLEAN):  # FalconConfig.rotary
        raise SpecError(
            "the config's alibi is true: the model adds ALiBi biases and has no RoPE (posenc alibi makes them)",
            param="config",
        )
    defaults = _CLASS_DEFAULTS.get(model_type, {}) if isinstance(model_type, str) else {}

    def take(key: str, where: dict[str, Any] | None = None, name: str | None = None) -> Any:
        source = c if where is None else where
        if key in source and source[key] is not None:
            fields.append(prefix + (name or key))
            return source[key]
        if where is None and key in defaults:  # the config class's default, named as such
            fields.append(f"{model_type} default {key}")
            return defaults[key]
        return None

    def field(key: str) -> str:
        """How a message names the field just taken (``rope_scaling.factor``, ``gemma3_text default head_dim``)."""
        return fields[-1] if fields else key

    rope = take("rope_parameters")
    spelled = "rope_parameters"
    if rope is None:
        rope, spelled = take("rope_scaling"), "rope_scaling"
    rope = {} if rope is None else rope
    if not isinstance(rope, dict):
        raise SpecError(f"the config's {spelled} must be an object, got {spell(rope)}", param="config")
    local = take("rope_local_base_freq")
    nested = [key for key in rope if key in LAYER_TYPES]
    if nested or local is not None:
        types = nested or list(LAYER_TYPES)
        if layer_type is None:
            raise SpecError(
                f"the config gives RoPE per layer type ({', '.join(types)}): choose one with --layer-type",
                param="layer_type",
            )
        if layer_type not in types:
            raise SpecError(f"layer_type must be one of {', '.join(types)}, got {layer_type!r}", param="layer_type")
        if nested:
            rope, spelled = rope[layer_type] or {}, f"{spelled}.{layer_type}"
        elif layer_type == "sliding_attention":  # Gemma 3 (transformers 4): default RoPE at rope_local_base_freq
            rope, spelled = {"rope_type": "default", "rope_theta": local}, "rope_local_base_freq"
    elif layer_type is not None:
        raise SpecError("layer_type applies to configs with RoPE per layer type; this one has one", param="layer_type")
    if not isinstance(rope, dict):
        raise SpecError(f"the config's {spelled} must be an object, got {spell(rope)}", param="config")
    kind = rope.get("rope_type", rope.get("type", "default"))
    if not isinstance(kind, str) or kind not in KNOWN_TYPES:
        known = ", ".join(KNOWN_TYPES)
        raise SpecError(
            f"the config's rope type {spell(kind)} is not one posenc makes; it makes {known}", param="config"
        )
    scaling = KNOWN_TYPES[kind]
    theta = rope.get("rope_theta")
    if theta is not None:
        fields.append(f"{prefix}{spelled}.rope_theta" if spelled != "rope_local_base_freq" else prefix + spelled)
    else:
        theta = take("rope_theta")
        if theta is None:
            theta = take("rotary_emb_base")
    if theta is None and not rope and "rotary_pct" not in c:
        raise SpecError(
            "the config has no RoPE fields (rope_parameters, rope_scaling, rope_theta, rotary_emb_base): is it a "
            "RoPE model's config.json?",
            param="config",
        )
    settings: dict[str, Any] = {"scaling": scaling}
    if isinstance(model_type, str) and model_type in LAYOUTS:
        fields.append(type_field)
        settings["layout"] = LAYOUTS[model_type]
    if theta is not None:
        settings["theta"] = _checked(theta, field("rope_theta"), typed_as["theta"])
    head_dim = None
    if isinstance(model_type, str) and model_type.startswith("deepseek"):
        head_dim = take("qk_rope_head_dim")
    elif isinstance(model_type, str) and model_type.startswith("gemma4") and layer_type == "full_attention":
        head_dim = take("global_head_dim")  # Gemma 4's full-attention layers have their own head_dim
    head_dim = head_dim if head_dim is not None else take("head_dim")
    if head_dim is not None:
        head_dim = _checked(head_dim, field("head_dim"), typed_as["head_dim"])
    else:
        hidden, heads = take("hidden_size"), take("num_attention_heads")
        if hidden is None or heads is None:
            raise SpecError("the config gives neither head_dim nor hidden_size and num_attention_heads", param="config")
        head_dim = _count(hidden, "hidden_size") // _count(heads, "num_attention_heads")
        head_dim = _checked(head_dim, "hidden_size // num_attention_heads", typed_as["head_dim"])
    settings["head_dim"] = head_dim
    partial = rope.get("partial_rotary_factor")
    if partial is not None:
        fields.append(f"{prefix}{spelled}.partial_rotary_factor")
    else:
        partial = take("partial_rotary_factor")
        if partial is None:
            partial = take("rotary_pct")
    if partial is not None:
        share = _checked(partial, field("partial_rotary_factor"), CONFIG["partial_rotary_factor"])
        if share != 1.0:
            if scaling == "proportional":  # HF: rope_angles = int(partial * head_dim // 2)
                rotary_dim = 2 * int(share * head_dim // 2)
            else:  # HF: dim = int(head_dim * partial)
                rotary_dim = int(head_dim * share)
            if rotary_dim < 2:
                raise SpecError(
                    f"the config's {field('partial_rotary_factor')} {spell(partial)} rotates {rotary_dim} of the "
                    f"{head_dim} dimensions of a head; RoPE rotates at least one pair",
                    param="config",
                )
            settings["rotary_dim"] = rotary_dim
    for key, name in _KEYS[scaling].items():
        if rope.get(key) is not None:
            fields.append(f"{prefix}{spelled}.{key}")
            settings[name] = _checked(rope[key], fields[-1], BOOLEAN if name == "truncate" else typed_as[name])
    max_positions = take("max_position_embeddings")
    if max_positions is not None:
        max_positions = _checked(max_positions, field("max_position_embeddings"), typed_as["max_positions"])
    if scaling in ("yarn", "llama3", "longrope"):
        original = take("original_max_position_embeddings")  # Phi-3: the top level comes first
        if original is None and rope.get("original_max_position_embeddings") is not None:
            fields.append(f"{prefix}{spelled}.original_max_position_embeddings")
            original = rope["original_max_position_embeddings"]
        if original is not None:
            original = _checked(original, fields[-1], typed_as["original_max_positions"])
        settings["original_max_positions"] = original if original is not None else max_positions
        if scaling == "yarn" and settings.get("factor") is None and max_positions is not None:
            settings["max_positions"] = max_positions  # HF: factor = max_position_embeddings / original
    if scaling in ("dynamic", "longrope") and max_positions is not None:
        settings["max_positions"] = max_positions
    if rope.get("mrope_section") is not None:
        fields.append(f"{prefix}{spelled}.mrope_section")
        settings["mrope_section"] = _checked(rope["mrope_section"], fields[-1], typed_as["mrope_section"])
        if rope.get("mrope_interleaved") is not None and _checked(
            rope["mrope_interleaved"], f"{prefix}{spelled}.mrope_interleaved", BOOLEAN
        ):
            fields.append(f"{prefix}{spelled}.mrope_interleaved")
            settings["mrope_interleaved"] = True
        elif isinstance(model_type, str) and model_type.startswith("qwen3_vl"):  # interleaved by its class
            fields.append(prefix + "model_type")
            settings["mrope_interleaved"] = True
    kind = model_type if isinstance(model_type, str) else None
    return RopeConfig(settings, tuple(dict.fromkeys(fields)), max_positions, kind)
