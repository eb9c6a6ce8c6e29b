"""Reading posenc's C outputs back (posenc_cli.formats.c.reader): every variant round-trips bit for bit with its kind
and parameters, values are read exactly as a C compiler reads them, and anything posenc did not write is refused
with one clear line."""

from __future__ import annotations

import io
import re
import subprocess
from decimal import Decimal, localcontext
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import posenc_cli
from posenc_cli.errors import FormatError
from posenc_cli.formats import FORMATS
from posenc_cli.formats.c import comment as c_comment
from posenc_cli.formats.c import reader as c_read
from posenc_cli.formats.c import values as c_values
from posenc_cli.table import RowSource, Table

from .conftest import require_tool

TABLES = {
    "sin-f32": lambda: posenc_cli.generate(5, 7),
    "sin-f64": lambda: posenc_cli.generate(5, 6, dtype="float64", base=500.0),
    "sin-f16": lambda: posenc_cli.generate(5, 9, dtype="float16"),
    "sin-bf16": lambda: posenc_cli.generate(5, 6, dtype="bfloat16"),
    "sin-q15": lambda: posenc_cli.generate(5, 6, dtype="q15"),
    "sin-q7": lambda: posenc_cli.generate(5, 6, dtype="q7"),
    "sin-int8": lambda: posenc_cli.generate(  # -1 is past its codes: clipped, as asked
        5, 6, dtype="int8", scale=0.0078125, zero_point=-3, saturate=True
    ),
    "sin-fairseq": lambda: posenc_cli.generate(6, 8, preset="fairseq", start=0.5, amplitude=2.0),
    "sin-t2t": lambda: posenc_cli.generate(6, 5, preset="tensor2tensor", min_timescale=2.0),
    "rope": lambda: posenc_cli.rope(4, 8),
    "rope-yarn-bf16": lambda: posenc_cli.rope(
        4, 8, scaling="yarn", factor=4.0, original_max_positions=2, attention_scaling=False, dtype="bfloat16"
    ),
    "rope-longrope-d2": lambda: posenc_cli.rope(
        3, 2, scaling="longrope", short_factor=[1.0], long_factor=[2.0], original_max_positions=2, factor=2.0
    ),
    "rope-dynamic-f64": lambda: posenc_cli.rope(4, 8, scaling="dynamic", factor=2.0, max_positions=2, dtype="float64"),
    "alibi": lambda: posenc_cli.alibi(6, 5),
    "alibi-slopes": lambda: posenc_cli.alibi(12),
    "alibi-q7": lambda: posenc_cli.alibi(4, 3, dtype="q7"),
    "sincos2d": lambda: posenc_cli.sincos2d(2, 3, 8, cls_token=True),
    "sincos2d-f16": lambda: posenc_cli.sincos2d(3, 2, 8, dtype="float16"),
}
FLOAT_TABLES = [k for k in TABLES if not any(t in k for t in ("f16", "bf16", "q15", "q7", "int8"))]


def variants(key: str) -> list[tuple[str, dict[str, object]]]:
    """(suffix, save options) that posenc accepts for the table ``key``."""
    table = TABLES[key]()
    dtype = table.params["dtype"]
    out: list[tuple[str, dict[str, object]]] = [
        (".h", {}),
        (".c", {}),
        (".bin", {}),
        (".h", {"lang": "c++"}),
        (".h", {"lang": "c++", "namespace": "a::b", "align": 16}),
        (".c", {"align": 64}),
        (".h", {"align": 32}),
    ]
    if dtype != "float64":
        out += [(".h", {"progmem": True}), (".c", {"progmem": True}), (".bin", {"progmem": True})]
    if dtype in ("float32", "float64"):
        for literal in ("hex", "bits"):
            out += [(".h", {"float_literal": literal}), (".c", {"float_literal": literal})]
            out.append((".h", {"float_literal": literal, "lang": "c++", "namespace": "ns"}))
        out.append((".bin", {"float_literal": "bits"}))
    if dtype == "float16":
        out += [(".h", {"c_half_type": "_Float16"}), (".c", {"c_half_type": "__fp16"})]
        out += [(".h", {"c_half_type": "__fp16"})]
    return out


CASES = [(key, suffix, options) for key in TABLES for suffix, options in variants(key)]


def assert_same_table(back: Table, table: Table) -> None:
    assert back.kind == table.kind
    assert dict(back.params) == dict(table.params)
    assert {k: type(v) for k, v in back.params.items()} == {k: type(v) for k, v in table.params.items()}
    assert list(back.arrays) == list(table.arrays)
    for key, array in table.arrays.items():
        expected = np.asarray(array)
        got = back.arrays[key]
        assert isinstance(got, np.ndarray)
        assert got.dtype == expected.dtype and got.shape == expected.shape
        assert got.tobytes() == expected.tobytes(), key
        assert back.axes_of(key) == table.axes_of(key)


@pytest.mark.parametrize(("key", "suffix", "options"), CASES, ids=[f"{k}{s}-{o}" for k, s, o in CASES])
def test_every_variant_round_trips(tmp_path, key, suffix, options):
    table = TABLES[key]()
    path = tmp_path / f"table{suffix}"
    posenc_cli.save(table, path, command="posenc test --x 'a: b' kind: fake", **options)
    assert_same_table(posenc_cli.load(path), table)


@pytest.mark.parametrize("suffix", [".h", ".c", ".bin"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_arbitrary_bit_patterns_round_trip(tmp_path, suffix, dtype):
    rng = np.random.default_rng(7)
    width = np.dtype(dtype).itemsize
    bits = rng.integers(0, 2 ** (8 * width) - 1, size=(40, 13), dtype=f"u{width}", endpoint=True)
    values = bits.view(dtype).copy()
    values[~np.isfinite(values)] = -0.0
    info = np.finfo(dtype)
    values.flat[:6] = [info.max, -info.max, info.tiny, info.smallest_subnormal, -0.0, 0.0]
    posenc_cli.save(values, tmp_path / f"a{suffix}")
    back = posenc_cli.load(tmp_path / f"a{suffix}")
    assert back.kind == "array" and back.array.dtype == values.dtype
    assert back.array.tobytes() == values.tobytes()


def test_parts_and_names(tmp_path):
    rope = posenc_cli.rope(3, 4)
    posenc_cli.save(rope, tmp_path / "c.h", part="inv_freq")
    assert list(posenc_cli.load(tmp_path / "c.h").arrays) == ["inv_freq"]
    posenc_cli.save(rope, tmp_path / "c.h", part="cos")
    assert list(posenc_cli.load(tmp_path / "c.h").arrays) == ["pe"]  # the file does not say which part
    # A .c has no include guard: the name comes from the symbols and the size constants.
    posenc_cli.save(rope, tmp_path / "pe_x.c", name="pe_inv")
    assert list(posenc_cli.load(tmp_path / "pe_x.c").arrays) == ["cos", "sin", "inv_freq"]
    table = Table("array", {"pos_a": np.ones((2, 2), np.float32), "pos_b": np.zeros((2, 2), np.float32)})
    posenc_cli.save(table, tmp_path / "two.c")
    assert list(posenc_cli.load(tmp_path / "two.c").arrays) == ["pos_a", "pos_b"]


def test_large_tables_are_read_in_blocks(tmp_path, monkeypatch):
    monkeypatch.setattr(c_values, "CHUNK", 4096)  # many blocks, and rows longer than one block
    for table in (posenc_cli.generate(700, 24), posenc_cli.generate(3, 3000, dtype="float64")):
        for suffix in (".h", ".c"):
            posenc_cli.save(table, tmp_path / f"big{suffix}")
            assert_same_table(posenc_cli.load(tmp_path / f"big{suffix}"), table)


def test_parameter_types_come_back():
    assert c_comment.param("seq_len", "12") == 12
    assert c_comment.param("base", "10000.0") == 10000.0 and isinstance(c_comment.param("base", "1e+16"), float)
    assert c_comment.param("cls_token", "False") is False
    assert c_comment.param("padding_idx", "007") == "007"  # str(7) is not the text: it stays text
    assert c_comment.param("base", "1.50") == "1.50"
    assert c_comment.param("short_factor", "1.0") == "1.0"  # text by definition
    assert c_comment.param("layout", "[sin x | cos x | sin y | cos y], rows y * width + x").startswith("[sin")


# ------------------------------------------------------------------------------------ exact literal reading
def header_with(literals: list[str]) -> bytes:
    """A posenc float32 header of one row holding ``literals`` (hand-edited values, as a user might)."""
    from posenc_cli.formats.c.writer import dump_header_only
    from posenc_cli.formats.options import WriteOptions

    buf = io.BytesIO()
    dump_header_only(posenc_cli.generate(1, len(literals)), buf, WriteOptions(name="pe"))
    text = re.sub(
        r"\{\n    \{.*\},\n\};", "{\n    {" + ", ".join(literals) + "},\n};", buf.getvalue().decode(), flags=re.S
    )
    assert "static const float pe[" in text and literals[0] in text
    return text.encode()


def halfway_literals() -> tuple[list[str], list[int]]:
    """float literals whose float64 rounding lies exactly half-way between two float32s, and their float32 bits."""
    with localcontext() as ctx:
        ctx.prec = 80
        mid_even = 1 + Decimal(2) ** -24  # between 1 (even) and 1 + 2**-23 (odd)
        mid_odd = 1 + 3 * Decimal(2) ** -24  # between 1 + 2**-23 (odd) and 1 + 2**-22 (even)
        tiny = Decimal(2) ** -70  # far below float64's half-spacing at 1 (2**-53)
        decimals = [mid_even + tiny, mid_even - tiny, mid_even, mid_odd - tiny, mid_odd, -(mid_odd - tiny)]
    exact = [Fraction(x) for x in decimals]
    texts = [f"{x:f}f" for x in decimals]
    # Hex floats with more digits than float64 holds: 1 + 2**-24 + 2**-76 rounds to the midpoint 1 + 2**-24.
    texts += ["0x1.0000010000000000001p+0f", "0x1.000001p+0f", "-0x1.0000010000000000001p+0f"]
    above = 1 + Fraction(1, 2**24) + Fraction(1, 2**76)
    exact += [above, 1 + Fraction(1, 2**24), -above]
    return texts, [nearest_float32_bits(x) for x in exact]


def nearest_float32_bits(value: Fraction) -> int:
    """Bits of the float32 nearest to ``value`` (normal range), ties to even, by exact arithmetic."""
    sign = 0x80000000 if value < 0 else 0
    value = abs(value)
    exponent = 0
    while value >= 2:
        value, exponent = value / 2, exponent + 1
    while value < 1:
        value, exponent = value * 2, exponent - 1
    scaled = value * 2**23
    low = int(scaled)
    rest = scaled - low
    mantissa = low + (1 if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and low % 2) else 0)
    if mantissa == 2**24:
        mantissa, exponent = 2**23, exponent + 1
    return sign | ((exponent + 127) << 23) | (mantissa - 2**23)


def read_literals(literals: list[str], ctype: str = "float", name: str = "float32") -> np.ndarray:
    """The values c_read gives hand-written literals (the value layer: whole files with them are refused)."""
    return c_values.convert(", ".join(literals).encode(), ctype, name)


def test_halfway_literals_are_rounded_from_their_digits():
    literals, expected = halfway_literals()
    assert len(literals) == len(expected)
    assert read_literals(literals).view(np.uint32).ravel().tolist() == expected
    # The naive path (float64, then float32) gets some of these wrong: the test would catch a regression to it.
    naive = np.array(
        [float(Fraction(x.rstrip("f"))) if "x" not in x else float.fromhex(x.rstrip("f")) for x in literals]
    )
    assert naive.astype(np.float32).view(np.uint32).tolist() != expected
    # A file holding them is not one posenc wrote (posenc writes the shortest literals): refused, naming the line.
    refuse(header_with(literals), "a C file posenc did not write: line")


@pytest.mark.client
def test_halfway_literals_match_a_c_compiler(tmp_path):
    gcc = require_tool("gcc")
    literals, _ = halfway_literals()
    (tmp_path / "pe.h").write_bytes(header_with(literals))
    program = tmp_path / "dump.c"
    program.write_text(
        '#include <stdio.h>\n#include "pe.h"\nint main(void) {\n'
        "    const unsigned char *p = (const unsigned char *)&pe[0][0];\n    unsigned long k;\n"
        '    for (k = 0; k < sizeof(pe); k++) printf("%02x", p[k]);\n    return 0;\n}\n'
    )
    exe = tmp_path / "dump"
    subprocess.run([gcc, "-std=c99", "-o", str(exe), str(program)], check=True, cwd=tmp_path)
    printed = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    assert bytes.fromhex(printed) == read_literals(literals).tobytes()


def test_half_literals_are_floats_converted_to_binary16():
    # 1 + 2**-11 is half-way between the binary16s 1 and 1 + 2**-10. The literal 1.0004882819205523f is 2**-30
    # above it; as a float it rounds to 1 + 2**-11 exactly, which converts to binary16 1.0 (ties to even). That is
    # C's answer (the literal is a float); rounding the decimal straight to binary16 would give 1 + 2**-10.
    back = read_literals(["1.00048828125f", "1.0004882819205523f"], "_Float16", "float16")
    assert back.dtype == np.float16
    assert back.view(np.uint16).ravel().tolist() == [0x3C00, 0x3C00]
    assert np.float16(1.0004882819205523).view(np.uint16) == 0x3C01


# ------------------------------------------------------------------------------------------- hostile input
def posenc_header(table: Table | None = None, **options: object) -> bytes:
    from posenc_cli.formats.c.writer import dump_header_only
    from posenc_cli.formats.options import WriteOptions

    buf = io.BytesIO()
    dump_header_only(table or posenc_cli.generate(3, 4), buf, WriteOptions(name="pe", **options))  # type: ignore[arg-type]
    return buf.getvalue()


def refuse(data: bytes, match: str | None = None) -> FormatError:
    with pytest.raises(FormatError, match=match) as err:
        c_read.load(io.BytesIO(data))
    assert "\n" not in str(err.value)
    return err.value


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (b"", "a C file posenc did not write"),
        (b"#include <stdio.h>\nstatic const float pe[2] = {1.0f, 2.0f};\n", "a C file posenc did not write"),
        (b"/*\n * Copyright 2024 ACME.\n */\nstatic const float pe[1] = {1.0f};\n", "a C file posenc did not write"),
        (bytes(range(256)) * 4, "a C file posenc did not write"),
        (b"\x93NUMPY\x01\x00v\x00{'descr': '<f4'", "a C file posenc did not write"),
        (b"/*\n * pe.h: positional-encoding table generated by posenc 1. Do not edit.\n", "never ends"),
        (b"/*" + b"x" * 100_000, "a C file posenc did not write|longer than"),
    ],
)
def test_files_posenc_did_not_write_are_refused(data, match):
    refuse(data, match)


def test_every_truncation_is_refused():
    for data in (posenc_header(), posenc_header(posenc_cli.rope(2, 4), lang="c++", namespace="a")):
        for cut in range(0, len(data), 3):
            refuse(data[:cut])
        refuse(data[:-1], "never closed")


def test_truncated_c_source_is_refused(tmp_path):
    posenc_cli.save(posenc_cli.rope(3, 4), tmp_path / "r.c")
    data = (tmp_path / "r.c").read_bytes()
    last = data.rindex(b"};")
    for cut in range(0, last, 5):
        refuse(data[:cut])


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (lambda t: t.replace(b"0.0f, 1.0f, ", b"0.0f, ", 1), "rows of 4 float values"),
        (lambda t: t.replace(b"0.0f, 1.0f, ", b"0.0f, 1.0f, 1.0f, ", 1), "rows of 4 float values"),
        (lambda t: t.replace(b"1.0f", b"1.0", 1), "rows of 4 float values"),
        (lambda t: t.replace(b"1.0f", b"one", 1), "rows of 4 float values"),
        (lambda t: t.replace(b"1.0f", b"1e39f", 1), "out of the range"),
        (lambda t: t.replace(b"},\n};", b"},\n    {0.0f, 1.0f, 0.0f, 1.0f},\n};"), "more than the 3 rows"),
        (lambda t: re.sub(rb"\n    \{[^\n]*\},\n\};", b"\n};", t), "holds 2 rows, the comment gives 3"),
        (lambda t: t.replace(b"shape: 3 x 4", b"shape: 3 x 5"), "rows of 5 float values"),
        (lambda t: t.replace(b"shape: 3 x 4", b"shape: 300000000 x 400000"), "truncated file: the comment promises"),
        (lambda t: t.replace(b"dtype: float32", b"dtype: float64"), "dtype float64 but the arrays are float"),
        (lambda t: t.replace(b"  kind: sinusoidal\n", b""), "names no kind"),
        (lambda t: t.replace(b"shape: 3 x 4", b"shapes: 3 x 4"), "gives no shape"),
        (lambda t: t.replace(b"#define PE_D_MODEL 4", b"#define PE_D_MODEL 5"), "PE_D_MODEL is 5"),
        (lambda t: t.replace(b"};", b"}"), "longer than its values|truncated"),
        (lambda t: t.replace(b"static const float pe[", b"static const float pe_table["), "not named after"),
    ],
)
def test_edited_files_are_refused(edit, match):
    data = posenc_header()
    edited = edit(data)
    assert edited != data
    refuse(edited, match)


def test_integers_out_of_range_are_refused():
    data = posenc_header(posenc_cli.generate(2, 3, dtype="q7"))
    refuse(re.sub(rb"\{0, 127, 0\}", b"{0, 128, 0}", data), r"q7 value is outside \[-128, 127\]")


def test_declarations_alone_name_the_file_with_the_values(tmp_path):
    posenc_cli.save(posenc_cli.rope(2, 4), tmp_path / "r.c")
    posenc_cli.save(posenc_cli.alibi(3, 2), tmp_path / "al.bin")
    with pytest.raises(FormatError, match=r"'.*r\.h': this is the declarations header of a \.c/\.h pair: .* read r\.c"):
        posenc_cli.load(tmp_path / "r.h")
    with pytest.raises(FormatError, match=r"only declares the arrays; their values are in al\.bin \(format bin\)"):
        posenc_cli.load(tmp_path / "al.h")


def test_bin_alone_is_raw_bytes_and_is_checked_against_its_header(tmp_path):
    table = posenc_cli.alibi(3, 2)
    posenc_cli.save(table, tmp_path / "al.bin")
    raw = (tmp_path / "al.bin").read_bytes()
    assert len(raw) == 16 + 32  # 12 bytes of slopes padded to 16, then 24 of bias padded to 32
    header = (tmp_path / "al.h").read_bytes()
    (tmp_path / "al.h").unlink()
    alone = posenc_cli.load(tmp_path / "al.bin")
    assert alone.kind == "array" and alone.array.dtype == np.uint8 and alone.array.tobytes() == raw
    (tmp_path / "al.h").write_bytes(header)
    assert_same_table(posenc_cli.load(tmp_path / "al.bin"), table)
    (tmp_path / "al.bin").write_bytes(raw[:-8])
    with pytest.raises(
        FormatError, match=r"a torn pair: al\.bin and al\.h .* \(al\.bin holds 40 bytes, al\.h describes 48\)"
    ):
        posenc_cli.load(tmp_path / "al.bin")
    (tmp_path / "al.bin").write_bytes(raw[:20])
    with pytest.raises(FormatError, match="al.bin holds 20 bytes, al.h describes 48"):
        posenc_cli.load(tmp_path / "al.bin")
    (tmp_path / "al.bin").write_bytes(raw)
    posenc_cli.save(table, tmp_path / "other.c")
    (tmp_path / "al.h").write_bytes((tmp_path / "other.h").read_bytes())
    with pytest.raises(FormatError, match="not the .h of a .bin"):
        posenc_cli.load(tmp_path / "al.bin")
    (tmp_path / "al.h").write_bytes(header.replace(b'\\"al.bin\\", 16, 24', b'\\"al.bin\\", 12, 24'))
    with pytest.raises(FormatError, match="al_bias is at 12, 24 bytes; its shape puts it at 16, 24"):
        posenc_cli.load(tmp_path / "al.bin")


def test_registry_reads_every_c_format():
    assert {name for name in ("h", "c", "bin") if FORMATS[name].load is not None} == {"h", "c", "bin"}
    bin_companion = FORMATS["bin"].companion
    assert bin_companion is not None and bin_companion.load is not None


def test_api_load_names_the_file(tmp_path):
    path = Path(tmp_path / "x.h")
    path.write_text("#pragma once\n")
    with pytest.raises(FormatError, match=r"'.*x\.h': a C file posenc did not write"):
        posenc_cli.load(path)


# ----------------------------------------------------------------------------- strictness: only posenc's bytes
def c_files(tmp_path: Path, key: str, suffix: str, options: dict[str, object]) -> list[Path]:
    paths = posenc_cli.save(TABLES[key](), tmp_path / f"t{suffix}", **options)
    return [p for p in paths if p.suffix in (".h", ".c")]


EDITS = {
    "extra line": lambda data: data.replace(b" */\n\n", b" */\n\n#define EXTRA 1\n", 1),
    "extra byte": lambda data: data + b"\n",
    "blank before the end": lambda data: data[: data.rindex(b"#endif")] + b"\n" + data[data.rindex(b"#endif") :],
}


@pytest.mark.parametrize(("key", "suffix", "options"), CASES, ids=[f"{k}{s}-{o}" for k, s, o in CASES])
def test_every_variant_refuses_any_byte_posenc_did_not_write(tmp_path, key, suffix, options):
    for path in c_files(tmp_path, key, suffix, options):
        data = path.read_bytes()
        for name, edit in EDITS.items():
            path.write_bytes(edit(data))
            with pytest.raises(FormatError, match="a C file posenc did not write") as err:
                posenc_cli.load(tmp_path / f"t{suffix}")
            assert "\n" not in str(err.value), name
        path.write_bytes(data)
    posenc_cli.load(tmp_path / f"t{suffix}")


def test_a_refusal_names_the_first_line_that_differs():
    data = posenc_header().replace(b"#define PE_D_MODEL 4\n", b"#define PE_D_MODEL 4 /* ok */\n")
    line = data[: data.index(b"PE_D_MODEL 4 /*")].count(b"\n") + 1
    refuse(data, rf"line {line} is '#define PE_D_MODEL 4 /\* ok \*/', where posenc writes '#define PE_D_MODEL 4'")
    refuse(posenc_header() + b"int x;\n", r"goes on after line \d+, where posenc's file ends")
    version = f"generated by posenc {posenc_cli.__version__}.".encode()
    older = posenc_header().replace(version, b"generated by posenc 0.0.1-old.").replace(b"\n#define", b"\n\n#define", 1)
    refuse(older, r"names posenc 0\.0\.1-old; this is .*: write it again")


def test_c_files_are_read_from_seekable_files_only():
    class Pipe(io.BytesIO):
        def seekable(self) -> bool:
            return False

    with pytest.raises(FormatError, match="seek"):
        c_read.load(Pipe(posenc_header()))


def test_reading_claims_the_memory_budget_first():
    from posenc_cli.formats.limits import Budget

    data = posenc_header(posenc_cli.generate(64, 64))  # 16 KiB of float32
    with pytest.raises(FormatError, match="array pe needs 16.0 KiB of memory"):
        c_read.load(io.BytesIO(data), Budget(8192))
    budget = Budget(1 << 20)
    c_read.load(io.BytesIO(data), budget)
    assert budget.taken == 64 * 64 * 4
    with pytest.raises(FormatError, match="the .bin needs"):
        c_read.load_raw(io.BytesIO(bytes(4096)), Budget(1024))


# --------------------------------------------------------------------------------------------- table identity
def identity_of(path: Path) -> str:
    match = re.search(r"^#define \w+_TABLE_ID (0x[0-9A-F]{16})$", path.read_text(), re.M)
    assert match is not None
    return match[1]


def test_the_identity_is_the_same_for_the_same_values_however_they_are_held(tmp_path):
    generated = posenc_cli.generate(3000, 16, lazy=True)  # rows computed on demand, as the CLI writes them
    held = Table(generated.kind, {"pe": np.asarray(generated.array)}, generated.params)
    assert isinstance(generated.array, RowSource)
    posenc_cli.save(generated, tmp_path / "a.c", name="pe")
    posenc_cli.save(held, tmp_path / "b.c", name="pe")
    posenc_cli.save(generated, tmp_path / "c.bin", name="pe")
    assert identity_of(tmp_path / "a.h") == identity_of(tmp_path / "b.h") == identity_of(tmp_path / "c.h")
    # The .h alone (no .c written before it in the same save) computes the same identity.
    from posenc_cli.formats.c.writer import dump_declarations
    from posenc_cli.formats.options import WriteOptions

    buf = io.BytesIO()
    dump_declarations(posenc_cli.generate(3000, 16, lazy=True), buf, WriteOptions(name="pe"))
    assert f"#define PE_TABLE_ID {identity_of(tmp_path / 'a.h')}\n" in buf.getvalue().decode()


@pytest.mark.parametrize(
    "change",
    [
        {"table": posenc_cli.generate(8, 4, base=500.0)},
        {"table": posenc_cli.generate(8, 4, dtype="float64")},
        {"align": 16},
        {"progmem": True},
        {"float_literal": "hex"},
        {"name": "other"},
    ],
    ids=["values", "dtype", "align", "progmem", "literals", "name"],
)
def test_the_identity_covers_values_and_options(tmp_path, change):
    posenc_cli.save(posenc_cli.generate(8, 4), tmp_path / "a.c", name="pe")
    options = {"name": "pe", **{k: v for k, v in change.items() if k != "table"}}
    posenc_cli.save(change.get("table", posenc_cli.generate(8, 4)), tmp_path / "b.c", **options)
    assert identity_of(tmp_path / "a.h") != identity_of(tmp_path / "b.h")


def test_an_edited_value_in_a_c_file_is_read_as_the_compiler_reads_it(tmp_path):
    """An edited literal that posenc could have written is read as the compiler reads it (verify then finds it);
    the .h beside it still matches the .c's identity check, so the pair is not torn."""
    posenc_cli.save(posenc_cli.generate(3, 4), tmp_path / "pe.c")
    source = (tmp_path / "pe.c").read_text()
    (tmp_path / "pe.c").write_text(source.replace("0.84147096f", "0.5f"))
    assert float(np.asarray(posenc_cli.load(tmp_path / "pe.c").array)[1, 0]) == 0.5


# -------------------------------------------------------------------------------------------- comment escaping
@given(st.text(max_size=40))
def test_comment_escaping_is_safe_and_idempotent(text):
    from posenc_cli.formats.c.names import comment_line, comment_safe

    line = comment_line(text)
    assert line.isascii() or line.isprintable()
    assert "*/" not in line and "/*" not in line[1:] and "??" not in line and not line.endswith("\\")
    assert comment_line(line[3:]) == line if line.startswith(" * ") else line == " *"
    assert comment_safe(comment_safe(text)) == comment_safe(text)


def test_every_text_parameter_a_kind_records_is_read_back_as_text():
    """The C reader, below the registry, keeps its own list of the parameters that are text whatever they look like
    (a sha256 of digits alone would read as a 64-digit integer and be refused): it holds every text parameter of
    every kind's record."""
    from posenc_cli.formats.c.comment import TEXT_PARAMS
    from posenc_cli.kinds import KINDS
    from posenc_cli.params import TEXT

    recorded = {key for kind in KINDS.values() for key, kind_of in kind.recorded.items() if kind_of is TEXT}
    assert recorded <= TEXT_PARAMS, sorted(recorded - TEXT_PARAMS)
