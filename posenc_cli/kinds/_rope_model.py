"""What a model class adds beside its RoPE cache: ``posenc rope``'s ``no_rope_layers``, ``attn_scales`` and
``softmax_scale``, from a model's ``config.json`` (:func:`model_settings`) or from the options of the same names, and
the arrays they make (:func:`with_model_arrays`). It follows transformers 5.25's model classes:

- **Llama 4** (``llama4``, ``llama4_text``; ``Llama4TextConfig`` and ``Llama4TextAttention``): ``no_rope_layers``,
  one entry per layer, 1 where the layer applies RoPE and 0 for a NoPE layer; a config without it (or with an empty
  list) takes ``int((i + 1) % no_rope_layer_interval != 0)`` for each layer ``i < num_hidden_layers`` (interval 4,
  48 layers by default: every fourth layer is NoPE). With ``attn_temperature_tuning`` (on by default) the NoPE layers
  scale their queries by ``attn_scales[p] = log1p(floor((p + 1) / floor_scale)) * attn_scale + 1`` at position
  ``p`` (``floor_scale`` 8192, ``attn_scale`` 0.1 by default).
- **SmolLM3** (``smollm3``; ``SmolLM3Config``): ``no_rope_layers`` as Llama 4's, the default taken only when the
  field is absent or null (``no_rope_layer_interval``, 36 layers by default).
- **DeepSeek-V2/V3** (``deepseek_v2``, ``deepseek_v3``; their ``Attention`` classes and ``yarn_apply_mscale``): the
  softmax scale ``qk_head_dim**-0.5 * m * m`` with ``qk_head_dim = qk_nope_head_dim + qk_rope_head_dim`` (128 + 64
  by default) and, for a rope type other than ``default`` with a nonzero ``mscale_all_dim``,
  ``m = 0.1 * mscale_all_dim * ln(factor) + 1`` (1 when ``factor <= 1``), else ``m = 1``: recorded as the table's
  ``softmax_scale`` parameter.
- **xPos** (torchscale ``XPOS``, rotary-embedding-torch ``use_xpos``; no transformers config names it, so only the
  options ``xpos_scale_base`` and ``xpos_center`` give it): ``xpos_scale``, the per-position scale of
  :mod:`posenc_cli.encodings.xpos` at rows ``0 .. seq_len - 1``, in the caches' layout.

``no_rope_layers`` longer than ``num_hidden_layers`` (as the classes allow) is cut to it: the model indexes it by
layer. ``arithmetic="exact"`` makes ``attn_scales`` the real formula's value at each position, correctly rounded to
float32, and ``softmax_scale`` the real value correctly rounded to float64; ``framework`` makes them as the model
does: ``attn_scales`` as torch's float32 operations on ``positions.float()`` (``+ 1.0``, ``/ floor_scale``,
``floor``, ``log1p`` correctly rounded, ``* attn_scale``, ``+ 1.0``, each Python number rounded to float32 first),
``softmax_scale`` as Python's float64 expression. ``attn_scales`` is float32 and ``no_rope_layers`` int8 whatever
the caches' type: they are what the model computes (its attention scales the query in float32) and a mask.

The config is untrusted, as :mod:`posenc_cli.kinds.rope_config` reads it: strict JSON of at most
:data:`~posenc_cli.formats.limits.MAX_METADATA` bytes, a regular file, every field taken of its parameter's type and
range (:data:`posenc_cli.kinds.rope.PARAMS`' ``no_rope_layers``, ``attn_scale``, ``floor_scale``) or refused with a
one-line :class:`~posenc_cli.errors.SpecError` (``param="config"``) naming the field as the config spells it
(``text_config.no_rope_layers``).
"""

from __future__ import annotations

import decimal
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np

from ..encodings import float32
from ..encodings._exact import round_checked
from ..errors import SpecError
from ..params import BOOLEAN, INTEGER, ValueType, Wrong, spell
from ..ranges import Range
from ..read import PathLike, existing, load
from ..system.capacity import check_memory
from ..table import Table
from .rope_config import read_config

__all__ = ["MAX_LAYERS", "ModelSettings", "attn_scales", "model_settings", "softmax_scale", "with_model_arrays"]

#: The most layers a schedule may name (the deepest models have about 128).
MAX_LAYERS = 1 << 16
_COUNT = INTEGER.within(Range("1 <= x <= 2**16", "layers of a model (the deepest have about 128)"))
_HEAD_PART = INTEGER.within(Range("0 <= x <= 2**19", "DeepSeek's nope or rope part of a head (128, 64)"))

#: The model classes' defaults (transformers 5.25's config dataclasses) that published configs rely on.
_LLAMA4: dict[str, Any] = {"num_hidden_layers": 48, "no_rope_layer_interval": 4, "attn_temperature_tuning": True,
           "floor_scale": 8192, "attn_scale": 0.1}  # fmt: skip
_SMOLLM3: dict[str, Any] = {"num_hidden_layers": 36, "no_rope_layer_interval": 4}
_DEEPSEEK: dict[str, Any] = {"qk_nope_head_dim": 128, "qk_rope_head_dim": 64}


@dataclass(frozen=True)
class ModelSettings:
    """What a config's model class adds: ``settings`` (``rope`` keywords: ``no_rope_layers``, ``attn_scale``,
    ``floor_scale``, ``qk_head_dim``, those the class has) and ``fields`` (for each setting, the config fields it
    was read from, dotted, or the class default named)."""

    settings: dict[str, Any]
    fields: dict[str, tuple[str, ...]]


def _document(path: PathLike) -> dict[str, Any]:
    return read_config(path)[1]


def model_settings(path: PathLike, *, typed_as: Mapping[str, ValueType]) -> ModelSettings:
    """The model-class settings of the config at ``path`` (a ``config.json`` or its folder); none for a model class
    that adds none; ``typed_as`` gives each setting's type (the kind's parameters').
    :class:`~posenc_cli.errors.SpecError` (``param="config"``) naming the field for a value of the
    wrong type or outside its range; :class:`~posenc_cli.errors.FormatError` when the file cannot be read.

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "config.json").write_text(json.dumps({"model_type": "smollm3", "num_hidden_layers": 8}))
    >>> from posenc_cli.kinds.rope import PARAMS
    >>> model_settings(folder, typed_as={p.name: p.type for p in PARAMS}).settings
    {'no_rope_layers': (1, 1, 1, 0, 1, 1, 1, 0)}
    """
    doc = _document(path)
    c, prefix = doc, ""
    if isinstance(doc.get("text_config"), dict):
        c, prefix = doc["text_config"], "text_config."
    model_type = c.get("model_type", doc.get("model_type"))
    if not isinstance(model_type, str):
        return ModelSettings({}, {})
    family = "llama4" if model_type in ("llama4", "llama4_text") else model_type
    deepseek: dict[str, Any] = _DEEPSEEK if family.startswith("deepseek") else {}
    defaults: dict[str, Any] = {"llama4": _LLAMA4, "smollm3": _SMOLLM3}.get(family, deepseek)
    if not defaults:
        return ModelSettings({}, {})
    fields: list[str] = []

    def take(key: str, kind: ValueType) -> Any:
        value = c.get(key)
        if value is None:
            if key not in defaults:
                return None
            fields.append(f"{model_type} default {key}")
            return defaults[key]
        fields.append(prefix + key)
        try:
            return kind.from_toml(value)
        except Wrong:
            raise SpecError(
                f"the config's {prefix}{key} must be {kind.expected}, got {spell(value)}", param="config"
            ) from None

    settings: dict[str, Any] = {}
    if family.startswith("deepseek"):
        settings["qk_head_dim"] = take("qk_nope_head_dim", _HEAD_PART) + take("qk_rope_head_dim", _HEAD_PART)
        if settings["qk_head_dim"] < 1:
            raise SpecError("the config's qk_nope_head_dim + qk_rope_head_dim must be at least 1", param="config")
        return ModelSettings(settings, {"qk_head_dim": tuple(fields)})
    layers = take("num_hidden_layers", _COUNT)
    given = c.get("no_rope_layers")
    if given is None or (family == "llama4" and given == []):  # Llama 4 takes the default for any falsy list
        interval = take("no_rope_layer_interval", _COUNT)
        schedule = tuple(int((i + 1) % interval != 0) for i in range(layers))
    else:
        if not isinstance(given, list) or len(given) > MAX_LAYERS:
            raise SpecError(
                f"the config's {prefix}no_rope_layers must be a list of at most {MAX_LAYERS} entries, got "
                f"{spell(given) if not isinstance(given, list) else f'{len(given)} entries'}",
                param="config",
            )
        schedule = take("no_rope_layers", typed_as["no_rope_layers"])
        if len(schedule) < layers:
            raise SpecError(
                f"the config's {prefix}no_rope_layers must name each of its {layers} layers, got {len(schedule)}",
                param="config",
            )
        schedule = schedule[:layers]
    settings["no_rope_layers"] = schedule
    of = {"no_rope_layers": tuple(fields)}
    if family == "llama4" and take("attn_temperature_tuning", BOOLEAN):
        tuning = fields[-1]
        for key in ("floor_scale", "attn_scale"):
            settings[key] = take(key, typed_as[key])
            of[key] = (tuning, fields[-1])
    return ModelSettings(settings, of)


def attn_scales(positions: np.ndarray, floor_scale: int, attn_scale: float, arithmetic: str) -> np.ndarray:
    """Llama 4's float32 query scale at each of ``positions`` (int64, ``0 <= p < 2**32``): module docstring.

    Examples
    --------
    >>> attn_scales(np.array([0, 8191, 16383]), 8192, 0.1, "exact").tolist()
    [1.0, 1.06931471824646, 1.1098612546920776]
    """
    if arithmetic == "exact":
        steps = (positions + 1) // floor_scale  # floor((p + 1) / floor_scale), exactly
        unique, inverse = np.unique(steps, return_inverse=True)
        return _exact_scales(unique, attn_scale)[inverse.reshape(-1)]
    one = np.float32(1.0)
    with np.errstate(all="ignore"):
        steps32 = np.floor((positions.astype(np.float32) + one) / float32.f32(floor_scale))
    unique, inverse = np.unique(steps32, return_inverse=True)
    scaled = float32.log1p(unique) * float32.f32(attn_scale) + one
    out: np.ndarray = scaled.astype(np.float32)[inverse.reshape(-1)]
    return out


def _ids(position_ids: object) -> np.ndarray:
    """The caches' position ids (already checked by the caches: one row of integers), as int64; a path names the
    ``.npy`` they were read from."""
    if isinstance(position_ids, (str, os.PathLike)):
        table = load(existing(position_ids, "position_ids", "the position ids file"))
        position_ids = next(iter(table.arrays.values()))
    ids = np.asarray(position_ids)
    if ids.ndim != 1:
        raise SpecError("attn_scale takes one row of position ids, not M-RoPE's three", param="attn_scale")
    return ids.astype(np.int64)


def _exact_scales(steps: np.ndarray, attn_scale: float) -> np.ndarray:
    """``ln(1 + m) * attn_scale + 1`` of integers ``m >= 0``, correctly rounded to float32: the float64 value
    (every term positive, within a few float64 ulps) where its bound decides the rounding, else Decimal enclosures
    of growing precision (the value is transcendental unless ``m = 0`` or ``attn_scale = 0``: exactly 1)."""
    approx = np.log1p(steps.astype(np.float64)) * attn_scale + 1.0
    out, undecided = round_checked(approx, approx * float32.TRUSTED, np.float32)
    out = np.asarray(out, np.float32)
    a = Fraction(attn_scale)
    for i in np.flatnonzero(undecided).tolist():
        m = int(steps[i])
        digits = 40
        while m and a:
            if digits > 4000:  # a transcendental value is decided long before
                raise ArithmeticError(f"could not round Llama 4's attention scale at step {m} to float32")
            with decimal.localcontext() as ctx:
                ctx.prec = digits
                ln = Fraction(Decimal(m + 1).ln())
            err = ln * Fraction(1, 10 ** (digits - 2))
            lo, hi = (ln - err) * a + 1, (ln + err) * a + 1
            if np.float32(lo) == np.float32(hi):  # Fraction -> float -> float32 rounds twice: check both ends
                bits = _float32_of(lo)
                if bits == _float32_of(hi):
                    out[i] = bits
                    break
            digits *= 2
        else:
            out[i] = np.float32(1.0)
    return out


def _float32_of(x: Fraction) -> np.float32:
    """The float32 nearest ``x`` (ties to even), from the exact rational."""
    near = np.float32(float(x))
    below, above = np.nextafter(near, np.float32(-np.inf)), np.nextafter(near, np.float32(np.inf))
    candidates = sorted((abs(Fraction(float(v)) - x), int(v.view(np.uint32)) & 1, v) for v in (below, near, above))
    return np.float32(candidates[0][2])


def softmax_scale(qk_head_dim: int, scaling: str, factor: float | None, mscale_all_dim: float | None,
                  arithmetic: str) -> float:  # fmt: skip
    """DeepSeek's softmax scale (module docstring): Python's float64 expression (``framework``) or the real value
    correctly rounded to float64 (``exact``).

    Examples
    --------
    >>> softmax_scale(192, "yarn", 40.0, 1.0, "framework")
    0.1352337788608801
    """
    mscaled = scaling != "none" and bool(mscale_all_dim) and factor is not None and factor > 1
    if arithmetic != "exact":
        scale: float = qk_head_dim ** (-0.5)
        if mscaled:
            assert factor is not None and mscale_all_dim is not None
            mscale = 0.1 * mscale_all_dim * math.log(factor) + 1.0
            scale = scale * mscale * mscale
        return scale
    with decimal.localcontext() as ctx:
        ctx.prec = 60
        value = Decimal(1) / Decimal(qk_head_dim).sqrt()
        if mscaled:
            assert factor is not None and mscale_all_dim is not None
            m = Decimal(1) / Decimal(10) * Decimal(mscale_all_dim) * Decimal(factor).ln() + 1
            value *= m * m
    return float(Fraction(value))  # 60 digits: a float64 midpoint would have to lie within 1e-44 relative


def with_model_arrays(
    table: Table, *, no_rope_layers: tuple[int, ...] | None, attn_scale: float | None, floor_scale: int | None,
    qk_head_dim: int | None, positions: object | None, arithmetic: str, fields: tuple[str, ...] = (),
    xpos_scale_base: int | None = None, xpos_center: str | None = None,
) -> Table:  # fmt: skip
    """``table`` (a RoPE table) with the model's arrays and parameters added: ``no_rope_layers`` (int8, one per
    layer), ``attn_scales`` (float32, one per row of the caches: at ``positions``, or ``0 .. seq_len - 1``) and
    the parameter ``softmax_scale``, ``xpos_scale`` (float32, the caches' shape); ``fields`` are added to its
    ``config_fields``."""
    arrays, params, axes = dict(table.arrays), dict(table.params), dict(table.axes)
    if no_rope_layers is not None:
        if len(no_rope_layers) > MAX_LAYERS:
            raise SpecError(f"no_rope_layers names at most {MAX_LAYERS} layers, got {len(no_rope_layers)}",
                            param="no_rope_layers")  # fmt: skip
        arrays["no_rope_layers"] = np.array(no_rope_layers, np.int8)
        axes["no_rope_layers"] = ("layers",)
        params["no_rope_layers"] = ",".join(str(int(v)) for v in no_rope_layers)
    if floor_scale is not None and attn_scale is None:
        raise SpecError("floor_scale is the step of Llama 4's attn_scale: give attn_scale too", param="floor_scale")
    if attn_scale is not None:
        floor_scale = 8192 if floor_scale is None else floor_scale
        if positions is None:
            positions = np.arange(int(params["seq_len"]), dtype=np.int64)
        else:
            positions = _ids(positions)
        check_memory(32 * positions.size, f"Llama 4's attention scales ({positions.size})")
        arrays["attn_scales"] = attn_scales(positions, floor_scale, attn_scale, arithmetic)
        axes["attn_scales"] = ("seq_len",)
        params.update(attn_scale=attn_scale, floor_scale=floor_scale)
    if qk_head_dim is not None:
        mscale_all_dim = params.get("mscale_all_dim")
        factor = params.get("factor")
        params["qk_head_dim"] = qk_head_dim
        params["softmax_scale"] = softmax_scale(
            qk_head_dim, str(params["scaling"]), None if factor is None else float(factor),
            None if mscale_all_dim is None else float(mscale_all_dim), arithmetic,
        )  # fmt: skip
    if xpos_center is not None and xpos_scale_base is None:
        raise SpecError("xpos_center places xPos's rows: give xpos_scale_base too", param="xpos_center")
    if xpos_scale_base is not None:
        arrays["xpos_scale"], xpos_params = _xpos(params, xpos_scale_base, xpos_center, positions, arithmetic)
        axes["xpos_scale"] = axes["cos"] if "cos" in axes else ("seq_len", "head_dim")
        params.update(xpos_params)
    if fields and "config_fields" in params:
        params["config_fields"] = ",".join(dict.fromkeys([*str(params["config_fields"]).split(","), *fields]))
    return Table(table.kind, arrays, params, axes)


def _xpos(
    params: dict[str, Any], scale_base: int, center: str | None, positions: object | None, arithmetic: str
) -> tuple[np.ndarray, dict[str, Any]]:
    """xPos's ``xpos_scale`` over the caches' rows and columns, and the parameters that record it."""
    from ..encodings import xpos

    if positions is not None:
        raise SpecError(
            "xPos centres its rows on the sequence (0 .. seq_len - 1), not on given position ids",
            param="xpos_scale_base",
        )
    if arithmetic not in ("exact", "framework"):
        raise SpecError(f"xPos's scale has exact and framework arithmetic, not {arithmetic}", param="arithmetic")
    center = "torchscale" if center is None else center
    rows, width = int(params["seq_len"]), int(params.get("rotary_dim") or params["head_dim"])
    check_memory(16 * rows * width, f"xPos's scale ({rows} x {width})")
    scales = xpos.xpos_scale(xpos.xpos_positions(rows, center), width, scale_base, arithmetic)
    return xpos.expand(scales, str(params["layout"])), {"xpos_scale_base": scale_base, "xpos_center": center}
