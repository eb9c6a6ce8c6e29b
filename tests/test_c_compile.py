"""C outputs, compiled by real C and C++ compilers: warning-free, and the compiled table equals the .npy bit for bit.

Each program prints the bytes of every value of the table as the compiler laid it out in memory; the test compares
that printout with the data bytes of the ``.npy`` of the same table (x86-64 and the .npy are both little-endian).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from posenc_cli.cli import cli

from .conftest import require_tool

WARNINGS = ["-Wall", "-Wextra", "-Wpedantic", "-Werror"]

# (compiler, language, standard): C at every standard the default output promises, C++ at 11 and 17.
TOOLCHAINS = [
    ("gcc", "c", "c89"),
    ("gcc", "c", "c99"),
    ("gcc", "c", "c11"),
    ("clang", "c", "c89"),
    ("clang", "c", "c99"),
    ("clang", "c", "c11"),
    ("g++", "c++", "c++11"),
    ("g++", "c++", "c++17"),
    ("clang++", "c++", "c++11"),
    ("clang++", "c++", "c++17"),
]

DUMP_BYTES = r"""
#include <stdio.h>
#include "pe.h"

int main(void)
{
    const unsigned char *p = (const unsigned char *)&pe[0][0];
    unsigned long k;
    for (k = 0; k < (unsigned long)sizeof(pe); k++) {
        printf("%02x", p[k]);
    }
    printf("\n");
    return 0;
}
"""

ADDRESS_OF_TABLE = r"""
#include "pe.h"

const void *table_seen_by_other_unit(void);
const void *table_seen_by_other_unit(void) { return &pe[0][0]; }
"""

MAIN_OF_PAIR = r"""
#include <stdio.h>
#include "pe.h"

const void *table_seen_by_other_unit(void);

int main(void)
{
    const unsigned char *p = (const unsigned char *)&pe[0][0];
    unsigned long k;
    if (table_seen_by_other_unit() != (const void *)&pe[0][0]) {
        printf("two copies\n");
        return 1;
    }
    for (k = 0; k < (unsigned long)sizeof(pe); k++) {
        printf("%02x", p[k]);
    }
    printf("\n");
    return 0;
}
"""


def compile_and_run(compiler: str, lang: str, std: str, sources: list[Path], workdir: Path) -> str:
    exe = workdir / f"prog-{compiler}-{std}"
    cmd = [require_tool(compiler), "-x", lang, f"-std={std}", *WARNINGS, "-I", str(workdir), *map(str, sources)]
    cmd += ["-o", str(exe)]
    build = subprocess.run(cmd, capture_output=True, text=True)
    assert build.returncode == 0, f"{' '.join(cmd)}\n{build.stderr}"
    run = subprocess.run([str(exe)], capture_output=True, text=True, check=True)
    return run.stdout.strip()


@pytest.fixture(scope="module", params=["float32", "float64"])
def tables(request, tmp_path_factory) -> tuple[Path, str]:
    """pe.h, pe.c + pe_pair.h, and the .npy data bytes of the same table (odd d_model, positions past 1e5)."""
    dtype = request.param
    workdir = tmp_path_factory.mktemp(f"c-{dtype}")
    common = ["-n", "100", "-d", "37", "--dtype", dtype, "--name", "pe"]
    runner = CliRunner()
    for out in ("pe.h", "pe.npy"):
        result = runner.invoke(cli, ["generate", *common, "-o", str(workdir / out)], catch_exceptions=False)
        assert result.exit_code == 0, result.stderr
    (workdir / "pair").mkdir()
    result = runner.invoke(cli, ["generate", *common, "-o", str(workdir / "pair" / "pe.c")], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    return workdir, np.load(workdir / "pe.npy").tobytes().hex()


@pytest.mark.client
@pytest.mark.parametrize(("compiler", "lang", "std"), TOOLCHAINS)
def test_header_compiles_cleanly_and_holds_the_npy_values(tables, compiler, lang, std):
    workdir, expected = tables
    main = workdir / "dump.c"
    main.write_text(DUMP_BYTES)
    assert compile_and_run(compiler, lang, std, [main], workdir) == expected


@pytest.mark.client
@pytest.mark.parametrize(("compiler", "lang", "std"), TOOLCHAINS)
def test_source_pair_links_two_units_into_one_table(tables, compiler, lang, std):
    workdir, expected = tables
    pair = workdir / "pair"
    (pair / "other.c").write_text(ADDRESS_OF_TABLE)
    (pair / "main.c").write_text(MAIN_OF_PAIR)
    sources = [pair / "pe.c", pair / "other.c", pair / "main.c"]
    assert compile_and_run(compiler, lang, std, sources, pair) == expected
    symbols = subprocess.run(
        [require_tool("nm"), str(pair / f"prog-{compiler}-{std}")], capture_output=True, text=True, check=True
    ).stdout.split("\n")
    definitions = [line for line in symbols if line.split()[-1:] == ["pe"]]
    assert len(definitions) == 1, definitions


@pytest.mark.client
@pytest.mark.parametrize("compiler", ["gcc", "clang"])
def test_header_included_but_unused_is_warning_free(tables, compiler):
    workdir, _ = tables
    unit = workdir / "unused.c"
    unit.write_text('#include "pe.h"\nint answer(void);\nint answer(void) { return PE_SEQ_LEN * PE_D_MODEL; }\n')
    cmd = [
        require_tool(compiler),
        "-std=c99",
        *WARNINGS,
        "-I",
        str(workdir),
        "-c",
        str(unit),
        "-o",
        str(workdir / "u.o"),
    ]
    build = subprocess.run(cmd, capture_output=True, text=True)
    assert build.returncode == 0, build.stderr


def test_header_layout(tables):
    workdir, _ = tables
    text = (workdir / "pe.h").read_text()
    assert "#ifndef POSENC_PE_H\n#define POSENC_PE_H\n" in text
    assert "#define PE_SEQ_LEN 100\n#define PE_D_MODEL 37\n" in text
    assert (
        "static const float pe[PE_SEQ_LEN][PE_D_MODEL] POSENC_TABLE_ATTRIBUTE = {" in text
        or "static const double pe[" in text
    )
    assert "command: posenc generate --seq-len 100 --d-model 37" in text and "-o pe.h" in text
    assert str(workdir) not in text, "absolute build paths make outputs differ between build trees"
    declarations = (workdir / "pair" / "pe.h").read_text()
    assert 'extern "C" {' in declarations and "extern const " in declarations
    assert '#include "pe.h"' in (workdir / "pair" / "pe.c").read_text()
