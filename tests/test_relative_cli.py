"""posenc relative and posenc window on the command line and in a manifest: the bias gathered from a checkpoint
(written by the real safetensors library), and what a hostile checkpoint or manifest cannot do."""

from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest
from click.testing import CliRunner
from safetensors.numpy import save_file

from posenc_cli import api
from posenc_cli.cli import cli
from tests.conftest import require_tool
from tests.test_kinds import one_line

T5_KEY = "encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight"


def run(*args: str):
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.fixture
def checkpoint(tmp_path):
    """A T5-like checkpoint: the encoder's and decoder's bias tables (32 buckets, 4 heads) and a weight matrix."""
    rng = np.random.default_rng(7)
    tensors = {
        T5_KEY: rng.standard_normal((32, 4)).astype(np.float32),
        T5_KEY.replace("encoder", "decoder"): rng.standard_normal((32, 4)).astype(np.float32),
        "shared.weight": rng.standard_normal((10, 8)).astype(np.float32),
    }
    path = tmp_path / "model.safetensors"
    save_file(tensors, str(path))
    return path, tensors


def gathered(index: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """bias[h, i, j] = weights[index[i, j], h], written out as loops."""
    heads = weights.shape[1]
    out = np.empty((heads, *index.shape), weights.dtype)
    for h in range(heads):
        for i in range(index.shape[0]):
            for j in range(index.shape[1]):
                out[h, i, j] = weights[index[i, j], h]
    return out


def test_relative_writes_the_index_and_capital_q_is_the_query_length(tmp_path):
    out = tmp_path / "t5.npy"
    result = run("relative", "--scheme", "t5", "-Q", 6, "-k", 9, "--quiet", "-o", out)
    assert result.exit_code == 0, result.output
    assert (np.load(out) == api.relative("t5", 6, 9).arrays["index"]).all()
    assert np.load(out).dtype == np.int8


def test_the_bias_is_gathered_from_the_key_named(tmp_path, checkpoint):
    path, tensors = checkpoint
    out = tmp_path / "bias.npz"
    assert run("relative", "--scheme", "t5", "-Q", 5, "--causal", "--bias", path, "--key",
               T5_KEY.replace("encoder", "decoder"), "-o", out).exit_code == 0  # fmt: skip
    with np.load(out) as z:
        index, bias = z["index"], z["bias"]
    assert bias.dtype == np.float32 and bias.shape == (4, 5, 5)
    assert (bias == gathered(index, tensors[T5_KEY.replace("encoder", "decoder")])).all()
    assert run("verify", out).exit_code == 0


def test_a_file_of_several_arrays_needs_a_key_and_the_message_suggests_one(tmp_path, checkpoint):
    path, _ = checkpoint
    line = one_line(run("relative", "--scheme", "t5", "-Q", 4, "--bias", path, "-o", tmp_path / "b.npz"), 2, "--key")
    assert T5_KEY in line and "shared.weight" not in line
    line = one_line(run("relative", "--scheme", "t5", "-Q", 4, "--bias", path, "--key", "nope", "-o",
                        tmp_path / "b.npz"), 2, "'nope'")  # fmt: skip
    assert not (tmp_path / "b.npz").exists()


@pytest.mark.parametrize(
    ("weights", "fragment"),
    [
        (np.zeros((31, 4), np.float32), "shape (32, heads)"),
        (np.zeros((32,), np.float32), "shape (32, heads)"),
        (np.zeros((32, 4), np.int32), "floating-point"),
        (np.full((32, 4), np.nan, np.float32), "NaN"),
        (np.full((32, 4), np.inf, np.float32), "NaN or infinite"),
    ],
)
def test_a_wrong_bias_table_is_refused_in_one_line(tmp_path, weights, fragment):
    path = tmp_path / "w.safetensors"
    save_file({"w": weights}, str(path))
    out = tmp_path / "b.h"
    one_line(run("relative", "--scheme", "t5", "-Q", 4, "--bias", path, "-o", out), 2, fragment)
    assert not out.exists()


def test_key_names_from_a_hostile_file_are_shown_escaped(tmp_path):
    path = tmp_path / "w.safetensors"
    save_file({"\x1b[31mred": np.zeros((32, 1), np.float32), "b": np.zeros((1,), np.float32)}, str(path))
    result = run("relative", "--scheme", "t5", "-Q", 4, "--bias", path, "-o", tmp_path / "b.h")
    assert result.exit_code == 2 and "\x1b" not in result.output


@pytest.mark.client
def test_a_hostile_key_never_reaches_c_unescaped(tmp_path):
    """The only array of a file names itself: its key is recorded (bias_key) in the C comment, escaped."""
    gcc = require_tool("gcc")
    path = tmp_path / "w.safetensors"
    key = "w */ int evil = 1; /*\n#error boom"
    save_file({key: np.ones((32, 2), np.float32)}, str(path))
    header = tmp_path / "b.h"
    assert run("relative", "--scheme", "t5", "-Q", 3, "--bias", path, "-o", header).exit_code == 0
    main = tmp_path / "main.c"
    main.write_text('#include "b.h"\nint main(void) { return (int)b_index[0][0]; }\n')
    ok = subprocess.run([gcc, "-std=c99", "-Wall", "-Werror", "-c", str(main), "-o", str(tmp_path / "m.o")],
                        capture_output=True, text=True)  # fmt: skip
    assert ok.returncode == 0, ok.stderr  # no #error fired, nothing declared but the table
    main.write_text('#include "b.h"\nint main(void) { return evil; }\n')
    bad = subprocess.run([gcc, "-std=c99", "-c", str(main), "-o", str(tmp_path / "m.o")],
                         capture_output=True, text=True)  # fmt: skip
    assert bad.returncode != 0 and "evil" in bad.stderr  # undeclared: the key stayed inside the comment
    assert run("verify", header).exit_code == 0


def test_not_a_regular_file_is_refused(tmp_path):
    fifo = tmp_path / "w.safetensors"
    os.mkfifo(fifo)
    one_line(run("relative", "--scheme", "t5", "-Q", 4, "--bias", fifo, "-o", tmp_path / "b.h"), 1, "regular file")


def test_window_with_a_bias_table(tmp_path):
    rng = np.random.default_rng(3)
    table = rng.standard_normal((13 * 13, 3)).astype(np.float32)
    path = tmp_path / "swin.safetensors"
    save_file({"layers.0.blocks.0.attn.relative_position_bias_table": table}, str(path))
    out = tmp_path / "swin.h5"
    assert run("window", "--scheme", "swin", "-w", "7", "--bias", path, "-o", out).exit_code == 0
    got = api.load(out)
    assert (got.arrays["bias"] == gathered(np.asarray(got.arrays["index"]), table)).all()
    assert run("verify", out).exit_code == 0


def test_a_manifest_reads_the_bias_beside_it_lists_it_in_the_depfile_and_stays_inside(tmp_path, checkpoint):
    path, _ = checkpoint
    manifest = tmp_path / "posenc.toml"
    manifest.write_text(f'[[table]]\ncommand = "relative"\noutput = "t5.h"\nscheme = "t5"\nquery_length = 6\n'
                        f'bias = "model.safetensors"\nkey = "{T5_KEY}"\n')  # fmt: skip
    depfile = tmp_path / "posenc.d"
    result = run("build", manifest, "--depfile", depfile)
    assert result.exit_code == 0, result.output
    assert "model.safetensors" in depfile.read_text().split(":", 1)[1]
    single = tmp_path / "single"
    single.mkdir()
    os.chdir(tmp_path)
    assert run("relative", "--scheme", "t5", "-Q", 6, "--bias", "model.safetensors", "--key", T5_KEY,
               "-o", single / "t5.h").exit_code == 0  # fmt: skip
    assert (single / "t5.h").read_bytes() == (tmp_path / "t5.h").read_bytes()
    inner = tmp_path / "inner"
    inner.mkdir()
    (inner / "posenc.toml").write_text('[[table]]\ncommand = "relative"\noutput = "t5.npz"\nscheme = "t5"\n'
                                       'query_length = 6\nbias = "../model.safetensors"\n')  # fmt: skip
    one_line(run("build", inner / "posenc.toml"), 2, "bias", "outside")
    assert not (inner / "t5.npz").exists()
    (inner / "posenc.toml").write_text(
        f'[[table]]\ncommand = "relative"\noutput = "t5.npz"\nscheme = "t5"\n'
        f'query_length = 6\nbias = "../model.safetensors"\nkey = "{T5_KEY}"\n'
    )
    assert run("build", inner / "posenc.toml", "--allow-outside").exit_code == 0


def test_a_model_file_of_hundreds_of_tensors_gives_its_one_table(tmp_path):
    """A real checkpoint holds far more tensors than posenc reads whole: only the one named is read and claimed."""
    from posenc_cli.read import load

    rng = np.random.default_rng(11)
    tensors = {f"encoder.block.{i}.layer.{j}.weight": np.zeros((4, 4), np.float32) for i in range(60) for j in range(5)}
    tensors["lm_head.weight"] = np.zeros((2048, 1024), np.float32)  # 8 MiB that must not be read
    tensors[T5_KEY] = rng.standard_normal((32, 6)).astype(np.float32)
    path = tmp_path / "model.safetensors"
    save_file(tensors, str(path))
    one = load(path, part=T5_KEY, max_memory=1 << 20)
    assert list(one.arrays) == [T5_KEY] and (one.arrays[T5_KEY] == tensors[T5_KEY]).all()
    out = tmp_path / "bias.npz"
    assert run("relative", "--scheme", "t5", "-Q", 4, "--bias", path, "--key", T5_KEY, "-o", out).exit_code == 0
    with np.load(out) as z:
        assert (z["bias"] == gathered(z["index"], tensors[T5_KEY])).all()
    line = one_line(run("relative", "--scheme", "t5", "-Q", 4, "--bias", path, "-o", tmp_path / "b.npz"), 2, "302")
    assert T5_KEY in line and "lm_head" not in line


def test_a_header_listing_too_many_tensors_is_refused(tmp_path):
    from posenc_cli.formats.limits import MAX_LISTED

    entries = ",".join(f'"t{i}":{{"dtype":"F32","shape":[0],"data_offsets":[0,0]}}' for i in range(MAX_LISTED + 1))
    header = ("{" + entries + "}").encode()
    header += b" " * (-len(header) % 8)
    path = tmp_path / "many.safetensors"
    path.write_bytes(len(header).to_bytes(8, "little") + header)
    line = one_line(run("relative", "--scheme", "t5", "-Q", 4, "--bias", path, "--key", "t0", "-o", tmp_path / "b.h"),
                    1, "more than")  # fmt: skip
    assert str(MAX_LISTED) in line
