"""2-D sincos position embeddings (MAE's ``get_2d_sincos_pos_embed``), every entry correctly rounded.

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
"""

from __future__ import annotations

import numpy as np

from posenc_cli.dtypes import ElementType
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
