"""posenc_cli.encodings.window and posenc window: Swin's and BEiT's index, SwinV2's and SwinV2-CR's coordinates.

References: the definitions written out as loops over token pairs; mpmath at 50 digits for SwinV2's and SwinV2-CR's
logarithms (each float32 coordinate must be the nearest float32 to the exact value); the goldens timm itself made
(``tests/goldens/relative/``, in ``test_relative_goldens.py``; SwinV2-CR's ``relative_coordinates_log`` buffers in
``tests/goldens/window_cr/``, here); the 2 x 2 index printed in microsoft/Swin-Transformer #281.
"""

from __future__ import annotations

import json
from pathlib import Path

import mpmath
import numpy as np
import pytest

from posenc_cli import api
from posenc_cli.encodings import window as win
from posenc_cli.errors import SpecError

mpmath.mp.dps = 50
WINDOW_CR = Path(__file__).resolve().parent / "goldens" / "window_cr"


def swin_reference(h: int, w: int) -> list[list[int]]:
    tokens = [(y, x) for y in range(h) for x in range(w)]
    return [[(yt - yu + h - 1) * (2 * w - 1) + (xt - xu + w - 1) for (yu, xu) in tokens] for (yt, xt) in tokens]


@pytest.mark.parametrize(("h", "w"), [(1, 1), (2, 2), (7, 7), (4, 6), (6, 4), (1, 5), (12, 12)])
def test_swin_index_is_the_definition(h, w):
    assert win.swin_index(h, w).tolist() == swin_reference(h, w)


def test_swin_index_matches_swin_transformer_281():
    assert win.swin_index(2, 2).tolist() == [[4, 3, 1, 0], [5, 4, 2, 1], [7, 6, 4, 3], [8, 7, 5, 4]]


@pytest.mark.parametrize(("h", "w"), [(1, 2), (3, 3), (4, 6)])
def test_beit_index_adds_the_class_token(h, w):
    d = (2 * h - 1) * (2 * w - 1)
    got = win.beit_index(h, w)
    assert got.shape == (h * w + 1,) * 2
    assert got[1:, 1:].tolist() == swin_reference(h, w)
    assert (got[0, 1:] == d).all() and (got[1:, 0] == d + 1).all() and got[0, 0] == d + 2


def coordinate(c: int, p: int) -> mpmath.mpf:
    if c == 0:
        return mpmath.mpf(0)
    return mpmath.sign(c) * mpmath.log(1 + mpmath.mpf(8 * abs(c)) / p, 2) / 3


def is_nearest_float32(value: np.float32, exact: mpmath.mpf) -> bool:
    """No float32 is nearer to ``exact`` than ``value`` (ties are impossible for these logarithms)."""
    error = abs(mpmath.mpf(float(value)) - exact)
    for neighbour in (np.nextafter(value, np.float32(np.inf)), np.nextafter(value, np.float32(-np.inf))):
        if abs(mpmath.mpf(float(neighbour)) - exact) < error:
            return False
    return True


@pytest.mark.parametrize(
    ("h", "w", "pretrained"), [(8, 8, None), (16, 16, (8, 8)), (12, 12, (12, 12)), (8, 12, None), (6, 4, (4, 4))]
)
def test_swinv2_coords_are_the_exact_values_correctly_rounded(h, w, pretrained):
    coords = win.swinv2_coords(h, w, pretrained)
    assert coords.shape == (2 * h - 1, 2 * w - 1, 2) and coords.dtype == np.float32
    ph, pw = (pretrained[0] - 1, pretrained[1] - 1) if pretrained else (h - 1, w - 1)
    for i, dy in enumerate(range(-(h - 1), h)):
        assert is_nearest_float32(coords[i, 0, 0], coordinate(dy, ph)), dy
        assert (coords[i, :, 0] == coords[i, 0, 0]).all()
    for j, dx in enumerate(range(-(w - 1), w)):
        assert is_nearest_float32(coords[0, j, 1], coordinate(dx, pw)), dx
        assert (coords[:, j, 1] == coords[0, j, 1]).all()


def test_the_window_table_holds_what_each_scheme_has():
    assert set(api.window("swin", (7, 7)).arrays) == {"index"}
    assert api.window("beit", (14, 14)).arrays["index"].shape == (197, 197)
    table = api.window("swinv2", (8, 8), pretrained_window=(12, 12))
    assert set(table.arrays) == {"index", "coords"}
    assert (table.params["pretrained_height"], table.params["pretrained_width"]) == (12, 12)
    assert table.arrays["index"].dtype == np.int16  # 224 > 127
    assert "pretrained_height" not in api.window("swinv2", (8, 8), pretrained_window=(0, 0)).params  # timm's none


@pytest.mark.parametrize(
    ("kwargs", "param"),
    [
        ({"scheme": "swim", "window": (7, 7)}, "scheme"),
        ({"scheme": "swin", "window": (0, 7)}, "window"),
        ({"scheme": "swin", "window": (7, 7, 7)}, "window"),
        ({"scheme": "swin", "window": (7, 7), "pretrained_window": (8, 8)}, "pretrained_window"),
        ({"scheme": "swinv2", "window": (1, 7)}, "window"),
        ({"scheme": "swinv2", "window": (4, 4), "pretrained_window": (1, 4)}, "pretrained_window"),
        ({"scheme": "swinv2", "window": (4, 4), "bias": np.zeros((49, 2), np.float32)}, "bias"),
        ({"scheme": "swin", "window": (2, 2), "bias": np.zeros((8, 2), np.float32)}, "bias"),
        ({"scheme": "swin", "window": (12, 12), "dtype": "int8"}, "dtype"),
    ],
)
def test_bad_settings_name_the_parameter(kwargs, param):
    with pytest.raises(SpecError) as info:
        api.window(**kwargs)
    assert info.value.param == param


# ------------------------------------------------------------------------------------------------- SwinV2-CR
def cr_coordinate(c: int) -> mpmath.mpf:
    return mpmath.sign(c) * mpmath.log(1 + abs(c))


@pytest.mark.parametrize(("h", "w"), [(1, 1), (1, 5), (3, 3), (4, 6), (6, 4), (8, 8)])
def test_swinv2_cr_coords_are_each_pair_exactly_rounded_in_timms_layout(h, w):
    coords = win.swinv2_cr_coords(h, w)
    assert coords.shape == (h * w * h * w, 2) and coords.dtype == np.float32
    tokens = [(y, x) for y in range(h) for x in range(w)]
    for t, (yt, xt) in enumerate(tokens):
        for u, (yu, xu) in enumerate(tokens):
            for column, c in enumerate((yt - yu, xt - xu)):
                value = coords[t * h * w + u, column]
                assert is_nearest_float32(value, cr_coordinate(c)), (t, u, column)
    assert (coords[:: h * w + 1] == 0).all()  # a token and itself


def test_swinv2_cr_table_and_framework_arithmetic():
    table = api.window("swinv2-cr", (4, 6))
    assert set(table.arrays) == {"index", "coords"} and table.axes["coords"] == ("pair", "yx")
    assert table.arrays["index"].tolist() == swin_reference(4, 6)
    framework = api.window("swinv2-cr", (4, 6), arithmetic="framework")
    assert framework.params["arithmetic"] == "framework"
    assert framework.arrays["coords"].tobytes() == table.arrays["coords"].tobytes()
    for kwargs in ({"pretrained_window": (8, 8)}, {"bias": np.zeros((63, 2), np.float32)}):
        with pytest.raises(SpecError):
            api.window("swinv2-cr", (4, 6), **kwargs)


def cr_goldens():
    manifest = json.loads((WINDOW_CR / "manifest.json").read_text())
    with np.load(WINDOW_CR / manifest["file"], allow_pickle=False) as z:
        arrays = {key: z[key] for key in z.files}
    return manifest, arrays


@pytest.mark.parametrize("name", sorted(cr_goldens()[0]["goldens"]))
def test_swinv2_cr_coords_match_timms_buffer_but_where_torchs_log_is_off(name):
    """timm's buffer, bit for bit, except where torch's float32 ``log`` of the integer ``1 + |d|`` is not the
    nearest float32 (``log(7)`` on the AVX512 torch that made the goldens): there posenc's is the nearest."""
    manifest, arrays = cr_goldens()
    h, w = manifest["goldens"][name]["window"]
    golden = arrays[name]
    torch_log = arrays["log"]  # torch.log(1 .. 256) in float32, from the same run
    for mode in ("exact", "framework"):
        got = api.window("swinv2-cr", (h, w), arithmetic=mode).arrays["coords"]
        assert got.shape == golden.shape == (h * w * h * w, 2)
        off = {n for n in range(1, 257) if not is_nearest_float32(torch_log[n - 1], mpmath.log(n))}
        assert 7 in off  # the goldens record torch's log(7) one ulp off
        magnitude = np.rint(np.expm1(np.abs(golden.astype(np.float64)))).astype(np.int64) + 1  # 1 + |d|
        explained = np.isin(magnitude, sorted(off))
        assert (got[~explained] == golden[~explained]).all()
        assert (np.abs(golden[explained]) == torch_log[magnitude[explained] - 1]).all()
        for value, n in zip(np.abs(got[explained]).tolist(), magnitude[explained].tolist(), strict=True):
            assert is_nearest_float32(np.float32(value), mpmath.log(n))
