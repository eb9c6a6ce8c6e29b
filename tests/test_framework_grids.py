"""``--arithmetic framework`` of ``posenc relative``, ``posenc window`` and ``posenc sincos2d``
(posenc_cli.encodings.framework_grids).

References: the frameworks' own tables (tests/goldens/framework_grids/, made by transformers 5.25 on torch 2.13 CPU;
tests/goldens/relative/ by timm; tests/goldens/sincos2d_*.npz by transformers and diffusers) and mpmath for the
correctly rounded logarithms.

What was measured, and what the tests hold posenc to:

- T5 (causal buckets ``n`` = 4 .. 256 in powers of two, every ``max_distance`` up to 4096, distances 0 .. 4096):
  transformers' float32 buckets differ from the exact ones in 40 settings, one distance each, none among the common
  settings (32/128, 64/256, ...). The framework buckets reproduce 37 of the 40; the 3 left (n 128 D 441, n 256 D 882,
  n 256 D 2248) are distances whose ``torch.log`` is not correctly rounded (torch's CPU log is an ulp off for 2% to 4%
  of these ratios). With torch's own logarithms put in, the same float32 sequence gives transformers' buckets at every
  distance of the 44 settings.
- DeBERTa (buckets 8 .. 64, every max_relative_positions up to 4096, r = -4096 .. 4096): transformers' buckets
  differ from the exact ones in 58 settings (none at 8 buckets), at one |r| each (116 entries); the framework buckets
  reproduce 55 of them, the 3 left again where torch's log is not correctly rounded (5.0625 and 6.6875 among the
  ratios). With torch's logarithms every entry is transformers'. The common settings (256/512, ...) agree everywhere.
- SwinV2: the framework coords are bit-identical to timm's 5 and transformers' 5 goldens, where the exact coords (each
  correctly rounded once) differ by an ulp in 1580 of timm's 4274 entries.
- 2-D sincos: the framework table is bit-identical to every float32 golden of transformers' builder, ViTMAE and
  diffusers (float64 code rounded once), as the exact table is.
"""

from __future__ import annotations

from pathlib import Path

import mpmath
import numpy as np
import pytest
from click.testing import CliRunner

from posenc_cli import api
from posenc_cli.cli import cli
from posenc_cli.encodings import framework_grids
from posenc_cli.errors import SpecError

GOLDENS = Path(__file__).resolve().parent / "goldens"
HERE = GOLDENS / "framework_grids"
T5 = np.load(HERE / "t5_causal.npz")
SETTINGS = sorted(tuple(int(x) for x in k[1:].split("_d")) for k in T5.files if k.startswith("n"))
#: The settings where transformers' buckets differ from the exact ones at one distance (the search's finds).
DIFFERING = 40
#: The distances where torch's own log, not the sequence, makes transformers' bucket: (n, max_distance, a).
TORCH_LOG = {(128, 441, 168), (256, 882, 336), (256, 2248, 1201)}


def causal_sweep(n: int, d: int, arithmetic: str) -> np.ndarray:
    """Buckets of the distances 0 .. 4096 through the API: one query at 4096 over keys 0 .. 4096, reversed."""
    table = api.relative("t5", 1, 4097, offset=4096, buckets=n, max_distance=d, causal=True, arithmetic=arithmetic)
    return table.arrays["index"][0, ::-1].astype(np.int64)


def cr_log32(x: float) -> np.float32:
    """ln x correctly rounded to float32, from mpmath at 60 digits (far from a tie at these ratios)."""
    with mpmath.workdps(60):
        return np.float32(float(mpmath.log(mpmath.mpf(x))))  # the double is 29 bits past float32: no double rounding


@pytest.mark.parametrize(("n", "d"), SETTINGS, ids=[f"n{n}_d{d}" for n, d in SETTINGS])
def test_t5_framework_buckets_are_transformers(n, d):
    want = T5[f"n{n}_d{d}"].astype(np.int64)
    got, exact = causal_sweep(n, d, "framework"), causal_sweep(n, d, "exact")
    off = {(n, d, int(a)) for a in np.flatnonzero(got != want)}
    assert off <= TORCH_LOG
    for _, _, a in off:  # there torch's log is not the correctly rounded one, and posenc's is
        torch_log = T5[f"log_e{n // 2}"][a]
        assert torch_log != cr_log32(a / (n // 2)) == framework_grids.log(np.float32([a / (n // 2)]))[0]
    # the sequence itself: with torch's own logarithms, every distance is transformers' bucket
    logs = T5[f"log_e{n // 2}"]
    lookup = dict(zip((np.arange(4097, dtype=np.float32) / np.float32(n // 2)).tolist(), logs.tolist(), strict=True))

    def torch_ln(x: np.ndarray) -> np.ndarray:
        return np.array([lookup[v] for v in x.tolist()], np.float32)

    emulated = framework_grids.t5_buckets(np.arange(4097, dtype=np.int64), n, d, ln=torch_ln)
    assert (emulated == want).all()
    assert int((exact != want).sum()) <= 1


def test_the_t5_differences_found():
    differing = [(n, d) for n, d in SETTINGS if (causal_sweep(n, d, "exact") != T5[f"n{n}_d{d}"]).any()]
    assert len(differing) == DIFFERING
    assert {(16, 128), (32, 128), (64, 256), (8, 20)}.isdisjoint(differing)


def test_t5_bidirectional_matrix():
    want = np.load(HERE / "t5_bidirectional.npz")["index"]
    kw = {"offset": 780, "buckets": 32, "max_distance": 1461}
    got = api.relative("t5", 4, 1600, arithmetic="framework", **kw).arrays["index"]
    exact = api.relative("t5", 4, 1600, **kw).arrays["index"]
    assert (got == want).all()
    assert int((exact != want).sum()) == 8  # 4 queries, distance 762 on both sides


DEBERTA = np.load(HERE / "deberta.npz")
DEBERTA_SETTINGS = sorted(tuple(int(x) for x in k[1:].split("_p")) for k in DEBERTA.files if k.startswith("b"))
#: DeBERTa settings where torch's own log, not the sequence, makes transformers' bucket (at one |r| each).
DEBERTA_TORCH_LOG = {(32, 37), (64, 73), (64, 215)}


@pytest.mark.parametrize(("b", "p"), DEBERTA_SETTINGS, ids=[f"b{b}_p{p}" for b, p in DEBERTA_SETTINGS])
def test_deberta_framework_buckets_are_transformers(b, p):
    want = DEBERTA[f"b{b}_p{p}"][::-1].astype(np.int64)  # r = q - k = 4096 - j
    got, exact = (
        api.relative("deberta", 1, 8193, offset=4096, buckets=b, max_distance=p, arithmetic=arithmetic)
        .arrays["index"][0]
        .astype(np.int64)
        for arithmetic in ("framework", "exact")
    )
    off = np.flatnonzero(got != want)
    assert off.size == (2 if (b, p) in DEBERTA_TORCH_LOG else 0)  # r and -r
    assert int((exact != want).sum()) in (0, 2)
    # with torch's own logarithms the float32 sequence gives transformers' buckets everywhere
    m = b // 2
    lookup = dict(
        zip((np.arange(4097, dtype=np.float32) / np.float32(m)).tolist(), DEBERTA[f"log_m{m}"].tolist(), strict=True)
    )
    lookup[float(np.float32((p - 1) / m))] = float(DEBERTA[f"den_b{b}_p{p}"])

    def torch_ln(x: np.ndarray) -> np.ndarray:
        return np.array([lookup[v] for v in x.tolist()], np.float32)

    emulated = framework_grids.deberta_buckets(np.arange(4096, -4097, -1, dtype=np.int64), b, p, ln=torch_ln)
    assert (emulated == want).all()


def test_the_deberta_differences_found():
    exact_off = 0
    for b, p in DEBERTA_SETTINGS:
        exact = api.relative("deberta", 1, 8193, offset=4096, buckets=b, max_distance=p).arrays["index"][0]
        exact_off += int((exact.astype(np.int64) != DEBERTA[f"b{b}_p{p}"][::-1]).sum())
    assert exact_off == 116  # 58 settings, at r and -r


def test_log_and_log2_are_correctly_rounded():
    xs = np.float32([2.625, 9.3828125, 95.25, 1.0, 0.5, 3.0, 1e-30, 3e38, 1.0000001])
    with mpmath.workdps(60):
        want = [np.float32(float(mpmath.log(mpmath.mpf(float(x))))) for x in xs]
        want2 = [np.float32(float(mpmath.log(mpmath.mpf(float(x)), 2))) for x in xs]
    assert framework_grids.log(xs).tolist() == [float(w) for w in want]
    assert framework_grids.log2(xs).tolist() == [float(w) for w in want2]


def swinv2_goldens():
    hf = np.load(HERE / "swinv2.npz")
    for name in hf.files:
        (h, w), (ph, pw) = (tuple(int(x) for x in part.split("x")) for part in name[1:].split("_p"))
        yield f"hf_{name}", (h, w), (ph, pw), hf[name]
    for path in sorted((GOLDENS / "relative").glob("swinv2_*.npz")):
        window, pre = path.stem.split("_")[1:]
        (h, w), (ph, pw) = tuple(int(x) for x in window.split("x")), tuple(int(x) for x in pre[3:].split("x"))
        yield f"timm_{path.stem}", (h, w), (ph, pw), np.load(path)["coords"]


@pytest.mark.parametrize("golden", list(swinv2_goldens()), ids=lambda g: g[0])
def test_swinv2_framework_coords_are_bit_identical(golden):
    _, window, pretrained, want = golden
    got = api.window("swinv2", window, pretrained_window=pretrained, arithmetic="framework").arrays["coords"]
    assert got.dtype == np.float32 and got.tobytes() == want.tobytes()
    exact = api.window("swinv2", window, pretrained_window=pretrained).arrays["coords"]
    assert exact.tobytes() != want.tobytes()  # the exact coords, rounded once, are an ulp off in places


def sincos2d_goldens():
    for path in sorted(GOLDENS.glob("sincos2d_*.npz")):
        z = np.load(path)
        key = "pe_mae" if "pe_mae" in z.files else "pe"
        h, w = (4, 4) if "4x4" in path.stem else (3, 5)
        yield path.stem, (h, w), 16, path.stem.endswith("_cls"), z[key]
    raw = np.load(HERE / "sincos2d.npz")["pe"]  # transformers' layout: swap the halves into MAE's
    yield "hf_16x16_d128_cls", (16, 16), 128, True, np.concatenate([raw[:, 64:], raw[:, :64]], axis=1)


@pytest.mark.parametrize("golden", list(sincos2d_goldens()), ids=lambda g: g[0])
def test_sincos2d_framework_is_bit_identical(golden):
    _, grid, d, cls, want = golden
    got = api.sincos2d(grid=grid, d_model=d, cls_token=cls, arithmetic="framework").array
    assert got.dtype == np.float32 and got.tobytes() == want.astype(np.float32).tobytes()


def test_shaw_framework_is_its_exact_index():
    fw = api.relative("shaw", 9, 12, max_distance=3, arithmetic="framework")
    exact = api.relative("shaw", 9, 12, max_distance=3)
    assert fw.arrays["index"].tobytes() == exact.arrays["index"].tobytes()
    assert fw.params == {**exact.params, "arithmetic": "framework"}


@pytest.mark.parametrize(
    "args",
    [
        ["relative", "--scheme", "t5", "-Q", "1", "-k", "1500", "--offset", "1499", "--buckets", "16",
         "--max-distance", "1461", "--causal"],
        ["relative", "--scheme", "deberta", "-Q", "40", "--buckets", "16", "--max-distance", "64"],
        ["relative", "--scheme", "shaw", "-Q", "6", "--max-distance", "2"],
        ["window", "--scheme", "swinv2", "-w", "6x10", "--pretrained-window", "4"],
        ["window", "--scheme", "swin", "-w", "3"],
        ["sincos2d", "-g", "3x5", "-d", "16", "--cls-token"],
        ["sincos2d", "-g", "4", "-d", "16", "--dtype", "float16"],
    ],
)  # fmt: skip
def test_framework_tables_are_recorded_verified_and_inspected(tmp_path, args):
    runner = CliRunner()
    out, plain, exact = tmp_path / "t.npz", tmp_path / "p.npz", tmp_path / "e.npz"
    made = runner.invoke(cli, [*args, "--arithmetic", "framework", "-o", str(out)])
    assert made.exit_code == 0, made.stderr
    checked = runner.invoke(cli, ["verify", str(out)])
    assert checked.exit_code == 0, checked.stderr + checked.stdout
    shown = runner.invoke(cli, ["inspect", str(out)])
    assert shown.exit_code == 0 and "arithmetic=framework" in shown.stdout
    assert runner.invoke(cli, [*args, "-o", str(plain)]).exit_code == 0
    assert runner.invoke(cli, [*args, "--arithmetic", "exact", "-o", str(exact)]).exit_code == 0
    assert plain.read_bytes() == exact.read_bytes()  # exact is the default, and not recorded
    assert "arithmetic" not in runner.invoke(cli, ["inspect", str(plain)]).stdout


def test_verify_tells_a_framework_record_from_an_exact_table(tmp_path):
    exact = api.window("swinv2", (8, 8))
    forged = type(exact)(exact.kind, exact.arrays, {**exact.params, "arithmetic": "framework"})
    path = tmp_path / "forged.npz"
    api.save(forged, path)
    assert CliRunner().invoke(cli, ["verify", str(path)]).exit_code == 1


@pytest.mark.parametrize(
    "command",
    [
        ["relative", "--scheme", "t5", "-Q", "4"],
        ["window", "--scheme", "swin", "-w", "2"],
        ["sincos2d", "-g", "2", "-d", "8"],
    ],
)
def test_a_bad_value_is_exit_2_in_one_line(tmp_path, command):
    result = CliRunner().invoke(cli, [*command, "--arithmetic", "fast", "-o", str(tmp_path / "x.npz")])
    assert result.exit_code == 2 and "--arithmetic" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_a_bad_value_in_the_api_names_the_parameter():
    makers = (
        lambda: api.relative("t5", 4, arithmetic="fast"),
        lambda: api.window("swin", (2, 2), arithmetic="fast"),
        lambda: api.sincos2d(2, 2, 8, arithmetic="fast"),
    )
    for make in makers:
        with pytest.raises(SpecError) as err:
            make()
        assert err.value.param == "arithmetic"
