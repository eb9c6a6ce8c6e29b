"""C23 ``#embed`` in the ``.h`` of a ``.bin`` (:mod:`posenc_cli.formats.c.bin`), built by real compilers.

One translation unit defines ``<NAME>_INCBIN`` and includes the header (and uses the arrays through it); a second
unit includes it alone and prints every entry's bit pattern, its ``sizeof``, its alignment, and whether the first
unit sees the same object. The patterns are compared with the arrays of the ``.npz`` of the same command, read by
numpy. Clang 19 in C23 mode takes ``#embed`` (the preprocessed unit shows the union and no ``.incbin``; it builds for
Mach-O and COFF targets, where ``.incbin``'s ELF directives cannot), and every other compiler here takes ``.incbin``
(GCC 12, Clang 14, Clang 19 before C23, C++, ``POSENC_NO_EMBED``): the same program gives the same output.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import posenc_cli
from posenc_cli.cli import cli
from posenc_cli.dtypes import DTYPES
from posenc_cli.errors import FormatError

from .conftest import require_tool
from .test_c_compile import WARNINGS

C23 = ["-std=c23", *WARNINGS, "-Wundef"]

# (id, posenc arguments before -o, file stem): the table kinds, each written as <stem>.bin and <stem>.npz.
KINDS = [
    ("generate", ["generate", "-n", "9", "-d", "6"], "pe"),
    ("rope-cos-sin-inv-freq", ["rope", "-n", "7", "--head-dim", "8"], "rope"),
    ("relative-int16", ["relative", "--scheme", "t5", "-Q", "6", "--dtype", "int16"], "t5"),
    ("alibi-slopes-bias", ["alibi", "-H", "4", "-n", "5"], "alibi"),
    ("window-index-coords", ["window", "--scheme", "swinv2", "-w", "3"], "win"),
    ("sincos2d-aligned-64", ["sincos2d", "-g", "3", "-d", "8", "--align", "64"], "grid"),
]
INT8_AFFINE = ["--scale", "0.015625", "--zero-point", "-3"]
# Every element type: the float tables' (each of DTYPES, fixed point of an int16, int32 and int64, native halves)
# and the index tables' integers.
ELEMENT_TYPES = [
    *[
        (dtype, ["generate", "-n", "5", "-d", "6", "--dtype", dtype, *(INT8_AFFINE if dtype == "int8" else [])])
        for dtype in DTYPES
    ],
    *[
        (dtype, ["generate", "-n", "5", "-d", "6", "--dtype", dtype])
        for dtype in ("fixed12.10", "fixed18.16", "fixed40.30")
    ],
    *[
        (f"float16-{half}", ["generate", "-n", "5", "-d", "6", "--dtype", "float16", "--c-half-type", half])
        for half in ("_Float16", "__fp16")
    ],
    *[
        (f"index-{d}", ["relative", "--scheme", "shaw", "-Q", "5", "--max-distance", "3", "--dtype", d])
        for d in ("int8", "int16", "int32", "int64")
    ],
]

DEFINING_UNIT = r"""
#include <stddef.h>
#define {NAME}_INCBIN
#include "{stem}.h"
#ifdef __cplusplus
extern "C" {{
#endif
{functions}
#ifdef __cplusplus
}}
#endif
"""

MAIN = r"""
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "{stem}.h"
#ifdef __cplusplus
extern "C" {{
#endif
{prototypes}
#ifdef __cplusplus
}}
#endif

static void bits(const void *p, size_t n)
{{
    uint64_t v = 0;
    memcpy(&v, p, n); /* little-endian host: the element's bit pattern */
    printf(" %llx", (unsigned long long)v);
}}

int main(void)
{{
{body}    return 0;
}}
"""


def clang19() -> str:
    return require_tool("clang-19")


def without_c_options(command: list[str]) -> list[str]:
    """``command`` without the options that only C outputs take (the .npz holds the same values)."""
    c_only = [n for n, arg in enumerate(command) if arg in ("--align", "--c-half-type")]
    return [arg for n, arg in enumerate(command) if n not in c_only and n - 1 not in c_only]


def posenc(*args: str) -> None:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.stderr


class Tables:
    """A table written as ``<stem>.bin`` (with its ``.h``) and ``<stem>.npz``, and the programs that print it."""

    def __init__(self, workdir: Path, command: list[str], stem: str, name: str | None = None) -> None:
        self.dir, self.stem, name = workdir, stem, name or stem
        workdir.mkdir(parents=True, exist_ok=True)
        posenc(*command, "--name", name, "-o", str(workdir / f"{stem}.bin"))
        posenc(*without_c_options(command), "-o", str(workdir / f"{stem}.npz"))
        with np.load(workdir / f"{stem}.npz") as npz:
            self.arrays = {key: npz[key] for key in npz.files}
        self.symbols = {key: name if len(self.arrays) == 1 else f"{name}_{key}" for key in self.arrays}
        self.NAME = name.upper()
        self.align = int(command[command.index("--align") + 1]) if "--align" in command else 16
        self.write_programs()

    def write_programs(self) -> None:
        functions, prototypes, body = [], [], []
        for n, (key, symbol) in enumerate(self.symbols.items()):
            ndim = self.arrays[key].ndim
            # the defining unit sees the array through the header too: its address and size
            functions.append(
                f"const void *address_{n}(void);\nconst void *address_{n}(void) {{ return &{symbol}; }}\n"
                f"size_t size_{n}(void);\nsize_t size_{n}(void) {{ return sizeof {symbol}; }}\n"
            )
            prototypes.append(f"const void *address_{n}(void);\nsize_t size_{n}(void);\n")
            index = "".join(f"[i{k}]" for k in range(ndim))
            loops = "".join(
                f"{'    ' * (k + 1)}for (size_t i{k} = 0; i{k} < sizeof {symbol}{''.join(f'[i{j}]' for j in range(k))}"
                f" / sizeof {symbol}{''.join(f'[i{j}]' for j in range(k))}[0]; i{k}++)\n"
                for k in range(ndim)
            )
            body.append(
                f'    printf("{symbol} %zu %d %d %d", sizeof {symbol},\n'
                f"           (int)((uintptr_t)&{symbol} % {self.align} == 0),\n"
                f"           address_{n}() == (const void *)&{symbol}, size_{n}() == sizeof {symbol});\n"
                f"{loops}{'    ' * (ndim + 1)}bits(&{symbol}{index}, sizeof {symbol}{index});\n"
                '    printf("\\n");\n'
            )
        fill = {"NAME": self.NAME, "stem": self.stem}
        (self.dir / "unit.c").write_text(DEFINING_UNIT.format(functions="".join(functions), **fill))
        (self.dir / "main.c").write_text(MAIN.format(prototypes="".join(prototypes), body="".join(body), **fill))

    def expected(self) -> str:
        """What the program prints, from the ``.npz``: the bit patterns as numpy holds them."""
        lines = []
        for key, symbol in self.symbols.items():
            array = self.arrays[key]
            patterns = array.view(f"<u{array.itemsize}").ravel()
            lines.append(f"{symbol} {array.nbytes} 1 1 1" + "".join(f" {int(v):x}" for v in patterns))
        return "\n".join(lines) + "\n"

    def build(self, unit: list[str], main: list[str] | None = None, link: str | None = None) -> str:
        """Compile the defining unit with ``unit`` (compiler and flags), the other with ``main`` (by default the
        same), link with ``link`` (by default the unit's compiler), run; the output."""
        main = main or unit
        objects = []
        for source, command in (("unit.c", unit), ("main.c", main)):
            obj = self.dir / f"{source}.o"
            run([*command, "-c", str(self.dir / source), "-o", str(obj)], self.dir)
            objects.append(str(obj))
        exe = self.dir / "prog"
        run([link or unit[0], *objects, "-o", str(exe)], self.dir)
        return subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout

    def preprocessed(self, command: list[str]) -> str:
        return run([*command, "-E", str(self.dir / "unit.c")], self.dir)


def run(command: list[str], cwd: Path) -> str:
    done = subprocess.run(command, capture_output=True, text=True, cwd=cwd)  # .incbin's assembler finds it here
    assert done.returncode == 0 and not done.stderr, f"{' '.join(command)}\n{done.stderr}"
    return done.stdout


def fails(command: list[str], cwd: Path) -> str:
    done = subprocess.run(command, capture_output=True, text=True, cwd=cwd)
    assert done.returncode != 0, " ".join(command)
    return done.stderr


def takes_embed(text: str, symbols: dict[str, str]) -> bool:
    """Whether a preprocessed defining unit defines the arrays with ``#embed`` (unions) or ``.incbin``."""
    embed = all(f"({symbol}.posenc_values)" in text for symbol in symbols.values())
    incbin = ".incbin" in text
    assert embed != incbin, text[-2000:]
    return embed


# ------------------------------------------------------------------------------------------------- #embed
@pytest.mark.client
@pytest.mark.parametrize(("dtype", "command"), ELEMENT_TYPES, ids=[t[0] for t in ELEMENT_TYPES])
def test_embed_defines_every_element_type(tmp_path, dtype, command):
    tables = Tables(tmp_path, command, "pe")
    compiler = [clang19(), *C23]
    assert takes_embed(tables.preprocessed(compiler), tables.symbols)
    assert tables.build(compiler) == tables.expected()


@pytest.mark.client
@pytest.mark.parametrize(("command", "stem"), [k[1:] for k in KINDS], ids=[k[0] for k in KINDS])
def test_embed_defines_every_table_kind(tmp_path, command, stem):
    tables = Tables(tmp_path, command, stem)
    compiler = [clang19(), *C23]
    assert takes_embed(tables.preprocessed(compiler), tables.symbols)
    assert tables.build(compiler) == tables.expected()  # each array aligned to 16, or to --align (64)


@pytest.mark.client
def test_embed_builds_for_targets_without_elf(tmp_path):
    """Mach-O and COFF have no ``.type``/``.size``/``.rodata``: only ``#embed`` builds there, and it builds."""
    Tables(tmp_path, KINDS[1][1], "rope")
    for target in ("x86_64-apple-macos", "arm64-apple-macos", "x86_64-pc-windows-msvc"):
        command = [clang19(), f"--target={target}", "-ffreestanding", *C23, "-c", "unit.c", "-o", "unit.o"]
        run(command, tmp_path)
        assert "<inline asm>" in fails([*command, "-DPOSENC_NO_EMBED"], tmp_path)  # .incbin cannot


@pytest.mark.client
@pytest.mark.parametrize("change", ["short", "long"])
@pytest.mark.parametrize(("command", "stem"), [KINDS[0][1:], KINDS[1][1:]], ids=["one-array", "three-arrays"])
def test_embed_refuses_a_bin_of_another_size(tmp_path, command, stem, change):
    Tables(tmp_path, command, stem)
    binary = tmp_path / f"{stem}.bin"
    data = binary.read_bytes()
    binary.write_bytes(data[:-1] if change == "short" else data + b"\0")
    error = fails([clang19(), *C23, "-c", "unit.c", "-o", "unit.o"], tmp_path)
    words = "fewer than" if change == "short" else "more than"
    assert f'"{stem}.bin holds {words} {len(data)} bytes: write {stem}.bin and {stem}.h again"' in error, error


@pytest.mark.client
def test_embed_refuses_a_big_endian_target(tmp_path):
    Tables(tmp_path, KINDS[0][1], "pe")
    for std in ("-std=c23", "-std=c17"):  # #embed and .incbin: the .bin is little-endian either way
        command = [clang19(), "--target=powerpc-linux-gnu", "-ffreestanding", std, "-c", "unit.c", "-o", "unit.o"]
        assert "pe.bin holds little-endian values, and this target is big-endian" in fails(command, tmp_path)


@pytest.mark.client
def test_embed_finds_the_bin_beside_the_header_from_another_folder(tmp_path):
    """``#embed "..."`` looks beside the header: a unit in another folder needs only the -I that finds the header."""
    tables = Tables(tmp_path / "tables", KINDS[0][1], "pe")
    build = tmp_path / "build"
    build.mkdir()
    (build / "unit.c").write_text((tables.dir / "unit.c").read_text())
    command = [clang19(), *C23, "-I", "../tables", "-c", "unit.c", "-o", "unit.o"]
    assert takes_embed(run([*command[:-3], "-E", "unit.c"], build), tables.symbols)
    run(command, build)


@pytest.mark.client
@pytest.mark.parametrize("stem", ["donnée", "my table"])
def test_embed_file_names_stand_in_the_directive_as_they_are(tmp_path, stem):
    """A header name takes no escapes: the UTF-8 name is written as it is, and a space is a space."""
    tables = Tables(tmp_path, ["generate", "-n", "3", "-d", "4"], stem, "pe")
    assert f'#embed "{stem}.bin"' in (tmp_path / f"{stem}.h").read_text(encoding="utf-8")
    compiler = [clang19(), *C23]
    assert takes_embed(tables.preprocessed(compiler), tables.symbols)
    assert tables.build(compiler) == tables.expected()


@pytest.mark.parametrize("stem", ['a"b', "a\\b", "a'b", "a??b"])
def test_file_names_that_cannot_stand_in_a_directive_are_refused(tmp_path, stem):
    result = CliRunner().invoke(
        cli, ["generate", "-n", "3", "-d", "4", "--name", "pe", "-o", str(tmp_path / f"{stem}.bin")]
    )
    assert result.exit_code == 2 and "rename the output" in result.stderr, result.stderr
    assert list(tmp_path.iterdir()) == []


# -------------------------------------------------------------------------------------- everywhere else
INCBIN_COMPILERS = [
    ("gcc-12-c2x", ["gcc", "-std=c2x"]),  # __STDC_VERSION__ 202000L, no __has_embed
    ("gcc-12-c99", ["gcc", "-std=c99"]),
    ("clang-14-c2x", ["clang", "-std=c2x"]),
    ("clang-14-c11", ["clang", "-std=c11"]),
    ("clang-19-c17", ["clang-19", "-std=c17"]),  # __has_embed exists; #embed there is an extension: not taken
    ("clang-19-gnu17", ["clang-19", "-std=gnu17"]),
    ("clang-19-c23-no-embed", ["clang-19", "-std=c23", "-DPOSENC_NO_EMBED"]),
    ("clang++-19-c++17", ["clang++-19", "-x", "c++", "-std=c++17"]),  # #embed is C's here: C++ takes .incbin
    ("g++-12-c++11", ["g++", "-x", "c++", "-std=c++11"]),
]


@pytest.mark.client
@pytest.mark.parametrize(
    ("compiler", "flags"), [c[1][:1] + [c[1][1:]] for c in INCBIN_COMPILERS], ids=[c[0] for c in INCBIN_COMPILERS]
)
@pytest.mark.parametrize(("command", "stem"), [KINDS[1][1:], KINDS[2][1:]], ids=["rope", "relative-int16"])
def test_other_compilers_take_incbin_with_the_same_result(tmp_path, compiler, flags, command, stem):
    tables = Tables(tmp_path, command, stem)
    build = [require_tool(compiler), *flags, *WARNINGS, "-Wundef"]
    assert not takes_embed(tables.preprocessed(build), tables.symbols)
    assert tables.build(build) == tables.expected()


@pytest.mark.client
def test_c17_embed_would_be_an_extension_that_pedantic_refuses(tmp_path):
    """Why #embed waits for C23: Clang 19 has it before, as an extension that -Wpedantic -Werror reports."""
    (tmp_path / "x.bin").write_bytes(b"\1\2")
    (tmp_path / "x.c").write_text('const unsigned char x[] = {\n#embed "x.bin"\n};\n')
    error = fails([clang19(), "-std=c17", *WARNINGS, "-c", "x.c", "-o", "x.o"], tmp_path)
    assert "#embed is a C23 extension" in error
    run([clang19(), "-std=c23", *WARNINGS, "-c", "x.c", "-o", "x.o"], tmp_path)


@pytest.mark.client
@pytest.mark.parametrize(
    ("main", "link"),
    [
        (["clang++-19", "-x", "c++", "-std=c++17"], "clang++-19"),
        (["gcc", "-std=c99"], "gcc"),
        (["clang", "-std=c11"], "clang"),
    ],
    ids=["clang++-19-c++17", "gcc-12-c99", "clang-14-c11"],
)
def test_units_in_other_languages_and_standards_link_to_the_embed_definitions(tmp_path, main, link):
    """The symbols #embed defines are those .incbin defines: any other unit links to them."""
    tables = Tables(tmp_path, KINDS[1][1], "rope")
    unit = [clang19(), *C23]
    assert takes_embed(tables.preprocessed(unit), tables.symbols)
    main_flags = [require_tool(main[0]), *main[1:], *WARNINGS]
    assert tables.build(unit, main_flags, require_tool(link)) == tables.expected()


@pytest.mark.client
def test_embed_and_incbin_objects_hold_the_same_symbols_and_bytes(tmp_path):
    tables = Tables(tmp_path, KINDS[1][1], "rope")
    found = {}
    for std in ("-std=c23", "-std=c17"):
        obj = tmp_path / f"unit{std}.o"
        run([clang19(), std, *WARNINGS, "-c", "unit.c", "-o", str(obj)], tmp_path)
        symbols = run(["nm", "-S", "--defined-only", str(obj)], tmp_path).split("\n")
        sizes = {
            line.split()[-1]: int(line.split()[1], 16)
            for line in symbols
            if line.split()[-1:] and line.split()[-1] in tables.symbols.values()
        }
        rodata = tmp_path / f"rodata{std}"
        run(["objcopy", "-O", "binary", "-j", ".rodata", str(obj), str(rodata)], tmp_path)
        found[std] = (sizes, rodata.read_bytes())
    assert found["-std=c23"] == found["-std=c17"]
    assert found["-std=c23"][0] == {symbol: tables.arrays[key].nbytes for key, symbol in tables.symbols.items()}


# ------------------------------------------------------------------------------------------------ reader
def test_the_reader_reads_the_bin_with_its_new_header(tmp_path):
    tables = Tables(tmp_path, KINDS[1][1], "rope")
    table = posenc_cli.load(tmp_path / "rope.bin")
    assert list(table.arrays) == list(tables.arrays)
    for key, array in tables.arrays.items():
        assert np.array_equal(np.asarray(table.arrays[key]).view(np.uint8), array.view(np.uint8))


TAMPERED = [
    ("limit", "__limit__(224)", "__limit__(223)"),
    ("offset", "POSENC_EMBED(224)", "POSENC_EMBED(0)"),
    ("file", '#embed "rope.bin" POSENC_EMBED(0)', '#embed "other.bin" POSENC_EMBED(0)'),
    ("macro", "#define rope_sin (rope_sin.posenc_values)", "#define rope_sin (rope_cos.posenc_values)"),
    ("switch", "!defined(POSENC_NO_EMBED)", "defined(POSENC_NO_EMBED)"),
    ("size-check", "!= __STDC_EMBED_EMPTY__", "== __STDC_EMBED_NOT_FOUND__"),
    ("endianness", "__BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__", "0"),
    ("member-type", "    float posenc_values[ROPE_SEQ_LEN]", "    double posenc_values[ROPE_SEQ_LEN]"),
    ("extra-line", "#undef POSENC_EMBED\n", "#undef POSENC_EMBED\n#define rope_cos 0\n"),
    ("declarations-shown", "#ifndef POSENC_EMBED\n", "#if 1\n"),
]


@pytest.mark.parametrize(("old", "new"), [t[1:] for t in TAMPERED], ids=[t[0] for t in TAMPERED])
def test_the_reader_refuses_a_header_whose_embed_part_was_changed(tmp_path, old, new):
    Tables(tmp_path, KINDS[1][1], "rope")
    header = tmp_path / "rope.h"
    text = header.read_text()
    assert text.count(old) >= 1
    header.write_text(text.replace(old, new, 1))
    with pytest.raises(FormatError, match="posenc did not write"):
        posenc_cli.load(tmp_path / "rope.bin")


C89_DUMP = """#define ROPE_INCBIN
#include <stdio.h>
#include "rope.h"

static void dump(const void *p, unsigned long n)
{
    const unsigned char *b = (const unsigned char *)p;
    unsigned long k;
    for (k = 0; k < n; k++) {
        printf("%02x", b[k]);
    }
    printf("\\n");
}

int main(void)
{
    dump(rope_cos, sizeof rope_cos);
    dump(rope_sin, sizeof rope_sin);
    dump(rope_inv_freq, sizeof rope_inv_freq);
    return 0;
}
"""


@pytest.mark.client
@pytest.mark.parametrize("compiler", ["gcc", "clang"])
def test_incbin_of_several_arrays_is_c89_clean_every_string_under_509_characters(tmp_path, compiler):
    """C90 compilers need support string literals of 509 characters only, and clang -std=c89 -pedantic warns past
    them: one __asm__ statement per array keeps each short, so a three-array table builds as C89."""
    tool = require_tool(compiler)
    posenc("rope", "-n", "24", "--head-dim", "8", "--name", "rope", "-o", str(tmp_path / "rope.bin"))
    posenc("rope", "-n", "24", "--head-dim", "8", "--name", "rope", "-o", str(tmp_path / "rope.npz"))
    (tmp_path / "main.c").write_text(C89_DUMP)
    flags = ["-std=c89", "-Wall", "-Wextra", "-pedantic", "-Werror", "-Woverlength-strings"]
    run([tool, *flags, "main.c", "-o", "dump"], tmp_path)
    printed = run([str(tmp_path / "dump")], tmp_path).split()
    with np.load(tmp_path / "rope.npz") as npz:
        want = [npz[key].astype(npz[key].dtype.newbyteorder("<")).tobytes().hex() for key in ("cos", "sin", "inv_freq")]
    assert printed == want
