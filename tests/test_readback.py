"""Reading back (issue #13): datasets inside HDF5 groups, posenc's own quantised CSV, and convert of a file of several
tensors without ``--key``.

Every file is made here with the real libraries (h5py, numpy, the csv module) or by hand, and every value is checked
against what those libraries read or what the test wrote, never against posenc's own reader. The attacks on the HDF5
group walk are in tests/test_hostile_hdf5.py ("groups").
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import subprocess
from pathlib import Path

import h5py
import numpy as np
import pytest
from click.testing import CliRunner

import posenc_cli
from posenc_cli.cli import cli
from posenc_cli.errors import FormatError
from posenc_cli.formats import csvfile as csv_format
from posenc_cli.formats.limits import MAX_NESTING, Budget

from .conftest import require_tool


def run(*args: str):
    return CliRunner().invoke(cli, list(args))


def one_error(result, code: int, *words: str) -> str:
    """The single ``Error:`` line of a failed command, holding ``words``."""
    assert result.exit_code == code, (result.exit_code, result.output, result.exception)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    assert "Traceback" not in result.output and "internal error" not in lines[0], lines[0]
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def sha256(array: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(array, array.dtype.newbyteorder("<")).tobytes()).hexdigest()


# ------------------------------------------------------------------------------------------------- HDF5 groups

EMB = np.arange(12, dtype="<f4").reshape(3, 4) / 8
KERNEL = np.linspace(-1, 1, 6, dtype="<f8").reshape(2, 3)
PE = np.full((2, 4), 0.25, "<f4")


@pytest.fixture
def keras(tmp_path) -> Path:
    """A Keras-style weights file: everything under ``model_weights``, a group per layer, names with ``:``."""
    path = tmp_path / "keras.h5"
    with h5py.File(path, "w") as f:
        weights = f.create_group("model_weights")
        weights.attrs["layer_names"] = [b"pos", b"dense"]
        weights.create_dataset("pos/embeddings", data=EMB)
        weights.create_dataset("dense/dense/kernel:0", data=KERNEL)
        weights["dense"].attrs["weight_names"] = [b"dense/kernel:0"]
        f.create_group("optimizer_weights")  # empty, as an untrained model saves it
    return path


@pytest.fixture
def mixed(tmp_path) -> Path:
    """A dataset at the root and one in a group: the group's was left out before."""
    path = tmp_path / "mixed.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("pe", data=PE)
        f.create_dataset("grp/emb", data=EMB)
    return path


def test_nested_datasets_are_read_under_their_paths(keras, mixed):
    table = posenc_cli.load(keras)
    assert table.kind == "array" and dict(table.params) == {}
    assert list(table.arrays) == ["model_weights/dense/dense/kernel:0", "model_weights/pos/embeddings"]
    with h5py.File(keras) as f:  # what h5py reads at those paths
        for key, array in table.arrays.items():
            assert array.dtype == f[key].dtype and array.tobytes() == f[key][()].tobytes()
    mixed_table = posenc_cli.load(mixed)
    assert list(mixed_table.arrays) == ["grp/emb", "pe"]
    assert mixed_table.arrays["grp/emb"].tobytes() == EMB.tobytes()
    assert mixed_table.arrays["pe"].tobytes() == PE.tobytes()


def test_groups_nest_as_deep_as_the_limit(tmp_path):
    path = tmp_path / "deep.h5"
    key = "/".join(["g"] * MAX_NESTING + ["pe"])
    with h5py.File(path, "w") as f:
        f.create_dataset(key, data=PE)
        f.create_dataset("top", data=EMB)
    table = posenc_cli.load(path)
    assert list(table.arrays) == [key, "top"] and table.arrays[key].tobytes() == PE.tobytes()


def test_inspect_lists_nested_datasets(mixed):
    result = run("inspect", "--json", str(mixed))
    assert result.exit_code == 0, result.output
    facts = json.loads(result.stdout)
    assert list(facts["arrays"]) == ["grp/emb", "pe"]
    assert facts["arrays"]["grp/emb"]["shape"] == [3, 4] and facts["arrays"]["grp/emb"]["sha256"] == sha256(EMB)
    assert facts["arrays"]["pe"]["sha256"] == sha256(PE)
    text = run("inspect", str(mixed))
    assert text.exit_code == 0 and "grp/emb" in text.stdout and f"sha256 {sha256(EMB)}  grp/emb" in text.stdout


def test_convert_key_and_show_part_reach_nested_datasets(tmp_path, keras):
    out = tmp_path / "pos.npy"
    result = run("convert", str(keras), "--key", "model_weights/pos/embeddings", str(out))
    assert result.exit_code == 0, result.output
    assert np.load(out).tobytes() == EMB.tobytes()
    kernel = tmp_path / "kernel.csv"
    assert run("convert", str(keras), "--key", "model_weights/dense/dense/kernel:0", str(kernel)).exit_code == 0
    with kernel.open(newline="") as fp:
        rows = list(csv.reader(fp))
    assert rows[0] == ["d0", "d1", "d2"] and np.array(rows[1:], float).tolist() == KERNEL.tolist()
    shown = run("show", str(keras), "--part", "model_weights/pos/embeddings")
    assert shown.exit_code == 0 and "model_weights/pos/embeddings" in shown.stdout, shown.output
    missing = run("convert", str(keras), "--key", "pos/embeddings", str(tmp_path / "x.npy"))
    one_error(missing, 2, "--key", "model_weights/pos/embeddings")


def test_posenc_group_layout_reads_back_as_written(tmp_path):
    """A table of several arrays written with --name is a group of datasets: its keys are their names, as before."""
    path = tmp_path / "rope.h5"
    assert run("rope", "-n", "6", "--head-dim", "4", "--name", "llama", "-o", str(path)).exit_code == 0
    with h5py.File(path) as f:
        assert list(f) == ["llama"] and sorted(f["llama"]) == ["cos", "inv_freq", "sin"]
        stored = {key: f["llama"][key][()] for key in f["llama"]}
    table = posenc_cli.load(path)
    assert table.kind == "rope" and sorted(table.arrays) == ["cos", "inv_freq", "sin"]
    for key, array in table.arrays.items():
        assert array.tobytes() == stored[key].tobytes()
    assert run("verify", str(path)).exit_code == 0
    plain = tmp_path / "plain.h5"  # the same layout from h5py: the root's one group, datasets only
    with h5py.File(plain, "w") as f:
        f.create_dataset("table/pe", data=PE)
    assert list(posenc_cli.load(plain).arrays) == ["pe"]


def test_nested_keys_written_again_are_names_not_paths(tmp_path, mixed):
    """A key read from a group (``grp/emb``) is stored as a name (``grp_emb``) in .h5 and .npz: no group, no path."""
    h5 = tmp_path / "again.h5"
    assert run("convert", str(mixed), str(h5)).exit_code == 0
    with h5py.File(h5) as f:
        assert sorted(f) == ["grp_emb", "pe"] and all(isinstance(node, h5py.Dataset) for node in f.values())
        assert f["grp_emb"][()].tobytes() == EMB.tobytes()
    npz = tmp_path / "again.npz"
    assert run("convert", str(mixed), str(npz)).exit_code == 0
    with np.load(npz) as archive:
        assert sorted(archive.files) == ["grp_emb", "pe"] and archive["grp_emb"].tobytes() == EMB.tobytes()


@pytest.mark.client
def test_nested_keys_become_c_identifiers_that_compile(tmp_path):
    """``grp/emb`` reaches C only as an identifier (``out_grp_emb``); gcc builds the header and reads the values."""
    path = tmp_path / "same.h5"
    odd = np.array([[1.5, -2.0, 0.125], [4.0, 0.0, -0.5]], "<f4")
    with h5py.File(path, "w") as f:
        f.create_dataset("pe", data=np.zeros((2, 3), "<f4"))
        f.create_dataset("grp/emb", data=odd)
        f.create_dataset("a b/c-d/x[1]", data=odd * 2)
    header = tmp_path / "out.h"
    result = run("convert", str(path), str(header))
    assert result.exit_code == 0, result.output
    text = header.read_text()
    assert "out_grp_emb[OUT_SEQ_LEN][OUT_D_MODEL]" in text and "out_a_b_c_d_x_1[" in text
    assert "/emb" not in text and "x[1]" not in text and "c-d" not in text  # no key reaches the source as it is
    (tmp_path / "main.c").write_text(
        '#include <stdio.h>\n#include "out.h"\n'
        'int main(void) { printf("%g %g %g\\n", out_grp_emb[0][0], out_grp_emb[1][2], out_a_b_c_d_x_1[0][1]);'
        " return 0; }\n"
    )
    gcc = require_tool("gcc")
    build = [gcc, "-std=c99", "-Wall", "-Wextra", "-pedantic", "-Werror", "main.c", "-o", "main"]
    subprocess.run(build, cwd=tmp_path, check=True, capture_output=True)
    printed = subprocess.run([str(tmp_path / "main")], check=True, capture_output=True, text=True).stdout
    assert printed.split() == ["1.5", "-0.5", "-4"]


# ------------------------------------------------------------------------------------------------- quantised CSV

QUANTISED = {
    # scale 1/64: with zero point -3 the codes hold -1.95 to 2.05, the whole table (1/128 would clip -1: refused)
    "int8": ["--dtype", "int8", "--scale", "0.015625", "--zero-point", "-3"],
    "q15": ["--dtype", "q15"],
    "q7": ["--dtype", "q7"],
}
STORAGE = {"int8": np.int8, "q15": np.int16, "q7": np.int8}


def written(tmp_path: Path, dtype: str, *extra: str) -> tuple[Path, np.ndarray]:
    """posenc's CSV of a 9 x 6 table in ``dtype``, and the codes its .npy holds (read by numpy)."""
    path, npy = tmp_path / f"pe_{dtype}.csv", tmp_path / f"pe_{dtype}.npy"
    for out, options in ((path, extra), (npy, ())):
        result = run("generate", "-n", "9", "-d", "6", *QUANTISED[dtype], *options, "-o", str(out))
        assert result.exit_code == 0, result.output
    return path, np.load(npy)


def read_with_csv_module(path: Path) -> tuple[str, list[list[str]]]:
    with path.open(newline="") as fp:
        first = fp.readline()
        return first, list(csv.reader(fp))


@pytest.mark.parametrize("dtype", list(QUANTISED))
def test_posenc_quantised_csv_reads_back_as_codes(tmp_path, dtype):
    path, codes = written(tmp_path, dtype)
    first, rows = read_with_csv_module(path)
    want = {"int8": "# dtype=int8 scale=0.015625 zero_point=-3\n", "q15": "# dtype=q15\n", "q7": "# dtype=q7\n"}
    assert first == want[dtype] and rows[0] == [f"d{j}" for j in range(6)]
    assert [[int(cell) for cell in row] for row in rows[1:]] == codes.tolist()
    table = posenc_cli.load(path)
    assert table.kind == "array" and table.array.dtype == STORAGE[dtype]
    assert table.array.tolist() == codes.tolist()
    expected = {"dtype": dtype, **({"scale": 0.015625, "zero_point": -3} if dtype == "int8" else {})}
    assert dict(table.params) == expected


def test_inspect_reports_int8_with_its_scale_and_zero_point(tmp_path):
    path, codes = written(tmp_path, "int8")
    result = run("inspect", "--json", str(path))
    assert result.exit_code == 0, result.output
    facts = json.loads(result.stdout)
    assert facts["params"] == {"dtype": "int8", "scale": 0.015625, "zero_point": -3}
    pe = facts["arrays"]["pe"]
    real = (codes.astype(np.float64) + 3) * 0.015625
    assert pe["dtype"] == "int8" and pe["storage"] == "|i1" and pe["sha256"] == sha256(codes)
    assert (pe["min"], pe["max"]) == (float(real.min()), float(real.max()))
    text = run("inspect", str(path))
    assert text.exit_code == 0 and "dtype=int8, scale=0.015625, zero_point=-3" in text.stdout


@pytest.mark.parametrize("dtype", list(QUANTISED))
@pytest.mark.parametrize("header", ["--header", "--no-header"])
def test_verify_passes_on_posenc_quantised_csv_and_fails_on_a_changed_code(tmp_path, dtype, header):
    path, codes = written(tmp_path, dtype, header)
    given = ["-s", "seq_len=9", "-s", "d_model=6"]
    ok = run("verify", str(path), *given)
    assert ok.exit_code == 0 and ok.stdout == "" and ok.stderr == "", ok.output
    lines = path.read_text().splitlines()
    row = 1 if header == "--no-header" else 2  # position 0: the line after the dtype line (and the header)
    cells = lines[row + 3].split(",")
    assert [int(c) for c in cells] == codes[3].tolist()
    cells[1] = str(int(cells[1]) + 1)
    lines[row + 3] = ",".join(cells)
    path.write_text("\n".join(lines) + "\n")
    bad = run("verify", str(path), *given)
    real = {"int8": lambda c: (c + 3) * 0.015625, "q15": lambda c: c / 32768, "q7": lambda c: c / 128}[dtype]
    code = int(codes[3, 1])
    assert bad.stdout.splitlines() == [f"pe[3, 1]: file {real(code + 1)!r}, parameters give {real(code)!r}"]
    one_error(bad, 1, "1 of 54 values differ")


def test_a_quantised_csv_converts_as_its_codes(tmp_path):
    path, codes = written(tmp_path, "int8")
    out = tmp_path / "back.npy"
    assert run("convert", str(path), str(out)).exit_code == 0
    assert np.load(out).dtype == np.int8 and np.load(out).tolist() == codes.tolist()
    meta = json.loads(out.with_suffix(".json").read_text())
    assert meta["params"]["scale"] == 0.015625 and meta["params"]["zero_point"] == -3


def test_pandas_reads_posenc_quantised_csv(tmp_path):
    pd = pytest.importorskip("pandas")
    path, codes = written(tmp_path, "int8")
    frame = pd.read_csv(path, comment="#")
    assert list(frame.columns) == [f"d{j}" for j in range(6)] and frame.to_numpy().tolist() == codes.tolist()
    params = dict(field.split("=") for field in path.read_text().splitlines()[0][2:].split())
    real = (frame.to_numpy() - int(params["zero_point"])) * float(params["scale"])
    assert real.tolist() == ((codes.astype(np.float64) + 3) * 0.015625).tolist()


@pytest.mark.parametrize(
    ("content", "dtype", "values"),
    [
        (b"# dtype=q15\n-32768,32767\n0,1\n", np.int16, [[-32768, 32767], [0, 1]]),
        (b"\xef\xbb\xbf# dtype=q7\r\nd0,d1\r\n-128,127\r\n", np.int8, [[-128, 127]]),
        (b"# dtype=int8 scale=1e-05 zero_point=127\n# a comment\n\n+5,-0\n", np.int8, [[5, 0]]),
        (b"# posenc wrote no dtype here\n1,2\n", np.float64, [[1.0, 2.0]]),  # an ordinary comment: floats
        (b"1.5,2\n# dtypes are not named here\n", np.float64, [[1.5, 2.0]]),
    ],
)
def test_what_the_csv_reader_takes(content, dtype, values):
    table = csv_format.load(io.BytesIO(content), Budget(1 << 20))
    assert table.array.dtype == dtype and table.array.tolist() == values
    assert bool(table.params) == (dtype != np.float64)


def test_codes_claim_their_storage_size_from_the_budget():
    content = b"# dtype=q7\n" + b"1,2,3,4\n" * 4
    assert csv_format.load(io.BytesIO(content), Budget(16)).array.shape == (4, 4)  # 16 bytes, not 128
    with pytest.raises(FormatError, match="CSV table of q15 codes needs 32 bytes"):
        csv_format.load(io.BytesIO(content.replace(b"q7", b"q15")), Budget(31))


HOSTILE_CSV = {
    "no-zero-point": (b"# dtype=int8 scale=0.5\n1,2\n", "it lacks one of its keys (int8 takes scale, zero_point)"),
    "zero-point-out-of-range": (b"# dtype=int8 scale=0.5 zero_point=200\n1\n", "zero_point '200' is not an integer"),
    "zero-point-hex": (b"# dtype=int8 scale=0.5 zero_point=0x10\n1\n", "zero_point '0x10'"),
    "scale-nan": (b"# dtype=int8 scale=nan zero_point=0\n1\n", "scale 'nan' is not a finite decimal"),
    "scale-inf": (b"# dtype=int8 scale=1e999 zero_point=0\n1\n", "scale '1e999'"),
    "scale-zero": (b"# dtype=int8 scale=0.0 zero_point=0\n1\n", "greater than 0"),
    "scale-negative": (b"# dtype=int8 scale=-0.5 zero_point=0\n1\n", "greater than 0"),
    "scale-underscore": (b"# dtype=int8 scale=1_0 zero_point=0\n1\n", "scale '1_0'"),
    "extra-key-q15": (b"# dtype=q15 scale=0.5\n1\n", "the key 'scale' is not one of its keys"),
    "unknown-key": (b"# dtype=int8 scale=0.5 zero_point=0 bits=8\n1\n", "the key 'bits'"),
    "twice": (b"# dtype=q15 dtype=q15\n1\n", "dtype is given twice"),
    "float-dtype": (b"# dtype=float32\n1.0\n", "dtype 'float32'; the line names q31, q15, q7, int8"),
    "unknown-dtype": (b"# dtype=int4\n1\n", "dtype 'int4'"),
    "no-space": (b"#dtype=q15\n1\n", "'# ' then key=value"),
    "upper-case": (b"# DTYPE=q15\n1\n", "'DTYPE=q15' is not key=value"),
    "trailing-space": (b"# dtype=q15 \n1\n", "'' is not key=value"),
    "tab": (b"# dtype=q15\tx=1\n1\n", "is not key=value"),
    "not-ascii": ("# dtype=q15 ☃=1\n1\n".encode(), "it must be ASCII"),
    "long": (b"# dtype=q15 " + b"x" * 100_000 + b"\n1\n", "is not key=value"),
    "not-first": (b"d0,d1\n# dtype=q15\n1,2\n", "CSV line 2 b'# dtype=q15' is a quantisation line"),
    "q15-too-big": (b"# dtype=q15\n1,32768\n", "row 1 (line 2): 32768 is outside the codes of q15, [-32768, 32767]"),
    "q7-too-small": (b"# dtype=q7\nd0\n-129\n", "row 1 (line 3): -129 is outside the codes of q7, [-128, 127]"),
    "int8-too-big": (b"# dtype=int8 scale=0.5 zero_point=0\n0\n128\n", "row 2 (line 3): 128 is outside"),
    "huge-digits": (b"# dtype=q15\n" + b"9" * 5000 + b"\n", "is not an integer code of q15"),
    "float-code": (b"# dtype=q15\n1,1.5\n", "row 1 (line 2): b'1.5' is not an integer code of q15"),
    "exponent-code": (b"# dtype=q7\n1e2\n", "b'1e2' is not an integer code of q7"),
    "spaced-code": (b"# dtype=q7\n1, 2\n", "b' 2' is not an integer code"),
    "nan-code": (b"# dtype=int8 scale=0.5 zero_point=0\nnan\n", "b'nan' is not an integer code of int8"),
}


@pytest.mark.parametrize("name", list(HOSTILE_CSV))
def test_quantisation_lines_and_codes_posenc_does_not_read_are_refused(tmp_path, name):
    content, words = HOSTILE_CSV[name]
    path = tmp_path / f"{name}.csv"
    path.write_bytes(content)
    line = one_error(run("inspect", str(path)), 1, f"{name}.csv", words)
    assert len(line) < 400
    one_error(run("verify", str(path), "-s", "seq_len=1", "-s", "d_model=1"), 1, words)


# ------------------------------------------------------------------------------------------------- convert, no --key


@pytest.fixture
def tensors(tmp_path) -> Path:
    path = tmp_path / "model.npz"
    np.savez(path, a=np.zeros((3, 4), "<f4"), b=np.ones(5, "<f4"), c=np.ones((5, 6), "<f4"))
    return path


@pytest.mark.parametrize("suffix", [".npy", ".csv", ".h", ".c", ".bin"])
def test_convert_of_several_tensors_without_key_says_pick_one(tmp_path, tensors, suffix):
    out = tmp_path / "out"
    out.mkdir()
    result = run("convert", str(tensors), str(out / f"pe{suffix}"))
    one_error(result, 2, f"{tensors} holds 3 arrays (a, b, c): pick one with --key")
    assert list(out.iterdir()) == []
    picked = run("convert", str(tensors), "--key", "c", str(out / f"pe{suffix}"))
    assert picked.exit_code == 0, picked.output


@pytest.mark.parametrize("suffix", [".npz", ".h5", ".safetensors"])
def test_convert_of_several_tensors_to_a_container_keeps_them_all(tmp_path, tensors, suffix):
    out = tmp_path / f"all{suffix}"
    assert run("convert", str(tensors), str(out)).exit_code == 0
    with np.load(tensors) as source:
        arrays = {key: source[key] for key in source.files}
    back = posenc_cli.load(out)
    assert {key: a.tobytes() for key, a in back.arrays.items()} == {key: a.tobytes() for key, a in arrays.items()}
