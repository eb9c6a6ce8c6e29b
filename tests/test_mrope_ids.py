"""``posenc mrope`` (:mod:`posenc_cli.kinds.mrope`, :mod:`posenc_cli.encodings.mrope_ids`) against the position ids
transformers' own ``get_rope_index`` gives (``tests/goldens/mrope_ids/``, and the Qwen2-VL / Qwen2.5-VL ids of
``tests/goldens/rope_config/``), its prompt errors, its file round trip, and the ids fed to ``posenc rope``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from posenc_cli import api
from posenc_cli.cli import cli
from tests.test_kinds import one_line

GOLDENS = json.loads((Path(__file__).parent / "goldens" / "mrope_ids" / "goldens.json").read_text())["goldens"]
ROPE = Path(__file__).parent / "goldens" / "rope_config"
#: The rope_config goldens whose ids came from the model's own get_rope_index, with the prompt they were made of.
ROPE_GOLDENS = {
    "qwen2-vl-2b_image_1x8x12": ("qwen2-vl", "text:4,image:1x8x12,text:8", {}),
    "qwen2.5-vl-3b_image_1x8x12_video_2x8x12": (
        "qwen2.5-vl", "text:4,image:1x8x12,text:4,video:2x8x12,text:8", {"tokens_per_second": 2},
    ),
}  # fmt: skip


def run(*args: object):
    return CliRunner().invoke(cli, [str(a) for a in args])


def options(entry: dict) -> dict:
    """The API keywords of a golden: its merge size, and Qwen2.5-VL's video settings where it has a video."""
    given = {"spatial_merge_size": entry["vision_config"]["spatial_merge_size"]}
    if entry["model"] == "qwen2.5-vl" and "video" in entry["prompt"]:
        given["tokens_per_second"] = entry["vision_config"]["tokens_per_second"]
    if entry["second_per_grid_ts"] is not None:
        given["second_per_grid_ts"] = entry["second_per_grid_ts"]
    return given


@pytest.mark.parametrize("name", sorted(GOLDENS))
def test_the_ids_are_transformers_own(name):
    entry = GOLDENS[name]
    table = api.mrope(entry["model"], entry["prompt"], **options(entry))
    ids = table.arrays["ids"]
    assert ids.dtype == np.int64
    assert ids.tolist() == entry["position_ids"]
    assert table.params["rope_deltas"] == entry["rope_deltas"]
    assert table.params["seq_len"] == len(entry["position_ids"][0])


def test_the_goldens_cover_every_model_and_qwen25s_fractional_intervals():
    assert {e["model"] for e in GOLDENS.values()} == {"qwen2-vl", "qwen2.5-vl", "qwen3-vl", "glm-4.1v"}
    seconds = {e["second_per_grid_ts"] for e in GOLDENS.values() if e["model"] == "qwen2.5-vl"}
    assert {0.5, 0.7, 1 / 3, None} <= seconds
    # a float32 product truncated: 0.7 s at 2 tokens a second is not 1.4 * t computed in float64 everywhere
    entry = GOLDENS["qwen2.5-vl_video_0.7s"]
    temporal = sorted(set(entry["position_ids"][0][2:-3]))
    assert len(temporal) == 12 and temporal[0] == 2


@pytest.mark.parametrize("name", sorted(ROPE_GOLDENS))
def test_the_rope_config_goldens_ids_are_these(name):
    model, prompt, given = ROPE_GOLDENS[name]
    with np.load(ROPE / f"{name}.npz") as z:
        want, deltas = z["position_ids"], z["rope_deltas"]
    table = api.mrope(model, prompt, **given)
    assert np.array_equal(table.arrays["ids"], want)
    assert table.params["rope_deltas"] == int(deltas[0])


@pytest.mark.parametrize("name", sorted(ROPE_GOLDENS))
def test_the_ids_file_feeds_rope_and_gives_transformers_caches(tmp_path, name):
    """Write the ids with ``posenc mrope``, read them with ``posenc rope --config --position-ids``: the caches are
    transformers' own (within 2 float32 ulps, the bar of tests/test_rope_framework.py), and the same as from the
    golden's ids; with ``--mrope-section`` from the command line instead of the config, the same again."""
    model, prompt, given = ROPE_GOLDENS[name]
    config = name.split("_")[0]
    ids = tmp_path / "ids.npy"
    extra = [w for k, v in given.items() for w in (f"--{k.replace('_', '-')}", v)]
    assert run("mrope", "-m", model, "--prompt", prompt, *extra, "-o", ids).exit_code == 0
    out = tmp_path / "rope.npz"
    result = run(
        "rope", "--config", ROPE / "configs" / config, "--position-ids", ids, "--arithmetic", "framework", "-o", out
    )
    assert result.exit_code == 0, result.output
    with np.load(ROPE / f"{name}.npz") as z:
        want = {key: z[key] for key in ("cos", "sin", "position_ids")}
    with np.load(out) as got:
        for part in ("cos", "sin"):
            a = got[part].view(np.int32).astype(np.int64)
            b = want[part].view(np.int32).astype(np.int64)
            assert np.abs(a - b).max() <= 2, part
        cos = got["cos"]
    same = api.rope(config=ROPE / "configs" / config, position_ids=want["position_ids"], arithmetic="framework")
    assert np.array_equal(np.asarray(same.arrays["cos"]), cos)
    plain = tmp_path / "plain.npz"
    section = ["--head-dim", 128, "--theta", 1000000.0, "--mrope-section", "16,24,24", "--arithmetic", "framework"]
    assert run("rope", *section, "--position-ids", ids, "-o", plain).exit_code == 0
    with np.load(plain) as got:
        assert np.array_equal(got["cos"], cos)


def test_the_cli_writes_ids_that_verify_and_inspect_read_back(tmp_path):
    out = tmp_path / "ids.npz"
    prompt = "text:4,image:1x8x12,text:4,video:2x8x12,text:8"
    result = run("mrope", "-m", "qwen2.5-vl", "--prompt", prompt, "--tokens-per-second", 2, "-o", out)
    assert result.exit_code == 0, result.output
    table = api.load(out)
    assert table.kind == "mrope_ids" and table.params["rope_deltas"] == -60 and table.params["prompt"] == prompt
    assert run("verify", out).exit_code == 0
    shown = run("inspect", out)
    assert shown.exit_code == 0 and "mrope_ids" in shown.output and "-60" in shown.output


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["-m", "qwen2-vl", "--prompt", "text:3,picture:1x8x12"], ["prompt item 2 'picture:1x8x12' must be text:N"]),
        (["-m", "qwen2-vl", "--prompt", "text:3,image:8x12"], ["prompt item 2 'image:8x12'"]),
        (["-m", "qwen2-vl", "--prompt", "text:1x2x2"], ["prompt item 1"]),
        (["-m", "qwen2-vl", "--prompt", "text:0"], ["text must be 1 to"]),
        (["-m", "qwen2-vl", "--prompt", "image:1x4097x2"], ["each of T, H, W must be 1 to 4096"]),
        (["-m", "qwen2-vl", "--prompt", "text:2,,text:1"], ["prompt item 2 ''"]),
        (["-m", "qwen2-vl", "--prompt", ""], ["prompt must be items"]),
        (["-m", "qwen2-vl", "--prompt", "image:1x3x4"], ["multiples of the spatial merge size 2"]),
        (["-m", "qwen2-vl", "--prompt", "image:1x4x4,image:1x4x4"], ["prompt items 1 and 2 are images with no text"]),
        (["-m", "qwen3-vl", "--prompt", "text:1,video:2x4x4"], ["write the video as 2 video:1x4x4 items"]),
        (["-m", "qwen2.5-vl", "--prompt", "video:2x4x4"], ["need tokens_per_second"]),
        (["-m", "qwen2-vl", "--prompt", "text:1", "--tokens-per-second", "2"], ["qwen2-vl does not take it"]),
        (["-m", "glm-4.1v", "--prompt", "text:1", "--second-per-grid-ts", "1"], ["glm-4.1v does not take it"]),
        (["-m", "qwen2-vl", "--prompt", "text:1048576,text:1"], ["more than 1048576"]),
        (["-m", "qwen2-vl", "--prompt", "text:200", "--dtype", "int8"], ["more than int8 holds"]),
        (["-m", "qwen2-vl", "--prompt", "text:1", "--spatial-merge-size", "0"], ["spatial-merge-size"]),
        (["-m", "gpt", "--prompt", "text:1"], ["gpt"]),
    ],
)
def test_a_bad_prompt_is_refused_in_one_line(tmp_path, args, fragments):
    out = tmp_path / "ids.npy"
    one_line(run("mrope", *args, "-o", out), 2, *fragments)
    assert not out.exists()


def test_the_ranges_keep_every_id_below_two_to_the_32():
    """The largest interval (1000 tokens a second, 1000 s a patch) over the longest video after the most text."""
    table = api.mrope("qwen2.5-vl", "text:1000000,video:4096x2x2", tokens_per_second=1000, second_per_grid_ts=1000.0)
    top = int(table.arrays["ids"].max())
    assert 1000000 + 4095 * 1000000 <= top < 2**32  # float32 rounds the product up by 64
