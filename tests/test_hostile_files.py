"""Hostile .npy, .npz, .safetensors and .csv files (issue #11): each attack is made here with the real libraries
(zipfile, safetensors, numpy, csv) or by hand, then run through the CLI the way a user would meet it.

The rule for every refused file, whatever the command (``inspect``, ``convert F out.npy``, ``verify``): exit code 1,
one line on stderr starting ``Error:`` that names the file and the problem, no traceback, nothing on stdout, no
output file left. Bombs are read in a subprocess whose address space is capped (RLIMIT_AS), so a reader that lets a
small file decide how much memory it takes fails the test instead of the machine.
"""

from __future__ import annotations

import csv
import io
import json
import resource
import struct
import subprocess
import sys
import tracemalloc
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import safetensors.numpy
from click.testing import CliRunner

import posenc_cli
from posenc_cli.cli import cli
from posenc_cli.errors import FormatError
from posenc_cli.formats import WriteOptions, infer, limits
from posenc_cli.formats import npy as npy_format
from posenc_cli.formats import npz as npz_format
from posenc_cli.table import Table

MiB = 1 << 20
GiB = 1 << 30

COMMANDS: dict[str, Callable[[Path, Path], list[str]]] = {
    "inspect": lambda f, out: ["inspect", str(f)],
    "convert": lambda f, out: ["convert", str(f), str(out / "out.npy")],
    # With parameters: verify reads a file's values only once it knows what to compare them with (a command line
    # without them is refused first, exit 2), and the values are where some of these files are broken (bad-crc.npz).
    "verify": lambda f, out: ["verify", str(f), "-s", "seq_len=2", "-s", "d_model=2"],
}


def assert_refused(path: Path, command: str, *problem: str, named: str | None = None) -> str:
    """Run ``command`` on ``path`` and check the rule of the module docstring (the error names ``named``, by default
    ``path``'s file name); return the error line."""
    out = path.parent / "out"
    out.mkdir(exist_ok=True)
    result = CliRunner().invoke(cli, COMMANDS[command](path, out))
    assert result.exit_code == 1, (result.exit_code, result.output)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    line = lines[0]
    assert (named or path.name) in line and "Traceback" not in result.output and "internal error" not in line, line
    for words in problem:
        assert words in line, (words, line)
    assert result.stdout == "" and list(out.iterdir()) == []
    return line


def run_capped(*args: str, address_space: int = 3 * GiB // 2) -> subprocess.CompletedProcess[str]:
    """``python -m posenc_cli *args`` in a process that may map at most ``address_space`` bytes."""

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (address_space, resource.RLIM_INFINITY))

    return subprocess.run(
        [sys.executable, "-m", "posenc_cli", *args], capture_output=True, text=True, preexec_fn=cap, timeout=120
    )


def assert_capped_refusal(result: subprocess.CompletedProcess[str], name: str, *problem: str) -> None:
    assert result.returncode == 1 and result.stdout == "", (result.returncode, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and name in lines[0], result.stderr
    assert "Traceback" not in result.stderr and "out of memory" not in lines[0], lines[0]
    for words in problem:
        assert words in lines[0], (words, lines[0])


# ------------------------------------------------------------------------------------------------ crafted bytes
def npy_bytes(text: str, data: bytes = b"", *, version: bytes = b"\x01\x00", length: int | None = None) -> bytes:
    """An .npy file by hand: ``text`` is the header dict, padded as the spec says; ``length`` may lie."""
    width = 2 if version == b"\x01\x00" else 4
    body = text.encode("utf-8" if version == b"\x03\x00" else "latin1")
    body += b" " * (-(6 + 2 + width + len(body) + 1) % 64) + b"\n"
    field = (len(body) if length is None else length).to_bytes(width, "little")
    return b"\x93NUMPY" + version + field + body + data


def npy_dict(descr: str = "'<f4'", fortran: str = "False", shape: str = "(2, 2)") -> str:
    return f"{{'descr': {descr}, 'fortran_order': {fortran}, 'shape': {shape}, }}"


F4 = np.arange(4, dtype="<f4").tobytes()
GOOD_NPY = npy_bytes(npy_dict(), F4)
GOOD_LENGTH = int.from_bytes(GOOD_NPY[8:10], "little")


def st_bytes(header: dict[str, object] | bytes, data: bytes = b"") -> bytes:
    """A .safetensors file by hand: the 8-byte length, the header JSON, the data."""
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + data


T = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
EIGHT = b"\0" * 8


def zip_bytes(*members: tuple[str, bytes], method: int = zipfile.ZIP_STORED) -> bytes:
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about the duplicate names it writes when asked
        with zipfile.ZipFile(buffer, "w", method) as archive:
            for name, data in members:
                archive.writestr(name, data)
    return buffer.getvalue()


def patch_one_member(data: bytes, *, flags: int = 0, method: int | None = None) -> bytes:
    """An archive of one member with general purpose ``flags`` set and its ``method`` replaced, in the local and
    the central header alike (what a tool that writes those features would produce)."""
    out = bytearray(data)
    for at, flag_at in ((0, 6), (out.rfind(b"PK\x01\x02"), 8)):
        old = struct.unpack_from("<H", out, at + flag_at)[0]
        struct.pack_into("<H", out, at + flag_at, old | flags)
        if method is not None:
            struct.pack_into("<H", out, at + flag_at + 2, method)
    return bytes(out)


META_OK = json.dumps({"kind": "array", "params": {}}).encode()


def too_many_members() -> bytes:
    return zip_bytes(*((f"a{i}.npy", GOOD_NPY) for i in range(limits.MAX_ARRAYS + 2)))


def posenc_written(suffix: str) -> bytes:
    """A small valid file posenc wrote: a RoPE table (several arrays) where the format holds several."""
    table = posenc_cli.rope(4, 4) if suffix in (".npz", ".safetensors") else posenc_cli.generate(4, 4)
    buffer = io.BytesIO()
    infer(f"x{suffix}").dump(table, buffer, WriteOptions())
    return buffer.getvalue()


# ---------------------------------------------------------------------------------------------- the attacks
CASES: dict[str, tuple[bytes | Callable[[], bytes], tuple[str, ...]]] = {
    # .npy: shapes
    "negative-shape.npy": (npy_bytes(npy_dict(shape="(-2, -2)"), F4), ("non-negative integers", "-2")),
    "bool-shape.npy": (npy_bytes(npy_dict(shape="(True, 4)"), F4), ("non-negative integers", "True")),
    "float-shape.npy": (npy_bytes(npy_dict(shape="(2.0, 2)"), F4), ("non-negative integers",)),
    "list-shape.npy": (npy_bytes(npy_dict(shape="[2, 2]"), F4), ("shape must be a tuple",)),
    "65-dims.npy": (npy_bytes(npy_dict(shape="(" + "1, " * 65 + ")")), ("65 dimensions, more than the 8",)),
    "9-dims.npy": (npy_bytes(npy_dict(shape="(" + "1, " * 9 + ")"), F4[:4]), ("9 dimensions",)),
    "unholdable.npy": (npy_bytes(npy_dict(shape=f"(0, {2**62}, {2**62})")), ("larger than numpy can hold",)),
    "huge-integer.npy": (npy_bytes(npy_dict(shape=f"({'9' * 5000},)")), ("not a Python dict literal",)),
    "nesting-bomb.npy": (npy_bytes(npy_dict(shape="(" * 3000 + ")" * 3000)), ("not a Python dict literal",)),
    # .npy: the header and its length
    "length-lies-short.npy": (npy_bytes(npy_dict(), F4, length=GOOD_LENGTH - 8), ("does not end with a newline",)),
    "length-lies-long.npy": (npy_bytes(npy_dict(), F4, length=GOOD_LENGTH + 16), ("does not end with a newline",)),
    "length-past-the-end.npy": (npy_bytes(npy_dict(), F4, length=9000), ("ends inside the header",)),
    "version-9.npy": (npy_bytes(npy_dict(), F4, version=b"\x09\x00"), ("version 9.0", "1.0, 2.0 and 3.0")),
    "version-3-latin1.npy": (
        npy_bytes(npy_dict(), F4, version=b"\x03\x00").replace(b"'<f4'", b"'\xff4'"),
        ("not UTF-8",),
    ),
    "trailing-junk.npy": (GOOD_NPY + b"junk", ("4 bytes after the 16 its header declares",)),
    "truncated-data.npy": (GOOD_NPY[:-4], ("truncated", "promises 16 bytes of data, found 12")),
    "bad-magic.npy": (b"\x93NUMPX" + GOOD_NPY[6:], ("not the NPY magic",)),
    "only-magic.npy": (b"\x93NUMPY", ("ends inside the version",)),
    "code-in-header.npy": (
        npy_bytes(npy_dict(descr="__import__('os').system('touch pwned')"), F4),
        ("not a Python dict literal",),
    ),
    "not-a-dict.npy": (npy_bytes("[1, 2]", F4), ("must hold descr, fortran_order and shape",)),
    "missing-key.npy": (npy_bytes("{'descr': '<f4', 'shape': (2, 2)}", F4), ("must hold descr",)),
    "extra-key.npy": (npy_bytes(npy_dict()[:-1] + "'x': 1}", F4), ("must hold descr",)),
    "fortran-zero.npy": (npy_bytes(npy_dict(fortran="0"), F4), ("fortran_order must be True or False, got 0",)),
    "fortran-none.npy": (npy_bytes(npy_dict(fortran="None"), F4), ("fortran_order must be True or False",)),
    # .npy: element types
    "descr-unknown.npy": (npy_bytes(npy_dict(descr="'<f3'"), F4), ("holds dtype '<f3'",)),
    "descr-object.npy": (npy_bytes(npy_dict(descr="'|O'"), F4), ("holds dtype object",)),
    "descr-structured.npy": (
        npy_bytes(npy_dict(descr="[('a', '<f4'), ('b', '<f4')]", shape="(2,)"), F4),
        ("holds dtype structured",),
    ),
    "descr-complex.npy": (npy_bytes(npy_dict(descr="'<c8'", shape="(2,)"), F4), ("holds dtype '<c8'",)),
    "descr-strings.npy": (npy_bytes(npy_dict(descr="'<U1'"), F4), ("holds dtype '<U1'",)),
    "descr-number.npy": (npy_bytes(npy_dict(descr="4"), F4), ("holds dtype 4",)),
    # .safetensors: shapes, offsets, dtypes, keys, metadata, limits
    "shape-1e30.safetensors": (
        st_bytes(b'{"x":{"dtype":"F32","shape":[0,1e30],"data_offsets":[0,0]}}'),
        ("shape must be a list of non-negative integers",),
    ),
    "shape-10-to-30.safetensors": (
        st_bytes({"x": {**T, "shape": [0, 10**30], "data_offsets": [0, 0]}}),
        ("larger than numpy can hold",),
    ),
    "shape-negative.safetensors": (st_bytes({"x": {**T, "shape": [-2]}}, EIGHT), ("shape must be",)),
    "shape-float.safetensors": (st_bytes({"x": {**T, "shape": [2.0]}}, EIGHT), ("shape must be",)),
    "shape-bool.safetensors": (st_bytes({"x": {**T, "shape": [True, 2]}}, EIGHT), ("shape must be",)),
    "9-dims.safetensors": (st_bytes({"x": {**T, "shape": [1] * 8 + [2]}}, EIGHT), ("9 dimensions, more than the 8",)),
    "overlap.safetensors": (st_bytes({"x": T, "y": T}, EIGHT), ("overlaps",)),
    "gap.safetensors": (st_bytes({"x": {**T, "data_offsets": [4, 12]}}, b"\0" * 12), ("leaves 4 bytes unused",)),
    "outside.safetensors": (st_bytes({"x": T}, b"\0" * 4), ("promises 8 bytes of data, found 4",)),
    "far-outside.safetensors": (
        st_bytes({"x": {**T, "data_offsets": [2**62, 2**62 + 8]}}, EIGHT),
        ("leaves 4611686018427387904 bytes unused",),
    ),
    "not-covering.safetensors": (st_bytes({"x": T}, EIGHT * 2), ("8 bytes after its last tensor",)),
    "wrong-span.safetensors": (st_bytes({"x": {**T, "data_offsets": [0, 12]}}, b"\0" * 12), ("needs 8 bytes",)),
    "dtype-unknown.safetensors": (st_bytes({"x": {**T, "dtype": "F8_E5M2"}}, EIGHT), ("has dtype 'F8_E5M2'",)),
    "duplicate-key.safetensors": (
        st_bytes(b'{"x":' + json.dumps(T).encode() + b',"x":' + json.dumps(T).encode() + b"}", EIGHT),
        ("appears twice",),
    ),
    "metadata-number.safetensors": (
        st_bytes({"__metadata__": {"a": 1}, "x": T}, EIGHT),
        ("must map names to strings",),
    ),
    "metadata-nesting-bomb.safetensors": (
        st_bytes({"__metadata__": {"posenc": "[" * 100_000}, "x": T}, EIGHT),
        ("not posenc's", "nests deeper than the 32 levels"),
    ),
    "metadata-list.safetensors": (
        st_bytes({"__metadata__": {"posenc": "[1]"}, "x": T}, EIGHT),
        ("not posenc's", "must be a JSON object"),
    ),
    "header-nesting-bomb.safetensors": (st_bytes(b'{"a":' + b"[" * 100_000), ("nests deeper than the 32 levels",)),
    "header-too-large.safetensors": (
        st_bytes({"__metadata__": {"pad": "x" * MiB}, "x": T}, EIGHT),
        ("header takes", "more than the 1.0 MiB posenc reads"),
    ),
    "65-tensors.safetensors": (
        st_bytes({f"t{i}": {**T, "shape": [0], "data_offsets": [0, 0]} for i in range(65)}),
        ("65 tensors, more than the 64 posenc reads",),
    ),
    # .npz: the archive
    "encrypted.npz": (lambda: patch_one_member(zip_bytes(("pe.npy", GOOD_NPY)), flags=0x1), ("is encrypted",)),
    "strong-encryption.npz": (
        lambda: patch_one_member(zip_bytes(("pe.npy", GOOD_NPY)), flags=0x41),
        ("is encrypted",),
    ),
    "deflate64.npz": (
        lambda: patch_one_member(zip_bytes(("pe.npy", GOOD_NPY), method=zipfile.ZIP_DEFLATED), method=9),
        ("compression method 9", "stored and deflated"),
    ),
    "bzip2.npz": (lambda: zip_bytes(("pe.npy", GOOD_NPY), method=zipfile.ZIP_BZIP2), ("compression method 12",)),
    "lzma.npz": (lambda: zip_bytes(("pe.npy", GOOD_NPY), method=zipfile.ZIP_LZMA), ("compression method 14",)),
    "duplicate.npz": (
        lambda: zip_bytes(("pe.npy", GOOD_NPY), ("pe.npy", npy_bytes(npy_dict(shape="(4,)"), F4))),
        ("'pe.npy' appears twice",),
    ),
    "readme.npz": (lambda: zip_bytes(("pe.npy", GOOD_NPY), ("README.txt", b"hi")), ("'README.txt'", "neither")),
    "directory.npz": (lambda: zip_bytes(("sub/", b""), ("pe.npy", GOOD_NPY)), ("'sub/'", "neither")),
    "66-members.npz": (too_many_members, ("66 ZIP members, more than the 65 posenc reads",)),
    "no-array.npz": (lambda: zip_bytes(("posenc.json", META_OK)), ("holds no .npy member",)),
    "bad-crc.npz": (
        lambda: zip_bytes(("pe.npy", GOOD_NPY)).replace(F4, F4[:-1] + b"\x41"),
        ("'pe.npy'", "Bad CRC-32"),
    ),
    # .npz: the .npy members
    "member-version-9.npz": (lambda: zip_bytes(("pe.npy", b"\x93NUMPY\x09" + GOOD_NPY[7:])), ("version 9.0",)),
    "member-trailing.npz": (
        lambda: zip_bytes(("pe.npy", GOOD_NPY + b"junk")),
        ("holds 148 bytes, and its .npy header declares 144",),
    ),
    "member-truncated.npz": (
        lambda: zip_bytes(("pe.npy", GOOD_NPY[:-4])),
        ("holds 140 bytes, and its .npy header declares 144",),
    ),
    "member-object.npz": (lambda: zip_bytes(("pe.npy", npy_bytes(npy_dict(descr="'|O'")))), ("holds dtype object",)),
    # .npz: posenc.json
    "meta-list.npz": (lambda: zip_bytes(("pe.npy", GOOD_NPY), ("posenc.json", b"[1]")), ("must be a JSON object",)),
    "meta-nesting-bomb.npz": (
        lambda: zip_bytes(("pe.npy", GOOD_NPY), ("posenc.json", b"[" * 100_000)),
        ("'posenc.json'", "nests deeper than the 32 levels"),
    ),
    "meta-too-large.npz": (
        lambda: zip_bytes(("pe.npy", GOOD_NPY), ("posenc.json", b" " * 2 * MiB + META_OK), method=zipfile.ZIP_DEFLATED),
        ("'posenc.json'", "more than the 1.0 MiB posenc reads"),
    ),
    "meta-params.npz": (
        lambda: zip_bytes(("pe.npy", GOOD_NPY), ("posenc.json", b'{"kind": "array", "params": {"p": [1]}}')),
        ("parameters must be numbers, strings or booleans",),
    ),
    "meta-kind.npz": (
        lambda: zip_bytes(("pe.npy", GOOD_NPY), ("posenc.json", b'{"kind": 1, "params": {}}')),
        ("a string 'kind'",),
    ),
    "meta-not-utf8.npz": (
        lambda: zip_bytes(("pe.npy", GOOD_NPY), ("posenc.json", b'{"kind": "\xff", "params": {}}')),
        ("not valid UTF-8 JSON",),
    ),
    # .csv
    "unicode-digits.csv": ("d0,d1\n١٢,1.0\n".encode(), ("row 1 (line 2)", "is not a number")),
    "bom-then-text.csv": (b"\xef\xbb\xbfd0,d1\n1.0,x\n", ("row 1 (line 2)", "b'x' is not a number")),
    "ragged-after-bom.csv": (b"\xef\xbb\xbf1.0,2.0\n3.0\n", ("row 2 has 1 values, the first row has 2",)),
    "infinity.csv": (b"1.0,inf\n", ("NaN or infinite",)),
    "latin1-header.csv": (b"d\xe9,d1\n1.0,2.0\n", ("not UTF-8",)),
}


@pytest.fixture
def crafted(tmp_path: Path) -> Callable[[str], Path]:
    def make(name: str) -> Path:
        content = CASES[name][0]
        path = tmp_path / name
        path.write_bytes(content() if callable(content) else content)
        return path

    return make


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("name", list(CASES))
def test_crafted_file_is_refused_in_one_line(crafted, monkeypatch, command, name):
    path = crafted(name)
    monkeypatch.chdir(path.parent)  # where a header that ran code would leave its file
    assert_refused(path, command, *CASES[name][1])
    assert not (path.parent / "pwned").exists()


def test_the_crafted_files_are_what_they_claim():
    """The attacks are not broken by accident: with the one flaw fixed, each base file is read."""
    assert npy_format.load(io.BytesIO(GOOD_NPY)).array.tolist() == [[0, 1], [2, 3]]
    for version in (b"\x02\x00", b"\x03\x00"):  # the versions posenc reads
        assert npy_format.load(io.BytesIO(npy_bytes(npy_dict(), F4, version=version))).array.shape == (2, 2)
    fortran = npy_format.load(io.BytesIO(npy_bytes(npy_dict(fortran="True"), F4)))
    assert fortran.array.tolist() == [[0, 2], [1, 3]] and fortran.array.flags.c_contiguous
    big_endian = npy_bytes(npy_dict(descr="'>f4'"), np.arange(4, dtype=">f4").tobytes())
    assert npy_format.load(io.BytesIO(big_endian)).array.tolist() == [[0, 1], [2, 3]]
    assert np.load(io.BytesIO(GOOD_NPY)).tolist() == [[0, 1], [2, 3]]
    assert safetensors.numpy.load(st_bytes({"x": T}, EIGHT))["x"].tolist() == [0, 0]
    archive = zip_bytes(("pe.npy", GOOD_NPY), ("posenc.json", META_OK))
    assert np.load(io.BytesIO(archive))["pe"].tolist() == [[0, 1], [2, 3]]
    assert npz_format.load(io.BytesIO(archive)).array.tolist() == [[0, 1], [2, 3]]


# ------------------------------------------------------------------------------------------------------- bombs
@pytest.fixture(scope="module")
def bombs(tmp_path_factory) -> Path:
    """Deflate bombs built with zipfile, streaming zeros so the test itself stays small in memory.

    - ``overflow.npz`` (about 1 MiB): a 16 x 8 table whose member then inflates to 1 GiB of zeros;
    - ``petabyte.npz``: a header, and a directory entry, that declare 1 PiB over 64 MiB of deflated zeros;
    - ``honest.npz``: 64 MiB of zeros that the header declares truthfully (64 KiB on disk).
    """
    where = tmp_path_factory.mktemp("bombs")
    zeros = bytes(16 * MiB)

    def bomb(name: str, shape: tuple[int, ...], data: int, declare: int | None = None) -> None:
        with zipfile.ZipFile(where / name, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
            head = npy_format.header(shape, np.dtype("<f4"))
            with archive.open("pe.npy", "w") as member:
                member.write(head)
                for _ in range(data // len(zeros)):
                    member.write(zeros)
                member.write(bytes(data % len(zeros)))
            if declare is not None:  # the central directory, which zipfile trusts, says what the header says
                archive.filelist[0].file_size = len(head) + declare

    bomb("overflow.npz", (16, 8), GiB + 512)
    bomb("petabyte.npz", (2**24, 2**24), 64 * MiB, declare=4 * 2**48)
    bomb("honest.npz", (4096, 4096), 64 * MiB)
    return where


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("overflow.npz", ("'pe.npy'", "holds 1073742464 bytes, and its .npy header declares 640")),
        ("petabyte.npz", ("array 'pe' needs 1.0 PiB of memory", "posenc reads at most")),
    ],
)
def test_npz_deflate_bomb_is_refused_under_the_default_limit(bombs, name, problem):
    assert (bombs / name).stat().st_size < 2 * MiB
    for command in ("inspect", "verify"):
        assert_capped_refusal(run_capped(command, str(bombs / name)), name, *problem)


def test_npz_deflate_bomb_is_refused_by_a_small_budget_and_read_in_place_by_a_large_one(bombs):
    tracemalloc.start()
    try:
        with pytest.raises(FormatError, match=r"array 'pe' needs 64\.0 MiB of memory.*at most 16\.0 MiB"):
            posenc_cli.load(bombs / "honest.npz", max_memory=16 * MiB)
        assert tracemalloc.get_traced_memory()[1] < 4 * MiB  # refused from the header: nothing inflated
        tracemalloc.reset_peak()
        table = posenc_cli.load(bombs / "honest.npz", max_memory=65 * MiB)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert table.array.shape == (4096, 4096) and not table.array.any()
    assert peak < 64 * MiB + 8 * MiB, peak  # one array, filled in pieces: no second copy, no whole-member bytes


def test_csv_with_ten_million_columns_is_refused_in_bounded_memory(tmp_path):
    path = tmp_path / "wide.csv"
    path.write_bytes(b"1," * (10**7 - 1) + b"1\n")  # 20 MB, one row
    assert_capped_refusal(
        run_capped("inspect", str(path)), "wide.csv", "line 1 has 10000000 columns, more than the 1048576 posenc reads"
    )
    tracemalloc.start()
    try:
        with pytest.raises(FormatError, match="10000000 columns"):
            posenc_cli.load(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 * MiB, peak  # the line's bytes, never ten million strings


def test_csv_line_longer_than_the_limit_is_refused(tmp_path):
    from posenc_cli.formats.csvfile import MAX_LINE

    path = tmp_path / "long.csv"
    path.write_bytes(b"1" * (MAX_LINE + 1) + b"\n")
    with pytest.raises(FormatError, match=f"line 1 is longer than the {MAX_LINE} bytes"):
        posenc_cli.load(path)


def test_csv_claims_its_table_from_the_budget(tmp_path):
    path = tmp_path / "big.csv"
    path.write_text("\n".join([",".join(["0.5"] * 1000)] * 1000) + "\n")
    with pytest.raises(FormatError, match=r"a 1000 x 1000 CSV table needs 7\.6 MiB of memory"):
        posenc_cli.load(path, max_memory=MiB)
    assert posenc_cli.load(path, max_memory=8 * MiB).array.shape == (1000, 1000)


def test_safetensors_with_a_million_empty_tensors_is_refused(tmp_path):
    path = tmp_path / "million.safetensors"
    entry = b'"t%d":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}'
    path.write_bytes(st_bytes(b"{" + b",".join(entry % i for i in range(10**6)) + b"}"))  # 58 MB, valid
    tracemalloc.start()
    try:
        with pytest.raises(FormatError, match=r"header takes \d+ bytes, more than the 1\.0 MiB"):
            posenc_cli.load(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * MiB, peak
    assert_refused(path, "inspect", "more than the 1.0 MiB posenc reads")


def test_safetensors_library_file_with_ten_thousand_tensors_stops_the_parse_early(tmp_path):
    path = tmp_path / "many.safetensors"
    safetensors.numpy.save_file({f"t{i}": np.zeros(0, np.float32) for i in range(10_000)}, str(path))
    assert path.stat().st_size < MiB  # under the header limit: the tensor count refuses it
    tracemalloc.start()
    try:
        with pytest.raises(FormatError, match="more than the 64 tensors posenc reads"):
            posenc_cli.load(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 3 * path.stat().st_size, peak  # no object per tensor: the parse stopped at the 67th


def test_npz_central_directory_is_bounded_before_zipfile_reads_it(tmp_path):
    """25,000 empty members: refused by their count, and, when the end record lies about the count, by the size
    of the directory, before zipfile builds an object per member."""
    data = bytearray(zip_bytes(*((f"{i:040d}.npy", b"") for i in range(25_000))))
    path = tmp_path / "crowd.npz"
    path.write_bytes(data)
    assert_refused(path, "inspect", "25000 ZIP members, more than the 65 posenc reads")
    end = data.rfind(b"PK\x05\x06")
    struct.pack_into("<HH", data, end + 8, 1, 1)  # "one member"
    path.write_bytes(data)
    assert_refused(path, "inspect", "central directory takes", "more than the 1.0 MiB posenc reads")


# -------------------------------------------------------------------------------------------------------- CSV BOM
def test_csv_with_a_byte_order_mark_keeps_every_row(tmp_path):
    values = [[0.5, 1.0], [2.0, -3.25], [4.0, 5.0]]
    plain, headed = tmp_path / "plain.csv", tmp_path / "headed.csv"
    with open(plain, "w", newline="", encoding="utf-8-sig") as fp:  # Excel's "CSV UTF-8": a BOM, CRLF line ends
        csv.writer(fp).writerows(values)
    with open(headed, "w", newline="", encoding="utf-8-sig") as fp:
        csv.writer(fp).writerows([["d0", "d1"], *values])
    assert plain.read_bytes().startswith(b"\xef\xbb\xbf0.5,1.0\r\n")
    for path in (plain, headed):
        assert posenc_cli.load(path).array.tolist() == values
        out = tmp_path / f"{path.stem}.npy"
        result = CliRunner().invoke(cli, ["convert", str(path), str(out)])
        assert result.exit_code == 0, result.output
        assert np.load(out).tolist() == values


# ---------------------------------------------------------------------------------------------- npy sidecars
SIDECARS = {
    "nesting bomb": (b"[" * 100_000, "nests deeper than the 32 levels"),
    "not an object": (b'"sinusoidal"', "must be a JSON object"),
    "too large": (b" " * (2 * MiB) + b"{}", "larger than the 1.0 MiB posenc reads"),
    "nested parameters": (b'{"kind": "sinusoidal", "params": {"p": {"q": 1}}}', "numbers, strings or booleans"),
    "other storage": (b'{"kind": "sinusoidal", "params": {}, "storage": "<f8"}', "describes '<f8' values"),
    "not UTF-8": (b'{"kind": "\xff", "params": {}}', "not valid UTF-8 JSON"),
}


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("case", list(SIDECARS))
def test_hostile_npy_sidecar_is_refused(tmp_path, command, case):
    assert posenc_cli.save(posenc_cli.generate(4, 4, dtype="q15"), tmp_path / "pe.npy")[1].name == "pe.json"
    content, problem = SIDECARS[case]
    (tmp_path / "pe.json").write_bytes(content)
    assert_refused(tmp_path / "pe.npy", command, "sidecar", problem, named="pe.json")  # the file at fault


# --------------------------------------------------------------------------------------------- member names
def test_path_names_from_a_hostile_file_never_become_npz_member_paths(tmp_path):
    arrays = {name: np.full(3, i, np.float32) for i, name in enumerate(["../../x", "/etc/passwd", "a/../../b"])}
    source = tmp_path / "evil.safetensors"
    safetensors.numpy.save_file(arrays, str(source))
    out = tmp_path / "out.npz"
    result = CliRunner().invoke(cli, ["convert", str(source), str(out)])
    assert result.exit_code == 0, result.output
    with zipfile.ZipFile(out) as archive:
        assert sorted(archive.namelist()) == ["a_b.npy", "etc_passwd.npy", "x.npy"]
        archive.extractall(tmp_path / "extracted")
    assert sorted(p.name for p in (tmp_path / "extracted").iterdir()) == sorted(archive.namelist())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["evil.safetensors", "extracted", "out.npz"]
    loaded = np.load(out)
    assert {key: loaded[key].tolist() for key in ("x", "etc_passwd", "a_b")} == {
        "x": [0, 0, 0],
        "etc_passwd": [1, 1, 1],
        "a_b": [2, 2, 2],
    }
    again = tmp_path / "again.npz"
    assert CliRunner().invoke(cli, ["convert", str(source), str(again)]).exit_code == 0
    assert again.read_bytes() == out.read_bytes()  # still byte-reproducible


def test_zip_slip_member_of_an_npz_is_renamed_when_converted(tmp_path):
    source = tmp_path / "slip.npz"
    source.write_bytes(zip_bytes(("../../evil.npy", GOOD_NPY), ("posenc.json", META_OK)))
    assert list(posenc_cli.load(source).arrays) == ["../../evil"]  # a name is data: posenc reads it as a key
    out = tmp_path / "out.npz"
    assert CliRunner().invoke(cli, ["convert", str(source), str(out)]).exit_code == 0
    assert zipfile.ZipFile(out).namelist() == ["evil.npy"]


def test_names_that_would_be_stored_alike_are_refused(tmp_path):
    source = tmp_path / "alike.safetensors"
    safetensors.numpy.save_file({"a/b": np.zeros(2, np.float32), "a_b": np.ones(2, np.float32)}, str(source))
    result = CliRunner().invoke(cli, ["convert", str(source), str(tmp_path / "out.npz")])
    assert result.exit_code == 1 and "would both be stored as 'a_b'" in result.stderr, result.output
    assert not (tmp_path / "out.npz").exists()


def test_safetensors_keys_are_written_as_they_are(tmp_path):
    """Keys are JSON strings, not paths: kept, so a checkpoint's names survive a round trip."""
    table = Table("array", {"../x": np.zeros(2, np.float32), "model.pe\n": np.ones(2, np.float32)})
    posenc_cli.save(table, tmp_path / "k.safetensors")
    assert sorted(safetensors.numpy.load_file(str(tmp_path / "k.safetensors"))) == ["../x", "model.pe\n"]


# ------------------------------------------------------------------------------------------------------ byte flips
FUZZED = [".npy", ".npz", ".safetensors", ".csv"]


@pytest.mark.parametrize("suffix", FUZZED)
def test_byte_flips_of_posenc_files_load_or_fail_cleanly(tmp_path, suffix):
    """Every byte of a small file posenc wrote, flipped (xor 0xff, then a random value): a table or a
    FormatError from the API, and through the CLI exit 0 or a clean exit 1."""
    data = posenc_written(suffix)
    rng = np.random.default_rng(11)
    damaged = [(at, 0xFF ^ data[at]) for at in range(len(data))]
    damaged += [(int(at), int(rng.integers(256))) for at in rng.integers(0, len(data), 2 * len(data))]
    others = []
    for at, value in damaged:
        path = tmp_path / f"flip{suffix}"
        path.write_bytes(data[:at] + bytes([value]) + data[at + 1 :])
        try:
            posenc_cli.load(path)
        except FormatError:
            pass
        except Exception as exc:  # the failure under test: anything else is a bug
            others.append((at, value, repr(exc)))
    assert others == []
    for at, value in damaged[:: max(1, len(damaged) // 40)]:
        case = tmp_path / f"case{at}-{value}"
        case.mkdir(exist_ok=True)
        path = case / f"flip{suffix}"
        path.write_bytes(data[:at] + bytes([value]) + data[at + 1 :])
        result = CliRunner().invoke(cli, ["inspect", str(path)])
        if result.exit_code != 0:
            assert_refused(path, "inspect")
