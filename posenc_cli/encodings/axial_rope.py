"""Axial RoPE of vision and image-generation models: the ``cos`` and ``sin`` a vision tower or a diffusion
transformer passes its attention, over a patch grid (transformers 5.25, diffusers 0.42).

Each style gives every token integer positions on two or three axes (:func:`positions`) and every half-width
column ``c`` an axis ``a_c`` and an exponent ``e_c``: the column's angle is ``pos[a_c] * theta**(-e_c)``. The
``head_dim`` columns of ``cos`` (and ``sin``) are those half-width columns laid out as the framework lays them:

``pixtral`` (``PixtralVisionRotaryEmbedding``)
    Frequencies ``theta**(-2k/d)``, ``k < d/2`` (``d = head_dim``): height takes the even ``k``, width the odd;
    half columns ``[h: e = 4j/d | w: e = (4j + 2)/d]``, ``j < d/4``, then the half repeated: ``[h | w | h | w]``.
    Rows: the patches row-major, positions ``(row, column)``.
``qwen2-vl``, ``qwen2.5-vl`` (``Qwen2VLVisionRotaryEmbedding``, ``Qwen2_5_VLVisionRotaryEmbedding``)
    Frequencies ``theta**(-2j/(d/2))``, ``j < d/4``, the same for both axes: ``[h | w | h | w]``. Rows: transformers'
    ``get_vision_position_ids``: the patches in ``m x m`` blocks (``m`` the spatial merge size), blocks row-major,
    row-major within a block, the image repeated for each of ``frames`` temporal patches. ``qwen2.5-vl`` then
    reorders the rows as its vision tower does (``get_vision_window_index``): merged tokens (``m * m`` rows each)
    taken window by window, windows of ``window_size // m // patch_size`` merged tokens per side, row-major.
``flux`` (diffusers ``FluxPosEmbed``)
    Three axes of ``axes_dim`` columns (``[16, 56, 56]`` in FLUX.1), axis ``i``'s frequencies
    ``theta**(-2k/axes_dim[i])``, ``k < axes_dim[i]/2``, each repeated twice side by side (``repeat_interleave``).
    Rows: ``text_tokens`` text ids ``(0, 0, 0)``, then ``FluxPipeline._prepare_latent_image_ids`` of the latent
    ``H x W``: ``(0, r, c)`` over ``(H/2) x (W/2)``, row-major.
``hunyuan-video`` (diffusers ``HunyuanVideoRotaryPosEmbed``), ``wan`` (diffusers ``WanRotaryPosEmbed``)
    A video latent's ``T x H x W`` (``grid``), patched ``pt x p x p`` (``video_patch``, ``(1, 2, 2)`` in both):
    rows the ``(T/pt) x (H/p) x (W/p)`` tokens' ``(t, h, w)``, row-major. Three axes as FLUX's, each frequency
    twice side by side: HunyuanVideo's ``axes_dim`` (``rope_axes_dim``, ``[16, 56, 56]``, ``theta`` 256), Wan's
    ``[d - 4 * (d // 6), 2 * (d // 6), 2 * (d // 6)]`` (``[44, 42, 42]`` at ``d = 128``); Wan precomputes
    ``max_seq_len`` 1024 positions per axis, so no axis may hold more tokens.
``llama4`` (transformers' ``Llama4VisionRotaryEmbedding``)
    A square grid. Frequencies ``theta**(-2k/(d/2))``, ``k < d/4``; half columns ``[w | h]`` at positions
    ``(column + 1, row + 1)`` (``img_idx % idx + 1``, ``img_idx // idx + 1``), each column twice side by side: the
    real form of its complex ``freqs_ci``, whose column ``c`` multiplies the query pair ``(2c, 2c + 1)``
    (``view_as_complex``). Rows: the patches row-major, then the class token (``img_idx = -2``, its frequencies
    zeroed by ``masked_fill``: angle 0, ``cos`` 1, ``sin`` 0), as ``Llama4VisionModel`` appends it last.
``eva02`` (timm's ``RotaryEmbeddingCat``, ``in_pixels=False``, as EVA-02 builds it)
    Bands ``theta**(-k/(d/4))``, ``k < d/4`` (``freq_bands``), the same for both axes; half columns ``[h | w]``,
    each twice side by side (``_rope_layout``); timm's ``get_embed`` is ``cat([sin, cos], -1)``, which its attention
    splits back. Rows: the patches row-major at positions ``(row, column)``; with ``ref_grid`` (``ref_feat_shape``,
    16x16 in EVA-02) each axis's position ``i`` becomes ``i / side * ref`` (``scales``), exactly that rational.

``exact`` values are ``cos`` and ``sin`` of the real angle correctly rounded (the general engine,
:func:`~posenc_cli.encodings.sinusoid.sinusoid_rows`, one column per distinct exponent). ``framework`` values
(:func:`framework`) follow the framework's operations: transformers' float32 ``inv_freq = 1 / theta**(arange(0, D,
2).float() / D)`` (``D = d`` for Pixtral, ``d/2`` for Qwen), ``position.float() * inv_freq``, then ``cos``/``sin``
correctly rounded in float32 (:mod:`posenc_cli.encodings.float32`); diffusers' FLUX in float64 on CPU (``freqs_dtype``):
``1 / theta**(arange(0, D, 2, float64) / D)`` with ``pow`` correctly rounded in float64, the float64 product with the
position, and ``cos``/``sin`` of that float64 angle correctly rounded to float64, then to float32, the two roundings
diffusers' ``.float()`` makes (:func:`posenc_cli.encodings.float64.trig_to_float32`).
HunyuanVideo computes as transformers does, per axis (``D = axes_dim[i]``: float32 ``inv_freq``, float32 positions,
float32 ``cos``/``sin``); Wan as FLUX does (float64 on CPU, positions ``arange(max_seq_len)``).
Llama 4 as transformers' other towers (``D = d/2``); timm in float32: ``bands = 1 / theta**(arange(d/4) / (d/4))``,
the position ``float(i)`` (with ``ref_grid``: ``float(i) / side * ref``, two float32 roundings), the float32
product, ``sin``/``cos`` correctly rounded.

Examples
--------
>>> spec = resolve("pixtral", (2, 3), 8)
>>> spec.positions.tolist()
[[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2]]
>>> [str(e) for e in spec.exponents], spec.axes.tolist(), spec.expand.tolist()
(['0', '1/2', '1/4', '3/4'], [0, 0, 1, 1], [0, 1, 2, 3, 0, 1, 2, 3])
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from posenc_cli.dtypes import ElementType
from posenc_cli.encodings import float64
from posenc_cli.encodings.names import AXIAL_ROPE_MODELS, AXIAL_ROPE_VIDEO
from posenc_cli.encodings.sinusoid import show, sinusoid_rows
from posenc_cli.errors import SpecError

__all__ = ["MAX_SIDE", "MAX_TOKENS", "MODELS", "AxialSpec", "exact", "framework", "resolve"]

#: The styles laid out here (``timm-pixel``'s pixel bands are :mod:`posenc_cli.encodings.axial_pixel`'s).
MODELS = tuple(m for m in AXIAL_ROPE_MODELS if m != "timm-pixel")
#: Grid sides posenc accepts, in patches (latent pixels for FLUX): past any published image.
MAX_SIDE = 1 << 16
#: Temporal patches of a video (grid_thw's T).
MAX_FRAMES = 1 << 12
#: The most rows a table may hold.
MAX_TOKENS = 1 << 22
#: The widest head posenc takes.
MAX_HEAD_DIM = 1 << 12
#: Positions ``WanRotaryPosEmbed`` precomputes per axis (``max_seq_len``): no axis may hold more tokens.
WAN_MAX_SEQ_LEN = 1024


@dataclass(frozen=True)
class AxialSpec:
    """A resolved axial RoPE table: ``positions`` ``(rows, axes)`` int64, per half column its ``axes`` index and
    ``exponents`` (the angle is ``position * theta**(-exponent)``), ``expand`` (the half column each of the
    ``head_dim`` output columns repeats), and the framework's own frequency groups for ``framework`` arithmetic:
    ``groups`` as ``(D, k)`` per half column, the frequency ``1 / theta**(2k / D)``."""

    model: str
    theta: float
    positions: np.ndarray
    axes: np.ndarray
    exponents: tuple[Fraction, ...]
    expand: np.ndarray
    groups: tuple[tuple[int, int], ...]
    #: Per axis, an exact multiplier of its integer positions (timm's ``ref_feat_shape``: ``ref / side``); none: 1.
    scales: tuple[Fraction, ...] = ()

    @property
    def head_dim(self) -> int:
        return len(self.expand)


def _int(value: object, name: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not low <= value <= high:
        raise SpecError(f"{name} must be an integer from {low} to {high}, got {show(value)}", param=name)
    return int(value)


def _merged_order(height: int, width: int, merge: int) -> np.ndarray:
    """transformers' ``get_vision_position_ids`` of one frame: ``(h * w, 2)`` in ``merge x merge`` blocks."""
    rows, cols = np.meshgrid(np.arange(height), np.arange(width), indexing="ij")
    blocks = (height // merge, merge, width // merge, merge)
    h, w = (a.reshape(blocks).transpose(0, 2, 1, 3) for a in (rows, cols))
    return np.stack([h.reshape(-1), w.reshape(-1)], axis=-1)


def _window_index(frames: int, height: int, width: int, merge: int, window: int) -> np.ndarray:
    """The merged tokens in Qwen2.5-VL's window order (``get_vision_window_index``): windows of ``window`` merged
    tokens per side, row-major, each one's tokens row-major; frames one after another."""
    gh, gw = height // merge, width // merge
    order = []
    for t in range(frames):
        index = np.arange(gh * gw).reshape(gh, gw) + t * gh * gw
        for wy in range(0, gh, window):
            for wx in range(0, gw, window):
                order.append(index[wy : wy + window, wx : wx + window].reshape(-1))
    return np.concatenate(order)


def resolve(
    model: str,
    grid: tuple[int, ...],
    head_dim: int,
    *,
    theta: float = 10000.0,
    frames: int = 1,
    spatial_merge_size: int = 2,
    window_size: int | None = None,
    patch_size: int = 14,
    axes_dim: tuple[int, ...] = (16, 56, 56),
    text_tokens: int = 0,
    video_patch: tuple[int, int, int] = (1, 2, 2),
    ref_grid: tuple[int, int] | None = None,
) -> AxialSpec:
    """Check a style's parameters and lay out its table (the module docstring says how); ``SpecError`` naming the
    parameter otherwise. ``window_size`` (pixels) and ``patch_size`` are Qwen2.5-VL's window reordering (none when
    ``window_size`` is not given); ``axes_dim`` and ``text_tokens`` are FLUX's. The video styles take ``grid``
    as the latent's ``(T, H, W)``, ``video_patch`` its ``(pt, p, p)`` patch and ``axes_dim`` (HunyuanVideo's)."""
    if model not in MODELS:
        raise SpecError(f"model must be one of {', '.join(MODELS)}, got {model!r}", param="model")
    if model in AXIAL_ROPE_VIDEO:
        return _video(model, grid, head_dim, theta, axes_dim, video_patch)
    if len(grid) != 2:
        raise SpecError(
            f"{model} takes a grid of height x width; TxHxW is the video styles', got {grid!r}", param="grid"
        )
    if model in _CLASS_OR_REF:
        return _resolve_llama4_eva02(model, grid, head_dim, theta, ref_grid)
    height, width = (_int(side, "grid", 1, MAX_SIDE) for side in grid)
    d = _int(head_dim, "head_dim", 2, MAX_HEAD_DIM)
    axes: list[int] = []
    exponents: list[Fraction] = []
    groups: list[tuple[int, int]] = []
    if model == "flux":
        if height % 2 or width % 2:
            raise SpecError(
                f"FLUX packs the latent in 2x2 patches: its sides must be even, got {height}x{width}", param="grid"
            )
        if not axes_dim or any(
            isinstance(a, bool) or not isinstance(a, (int, np.integer)) or a < 2 or a % 2 for a in axes_dim
        ):
            raise SpecError(f"axes_dim must be positive even integers, got {list(axes_dim)!r}", param="axes_dim")
        if len(axes_dim) != 3:
            raise SpecError(
                f"axes_dim must be three widths (FLUX's ids are (0, row, column)), got {list(axes_dim)!r}",
                param="axes_dim",
            )
        if sum(axes_dim) != d:
            raise SpecError(
                f"axes_dim must add up to head_dim = {d}, got {list(axes_dim)} (sum {sum(axes_dim)})", param="axes_dim"
            )
        tokens = _int(text_tokens, "text_tokens", 0, MAX_TOKENS)
        expand: list[int] = []
        for axis, dim in enumerate(int(a) for a in axes_dim):
            for k in range(dim // 2):
                expand += [len(axes), len(axes)]
                axes.append(axis)
                exponents.append(Fraction(2 * k, dim))
                groups.append((dim, k))
        h2, w2 = height // 2, width // 2
        image = np.zeros((h2 * w2, 3), np.int64)
        image[:, 1] = np.repeat(np.arange(h2), w2)
        image[:, 2] = np.tile(np.arange(w2), h2)
        positions = np.concatenate([np.zeros((tokens, 3), np.int64), image])
        return AxialSpec(model, theta, positions, np.array(axes), tuple(exponents), np.array(expand), tuple(groups))
    if d % 4:
        raise SpecError(
            f"head_dim must be a multiple of 4 (two axes, each a cos and sin half), got {d}", param="head_dim"
        )
    quarter = d // 4
    if model == "pixtral":
        for axis in (0, 1):
            for j in range(quarter):
                axes.append(axis)
                exponents.append(Fraction(4 * j + 2 * axis, d))
                groups.append((d, 2 * j + axis))
        positions = np.stack([np.repeat(np.arange(height), width), np.tile(np.arange(width), height)], axis=-1)
    else:
        merge = _int(spatial_merge_size, "spatial_merge_size", 1, 16)
        count = _int(frames, "frames", 1, MAX_FRAMES)
        if height % merge or width % merge:
            raise SpecError(
                f"the grid's sides must be multiples of spatial_merge_size {merge}, got {height}x{width}", param="grid"
            )
        for axis in (0, 1):
            for j in range(quarter):
                axes.append(axis)
                exponents.append(Fraction(2 * j, d // 2))
                groups.append((d // 2, j))
        positions = np.tile(_merged_order(height, width, merge), (count, 1))
        if window_size is not None:
            if model != "qwen2.5-vl":
                raise SpecError("window_size reorders Qwen2.5-VL's rows; qwen2-vl has no windows", param="window_size")
            size = _int(window_size, "window_size", 1, 1 << 16)
            patch = _int(patch_size, "patch_size", 1, 1 << 10)
            window = size // merge // patch
            if window < 1:
                raise SpecError(
                    f"window_size {size} is less than one merged token ({merge} x {patch} px)", param="window_size"
                )
            unit = merge * merge
            order = _window_index(count, height, width, merge, window)
            positions = positions.reshape(-1, unit, 2)[order].reshape(-1, 2)
    if len(positions) > MAX_TOKENS:
        raise SpecError(f"the table would be {len(positions)} rows, more than {MAX_TOKENS}", param="grid")
    half = len(axes)
    expand_arr = np.concatenate([np.arange(half), np.arange(half)])
    return AxialSpec(model, theta, positions, np.array(axes), tuple(exponents), expand_arr, tuple(groups))


def _video(
    model: str, grid: tuple[int, ...], head_dim: int, theta: float, axes_dim: tuple[int, ...], patch: tuple[int, ...]
) -> AxialSpec:
    """HunyuanVideo's and Wan's tables (the module docstring), checked."""
    if len(grid) != 3:
        raise SpecError(f"{model} takes a video latent's frames x height x width (TxHxW), got {grid!r}", param="grid")
    sides = (_int(grid[0], "grid", 1, MAX_FRAMES), *(_int(side, "grid", 1, MAX_SIDE) for side in grid[1:]))
    patch_t = _int(patch[0], "patch_size_t", 1, 1 << 10)
    patch_s = _int(patch[1], "patch_size", 1, 1 << 10)
    if sides[0] % patch_t or sides[1] % patch_s or sides[2] % patch_s:
        raise SpecError(
            f"{model} patches the latent {patch_t}x{patch_s}x{patch_s}: its sides must be multiples, got "
            + "x".join(map(str, sides)),
            param="grid",
        )
    d = _int(head_dim, "head_dim", 2, MAX_HEAD_DIM)
    if model == "wan":
        if d % 2 or d < 6:
            raise SpecError(
                f"wan's head_dim must be even and at least 6 (t, h, w take a third each), got {d}", param="head_dim"
            )
        dims = (d - 4 * (d // 6), 2 * (d // 6), 2 * (d // 6))
    else:
        if len(axes_dim) != 3 or any(
            isinstance(a, bool) or not isinstance(a, (int, np.integer)) or a < 2 or a % 2 for a in axes_dim
        ):
            raise SpecError(
                f"axes_dim must be three positive even widths (t, h, w), got {list(axes_dim)!r}", param="axes_dim"
            )
        if sum(axes_dim) != d:
            raise SpecError(
                f"axes_dim must add up to head_dim = {d}, got {list(axes_dim)} (sum {sum(axes_dim)})", param="axes_dim"
            )
        dims = (int(axes_dim[0]), int(axes_dim[1]), int(axes_dim[2]))
    tokens = (sides[0] // patch_t, sides[1] // patch_s, sides[2] // patch_s)
    if model == "wan" and max(tokens) > WAN_MAX_SEQ_LEN:
        raise SpecError(
            f"wan precomputes {WAN_MAX_SEQ_LEN} positions per axis (max_seq_len); the grid gives "
            + "x".join(map(str, tokens))
            + " tokens",
            param="grid",
        )
    rows = tokens[0] * tokens[1] * tokens[2]
    if rows > MAX_TOKENS:
        raise SpecError(f"the table would be {rows} rows, more than {MAX_TOKENS}", param="grid")
    axes: list[int] = []
    exponents: list[Fraction] = []
    groups: list[tuple[int, int]] = []
    expand: list[int] = []
    for axis, dim in enumerate(dims):
        for k in range(dim // 2):
            expand += [len(axes), len(axes)]
            axes.append(axis)
            exponents.append(Fraction(2 * k, dim))
            groups.append((dim, k))
    mesh = np.meshgrid(*(np.arange(n, dtype=np.int64) for n in tokens), indexing="ij")
    positions = np.stack([m.reshape(-1) for m in mesh], axis=-1)
    return AxialSpec(model, theta, positions, np.array(axes), tuple(exponents), np.array(expand), tuple(groups))


def exact(spec: AxialSpec, part: str, element: ElementType) -> np.ndarray:
    """The ``(rows, head_dim)`` ``cos`` or ``sin`` (``part``) of ``spec``, every value the real one correctly
    rounded, in ``element``'s storage."""
    quantisation = {"quant_scale": element.scale, "zero_point": element.zero_point} if element.scale else {}
    if spec.scales:
        return _exact_scaled(spec, part, element, quantisation)
    stop = int(spec.positions.max(initial=0)) + 1
    half = np.empty((len(spec.positions), len(spec.exponents)), element.storage)
    by_denom: dict[int, list[int]] = {}
    for c, e in enumerate(spec.exponents):
        by_denom.setdefault(e.denominator, []).append(c)
    for denom, cols in by_denom.items():
        columns = [(int(spec.exponents[c] * denom), part) for c in cols]
        table = sinusoid_rows(0, stop, columns, denom=denom, base=spec.theta, dtype=element.name, **quantisation)  # type: ignore[arg-type]
        for i, c in enumerate(cols):
            half[:, c] = table[spec.positions[:, spec.axes[c]], i]
    return np.ascontiguousarray(half[:, spec.expand])


def framework(spec: AxialSpec, part: str) -> np.ndarray:
    """The ``(rows, head_dim)`` float32 ``cos`` or ``sin`` as the framework computes it (the module docstring)."""
    from posenc_cli.encodings import float32 as f32ops

    if spec.model in AXIAL_ROPE_VIDEO:
        return _video_framework(spec, part)
    want_cos = part == "cos"
    if spec.model == "eva02":
        return _framework_timm_cat(spec, want_cos)
    pos = spec.positions[:, spec.axes]
    inv: np.ndarray
    angles: np.ndarray
    if spec.model == "flux":
        inv = np.empty(len(spec.groups), np.float64)
        for dim in sorted({g[0] for g in spec.groups}):
            cols = [c for c, g in enumerate(spec.groups) if g[0] == dim]
            e = np.arange(0, dim, 2, dtype=np.float64)[: dim // 2] / np.float64(dim)
            inv[cols] = 1.0 / float64.pow_(spec.theta, e)[[spec.groups[c][1] for c in cols]]
        angles = pos.astype(np.float32).astype(np.float64) * inv
        half = float64.trig_to_float32(angles, want_cos)
    else:
        dim = spec.groups[0][0]
        e32 = np.arange(0, dim, 2, dtype=np.float32) / np.float32(dim)
        table = (np.float32(1) / f32ops.pow_(np.full(e32.shape, np.float32(spec.theta)), e32)).astype(np.float32)
        inv = table[[g[1] for g in spec.groups]]
        angles = (pos.astype(np.float32) * inv).astype(np.float32)
        half = (f32ops.cos if want_cos else f32ops.sin)(angles)
        half = (half * np.float32(1.0)).astype(np.float32)  # attention_scaling 1.0: exact
    return np.ascontiguousarray(half[:, spec.expand])


def _video_framework(spec: AxialSpec, part: str) -> np.ndarray:
    """diffusers' ``get_1d_rotary_pos_embed`` per axis: HunyuanVideo's in float32, Wan's in float64 rounded to
    float32 (the module docstring)."""
    from posenc_cli.encodings import float32 as f32ops

    want_cos = part == "cos"
    pos = spec.positions[:, spec.axes]
    wide = spec.model == "wan"
    inv: np.ndarray = np.empty(len(spec.groups), np.float64 if wide else np.float32)
    for dim in sorted({g[0] for g in spec.groups}):
        cols = [c for c, g in enumerate(spec.groups) if g[0] == dim]
        ks = [spec.groups[c][1] for c in cols]
        if wide:
            e64 = np.arange(0, dim, 2, dtype=np.float64) / np.float64(dim)
            inv[cols] = (1.0 / float64.pow_(spec.theta, e64))[ks]
        else:
            e32 = np.arange(0, dim, 2, dtype=np.float32) / np.float32(dim)
            base = np.full(e32.shape, np.float32(spec.theta))
            inv[cols] = (np.float32(1) / f32ops.pow_(base, e32)).astype(np.float32)[ks]
    if wide:
        half = float64.trig_to_float32(pos.astype(np.float64) * inv, want_cos)
    else:
        half = (f32ops.cos if want_cos else f32ops.sin)((pos.astype(np.float32) * inv).astype(np.float32))
    return np.ascontiguousarray(half[:, spec.expand])


#: Styles laid out by :func:`_resolve_llama4_eva02`: Llama 4's class-token row, timm's ``ref_feat_shape``.
_CLASS_OR_REF = ("llama4", "eva02")


def _resolve_llama4_eva02(
    model: str, grid: tuple[int, int], head_dim: int, theta: float, ref_grid: tuple[int, int] | None
) -> AxialSpec:
    """``llama4`` and ``eva02`` (the module docstring): both take ``d/4`` frequencies ``theta**(-4k/d)`` per axis,
    each twice side by side (interleaved pairs)."""
    height, width = (_int(side, "grid", 1, MAX_SIDE) for side in grid)
    d = _int(head_dim, "head_dim", 2, MAX_HEAD_DIM)
    if d % 4:
        raise SpecError(
            f"head_dim must be a multiple of 4 (two axes, each a cos and sin pair), got {d}", param="head_dim"
        )
    quarter = d // 4
    if height * width + (model == "llama4") > MAX_TOKENS:
        raise SpecError(f"the table would be {height * width} rows, more than {MAX_TOKENS}", param="grid")
    rows = np.stack([np.repeat(np.arange(height), width), np.tile(np.arange(width), height)], axis=-1)
    scales: tuple[Fraction, ...] = ()
    if model == "llama4":
        if height != width:
            raise SpecError(
                f"Llama 4's vision rotary is over a square grid (image_size // patch_size), got {height}x{width}",
                param="grid",
            )
        if ref_grid is not None:
            raise SpecError("ref_grid is eva02's; llama4 does not take it", param="ref_grid")
        axis_order = (1, 0)  # frequencies_x (the column) first, then frequencies_y
        positions = np.concatenate([rows + 1, np.zeros((1, 2), np.int64)])  # the class token last, its angle 0
    else:
        axis_order = (0, 1)  # grid_indexing 'ij': the row's bands first
        positions = rows
        if ref_grid is not None:
            ref_h, ref_w = (_int(side, "ref_grid", 1, MAX_SIDE) for side in ref_grid)
            scales = (Fraction(ref_h, height), Fraction(ref_w, width))
    axes = [axis for axis in axis_order for _ in range(quarter)]
    exponents = tuple(Fraction(4 * k, d) for _ in axis_order for k in range(quarter))
    groups = tuple((d // 2, k) for _ in axis_order for k in range(quarter))
    expand = np.repeat(np.arange(2 * quarter), 2)
    return AxialSpec(model, theta, positions.astype(np.int64), np.array(axes), exponents, expand, groups, scales)


def _exact_scaled(spec: AxialSpec, part: str, element: ElementType, quantisation: dict[str, float]) -> np.ndarray:
    """:func:`exact` where each axis's integer positions are scaled by ``spec.scales`` (an exact rational)."""
    stop = int(spec.positions.max(initial=0)) + 1
    half = np.empty((len(spec.positions), len(spec.exponents)), element.storage)
    by_key: dict[tuple[int, int], list[int]] = {}
    for c, e in enumerate(spec.exponents):
        by_key.setdefault((e.denominator, int(spec.axes[c])), []).append(c)
    for (denom, axis), cols in by_key.items():
        numerators = [int(spec.exponents[c] * denom) for c in cols]
        mults = [spec.scales[axis]] * (max(numerators) + 1)
        columns = [(k, part) for k in numerators]
        table = sinusoid_rows(
            0,
            stop,
            columns,
            denom=denom,
            base=spec.theta,
            dtype=element.name,
            mults=mults,
            **quantisation,  # type: ignore[arg-type]
        )
        for i, c in enumerate(cols):
            half[:, c] = table[spec.positions[:, axis], i]
    return np.ascontiguousarray(half[:, spec.expand])


def _framework_timm_cat(spec: AxialSpec, want_cos: bool) -> np.ndarray:
    """timm's ``build_rotary_pos_embed(in_pixels=False)`` in its float32 operations: ``bands = 1 / theta**(arange(n)
    / n)`` (``freq_bands``, ``n = d/4``), each axis's index grid ``arange(side).float()``, with ``ref_feat_shape``
    ``t / side * ref``, the product ``grid * bands``, then ``sin``/``cos`` correctly rounded."""
    from posenc_cli.encodings import float32 as f32ops

    n = spec.head_dim // 4
    e32 = np.arange(n, dtype=np.float32) / np.float32(n)
    bands = (np.float32(1) / f32ops.pow_(np.full(e32.shape, np.float32(spec.theta)), e32)).astype(np.float32)
    pos = spec.positions.astype(np.float32)
    for axis, scale in enumerate(spec.scales):
        side = int(spec.positions[:, axis].max()) + 1  # eva02's rows are the whole grid
        ref = np.float32(scale * side)  # an integer: ref_feat_shape's side
        pos[:, axis] = ((pos[:, axis] / np.float32(side)).astype(np.float32) * ref).astype(np.float32)
    angles = np.empty((len(spec.positions), len(spec.axes)), np.float32)
    for c, axis in enumerate(spec.axes.tolist()):
        angles[:, c] = (pos[:, axis] * bands[spec.groups[c][1]]).astype(np.float32)
    half = (f32ops.cos if want_cos else f32ops.sin)(angles)
    return np.ascontiguousarray(half[:, spec.expand])
