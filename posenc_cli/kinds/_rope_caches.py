"""RoPE's caches once :func:`posenc_cli.kinds.rope.rope` has checked and merged its keywords: the caches at positions
``0 .. seq_len - 1`` (:mod:`posenc_cli.encodings.rope` defines every value) and the forms models use: a partial rotary
dimension (``rotary_dim``), the caches at given position ids (packed sequences, left padding), Qwen2-VL's M-RoPE over
three rows of ids (``mrope_section``, and Qwen3-VL's interleaved form), LongRoPE's two caches at once
(``longrope_pair``) and the half-width layout of ONNX's ``RotaryEmbedding``.

Imported when a RoPE table is made, not when the registry is read: ``posenc generate`` never loads the RoPE engine.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from ..dtypes import ElementType
from ..encodings import rope as rope_encoding
from ..encodings import rope_framework
from ..errors import SpecError
from ..read import existing, load
from ..saturation import check_saturate, may_clip, refuse_clipping, zero_note
from ..system.capacity import check_memory
from ..table import Array, RowSource, Table, array_sha256
from ..table import Param as Value

if TYPE_CHECKING:
    from .rope_config import RopeConfig

__all__ = ["MAX_POSITION_IDS", "caches"]

#: The float64 caches of the same parameters: the correctly rounded values a quantised table rounds from.
_FLOAT64 = ElementType.of("float64")


#: The most position ids posenc takes (each one a row of the caches, built whole).
MAX_POSITION_IDS = 1 << 24


def _positions(position_ids: object, mrope: bool) -> np.ndarray:
    """Checked int64 position ids: ``(seq,)``, or ``(3, seq)`` for M-RoPE (temporal, height, width); a path is a
    file posenc reads (an ``.npy``), holding one integer array."""
    if isinstance(position_ids, (str, os.PathLike)):
        table = load(existing(position_ids, "position_ids", "the position ids file"))
        if len(table.arrays) != 1:
            raise SpecError(
                f"{os.fspath(position_ids)!r} holds {len(table.arrays)} arrays; position ids are one array",
                param="position_ids",
            )
        position_ids = np.asarray(next(iter(table.arrays.values())))
    ids = np.asarray(position_ids)
    if mrope and ids.ndim == 1:  # text only: HF expands (seq,) to the three axes alike
        ids = np.broadcast_to(ids, (3, *ids.shape))
    if ids.dtype.kind not in "iu" or ids.dtype.itemsize > 8:
        raise SpecError(f"position ids must be integers, got {ids.dtype.name}", param="position_ids")
    want = "(3, seq) for M-RoPE (mrope_section)" if mrope else "(seq,), or (3, seq) with an mrope_section"
    if (ids.ndim, ids.shape[0] if ids.ndim else 0) != ((2, 3) if mrope else (1, ids.shape[0] if ids.ndim else 0)):
        raise SpecError(f"position ids must have shape {want}, got {ids.shape}", param="position_ids")
    if ids.size == 0 or ids.size > MAX_POSITION_IDS:
        raise SpecError(f"position ids must hold 1 to {MAX_POSITION_IDS} values, got {ids.size}", param="position_ids")
    if (
        ids.dtype.kind == "u"
        and int(ids.max()) >= 1 << 32
        or ids.dtype.kind == "i"
        and not (0 <= int(ids.min()) and int(ids.max()) < 1 << 32)
    ):
        raise SpecError("position ids must be from 0 to 2**32 - 1", param="position_ids")
    return ids.astype(np.int64)


def _sections(mrope_section: Sequence[int], half: int, interleaved: bool) -> np.ndarray:
    """The axis (0 temporal, 1 height, 2 width) each frequency ``k < half`` takes its position from."""
    if len(mrope_section) != 3 or any(isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in mrope_section):
        raise SpecError(f"mrope_section must be three counts, got {list(mrope_section)!r}", param="mrope_section")
    if sum(mrope_section) != half:
        raise SpecError(
            f"mrope_section must add up to rotary_dim / 2 = {half}, got {list(mrope_section)} "
            f"(sum {sum(mrope_section)})",
            param="mrope_section",
        )
    k = np.arange(half)
    if not interleaved:  # HF apply_multimodal_rotary_pos_emb: consecutive sections t, h, w
        return np.searchsorted(np.cumsum(mrope_section), k, side="right")
    axis = np.zeros(half, np.int64)  # Qwen3-VL apply_interleaved_mrope: t, h, w, t, h, w, ... within each count
    for a in (1, 2):
        axis[(k % 3 == a) & (k < 3 * mrope_section[a])] = a
    return axis


def _at_positions(
    spec: rope_encoding.RopeSpec, part: str, ids: np.ndarray, dtype: str, q: tuple[float | None, int | None]
) -> np.ndarray:
    """The ``part`` cache's rows at the positions ``ids`` (1-D), each row computed once per distinct position, in
    runs of consecutive positions (the engine's contiguous rows: every value correctly rounded)."""
    unique, inverse = np.unique(ids, return_inverse=True)
    breaks = np.flatnonzero(np.diff(unique) != 1) + 1
    blocks = []
    for run in np.split(unique, breaks):
        first, last = int(run[0]), int(run[-1])
        blocks.append(rope_encoding.cache_rows(spec, part, first, last + 1, dtype, quant_scale=q[0], zero_point=q[1]))
    rows: np.ndarray = np.concatenate(blocks)[inverse.reshape(-1)]
    return rows


class _Values:
    """How a cache's values are made in ``element``'s type: by posenc's exact engine (``arithmetic="exact"``), or
    as a framework's float32 operations make them (``framework``: transformers, ``ggml``: llama.cpp;
    :mod:`posenc_cli.encodings.rope_framework`), each value then rounded once to the type."""

    def __init__(self, element: ElementType, arithmetic: str) -> None:
        self.element, self.arithmetic = element, arithmetic
        self.q = (element.scale, element.zero_point if element.scale is not None else None)
        ggml = arithmetic == "ggml"
        self._rows = rope_framework.ggml_cache_rows if ggml else rope_framework.cache_rows
        self._inv = rope_framework.ggml_inv_freq if ggml else rope_framework.inv_freq

    def rows_of(self, spec: rope_encoding.RopeSpec, part: str) -> Callable[[int, int], np.ndarray]:
        """``rows(lo, hi)``: rows ``lo .. hi - 1`` of the ``part`` cache."""
        if self.arithmetic == "exact":
            q = self.q
            return rope_encoding.cache_rows_of(spec, part, self.element.name, quant_scale=q[0], zero_point=q[1])
        return lambda lo, hi: _in_type(self._rows(spec, part, lo, hi), self.element)

    def at(self, spec: rope_encoding.RopeSpec, part: str, ids: np.ndarray) -> np.ndarray:
        """The ``part`` cache's rows at the positions ``ids`` (1-D)."""
        if self.arithmetic == "exact":
            return _at_positions(spec, part, ids, self.element.name, self.q)
        return _in_type(self._rows(spec, part, 0, 0, ids), self.element)

    def inv_freq(self, spec: rope_encoding.RopeSpec) -> np.ndarray:
        if self.arithmetic == "exact":
            q = self.q
            return rope_encoding.inv_freq(spec, self.element.name, quant_scale=q[0], zero_point=q[1])
        return _in_type(self._inv(spec), self.element)


def _arrays(
    caches: dict[str, rope_encoding.RopeSpec],
    ids: np.ndarray | None,
    axis: np.ndarray | None,
    shape: tuple[int, int],
    element: ElementType,
    lazy: bool,
    arithmetic: str = "exact",
) -> dict[str, Array]:
    """The caches and ``inv_freq`` of each spec of ``caches`` (by array-name suffix) in ``element``'s type, in
    ``arithmetic`` (:class:`_Values`): rows ``0 .. seq_len - 1`` (row sources when ``lazy``), or the rows at
    position ``ids`` (by M-RoPE section ``axis`` of each frequency when given), built whole."""
    values = _Values(element, arithmetic)
    arrays: dict[str, Array] = {}
    for suffix, each in caches.items():
        if ids is None and not lazy and arithmetic == "framework":  # both caches from one pass (sincos)
            pair = rope_framework.cache_pair(each, 0, shape[0])
            arrays["cos" + suffix], arrays["sin" + suffix] = (_in_type(part, element) for part in pair)
            arrays["inv_freq" + suffix] = values.inv_freq(each)
            continue
        for part in ("cos", "sin"):
            if ids is None:
                source = RowSource(shape, element.storage, values.rows_of(each, part))
                arrays[part + suffix] = source if lazy else np.asarray(source)
            elif axis is None:
                arrays[part + suffix] = values.at(each, part, ids)
            else:
                by_column = axis[rope_encoding.frequencies(each)]
                out = np.empty(shape, element.storage)
                for a in range(3):
                    take = by_column == a
                    if take.any():
                        out[:, take] = values.at(each, part, ids[a])[:, take]
                arrays[part + suffix] = out
        arrays["inv_freq" + suffix] = values.inv_freq(each)
    return arrays


def _in_type(values: np.ndarray, element: ElementType) -> np.ndarray:
    """Float32 ``values`` (a framework's) in ``element``'s type: each rounded once, as ``.to(dtype)`` does (an
    entry the float64 shortcut cannot decide, from its exact value); float32 as it is."""
    if element.name == "float32":
        return np.ascontiguousarray(values, np.float32)
    y = np.asarray(values, np.float64)
    out, undecided = element.convert(y)
    for at in np.argwhere(undecided):
        out[tuple(at)] = element.from_exact(Fraction(float(y[tuple(at)])))
    return out


def _refuse_clipping(
    caches: dict[str, rope_encoding.RopeSpec],
    ids: np.ndarray | None,
    axis: np.ndarray | None,
    shape: tuple[int, int],
    element: ElementType,
) -> None:
    """Refuse caches whose values ``element`` would clip (:mod:`posenc_cli.saturation`), before any is made in it.

    Bounds known up front decide most tables: ``|cos|`` and ``|sin|`` never exceed the folded attention scaling,
    ``inv_freq[k]`` never exceeds its multiplier ``m_k``. Only when one of them does not fit are the float64 caches
    computed and counted. The refusal names ``--no-attention-scaling`` when the folded scaling is what clips."""
    reach = max(abs(each.amplitude) for each in caches.values())
    fastest = max(float(max(each.mults)) if each.mults else 1.0 for each in caches.values())
    if not (may_clip(element, -reach, reach) or may_clip(element, 0.0, fastest)):
        return
    ways: tuple[str, ...] = ()
    folded = [each.attention_scaling for each in caches.values() if each.fold_scaling and each.attention_scaling != 1]
    if folded and may_clip(element, -reach, reach):
        ways = (
            f"--no-attention-scaling leaves the attention scaling {folded[0]:.6g} out of cos/sin, which then stay "
            "in [-1, 1] (its value stays recorded as attention_scaling: llama.cpp and TensorRT-LLM take it as a "
            "scalar)",
        )
    refuse_clipping(element, _arrays(caches, ids, axis, shape, _FLOAT64, lazy=True), ways)


def _lost_frequencies(
    caches: dict[str, rope_encoding.RopeSpec], arrays: dict[str, Array], element: ElementType
) -> None:
    """A note (:func:`~posenc_cli.saturation.zero_note`) for each ``inv_freq`` that holds frequencies rounded to 0:
    not clipping (every entry is as near its exact value as the type allows), so not refused, but a kernel that
    computes its angles from ``inv_freq`` would not rotate those dimensions."""
    for suffix, each in caches.items():
        zero_note(
            element,
            "inv_freq" + suffix,
            np.asarray(arrays["inv_freq" + suffix]),
            functools.partial(rope_encoding.inv_freq, each, "float64"),
            "a kernel that computes its angles from inv_freq would leave those dimensions unrotated (the cos and "
            "sin caches keep them)",
        )


def caches(
    seq_len: int | None,
    head_dim: int | None,
    *,
    theta: float | None,
    layout: str,
    scaling: str | None,
    attention_scaling: bool,
    rotary_dim: int | None,
    position_ids: object | None,
    mrope_section: Sequence[int] | None,
    mrope_interleaved: bool,
    longrope_pair: bool,
    element: ElementType,
    lazy: bool,
    from_config: RopeConfig | None,
    layer_type: str | None,
    saturate: bool,
    work_per_value: int,
    arithmetic: str = "exact",
    **modes: object,
) -> Table:
    """:func:`~posenc_cli.kinds.rope.rope`'s table once the config is read and merged: every value checked, the
    caches made (``work_per_value``: the peak bytes per value of caches built whole, the kind's)."""
    theta = 10000.0 if theta is None else theta
    scaling = "none" if scaling is None else scaling
    if head_dim is None:
        raise SpecError("rope needs head_dim (or a config that gives it)", param="head_dim")
    if isinstance(head_dim, bool) or not isinstance(head_dim, int) or head_dim < 2:
        raise SpecError(f"head_dim must be an integer of at least 2, got {head_dim!r}", param="head_dim")
    proportional = scaling == "proportional"  # rotary_dim rotates the first dims, frequencies over head_dim
    dim = head_dim if rotary_dim is None or proportional else rotary_dim
    if rotary_dim is not None:
        if isinstance(rotary_dim, bool) or not isinstance(rotary_dim, int) or not 2 <= rotary_dim <= head_dim:
            raise SpecError(f"rotary_dim must be an integer from 2 to head_dim = {head_dim}, got {rotary_dim!r}",
                            param="rotary_dim")  # fmt: skip
        if rotary_dim % 2:
            raise SpecError(f"rotary_dim must be even (RoPE rotates pairs), got {rotary_dim}", param="rotary_dim")
    if mrope_section is not None and position_ids is None:  # positions 0 .. n-1 on every axis: the plain caches
        mrope_section, mrope_interleaved = None, False
    if mrope_interleaved and mrope_section is None:
        raise SpecError("mrope_interleaved needs an mrope_section", param="mrope_interleaved")
    if longrope_pair and scaling != "longrope":
        raise SpecError(f"longrope_pair applies to scaling longrope, not {scaling}", param="longrope_pair")
    ids = None if position_ids is None else _positions(position_ids, mrope_section is not None)
    if ids is not None:
        if seq_len is not None and seq_len != ids.shape[-1]:
            raise SpecError(
                f"seq_len {seq_len} disagrees with the {ids.shape[-1]} position ids; give one or the other",
                param="seq_len",
            )
        seq_len = int(ids.shape[-1])
    if seq_len is None:
        raise SpecError("rope needs seq_len (or position ids, or a config's max_position_embeddings)", param="seq_len")
    reach = seq_len if ids is None else int(ids.max()) + 1  # the length HF's dynamic update evaluates at
    settings = dict(theta=theta, layout=layout, scaling=scaling, fold_scaling=attention_scaling, **modes)
    if proportional:
        settings["angles"] = (head_dim if rotary_dim is None else rotary_dim) // 2
    spec = rope_encoding.resolve(seq_len=reach, head_dim=dim, **settings)  # type: ignore[arg-type]
    width = rope_encoding.width(spec)
    if not lazy or ids is not None:
        check_memory(
            2 * (1 + 2 * longrope_pair) * seq_len * width * work_per_value,
            f"the RoPE caches ({seq_len} x {width}) built whole",
        )
    caches = {"": spec}
    if longrope_pair:
        caches = {
            f"_{which}": rope_encoding.resolve(seq_len=reach, head_dim=dim, longrope_cache=which, **settings)  # type: ignore[arg-type]
            for which in ("short", "long")
        }  # fmt: skip
    axis = None if mrope_section is None or ids is None else _sections(mrope_section, dim // 2, mrope_interleaved)
    saturated = check_saturate(saturate, element)
    if not saturated:
        _refuse_clipping(caches, ids, axis, (seq_len, width), element)
    if arithmetic == "ggml":
        for each in caches.values():
            rope_framework.check_ggml(each)
    arrays = _arrays(caches, ids, axis, (seq_len, width), element, lazy, arithmetic)
    _lost_frequencies(caches, arrays, element)
    params: dict[str, Value] = {**spec.params(), "seq_len": seq_len, "head_dim": head_dim, "dtype": element.name}
    if rotary_dim is not None and rotary_dim != head_dim:
        params["rotary_dim"] = rotary_dim
    if ids is not None:
        params["position_ids_sha256"] = array_sha256(ids)
        if spec.seq_len != seq_len:
            params["positions_reach"] = spec.seq_len
    if mrope_section is not None:
        params["mrope_section"] = ",".join(str(int(s)) for s in mrope_section)
        if mrope_interleaved:
            params["mrope_interleaved"] = True
    if longrope_pair:
        params["longrope_pair"] = True
    if from_config is not None:
        params["config_fields"] = ",".join(from_config.fields)
        if layer_type is not None:
            params["layer_type"] = layer_type
    if element.scale is not None:
        params.update(scale=element.scale, zero_point=element.zero_point)
    if saturated:
        params["saturate"] = True
    if arithmetic != "exact":
        params["arithmetic"] = arithmetic
    columns = "freqs" if layout == "half-width" else "head_dim" if rotary_dim is None else "rotary_dim"
    axes: dict[str, tuple[str, ...]] = {}
    for suffix in caches:
        axes.update({f"cos{suffix}": ("seq_len", columns), f"sin{suffix}": ("seq_len", columns)})
        axes[f"inv_freq{suffix}"] = ("freqs",)
    return Table("rope", arrays, params, axes)
