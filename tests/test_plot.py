"""posenc_cli.plot: PNGs read back by Pillow (not by the plotting code), the terminal heatmap through a rich console."""

from __future__ import annotations

import io
import re
import sys

import ml_dtypes
import numpy as np
import pytest
from PIL import Image
from rich.console import Console

import posenc_cli
from posenc_cli import plot
from posenc_cli.errors import PosencError, SpecError
from posenc_cli.table import RowSource, Table


def png(table: object, **kwargs: object) -> bytes:
    buf = io.BytesIO()
    plot.heatmap_png(table, buf, **kwargs)  # type: ignore[arg-type]
    return buf.getvalue()


def pixels(data: bytes) -> tuple[Image.Image, np.ndarray]:
    image = Image.open(io.BytesIO(data))
    image.load()
    return image, np.asarray(image.convert("RGB"), np.int32)


def red_and_blue(rgb: np.ndarray) -> tuple[int, int]:
    r, b = rgb[..., 0], rgb[..., 2]
    return int(((r > 150) & (b < 100)).sum()), int(((b > 150) & (r < 100)).sum())


def distinct_colours(rgb: np.ndarray) -> int:
    return len(np.unique(rgb.reshape(-1, 3), axis=0))


def test_heatmap_is_a_png_of_the_documented_size_with_both_ends_of_the_colour_map():
    image, rgb = pixels(png(posenc_cli.generate(seq_len=64, d_model=32)))
    assert image.format == "PNG"
    assert image.size == (800, 600)  # FIGSIZE["heatmap"] (8 x 6 in) at DPI 100
    assert distinct_colours(rgb) > 200
    red, blue = red_and_blue(rgb)
    assert red > 5000 and blue > 5000


def test_dims_add_a_line_panel_below():
    image, rgb = pixels(png(posenc_cli.generate(seq_len=64, d_model=32), dims=[0, 1, 5]))
    assert image.format == "PNG"
    assert image.size == (800, 900)  # FIGSIZE["heatmap+lines"] (8 x 9 in) at DPI 100
    assert distinct_colours(rgb) > 200
    assert min(red_and_blue(rgb)) > 5000
    lower = rgb[620:]  # the line panel: matplotlib's default cycle draws the third line green (#2ca02c)
    green = (abs(lower[..., 0] - 0x2C) < 40) & (abs(lower[..., 1] - 0xA0) < 40) & (abs(lower[..., 2] - 0x2C) < 40)
    assert green.sum() > 100


def test_dpi_scales_the_pixel_size():
    image, _ = pixels(png(posenc_cli.generate(16, 8), dpi=50))
    assert image.size == (400, 300)


def test_same_table_same_bytes_whether_eager_lazy_or_written_to_a_path(tmp_path):
    first = png(posenc_cli.generate(64, 32), dims=[0, 1, 5])
    assert png(posenc_cli.generate(64, 32), dims=[0, 1, 5]) == first
    assert png(posenc_cli.generate(64, 32, lazy=True), dims=[0, 1, 5]) == first
    plot.heatmap_png(posenc_cli.generate(64, 32), tmp_path / "pe.png", dims=[0, 1, 5])
    assert (tmp_path / "pe.png").read_bytes() == first
    assert b"Software" not in first and b"tIME" not in first


def test_title_names_the_kind_and_parameters():
    assert (
        plot._title(posenc_cli.generate(128, 64), "pe") == "sinusoidal  seq_len=128 d_model=64 base=10000 dtype=float32"
    )
    assert png(posenc_cli.generate(16, 8), title="mine") != png(posenc_cli.generate(16, 8))


def test_a_table_with_several_2d_arrays_needs_part():
    rope = Table("rope", {"cos": np.ones((8, 4)), "sin": np.zeros((8, 4)), "inv_freq": np.ones(2)})
    with pytest.raises(SpecError, match="cos, sin, inv_freq") as info:
        png(rope)
    assert info.value.param == "part"
    with pytest.raises(SpecError, match="no part 'tan'") as info:
        png(rope, part="tan")
    assert info.value.param == "part"
    with pytest.raises(SpecError, match="rope"):
        plot.terminal_heatmap(rope)
    assert pixels(png(rope, part="sin"))[0].size == (800, 600)


def test_alibi_draws_its_only_2d_array_and_its_slopes_as_a_line():
    table = posenc_cli.alibi(12, 40)
    assert png(table) == png(table, part="bias")
    image, rgb = pixels(png(table, part="slopes"))
    assert image.size == (800, 400)  # FIGSIZE["line"]
    blue = (abs(rgb[..., 0] - 0x1F) < 30) & (abs(rgb[..., 1] - 0x77) < 30) & (abs(rgb[..., 2] - 0xB4) < 30)
    assert blue.sum() > 200  # the line, in matplotlib's first default colour
    with pytest.raises(SpecError, match="1-D") as info:
        png(table, part="slopes", dims=[0])
    assert info.value.param == "dims"


@pytest.mark.parametrize("dims", [[32], [-1], [True], ["0"]])
def test_dims_outside_the_array_are_a_spec_error(dims):
    with pytest.raises(SpecError, match="from 0 to 31") as info:
        png(posenc_cli.generate(8, 32), dims=dims)
    assert info.value.param == "dims"


@pytest.mark.parametrize("option", ["max_rows", "max_cols", "dpi"])
def test_limits_must_be_positive(option):
    with pytest.raises(SpecError, match=option) as info:
        png(posenc_cli.generate(8, 8), **{option: 0})
    assert info.value.param == option


def test_a_bare_array_is_plotted():
    image, rgb = pixels(png(np.linspace(-1, 1, 64).reshape(8, 8)))
    assert image.size == (800, 600)
    assert min(red_and_blue(rgb)) > 1000


def test_empty_and_3d_arrays_are_refused():
    with pytest.raises(PosencError, match="empty"):
        png(np.zeros((0, 4)))
    with pytest.raises(PosencError, match="3-D"):
        plot.terminal_heatmap(np.zeros((2, 2, 2)))


def test_missing_matplotlib_says_how_to_install_it(monkeypatch):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")] + ["matplotlib"]:
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(PosencError) as info:
        png(posenc_cli.generate(8, 8))
    assert str(info.value) == "posenc plot needs matplotlib: pip install 'posenc[plot]'"
    with pytest.raises(PosencError, match=re.escape("pip install 'posenc[plot]'")):
        plot.require_matplotlib()
    assert plot.terminal_heatmap(posenc_cli.generate(8, 8)) is not None  # the terminal needs rich only


def test_a_lazy_table_is_read_a_bounded_number_of_rows():
    calls: list[tuple[int, int]] = []

    def rows(lo: int, hi: int) -> np.ndarray:
        calls.append((lo, hi))
        return np.sin(np.arange(lo, hi, dtype=np.float64)[:, None] * np.linspace(0.01, 1, 16)).astype(np.float32)

    source = RowSource((10**9, 16), np.float32, rows)
    image, _ = pixels(png(source, max_rows=100, dims=[3]))
    assert image.size == (800, 900)
    assert len(calls) <= 100 and all(hi - lo == 1 for lo, hi in calls)
    assert calls[0] == (0, 1) and calls[-1][0] >= 10**9 - 10**9 // 100

    wide: list[tuple[int, int]] = []

    def wide_rows(lo: int, hi: int) -> np.ndarray:
        wide.append((lo, hi))
        return np.zeros((hi - lo, 1 << 20), np.float32)

    png(RowSource((1000, 1 << 20), np.float32, wide_rows))
    assert sum(hi - lo for lo, hi in wide) * (1 << 20) <= plot.MAX_VALUES


def render(renderable: object) -> tuple[str, str]:
    console = Console(record=True, width=100, color_system="truecolor", file=io.StringIO())
    console.print(renderable)
    return console.file.getvalue(), console.export_text()  # type: ignore[attr-defined]


def test_terminal_heatmap_has_the_requested_size_and_truecolour_blocks():
    raw, text = render(plot.terminal_heatmap(posenc_cli.generate(seq_len=64, d_model=32), width=60, height=20))
    lines = text.splitlines()
    # caption, 17 lines of two rows each (34 of the 64 rows), and the footer on two lines: at 60 columns the axes and
    # the colour scale do not share one, and neither is cut
    assert len(lines) == 20
    heat, footer = lines[1:-2], "\n".join(lines[-2:])
    assert "(34 rows shown)" in footer and "-1 ███████ +1" in lines[-1]
    assert all(len(line) == 60 for line in heat) and all(len(line) <= 60 for line in lines)
    assert set("".join(heat)) == {"▀"} and "…" not in footer
    assert lines[0].startswith("sinusoidal  64×32 float32")
    assert "position 0..63" in footer and "dimension 0..31" in footer
    assert re.search(r"\x1b\[38;2;\d+;\d+;\d+;48;2;\d+;\d+;\d+m▀", raw)  # truecolour foreground and background
    assert "\x1b[38;2;103;0;31" in raw and "\x1b[38;2;5;48;97" in raw  # both ends of the palette (+1, -1)


def test_terminal_heatmap_defaults_to_80_by_24_and_fits_small_tables():
    _, text = render(plot.terminal_heatmap(posenc_cli.generate(1000, 512, lazy=True)))
    lines = text.splitlines()
    assert len(lines) == 24 and max(len(line) for line in lines) == 80
    _, text = render(plot.terminal_heatmap(posenc_cli.generate(5, 4), width=40))
    lines = text.splitlines()
    assert len(lines) == 1 + 3 + 2  # rows are never stretched: 5 rows on 3 lines; the footer on two at 40 columns
    assert all(len(line) == 40 for line in lines[1:-2]) and lines[-1] == "-1 ███████ +1"


def test_terminal_heatmap_of_a_1d_array_is_one_strip():
    _, text = render(plot.terminal_heatmap(posenc_cli.alibi(12, 40), part="slopes", width=30))
    lines = text.splitlines()
    assert len(lines) == 4 and lines[0].startswith("alibi slopes  12 float32")  # caption, strip, axis, scale
    assert lines[2] == "→ head 0..11" and lines[3].startswith("-0.7071 ")


@pytest.mark.parametrize("width", [20, 30, 40, 60, 80])
def test_the_footer_is_never_cut(width):
    """``show --width 40`` cut its own footer ("dimensi…"): each piece of it now fits whole on some line."""
    _, text = render(plot.terminal_heatmap(posenc_cli.generate(1000, 64, lazy=True), width=width, height=12))
    lines = text.splitlines()
    assert len(lines) <= 12 and all(len(line) <= width for line in lines)
    footer = "\n".join(line for line in lines if "▀" not in line)
    assert "…" not in footer.split("\n", 1)[1] and "dimension 0..63" in footer and "position 0..999" in footer


@pytest.mark.parametrize("table", [posenc_cli.alibi(12, 4000), posenc_cli.generate(3, 2), np.full((4, 4), 1e300)])
def test_terminal_heatmap_never_exceeds_a_narrow_width(table):
    _, text = render(plot.terminal_heatmap(table, width=20, height=6))
    lines = text.splitlines()
    assert len(lines) <= 6 and max(map(len, lines)) == 20 and all(len(line) <= 20 for line in lines)


@pytest.mark.parametrize(("option", "value"), [("width", 19), ("height", 2), ("width", 2.5)])
def test_terminal_size_is_checked(option, value):
    with pytest.raises(SpecError) as info:
        plot.terminal_heatmap(posenc_cli.generate(8, 8), **{option: value})
    assert info.value.param == option


@pytest.mark.parametrize(
    ("dtype", "extra", "tolerance"),
    [("q15", {}, 2.0**-15), ("q7", {}, 2.0**-7), ("int8", {"scale": 1 / 100, "zero_point": 7}, 1 / 100)],
)
def test_integer_codes_are_decoded_to_real_values(dtype, extra, tolerance):
    reference = posenc_cli.generate(64, 32, dtype="float64").array
    table = posenc_cli.generate(64, 32, dtype=dtype, **extra)
    assert table.array.dtype.kind == "i"
    decoded = plot._real(np.asarray(table.array), table.params)
    assert np.max(np.abs(decoded - reference)) <= tolerance
    caption = render(plot.terminal_heatmap(table))[1].splitlines()[0]
    low, high = map(float, re.search(r"min (\S+) max (\S+)", caption).groups())  # type: ignore[union-attr]
    assert abs(low + 1) < 0.02 and abs(high - 1) < 0.02


def test_q15_values_are_exactly_the_code_over_32768():
    table = Table("array", {"pe": np.array([[16384, -32768, 1]], np.int16)}, {"dtype": "q15"})
    assert plot._real(np.asarray(table.array), table.params).tolist() == [[0.5, -1.0, 2.0**-15]]


def test_bfloat16_bits_are_decoded_as_ml_dtypes_reads_them():
    table = posenc_cli.generate(64, 32, dtype="bfloat16")
    bits = np.asarray(table.array)
    assert bits.dtype == np.uint16
    expected = bits.view(ml_dtypes.bfloat16).astype(np.float64)
    assert np.array_equal(plot._real(bits, table.params), expected)
