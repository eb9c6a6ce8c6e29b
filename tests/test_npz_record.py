"""An ``.npz`` from posenc holds arrays only (issue #25): its record (kind and parameters) is the ZIP archive
comment, where numpy does not look, so ``numpy.load(f)`` is a mapping of arrays and nothing else; the earlier
layout, a ``posenc.json`` member, still reads back; a comment that is not exactly posenc's record is refused.

numpy and zipfile are the independent readers here: numpy says what a user sees, zipfile what the archive holds.
"""

from __future__ import annotations

import io
import json
import struct
import zipfile
from pathlib import Path

import numpy as np
import pytest
import safetensors.numpy
from click.testing import CliRunner

import posenc_cli
from posenc_cli.cli import cli
from posenc_cli.errors import FormatError
from posenc_cli.formats import npz as npz_format
from posenc_cli.table import Table

#: Tables of several shapes and element types, with the arrays each must hold (named here, not by the code).
TABLES = {
    "sinusoidal": (["generate", "-n", "6", "-d", "4"], ["pe"]),
    "q15": (["generate", "-n", "6", "-d", "4", "--dtype", "q15"], ["pe"]),
    "rope": (["rope", "-n", "6", "--head-dim", "4"], ["cos", "sin", "inv_freq"]),
    "alibi": (["alibi", "-H", "4", "-n", "5"], ["slopes", "bias"]),
    "relative": (["relative", "--scheme", "t5", "-Q", "4"], ["index"]),
}
#: The end of central directory record (APPNOTE 4.3.16): signature, four counts, size, offset, comment length.
END = struct.Struct("<4s4H2LH")
RECORD = {
    "generator": "posenc 0.1.0",
    "kind": "sinusoidal",
    "params": {"base": 10000.0, "d_model": 4, "dtype": "float32", "layout": "interleaved", "seq_len": 4},
}


def run(*args: str):
    return CliRunner().invoke(cli, list(args))


def write(path: Path, args: list[str]) -> Path:
    result = run(*args, "-o", str(path))
    assert result.exit_code == 0, result.output
    return path


def inspect_json(path: Path) -> dict:
    result = run("inspect", str(path), "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


# ------------------------------------------------------------------------------------------- what numpy sees
@pytest.mark.parametrize("name", list(TABLES))
def test_numpy_load_gives_the_tables_arrays_and_nothing_else(tmp_path, name):
    args, keys = TABLES[name]
    path = write(tmp_path / "t.npz", args)
    with np.load(path) as data:  # numpy's defaults: allow_pickle=False
        loaded = dict(data.items())
    assert list(loaded) == keys
    assert all(type(value) is np.ndarray for value in loaded.values()), {k: type(v) for k, v in loaded.items()}
    assert all(value.dtype.kind in "fiu" for value in loaded.values())  # numbers a tensor library takes as they are
    with zipfile.ZipFile(path) as archive:
        assert archive.namelist() == [f"{key}.npy" for key in keys]
        record = json.loads(archive.comment.decode("ascii"))
    facts = inspect_json(path)
    assert record["kind"] == facts["kind"] and record["params"] == facts["params"] and facts["params"]
    assert run("verify", str(path)).exit_code == 0


def test_the_record_is_the_archive_comment_and_ends_the_file(tmp_path):
    path = write(tmp_path / "rope.npz", TABLES["rope"][0])
    data = path.read_bytes()
    with zipfile.ZipFile(path) as archive:
        comment = archive.comment
    assert comment.isascii() and b", " not in comment and b": " not in comment and data.endswith(comment)
    end = data.rfind(b"PK\x05\x06")
    assert END.unpack_from(data, end)[7] == len(comment) == len(data) - end - END.size
    assert json.loads(comment) == {
        "generator": f"posenc {posenc_cli.__version__}",
        "kind": "rope",
        "params": inspect_json(path)["params"],
    }
    assert list(json.loads(comment)) == sorted(json.loads(comment))  # canonical: sorted keys


@pytest.mark.parametrize("name", list(TABLES))
def test_two_runs_write_the_same_bytes(tmp_path, name):
    first = write(tmp_path / "a.npz", TABLES[name][0])
    second = write(tmp_path / "b.npz", TABLES[name][0])
    assert first.read_bytes() == second.read_bytes()


def test_a_round_trip_through_convert_keeps_arrays_and_record(tmp_path):
    source = write(tmp_path / "rope.npz", TABLES["rope"][0])
    again = tmp_path / "again.npz"
    assert run("convert", str(source), str(again)).exit_code == 0
    assert again.read_bytes() == source.read_bytes()
    assert run("verify", str(again)).exit_code == 0


# ------------------------------------------------------------------------------------------ the old layout
def old_form(path: Path, record: dict | bytes = RECORD, comment: bytes = b"") -> Path:
    """An .npz as posenc wrote it before: ``pe.npy``, then ``posenc.json`` (indented JSON), built with zipfile."""
    pe = np.asarray(posenc_cli.generate(4, 4).array)
    buffer = io.BytesIO()
    np.save(buffer, pe)
    text = record if isinstance(record, bytes) else (json.dumps(record, sort_keys=True, indent=2) + "\n").encode()
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("pe.npy", buffer.getvalue())
        archive.writestr("posenc.json", text)
        archive.comment = comment
    return path


def test_an_old_form_npz_reads_back_with_its_parameters(tmp_path):
    path = old_form(tmp_path / "old.npz")
    facts = inspect_json(path)
    assert facts["kind"] == "sinusoidal" and facts["params"] == RECORD["params"]
    assert run("verify", str(path)).exit_code == 0
    new = tmp_path / "new.npz"
    assert run("convert", str(path), str(new)).exit_code == 0  # converted: the record moves to the comment
    with np.load(new) as data:
        assert list(data) == ["pe"]
    assert json.loads(zipfile.ZipFile(new).comment)["params"] == RECORD["params"]


def test_an_npz_without_a_record_is_a_bare_array(tmp_path):
    path = tmp_path / "plain.npz"
    np.savez(path, x=np.arange(3.0))
    facts = inspect_json(path)
    assert facts["kind"] == "array" and facts["params"] == {}


# ---------------------------------------------------------------------------------------- hostile comments
def with_comment(path: Path, comment: bytes) -> Path:
    """``path`` (a posenc .npz) with its archive comment replaced, through zipfile's own writer."""
    with zipfile.ZipFile(path, "a") as archive:
        archive.comment = comment
    return path


def patched_end(path: Path, declared: int, tail: bytes = b"") -> Path:
    """``path`` whose end record's comment length says ``declared``, with ``tail`` appended after the comment."""
    data = bytearray(path.read_bytes())
    at = data.rfind(b"PK\x05\x06")
    struct.pack_into("<H", data, at + END.size - 2, declared)
    path.write_bytes(bytes(data) + tail)
    return path


def record_text(**change: object) -> bytes:
    return json.dumps({**RECORD, **change}, sort_keys=True, separators=(",", ":")).encode()


HOSTILE = {
    "length past the end": (
        lambda p: patched_end(p, 0xFFFF),
        "declares a comment of 65535 bytes",
    ),
    "bytes after the comment": (
        lambda p: patched_end(with_comment(p, record_text()), len(record_text()), b"x" * 100),
        "follow the record",
    ),
    "a comment past 65535 bytes": (  # zipfile, like posenc, looks for the end record no further back
        lambda p: patched_end(with_comment(p, record_text()), len(record_text()), b" " * 70_000),
        "no ZIP end of central directory record",
    ),
    "not JSON": (lambda p: with_comment(p, b"made by hand"), "is not valid UTF-8 JSON"),
    "not UTF-8": (lambda p: with_comment(p, b'{"kind": "\xff", "params": {}}'), "is not valid UTF-8 JSON"),
    "not an object": (lambda p: with_comment(p, b"[1, 2]"), "must be a JSON object"),
    "no kind": (lambda p: with_comment(p, b'{"params": {}}'), "a string 'kind'"),
    "NaN": (
        lambda p: with_comment(p, record_text().replace(b"10000.0", b"NaN")),
        "NaN is not a JSON number",
    ),
    "Infinity": (
        lambda p: with_comment(p, record_text().replace(b"10000.0", b"Infinity")),
        "Infinity is not a JSON number",
    ),
    "1e400": (lambda p: with_comment(p, record_text().replace(b"10000.0", b"1e400")), "too large for a double"),
    "duplicate key": (
        lambda p: with_comment(p, record_text().replace(b'"seq_len":4', b'"seq_len":3,"seq_len":4')),
        "key 'seq_len' appears twice",
    ),
    "duplicate top-level key": (
        lambda p: with_comment(p, record_text().replace(b'"kind":', b'"kind":"rope","kind":')),
        "key 'kind' appears twice",
    ),
    "nested parameter": (lambda p: with_comment(p, record_text(params={"seq_len": [4]})), "numbers, strings or"),
    "a member that disagrees": (
        lambda p: old_form(p, comment=record_text(params={**RECORD["params"], "seq_len": 3})),
        "holds posenc's record twice",
    ),
    "a member that agrees": (lambda p: old_form(p, comment=record_text()), "holds posenc's record twice"),
}


@pytest.mark.parametrize("command", ["inspect", "verify", "convert"])
@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_comment_that_is_not_posencs_record_is_refused_in_one_line(tmp_path, case, command):
    path = write(tmp_path / "pe.npz", ["generate", "-n", "4", "-d", "4"])
    make, fragment = HOSTILE[case]
    make(path)
    out = tmp_path / "out"
    out.mkdir()
    args = {"inspect": ["inspect", str(path)], "verify": ["verify", str(path)]}
    result = run(*args.get(command, ["convert", str(path), str(out / "x.npz")]))
    assert result.exit_code == 1, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and "pe.npz" in lines[0], result.stderr
    assert fragment in lines[0] and "Traceback" not in result.output and "internal error" not in lines[0], lines[0]
    assert result.stdout == "" and list(out.iterdir()) == []


def test_the_hostile_comments_are_what_they_claim(tmp_path):
    """Each refused file is an archive zipfile and numpy open; only the comment (or the added member) is wrong."""
    for case, (make, _) in HOSTILE.items():
        if case in ("length past the end", "bytes after the comment", "a comment past 65535 bytes"):
            continue  # the end record itself is what is wrong there
        path = make(write(tmp_path / f"{len(case)}-{case[:3]}.npz", ["generate", "-n", "4", "-d", "4"]))
        with np.load(path) as data:
            assert data["pe"].shape == (4, 4), case
    fine = with_comment(write(tmp_path / "ok.npz", TABLES["sinusoidal"][0]), record_text())
    assert npz_format.load(io.BytesIO(fine.read_bytes())).params == RECORD["params"]


# ------------------------------------------------------------------------------------------- the size limit
def table_with_note(record_bytes: int) -> Table:
    """A table whose record takes exactly ``record_bytes`` bytes (a ``note`` parameter pads it)."""
    base = Table("array", {"x": np.arange(3, dtype=np.float32)}, {"note": ""})
    size = len(npz_format.record(base))
    return Table("array", base.arrays, {"note": "n" * (record_bytes - size)})


def test_a_record_of_65535_bytes_is_written_and_read(tmp_path):
    table = table_with_note(65535)
    path = tmp_path / "big.npz"
    posenc_cli.save(table, path)
    assert len(zipfile.ZipFile(path).comment) == 65535
    assert posenc_cli.load(path).params == table.params
    with np.load(path) as data:
        assert list(data) == ["x"]


def test_a_record_past_65535_bytes_is_refused_before_writing(tmp_path):
    with pytest.raises(FormatError, match="take 65536 bytes as JSON, more than the 65535"):
        posenc_cli.save(table_with_note(65536), tmp_path / "big.npz")
    assert list(tmp_path.iterdir()) == []
    # Through the CLI: a .safetensors record (up to 1 MiB) with a long parameter, converted to .npz.
    source = tmp_path / "long.safetensors"
    record = json.dumps({"kind": "array", "params": {"note": "n" * 70_000}})
    safetensors.numpy.save_file({"x": np.zeros(2, np.float32)}, str(source), metadata={"posenc": record})
    out = tmp_path / "out.npz"
    result = run("convert", str(source), str(out))
    assert result.exit_code == 1 and result.stdout == "", result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "more than the 65535 of the ZIP comment" in lines[0], lines
    assert "write .safetensors" in lines[0] and not out.exists()


@pytest.mark.parametrize("suffix", [".npz", ".h", ".c", ".h5", ".mem", ".safetensors", ".npy"])
@pytest.mark.parametrize("value", [float("nan"), float("inf"), 2**70])
def test_a_parameter_no_reader_takes_is_never_written(tmp_path, suffix, value):
    """Every reader refuses NaN, infinity and integers past 64 bits in a record; no writer writes one (the C
    writer did, and its reader then refused the file)."""
    with pytest.raises(FormatError, match="no format posenc writes records it"):
        posenc_cli.save(Table("array", {"x": np.ones((2, 2))}, {"base": value}), tmp_path / f"bad{suffix}")
    assert list(tmp_path.iterdir()) == []


def test_a_parameter_holding_the_end_record_signature_cannot_fake_the_end(tmp_path):
    """JSON escapes control characters, so the comment never holds ``PK\\x05\\x06``: a reader that searches
    backwards for the end record finds the real one."""
    table = Table("array", {"x": np.arange(2.0)}, {"note": "PK\x05\x06" + "\0" * 18 + "PK\x05\x06"})
    path = tmp_path / "sig.npz"
    posenc_cli.save(table, path)
    data = path.read_bytes()
    assert data.count(b"PK\x05\x06") == 1
    assert posenc_cli.load(path).params == table.params
    with np.load(path) as loaded:
        assert loaded["x"].tolist() == [0.0, 1.0]
