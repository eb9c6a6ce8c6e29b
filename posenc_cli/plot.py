"""Look at a table: a PNG heatmap (matplotlib) and a small heatmap for the terminal (rich).

Both draw one 2-D array of a table with its rows down the y axis and its columns along the x axis: position down and
dimension across for the position tables (sinusoidal, sincos2d), head down and key position across for ALiBi's bias.
Colours are diverging and centred on 0, with symmetric limits ``±max|value|``: blue negative, white 0, red positive
(matplotlib's ``RdBu_r``; the terminal uses the same ColorBrewer RdBu anchors). A 1-D array (ALiBi's slopes) is
drawn as a line in the PNG and as a single strip in the terminal.

Which array: ``part`` names it; without it a table's only array, or its only 2-D array (ALiBi's bias next to the 1-D
slopes), is drawn. A table with several 2-D arrays (RoPE's cos and sin) needs ``part``.

Values are real values: integer element types are decoded as ``params["dtype"]`` records them (q15 ``code / 2**15``,
q7 ``code / 2**7``, int8 ``(code - zero_point) * scale``, bfloat16 bit patterns widened to float32).

Bounded reads: the PNG reads at most ``max_rows`` rows, every ``s``-th row from row 0 with the stride
``s = ceil(rows / max_rows)``; the terminal reads two rows per line, spread evenly (the nearest row at or below
``k * rows / count``). Neither reads more than ``MAX_VALUES`` values in all (a very wide table gets fewer rows).
A lazy :class:`~posenc_cli.table.RowSource` is asked for those rows one at a time (``source[i:i+1]``), never for
the whole table; each row is read whole. Columns are then strided (PNG, to ``max_cols``) or sampled (terminal).

PNG size: ``FIGSIZE`` inches at ``dpi`` (default ``DPI`` = 100): 800x600 pixels for a heatmap, 800x900 with the
``dims`` line panel, 800x400 for a 1-D array. The bytes are reproducible: matplotlib's default style is used
whatever the user's matplotlibrc says, and the PNG carries no ``Software`` text chunk and no timestamp, so the same
table gives the same bytes with the same matplotlib, FreeType and Pillow.

matplotlib is optional (``pip install 'posenc[plot]'``) and imported only by :func:`heatmap_png`; the terminal
heatmap needs only rich.
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Union

import numpy as np

from ._printable import printable
from .dtypes import decode
from .errors import PosencError, SpecError
from .table import Array, Param, RowSource, Table

if TYPE_CHECKING:
    from rich.console import Group

__all__ = [
    "DPI",
    "FIGSIZE",
    "MAX_COLS",
    "MAX_ROWS",
    "MAX_VALUES",
    "heatmap_png",
    "require_matplotlib",
    "terminal_heatmap",
]

#: Rows and columns drawn at most in a PNG: more than the ~450 pixels a panel has, so striding loses nothing visible.
MAX_ROWS = 1024
MAX_COLS = 1024
#: Values read at most (64 MiB as float64): a table wider than ``MAX_VALUES // MAX_ROWS`` columns gets fewer rows.
MAX_VALUES = 1 << 23
DPI = 100
#: Figure sizes in inches: ``heatmap``, ``heatmap`` plus the ``dims`` line panel, and a 1-D ``line``.
FIGSIZE = {"heatmap": (8.0, 6.0), "heatmap+lines": (8.0, 9.0), "line": (8.0, 4.0)}
CMAP = "RdBu_r"
MISSING_MATPLOTLIB = "posenc plot needs matplotlib: pip install 'posenc[plot]'"

#: ColorBrewer RdBu (11 classes) from negative to positive: blue, white, red.
_PALETTE = np.array(
    [
        [int(h[i : i + 2], 16) for i in (0, 2, 4)]
        for h in "053061 2166ac 4393c3 92c5de d1e5f0 f7f7f7 fddbc7 f4a582 d6604d b2182b 67001f".split()
    ],
    np.float64,
)
_AXIS_NAMES = {"seq_len": "position", "d_model": "dimension", "head_dim": "dimension", "heads": "head", "len": "index"}

PathOrFile = Union[str, "os.PathLike[str]", BinaryIO]


def require_matplotlib() -> None:
    """Raise :class:`PosencError` with the install hint unless matplotlib can be imported (the CLI checks early)."""
    try:
        import matplotlib  # noqa: F401
        import matplotlib.backends.backend_agg  # noqa: F401
        import matplotlib.figure  # noqa: F401
    except ImportError:
        raise PosencError(MISSING_MATPLOTLIB) from None


def heatmap_png(
    table: Table | np.ndarray | RowSource,
    out: PathOrFile,
    *,
    part: str | None = None,
    dims: Sequence[int] | None = None,
    title: str | None = None,
    max_rows: int = MAX_ROWS,
    max_cols: int = MAX_COLS,
    dpi: int = DPI,
) -> None:
    """Write a PNG heatmap of one array of ``table`` (rows down, columns across) to ``out``.

    Parameters
    ----------
    table : Table, numpy.ndarray or RowSource
        What to draw; a bare array is drawn as a table of kind ``"array"``.
    out : binary file object, str or os.PathLike
        Where the PNG goes: a file object opened for binary writing (written, not closed), or a path, written
        atomically.
    part : str, optional
        The array to draw; needed when the table holds several 2-D arrays.
    dims : sequence of int, optional
        Column indices to draw again below the heatmap as lines against the row (position), with a legend.
        Empty means none.
    title : str, optional
        The figure title; by default the kind, the part and the parameters ("sinusoidal  seq_len=128 d_model=64 ...").
    max_rows, max_cols : int
        Rows read and columns drawn at most; larger arrays are strided (see the module docstring).
    dpi : int
        Pixels per inch: the PNG is ``FIGSIZE`` inches times ``dpi`` (800x600 at 100 dpi).

    Raises
    ------
    SpecError
        A missing or unknown ``part``, ``dims`` outside the array, a non-positive limit.
    PosencError
        matplotlib is not installed, or the array is empty or not 1-D or 2-D.

    Examples
    --------
    >>> import io, posenc_cli
    >>> buf = io.BytesIO()
    >>> heatmap_png(posenc_cli.generate(64, 32), buf, dims=[0, 1])
    >>> buf.getvalue()[:8]
    b'\\x89PNG\\r\\n\\x1a\\n'
    """
    for name, value in (("max_rows", max_rows), ("max_cols", max_cols), ("dpi", dpi)):
        _check_positive(name, value)
    table, key, array = _pick(table, part)
    dims = list(dims or ())
    if dims and array.ndim != 2:
        raise SpecError(f"dims picks columns of a 2-D array; {key!r} is 1-D", param="dims")
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or not 0 <= d < array.shape[1]:
            raise SpecError(f"dims must be column indices from 0 to {array.shape[1] - 1}, got {d!r}", param="dims")
    require_matplotlib()
    import matplotlib.style
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    raw, rows = _read_rows(array, max_rows)
    values = decode(raw, table.params)
    layout = "line" if array.ndim == 1 else "heatmap+lines" if dims else "heatmap"
    y_name, x_name = (_axis_label(n) for n in (table.axes_of(key) * 2)[:2])
    x_short = _AXIS_NAMES.get(table.axes_of(key)[-1], table.axes_of(key)[-1])
    limit = _limit(values)
    with matplotlib.style.context("default"):  # the same bytes whatever the user's matplotlibrc says
        fig = Figure(figsize=FIGSIZE[layout], dpi=dpi, layout="constrained")
        FigureCanvasAgg(fig)
        fig.suptitle(
            textwrap.fill(title if title is not None else _title(table, key), 72)
        )  # 72 characters fit 8 inches
        if array.ndim == 1:
            ax = fig.add_subplot()
            ax.plot(rows, values, marker="." if values.size <= 64 else None, linewidth=1)
            ax.set(xlabel=y_name, ylabel="value")
            ax.grid(alpha=0.3)
        else:
            axes = fig.subplots(2 if dims else 1, 1, squeeze=False, height_ratios=[2, 1] if dims else None)[:, 0]
            row_step = int(rows[1] - rows[0]) if rows.size > 1 else 1
            col_step = -(-values.shape[1] // max_cols)
            shown = values[:, ::col_step]
            extent = (
                -col_step / 2,
                shown.shape[1] * col_step - col_step / 2,
                shown.shape[0] * row_step - row_step / 2,
                -row_step / 2,
            )
            image = axes[0].imshow(shown, cmap=CMAP, vmin=-limit, vmax=limit, aspect="auto", extent=extent)
            fig.colorbar(image, ax=axes[0], label="value")
            axes[0].set(xlabel=x_name, ylabel=y_name)
            if dims:
                for d in dims:
                    axes[1].plot(rows, values[:, d], linewidth=1, label=str(d))
                axes[1].set(xlabel=y_name, ylabel="value", ylim=(-1.05 * limit, 1.05 * limit))
                axes[1].grid(alpha=0.3)
                axes[1].legend(
                    title=x_short,
                    loc="upper left",
                    bbox_to_anchor=(1.01, 1.0),
                    fontsize="small",
                    ncols=-(-len(dims) // 12),
                )
        save: dict[str, Any] = {"format": "png", "metadata": {"Software": None}}
        if isinstance(out, (str, os.PathLike)):
            from .system.atomic import atomic_outputs

            with atomic_outputs([Path(os.fspath(out))]) as (fp,):
                fig.savefig(fp, **save)
        else:
            fig.savefig(out, **save)


def terminal_heatmap(
    table: Table | np.ndarray | RowSource,
    *,
    part: str | None = None,
    width: int | None = None,
    height: int | None = None,
) -> Group:
    """A small heatmap of one array of ``table`` for a terminal, as a rich renderable (nothing is printed).

    The first line is a caption (kind, part, shape, element type, min and max of the rows read); then the
    heatmap, two rows per line ("▀" with the upper row as foreground and the lower as background colour) and one
    column per character; the last line names the axes and shows the colour scale. The whole is exactly
    ``width`` characters wide (columns are sampled, or repeated when there are fewer) and at most ``height``
    lines tall (rows are sampled evenly, never repeated). A 1-D array is one strip.

    Parameters
    ----------
    table : Table, numpy.ndarray or RowSource
        What to draw; a bare array is drawn as a table of kind ``"array"``.
    part : str, optional
        The array to draw; needed when the table holds several 2-D arrays.
    width, height : int, optional
        Characters and lines, 80 and 24 by default; at least 20 and 3.

    Examples
    --------
    >>> import posenc_cli
    >>> from rich.console import Console
    >>> console = Console(width=40, record=True, color_system=None)
    >>> console.print(terminal_heatmap(posenc_cli.generate(64, 32), width=40, height=10))  # doctest: +ELLIPSIS
    sinusoidal  64×32 float32  min -1 max 1
    ...
    """
    from rich.color import Color
    from rich.console import Group
    from rich.style import Style
    from rich.text import Text

    width = 80 if width is None else width
    height = 24 if height is None else height
    _check_positive("width", width, 20)
    _check_positive("height", height, 3)
    table, key, array = _pick(table, part)
    names = [_AXIS_NAMES.get(n, n) for n in table.axes_of(key)]
    # The footer (axes, then the colour scale) takes the lines it needs at this width, never cut; the heatmap the
    # rest. Sized first for the longest footer (a "(N rows shown)" note and the widest scale), so it only shrinks.
    most = _footer(names, array.shape, array.shape[0] if array.ndim == 2 else None, 1e300, width, height - 2)
    lines_left = max(1, height - 1 - len(most))
    raw = _read_rows(array, 2 * lines_left, fill=True)[0] if array.ndim == 2 else np.asarray(array)[None]
    values = decode(raw, table.params)
    finite = values[np.isfinite(values)]
    low, high = (float(finite.min()), float(finite.max())) if finite.size else (float("nan"), float("nan"))
    limit = _limit(values)
    columns = (np.arange(width) * values.shape[1]) // width
    rgb = _colours(values[:, columns], limit)

    def block(top: np.ndarray, bottom: np.ndarray | None) -> Style:
        return Style(
            color=Color.from_rgb(*top.tolist()),
            bgcolor=None if bottom is None else Color.from_rgb(*bottom.tolist()),
        )

    shape = "×".join(map(str, array.shape))
    caption = f"{_head(table, key)}  {shape} {_dtype(table, array)}  min {low:.4g} max {high:.4g}"
    lines = [Text(_fit(caption, width), no_wrap=True, overflow="crop")]
    for r in range(0, rgb.shape[0], 2):
        line = Text(no_wrap=True, overflow="crop")
        for c in range(width):
            line.append("▀", block(rgb[r, c], rgb[r + 1, c] if r + 1 < rgb.shape[0] else None))
        lines.append(line)
    shown = len(raw) if array.ndim == 2 and len(raw) < array.shape[0] else None
    lines += _footer(names, array.shape, shown, limit, width, height - len(lines))
    return Group(*lines)


# ------------------------------------------------------------------------------------------------------ helpers
def _footer(
    names: list[str], shape: tuple[int, ...], shown: int | None, limit: float, width: int, room: int
) -> list[Any]:
    """The heatmap's footer: the axes and the colour scale, packed into lines of ``width``; what does not fit on a
    line starts the next one, so nothing is cut. At most ``room`` lines: the scale is left out first, then the axes
    share one line without the "rows shown" note (cut with "…" only at the narrowest widths)."""
    from rich.color import Color
    from rich.style import Style
    from rich.text import Text

    axes = [f"↓ {names[0]} 0..{shape[0] - 1}"] if len(shape) == 2 else []
    axes += [f"({shown} rows shown)"] if shown is not None else []
    axes += [f"→ {names[-1]} 0..{shape[-1] - 1}"]
    scale = Text(f"{-limit:+.4g} ")
    for t in np.linspace(-limit, limit, 7):
        scale.append("█", Style(color=Color.from_rgb(*_colours(np.array([[t]]), limit)[0, 0].tolist())))
    scale.append(f" {limit:+.4g}")

    def pack(pieces: list[Text]) -> list[Text]:
        out: list[Text] = []
        for piece in pieces:
            gap = " " if piece.plain.startswith("(") else "  "
            if out and len(out[-1]) + len(gap) + len(piece) <= width:
                out[-1].append(gap)
                out[-1].append_text(piece)
            else:
                out.append(piece.copy())
        return out

    bare = [a for a in axes if not a.startswith("(")]
    for lines in (pack([*map(Text, axes), scale]), pack(list(map(Text, axes))), pack(list(map(Text, bare)))):
        if len(lines) <= max(1, room) and all(len(line) <= width for line in lines):
            return lines
    return [Text(_fit("  ".join(bare), width))]


_real = decode  # the decoding's former name here, which tests/test_plot.py still reaches for


def _check_positive(name: str, value: object, least: int = 1) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
        raise SpecError(f"{name} must be an integer of at least {least}, got {value!r}", param=name)


def _pick(source: Table | np.ndarray | RowSource, part: str | None) -> tuple[Table, str, Array]:
    """The table, the key of the array to draw, and that array; ``SpecError`` (``part``) when it is ambiguous."""
    if not isinstance(source, Table):
        source = Table("array", {"pe": source if isinstance(source, RowSource) else np.asarray(source)})
    parts = ", ".join(source.arrays)
    if part is not None:
        if part not in source.arrays:
            raise SpecError(f"this {source.kind} table has no part {part!r}; its parts are {parts}", param="part")
        key = part
    else:
        two_d = [k for k, a in source.arrays.items() if a.ndim == 2]
        if len(source.arrays) == 1:
            key = next(iter(source.arrays))
        elif len(two_d) == 1:
            key = two_d[0]
        else:
            raise SpecError(
                f"this {source.kind} table holds {len(source.arrays)} arrays ({parts}): say which one to draw",
                param="part",
            )
    array = source.arrays[key]
    if array.ndim not in (1, 2):
        raise PosencError(f"posenc plots 1-D and 2-D arrays; {key!r} is {array.ndim}-D, shape {array.shape}")
    if 0 in array.shape:
        raise PosencError(f"{key!r} is empty (shape {array.shape}): nothing to plot")
    return source, key, array


def _read_rows(array: Array, max_rows: int, *, fill: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Rows (elements of a 1-D array) from row 0 and their indices: at most ``max_rows`` rows and ``MAX_VALUES``
    values, every ``ceil(n / max_rows)``-th row, or with ``fill`` exactly ``min(n, max_rows)`` rows spread evenly
    (nearest below, so the step alternates between two integers)."""
    n = array.shape[0]
    if array.ndim == 2:
        max_rows = max(1, min(max_rows, MAX_VALUES // max(1, array.shape[1])))
    count = min(n, max_rows)
    rows = (np.arange(count) * n) // count if fill else np.arange(0, n, -(-n // max_rows))
    if count == n:
        return np.asarray(array[0:n]), rows
    if not isinstance(array, RowSource):
        return np.asarray(array)[rows], rows
    return np.concatenate([array[i : i + 1] for i in rows.tolist()]), rows


def _limit(values: np.ndarray) -> float:
    """The symmetric colour limit: the largest finite magnitude, 1 for an all-zero (or all-NaN) array."""
    finite = np.abs(values[np.isfinite(values)])
    top = float(finite.max()) if finite.size else 0.0
    return top if top > 0 else 1.0


def _colours(values: np.ndarray, limit: float) -> np.ndarray:
    """RGB (uint8, shape ``values.shape + (3,)``) of the diverging palette, ``-limit`` blue to ``+limit`` red."""
    at = (np.clip(np.nan_to_num(values / limit), -1.0, 1.0) + 1.0) / 2.0 * (len(_PALETTE) - 1)
    lo = np.minimum(np.floor(at).astype(np.intp), len(_PALETTE) - 2)
    frac = (at - lo)[..., None]
    rgb: np.ndarray = np.rint(_PALETTE[lo] * (1 - frac) + _PALETTE[lo + 1] * frac).astype(np.uint8)
    return rgb


def _head(table: Table, key: str) -> str:
    """The kind (and part), escaped: both may come from a file (:mod:`posenc_cli._printable`)."""
    return printable(table.kind if len(table.arrays) == 1 else f"{table.kind} {key}")


def _title(table: Table, key: str) -> str:
    """``kind[ part]  name=value ...`` from the parameters, without the (long, descriptive) layout."""
    shown = printable(" ".join(f"{name}={_format(value)}" for name, value in table.params.items() if name != "layout"))
    return f"{_head(table, key)}  {shown}" if shown else _head(table, key)


def _format(value: Param) -> str:
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e16:
        return str(int(value))
    return repr(value) if isinstance(value, float) else str(value)


def _axis_label(name: str) -> str:
    friendly = _AXIS_NAMES.get(name)
    return f"{friendly} ({name})" if friendly is not None and friendly != name else name


def _dtype(table: Table, array: Array) -> str:
    dtype = table.params.get("dtype")
    return dtype if isinstance(dtype, str) else array.dtype.name


def _fit(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
