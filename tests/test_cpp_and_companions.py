"""C++ suffixes and files, names without double underscores, companion files posenc recognises as its own, and the
messages of issue #13.

The C++ files are compiled and linked by real compilers (g++, clang++ with -Wall -Wextra -Wpedantic -Werror); the
compiled program prints the table's bytes as the compiler laid them out, compared with the bytes of the table's
array (what the .npy holds), and the symbol table of the object file (objdump) shows where a section attribute put
it. Names are checked on the files posenc writes, token by token.
"""

from __future__ import annotations

import dataclasses
import io
import json
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import posenc_cli
from posenc_cli.cli import cli
from posenc_cli.errors import FormatError, SpecError
from posenc_cli.formats import (
    FORMAT_NAMES,
    FORMATS,
    WriteOptions,
    by_name,
    check_options,
    companion_path,
    implied_options,
    infer,
    written_by_posenc,
)
from posenc_cli.formats.identifiers import check_name, name_from_path
from posenc_cli.table import Table

from .conftest import require_tool

WARNINGS = ["-Wall", "-Wextra", "-Wpedantic", "-Werror"]
CXX = [("g++", "c++11"), ("g++", "c++17"), ("clang++", "c++11"), ("clang++", "c++17")]


def run(*args: str):
    return CliRunner().invoke(cli, list(args))


def one_line_error(result, code: int) -> str:
    assert result.exit_code == code, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def build(workdir: Path, sources: list[str], *flags: str, compiler: str = "g++", std: str = "c++17") -> str:
    """Compile and link ``sources`` in ``workdir`` warning-free, run the program, return what it prints."""
    exe = workdir / "prog"
    cmd = [require_tool(compiler), f"-std={std}", *WARNINGS, *flags, "-I", str(workdir), *sources, "-o", str(exe)]
    done = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout


def write_pair(table, source: Path, **options) -> Path:
    """Write a ``c``-format pair through the registry, its header where :func:`companion_path` puts it (the paths
    the API layer will use), with the options the suffix implies; return the header's path."""
    fmt = infer(source)
    header = companion_path(fmt, source)
    assert fmt.companion is not None and header is not None
    given = {**implied_options(fmt, source), **options}
    check_options(fmt, given)
    write = WriteOptions(name=name_from_path(source), filename=source.name, **given)  # type: ignore[arg-type]
    with open(source, "wb") as fp:
        fmt.dump(table, fp, write)
    with open(header, "wb") as fp:
        fmt.companion.dump(table, fp, dataclasses.replace(write, filename=header.name))
    return header


def read_pair(source: Path):
    """Read a pair back through the registry: the source, then its header checked against it."""
    fmt = infer(source)
    header = companion_path(fmt, source)
    assert fmt.load is not None and fmt.companion is not None and fmt.companion.load is not None
    assert header is not None
    with open(source, "rb") as fp:
        table = fmt.load(fp, posenc_cli.formats.limits.Budget())
    with open(header, "rb") as fp:
        return fmt.companion.load(table, fp, posenc_cli.formats.limits.Budget())


def hexdump_program(include: str, symbol: str) -> str:
    return (
        f'#include <cstdio>\n#include "{include}"\n'
        "int main()\n{\n"
        f"    const unsigned char *p = reinterpret_cast<const unsigned char *>(&{symbol});\n"
        f'    for (unsigned long k = 0; k < sizeof({symbol}); k++) std::printf("%02x", p[k]);\n'
        '    std::printf("\\n");\n    return 0;\n}\n'
    )


# ---------------------------------------------------------------------------------------------- 1. suffixes
@pytest.mark.parametrize(
    ("suffix", "name"),
    [(".hpp", "h"), (".hh", "h"), (".hxx", "h"), (".cpp", "c"), (".cc", "c"), (".cxx", "c"), (".HPP", "h")],
)
def test_cxx_suffixes_name_the_h_and_c_formats_and_imply_cxx(suffix, name):
    fmt = infer(f"dir/pe{suffix}")
    assert fmt.name == name
    assert implied_options(fmt, Path(f"pe{suffix}")) == {"lang": "c++"}
    check_options(fmt, implied_options(fmt, Path(f"pe{suffix}")))  # an implied option is one the format takes


@pytest.mark.parametrize("path", ["pe.h", "pe.c", "pe.bin", "pe.npy", "pe.h5"])
def test_c_suffixes_imply_nothing(path):
    assert implied_options(infer(path), Path(path)) == {}


def test_a_cxx_suffix_implies_cxx_only_for_the_format_it_names():
    assert implied_options(FORMATS["npy"], Path("pe.hpp")) == {}
    assert implied_options(FORMATS["bin"], Path("pe.cpp")) == {}


@pytest.mark.parametrize(
    ("fmt", "path", "companion"),
    [
        ("c", "out/pe.c", "out/pe.h"),
        ("c", "out/pe.cpp", "out/pe.hpp"),
        ("c", "out/pe.cc", "out/pe.hh"),
        ("c", "out/pe.cxx", "out/pe.hxx"),
        ("c", "out/PE.CPP", "out/PE.hpp"),
        ("c", "out/pe.txt", "out/pe.h"),
        ("bin", "out/pe.bin", "out/pe.h"),
        ("npy", "out/pe.npy", "out/pe.json"),
    ],
)
def test_companion_paths(fmt, path, companion):
    found = companion_path(FORMATS[fmt], Path(path))
    assert found is not None and found.as_posix() == companion


@pytest.mark.parametrize("fmt", ["h", "npz", "safetensors", "h5", "csv"])
def test_formats_without_companion(fmt):
    assert companion_path(FORMATS[fmt], Path("pe.x")) is None


def test_hdf5_is_an_alias_of_h5_and_every_name_is_listed():
    assert by_name("hdf5") is FORMATS["h5"]
    assert FORMAT_NAMES == (*FORMATS, "hdf5")
    assert all(by_name(name) is not None for name in FORMAT_NAMES)
    with pytest.raises(SpecError, match=r"unknown format 'xls'; choose one of npy, .*, bin, .*gguf, hdf5") as err:
        by_name("xls")
    assert err.value.param == "format"


@pytest.mark.parametrize("suffix", [".hpp", ".hh", ".hxx"])
def test_cxx_headers_round_trip_through_the_api(tmp_path, suffix):
    table = posenc_cli.generate(6, 4)
    path = tmp_path / f"pe{suffix}"
    posenc_cli.save(table, path, lang="c++", namespace="model")
    back = posenc_cli.load(path)
    assert np.array_equal(back.array, table.array) and back.params == table.params
    text = path.read_text()
    assert "constexpr float pe[PE_SEQ_LEN][PE_D_MODEL] POSENC_TABLE_ATTRIBUTE = {" in text


@pytest.mark.parametrize("namespace", [None, "model", "a::b"])
@pytest.mark.parametrize("suffix", [".cpp", ".cc", ".cxx"])
def test_cxx_pairs_are_read_back(tmp_path, suffix, namespace):
    table = posenc_cli.rope(4, 4)  # three arrays: cos, sin, inv_freq
    header = write_pair(table, tmp_path / f"pe{suffix}", namespace=namespace)
    assert header.suffix == {".cpp": ".hpp", ".cc": ".hh", ".cxx": ".hxx"}[suffix]
    assert f'#include "{header.name}"\n' in (tmp_path / f"pe{suffix}").read_text()
    back = read_pair(tmp_path / f"pe{suffix}")
    assert set(back.arrays) == set(table.arrays) and back.params == table.params
    for key in table.arrays:
        assert np.array_equal(back.arrays[key], table.arrays[key])


def test_a_cxx_pair_read_as_c_or_torn_is_refused(tmp_path):
    write_pair(posenc_cli.generate(4, 4), tmp_path / "pe.cpp")
    source = (tmp_path / "pe.cpp").read_bytes()
    (tmp_path / "pe.cpp").write_bytes(source.replace(b"Needs: C++17.", b"Needs: C89."))
    with pytest.raises(FormatError, match="a C file posenc did not write"):
        read_pair(tmp_path / "pe.cpp")
    (tmp_path / "pe.cpp").write_bytes(source)
    header = (tmp_path / "pe.hpp").read_bytes()
    write_pair(posenc_cli.generate(4, 4, base=100.0), tmp_path / "other.cpp")
    (tmp_path / "pe.hpp").write_bytes((tmp_path / "other.hpp").read_bytes().replace(b"other", b"pe"))
    with pytest.raises(FormatError, match="a torn pair: pe.cpp and pe.hpp hold different tables"):
        read_pair(tmp_path / "pe.cpp")
    (tmp_path / "pe.hpp").write_bytes(header)
    assert np.array_equal(read_pair(tmp_path / "pe.cpp").array, posenc_cli.generate(4, 4).array)


@pytest.mark.client
@pytest.mark.parametrize(("compiler", "std"), CXX)
def test_a_cxx_pair_links_into_one_table_with_the_values(tmp_path, compiler, std):
    table = posenc_cli.generate(9, 6)
    namespace = "model::tables" if std == "c++11" else None  # C++11 needs the namespace form
    write_pair(table, tmp_path / "pe.cpp", namespace=namespace)
    symbol = "model::tables::pe" if namespace else "pe"
    (tmp_path / "main.cpp").write_text(hexdump_program("pe.hpp", symbol))
    (tmp_path / "other.cpp").write_text('#include "pe.hpp"\nconst void *other() { return &' + symbol + "; }\n")
    out = build(tmp_path, ["main.cpp", "other.cpp", "pe.cpp"], compiler=compiler, std=std)
    assert bytes.fromhex(out.strip()) == table.array.astype("<f4").tobytes()


PAIR_VARIANTS = [
    ("align", lambda: posenc_cli.generate(5, 4), {"align": 32}),
    ("q15", lambda: posenc_cli.generate(5, 4, dtype="q15"), {"namespace": "m"}),
    ("int8", lambda: posenc_cli.generate(5, 4, dtype="int8", scale=0.01, zero_point=2), {"namespace": "m"}),
    ("float16", lambda: posenc_cli.generate(5, 4, dtype="float16"), {}),
    ("hex", lambda: posenc_cli.generate(5, 4), {"float_literal": "hex"}),
    ("bits64", lambda: posenc_cli.generate(5, 4, dtype="float64"), {"float_literal": "bits", "namespace": "a::b"}),
    ("alibi", lambda: posenc_cli.alibi(3, 4), {"namespace": "m", "align": 16}),
]


@pytest.mark.client
@pytest.mark.parametrize("compiler", ["g++", "clang++"])
@pytest.mark.parametrize(("variant", "make", "options"), PAIR_VARIANTS, ids=[v[0] for v in PAIR_VARIANTS])
def test_cxx_pair_variants_compile_hold_the_values_and_read_back(tmp_path, compiler, variant, make, options):
    table = make()
    write_pair(table, tmp_path / "pe.cpp", **options)
    back = read_pair(tmp_path / "pe.cpp")
    assert all(np.array_equal(back.arrays[key], table.arrays[key]) for key in table.arrays)
    key = next(iter(table.arrays))
    symbol = "pe" if len(table.arrays) == 1 else f"pe_{key}"
    if "namespace" in options:
        symbol = f"{options['namespace']}::{symbol}"
    (tmp_path / "main.cpp").write_text(hexdump_program("pe.hpp", symbol))
    out = build(tmp_path, ["main.cpp", "pe.cpp"], compiler=compiler, std="c++17")
    array = table.arrays[key]
    assert bytes.fromhex(out.strip()) == np.ascontiguousarray(array, array.dtype.newbyteorder("<")).tobytes()


@pytest.mark.client
def test_a_cxx_pair_does_not_build_against_the_header_of_another_table(tmp_path):
    write_pair(posenc_cli.generate(4, 4), tmp_path / "pe.cpp")
    other = tmp_path / "x"
    other.mkdir()
    write_pair(posenc_cli.generate(4, 4, base=100.0), other / "pe.cpp")
    (tmp_path / "pe.hpp").write_bytes((other / "pe.hpp").read_bytes())
    done = subprocess.run(
        [require_tool("g++"), "-std=c++17", *WARNINGS, "-c", "pe.cpp", "-o", "pe.o"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode != 0 and "pe.hpp holds another table than pe.cpp (a torn pair)" in done.stderr


def test_a_cxx_guard_past_63_characters_names_the_option_to_shorten(tmp_path):
    table = posenc_cli.generate(2, 2)
    with pytest.raises(SpecError, match=r"include guard POSENC_A+_HPP 64 characters long.*shorter --name$") as err:
        posenc_cli.save(table, tmp_path / "x.hpp", lang="c++", name="a" * 53, check=True)
    assert err.value.param == "name"
    with pytest.raises(SpecError, match=r"in its namespace makes the include guard .* or --namespace$") as err:
        posenc_cli.save(table, tmp_path / "x.hpp", lang="c++", namespace="n" * 50, name="pe_table", check=True)
    assert err.value.param == "namespace"


# ---------------------------------------------------------------------------------------------- 2. C++ headers
@pytest.mark.client
def test_c_and_cxx_headers_of_one_stem_in_one_translation_unit(tmp_path):
    c_table, cxx_table = posenc_cli.generate(16, 4), posenc_cli.generate(8, 4, base=100.0)
    posenc_cli.save(c_table, tmp_path / "pe.h")
    posenc_cli.save(cxx_table, tmp_path / "pe.hpp", lang="c++", namespace="model")
    guards = [re.search(r"#ifndef (\w+)\n", (tmp_path / f).read_text())[1] for f in ("pe.h", "pe.hpp")]  # type: ignore[index]
    assert guards == ["POSENC_PE_H", "POSENC_MODEL_PE_HPP"]
    # The C++ header comes first: the C header's size macros (PE_SEQ_LEN) would rewrite its constants' names.
    (tmp_path / "main.cpp").write_text(
        '#include <cstdio>\n#include "pe.hpp"\n#include "pe.h"\n'
        'static_assert(sizeof(model::pe) == 8 * 4 * sizeof(float), "the C++ table");\n'
        'static_assert(sizeof(pe) == 16 * 4 * sizeof(float), "the C table");\n'
        "int main()\n{\n"
        "    const unsigned char *a = reinterpret_cast<const unsigned char *>(&pe);\n"
        "    const unsigned char *b = reinterpret_cast<const unsigned char *>(&model::pe);\n"
        '    for (unsigned long k = 0; k < sizeof(pe); k++) std::printf("%02x", a[k]);\n'
        '    std::printf("\\n");\n'
        '    for (unsigned long k = 0; k < sizeof(model::pe); k++) std::printf("%02x", b[k]);\n'
        '    std::printf("\\n");\n    return 0;\n}\n'
    )
    for compiler in ("g++", "clang++"):
        c_bytes, cxx_bytes = build(tmp_path, ["main.cpp"], compiler=compiler, std="c++11").split()
        assert bytes.fromhex(c_bytes) == c_table.array.astype("<f4").tobytes()
        assert bytes.fromhex(cxx_bytes) == cxx_table.array.astype("<f4").tobytes()


@pytest.mark.client
def test_cxx_headers_of_one_name_in_two_namespaces_in_one_translation_unit(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    posenc_cli.save(posenc_cli.generate(3, 2), tmp_path / "a" / "pe.hpp", lang="c++", namespace="a")
    posenc_cli.save(posenc_cli.generate(5, 2), tmp_path / "b" / "pe.hpp", lang="c++", namespace="b")
    (tmp_path / "main.cpp").write_text(
        '#include <cstdio>\n#include "a/pe.hpp"\n#include "b/pe.hpp"\n'
        'int main() { std::printf("%u %u\\n", unsigned(a::PE_SEQ_LEN), unsigned(sizeof(b::pe) / sizeof(float))); }\n'
    )
    assert build(tmp_path, ["main.cpp"], std="c++11") == "3 10\n"


def section_of(obj: Path, symbol: str) -> str:
    """The section ``objdump -t`` puts ``symbol`` in (a mangled C++ name is matched by its plain part)."""
    table = subprocess.run([require_tool("objdump"), "-t", str(obj)], capture_output=True, text=True, check=True)
    for line in table.stdout.splitlines():
        fields = line.split()
        if fields and (fields[-1] == symbol or re.fullmatch(rf"_Z\w*{len(symbol)}{symbol}E", fields[-1])):
            return fields[-3]
    raise AssertionError(f"{symbol} is not in {obj}:\n{table.stdout}")


# Without a namespace a C++ header is inline constexpr (C++17); with one, constexpr (C++11).
@pytest.mark.client
@pytest.mark.parametrize(
    ("compiler", "std", "namespace"),
    [(compiler, std, "model") for compiler, std in CXX] + [("g++", "c++17", None), ("clang++", "c++17", None)],
)
def test_the_table_attribute_hook_places_a_cxx_header_table(tmp_path, compiler, std, namespace):
    posenc_cli.save(posenc_cli.generate(4, 4), tmp_path / "pe.hpp", lang="c++", namespace=namespace)
    symbol = f"{namespace}::pe" if namespace else "pe"
    (tmp_path / "main.cpp").write_text(hexdump_program("pe.hpp", symbol))
    attribute = '-DPOSENC_TABLE_ATTRIBUTE=__attribute__((section(".posenc_tables")))'
    done = subprocess.run(
        [require_tool(compiler), f"-std={std}", *WARNINGS, attribute, "-c", "main.cpp", "-o", "main.o"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert section_of(tmp_path / "main.o", "pe") == ".posenc_tables"
    # Without the definition the hook is empty and the table is where the compiler puts constants.
    build(tmp_path, ["main.cpp"], compiler=compiler, std=std)


@pytest.mark.client
def test_the_table_attribute_hook_places_a_cxx_pair_table(tmp_path):
    write_pair(posenc_cli.generate(4, 4), tmp_path / "pe.cc", namespace="model")
    attribute = '-DPOSENC_TABLE_ATTRIBUTE=__attribute__((section(".posenc_tables")))'
    done = subprocess.run(
        [require_tool("g++"), "-std=c++11", *WARNINGS, attribute, "-c", "pe.cc", "-o", "pe.o"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert section_of(tmp_path / "pe.o", "pe") == ".posenc_tables"


def test_c_outputs_keep_their_guard_and_layout(tmp_path):
    posenc_cli.save(posenc_cli.generate(4, 4), tmp_path / "pe.h")
    posenc_cli.save(posenc_cli.generate(4, 4), tmp_path / "t.c")
    assert "#ifndef POSENC_PE_H\n#define POSENC_PE_H\n\n#define PE_SEQ_LEN 4\n" in (tmp_path / "pe.h").read_text()
    declarations = (tmp_path / "t.h").read_text()
    assert "#ifndef POSENC_T_H\n" in declarations and '#ifdef __cplusplus\nextern "C" {\n' in declarations


# ------------------------------------------------------------------------------------- 3. no double underscores
IMPLEMENTATION = {"__cplusplus", "__STDC_VERSION__", "__GNUC__", "__clang__", "__attribute__", "__declspec", "__asm__"}
#: The C23 #embed part of a .bin's header: the standard's and the compilers' own names.
IMPLEMENTATION |= {"__has_embed", "__STDC_EMBED_FOUND__", "__STDC_EMBED_EMPTY__", "__limit__"}
IMPLEMENTATION |= {"__BYTE_ORDER__", "__ORDER_LITTLE_ENDIAN__"}


def code_identifiers(text: str) -> set[str]:
    """Every identifier of a C file outside comments and string literals."""
    code = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    code = re.sub(r'"(?:[^"\\\n]|\\.)*"', " ", code)
    return set(re.findall(r"\b[A-Za-z_][A-Za-z0-9_]*\b", code))


@pytest.mark.parametrize("name", ["pe_", "pe__x", "table_"])
def test_a_given_name_ending_in_or_doubling_an_underscore_is_refused(tmp_path, name):
    with pytest.raises(SpecError, match=r"not ending in an underscore.*double underscore is reserved") as err:
        check_name(name)
    assert err.value.param == "name"
    line = one_line_error(run("generate", "-n", "4", "-d", "4", "--name", name, "-o", str(tmp_path / "x.h")), 2)
    assert "--name" in line and repr(name) in line
    assert list(tmp_path.iterdir()) == []


def test_a_namespace_part_ending_in_an_underscore_is_refused(tmp_path):
    line = one_line_error(
        run("generate", "-n", "4", "-d", "4", "--lang", "c++", "--namespace", "model_", "-o", str(tmp_path / "x.h")),
        2,
    )
    assert "--namespace" in line and "'model_'" in line


@pytest.mark.parametrize(
    ("stem", "name"), [("for", "pe_for"), ("int", "pe_int"), ("pe_", "pe"), ("a__b_", "a_b"), ("class", "pe_class")]
)
@pytest.mark.parametrize("suffix", [".h", ".hpp", ".c", ".bin"])
def test_names_from_stems_are_normalised(tmp_path, stem, name, suffix):
    out = tmp_path / f"{stem}{suffix}"
    result = run("generate", "-n", "4", "-d", "4", *(["--lang", "c++"] if suffix == ".hpp" else []), "-o", str(out))
    assert result.exit_code == 0, result.output
    sources = {".h": [out], ".hpp": [out], ".c": [out, out.with_suffix(".h")], ".bin": [out.with_suffix(".h")]}
    upper = name.upper()
    for path in sources[suffix]:
        found = code_identifiers(path.read_text())
        doubled = {i for i in found if "__" in i or i.endswith("_")} - IMPLEMENTATION
        assert not doubled, f"{path.name}: {sorted(doubled)}"
        assert f"{upper}_SEQ_LEN" in found and name in found
    assert posenc_cli.load(out).array.shape == (4, 4)


def test_a_keyword_part_ends_its_identifier_and_never_doubles_an_underscore(tmp_path):
    """Array keys and axis names that are keywords keep the mapping's trailing ``_`` (their bytes do not change):
    a part always ends the identifier it is in."""
    values = np.arange(6, dtype=np.float32).reshape(2, 3)
    table = Table("array", {"int": values, "x": values}, axes={"int": ("for", "d"), "x": ("for", "d")})
    posenc_cli.save(table, tmp_path / "t.h")
    found = code_identifiers((tmp_path / "t.h").read_text())
    assert {"t_int_", "t_x", "T_FOR_", "T_D"} <= found
    assert not {i for i in found if "__" in i} - IMPLEMENTATION


# ------------------------------------------------------------------------------------------- 4. companions
def written(tmp_path: Path, table, name: str, **options) -> list[Path]:
    return posenc_cli.save(table, tmp_path / name, **options)


@pytest.mark.parametrize(
    ("name", "table", "options"),
    [
        ("pe.c", lambda: posenc_cli.generate(4, 4), {}),
        ("pe.c", lambda: posenc_cli.generate(4, 4, dtype="int8", scale=0.01), {"align": 32}),
        ("rope.c", lambda: posenc_cli.rope(4, 4), {"float_literal": "hex"}),
        ("pe.bin", lambda: posenc_cli.generate(4, 4), {}),
        ("pe.bin", lambda: posenc_cli.generate(4, 4, dtype="float16"), {"progmem": True}),
        ("pe.npy", lambda: posenc_cli.generate(4, 4, dtype="bfloat16"), {}),
        ("pe.npy", lambda: posenc_cli.generate(4, 4, dtype="int8", scale=0.01, zero_point=3), {}),
        ("ä b?.c", lambda: posenc_cli.generate(4, 4), {}),
    ],
)
def test_every_companion_posenc_writes_is_recognised(tmp_path, name, table, options):
    paths = written(tmp_path, table(), name, **options)
    fmt = infer(name)
    assert fmt.companion is not None and len(paths) == 2
    assert paths[1] == companion_path(fmt, paths[0])
    head = paths[1].read_bytes()[:4096]
    assert written_by_posenc(fmt.companion, head)
    assert written_by_posenc(fmt.companion, head.replace(b"\n", b"\r\n"))  # after a checkout that converts line ends


@pytest.mark.parametrize("suffix", [".cpp", ".cc", ".cxx"])
def test_cxx_pair_headers_are_recognised(tmp_path, suffix):
    header = write_pair(posenc_cli.generate(4, 4), tmp_path / f"pe{suffix}", namespace="m")
    assert written_by_posenc(FORMATS["c"].companion, header.read_bytes()[:4096])  # type: ignore[arg-type]


FOREIGN = [
    b'{"a": 1}',
    b'{\n  "dtype": "bfloat16",\n  "generator": "my tool",\n  "kind": "x"\n}\n',
    b"",
    b"#pragma once\nstatic const float pe[2] = {0.0f, 1.0f};\n",
    b"/* pe.h: my table. */\n#ifndef PE_H\n#define PE_H\n#endif\n",
    b"/*\n * pe.h: positional-encoding table generated by hand. Do not edit.\n */\n",
    b"// pe.h: positional-encoding table generated by posenc 0.1.0. Do not edit.\n",
    b"\n/*\n * pe.h: positional-encoding table generated by posenc 0.1.0. Do not edit.\n",
]


@pytest.mark.parametrize("head", FOREIGN)
@pytest.mark.parametrize("fmt", ["npy", "c", "bin"])
def test_foreign_files_are_not_posenc_companions(fmt, head):
    companion = FORMATS[fmt].companion
    assert companion is not None and not written_by_posenc(companion, head)


def test_a_companion_of_one_kind_is_not_taken_for_the_other(tmp_path):
    sidecar = written(tmp_path, posenc_cli.generate(4, 4, dtype="bfloat16"), "pe.npy")[1].read_bytes()
    header = written(tmp_path, posenc_cli.generate(4, 4), "t.c")[1].read_bytes()
    assert json.loads(sidecar)["generator"].startswith("posenc ")
    assert not written_by_posenc(FORMATS["c"].companion, sidecar)  # type: ignore[arg-type]
    assert not written_by_posenc(FORMATS["npy"].companion, header)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------- 5. messages
def test_no_suffix_says_what_to_do():
    with pytest.raises(SpecError) as err:
        infer("tables/pe")
    text = str(err.value)
    assert text.startswith("cannot tell the format of 'tables/pe': it has no suffix; name the file with a suffix (")
    assert ".npy" in text and ".hpp" in text and ".cpp" in text and "or give --format" in text
    assert err.value.param == "format" and "\n" not in text


def test_an_unknown_suffix_lists_the_known_ones():
    with pytest.raises(SpecError) as err:
        infer("pe.txt")
    text = str(err.value)
    assert "cannot tell the format of 'pe.txt': no format has the suffix '.txt'; the known suffixes are " in text
    known = [s for fmt in FORMATS.values() for s in fmt.suffixes]
    assert all(suffix in text for suffix in known) and "give --format" in text and "\n" not in text


def test_the_cli_says_what_a_suffixless_output_needs(tmp_path):
    line = one_line_error(run("generate", "-n", "4", "-d", "4", "-o", str(tmp_path / "pe")), 2)
    assert "it has no suffix" in line and "--format" in line


def test_a_namespace_for_c_says_what_it_needs(tmp_path):
    with pytest.raises(SpecError) as err:
        WriteOptions(namespace="model")
    assert err.value.param == "namespace"
    assert "--namespace puts the table in a C++ namespace and needs --lang c++ or a C++ suffix (.hpp" in str(err.value)
    line = one_line_error(run("generate", "-n", "4", "-d", "4", "--namespace", "m", "-o", str(tmp_path / "pe.h")), 2)
    assert "--namespace" in line and "C++ namespace" in line


@pytest.mark.client
@pytest.mark.parametrize("literal", ["decimal", "hex"])
def test_the_bin_header_comment_speaks_of_bits_not_literals(tmp_path, literal):
    table = posenc_cli.generate(4, 4)
    written(tmp_path, table, "pe.bin", float_literal=literal)
    header = (tmp_path / "pe.h").read_text()
    comment = header[: header.index("*/")]
    assert "literal reads back" not in comment and "hexadecimal floating literals" not in comment
    assert "Each value is stored bit for bit in the .bin: no decimal literal, nothing rounded." in comment
    assert "Needs: C89." in comment
    assert np.array_equal(posenc_cli.load(tmp_path / "pe.bin").array, table.array)
    (tmp_path / "main.c").write_text(
        '#define PE_INCBIN\n#include <stdio.h>\n#include "pe.h"\n'
        "int main(void)\n{\n    const unsigned char *p = (const unsigned char *)&pe;\n    unsigned long k;\n"
        '    for (k = 0; k < sizeof(pe); k++) {\n        printf("%02x", p[k]);\n    }\n'
        '    printf("\\n");\n    return 0;\n}\n'
    )
    exe = tmp_path / "prog"
    done = subprocess.run(
        [require_tool("gcc"), "-std=c99", *WARNINGS, "main.c", "-o", str(exe)], cwd=tmp_path, capture_output=True
    )
    assert done.returncode == 0, done.stderr
    shown = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    assert bytes.fromhex(shown.strip()) == table.array.astype("<f4").tobytes()


def test_the_c_and_pair_comments_keep_their_literal_line(tmp_path):
    written(tmp_path, posenc_cli.generate(4, 4), "t.c")
    for name in ("t.c", "t.h"):
        assert "Each literal reads back to the identical value" in (tmp_path / name).read_text()


@pytest.mark.parametrize(("seq_len", "d_model"), [(2, 4), (300, 64)])  # the big one used to be "truncated file"
def test_the_declarations_header_alone_says_what_it_is(tmp_path, seq_len, d_model):
    posenc_cli.save(posenc_cli.generate(seq_len, d_model), tmp_path / "pe.c")
    with pytest.raises(FormatError) as err:
        posenc_cli.load(tmp_path / "pe.h")
    text = str(err.value)
    assert "the declarations header of a .c/.h pair: it holds no values; read pe.c" in text
    assert "truncated" not in text and "\n" not in text
    line = one_line_error(run("inspect", str(tmp_path / "pe.h")), 1)
    assert "the declarations header of a .c/.h pair: it holds no values; read pe.c" in line
    assert run("inspect", str(tmp_path / "pe.c")).exit_code == 0


def test_the_cxx_declarations_header_alone_says_what_it_is(tmp_path):
    header = write_pair(posenc_cli.generate(300, 64), tmp_path / "pe.cpp")
    with pytest.raises(FormatError, match=r"'.*pe\.hpp': this is the declarations header of a \.cpp/\.hpp pair: it "):
        posenc_cli.load(header)
    with open(header, "rb") as fp, pytest.raises(FormatError, match=r"it holds no values; read pe\.cpp"):
        posenc_cli.formats.c.reader.load(io.BufferedReader(fp))  # type: ignore[arg-type]
