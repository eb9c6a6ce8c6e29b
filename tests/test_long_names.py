"""Output names as long as the file system allows (issue #25): a legal ``.npy`` name is never refused because of
the ``.json`` sidecar that only some tables need; a table that needs one is refused in one line that names the
sidecar; a name past the limit is refused in one line that says so, before any work.

The limit is the file system's own (``pathconf(dir, "PC_NAME_MAX")``: 255 bytes on Linux file systems), and the
tests check that the file system really refuses one byte more.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import posenc_cli
from posenc_cli.cli import cli
from posenc_cli.errors import OutputError

#: Element types whose .npy needs a .json sidecar (the stored integers do not say what they mean), and some that
#: do not (numpy's own dtypes say everything).
NEEDS_SIDECAR = {
    "bfloat16": ["--dtype", "bfloat16"],
    "q15": ["--dtype", "q15"],
    "q7": ["--dtype", "q7"],
    "int8": ["--dtype", "int8", "--scale", "0.0078125"],
    "fixed18.16": ["--dtype", "fixed18.16"],
}
NO_SIDECAR = ["float32", "float64", "float16"]


def longest_name(directory: Path, suffix: str) -> str:
    """A file name of exactly the most bytes ``directory``'s file system takes, ending in ``suffix``."""
    limit = os.pathconf(directory, "PC_NAME_MAX")
    with pytest.raises(OSError) as too_long:  # one byte more is refused by the file system itself
        os.open(directory / ("x" * (limit + 1)), os.O_CREAT | os.O_WRONLY, 0o644)
    assert too_long.value.errno == errno.ENAMETOOLONG
    return "a" * (limit - len(suffix)) + suffix


def run(*args: str):
    return CliRunner().invoke(cli, list(args))


@pytest.mark.parametrize("dtype", NO_SIDECAR)
def test_the_longest_npy_name_is_written_when_no_sidecar_is_needed(tmp_path, dtype):
    name = longest_name(tmp_path, ".npy")
    result = run("generate", "-n", "4", "-d", "4", "--dtype", dtype, "-o", str(tmp_path / name))
    assert result.exit_code == 0 and result.stderr == "", result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]
    array = np.load(tmp_path / name)
    assert array.shape == (4, 4) and array.dtype == np.dtype(dtype)
    assert run("inspect", str(tmp_path / name)).exit_code == 0  # posenc reads it back (a bare .npy: no parameters)


@pytest.mark.parametrize("dtype", list(NEEDS_SIDECAR))
def test_a_sidecar_past_the_limit_is_one_line_naming_it(tmp_path, dtype):
    name = longest_name(tmp_path, ".npy")
    sidecar = name[: -len(".npy")] + ".json"  # one byte longer than the file system takes
    result = run("generate", "-n", "4", "-d", "4", *NEEDS_SIDECAR[dtype], "-o", str(tmp_path / name))
    assert result.exit_code == 1, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: cannot write "), result.stderr
    line = lines[0]
    assert f"{str(tmp_path / sidecar)!r} (the .json file {name!r} needs beside it for this table)" in line, line
    assert f"its name is {len(sidecar)} bytes, more than the {len(name)} a file name may have" in line, line
    assert "Traceback" not in result.output and result.stdout == ""
    assert list(tmp_path.iterdir()) == []  # not even the .npy: the pair is written whole or not at all


def test_the_api_writes_the_longest_name_and_refuses_the_sidecar_alike(tmp_path):
    name = longest_name(tmp_path, ".npy")
    assert posenc_cli.save(posenc_cli.generate(4, 4), tmp_path / name) == [tmp_path / name]
    (tmp_path / name).unlink()
    with pytest.raises(OutputError, match=r"\(the \.json file .* needs beside it for this table\): its name is"):
        posenc_cli.save(posenc_cli.generate(4, 4, dtype="q15"), tmp_path / name)
    with pytest.raises(OutputError, match="its name is"):  # --force replaces a foreign sidecar; it cannot make one
        posenc_cli.save(posenc_cli.generate(4, 4, dtype="q15"), tmp_path / name, force=True)
    assert list(tmp_path.iterdir()) == []


def test_an_output_name_past_the_limit_is_one_line(tmp_path):
    name = "b" + longest_name(tmp_path, ".npy")
    result = run("generate", "-n", "4", "-d", "4", "-o", str(tmp_path / name))
    assert result.exit_code == 1, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and f"its name is {len(name)} bytes, more than the {len(name) - 1}" in lines[0], lines
    assert list(tmp_path.iterdir()) == []


def test_a_sidecar_that_fits_is_written_beside_a_long_name(tmp_path):
    """One byte shorter, and the q15 pair is written: the limit is the file system's, not posenc's."""
    name = longest_name(tmp_path, ".npy")[1:]
    result = run("generate", "-n", "4", "-d", "4", "--dtype", "q15", "-o", str(tmp_path / name))
    assert result.exit_code == 0, result.output
    stem = name[: -len(".npy")]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([name, stem + ".json"])
    assert len(os.fsencode(stem + ".json")) == os.pathconf(tmp_path, "PC_NAME_MAX")
    assert run("verify", str(tmp_path / name)).exit_code == 0
