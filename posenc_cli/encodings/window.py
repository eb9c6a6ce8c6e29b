"""Window attention's relative-position tables: Swin's and BEiT's index, SwinV2's and SwinV2-CR's log-spaced
coordinates.

A window of ``H x W`` tokens, row-major (token ``t = y * W + x``), has ``(2H - 1)(2W - 1)`` relative offsets:

``swin`` (timm ``swin_transformer.get_relative_position_index``)
    ``index[t, u] = (y_t - y_u + H - 1) * (2W - 1) + (x_t - x_u + W - 1)``, shape ``(HW, HW)``: the row of the
    learned ``relative_position_bias_table`` ``((2H - 1)(2W - 1), heads)`` that the pair ``(t, u)`` reads.
``beit`` (timm ``beit.gen_relative_position_index``)
    The Swin index shifted by a class token at row and column 0: ``(HW + 1, HW + 1)``, with ``D = (2H - 1)(2W - 1)``
    offsets plus three: ``index[0, u] = D`` (class token to patch), ``index[t, 0] = D + 1`` (patch to class token),
    ``index[0, 0] = D + 2`` (class token to itself), ``index[t, u]`` the Swin index for patches.
``swinv2`` (timm ``swin_transformer_v2.WindowAttention``)
    The Swin index, and ``coords`` ``(2H - 1, 2W - 1, 2)``, the input of the continuous position bias MLP: for the
    offset ``(dy, dx)``, ``coords[dy + H - 1, dx + W - 1] = (f(dy, P_h), f(dx, P_w))`` with
    ``f(c, P) = sign(c) * log2(1 + 8 |c| / P) / 3`` and ``P`` the pretrained window's side minus one when one is
    given, else the window's (``log2(8) = 3``). Each coordinate is the exact value correctly rounded to float32;
    timm computes it in float32 and agrees within its own rounding.
``swinv2-cr`` (timm ``swin_transformer_v2_cr.WindowMultiHeadAttention``, buffer ``relative_coordinates_log``)
    The Swin index, and ``coords`` ``(HW * HW, 2)`` in timm's layout: row ``t * HW + u`` holds
    ``(g(y_t - y_u), g(x_t - x_u))`` with ``g(c) = sign(c) * ln(1 + |c|)`` (the natural logarithm, no pretrained
    window), each correctly rounded to float32. timm's float32 code (``torch.sign(r) * torch.log(1.0 + r.abs())``)
    adds and negates integers exactly, so with its one logarithm correctly rounded it gives the same bits. The
    index is not a timm buffer (its MLP reads every pair's coordinates): it says which of the ``(2H - 1)(2W - 1)``
    offsets each pair's row repeats.

Examples
--------
>>> swin_index(2, 2).tolist()
[[4, 3, 1, 0], [5, 4, 2, 1], [7, 6, 4, 3], [8, 7, 5, 4]]
>>> beit_index(1, 2).tolist()
[[5, 3, 3], [4, 1, 0], [4, 2, 1]]
>>> [str(v) for v in swinv2_coords(2, 2)[0, 0]]  # log2(1 + 8) / 3 = 1.05664166..., rounded to float32
['-1.0566417', '-1.0566417']
>>> swinv2_cr_coords(1, 2).tolist()  # tokens (0, 0), (0, 1): ln 2 = 0.69314718..., rounded to float32
[[0.0, 0.0], [0.0, -0.6931471824645996], [0.0, 0.6931471824645996], [0.0, 0.0]]
"""

from __future__ import annotations

import decimal
from fractions import Fraction

import numpy as np

from posenc_cli.dtypes import ElementType
from posenc_cli.encodings.names import WINDOW_SCHEMES
from posenc_cli.encodings.sinusoid import show
from posenc_cli.errors import SpecError

__all__ = ["MAX_SIDE", "SCHEMES", "beit_index", "check_window", "swin_index", "swinv2_coords", "swinv2_cr_coords"]

SCHEMES = WINDOW_SCHEMES
#: Window sides posenc accepts: far beyond any model's (Swin 7 or 12, SwinV2 up to 24, BEiT 14 to 24); the index
#: of a 256 x 256 window is already 2**32 entries.
MAX_SIDE = 256


def check_window(window: object, name: str = "window") -> tuple[int, int]:
    """Validate an ``(H, W)`` window; ``SpecError`` names ``name``."""
    if not isinstance(window, tuple) or len(window) != 2:
        raise SpecError(f"{name} must be a pair of sides (H, W), got {show(window)}", param=name)
    for side in window:
        if isinstance(side, bool) or not isinstance(side, (int, np.integer)) or not 1 <= side <= MAX_SIDE:
            raise SpecError(f"{name} sides must be integers from 1 to {MAX_SIDE}, got {show(side)}", param=name)
    return int(window[0]), int(window[1])


def swin_index(height: int, width: int) -> np.ndarray:
    """The ``(HW, HW)`` Swin relative-position index as int64."""
    y, x = np.divmod(np.arange(height * width, dtype=np.int64), width)
    dy = y[:, None] - y[None, :] + height - 1
    dx = x[:, None] - x[None, :] + width - 1
    out: np.ndarray = dy * (2 * width - 1) + dx
    return out


def beit_index(height: int, width: int) -> np.ndarray:
    """The ``(HW + 1, HW + 1)`` BEiT index with its class-token row and column, as int64."""
    offsets = (2 * height - 1) * (2 * width - 1)
    out = np.empty((height * width + 1,) * 2, np.int64)
    out[1:, 1:] = swin_index(height, width)
    out[0, :] = offsets
    out[:, 0] = offsets + 1
    out[0, 0] = offsets + 2
    return out


_PRECISION = 60  # decimal digits: the exact logarithm is known to within 10**-58 of its value
_FLOAT32 = ElementType.of("float32")


def _log_coordinate(c: int, p: int) -> np.float32:
    """``sign(c) * log2(1 + 8|c|/p) / 3`` correctly rounded to float32, proven from a 60-digit logarithm."""
    if c == 0:
        return np.float32(0.0)
    with decimal.localcontext() as ctx:
        ctx.prec = _PRECISION
        value = (decimal.Decimal(p + 8 * abs(c)) / p).ln() / (3 * decimal.Decimal(2).ln())
    approx = Fraction(value)
    nearest = np.float32(_FLOAT32.from_exact(approx))
    # proven: no float32 rounding boundary lies within the approximation's error of it
    for neighbour in (np.nextafter(nearest, np.float32(np.inf)), np.nextafter(nearest, np.float32(-np.inf))):
        midpoint = (Fraction(float(nearest)) + Fraction(float(neighbour))) / 2
        if abs(midpoint - approx) <= abs(approx) * Fraction(1, 10**50):  # pragma: no cover - never reached
            raise ArithmeticError(f"cannot round log2(1 + 8*{abs(c)}/{p})/3 to float32 from 60 digits")
    return nearest if c > 0 else -nearest


def _axis(side: int, pretrained: int | None, name: str) -> np.ndarray:
    p = (pretrained if pretrained else side) - 1
    if p < 1:
        what = "pretrained window" if pretrained else "window"
        raise SpecError(
            f"swinv2 coordinates divide by the {what}'s side minus one, so its sides must be at least 2, got "
            f"{pretrained if pretrained else side} for {name}",
            param="pretrained_window" if pretrained else "window",
        )
    half = [_log_coordinate(c, p) for c in range(1, side)]
    return np.array([-v for v in reversed(half)] + [np.float32(0.0)] + half, np.float32)


def swinv2_coords(height: int, width: int, pretrained: tuple[int, int] | None = None) -> np.ndarray:
    """SwinV2's ``(2H - 1, 2W - 1, 2)`` log-spaced coordinate table as float32 (``pretrained``: its window)."""
    ys = _axis(height, pretrained[0] if pretrained else None, "the height")
    xs = _axis(width, pretrained[1] if pretrained else None, "the width")
    out = np.empty((2 * height - 1, 2 * width - 1, 2), np.float32)
    out[:, :, 0] = ys[:, None]
    out[:, :, 1] = xs[None, :]
    return out


def _signed_log1p_axis(side: int) -> np.ndarray:
    """``sign(c) * ln(1 + |c|)`` for ``c = -(side - 1) .. side - 1``, each correctly rounded to float32."""
    from .float32 import log

    half = log(np.arange(2, side + 1, dtype=np.float32))  # ln(1 + c), c = 1 .. side - 1: integers, held exactly
    return np.concatenate([-half[::-1], np.zeros(1, np.float32), half]).astype(np.float32)


def swinv2_cr_coords(height: int, width: int) -> np.ndarray:
    """SwinV2-CR's ``(HW * HW, 2)`` log-spaced coordinates of every token pair, in timm's layout, as float32."""
    y, x = np.divmod(np.arange(height * width, dtype=np.int32), width)
    out = np.empty((height * width, height * width, 2), np.float32)
    out[:, :, 0] = _signed_log1p_axis(height)[y[:, None] - y[None, :] + height - 1]
    out[:, :, 1] = _signed_log1p_axis(width)[x[:, None] - x[None, :] + width - 1]
    return out.reshape(-1, 2)
