"""JSON that Python's ``json`` takes and JSON does not hold (issue #25): ``NaN``, ``Infinity``, ``-Infinity``, a
number too large for a double, a key twice, in every JSON posenc reads back from its own outputs, and the same
attacks on the parameters of the formats that hold them without JSON (HDF5 attributes, C provenance comments).

Each attack is made from a file posenc wrote, by changing the JSON text (or the attribute, or the comment line)
and nothing else, then run through the CLI as a user would meet it: ``posenc inspect``, ``posenc verify``, ``posenc
convert``. The rule: exit 1, one line on stderr starting ``Error:`` that names the file at fault and what is wrong
with it, no traceback, nothing on stdout, no output file. Before the fix each of these files was read: a NaN or an
infinity then broke a later write (``internal error (ValueError ...)``), and a key given twice was read as its
last value, which another reader of the same bytes (or a person reading the header) takes as its first.
"""

from __future__ import annotations

import json
import re
import struct
import zipfile
from collections.abc import Callable
from pathlib import Path

import h5py
import numpy as np
import pytest
from click.testing import CliRunner

from posenc_cli.cli import cli
from posenc_cli.errors import FormatError
from posenc_cli.formats.limits import check_param, read_json

COMMANDS: dict[str, Callable[[Path, Path], list[str]]] = {
    "inspect": lambda f, out: ["inspect", str(f)],
    "verify": lambda f, out: ["verify", str(f)],
    "convert": lambda f, out: ["convert", str(f), str(out / "out.npz")],
}

#: Each attack: the substitution made in the JSON text of a 4 x 4 sinusoidal table (``seq_len`` 4, ``base``
#: 10000.0, in posenc's indented or compact spelling), and what the one error line must say. The duplicates put the
#: value posenc would check first and the true one last, so that a reader keeping the last sees a valid table.
ATTACKS: dict[str, tuple[str, str, str]] = {
    "NaN": (r'("base": ?)10000\.0', r"\1NaN", "NaN is not a JSON number"),
    "Infinity": (r'("base": ?)10000\.0', r"\1Infinity", "Infinity is not a JSON number"),
    "-Infinity": (r'("base": ?)10000\.0', r"\1-Infinity", "-Infinity is not a JSON number"),
    "1e400": (r'("base": ?)10000\.0', r"\g<1>1e400", "the number 1e400 is too large for a double"),
    "duplicate top-level key": (r'("kind": ?)"sinusoidal"', r'\1"rope", \1"sinusoidal"', "key 'kind' appears twice"),
    "duplicate nested key": (r'("seq_len": ?)4(?=[,}\s])', r"\g<1>3, \g<1>4", "key 'seq_len' appears twice"),
}


def attack(text: str, name: str) -> str:
    pattern, replacement, _ = ATTACKS[name]
    changed, count = re.subn(pattern, replacement, text)
    assert count == 1, (name, text)  # the attack hit exactly the value it aims at
    return changed


def run(args: list[str]):
    return CliRunner().invoke(cli, args)


def assert_refused(path: Path, command: str, *problem: str, named: str | None = None) -> None:
    """The rule of the module docstring, for ``command`` on ``path``."""
    out = path.parent / "out"
    out.mkdir(exist_ok=True)
    before = sorted(path.parent.iterdir())
    result = run(COMMANDS[command](path, out))
    assert result.exit_code == 1, (result.exit_code, result.output)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    assert "Traceback" not in result.output and "internal error" not in lines[0], lines[0]
    assert (named or path.name) in lines[0], lines[0]
    for words in problem:
        assert words in lines[0], (words, lines[0])
    assert result.stdout == "" and list(out.iterdir()) == [] and sorted(path.parent.iterdir()) == before


def generate(path: Path, *extra: str) -> Path:
    result = run(["generate", "-n", "4", "-d", "4", *extra, "-o", str(path)])
    assert result.exit_code == 0, result.output
    return path


# ------------------------------------------------------------------ the places posenc reads its own JSON
def npz_comment(tmp_path: Path, change: Callable[[str], str]) -> tuple[Path, str | None]:
    """An .npz as posenc writes it, its record the archive comment (rewritten through zipfile's own writer)."""
    path = generate(tmp_path / "pe.npz")
    with zipfile.ZipFile(path, "a") as archive:
        archive.comment = change(archive.comment.decode("ascii")).encode("ascii")
    return path, None


def npz_member(tmp_path: Path, change: Callable[[str], str]) -> tuple[Path, str | None]:
    """An .npz of the earlier layout, its record a ``posenc.json`` member (built by hand with zipfile)."""
    source = generate(tmp_path / "source.npy")
    path = tmp_path / "pe.npz"
    record = {
        "generator": "posenc 0.1.0",
        "kind": "sinusoidal",
        "params": {"base": 10000.0, "d_model": 4, "dtype": "float32", "layout": "interleaved", "seq_len": 4},
    }
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("pe.npy", source.read_bytes())
        archive.writestr("posenc.json", change(json.dumps(record, sort_keys=True, indent=2)))
    source.unlink()
    return path, None


def npy_sidecar(tmp_path: Path, change: Callable[[str], str]) -> tuple[Path, str | None]:
    """A q15 .npy and the .json sidecar posenc writes beside it."""
    path = generate(tmp_path / "pe.npy", "--dtype", "q15")
    sidecar = tmp_path / "pe.json"
    sidecar.write_text(change(sidecar.read_text()))
    return path, "pe.json"


def rom(suffix: str) -> Callable[[Path, Callable[[str], str]], tuple[Path, str | None]]:
    def make(tmp_path: Path, change: Callable[[str], str]) -> tuple[Path, str | None]:
        path = generate(tmp_path / f"pe{suffix}")
        lines = path.read_text().split("\n")
        (at,) = [n for n, line in enumerate(lines) if " posenc: {" in line]
        lines[at] = change(lines[at])
        path.write_text("\n".join(lines))
        return path, None

    return make


def safetensors_record(tmp_path: Path, change: Callable[[str], str]) -> tuple[Path, str | None]:
    """A .safetensors whose ``"posenc"`` metadata string holds the changed record (the header stays valid JSON)."""
    path = generate(tmp_path / "pe.safetensors")
    data = path.read_bytes()
    length = struct.unpack_from("<Q", data)[0]
    header = json.loads(data[8 : 8 + length])
    header["__metadata__"]["posenc"] = change(header["__metadata__"]["posenc"])
    text = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + data[8 + length :])
    return path, None


PLACES: dict[str, Callable[[Path, Callable[[str], str]], tuple[Path, str | None]]] = {
    "npz record comment": npz_comment,
    "npz posenc.json member": npz_member,
    "npy sidecar": npy_sidecar,
    "mem metadata line": rom(".mem"),
    "coe metadata line": rom(".coe"),
    "mif metadata line": rom(".mif"),
    "safetensors posenc metadata": safetensors_record,
}


@pytest.mark.parametrize("place", list(PLACES))
def test_the_untouched_files_are_read(tmp_path, place):
    """The attacks below change one thing only: the same file without the change is read and verified."""
    path, _ = PLACES[place](tmp_path, lambda text: text)
    result = run(["verify", str(path)])
    assert result.exit_code == 0, result.output
    result = run(["convert", str(path), str(tmp_path / "copy.npz")])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("name", list(ATTACKS))
@pytest.mark.parametrize("place", list(PLACES))
def test_json_that_is_not_json_is_refused_in_one_line(tmp_path, place, name, command):
    path, named = PLACES[place](tmp_path, lambda text: attack(text, name))
    assert_refused(path, command, ATTACKS[name][2], named=named)


def test_a_rom_header_that_says_two_sizes_fails_verify(tmp_path):
    """The report: a .mem whose metadata says seq_len 3, then 4, passed verify with 4 while a reader of the header
    (a person, or a tool that keeps the first key) sees 3."""
    path, _ = rom(".mem")(tmp_path, lambda text: attack(text, "duplicate nested key"))
    assert '"seq_len":3, "seq_len":4' in path.read_text()
    assert_refused(path, "verify", "key 'seq_len' appears twice")


# ------------------------------------------------------------------ JSON posenc reads that others wrote
def test_a_safetensors_header_holding_nan_is_refused_as_json(tmp_path):
    """The header itself: refused as JSON, before anything looks at what the value means."""
    text = b'{"pe":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"__metadata__":{"note":NaN}}'
    text += b" " * (-len(text) % 8)
    path = tmp_path / "pe.safetensors"
    path.write_bytes(struct.pack("<Q", len(text)) + text + bytes(4))
    for command in COMMANDS:
        assert_refused(path, command, ".safetensors header", "NaN is not a JSON number")


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ('{"rope_theta": Infinity, "head_dim": 8, "max_position_embeddings": 4}', "Infinity is not a JSON number"),
        ('{"rope_theta": -Infinity, "head_dim": 8, "max_position_embeddings": 4}', "-Infinity is not a JSON number"),
        ('{"rope_theta": 1e400, "head_dim": 8, "max_position_embeddings": 4}', "1e400 is too large for a double"),
        ('{"rope_scaling": {"factor": 2.0, "factor": 8.0}, "head_dim": 8}', "key 'factor' appears twice"),
    ],
)
def test_a_config_json_that_is_not_json_is_refused_in_one_line(tmp_path, text, fragment):
    (tmp_path / "config.json").write_text(text)
    out = tmp_path / "out.npz"
    result = run(["rope", "--config", str(tmp_path), "-n", "4", "-o", str(out)])
    assert result.exit_code == 2, result.output  # a config that is no config is a bad --config
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "config.json" in lines[0] and fragment in lines[0], result.stderr
    assert not out.exists()


# ------------------------------------------------------------------ parameters held without JSON
HDF5_ATTACKS = {
    "nan": (lambda attrs: attrs.__setitem__("base", np.float64("nan")), "attribute 'base' of dataset '/pe' is nan"),
    "inf": (lambda attrs: attrs.__setitem__("base", np.float64("inf")), "attribute 'base' of dataset '/pe' is inf"),
    "-inf": (lambda attrs: attrs.__setitem__("base", -np.float64("inf")), "is -inf; posenc reads finite numbers"),
    "uint64": (lambda attrs: attrs.__setitem__("seq_len", np.uint64(2**64 - 1)), "an integer of 64 bits"),
}


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("name", list(HDF5_ATTACKS))
def test_hdf5_parameters_no_format_holds_are_refused(tmp_path, name, command):
    """A float64 attribute holds NaN and infinities, a uint64 one more than 64 signed bits: neither is a parameter
    JSON, HDF5's int64 or GGUF can write again."""
    path = generate(tmp_path / "pe.h5")
    change, fragment = HDF5_ATTACKS[name]
    with h5py.File(path, "r+") as f:
        change(f["pe"].attrs)
    assert_refused(path, command, fragment)


@pytest.mark.parametrize("command", list(COMMANDS))
def test_hdf5_datasets_that_disagree_on_a_parameter_are_refused(tmp_path, command):
    """HDF5's duplicate key: posenc writes every parameter on every dataset; two values are two tables."""
    path = tmp_path / "rope.h5"
    result = run(["rope", "-n", "4", "--head-dim", "4", "-o", str(path)])
    assert result.exit_code == 0, result.output
    with h5py.File(path, "r+") as f:
        names = list(f)
        assert len(names) > 1
        f[names[0]].attrs["seq_len"] = np.int64(3)
    assert_refused(path, command, "attribute 'seq_len' is 3 on dataset", "and 4 on dataset")


def test_hdf5_datasets_that_agree_are_read(tmp_path):
    path = tmp_path / "rope.h5"
    assert run(["rope", "-n", "4", "--head-dim", "4", "-o", str(path)]).exit_code == 0
    result = run(["verify", str(path)])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("text", ["nan", "inf", "-inf", "9" * 21, "9223372036854775808"])
def test_c_provenance_numbers_no_format_holds_are_refused(tmp_path, command, text):
    """``str()`` of a float NaN or infinity, or of an integer past 64 bits, in a header's provenance comment."""
    path = generate(tmp_path / "pe.h")
    param = "seq_len" if text.strip("-").isdigit() else "base"
    old = "   seq_len: 4\n" if param == "seq_len" else "   base: 10000.0\n"
    source = path.read_text()
    assert source.count(old) == 1
    path.write_text(source.replace(old, f"   {param}: {text}\n"))
    assert_refused(path, command, f"the provenance comment's {param}")


# ------------------------------------------------------------------ the reader itself
def test_read_json_against_pythons_json():
    """What read_json takes it reads as ``json`` does; what it refuses, ``json`` reads as something JSON is not."""
    for text in (b'{"a": [1, 2.5, -0.0, 1e308, "x"], "b": {"c": null, "d": true}}', b"[]", b'"\\u00e9"'):
        assert read_json(text, "test") == json.loads(text)
    refused = {
        b"NaN": float("nan"),
        b"[Infinity]": [float("inf")],
        b'{"a": -Infinity}': {"a": -float("inf")},
        b"1e309": float("inf"),
        b"-1e400": -float("inf"),
        b'{"a": {"b": 1, "b": 2}}': {"a": {"b": 2}},
    }
    for text, lenient in refused.items():
        assert repr(json.loads(text)) == repr(lenient)  # the value Python's json would have handed on
        with pytest.raises(FormatError, match="not valid UTF-8 JSON"):
            read_json(text, "test")


def test_check_param_bounds():
    assert check_param(2**63 - 1, "p") == 2**63 - 1 and check_param(-(2**63), "p") == -(2**63)
    assert check_param(True, "p") is True and check_param(-0.0, "p") == 0.0 and check_param("nan", "p") == "nan"
    for value in (2**63, -(2**63) - 1, float("nan"), float("-inf"), None, [1]):
        with pytest.raises(FormatError):
            check_param(value, "p")
