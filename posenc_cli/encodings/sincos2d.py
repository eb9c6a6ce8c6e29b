"""2-D and 3-D sincos position embeddings in each library's layout, every entry correctly rounded.

For a grid of ``height`` rows and ``width`` columns of patches and ``d_model = 4q``, patch ``(y, x)`` (row-major:
table row ``y * width + x``) gets::

    [ sin(x * w_0) .. sin(x * w_{q-1}) | cos(x * w_0) .. cos(x * w_{q-1}) |
      sin(y * w_0) .. sin(y * w_{q-1}) | cos(y * w_0) .. cos(y * w_{q-1}) ]      w_k = base ** (-k / q)

which is MAE's layout (the x half first, since it meshgrids ``(grid_w, grid_h)``), ViTMAE's and diffusers'
``get_2d_sincos_pos_embed`` (with ``base_size`` equal to the grid size). With ``cls_token`` a row of zeros comes
first, as MAE prepends for the class token. ``d_model`` must be a multiple of 4: two axes, each a sine and a
cosine half.

Both halves are one-dimensional tables of the general engine (:func:`~posenc_cli.encodings.sinusoid.sinusoid_rows`,
``[S|C]`` columns with denominator ``q``), so every value is the exact value rounded once.

The other layouts (:func:`plan`, :func:`layout_table`) are the same 1-D tables, one per axis, with their own
frequency denominator, an exact rational multiple of each axis's positions, and their own row and column orders:

- ``mae``: the table above (MAE, HF ViTMAE, diffusers with ``base_size`` the grid's side).
- ``timm`` (``timm.layers.pos_embed_sincos.build_sincos2d_pos_embed``): ``[sin y | sin x | cos y | cos x]``, rows
  ``y * W + x``; ``interleave_sin_cos`` gives ``[sin y | cos y | sin x | cos x]``; ``reverse_coord`` swaps the
  axes, rows and columns alike: rows ``x * H + y`` and ``x`` before ``y`` in the columns. Denominator ``q``.
- ``simple-vit`` (vit-pytorch's ``posemb_sincos_2d``): MAE's layout with the denominator ``q - 1``
  (``w_k = base ** (-k / (q - 1))``, so ``d_model >= 8``).
- ``dit`` (diffusers ``get_2d_sincos_pos_embed`` as ``PatchEmbed`` calls it: DiT, PixArt): MAE's layout at positions
  ``x * base_size / (W * interpolation_scale)`` and ``y * base_size / (H * interpolation_scale)`` (exact rationals of
  the float64 operands); ``extra_tokens`` zero rows first.
- ``sd3`` (``PatchEmbed`` with ``pos_embed_max_size = M``): the ``dit`` table of an ``M x M`` grid, center-cropped to
  ``H x W`` as ``cropped_pos_embed`` does: rows ``top .. top + H - 1`` with ``top = (M - H) // 2`` (and ``left``).
- ``cogvideox`` (diffusers ``get_3d_sincos_pos_embed``, ``d_model = 16m``): ``[sin t | cos t | sin x | cos x |
  sin y | cos y]`` with ``t``'s halves ``d_model / 8`` wide (denominator ``d_model / 8``, positions
  ``t / temporal_interpolation_scale``) and the spatial ones ``3 d_model / 16`` (denominator ``3 d_model / 16``,
  positions ``/ interpolation_scale``); rows ``t * H * W + y * W + x``.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from posenc_cli.dtypes import ElementType
from posenc_cli.encodings import float64
from posenc_cli.encodings.names import SINCOS_LAYOUTS
from posenc_cli.encodings.sinusoid import show, sinusoid_rows
from posenc_cli.errors import SpecError

#: Grid sides posenc accepts: far beyond any vision model.
MAX_SIDE = 1 << 16
#: The widest table: the 1-D tables' limit (per-column constants cost a few microseconds each).
MAX_D_MODEL = 1 << 20


def check(height: object, width: object, d_model: object) -> tuple[int, int, int]:
    """Validate; ``SpecError`` names ``grid`` or ``d_model``."""
    for value in (height, width):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 1 <= value <= MAX_SIDE:
            raise SpecError(f"grid sides must be integers from 1 to {MAX_SIDE}, got {show(value)}", param="grid")
    if isinstance(d_model, bool) or not isinstance(d_model, (int, np.integer)) or d_model < 4 or d_model % 4:
        raise SpecError(
            f"d_model must be a positive multiple of 4 for 2-D sincos (two axes, a sine and a cosine half each), "
            f"got {show(d_model)}",
            param="d_model",
        )
    if d_model > MAX_D_MODEL:
        raise SpecError(f"d_model must be at most {MAX_D_MODEL}, got {show(d_model)}", param="d_model")
    return int(height), int(width), int(d_model)  # type: ignore[call-overload]


def sincos2d(
    height: int, width: int, d_model: int, *, cls_token: bool = False, base: float = 10000.0, element: ElementType
) -> np.ndarray:
    """The ``(cls_token + height * width, d_model)`` table in ``element``'s storage.

    Examples
    --------
    >>> t = sincos2d(2, 3, 8, element=ElementType.of("float64"))
    >>> t.shape, np.allclose(t[4, :4], [np.sin(1.0), np.sin(0.01), np.cos(1.0), np.cos(0.01)], rtol=2**-52, atol=0)
    ((6, 8), True)
    """
    height, width, d_model = check(height, width, d_model)
    q = d_model // 4
    columns = [(k, "sin") for k in range(q)] + [(k, "cos") for k in range(q)]
    quantisation = {"quant_scale": element.scale, "zero_point": element.zero_point} if element.scale else {}

    def axis(n: int) -> np.ndarray:
        return sinusoid_rows(0, n, columns, denom=q, base=base, dtype=element.name, **quantisation)  # type: ignore[arg-type]

    xs, ys = axis(width), axis(height)
    first = 1 if cls_token else 0
    out = np.empty((first + height * width, d_model), element.storage)
    grid = out[first:].reshape(height, width, d_model)
    grid[:, :, : 2 * q] = xs[None, :, :]
    grid[:, :, 2 * q :] = ys[:, None, :]
    if cls_token:
        out[0] = element.convert(np.zeros((1, d_model)))[0][0]  # 0.0 as stored (zero_point for int8)
    return out


# ------------------------------------------------------------------------------------------------ the layouts
@dataclass(frozen=True)
class Axis:
    """One coordinate's 1-D table: rows ``first .. first + n - 1`` at positions ``row * mult``, ``q`` frequencies
    ``base ** (-k / denom)``, ``[sin | cos]`` columns."""

    first: int
    n: int
    q: int
    denom: int
    mult: Fraction
    #: The Python floats diffusers' code divides the float32 positions by, in order (``mult`` is exactly
    #: ``1 / prod``): ``(side / base_size, interpolation_scale)`` for ``dit`` and ``sd3``.
    divisors: tuple[float, ...] = ()


@dataclass(frozen=True)
class Plan:
    """A layout's table: ``zero_rows`` zero rows, then one row per grid cell, ``order`` naming the axes from the
    slowest to the fastest; columns the ``blocks`` in order, each ``(axis, 0 for sin or 1 for cos)``, ``q`` of
    that axis wide."""

    layout: str
    axes: dict[str, Axis]
    order: tuple[str, ...]
    blocks: tuple[tuple[str, int], ...]
    zero_rows: int
    d_model: int

    @property
    def rows(self) -> int:
        n = 1
        for name in self.order:
            n *= self.axes[name].n
        return self.zero_rows + n


def _scale(value: object, name: str) -> Fraction:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise SpecError(f"{name} must be a number, got {show(value)}", param=name)
    q = Fraction(float(value))
    if not Fraction(1, 2**16) <= q <= 2**16:
        raise SpecError(f"{name} must lie in [2**-16, 2**16], got {show(value)}", param=name)
    return q


def plan(
    layout: str,
    height: int,
    width: int,
    d_model: int,
    *,
    frames: int = 1,
    zero_rows: int = 0,
    reverse_coord: bool = False,
    interleave_sin_cos: bool = False,
    base_size: int | None = None,
    interpolation_scale: float = 1.0,
    temporal_interpolation_scale: float = 1.0,
    pos_embed_max_size: int | None = None,
) -> Plan:
    """The rows and columns of ``layout``'s table (the module docstring); ``SpecError`` names the parameter at fault.

    Examples
    --------
    >>> p = plan("timm", 2, 3, 8)
    >>> p.order, p.blocks
    (('y', 'x'), (('y', 0), ('x', 0), ('y', 1), ('x', 1)))
    >>> plan("dit", 4, 4, 8, base_size=2, interpolation_scale=0.5).axes["x"].mult
    Fraction(1, 1)
    """
    if layout not in SINCOS_LAYOUTS:
        raise SpecError(f"layout must be one of {', '.join(SINCOS_LAYOUTS)}, got {layout!r}", param="layout")
    height, width, d_model = check(height, width, d_model)
    one = Fraction(1)
    if layout == "cogvideox":
        if d_model % 16:
            raise SpecError(
                f"d_model must be a multiple of 16 for cogvideox (a quarter for t, three eighths for x and y, each "
                f"a sine and a cosine half), got {d_model}",
                param="d_model",
            )
        if isinstance(frames, bool) or not isinstance(frames, (int, np.integer)) or not 1 <= frames <= MAX_SIDE:
            raise SpecError(f"frames must be an integer from 1 to {MAX_SIDE}, got {show(frames)}", param="frames")
        qt, qs = d_model // 8, 3 * d_model // 16
        s = 1 / _scale(interpolation_scale, "interpolation_scale")
        t = 1 / _scale(temporal_interpolation_scale, "temporal_interpolation_scale")
        ts, ss = (float(temporal_interpolation_scale),), (float(interpolation_scale),)
        axes = {
            "t": Axis(0, int(frames), qt, qt, t, ts), "y": Axis(0, height, qs, qs, s, ss),
            "x": Axis(0, width, qs, qs, s, ss),
        }  # fmt: skip
        blocks = (("t", 0), ("t", 1), ("x", 0), ("x", 1), ("y", 0), ("y", 1))
        return Plan(layout, axes, ("t", "y", "x"), blocks, 0, d_model)
    q = d_model // 4
    mae_blocks = (("x", 0), ("x", 1), ("y", 0), ("y", 1))
    if layout == "mae":
        axes = {"y": Axis(0, height, q, q, one), "x": Axis(0, width, q, q, one)}
        return Plan(layout, axes, ("y", "x"), mae_blocks, zero_rows, d_model)
    if layout == "simple-vit":
        if q < 2:
            raise SpecError(
                f"d_model must be a multiple of 4 and at least 8 for simple-vit (its frequencies divide by "
                f"d_model/4 - 1), got {d_model}",
                param="d_model",
            )
        axes = {"y": Axis(0, height, q, q - 1, one), "x": Axis(0, width, q, q - 1, one)}
        return Plan(layout, axes, ("y", "x"), mae_blocks, 0, d_model)
    if layout == "timm":
        axes = {"y": Axis(0, height, q, q, one), "x": Axis(0, width, q, q, one)}
        a, b = ("x", "y") if reverse_coord else ("y", "x")
        timm_blocks = ((a, 0), (a, 1), (b, 0), (b, 1)) if interleave_sin_cos else ((a, 0), (b, 0), (a, 1), (b, 1))
        return Plan(layout, axes, (a, b), timm_blocks, 0, d_model)
    interpolation = _scale(interpolation_scale, "interpolation_scale")
    if layout == "dit":
        size = height if base_size is None else base_size
        _side(size, "base_size")
        ii = float(interpolation_scale)
        axes = {
            "y": Axis(0, height, q, q, Fraction(size, height) / interpolation, (height / size, ii)),
            "x": Axis(0, width, q, q, Fraction(size, width) / interpolation, (width / size, ii)),
        }
        return Plan(layout, axes, ("y", "x"), mae_blocks, zero_rows, d_model)
    # sd3
    if pos_embed_max_size is None or base_size is None:
        raise SpecError("sd3 needs pos_embed_max_size and base_size (SD3: 192 and 64)", param="pos_embed_max_size")
    most = _side(pos_embed_max_size, "pos_embed_max_size")
    _side(base_size, "base_size")
    if height > most or width > most:
        raise SpecError(
            f"the grid {height}x{width} must fit in pos_embed_max_size {most} (sd3 crops the {most}x{most} table)",
            param="grid",
        )
    mult, divisors = Fraction(base_size, most) / interpolation, (most / base_size, float(interpolation_scale))
    axes = {
        "y": Axis((most - height) // 2, height, q, q, mult, divisors),
        "x": Axis((most - width) // 2, width, q, q, mult, divisors),
    }
    return Plan(layout, axes, ("y", "x"), mae_blocks, 0, d_model)


def _side(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 1 <= value <= MAX_SIDE:
        raise SpecError(f"{name} must be an integer from 1 to {MAX_SIDE}, got {show(value)}", param=name)
    return int(value)


def assemble(plan: Plan, tables: dict[str, np.ndarray], zero: np.generic | np.ndarray) -> np.ndarray:
    """The table from each axis's ``(n, 2q)`` ``[sin | cos]`` array (all of one dtype), ``zero`` the stored 0.0."""
    any_table = next(iter(tables.values()))
    sizes = [plan.axes[name].n for name in plan.order]
    out = np.empty((plan.rows, plan.d_model), any_table.dtype)
    out[: plan.zero_rows] = zero
    grid = out[plan.zero_rows :].reshape(*sizes, plan.d_model)
    col = 0
    for name, part in plan.blocks:
        q = plan.axes[name].q
        shape = [1] * len(sizes) + [q]
        shape[plan.order.index(name)] = sizes[plan.order.index(name)]
        grid[..., col : col + q] = tables[name][:, part * q : (part + 1) * q].reshape(shape)
        col += q
    return out


def layout_table(plan: Plan, *, base: float = 10000.0, element: ElementType) -> np.ndarray:
    """``plan``'s table, every entry the exact value correctly rounded to ``element`` (a storage array).

    Examples
    --------
    >>> t = layout_table(plan("simple-vit", 2, 2, 8), element=ElementType.of("float64"))
    >>> t.shape, bool(abs(t[1, 1] - np.sin(1e-4)) <= np.spacing(t[1, 1]))  # x = 1, k = 1: base**(-1/(2 - 1))
    ((4, 8), True)
    """
    quantisation = {"quant_scale": element.scale, "zero_point": element.zero_point} if element.scale else {}
    tables = {}
    for name, axis in plan.axes.items():
        columns = [(k, "sin") for k in range(axis.q)] + [(k, "cos") for k in range(axis.q)]
        tables[name] = sinusoid_rows(
            axis.first, axis.first + axis.n, columns, denom=axis.denom, base=base, dtype=element.name,
            mults=None if axis.mult == 1 else [axis.mult] * axis.q, **quantisation,  # type: ignore[arg-type]
        )  # fmt: skip
    return assemble(plan, tables, element.convert(np.zeros((1, 1)))[0][0, 0])


# ------------------------------------------------------------------------------------------- framework arithmetic
#: The layouts whose code computes in torch float32 throughout (the others: float64 after float32 positions).
FLOAT32_LAYOUTS = ("timm", "simple-vit")


def _positions32(plan: Plan, name: str) -> np.ndarray:
    """An axis's positions as diffusers' float32 code computes them: ``arange / (side / base_size) /
    interpolation_scale`` (``dit``, ``sd3``: each Python float rounded to float32, each division float32) or
    ``arange / interpolation_scale`` (``cogvideox``); integers (``mae``) are exact."""
    axis = plan.axes[name]
    rows = np.arange(axis.first, axis.first + axis.n, dtype=np.float32)
    for divisor in axis.divisors:
        rows = rows / np.float32(divisor)
    return rows


def framework_table(plan: Plan, *, base: float = 10000.0, element: ElementType) -> np.ndarray:
    """``plan``'s table as its library computes it, in ``element``'s storage (other types round its float32 values).

    - ``timm``, ``simple-vit``: torch float32 throughout. ``f32(k) / f32(denom)`` (timm's ``arange(q).float() / q``,
      vit-pytorch's int64 ``arange(q) / (q - 1)``), ``pow(f32(base), .)``, ``1.0 / .``, the float32 position times
      it, ``sin`` and ``cos``: each elementary function correctly rounded in float32
      (:mod:`posenc_cli.encodings.float32`).
    - ``mae``, ``dit``, ``sd3``, ``cogvideox`` (diffusers' torch code): the positions in float32 (``torch.arange(n,
      dtype=float32) / (side / base_size) / interpolation_scale``), then float64: ``omega = arange(q) / q``,
      ``1.0 / base**omega``, the product, ``sin`` and ``cos`` correctly rounded in float64, then one rounding to
      float32 (``.float()``).
    """
    from . import float32 as f32
    from .framework import to_element

    tables = {}
    for name, axis in plan.axes.items():
        k = np.arange(axis.q)
        if plan.layout in FLOAT32_LAYOUTS:
            omega = np.float32(1.0) / f32.pow_(np.float32(base), k.astype(np.float32) / np.float32(axis.denom))
            angles = np.arange(axis.first, axis.first + axis.n, dtype=np.float32)[:, None] * omega[None, :]
            tables[name] = np.concatenate([f32.sin(angles), f32.cos(angles)], axis=1)
        else:
            omega64 = np.float64(1.0) / float64.pow_(base, k.astype(np.float64) / np.float64(axis.denom))
            angles64 = _positions32(plan, name).astype(np.float64)[:, None] * omega64[None, :]
            tables[name] = np.concatenate(
                [float64.trig_to_float32(angles64, False), float64.trig_to_float32(angles64, True)], axis=1
            )
    return to_element(assemble(plan, tables, np.float32(0.0)), element)
