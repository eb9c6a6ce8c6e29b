"""RoPE caches (``posenc rope``): the maker behind the command and the API, re-exported by :mod:`posenc_cli.make`.

Besides the caches at positions ``0 .. seq_len - 1`` (:mod:`posenc_cli.encodings.rope` defines every value), the
forms models use: a partial rotary dimension (``rotary_dim``), the caches at given position ids (packed sequences,
left padding), Qwen2-VL's M-RoPE over three rows of ids (``mrope_section``, and Qwen3-VL's interleaved form),
LongRoPE's two caches at once (``longrope_pair``) and the half-width layout of ONNX's ``RotaryEmbedding``.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterator, Sequence

import numpy as np

from . import _resources, model_config, ranges
from .dtypes import ElementType
from .encodings import check_params
from .encodings import rope as rope_encoding
from .errors import SpecError
from .read import PathLike, existing, load
from .saturation import check_saturate, may_clip, refuse_clipping, zero_note
from .table import Array, Param, RowSource, Table, array_sha256

__all__ = ["MAX_POSITION_IDS", "rope"]

#: The float64 caches of the same parameters: the correctly rounded values a quantised table rounds from.
_FLOAT64 = ElementType.of("float64")
#: The most position ids posenc takes (each one a row of the caches, built whole).
MAX_POSITION_IDS = 1 << 24
#: The scaling modes' own parameters, in the order ``rope`` unpacks them.
_MODE_FIELDS = (
    "factor", "original_max_positions", "max_positions", "low_freq_factor", "high_freq_factor", "beta_fast",
    "beta_slow", "truncate", "mscale", "mscale_all_dim", "attention_factor", "short_factor", "long_factor",
)  # fmt: skip


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


def _arrays(
    caches: dict[str, rope_encoding.RopeSpec],
    ids: np.ndarray | None,
    axis: np.ndarray | None,
    shape: tuple[int, int],
    element: ElementType,
    lazy: bool,
) -> dict[str, Array]:
    """The caches and ``inv_freq`` of each spec of ``caches`` (by array-name suffix) in ``element``'s type: rows
    ``0 .. seq_len - 1`` (row sources when ``lazy``), or the rows at position ``ids`` (by M-RoPE section ``axis``
    of each frequency when given), built whole."""
    q = (element.scale, element.zero_point if element.scale is not None else None)
    arrays: dict[str, Array] = {}
    for suffix, each in caches.items():
        for part in ("cos", "sin"):
            if ids is None:
                rows = rope_encoding.cache_rows_of(each, part, element.name, quant_scale=q[0], zero_point=q[1])
                source = RowSource(shape, element.storage, rows)
                arrays[part + suffix] = source if lazy else np.asarray(source)
            elif axis is None:
                arrays[part + suffix] = _at_positions(each, part, ids, element.name, q)
            else:
                by_column = axis[rope_encoding.frequencies(each)]
                out = np.empty(shape, element.storage)
                for a in range(3):
                    take = by_column == a
                    if take.any():
                        out[:, take] = _at_positions(each, part, ids[a], element.name, q)[:, take]
                arrays[part + suffix] = out
        arrays["inv_freq" + suffix] = rope_encoding.inv_freq(each, element.name, quant_scale=q[0], zero_point=q[1])
    return arrays


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


def rope(
    seq_len: int | None = None,
    head_dim: int | None = None,
    *,
    config: PathLike | None = None,
    layer_type: str | None = None,
    theta: float | None = None,
    layout: str = "half",
    scaling: str | None = None,
    attention_scaling: bool = True,
    rotary_dim: int | None = None,
    position_ids: object | None = None,
    mrope_section: Sequence[int] | None = None,
    mrope_interleaved: bool = False,
    longrope_pair: bool = False,
    dtype: str = "float32",
    scale: float | None = None,
    zero_point: int | None = None,
    saturate: bool = False,
    lazy: bool = False,
    factor: float | None = None,
    original_max_positions: int | None = None,
    max_positions: int | None = None,
    low_freq_factor: float | None = None,
    high_freq_factor: float | None = None,
    beta_fast: float | None = None,
    beta_slow: float | None = None,
    truncate: bool | None = None,
    mscale: float | None = None,
    mscale_all_dim: float | None = None,
    attention_factor: float | None = None,
    short_factor: Sequence[float] | None = None,
    long_factor: Sequence[float] | None = None,
) -> Table:
    """RoPE caches as HF transformers computes them: a :class:`Table` of kind ``"rope"`` with arrays ``cos`` and
    ``sin`` (seq_len, rotary_dim) and ``inv_freq`` (rotary_dim/2,).

    ``scaling`` is ``none``, ``linear``, ``dynamic``, ``yarn``, ``llama3`` or ``longrope`` with its parameters named
    as in HF's ``rope_parameters`` (``factor``, ``original_max_positions``, ``max_positions``, ``low_freq_factor``,
    ``high_freq_factor``, ``beta_fast``, ``beta_slow``, ``truncate``, ``mscale``, ``mscale_all_dim``,
    ``attention_factor``, ``short_factor``, ``long_factor``); :mod:`posenc_cli.encodings.rope` defines each. HF
    multiplies cos and sin by the mode's attention scaling (YaRN, LongRoPE); ``attention_scaling=False`` leaves it
    out (the parameters record its value either way). ``layout`` ``half`` is HF/GPT-NeoX ``rotate_half``,
    ``interleaved`` GPT-J/llama.cpp's adjacent pairs, ``half-width`` each frequency once (ONNX ``RotaryEmbedding``).
    Every value is correctly rounded.

    - ``rotary_dim``: the rotated dimensions of a partial rotary model (GPT-NeoX ``rotary_pct``, Phi's
      ``partial_rotary_factor``): the caches and every frequency are over ``rotary_dim``, as HF's ``dim``.
    - ``position_ids`` (integers, ``(seq,)``): the caches' rows at those positions instead of ``0 .. seq_len - 1``
      (``seq_len`` is then their count); dynamic and LongRoPE are evaluated at ``max(position_ids) + 1``, as HF's
      ``dynamic_rope_update`` does. With ``mrope_section`` (Qwen2-VL: ``[16, 24, 24]``) the ids are ``(3, seq)``
      (temporal, height, width) and each frequency takes its section's row, as HF's
      ``apply_multimodal_rotary_pos_emb`` recomposes them (``mrope_interleaved``: Qwen3-VL's interleaved sections).
    - ``longrope_pair``: both LongRoPE caches, ``cos_short``/``sin_short``/``inv_freq_short`` and the ``_long``
      ones, whatever ``seq_len`` is (ONNX Runtime GenAI bakes both).

    - ``dtype`` a fixed-point type or int8: values the type cannot hold are refused with their count
      (:mod:`posenc_cli.saturation`), before anything is made in it: YaRN's and LongRoPE's attention scaling folded
      into cos and sin (1.1386 for Qwen2.5's factor 4) takes them beyond q15's [-1, 1]. The ways out are
      ``attention_scaling=False`` (cos and sin in [-1, 1], the scaling recorded as ``attention_scaling``, the
      scalar llama.cpp and TensorRT-LLM take), a type with integer bits (``fixed16.14``), or ``saturate=True``,
      which clips them to the type's ends and is recorded. An ``inv_freq`` entry that rounds to 0 in the type is
      not clipping (every entry is as near its exact value as the type allows) and is not refused; a
      :class:`~posenc_cli.errors.PosencWarning` names how many, since a kernel that computes its angles from
      ``inv_freq`` would leave those dimensions unrotated.

    - ``config``: a model's ``config.json`` (or its folder), read as transformers reads its RoPE
      (:mod:`posenc_cli.model_config`): every parameter above comes from it, ``seq_len`` defaults to its
      ``max_position_embeddings``, ``layer_type`` picks Gemma's ``full_attention`` or ``sliding_attention``, and
      any keyword given overrides the config (a ``scaling`` other than the config's drops its scaling fields). The
      table records the config fields it read (``config_fields``) and every value, so it regenerates without the
      file.

    Examples
    --------
    >>> t = rope(8, 64, scaling="yarn", factor=4.0, original_max_positions=4096)
    >>> t.arrays["cos"].shape, t.arrays["inv_freq"].shape, round(t.params["attention_scaling"], 6)
    ((8, 64), (32,), 1.138629)
    >>> rope(head_dim=8, position_ids=[5, 0, 5]).arrays["cos"][:, 0].round(4).tolist()
    [0.2837, 1.0, 0.2837]
    """
    ranges.check(
        seq_len=seq_len, head_dim=head_dim, theta=theta, rotary_dim=rotary_dim, mrope_section=mrope_section,
        factor=factor, original_max_positions=original_max_positions, max_positions=max_positions,
        low_freq_factor=low_freq_factor, high_freq_factor=high_freq_factor, beta_fast=beta_fast, beta_slow=beta_slow,
        mscale=mscale, mscale_all_dim=mscale_all_dim, attention_factor=attention_factor, short_factor=short_factor,
        long_factor=long_factor, scale=scale, zero_point=zero_point,
    )  # fmt: skip
    _, _, _, element = check_params(1, 1, 10000.0, dtype, scale=scale, zero_point=zero_point)
    explicit = {
        "head_dim": head_dim, "theta": theta, "scaling": scaling, "rotary_dim": rotary_dim, "factor": factor,
        "original_max_positions": original_max_positions, "max_positions": max_positions,
        "low_freq_factor": low_freq_factor, "high_freq_factor": high_freq_factor, "beta_fast": beta_fast,
        "beta_slow": beta_slow, "truncate": truncate, "mscale": mscale, "mscale_all_dim": mscale_all_dim,
        "attention_factor": attention_factor, "short_factor": short_factor, "long_factor": long_factor,
        "mrope_section": mrope_section, "mrope_interleaved": mrope_interleaved or None,
    }  # fmt: skip
    from_config: model_config.RopeConfig | None = None
    configured: set[str] = set()  # the settings the config gave, or that follow from what it gave (yarn's factor)
    if config is not None:
        from_config = model_config.rope_settings(config, layer_type=layer_type)
        merged = dict(from_config.settings)
        if scaling is not None and scaling != merged["scaling"]:  # another mode: the config's own fields go
            merged = {k: v for k, v in merged.items() if k not in _MODE_FIELDS}
        configured = {k for k in explicit if explicit[k] is None}
        merged.update({k: v for k, v in explicit.items() if v is not None})
        if seq_len is None and position_ids is None and from_config.seq_len is not None:
            seq_len = from_config.seq_len
            configured.add("seq_len")
        head_dim, theta, scaling, rotary_dim = (merged.get(k) for k in ("head_dim", "theta", "scaling", "rotary_dim"))
        factor, original_max_positions, max_positions = (merged.get(k) for k in _MODE_FIELDS[:3])
        low_freq_factor, high_freq_factor, beta_fast, beta_slow, truncate = (merged.get(k) for k in _MODE_FIELDS[3:8])
        mscale, mscale_all_dim, attention_factor, short_factor, long_factor = (merged.get(k) for k in _MODE_FIELDS[8:])
        mrope_section, mrope_interleaved = merged.get("mrope_section"), bool(merged.get("mrope_interleaved"))
    elif layer_type is not None:
        raise SpecError("layer_type picks a layer type of a config: give the config (--config)", param="layer_type")
    with _named_config(config, configured):
        return _caches(
            seq_len, head_dim, theta=theta, layout=layout, scaling=scaling, attention_scaling=attention_scaling,
            rotary_dim=rotary_dim, position_ids=position_ids, mrope_section=mrope_section,
            mrope_interleaved=mrope_interleaved, longrope_pair=longrope_pair, element=element, lazy=lazy,
            factor=factor, original_max_positions=original_max_positions, max_positions=max_positions,
            low_freq_factor=low_freq_factor, high_freq_factor=high_freq_factor, beta_fast=beta_fast,
            beta_slow=beta_slow, truncate=truncate, mscale=mscale, mscale_all_dim=mscale_all_dim,
            attention_factor=attention_factor, short_factor=short_factor, long_factor=long_factor,
            from_config=from_config, layer_type=layer_type, saturate=saturate,
        )  # fmt: skip


@contextlib.contextmanager
def _named_config(config: PathLike | None, configured: set[str]) -> Iterator[None]:
    """A :class:`SpecError` about a value the config gave (not one typed) names the config (``--config``): the
    value is wrong there, and the option it would blame was never given."""
    try:
        yield
    except SpecError as exc:
        if config is not None and exc.param in configured:
            raise SpecError(f"{exc} (a value from the config {os.fspath(config)!r})", param="config") from None
        raise


def _caches(
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
    from_config: model_config.RopeConfig | None,
    layer_type: str | None,
    saturate: bool,
    **modes: object,
) -> Table:
    """:func:`rope`'s table once the config is read and merged: every value checked, the caches made."""
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
        _resources.check_memory(
            2 * (1 + 2 * longrope_pair) * seq_len * width * _resources.WORK_BYTES_PER_VALUE["rope"],
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
    arrays = _arrays(caches, ids, axis, (seq_len, width), element, lazy)
    _lost_frequencies(caches, arrays, element)
    params: dict[str, Param] = {**spec.params(), "seq_len": seq_len, "head_dim": head_dim, "dtype": element.name}
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
    columns = "freqs" if layout == "half-width" else "head_dim" if rotary_dim is None else "rotary_dim"
    axes: dict[str, tuple[str, ...]] = {}
    for suffix in caches:
        axes.update({f"cos{suffix}": ("seq_len", columns), f"sin{suffix}": ("seq_len", columns)})
        axes[f"inv_freq{suffix}"] = ("freqs",)
    return Table("rope", arrays, params, axes)
