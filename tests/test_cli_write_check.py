"""``--check`` of the table commands (posenc_cli/cli/write.py) when the output's folder does not exist yet: the file
would be created, so it says ``would create PATH`` and exits 1, exactly as when the folder exists, and creates
nothing; a real write still refuses the missing folder."""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner

from posenc_cli.cli import cli

# (command line without -o, output, the files it writes)
CASES = [
    (["generate", "-n", "4", "-d", "4"], "pe.h", ["pe.h"]),
    (["rope", "-n", "4", "--head-dim", "4"], "rope.c", ["rope.c", "rope.h"]),
    (["alibi", "--heads", "4"], "al.npz", ["al.npz"]),
    (["generate", "-n", "4", "-d", "4", "--dtype", "bfloat16"], "bf.npy", ["bf.npy", "bf.json"]),
]


def run(*args: str):
    return CliRunner().invoke(cli, list(args))


@pytest.mark.parametrize(("args", "output", "files"), CASES, ids=[c[1] for c in CASES])
def test_check_with_a_missing_folder_says_would_create(tmp_path, monkeypatch, args, output, files):
    monkeypatch.chdir(tmp_path)
    for folder in ("new/deeper", "there"):
        if folder == "there":
            (tmp_path / "there").mkdir()  # the same answer once the folder exists
        result = run(*args, "-o", f"{folder}/{output}", "--check")
        assert result.exit_code == 1 and result.stdout == "", (result.exit_code, result.output)
        assert result.stderr.splitlines() == [f"would create {folder}/{name}" for name in files]
        report = run(*args, "-o", f"{folder}/{output}", "--check", "--json")
        assert report.exit_code == 1
        assert json.loads(report.stdout) == {"up_to_date": False, "would_change": [f"{folder}/{n}" for n in files]}
    assert sorted(os.listdir(tmp_path)) == ["there"] and os.listdir(tmp_path / "there") == []


def test_check_with_a_missing_folder_still_checks_the_parameters_and_a_write_still_refuses_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    bad = run("generate", "-n", "0", "-d", "4", "-o", "new/pe.h", "--check")
    assert bad.exit_code == 2 and "--seq-len" in bad.stderr, bad.output
    wrote = run("generate", "-n", "4", "-d", "4", "-o", "new/pe.h")
    assert wrote.exit_code == 1 and "does not exist" in wrote.stderr and len(wrote.stderr.splitlines()) == 1
    # A folder that is a file is no folder that would be made: still an error, for --check too.
    (tmp_path / "file").write_text("")
    blocked = run("generate", "-n", "4", "-d", "4", "-o", "file/pe.h", "--check")
    assert blocked.exit_code == 1 and blocked.stderr.startswith("Error: ") and "would create" not in blocked.stderr
    assert sorted(os.listdir(tmp_path)) == ["file"]
