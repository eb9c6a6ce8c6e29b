"""C outputs, compiled by embedded cross toolchains: warning-free, and the object file holds the .npy bytes.

Nothing is executed: each test compiles (and for the .c/.h pair, links) for the target, finds the table's symbol in the
ELF symbol table (``readelf -hSsW``), dumps the section holding it (``objcopy --dump-section``) and slices the symbol's
bytes out, then compares them with the data bytes of the ``.npy`` of the same table. Both targets are little-endian.

- ARM Cortex-M4, hard float (arm-none-eabi-gcc): float32 and float64 (``double`` is IEEE binary64 on the ARM EABI).
- AVR ATmega328P (avr-gcc): float32 only. avr-gcc 5.4 makes ``double`` 32 bits wide, so a float64 header compiles
  without a word there but holds float32-rounded values; that is not a float64 table, so it is not tested here.

apt packages: gcc-arm-none-eabi binutils-arm-none-eabi libnewlib-arm-none-eabi gcc-avr binutils-avr avr-libc
(the tests include no libc header and link with -nostdlib, but a real firmware build needs newlib and avr-libc).
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from posenc_cli.cli import cli

from .conftest import require_tool

pytestmark = pytest.mark.client  # every test here runs a real client

WARNINGS = ["-Wall", "-Wextra", "-Wpedantic", "-Werror"]
SEQ_LEN, D_MODEL = 100, 37  # odd d_model: the last column is a sine
EXPECTED_DTYPE = {"float32": "<f4", "float64": "<f8"}


@dataclass(frozen=True)
class Toolchain:
    """A cross toolchain: the prefix of its tools, the flags that select the target, and the dtypes it can hold."""

    id: str
    prefix: str
    target_flags: tuple[str, ...]
    dtypes: tuple[str, ...]

    def tool(self, name: str) -> str:
        return require_tool(self.prefix + name)


ARM_CM4 = Toolchain(
    "arm-cortex-m4",
    "arm-none-eabi-",
    ("-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16", "-O2"),
    ("float32", "float64"),
)
AVR_328P = Toolchain("avr-atmega328p", "avr-", ("-mmcu=atmega328p", "-Os"), ("float32",))  # 32-bit double
TOOLCHAINS = [ARM_CM4, AVR_328P]
STANDARDS = ["c89", "c99", "c11"]

# (toolchain, dtype): every dtype each toolchain can hold; "tables" is the module fixture, parametrised indirectly.
TARGETS = [pytest.param(tc, dtype, id=f"{tc.id}-{dtype}") for tc in TOOLCHAINS for dtype in tc.dtypes]


@dataclass(frozen=True)
class SymbolBytes:
    """A data symbol as an ELF file (a relocatable object or a linked image) holds it."""

    data: bytes
    section: str
    address: int  # st_value: the offset in its section in a relocatable object, the absolute address in an image
    size: int
    binding: str  # LOCAL, GLOBAL, WEAK
    section_alignment: int  # sh_addralign
    relocatable: bool  # a .o (ELF type REL): its sections' final addresses are only known to be aligned

    @property
    def alignment(self) -> int:
        """The largest power of two the symbol's final address is sure to be a multiple of."""
        low_bit = self.address & -self.address if self.address else 1 << 64
        return min(low_bit, self.section_alignment) if self.relocatable else low_bit


def table_bytes(elf: Path, symbol: str, toolchain: Toolchain, workdir: Path) -> SymbolBytes:
    """The bytes of the one defined data symbol ``symbol`` in ``elf``, with where it lives.

    ``<prefix>readelf -hSsW`` gives the file type, the section headers and the symbol table; ``<prefix>objcopy
    --dump-section`` writes the section's contents to a file in ``workdir``, sliced at the symbol's offset and size.
    """
    out = subprocess.run(
        [toolchain.tool("readelf"), "-hSsW", str(elf)], capture_output=True, text=True, check=True
    ).stdout
    relocatable = False
    sections: dict[int, tuple[str, int, int]] = {}  # index -> (name, address, alignment)
    found = []
    for line in out.splitlines():
        fields = line.split()
        if fields[:1] == ["Type:"]:
            relocatable = fields[1] == "REL"
        elif line.lstrip().startswith("[") and "]" in line:
            index, _, rest = line.lstrip()[1:].partition("]")
            columns = rest.split()
            # Name Type Address Off Size ES [Flg] Lk Inf Al: the flags column may be empty, the alignment is last.
            if index.strip().isdigit() and int(index) > 0 and len(columns) >= 9:
                sections[int(index)] = (columns[0], int(columns[2], 16), int(columns[-1]))
        elif len(fields) == 8 and fields[0].endswith(":") and fields[7] == symbol and fields[6].isdigit():
            found.append(fields)  # Num: Value Size Type Bind Vis Ndx Name, defined in section Ndx
    assert len(found) == 1, f"{symbol} defined {len(found)} times in {elf.name}:\n{out}"
    _, value, size_text, kind, binding, _, ndx, _ = found[0]
    assert kind == "OBJECT", found[0]
    address, size = int(value, 16), int(size_text, 0)  # readelf prints big sizes in hex (0x...)
    section, section_address, section_alignment = sections[int(ndx)]
    dump = workdir / f"{elf.name}{section}.bin"
    objcopy = [toolchain.tool("objcopy"), "--dump-section", f"{section}={dump}", str(elf), f"{dump}.elf"]
    subprocess.run(objcopy, capture_output=True, text=True, check=True)
    contents = dump.read_bytes()
    offset = address - section_address
    assert 0 <= offset and offset + size <= len(contents), (section, offset, size, len(contents))
    return SymbolBytes(
        contents[offset : offset + size], section, address, size, binding, section_alignment, relocatable
    )


def compile_c(toolchain: Toolchain, std: str, source: Path, workdir: Path) -> Path:
    """Compile ``source`` to an object file; fail on any diagnostic (even one that -Werror would not catch)."""
    obj = workdir / f"{source.stem}-{toolchain.id}-{std}.o"
    cmd = [
        toolchain.tool("gcc"),
        *toolchain.target_flags,
        f"-std={std}",
        *WARNINGS,
        "-I",
        str(source.parent),
        "-c",
        str(source),
        "-o",
        str(obj),
    ]
    build = subprocess.run(cmd, capture_output=True, text=True)
    assert build.returncode == 0 and not build.stderr, f"{' '.join(cmd)}\n{build.stderr}"
    return obj


def generate(out: Path, dtype: str) -> None:
    args = ["generate", "-n", str(SEQ_LEN), "-d", str(D_MODEL), "--dtype", dtype, "--name", "pe", "-o", str(out)]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output


@pytest.fixture(scope="module", params=["float32", "float64"])
def tables(request, tmp_path_factory) -> tuple[str, Path, bytes]:
    """(dtype, directory with pe.h and pair/pe.c + pair/pe.h, the .npy data bytes of the same table)."""
    dtype = request.param
    workdir = tmp_path_factory.mktemp(f"cross-{dtype}")
    generate(workdir / "pe.h", dtype)
    generate(workdir / "pe.npy", dtype)
    (workdir / "pair").mkdir()
    generate(workdir / "pair" / "pe.c", dtype)
    expected = np.load(workdir / "pe.npy", allow_pickle=False).astype(EXPECTED_DTYPE[dtype]).tobytes()
    return dtype, workdir, expected


USES_TABLE = r"""
#include "pe.h"

const void *pe_address(void);
const void *pe_address(void) { return &pe[0][0]; }
"""


@pytest.mark.parametrize("std", STANDARDS)
@pytest.mark.parametrize(("toolchain", "tables"), TARGETS, indirect=["tables"])
def test_header_compiles_cleanly_and_object_holds_the_npy_bytes(toolchain, tables, std):
    dtype, workdir, expected = tables
    unit = workdir / "uses_table.c"
    unit.write_text(USES_TABLE)
    obj = compile_c(toolchain, std, unit, workdir)
    table = table_bytes(obj, "pe", toolchain, workdir)
    assert table.binding == "LOCAL", "a static table in a header has internal linkage"
    assert table.size == SEQ_LEN * D_MODEL * np.dtype(EXPECTED_DTYPE[dtype]).itemsize
    assert table.data == expected


@pytest.mark.parametrize("toolchain", TOOLCHAINS, ids=[tc.id for tc in TOOLCHAINS])
@pytest.mark.parametrize("tables", ["float32"], indirect=True)
def test_header_included_but_unused_is_warning_free(toolchain, tables):
    _, workdir, _ = tables
    unit = workdir / "unused.c"
    unit.write_text('#include "pe.h"\nint answer(void);\nint answer(void) { return PE_SEQ_LEN * PE_D_MODEL; }\n')
    obj = compile_c(toolchain, "c99", unit, workdir)
    symbols = subprocess.run([toolchain.tool("nm"), str(obj)], capture_output=True, text=True, check=True).stdout
    assert " pe\n" not in symbols, "an unused static table should not reach the object file"


PAIR_UNIT_A = r"""
#include "pe.h"

const void *pe_address_a(void);
const void *pe_address_a(void) { return &pe[0][0]; }
"""

PAIR_UNIT_B = r"""
#include "pe.h"

const void *pe_address_a(void);
const void *pe_address_b(void);
void reset_handler(void);

const void *volatile seen_by_a;
const void *volatile seen_by_b;

const void *pe_address_b(void) { return &pe[PE_SEQ_LEN - 1][PE_D_MODEL - 1]; }

void reset_handler(void)
{
    for (;;) {
        seen_by_a = pe_address_a();
        seen_by_b = pe_address_b();
    }
}
"""


@pytest.mark.parametrize("std", ["c89", "c99"])
@pytest.mark.parametrize("tables", ["float32", "float64"], indirect=True)
def test_source_pair_links_two_units_into_one_table_on_cortex_m4(tables, std):
    toolchain = ARM_CM4
    dtype, workdir, expected = tables
    pair = workdir / "pair"
    (pair / "unit_a.c").write_text(PAIR_UNIT_A)
    (pair / "unit_b.c").write_text(PAIR_UNIT_B)
    objects = [compile_c(toolchain, std, pair / name, pair) for name in ("pe.c", "unit_a.c", "unit_b.c")]
    nm = toolchain.tool("nm")
    for obj in objects:
        symbols = subprocess.run([nm, str(obj)], capture_output=True, text=True, check=True).stdout.splitlines()
        kinds = [line.split()[-2] for line in symbols if line.split()[-1:] == ["pe"]]
        # the definition (R: global read-only data) in pe.o; a reference to it (U) in each unit that uses it
        assert kinds == (["R"] if obj.name.startswith("pe-") else ["U"]), (obj.name, symbols)

    # A bare-metal link: no startup files or C library, an entry point of our own, the default linker script.
    image = pair / f"image-{dtype}-{std}.elf"
    cmd = [
        toolchain.tool("gcc"),
        *toolchain.target_flags,
        "-nostdlib",
        "-Wl,--entry=reset_handler",
        "-Wl,--fatal-warnings",
        *map(str, objects),
        "-o",
        str(image),
    ]
    link = subprocess.run(cmd, capture_output=True, text=True)
    assert link.returncode == 0 and not link.stderr, f"{' '.join(cmd)}\n{link.stderr}"

    symbols = subprocess.run([nm, str(image)], capture_output=True, text=True, check=True).stdout.splitlines()
    definitions = [line for line in symbols if line.split()[-1:] == ["pe"]]
    assert len(definitions) == 1 and definitions[0].split()[1] == "R", definitions
    table = table_bytes(image, "pe", toolchain, pair)
    assert table.binding == "GLOBAL" and table.address != 0 and not table.relocatable
    assert table.alignment >= np.dtype(EXPECTED_DTYPE[dtype]).itemsize, hex(table.address)  # AAPCS natural alignment
    assert table.data == expected

    sizes = subprocess.run(
        [toolchain.tool("size"), "-A", str(image)], capture_output=True, text=True, check=True
    ).stdout
    section_size = {
        fields[0]: int(fields[1])
        for fields in map(str.split, sizes.splitlines())
        if len(fields) == 3 and fields[1].isdigit()
    }
    assert len(expected) <= section_size[table.section] < 2 * len(expected), sizes


@pytest.mark.parametrize("toolchain", TOOLCHAINS, ids=lambda tc: tc.id)
def test_torn_pairs_do_not_build_for_the_target(tmp_path, toolchain):
    """The .c checks its .h's table identity (#error), the .bin's .h its size (.incbin and .org): both on the
    target's own compiler and assembler."""
    gcc = toolchain.tool("gcc")
    for sub, rows in (("a", "8"), ("b", "16")):
        (tmp_path / sub).mkdir()
        for name in ("pe.c", "raw.bin"):
            args = ["generate", "-n", rows, "-d", "4", "-o", str(tmp_path / sub / name)]
            assert CliRunner().invoke(cli, args).exit_code == 0
    a = tmp_path / "a"
    (a / "use.c").write_text('#define RAW_INCBIN\n#include "raw.h"\nconst float *first(void) { return raw[0]; }\n')

    def build(source: str) -> subprocess.CompletedProcess[str]:
        command = [gcc, *toolchain.target_flags, "-std=c99", *WARNINGS, "-c", source, "-o", source + ".o"]
        return subprocess.run(command, cwd=a, capture_output=True, text=True)

    assert build("pe.c").returncode == 0 and build("use.c").returncode == 0
    for name in ("pe.h", "raw.h"):
        (a / name).write_bytes((tmp_path / "b" / name).read_bytes())
    torn = build("pe.c")
    assert torn.returncode != 0 and "a torn pair" in torn.stderr, torn.stderr
    short = build("use.c")
    assert short.returncode != 0 and "invalid for file size" in short.stderr, short.stderr
