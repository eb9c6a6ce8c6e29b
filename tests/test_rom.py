"""FPGA ROM images (.mem, .coe, .mif) against their real readers and their published grammars.

- ``.mem``: Icarus Verilog's ``$readmemh`` reads every file into a ``reg [W-1:0]`` memory and ``$display`` prints
  each word; each must be the bit pattern numpy gives for the same table's ``.npz`` (never the writer's own words).
- ``.coe`` and ``.mif``: small parsers written here from Xilinx UG896 ("COE File Syntax") and the Quartus help
  ("Memory Initialization File (.mif) Definition"), not from posenc's writer, check the layout and the words.
- Every format reads back through posenc's own loader, exactly; the loaders refuse hostile input, naming the line.
"""

from __future__ import annotations

import io
import json
import re
import subprocess
from fractions import Fraction
from pathlib import Path

import mpmath
import numpy as np
import pytest
from click.testing import CliRunner

import posenc_cli
from posenc_cli.cli import cli
from posenc_cli.errors import FormatError, SpecError
from posenc_cli.formats import FORMATS, WriteOptions, _rom_meta, rom
from posenc_cli.formats.limits import Budget
from posenc_cli.kinds import KINDS
from posenc_cli.table import Table

from .conftest import require_tool
from .test_kinds import SAMPLES

ROMS = ("mem", "coe", "mif")
#: The word width of each element type, as the issue states it (not from posenc's dtypes).
WIDTHS = {"float32": 32, "float64": 64, "float16": 16, "bfloat16": 16, "q15": 16, "q7": 8, "q31": 32, "int8": 8}
_FIXED = re.compile(r"fixed([0-9]+)\.([0-9]+)")


# ----------------------------------------------------------------------------------------------- references
def width_of(array: np.ndarray, params: dict) -> int:
    """The ROM word width of an array of a table with ``params``: its element type's, else its storage's."""
    dtype = params.get("dtype")
    if array.dtype.kind == "f":
        return 8 * array.dtype.itemsize
    fixed = _FIXED.fullmatch(str(dtype))
    if fixed and array.dtype.kind == "i":
        return int(fixed[1])
    if dtype in WIDTHS and 8 * array.dtype.itemsize == WIDTHS[str(dtype)]:
        return WIDTHS[str(dtype)]
    return 8 * array.dtype.itemsize


def bit_patterns(array: np.ndarray, width: int) -> list[int]:
    """numpy's bit patterns of ``array`` in C order: IEEE bits of floats, two's complement of integers."""
    flat = np.ascontiguousarray(array).reshape(-1)
    if flat.dtype.kind == "f":
        return [int(v) for v in flat.view(f"u{flat.dtype.itemsize}")]
    return [int(v) & ((1 << width) - 1) for v in flat.tolist()]


def parts(table: Table) -> list[str | None]:
    return list(table.arrays) if len(table.arrays) > 1 else [None]


def written(tmp_path: Path, table: Table, fmt: str, part: str | None, stem: str) -> Path:
    path = tmp_path / f"{stem}.{fmt}"
    posenc_cli.save(table, path, part=part)
    return path


def npz_arrays(tmp_path: Path, table: Table, stem: str) -> dict[str, np.ndarray]:
    """The table's arrays as numpy itself reads them from posenc's .npz."""
    path = tmp_path / f"{stem}.npz"
    posenc_cli.save(table, path)
    with np.load(path, allow_pickle=False) as npz:
        return {name: npz[name] for name in npz.files}


def readmemh(tmp_path: Path, roms: list[tuple[str, int, int, bool]]) -> list[list[str]]:
    """What iverilog's ``$readmemh`` puts in each ``(file, width, depth, signed)`` memory, word by word (``%h``;
    ``%0d`` for signed memories), from one testbench."""
    require_tool("iverilog")
    lines = ["module tb;", "  integer i;"]
    body = []
    for n, (name, width, depth, signed) in enumerate(roms):
        lines.append(f"  reg {'signed ' if signed else ''}[{width - 1}:0] rom{n} [0:{depth - 1}];")
        body.append(f'    $readmemh("{name}", rom{n});')
        spec = "%0d" if signed else "%h"
        body.append(f'    for (i = 0; i < {depth}; i = i + 1) $display("{n} {spec}", rom{n}[i]);')
    source = "\n".join([*lines, "  initial begin", *body, "  end", "endmodule", ""])
    (tmp_path / "tb.v").write_text(source)
    subprocess.run(["iverilog", "-o", "tb.vvp", "tb.v"], cwd=tmp_path, check=True, capture_output=True, text=True)
    run = subprocess.run(["vvp", "-n", "tb.vvp"], cwd=tmp_path, check=True, capture_output=True, text=True)
    assert "WARNING" not in run.stdout + run.stderr and "ERROR" not in run.stdout + run.stderr, run.stdout[-2000:]
    words: list[list[str]] = [[] for _ in roms]
    for line in run.stdout.splitlines():
        n, word = line.split()
        words[int(n)].append(word)
    return words


# ---------------------------------------------------------------------------------- parsers from the specs
def parse_coe(text: str) -> tuple[dict[str, str], list[str]]:
    """UG896: ``Keyword = Value ; Optional Comment`` statements, keywords not case sensitive, any text after a
    semicolon a comment, ``memory_initialization_vector`` the last keyword, its values separated by commas (or
    whitespace). Returns the keywords and the vector's values."""
    keywords: dict[str, str] = {}
    statement = ""
    for line in text.split("\n"):
        code, semicolon, _comment = line.partition(";")
        statement += code + "\n"
        if semicolon:
            if statement.strip():
                keyword, equals, value = statement.partition("=")
                assert equals, statement
                keywords[keyword.strip().lower()] = value.strip()
            statement = ""
    assert not statement.strip(), f"text after the last statement: {statement!r}"
    assert list(keywords)[-1] == "memory_initialization_vector"
    return keywords, [v for v in re.split(r"[,\s]+", keywords["memory_initialization_vector"]) if v]


def parse_mif(text: str) -> tuple[int, int, dict[int, int]]:
    """Quartus help: ``--`` comments to the end of the line, ``%`` comments between percent signs, ``WIDTH`` and
    ``DEPTH`` in decimal, the radixes, then ``address : data ;`` pairs (an address range ``[a..b]``, or several
    data for consecutive addresses) between ``CONTENT BEGIN`` and ``END;``. Returns width, depth and the memory."""
    code = "\n".join(line.split("--", 1)[0] for line in text.split("\n"))
    code = re.sub(r"%.*?%", " ", code, flags=re.S)
    match = re.fullmatch(r"(.*)\bCONTENT\s+BEGIN\b(.*)\bEND\s*;\s*", code, flags=re.S | re.I)
    assert match, "no CONTENT BEGIN ... END;"
    header = {}
    for statement in filter(str.strip, match[1].split(";")):
        key, _, value = statement.partition("=")
        header[key.strip().upper()] = value.strip()
    assert set(header) == {"WIDTH", "DEPTH", "ADDRESS_RADIX", "DATA_RADIX"}, header
    radix = {"HEX": 16, "BIN": 2, "OCT": 8, "DEC": 10, "UNS": 10}
    to_address, to_data = radix[header["ADDRESS_RADIX"].upper()], radix[header["DATA_RADIX"].upper()]
    width, depth = int(header["WIDTH"]), int(header["DEPTH"])
    memory: dict[int, int] = {}
    for entry in filter(str.strip, match[2].split(";")):
        where, _, data = entry.partition(":")
        values = [int(v, to_data) for v in data.split()]
        span = re.fullmatch(r"\s*\[(\w+)\.\.(\w+)\]\s*", where)
        if span:
            addresses = list(range(int(span[1], to_address), int(span[2], to_address) + 1))
            values = values * len(addresses)
        else:
            start = int(where, to_address)
            addresses = list(range(start, start + len(values)))
        for address, value in zip(addresses, values, strict=True):
            assert 0 <= address < depth and address not in memory and 0 <= value < 1 << width, (address, value)
            memory[address] = value
    return width, depth, memory


def rom_words(path: Path) -> tuple[int | None, list[int]]:
    """The width (MIF) and the words of a ROM image, by the parsers above (``.mem``: one hex word per line)."""
    text = path.read_text("ascii")
    if path.suffix == ".coe":
        keywords, values = parse_coe(text)
        assert keywords["memory_initialization_radix"] == "16"
        return None, [int(v, 16) for v in values]
    if path.suffix == ".mif":
        width, depth, memory = parse_mif(text)
        assert sorted(memory) == list(range(depth))
        return width, [memory[a] for a in range(depth)]
    return None, [int(line, 16) for line in text.split("\n") if line and not line.startswith("//")]


# ------------------------------------------------------------------------------------------------- tables
DTYPE_TABLES = {
    **{d: (lambda d=d: posenc_cli.generate(9, 6, dtype=d)) for d in ("float32", "float64", "float16", "bfloat16")},
    **{d: (lambda d=d: posenc_cli.generate(9, 6, dtype=d)) for d in ("q15", "q7", "q31")},
    **{
        d: (lambda d=d: posenc_cli.generate(9, 6, dtype=d))
        for d in ("fixed16.14", "fixed4.2", "fixed2.1", "fixed64.40")
    },
    "int8": lambda: posenc_cli.generate(9, 6, dtype="int8", scale=1 / 64, zero_point=-2),
    "index-int16": lambda: KINDS["relative"].build({"scheme": "t5", "query_length": 5, "dtype": "int16"}),
}


def check_against_npz(tmp_path: Path, tables: dict[str, Table]) -> None:
    """Every array of every table, written as .mem, read by iverilog: numpy's bit patterns of the .npz, and
    posenc's loader gives back the table."""
    roms, expected = [], []
    for stem, table in tables.items():
        arrays = npz_arrays(tmp_path, table, stem)
        for part in parts(table):
            key = part or next(iter(table.arrays))
            path = written(tmp_path, table, "mem", part, f"{stem}-{key}")
            width = width_of(arrays[key], dict(table.params))
            roms.append((path.name, width, arrays[key].size, False))
            lines = [line for line in path.read_text().split("\n") if line and not line.startswith("//")]
            assert all(len(line) == -(-width // 4) for line in lines) and len(lines) == arrays[key].size
            expected.append((bit_patterns(arrays[key], width), -(-width // 4)))
            back = posenc_cli.load(path)
            assert list(back.arrays) == [key] and back.kind == table.kind
            assert dict(back.params) == dict(table.part(part).params if part else table.params)
            loaded = back.arrays[key]
            assert loaded.dtype == arrays[key].dtype and loaded.shape == arrays[key].shape
            assert loaded.tobytes() == arrays[key].tobytes()
    for words, (want, digits) in zip(readmemh(tmp_path, roms), expected, strict=True):
        assert all(len(word) == digits for word in words)
        assert [int(word, 16) for word in words] == want


@pytest.mark.client
@pytest.mark.parametrize("dtype", DTYPE_TABLES)
def test_iverilog_reads_every_element_type_bit_for_bit(tmp_path, dtype):
    check_against_npz(tmp_path, {dtype: DTYPE_TABLES[dtype]()})


@pytest.mark.client
@pytest.mark.parametrize("kind", SAMPLES)
def test_iverilog_reads_every_table_kind_bit_for_bit(tmp_path, kind):
    tables = {f"s{n}": KINDS[kind].build(values) for n, values in enumerate(SAMPLES[kind])}
    check_against_npz(tmp_path, tables)


@pytest.mark.client
def test_iverilog_reads_the_cli_output_and_the_cli_wants_a_part(tmp_path):
    runner = CliRunner()
    result = runner.invoke(cli, ["rope", "-n", "5", "--head-dim", "8", "--part", "sin", "-o", str(tmp_path / "s.mem")])
    assert result.exit_code == 0, result.stderr
    result = runner.invoke(cli, ["rope", "-n", "5", "--head-dim", "8", "-o", str(tmp_path / "r.coe")])
    assert result.exit_code == 2 and "part" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "r.coe").exists()
    sin = np.asarray(posenc_cli.rope(5, 8).arrays["sin"])
    (words,) = readmemh(tmp_path, [("s.mem", 32, sin.size, False)])
    assert [int(w, 16) for w in words] == bit_patterns(sin, 32)
    assert "command: posenc rope" in (tmp_path / "s.mem").read_text()


@pytest.mark.parametrize("fmt", ["coe", "mif"])
@pytest.mark.parametrize("dtype", DTYPE_TABLES)
def test_coe_and_mif_follow_their_grammar_and_read_back(tmp_path, fmt, dtype):
    table = DTYPE_TABLES[dtype]()
    arrays = npz_arrays(tmp_path, table, "t")
    (key,) = arrays
    path = written(tmp_path, table, fmt, None, "t")
    width = width_of(arrays[key], dict(table.params))
    declared, words = rom_words(path)
    assert declared in (None, width)
    assert words == bit_patterns(arrays[key], width)
    back = posenc_cli.load(path)
    assert back.kind == table.kind and dict(back.params) == dict(table.params) and list(back.arrays) == [key]
    assert back.arrays[key].dtype == arrays[key].dtype and back.arrays[key].tobytes() == arrays[key].tobytes()


@pytest.mark.parametrize("fmt", ["coe", "mif"])
@pytest.mark.parametrize("kind", SAMPLES)
def test_coe_and_mif_hold_every_table_kind(tmp_path, fmt, kind):
    for n, values in enumerate(SAMPLES[kind]):
        table = KINDS[kind].build(values)
        arrays = npz_arrays(tmp_path, table, f"s{n}")
        for part in parts(table):
            key = part or next(iter(table.arrays))
            path = written(tmp_path, table, fmt, part, f"s{n}-{key}")
            assert rom_words(path)[1] == bit_patterns(arrays[key], width_of(arrays[key], dict(table.params)))
            assert posenc_cli.load(path).arrays[key].tobytes() == arrays[key].tobytes()


@pytest.mark.parametrize("fmt", ROMS)
def test_ascii_lf_and_the_same_bytes_twice(tmp_path, fmt):
    table = posenc_cli.rope(7, 8, dtype="bfloat16")
    first = written(tmp_path, table, fmt, "cos", "a").read_bytes()
    (tmp_path / "b").mkdir()
    second = written(tmp_path / "b", table, fmt, "cos", "a").read_bytes()
    assert first == second and first.isascii() and b"\r" not in first and first.endswith(b"\n")


# ------------------------------------------------------------------------------------------- fixed point
def fixed_reference(seq_len: int, d_model: int, frac: int, total: int) -> list[int]:
    """round(v * 2**frac), halves away from zero, saturated to ``total`` bits, of the exact interleaved sinusoid
    (``pe[p, 2i] = sin(p / 10000**(2i/d))``, ``pe[p, 2i+1]`` its cosine), from mpmath at 60 digits."""
    out = []
    with mpmath.workdps(60):
        for p in range(seq_len):
            for j in range(d_model):
                angle = p / mpmath.power(10000, mpmath.mpf(2 * (j // 2)) / d_model)
                value = Fraction(mpmath.nstr(mpmath.sin(angle) if j % 2 == 0 else mpmath.cos(angle), 50))
                code = int(abs(value) * 2**frac + Fraction(1, 2)) * (1 if value >= 0 else -1)
                out.append(max(-(1 << (total - 1)), min((1 << (total - 1)) - 1, code)))
    return out


@pytest.mark.client
def test_fixed18_16_words_are_exactly_18_bits_and_iverilog_reads_them_signed(tmp_path):
    result = CliRunner().invoke(
        cli, ["generate", "-n", "12", "-d", "8", "--dtype", "fixed18.16", "-o", str(tmp_path / "f.mem")]
    )
    assert result.exit_code == 0, result.stderr
    words = [line for line in (tmp_path / "f.mem").read_text().split("\n") if line and not line.startswith("//")]
    assert len(words) == 96 and all(re.fullmatch(r"[0-3][0-9a-f]{4}", word) for word in words)
    (signed,) = readmemh(tmp_path, [("f.mem", 18, 96, True)])
    assert [int(v) for v in signed] == fixed_reference(12, 8, 16, 18)
    back = posenc_cli.load(tmp_path / "f.mem")
    assert back.array.dtype == np.int32 and back.array.reshape(-1).tolist() == fixed_reference(12, 8, 16, 18)
    for fmt in ("coe", "mif"):
        path = written(tmp_path, posenc_cli.load(tmp_path / "f.mem"), fmt, None, "f")
        declared, values = rom_words(path)
        assert declared in (None, 18) and values == [v & 0x3FFFF for v in fixed_reference(12, 8, 16, 18)]


def test_a_word_wider_than_a_fixed_point_width_is_refused(tmp_path):
    posenc_cli.save(posenc_cli.generate(4, 4, dtype="fixed18.16"), tmp_path / "f.mem")
    data = (tmp_path / "f.mem").read_bytes()
    wide = re.sub(rb"\n10000\n", b"\n40000\n", data, count=1)
    with pytest.raises(FormatError, match=r"line 6: the word '40000' is wider than the 18 bits of fixed18.16"):
        rom.load_mem(io.BytesIO(wide))


def test_a_value_outside_the_fixed_point_range_is_refused_on_writing():
    table = Table("sinusoidal", {"pe": np.array([[1 << 17]], np.int32)}, {"dtype": "fixed18.16"})
    with pytest.raises(FormatError, match=r"131072 does not fit the 18 bits of fixed18.16"):
        rom.dump_mem(table, io.BytesIO(), WriteOptions())


# ----------------------------------------------------------------------------------------- what is read
def sample(fmt: str, table: Table | None = None) -> bytes:
    table = table or Table("sinusoidal", {"pe": np.arange(12, dtype=np.float32).reshape(3, 4)}, {"dtype": "float32"})
    fp = io.BytesIO()
    getattr(rom, f"dump_{fmt}")(table, fp, WriteOptions(filename=f"pe.{fmt}"))
    return fp.getvalue()


def load(fmt: str, data: bytes, budget: Budget | None = None) -> Table:
    return getattr(rom, f"load_{fmt}")(io.BytesIO(data), budget)


def word_lines(fmt: str, data: bytes) -> list[int]:
    """Indices of the word lines of posenc's file ``data``."""
    lines = data.split(b"\n")
    pattern = {"mem": rb"[0-9a-f]{8}", "coe": rb"[0-9a-f]{8}[,;]", "mif": rb"\t[0-9a-f]+ : [0-9a-f]{8};"}[fmt]
    return [n for n, line in enumerate(lines) if re.fullmatch(pattern, line)]


def edit(fmt: str, change, data: bytes | None = None) -> bytes:
    data = sample(fmt) if data is None else data
    lines = data.split(b"\n")
    change(lines, word_lines(fmt, data))
    return b"\n".join(lines)


@pytest.mark.client
@pytest.mark.parametrize("fmt", ROMS)
def test_nan_patterns_are_bits_like_any_other(tmp_path, fmt):
    bits = np.array([0x7FC00001, 0xFFFFFFFF, 0x7F800001, 0x80000000, 0x7F800000], np.uint32)
    table = Table("array", {"pe": bits.view(np.float32).reshape(1, 5)})
    path = tmp_path / f"n.{fmt}"
    posenc_cli.save(table, path)
    assert posenc_cli.load(path).array.view(np.uint32).tolist() == [bits.tolist()]
    if fmt == "mem":
        (words,) = readmemh(tmp_path, [("n.mem", 32, 5, False)])
        assert [int(w, 16) for w in words] == bits.tolist()
    else:
        assert rom_words(path)[1] == bits.tolist()


@pytest.mark.parametrize("fmt", ROMS)
def test_crlf_line_ends_read_back_and_mixed_ones_are_refused(fmt):
    data = sample(fmt)
    assert load(fmt, data.replace(b"\n", b"\r\n")).array.tolist() == load(fmt, data).array.tolist()
    mixed = data.replace(b"\n", b"\r\n", 2)
    with pytest.raises(FormatError, match="line 3 ends otherwise than line 1"):
        load(fmt, mixed)


HAND_WRITTEN = {
    "mem": b"3f800000\n00000000\n",
    "coe": b"memory_initialization_radix=16;\nmemory_initialization_vector=\n3f800000,\n00000000;\n",
    "mif": b"WIDTH=32;\nDEPTH=2;\nADDRESS_RADIX=HEX;\nDATA_RADIX=HEX;\nCONTENT BEGIN\n0 : 3f800000;\n1 : 0;\nEND;\n",
}


@pytest.mark.parametrize("fmt", ROMS)
def test_a_hand_written_image_is_refused_for_lack_of_metadata(fmt):
    with pytest.raises(FormatError, match=rf"not a .{fmt} file posenc wrote: it has no .* metadata line"):
        load(fmt, HAND_WRITTEN[fmt])
    leader = {"mem": b"// ", "coe": b"; ", "mif": b"-- "}[fmt]
    with pytest.raises(FormatError, match="no .* metadata line"):
        load(fmt, leader + b"my ROM\n" + HAND_WRITTEN[fmt])


def tamper(data: bytes, **changes: object) -> bytes:
    """``data`` with the metadata line's keys changed (``None``: removed)."""
    lines = data.split(b"\n")
    for n, line in enumerate(lines):
        head, tag, text = line.partition(b" posenc: ")
        if tag:
            meta = json.loads(text)
            for key, value in changes.items():
                if value is None:
                    meta.pop(key)
                else:
                    meta[key] = value
            lines[n] = head + tag + json.dumps(meta).encode()
    return b"\n".join(lines)


@pytest.mark.parametrize("fmt", ROMS)
@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"width": 16}, "says 'float32' in 16-bit words, and its parameters and storage <f4 make float32 in 32"),
        ({"element": "float16"}, "make float32 in 32-bit words"),
        ({"storage": "<f8"}, "make float64"),
        ({"storage": "|O"}, "names the storage '|O'"),
        ({"storage": ">f4"}, "names the storage '>f4'"),
        ({"params": {"dtype": "fixed99.99"}, "storage": "<i8"}, "make int64 in 64-bit words"),
        ({"shape": [-3, 4]}, "non-negative integers"),
        ({"shape": [True, 12]}, "non-negative integers"),
        ({"shape": [2**40, 2**40]}, "larger than numpy can hold|ends after 12 of the"),
        ({"shape": [0, 4]}, "at least one word"),
        ({"shape": "12"}, "shape must be a list"),
        ({"key": ""}, "non-empty string key"),
        ({"generator": "someone"}, "generator"),
        ({"kind": 3}, "string 'kind'"),
        ({"params": {"a": [1]}}, "numbers, strings or booleans"),
        ({"extra": 1}, "'extra' is wrong"),
        ({"width": None}, "'width' is wrong"),
    ],
)
def test_the_metadata_must_be_exactly_what_posenc_writes(fmt, changes, message):
    with pytest.raises(FormatError, match=message):
        load(fmt, tamper(sample(fmt), **changes))


@pytest.mark.parametrize("fmt", ROMS)
def test_a_huge_declared_table_costs_nothing(fmt):
    data = tamper(sample(fmt), shape=[2**30, 2**20])
    if fmt == "mif":
        data = data.replace(b"DEPTH=12;", b"DEPTH=1125899906842624;")
    with pytest.raises(FormatError, match="ends? after 12 of the 1125899906842624|line 10: "):
        load(fmt, data, Budget(1 << 40))
    with pytest.raises(FormatError, match="needs 48 bytes of memory, and posenc reads at most 40 bytes"):
        load(fmt, sample(fmt), Budget(40))


@pytest.mark.parametrize(
    ("fmt", "old", "new", "message"),
    [
        ("mif", b"DEPTH=12;", b"DEPTH=99999999999999999999;", "line 6: expected 'DEPTH=12;'"),
        ("mif", b"WIDTH=32;", b"WIDTH=64;", "line 5: expected 'WIDTH=32;'"),
        ("mif", b"DATA_RADIX=HEX;", b"DATA_RADIX=DEC;", "expected 'DATA_RADIX=HEX;'"),
        ("mif", b"\t0 : 00000000;\n\t1 :", b"\t1 : 00000000;\n\t0 :", r"line 10: b'\\t1 : 00000000;' is not a word"),
        ("mif", b"\t0 : 00000000;\n\t1 : 3f800000;", b"\t[0..1] : 00000000;", "is not a word line"),
        ("mif", b"\tb : 41300000;\nEND;\n", b"\tb : 41300000;\n", "line 22: expected 'END;'.*the end of the file"),
        ("mif", b"END;\n", b"END;\n\n", "text after the end of the words"),
        ("coe", b"memory_initialization_radix=16;", b"memory_initialization_radix=10;", "expected 'memory_init"),
        ("coe", b"41300000;\n", b"41300000,\n", "holds more words than the 12"),
        ("coe", b"3f800000,\n", b"3f800000;\n", "the words end after 2 of the 12"),
        ("coe", b"41300000;\n", b"41300000;\nradix=16;\n", "text after the end of the words"),
        ("mem", b"3f800000\n", b"@0010\n3f800000\n", "address jumps"),
        ("mem", b"3f800000\n", b"3f8_0000\n", "does not hold 8 hex digits"),
        ("mem", b"3f800000\n", b"3f80000x\n", "does not hold 8 hex digits"),
        ("mem", b"3f800000\n", b"3f80000z\n", "does not hold 8 hex digits"),
        ("mem", b"3f800000\n", b"3F800000\n", None),
        ("mem", b"3f800000\n", b"3f8000000\n", "is not a word line as posenc writes them"),
        ("mem", b"3f800000\n", b" 3f80000\n", "does not hold 8 hex digits"),
        ("mem", b"3f800000\n", b"\n3f800000\n", "is not a word line"),
        ("mem", b"3f800000\n", b"/* */\n3f800000\n", "is not a word line"),
        ("mem", b"41300000\n", b"41300000\n41400000\n", "holds more words than the 12"),
        ("mem", b"41300000\n", b"", "ends after 11 of the 12 words"),
        ("mem", b"41300000\n", b"41300000\n// the end\n", "text after the end of the words"),
        ("mem", b"// posenc:", b"/* */\n// posenc:", "no .* metadata line"),
    ],
)
def test_the_loaders_name_the_line_they_refuse(fmt, old, new, message):
    data = sample(fmt)
    assert old in data
    changed = data.replace(old, new, 1)
    if message is None:  # upper-case digits are hex digits too
        assert load(fmt, changed).array.tolist() == load(fmt, data).array.tolist()
        return
    with pytest.raises(FormatError, match=message):
        load(fmt, changed)


@pytest.mark.parametrize("fmt", ROMS)
def test_word_lists_that_end_early_or_late_are_refused(fmt):
    def drop(lines, words):
        del lines[words[5]]

    def add(lines, words):
        lines.insert(words[-1] + 1, lines[words[-1]])

    with pytest.raises(FormatError, match=r"ends after 11 of the 12|words end after 1[01] of the 12|line 1[56]"):
        load(fmt, edit(fmt, drop))
    with pytest.raises(FormatError, match="more words than the 12|line 23"):
        load(fmt, edit(fmt, add))


@pytest.mark.parametrize("fmt", ROMS)
def test_comment_lines_are_bounded_and_ascii(fmt):
    leader = {"mem": b"//", "coe": b";", "mif": b"--"}[fmt]
    data = sample(fmt)
    with pytest.raises(FormatError, match=f"line 1 is longer than the {_rom_meta.MAX_LINE} bytes"):
        load(fmt, leader + b"x" * (_rom_meta.MAX_LINE + 1 - len(leader)) + b"\n" + data)
    assert load(fmt, leader + b"x" * (_rom_meta.MAX_LINE - len(leader)) + b"\n" + data).array.shape == (3, 4)
    with pytest.raises(FormatError, match="more than the 64 comment lines"):
        load(fmt, (leader + b" x\n") * 65 + data)
    with pytest.raises(FormatError, match="line 1 is not printable ASCII"):
        load(fmt, leader + b" caf\xc3\xa9\n" + data)
    with pytest.raises(FormatError, match="second posenc metadata line"):
        load(fmt, data.replace(b"\n" + leader + b" posenc:", b"\n" + leader + b" posenc: {}\n" + leader + b" posenc:"))
    with pytest.raises(FormatError, match="not valid UTF-8 JSON"):
        load(fmt, data.replace(b' posenc: {"element"', b' posenc: {element"'))
    with pytest.raises(FormatError, match="nests deeper"):
        load(fmt, tamper(data, params={"a": 1}).replace(b'{"a": 1}', b'{"a": ' + b"[" * 40 + b"]" * 40 + b"}"))
    with pytest.raises(FormatError, match="ends inside its comments"):
        load(fmt, leader + b" x")


HOSTILE_KEY = 'x\n3f800000\n// */ /* % ; -- END;\r\u2028\x00"\\'
HOSTILE_TEXT = "a\nb */ %c% ;d -- e\u00e9\U0001f600\\"


@pytest.mark.client
@pytest.mark.parametrize("fmt", ROMS)
def test_hostile_text_stays_inside_its_comments(tmp_path, fmt):
    values = np.array([[1.0, -2.5], [0.0, 3.0]], np.float32)
    table = Table("array", {HOSTILE_KEY: values}, {"note": HOSTILE_TEXT, "dtype": "float32"})
    fp = io.BytesIO()
    options = WriteOptions(filename=f"p\n3f800000\n*/%;.{fmt}", command=f"posenc {HOSTILE_TEXT}")
    getattr(rom, f"dump_{fmt}")(table, fp, options)
    data = fp.getvalue()
    assert data.isascii() and b"\r" not in data and b"\x00" not in data
    leader = {"mem": b"//", "coe": b";", "mif": b"--"}[fmt]
    comments = [line for line in data.split(b"\n") if line.startswith(leader)]
    assert len(comments) == 5
    for line in comments:  # what would end a comment or a statement in one of the three formats is escaped
        assert not re.search(rb"\*/|%|;d|END;", line), line
    path = tmp_path / f"h.{fmt}"
    path.write_bytes(data)
    assert rom_words(path)[1] == [0x3F800000, 0xC0200000, 0, 0x40400000]
    if fmt == "mem":
        (words,) = readmemh(tmp_path, [("h.mem", 32, 4, False)])
        assert [int(w, 16) for w in words] == [0x3F800000, 0xC0200000, 0, 0x40400000]
    back = load(fmt, data)
    assert list(back.arrays) == [HOSTILE_KEY] and back.params["note"] == HOSTILE_TEXT
    assert back.array.tobytes() == values.tobytes()


def test_what_a_rom_cannot_hold_is_refused_on_writing(tmp_path):
    with pytest.raises(FormatError, match="at least one word"):
        rom.dump_mem(Table("array", {"pe": np.zeros((0, 4), np.float32)}), io.BytesIO(), WriteOptions())
    with pytest.raises(FormatError, match="integers and IEEE floats, not complex64"):
        rom.dump_coe(Table("array", {"pe": np.zeros((2, 2), np.complex64)}), io.BytesIO(), WriteOptions())
    with pytest.raises(SpecError, match="pick the part"):
        posenc_cli.save(posenc_cli.rope(4, 4), tmp_path / "r.mif")
    assert not (tmp_path / "r.mif").exists()


@pytest.mark.parametrize("fmt", ROMS)
def test_bare_arrays_of_any_width_and_shape_round_trip(fmt):
    arrays = [
        np.array(7, np.int64),
        np.arange(-3, 3, dtype=np.int8),
        np.array([[0, 65535]], np.uint16),
        np.array([[True, False]]),
        np.arange(24, dtype=np.float64).reshape(2, 3, 4) - 11.5,
        np.array([[-(2**63), 2**63 - 1]], np.int64),
    ]
    for array in arrays:
        back = load(fmt, sample(fmt, Table.from_array(array)))
        assert back.kind == "array" and dict(back.params) == {}
        assert back.array.dtype == array.dtype and back.array.shape == array.shape
        assert back.array.tobytes() == array.tobytes()


def test_the_registry_has_the_three_formats():
    for fmt in ROMS:
        assert FORMATS[fmt].single and FORMATS[fmt].text and FORMATS[fmt].load is not None
        assert posenc_cli.formats.infer(f"x.{fmt.upper()}").name == fmt


@pytest.mark.parametrize("fmt", ROMS)
def test_the_cli_refuses_a_bad_image_in_one_line(tmp_path, fmt):
    path = tmp_path / f"bad.{fmt}"
    path.write_bytes(HAND_WRITTEN[fmt])
    result = CliRunner().invoke(cli, ["inspect", str(path)])
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.exit_code == 1 and len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    assert "metadata line" in lines[0] and "Traceback" not in result.stderr
