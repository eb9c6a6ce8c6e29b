"""posenc_cli.encodings.xpos and ``posenc rope --xpos-scale-base``: xPos's per-position scale.

References: mpmath at 50 digits for the exact values (each float32 entry must be the nearest float32 to
``((10k + 2w) / (7w)) ** (p / scale_base)``); the tables torchscale's ``XPOS`` and rotary-embedding-torch's
``RotaryEmbedding(use_xpos=True)`` themselves built (``tests/goldens/xpos/``), which ``--arithmetic framework``
equals bit for bit except where torch's own float32 ``pow`` is not correctly rounded (checked against mpmath of the
same float32 operands); the positions as the two sources write them.
"""

from __future__ import annotations

import json
from pathlib import Path

import mpmath
import numpy as np
import pytest
from click.testing import CliRunner

from posenc_cli import api, verify
from posenc_cli.cli import cli
from posenc_cli.encodings import xpos
from posenc_cli.errors import SpecError

GOLDENS = Path(__file__).resolve().parent / "goldens" / "xpos"
MANIFEST = json.loads((GOLDENS / "manifest.json").read_text())
SOURCES = {"torchscale": "torchscale", "rotary": "rotary-embedding-torch"}


def arrays() -> dict[str, np.ndarray]:
    with np.load(GOLDENS / MANIFEST["file"], allow_pickle=False) as z:
        return {key: z[key] for key in z.files}


def is_nearest_float32(value: np.float32, exact: mpmath.mpf) -> bool:
    """No float32 is nearer to ``exact`` than ``value``."""
    error = abs(mpmath.mpf(float(value)) - exact)
    for neighbour in (np.nextafter(value, np.float32(np.inf)), np.nextafter(value, np.float32(-np.inf))):
        if abs(mpmath.mpf(float(neighbour)) - exact) < error:
            return False
    return True


def exact_scale(k: int, width: int, p: int, scale_base: int) -> mpmath.mpf:
    return (mpmath.mpf(10 * k + 2 * width) / (7 * width)) ** (mpmath.mpf(p) / scale_base)


@pytest.mark.parametrize("rows", [1, 2, 5, 16, 17, 4095])
def test_positions_are_centred_as_each_source_writes_them(rows):
    min_pos = -rows // 2  # torchscale: -(length + offset) // 2, offset 0
    assert xpos.xpos_positions(rows, "torchscale").tolist() == list(range(min_pos, rows + min_pos))
    assert xpos.xpos_positions(rows, "rotary-embedding-torch").tolist() == [t - rows // 2 for t in range(rows)]


@pytest.mark.parametrize(
    ("width", "scale_base", "rows", "center"),
    [(8, 512, 33, "torchscale"), (64, 512, 64, "rotary-embedding-torch"), (20, 32, 129, "torchscale"),
     (160, 64, 130, "rotary-embedding-torch"), (128, 16, 40, "torchscale"), (2, 1, 9, "torchscale")],
)  # fmt: skip
def test_exact_scales_are_the_real_values_correctly_rounded(width, scale_base, rows, center):
    mpmath.mp.dps = 50
    positions = xpos.xpos_positions(rows, center)
    got = xpos.xpos_scale(positions, width, scale_base, "exact")
    assert got.shape == (rows, width // 2) and got.dtype == np.float32
    for i, p in enumerate(positions.tolist()):
        for k in range(width // 2):
            assert is_nearest_float32(got[i, k], exact_scale(k, width, p, scale_base)), (p, k)


def test_rational_powers_are_exact():
    # w = 160: zeta_31 = (310 + 320) / 1120 = 9/16; w = 20: zeta_3 = 1/2
    positions = np.array([-64, -32, 0, 32, 64], np.int64)
    for arithmetic in ("exact", "framework"):
        nine = xpos.xpos_scale(positions, 160, 64, arithmetic)[:, 31]
        assert nine[2:].tolist() == [1.0, 0.75, 0.5625]
        assert is_nearest_float32(nine[0], mpmath.mpf(16) / 9) and is_nearest_float32(nine[1], mpmath.mpf(4) / 3)
        half = xpos.xpos_scale(positions, 20, 32, arithmetic)[:, 3].tolist()
        assert half == [4.0, 2.0, 1.0, 0.5, 0.25]


def golden_cases():
    for name, case in sorted(MANIFEST["cases"].items()):
        for source in SOURCES:
            yield name, source, case


@pytest.mark.parametrize(
    ("name", "source", "case"), list(golden_cases()), ids=[f"{n}-{s}" for n, s, _ in golden_cases()]
)
def test_framework_scales_match_the_sources_but_where_torchs_pow_is_off(name, source, case):
    mpmath.mp.dps = 50
    width, scale_base, rows = case["width"], case["scale_base"], case["rows"]
    goldens = arrays()
    golden = goldens[f"{source}__{name}"]
    table = api.rope(
        rows, width, layout="interleaved", xpos_scale_base=scale_base, xpos_center=SOURCES[source],
        arithmetic="framework",
    )  # fmt: skip
    got = table.arrays["xpos_scale"]
    assert got.shape == (rows, width) and got.dtype == np.float32
    assert (got[:, 0::2] == got[:, 1::2]).all()  # each frequency over its interleaved pair
    if source == "rotary":
        assert golden.shape == (rows, width) and (golden[:, 0::2] == golden[:, 1::2]).all()
        golden = golden[:, 0::2]
    got = got[:, 0::2]
    assert golden.shape == got.shape
    zeta = goldens[f"{source}_zeta__{name}"]  # torch's own float32 base of each frequency
    # at exponent f32(B) / f32(B) = 1 the framework's power is its float32 base itself: torch's, bit for bit
    assert xpos.xpos_scale(np.array([scale_base]), width, scale_base, "framework")[0].tobytes() == zeta.tobytes()
    exact_table = xpos.xpos_scale(xpos.xpos_positions(rows, SOURCES[source]), width, scale_base, "exact")
    assert np.abs(exact_table.view(np.int32).astype(np.int64) - golden.view(np.int32)).max() <= 2
    exponent = xpos.xpos_positions(rows, SOURCES[source]).astype(np.float32) / np.float32(scale_base)
    differ = np.argwhere(got != golden)
    assert len(differ) <= 0.02 * got.size
    for i, k in differ.tolist():
        exact = mpmath.mpf(float(zeta[k])) ** mpmath.mpf(float(exponent[i]))
        assert is_nearest_float32(got[i, k], exact) and not is_nearest_float32(golden[i, k], exact), (i, k)
        assert abs(int(got[i, k].view(np.int32)) - int(golden[i, k].view(np.int32))) == 1


def test_layouts_rotary_dim_and_the_record(tmp_path):
    half = api.rope(6, 16, xpos_scale_base=8, rotary_dim=8).arrays["xpos_scale"]
    per_frequency = xpos.xpos_scale(xpos.xpos_positions(6, "torchscale"), 8, 8, "exact")
    assert half.tolist() == np.concatenate([per_frequency, per_frequency], axis=1).tolist()
    narrow = api.rope(6, 8, layout="half-width", xpos_scale_base=8).arrays["xpos_scale"]
    assert narrow.tolist() == per_frequency.tolist()
    out = tmp_path / "xpos.npz"
    args = ["rope", "-n", "17", "--head-dim", "32", "--layout", "interleaved", "--xpos-scale-base", "64",
            "--xpos-center", "rotary-embedding-torch", "--arithmetic", "framework", "-o", str(out)]  # fmt: skip
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.stderr
    loaded = api.load(out)
    assert (loaded.params["xpos_scale_base"], loaded.params["xpos_center"]) == (64, "rotary-embedding-torch")
    assert verify.verify(loaded, verify.regenerate(loaded.kind, loaded.params)).ok
    assert CliRunner().invoke(cli, ["verify", str(out)]).exit_code == 0


def test_query_key_products_do_not_depend_on_the_centre():
    a = api.rope(17, 16, xpos_scale_base=4).arrays["xpos_scale"].astype(np.float64)
    b = api.rope(17, 16, xpos_scale_base=4, xpos_center="rotary-embedding-torch").arrays["xpos_scale"]
    ratio_a = a[:, None, :] / a[None, :, :]  # query i times key j's reciprocal
    ratio_b = b.astype(np.float64)[:, None, :] / b.astype(np.float64)[None, :, :]
    assert np.allclose(ratio_a, ratio_b, rtol=1e-6, atol=0)
    assert not np.array_equal(a, b)  # 17 rows: the centres differ by one


@pytest.mark.parametrize(
    ("kwargs", "param"),
    [
        ({"xpos_center": "torchscale"}, "xpos_center"),
        ({"xpos_scale_base": 8, "position_ids": [0, 1, 2]}, "xpos_scale_base"),
        ({"xpos_scale_base": 8, "arithmetic": "ggml"}, "arithmetic"),
        ({"xpos_scale_base": 0}, "xpos_scale_base"),
        ({"xpos_scale_base": 1, "seq_len": 200}, "xpos_scale_base"),  # (7/2) ** 100 leaves float32
        ({"xpos_scale_base": 8, "xpos_center": "lucidrains"}, "xpos_center"),
    ],
)
def test_bad_settings_name_the_parameter(kwargs, param):
    kwargs = {"seq_len": 8, "head_dim": 8, **kwargs}
    if "position_ids" in kwargs:
        kwargs.pop("seq_len")
    with pytest.raises(SpecError) as info:
        api.rope(**kwargs)
    assert info.value.param == param
