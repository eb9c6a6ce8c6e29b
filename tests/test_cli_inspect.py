"""posenc inspect and posenc verify on the command line (the library side is tested in test_inspect.py).

The facts inspect prints are checked against independent computations (hashlib over numpy's reading of the file,
numpy's min/max); verify is checked on files as posenc wrote them and after one value was changed by hand.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
from click.testing import CliRunner

from posenc_cli.cli import cli


def run(*args: str):
    return CliRunner().invoke(cli, list(args))


def test_inspect_json_facts_match_numpy(tmp_path):
    out = tmp_path / "pe.npy"
    assert run("generate", "-n", "64", "-d", "16", "-p", "fairseq", "-o", str(out)).exit_code == 0
    result = run("inspect", str(out), "--json")
    assert result.exit_code == 0 and result.stderr == ""
    facts = json.loads(result.stdout)
    array = np.load(out)
    pe = next(iter(facts["arrays"].values()))
    assert pe["shape"] == [64, 16] and pe["dtype"] == "float32"
    assert pe["sha256"] == hashlib.sha256(array.tobytes()).hexdigest()
    assert pe["min"] == float(array.min()) and pe["max"] == float(array.max())


@pytest.mark.parametrize("suffix", [".h", ".c", ".h5", ".npz", ".safetensors", ".csv"])
def test_inspect_reads_every_format_posenc_writes(tmp_path, suffix):
    out = tmp_path / f"rope{suffix}"
    args = ["rope", "-n", "8", "--head-dim", "6"]
    if suffix == ".csv":
        args += ["--part", "sin"]
    assert run(*args, "-o", str(out)).exit_code == 0
    result = run("inspect", str(out))
    assert result.exit_code == 0, result.output
    assert "8 x 6" in result.stdout and "sha256 " in result.stdout


def test_verify_passes_on_what_posenc_wrote_and_fails_on_a_changed_value(tmp_path):
    header = tmp_path / "pe.h"
    assert run("generate", "-n", "12", "-d", "8", "-p", "whisper", "-o", str(header)).exit_code == 0
    ok = run("verify", str(header))
    assert ok.exit_code == 0 and ok.stdout == "" and ok.stderr == ""
    text = header.read_text()
    first = text.index("{", text.index("pe[PE_SEQ_LEN]")) + 1
    row = text.index("{", first) + 1  # the first literal of row 0: sin 0 = 0.0f
    assert text[row : row + 4] == "0.0f"
    header.write_text(text[:row] + "0.5f" + text[row + 4 :])
    bad = run("verify", str(header))
    assert bad.exit_code == 1
    assert bad.stdout.splitlines() == ["pe[0, 0]: file 0.5, parameters give 0.0"]
    assert bad.stderr.strip().splitlines() == [
        f"Error: {header} does not hold the table its parameters give: 1 of 96 values differ"
    ]
    report = run("verify", str(header), "--json")
    assert report.exit_code == 1
    doc = json.loads(report.stdout)
    assert doc["ok"] is False and doc["mismatched"] == 1 and doc["mismatches"][0]["index"] == [0, 0]


def test_verify_a_csv_with_parameters_given(tmp_path):
    csv = tmp_path / "pe.csv"
    assert run("generate", "-n", "16", "-d", "8", "-o", str(csv)).exit_code == 0
    missing = run("verify", str(csv))
    assert missing.exit_code == 2 and "-s seq_len=" in missing.stderr
    assert run("verify", str(csv), "-s", "seq_len=16", "-s", "d_model=8").exit_code == 0
    wrong = run("verify", str(csv), "-s", "seq_len=16", "-s", "d_model=8", "-s", "base=500000")
    assert wrong.exit_code == 1 and "values differ" in wrong.stderr
    lines = csv.read_text().splitlines()
    lines[3] = "0.5," + lines[3].split(",", 1)[1]
    csv.write_text("\n".join(lines) + "\n")
    changed = run("verify", str(csv), "-s", "seq_len=16", "-s", "d_model=8")
    assert changed.exit_code == 1 and changed.stdout.startswith("pe[2, 0]: file 0.5")


def test_verify_a_single_part_against_its_kind(tmp_path):
    cos = tmp_path / "cos.npy"
    assert run("rope", "-n", "10", "--head-dim", "8", "--part", "cos", "-o", str(cos)).exit_code == 0
    recorded = run("verify", str(cos))  # the .npy's sidecar? no: a float32 .npy records nothing
    assert recorded.exit_code == 2 and "-s seq_len=" in recorded.stderr
    bare = ["verify", str(cos), "--kind", "rope", "-s", "seq_len=10", "-s", "head_dim=8"]
    assert run(*bare).exit_code == 2 and "-s part=NAME (cos, sin, inv_freq)" in run(*bare).stderr
    assert run(*bare, "-s", "part=cos").exit_code == 0
    assert run(*bare, "-s", "part=sin").exit_code == 1
    h5 = tmp_path / "sin.h5"  # formats that record the parameters record the part too
    assert run("rope", "-n", "10", "--head-dim", "8", "--part", "sin", "-o", str(h5)).exit_code == 0
    assert run("verify", str(h5)).exit_code == 0


@pytest.mark.parametrize(
    ("args", "code", "fragment"),
    [
        (["inspect", "missing.npy"], 1, "missing.npy"),
        (["verify", "pe.npy", "-s", "seq_len"], 2, "KEY=VALUE"),
        (["inspect", "notes.txt"], 2, "suffix"),
    ],
)
def test_errors_are_one_line(tmp_path, monkeypatch, args, code, fragment):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_text("hello\n")
    np.save(tmp_path / "pe.npy", np.zeros((2, 2), np.float32))
    result = run(*args)
    assert result.exit_code == code, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error:") and "Traceback" not in result.output
    assert fragment in lines[0] or fragment.lower() in lines[0].lower(), lines[0]
