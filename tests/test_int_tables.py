"""Plain integer tables (int8 without a scale, int16, int32, int64), tables of several element types, and 3-D and
4-D arrays, in every format posenc writes (issue: relative position indices).

The references are independent of posenc's spelling: real compilers build and run programs that print every value
(``%lld`` for integers, C99's exact ``%a`` for floats), numpy and safetensors' own readers read the binary files,
h5dump reads the ``.h5``. Tables are built with :class:`~posenc_cli.table.Table` directly, as the kinds that make
them will.
"""

from __future__ import annotations

import functools
import io
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from safetensors.numpy import load_file

import posenc_cli
from posenc_cli.cli import cli
from posenc_cli.errors import FormatError, SpecError
from posenc_cli.formats import WriteOptions
from posenc_cli.formats import csvfile as csv_format
from posenc_cli.formats.c import reader as c_read
from posenc_cli.formats.c.writer import dump_header_only
from posenc_cli.formats.limits import Budget
from posenc_cli.formats.text.spell import element_name, is_affine
from posenc_cli.table import Table

from .conftest import require_tool

INTS = ("int8", "int16", "int32", "int64")
WARNINGS = ["-Wall", "-Wextra", "-Werror", "-pedantic"]


def int_table(dtype: str) -> Table:
    """A 3 x 7 index table of ``dtype`` holding its minimum and maximum, negatives, and (int64) the values around
    the 32-bit boundaries and past float64's integers."""
    info = np.iinfo(dtype)
    special = [info.min, info.max, info.min + 1, info.max - 1, -1, 0, 1]
    if dtype == "int64":
        special += [-(2**31), 2**31, -(2**31) + 1, 2**31 - 1, 2**53 + 1, -(2**53) - 1, -(2**32)]
    rng = np.random.default_rng(len(dtype))
    values = special + rng.integers(info.min, info.max, 21 - len(special), dtype=dtype, endpoint=True).tolist()
    index = np.array(values, dtype).reshape(3, 7)
    params = {"scheme": "t5", "query_length": 3, "key_length": 7, "dtype": dtype}
    return Table("relative", {"index": index}, params, {"index": ("query", "key")})


def mixed_table() -> Table:
    """A relative table: int16 ``index`` (5 x 6) and the float32 ``bias`` (3 heads x 5 x 6) gathered for it, with
    -0.0, a subnormal, float32's largest value and negatives."""
    index = (np.arange(30, dtype=np.int16) - 15).reshape(5, 6)
    bias = np.random.default_rng(3).normal(size=(3, 5, 6)).astype(np.float32)
    bias[0, 0, :3] = [-0.0, np.float32(1e-45), np.finfo(np.float32).max]
    params = {"scheme": "t5", "query_length": 5, "key_length": 6, "heads": 3, "dtype": "int16"}
    axes = {"index": ("query", "key"), "bias": ("heads", "query", "key")}
    return Table("relative", {"index": index, "bias": bias}, params, axes)


def window_table() -> Table:
    """A window table: int16 ``index`` (4 x 4, both axes the window's area) and float32 ``coords`` (3 x 3 x 2)."""
    index = np.array([[3, 2, 1, 0], [4, 3, 2, 1], [5, 4, 3, 2], [8, 5, 4, 3]], np.int16)
    grid = np.arange(-1, 2, dtype=np.float32)
    coords = np.stack(np.meshgrid(grid, grid, indexing="ij"), axis=-1) / np.float32(3)
    params = {"scheme": "swin", "window_height": 2, "window_width": 2, "dtype": "int16"}
    axes = {"index": ("area", "area"), "coords": ("rows", "cols", "pair")}
    return Table("window", {"index": index, "coords": coords}, params, axes)


def deep_table() -> Table:
    """A 4-D float64 array and a 3-D int64 one, in a table without a dtype parameter (each its own type)."""
    x = (np.arange(2 * 3 * 2 * 4, dtype=np.float64) - 20.5).reshape(2, 3, 2, 4) / 7
    n = np.array([-(2**63), 2**63 - 1, -(2**31), 2**31, 5, -5, 0, 7, 9, 11, 13, -1], np.int64).reshape(2, 2, 3)
    return Table("array", {"x": x, "n": n}, {}, {"x": ("a", "b", "c", "d"), "n": ("p", "q", "r")})


TABLES = {dtype: functools.partial(int_table, dtype) for dtype in INTS}
TABLES |= {"mixed": mixed_table, "window": window_table, "deep": deep_table}


# -------------------------------------------------------------------------------------------- element types
def test_each_array_has_its_own_element_type():
    mixed = mixed_table()
    assert (element_name(mixed, "index"), element_name(mixed, "bias")) == ("int16", "float32")
    assert [element_name(deep_table(), key) for key in ("x", "n")] == ["float64", "int64"]
    # int8: affine with a scale, plain without; the storage decides whether the dtype parameter applies at all.
    codes = Table("alibi", {"bias": np.zeros((2, 2), np.int8)}, {"dtype": "int8", "scale": 0.5, "zero_point": 0})
    assert element_name(codes, "bias") == "int8" and is_affine(codes.params)
    assert element_name(int_table("int8"), "index") == "int8" and not is_affine(int_table("int8").params)
    assert element_name(Table("x", {"a": np.zeros(2, np.float32)}, {"dtype": "q15"}), "a") == "float32"


def test_existing_tables_keep_one_element_type():
    for table in (posenc_cli.rope(4, 4, dtype="bfloat16"), posenc_cli.alibi(3, 4, dtype="q7")):
        assert {element_name(table, key) for key in table.arrays} == {table.params["dtype"]}


# ------------------------------------------------------------------------------------------- real compilers
#: (id, compiler, language, standard, output suffix, save options, extra compiler flags)
BUILDS = [
    ("h-gcc", "gcc", "c", "c99", ".h", {}, []),
    ("h-clang", "clang", "c", "c99", ".h", {}, []),
    ("hpp-g++11-ns", "g++", "c++", "c++11", ".hpp", {"namespace": "pe"}, []),
    ("hpp-clang++17", "clang++", "c++", "c++17", ".hpp", {}, []),
    ("c-pair-gcc", "gcc", "c", "c99", ".c", {}, []),
    ("cpp-pair-g++11-ns", "g++", "c++", "c++11", ".cpp", {"namespace": "pe"}, []),
    ("bin-gcc", "gcc", "c", "c99", ".bin", {}, []),
]


def symbols(table: Table, name: str) -> dict[str, str]:
    keys = list(table.arrays)
    return {keys[0]: name} if len(keys) == 1 else {key: f"{name}_{key}" for key in keys}


def c_type(array: np.ndarray) -> str:
    return {"f4": "float", "f8": "double"}.get(array.dtype.str[1:], f"{array.dtype.name}_t")


def printing_program(table: Table, header: str, qualifier: str, incbin: bool) -> str:
    """A program that prints every size macro, every array's sizeof and every value (integers exactly with
    %lld, floats exactly with %a)."""
    lines = [
        "#include <stdio.h>",
        *(["#define T_INCBIN"] if incbin else []),
        f'#include "{header}"',
        "int main(void)",
        "{",
        "    unsigned long k;",
    ]
    macros = dict.fromkeys(f"T_{axis.upper()}" for key in table.arrays for axis in table.axes_of(key))
    for macro in macros:
        lines.append(f'    printf("macro {macro} %lu\\n", (unsigned long){qualifier}{macro});')
    for key, symbol in symbols(table, "t").items():
        array, full = table.arrays[key], f"{qualifier}{symbol}"
        ctype = c_type(np.asarray(array))
        lines.append(f'    printf("sizeof {symbol} %lu\\n", (unsigned long)sizeof({full}));')
        value = f"((const {ctype} *){full})[k]"
        shown = (
            f'"value {symbol} %a\\n", (double){value}'
            if ctype in ("float", "double")
            else (f'"value {symbol} %lld\\n", (long long){value}')
        )
        lines.append(f"    for (k = 0; k < (unsigned long)(sizeof({full}) / sizeof({ctype})); k++) {{")
        lines.append(f"        printf({shown});")
        lines.append("    }")
    lines += ["    return 0;", "}", ""]
    return "\n".join(lines)


def parse_printout(text: str, table: Table) -> None:
    """Compare the program's printout with the table: every macro, sizeof and value, exactly."""
    seen_macros: dict[str, int] = {}
    seen: dict[str, list[str]] = {}
    sizes: dict[str, int] = {}
    for line in text.splitlines():
        what, name, value = line.split(" ")
        if what == "macro":
            seen_macros[name] = int(value)
        elif what == "sizeof":
            sizes[name] = int(value)
        else:
            seen.setdefault(name, []).append(value)
    expected_macros = {
        f"T_{axis.upper()}": size
        for key, array in table.arrays.items()
        for axis, size in zip(table.axes_of(key), array.shape, strict=True)
    }
    assert seen_macros == expected_macros
    for key, symbol in symbols(table, "t").items():
        array = np.asarray(table.arrays[key])
        assert sizes[symbol] == array.nbytes, key
        if array.dtype.kind == "f":
            got = np.array([float.fromhex(v) for v in seen[symbol]], np.float64).astype(array.dtype)
            assert got.tobytes() == array.reshape(-1).tobytes(), key  # bit for bit: -0.0 and subnormals too
        else:
            assert [int(v) for v in seen[symbol]] == array.reshape(-1).tolist(), key


def build_and_run(tmp_path: Path, table: Table, build: tuple) -> str:
    _, compiler, lang, std, suffix, options, flags = build
    out = tmp_path / f"t{suffix}"
    posenc_cli.save(table, out, name="t", **options)
    header = {".h": "t.h", ".hpp": "t.hpp", ".c": "t.h", ".cpp": "t.hpp", ".bin": "t.h"}[suffix]
    qualifier = "pe::" if options.get("namespace") else ""
    main = tmp_path / f"main.{'cpp' if lang == 'c++' else 'c'}"
    main.write_text(printing_program(table, header, qualifier, incbin=suffix == ".bin"))
    sources = [str(main)] + ([str(out)] if suffix in (".c", ".cpp") else [])
    exe = tmp_path / "prog"
    command = [require_tool(compiler), f"-std={std}", *WARNINGS, *flags, "-I", str(tmp_path), f"-Wa,-I{tmp_path}"]
    built = subprocess.run([*command, *sources, "-o", str(exe)], capture_output=True, text=True)
    assert built.returncode == 0, f"{' '.join(command)}\n{built.stderr}"
    return subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout


@pytest.mark.client
@pytest.mark.parametrize("build", BUILDS, ids=[b[0] for b in BUILDS])
@pytest.mark.parametrize("key", list(TABLES))
def test_compiled_tables_hold_every_value_exactly(tmp_path, key, build):
    table = TABLES[key]()
    parse_printout(build_and_run(tmp_path, table, build), table)


def arm_build(tmp_path: Path, source: Path, std: str) -> subprocess.CompletedProcess[str]:
    compiler = require_tool("arm-none-eabi-gcc")
    command = [compiler, "-mcpu=cortex-m4", "-mthumb", f"-std={std}", *WARNINGS, "-c", str(source)]
    return subprocess.run([*command, "-o", str(tmp_path / "t.o")], capture_output=True, text=True)


@pytest.mark.client
@pytest.mark.parametrize("key", ["int8", "int16", "int32", "int64", "deep"])
def test_integer_literals_compile_warning_free_for_a_32_bit_target(tmp_path, key):
    """Cortex-M: ``long`` is 32 bits, so INT32_MIN cannot be a literal (in C89 2147483648 is unsigned long) and an
    int64 literal past 32 bits needs INT64_C; int8 to int32 tables compile as C89 too, int64 ones need C99."""
    posenc_cli.save(TABLES[key](), tmp_path / "t.c", name="t")
    for std in ("c99", "c11") if key in ("int64", "deep") else ("c89", "c99", "c11"):
        built = arm_build(tmp_path, tmp_path / "t.c", std)
        assert built.returncode == 0, built.stderr


@pytest.mark.client
def test_the_naive_int32_minimum_is_what_a_c89_compiler_refuses(tmp_path):
    posenc_cli.save(int_table("int32"), tmp_path / "t.c", name="t")
    naive = tmp_path / "naive.c"
    naive.write_text((tmp_path / "t.c").read_text().replace("(-2147483647 - 1)", "-2147483648"))
    built = arm_build(tmp_path, naive, "c89")
    assert built.returncode != 0 and "unsigned only in ISO C90" in built.stderr


@pytest.mark.client
@pytest.mark.parametrize("key", ["mixed", "window", "deep"])
def test_hex_float_literals_beside_integers_compile(tmp_path, key):
    table = TABLES[key]()
    build = ("h-hex", "gcc", "c", "c99", ".h", {"float_literal": "hex"}, [])
    parse_printout(build_and_run(tmp_path, table, build), table)


def test_minima_and_wide_int64_values_are_spelled_portably(tmp_path):
    posenc_cli.save(int_table("int32"), tmp_path / "i32.h", name="t")
    posenc_cli.save(int_table("int64"), tmp_path / "i64.h", name="t")
    i32, i64 = (tmp_path / "i32.h").read_text(), (tmp_path / "i64.h").read_text()
    assert "\n    {(-2147483647 - 1), 2147483647, -2147483647, 2147483646, -1, 0, 1},\n" in i32
    assert "-2147483648" not in i32
    first, second = (
        "{(-INT64_C(9223372036854775807) - 1), INT64_C(9223372036854775807), -INT64_C(9223372036854775807), "
        "INT64_C(9223372036854775806), -1, 0, 1},",
        "{-INT64_C(2147483648), INT64_C(2147483648), -2147483647, 2147483647, INT64_C(9007199254740993), "
        "-INT64_C(9007199254740993), -INT64_C(4294967296)},",
    )
    assert f"\n    {first}\n    {second}\n" in i64
    assert "static const int64_t t[T_QUERY][T_KEY] POSENC_TABLE_ATTRIBUTE = {" in i64


def test_mixed_and_nested_layout(tmp_path):
    posenc_cli.save(mixed_table(), tmp_path / "t.h", name="t")
    text = (tmp_path / "t.h").read_text()
    assert "#define T_QUERY 5\n#define T_KEY 6\n#define T_HEADS 3\n" in text
    assert "static const int16_t t_index[T_QUERY][T_KEY] POSENC_TABLE_ATTRIBUTE = {\n    {-15, -14," in text
    assert (
        "static const float t_bias[T_HEADS][T_QUERY][T_KEY] POSENC_TABLE_ATTRIBUTE = {\n    {\n        {-0.0f," in text
    )
    assert "shape of t_bias: 3 x 5 x 6" in text and "Needs: C99 or C++11." in text
    assert "SCALE" not in text and text.count("    },\n") == 3
    posenc_cli.save(int_table("int8"), tmp_path / "i8.h", name="t")
    assert "SCALE" not in (tmp_path / "i8.h").read_text()  # plain int8: no quantisation macros


@pytest.mark.parametrize("suffix", [".h", ".c", ".bin"])
def test_c_outputs_are_byte_reproducible(tmp_path, suffix):
    for run in ("a", "b"):
        (tmp_path / run).mkdir()
        posenc_cli.save(mixed_table(), tmp_path / run / f"t{suffix}")
    for first in (tmp_path / "a").iterdir():
        assert first.read_bytes() == (tmp_path / "b" / first.name).read_bytes()


def test_float_literal_options_apply_to_the_float_arrays(tmp_path):
    posenc_cli.save(mixed_table(), tmp_path / "t.h", name="t", float_literal="hex")
    text = (tmp_path / "t.h").read_text()
    assert (
        "{-15, -14," in text and "{-0x0p+0f," in text and "Needs: C99 or C++17 (hexadecimal floating literals)." in text
    )
    with pytest.raises(SpecError, match="float_literal applies to float32 and float64 tables, not int16"):
        posenc_cli.save(int_table("int16"), tmp_path / "i.h", float_literal="hex")
    with pytest.raises(SpecError, match="native half literals are for float16 tables, not int16, float32"):
        posenc_cli.save(mixed_table(), tmp_path / "m.h", c_half_type="_Float16")


# ------------------------------------------------------------------------------------------------ read back
def assert_same(back: Table, table: Table, *, params: dict | None = None) -> None:
    assert dict(back.params) == (dict(table.params) if params is None else params)
    assert set(back.arrays) == set(table.arrays)
    for key, array in table.arrays.items():
        got, want = back.arrays[key], np.asarray(array)
        assert got.dtype == want.dtype and got.shape == want.shape, key
        assert got.tobytes() == want.tobytes(), key


@pytest.mark.parametrize("suffix", [".npz", ".safetensors", ".h5", ".h", ".hpp", ".c", ".cpp", ".bin"])
@pytest.mark.parametrize("key", list(TABLES))
def test_every_format_reads_every_table_back(tmp_path, key, suffix):
    table = TABLES[key]()
    path = tmp_path / f"t{suffix}"
    posenc_cli.save(table, path)
    back = posenc_cli.load(path)
    assert back.kind == table.kind
    if suffix == ".h5" and len(table.arrays) == 1:  # one dataset, named after the file
        back = Table(back.kind, {"index": back.array}, back.params)
    if suffix in (".h", ".hpp", ".c", ".cpp", ".bin"):
        assert {k: back.axes_of(k) for k in back.arrays} == {k: table.axes_of(k) for k in table.arrays}
        if len(table.arrays) == 1:  # a one-array C file names its array after the kind
            assert list(back.arrays) == ["index"]
    if suffix in (".npz", ".h", ".hpp", ".c", ".cpp", ".bin"):
        assert list(back.arrays) == list(table.arrays)
    assert_same(back, table)


C_VARIANTS = [
    (".h", {"float_literal": "hex"}),
    (".c", {"float_literal": "bits"}),
    (".bin", {"float_literal": "bits"}),
    (".h", {"align": 32, "progmem": True}),
    (".c", {"lang": "c++", "namespace": "a::b", "align": 16}),
    (".h", {"lang": "c++"}),
]


@pytest.mark.parametrize(("suffix", "options"), C_VARIANTS, ids=[f"{s}-{o}" for s, o in C_VARIANTS])
@pytest.mark.parametrize("key", ["mixed", "window"])
def test_tables_of_several_types_read_back_from_every_c_variant(tmp_path, key, suffix, options):
    table = TABLES[key]()
    posenc_cli.save(table, tmp_path / f"t{suffix}", **options)
    back = posenc_cli.load(tmp_path / f"t{suffix}")
    assert list(back.arrays) == list(table.arrays)
    assert_same(back, table)


@pytest.mark.parametrize("key", list(TABLES))
def test_numpy_and_safetensors_read_what_posenc_wrote(tmp_path, key):
    table = TABLES[key]()
    posenc_cli.save(table, tmp_path / "t.npz")
    posenc_cli.save(table, tmp_path / "t.safetensors")
    with np.load(tmp_path / "t.npz", allow_pickle=False) as npz:
        tensors = load_file(str(tmp_path / "t.safetensors"))
        for name, array in table.arrays.items():
            for got in (npz[name], tensors[name]):
                assert got.dtype == array.dtype and np.array_equal(got, array)


@pytest.mark.parametrize("key", list(INTS))
def test_npy_of_an_integer_table_is_numpy_s_and_needs_no_sidecar(tmp_path, key):
    table = int_table(key)
    posenc_cli.save(table, tmp_path / "t.npy")
    assert not (tmp_path / "t.json").exists()
    assert np.load(tmp_path / "t.npy").tobytes() == table.array.tobytes()
    back = posenc_cli.load(tmp_path / "t.npy")
    assert back.array.dtype == np.dtype(key) and np.array_equal(back.array, table.array)


def test_npy_sidecars_are_decided_per_array(tmp_path):
    mixed = mixed_table()
    assert posenc_cli.save(mixed, tmp_path / "i.npy", part="index") == [tmp_path / "i.npy"]
    assert posenc_cli.save(mixed, tmp_path / "b.npy", part="bias") == [tmp_path / "b.npy"]
    assert np.array_equal(np.load(tmp_path / "b.npy"), mixed.arrays["bias"])
    affine = Table("alibi", {"bias": np.zeros((2, 2), np.int8)}, {"dtype": "int8", "scale": 0.5, "zero_point": 1})
    assert posenc_cli.save(affine, tmp_path / "q.npy") == [tmp_path / "q.npy", tmp_path / "q.json"]
    assert dict(posenc_cli.load(tmp_path / "q.npy").params) == dict(affine.params)
    q15 = posenc_cli.rope(2, 4, dtype="q15")
    assert posenc_cli.save(q15, tmp_path / "c.npy", part="cos") == [tmp_path / "c.npy", tmp_path / "c.json"]


H5_TYPES = {"int8": "H5T_STD_I8LE", "int16": "H5T_STD_I16LE", "int32": "H5T_STD_I32LE", "int64": "H5T_STD_I64LE"}


@pytest.mark.client
@pytest.mark.parametrize("key", list(TABLES))
def test_h5dump_sees_integer_datasets_and_their_bytes(tmp_path, key):
    h5dump = require_tool("h5dump")
    table = TABLES[key]()
    path = tmp_path / "t.h5"
    posenc_cli.save(table, path, name="grp")
    single = len(table.arrays) == 1  # one dataset, named by --name; several go into the group --name names
    datasets = {"grp": table.array} if single else dict(table.arrays)
    header = subprocess.run([h5dump, "-H", str(path)], check=True, capture_output=True, text=True).stdout
    for name, array in datasets.items():
        where = "/grp" if single else f"/grp/{name}"
        block = header[header.index(f'DATASET "{name}"') :]
        wanted = H5_TYPES.get(
            array.dtype.name, {"float32": "H5T_IEEE_F32LE", "float64": "H5T_IEEE_F64LE"}.get(array.dtype.name)
        )
        assert block.split("\n")[1].strip() == f"DATATYPE  {wanted}"
        assert f"SIMPLE {{ ( {', '.join(map(str, array.shape))} )" in block
        raw = tmp_path / f"{name}.raw"
        subprocess.run([h5dump, "-d", where, "-b", "LE", "-o", str(raw), str(path)], check=True, capture_output=True)
        assert raw.read_bytes() == np.ascontiguousarray(array, array.dtype.newbyteorder("<")).tobytes()


# ------------------------------------------------------------------------------------------------------ CSV
@pytest.mark.parametrize("dtype", INTS)
def test_csv_of_an_integer_table_says_its_dtype_and_reads_back(tmp_path, dtype):
    table = int_table(dtype)
    path = tmp_path / "t.csv"
    posenc_cli.save(table, path)
    lines = path.read_text().splitlines()
    assert lines[0] == f"# dtype={dtype}" and lines[1] == "d0,d1,d2,d3,d4,d5,d6"
    assert [[int(v) for v in line.split(",")] for line in lines[2:]] == table.array.tolist()
    back = posenc_cli.load(path)
    assert back.array.dtype == np.dtype(dtype) and back.array.tolist() == table.array.tolist()
    assert dict(back.params) == {"dtype": dtype}


def test_csv_int8_is_plain_without_a_scale_and_affine_with_one():
    plain = csv_format.load(io.BytesIO(b"# dtype=int8\n-128,127\n"))
    assert dict(plain.params) == {"dtype": "int8"} and plain.array.tolist() == [[-128, 127]]
    affine = csv_format.load(io.BytesIO(b"# dtype=int8 scale=0.5 zero_point=-3\n-128,127\n"))
    assert dict(affine.params) == {"dtype": "int8", "scale": 0.5, "zero_point": -3}


def test_csv_part_of_a_mixed_table(tmp_path):
    posenc_cli.save(window_table(), tmp_path / "i.csv", part="index")
    assert (tmp_path / "i.csv").read_text().startswith("# dtype=int16\nd0,d1,d2,d3\n3,2,1,0\n")


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b"# dtype=int8\n0\n128\n", "CSV row 2 (line 3): 128 is outside the values of int8, [-128, 127]"),
        (b"# dtype=int16\n-32769\n", "-32769 is outside the values of int16, [-32768, 32767]"),
        (b"# dtype=int32\n1,2147483648\n", "2147483648 is outside the values of int32, [-2147483648, 2147483647]"),
        (b"# dtype=int64\n9223372036854775808\n", "9223372036854775808 is outside the values of int64"),
        (b"# dtype=int64\n-9223372036854775809\n", "-9223372036854775809 is outside the values of int64"),
        (b"# dtype=int64\n" + b"9" * 21 + b"\n", "is not an integer value of int64"),
        (b"# dtype=int32\n1.0\n", "b'1.0' is not an integer value of int32"),
        (b"# dtype=int16 scale=0.5 zero_point=0\n1\n", "the key 'scale' is not one of its keys"),
        (b"# dtype=int8 scale=0.5\n1\n", "it lacks one of its keys (int8 takes scale, zero_point)"),
        (b"# dtype=uint16\n1\n", "dtype 'uint16'; the line names q31, q15, q7, int8, int16, int32, int64 or fixed"),
    ],
)
def test_csv_integers_out_of_their_range_are_refused(content, words):
    with pytest.raises(FormatError) as error:
        csv_format.load(io.BytesIO(content))
    assert words in str(error.value) and "\n" not in str(error.value)


def test_csv_claims_the_integers_size_from_the_budget():
    content = b"# dtype=int64\n1,2\n3,4\n"
    assert csv_format.load(io.BytesIO(content), Budget(32)).array.shape == (2, 2)
    with pytest.raises(FormatError, match="CSV table of int64 values needs 32 bytes"):
        csv_format.load(io.BytesIO(content), Budget(31))


def test_csv_refuses_a_3d_part_with_a_usage_error(tmp_path):
    with pytest.raises(SpecError, match=r"CSV holds 2-D tables and 'bias' has shape \(3, 5, 6\): pick a 2-D"):
        posenc_cli.save(mixed_table(), tmp_path / "b.csv", part="bias")
    with pytest.raises(SpecError, match="holds 2 arrays"):
        posenc_cli.save(mixed_table(), tmp_path / "b.csv")
    posenc_cli.save(mixed_table(), tmp_path / "m.npz")
    result = CliRunner().invoke(cli, ["convert", str(tmp_path / "m.npz"), "--key", "bias", str(tmp_path / "b.csv")])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "CSV holds 2-D tables" in lines[0] and "Traceback" not in result.output
    assert not (tmp_path / "b.csv").exists()


# ---------------------------------------------------------------------------------------- hostile C headers
def genuine(table: Table, **options: object) -> bytes:
    buffer = io.BytesIO()
    dump_header_only(table, buffer, WriteOptions(name="t", filename="t.h", **options))  # type: ignore[arg-type]
    return buffer.getvalue()


def refuse(data: bytes, match: str, budget: Budget | None = None) -> None:
    with pytest.raises(FormatError, match=match) as error:
        c_read.load(io.BytesIO(data), budget)
    assert "\n" not in str(error.value)


def test_genuine_headers_read_back():
    for key in TABLES:
        table = TABLES[key]()
        assert_same(c_read.load(io.BytesIO(genuine(table))), table)


@pytest.mark.parametrize(
    ("key", "old", "new", "match"),
    [
        ("int32", b"{(-2147483647 - 1), 2147483647,", b"{2147483648, 2147483647,", r"int32 value is outside"),
        ("int32", b"{(-2147483647 - 1), 2147483647,", b"{-2147483649, 2147483647,", r"int32 value is outside"),
        ("int32", b"{(-2147483647 - 1),", b"{-2147483648,", "line 2[0-9] is '    {-2147483648,"),
        ("int32", b"{(-2147483647 - 1),", b"{(-2147483647-1),", "not rows of 7 int32_t values"),
        ("int32", b"{(-2147483647 - 1),", b"{0x7fffffff,", "not rows of 7 int32_t values"),
        ("int64", b"INT64_C(9223372036854775807),", b"INT64_C(9223372036854775808),", r"int64 value is outside"),
        ("int64", b"INT64_C(9223372036854775807),", b"INT64_C(99999999999999999999),", r"int64 value is outside"),
        ("int64", b"INT64_C(9223372036854775807),", b"9223372036854775807,", "not rows of 7 int64_t values"),
        ("int64", b"-1, 0, 1}", b"-1, INT64_C(0), 1}", "where posenc writes"),
        ("int64", b"-1, 0, 1}", b"-1, 0LL, 1}", "not rows of 7 int64_t values"),
        ("int16", b"{-32768, 32767,", b"{-32769, 32767,", r"int16 value is outside \[-32768, 32767\]"),
        ("int16", b"{-32768, 32767,", b"{(-2147483647 - 1), 32767,", "not rows of 7 int16_t values"),
        ("int8", b"{-128, 127,", b"{-128, 128,", r"int8 value is outside \[-128, 127\]"),
        ("int8", b"int8_t t[", b"int16_t t[", "dtype int8 but the arrays are int16_t"),
        ("int8", b"dtype: int8", b"dtype: int16", "dtype int16 but the arrays are int8_t"),
    ],
)
def test_integer_headers_edited_are_refused(key, old, new, match):
    data = genuine(TABLES[key]())
    assert old in data
    refuse(data.replace(old, new, 1), match)


def test_nested_headers_edited_are_refused():
    data = genuine(mixed_table())
    boundary = b"    },\n    {\n"
    assert data.count(boundary) == 2
    cases = {
        "a group boundary removed": data.replace(boundary, b"", 1),
        "two groups merged": data.replace(b"},\n    },\n    {\n", b"},\n", 1),
        "an extra brace level": data.replace(b"= {\n    {\n", b"= {\n    {\n    {\n", 1),
        "a row moved out of its group": data.replace(b"},\n    },\n    {\n", b"},\n    {\n    },\n", 1),
        "a row duplicated": re.sub(rb"(\n        \{[^\n]*\},\n)", rb"\1\1", data, count=1),
        "a comment hiding a brace": data.replace(b"    },\n    {\n", b"    }, /* }, */\n    {\n", 1),
        "one brace too few at the end": data.replace(b"    },\n};\n\n#endif", b"};\n\n#endif"),
        "a digit for a brace": data.replace(b"    },\n    {\n", b"    },\n    0,\n", 1),
        "braces in the wrong place": data.replace(b"= {\n    {\n        {", b"= {\n    {{\n        ", 1),
    }
    for what, edited in cases.items():
        assert edited != data, what
        with pytest.raises(FormatError, match="a C file posenc did not write") as error:
            c_read.load(io.BytesIO(edited))
        assert "\n" not in str(error.value), what


@pytest.mark.parametrize(
    ("old", "new", "match"),
    [
        (b"shape of t_bias: 3 x 5 x 6", b"shape of t_bias: 3 x 6 x 5", "not 3 x 6 x 5 float values|T_QUERY is 5"),
        (b"shape of t_bias: 3 x 5 x 6", b"shape of t_bias: 3 x 5", "rows of 5 float values|has 3 dimensions"),
        (b"shape of t_bias: 3 x 5 x 6", b"shape of t_bias: 2 x 5 x 6", "holds|more than|not 2 x 5 x 6"),
        (b"shape of t_bias: 3 x 5 x 6", b"shape of t_bias: 3 x 5 x 6 x 1", "not 3 x 5 x 6 x 1 float values"),
        (b"[T_HEADS][T_QUERY][T_KEY]", b"[T_HEADS][T_QUERY]", "t_bias has 2 dimensions, the comment says shape"),
        (b"[T_HEADS][T_QUERY][T_KEY]", b"[T_HEADS][T_QUERY][T_KEY][T_KEY]", "has 4 dimensions"),
        (b"#define T_HEADS 3", b"#define T_HEADS 4", "T_HEADS is 4 but the comment gives t_bias size 3"),
        (b"shape of t_bias: 3 x 5 x 6", b"shape of t_bias: 1 x 1 x 1 x 1 x 1 x 1 x 1 x 1 x 1", "comment"),
        (b"shape of t_bias: 3 x 5 x 6", b"shape of t_bias: 3000000 x 5000000 x 6000000", "the comment promises"),
    ],
)
def test_nested_declarations_that_disagree_are_refused(old, new, match):
    data = genuine(mixed_table())
    assert old in data
    refuse(data.replace(old, new, 1), match)


def test_nested_arrays_are_claimed_from_the_budget_before_they_are_read():
    data = genuine(mixed_table())
    need = 5 * 6 * 2 + 3 * 5 * 6 * 4
    assert c_read.load(io.BytesIO(data), Budget(need)).arrays["bias"].shape == (3, 5, 6)
    refuse(data, "array t_bias", Budget(need - 1))
    # Dimensions that fit the file's bytes but not the memory limit: refused by the budget, before allocating.
    big = data.replace(b"shape of t_bias: 3 x 5 x 6", b"shape of t_bias: 3 x 10 x 6")
    refuse(big, "array t_bias", Budget(400))


def test_large_nested_arrays_stream_in_blocks(tmp_path):
    """More than one read block (256 KiB) of a 3-D initializer, with many small groups and a wide one."""
    rng = np.random.default_rng(11)
    many = rng.integers(-(2**31), 2**31, size=(30000, 2, 2), dtype=np.int64).astype(np.int32)
    many[0, 0, 0] = -(2**31)
    wide = rng.normal(size=(2, 300, 200)).astype(np.float32)
    table = Table("array", {"many": many, "wide": wide}, {}, {"many": ("n", "a", "b"), "wide": ("g", "r", "c")})
    path = tmp_path / "t.h"
    posenc_cli.save(table, path)
    assert path.stat().st_size > 3 * (1 << 18)
    assert_same(posenc_cli.load(path), table)
    data = path.read_bytes()
    boundary = b"    },\n    {\n"
    at = [m.start() for m in re.finditer(re.escape(boundary), data)][20000]  # in a later block than the first
    refuse(data[:at] + data[at + len(boundary) :], r"not 30000 x 2 x 2 int32_t values .*\(after value [0-9]{5,}\)")
