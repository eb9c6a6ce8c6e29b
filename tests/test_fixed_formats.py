"""Fixed-point element types (q31, fixed<T>.<F>) through every layer: the CLI's --dtype, exact ties and saturation,
every format posenc reads back, C compiled by gcc and clang, and the readers' refusals of codes out of range.

Expected codes come from the test's own arithmetic (Fractions, ties away from zero) or from numpy reading the
written bytes; the entries of generated tables are checked against mpmath in tests/test_dtypes.py.
"""

from __future__ import annotations

import json
import subprocess
from fractions import Fraction

import numpy as np
import pytest
from click.testing import CliRunner

import posenc_cli
from posenc_cli.cli import cli
from posenc_cli.errors import FormatError

from .conftest import require_tool

#: (name, total bits, fractional bits, storage).
TYPES = [
    ("q31", 32, 31, np.int32),
    ("fixed18.16", 18, 16, np.int32),
    ("fixed12.11", 12, 11, np.int16),
    ("fixed16.14", 16, 14, np.int16),
    ("fixed6.4", 6, 4, np.int8),
    ("fixed40.38", 40, 38, np.int64),
]
READABLE = ["npy", "npz", "h5", "csv", "h", "c", "bin", "safetensors"]


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def half_away(q: Fraction) -> int:
    n = int(abs(q) + Fraction(1, 2))
    return n if q >= 0 else -n


@pytest.mark.parametrize(
    "spelling",
    ["fixed1.0", "fixed65.30", "fixed16.16", "fixed16.20", "fixed016.3", "fixed16.-1", "q32", "fixed16", "Q15"],
)
def test_bad_fixed_types_are_usage_errors_naming_what_is_allowed(tmp_path, spelling):
    out = tmp_path / "pe.npy"
    result = run("generate", "-n", "4", "-d", "4", "--dtype", spelling, "-o", str(out))
    assert result.exit_code == 2
    assert "--dtype" in result.stderr and "fixed<total>.<frac>" in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not out.exists()


@pytest.mark.parametrize(("name", "total", "frac", "storage"), TYPES)
def test_ties_round_away_from_zero_and_the_ends_saturate(name, total, frac, storage):
    step = Fraction(1, 2**frac)
    top = 2 ** (total - 1)
    values = [step / 2, -step / 2, 3 * step / 2, -3 * step / 2, Fraction(5, 7), Fraction(-1, 3), 0]
    values += [Fraction(top) * step * 4, -Fraction(top) * step * 4, Fraction(top) * step, -Fraction(top) * step]
    table = posenc_cli.Table("array", {"pe": np.array([[float(v) for v in values]], np.float64)}, {})
    got = np.asarray(posenc_cli.convert(table, dtype=name, saturate=True).array)  # the ends clip, as asked
    assert got.dtype == np.dtype(storage)
    want = [max(-top, min(top - 1, half_away(Fraction(float(v)) / step))) for v in values]
    assert got.ravel().tolist() == want
    assert want[:4] == [1, -1, 2, -2] and want[-4:] == [top - 1, -top, top - 1, -top]


@pytest.mark.parametrize(("name", "total", "frac", "storage"), TYPES)
@pytest.mark.parametrize("fmt", READABLE)
def test_every_readable_format_round_trips_the_codes_and_the_type(tmp_path, name, total, frac, storage, fmt):
    out = tmp_path / f"pe.{fmt}"
    assert run("generate", "-n", "9", "-d", "6", "--dtype", name, "-o", str(out)).exit_code == 0
    want = posenc_cli.generate(9, 6, dtype=name).array
    back = posenc_cli.load(out)
    assert back.params["dtype"] == name
    assert back.array.dtype == np.dtype(storage)
    assert np.array_equal(back.array, want)
    assert -(2 ** (total - 1)) <= int(want.min()) and int(want.max()) <= 2 ** (total - 1) - 1
    if fmt not in ("csv",):  # CSV records the type, not the table's parameters
        assert run("verify", str(out)).exit_code == 0


C_PROGRAM = """#include <stdio.h>
#include <inttypes.h>
#include "pe.h"

int main(void)
{
    unsigned long i, j;
    for (i = 0; i < PE_SEQ_LEN; i++)
        for (j = 0; j < PE_D_MODEL; j++)
            printf("%" PRId64 "\\n", (int64_t)pe[i][j]);
    return 0;
}
"""


@pytest.mark.client
@pytest.mark.parametrize("compiler", ["gcc", "clang"])
@pytest.mark.parametrize(("name", "total", "frac", "storage"), TYPES)
def test_c_header_compiles_warning_free_and_holds_the_codes(tmp_path, compiler, name, total, frac, storage):
    tool = require_tool(compiler)
    assert run("generate", "-n", "7", "-d", "5", "--dtype", name, "-o", str(tmp_path / "pe.h")).exit_code == 0
    assert run("generate", "-n", "7", "-d", "5", "--dtype", name, "-o", str(tmp_path / "pe.npy")).exit_code == 0
    (tmp_path / "main.c").write_text(C_PROGRAM)
    exe = tmp_path / "prog"
    cmd = [tool, "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-I", str(tmp_path), str(tmp_path / "main.c")]
    subprocess.run([*cmd, "-o", str(exe)], check=True, capture_output=True)
    printed = [int(line) for line in subprocess.run([str(exe)], capture_output=True, text=True).stdout.split()]
    stored = np.load(tmp_path / "pe.npy")
    assert stored.dtype == np.dtype(storage)
    assert printed == stored.ravel().tolist()
    header = (tmp_path / "pe.h").read_text()
    c_type = {np.int8: "int8_t", np.int16: "int16_t", np.int32: "int32_t", np.int64: "int64_t"}[storage]
    assert f"const {c_type} pe[PE_SEQ_LEN][PE_D_MODEL]" in header
    assert f"value = v / {float(2**frac)!r}" in header or f"value = v / 2^{frac}" in header


def test_q31_saturates_one_and_matches_cmsis_rounding():
    row = posenc_cli.generate(1, 6, dtype="q31").array[0].tolist()
    assert row == [0, 2**31 - 1, 0, 2**31 - 1, 0, 2**31 - 1]  # sin 0, cos 0 = 1.0 saturated (arm_float_to_q31)


# ------------------------------------------------------------------------------------------------ hostile files
def write_npy_with_sidecar(tmp_path, values, dtype_name):
    path = tmp_path / "pe.npy"
    np.save(path, values)
    sidecar = {
        "dtype": dtype_name,
        "generator": f"posenc {posenc_cli.__version__}",
        "kind": "array",
        "params": {"dtype": dtype_name},
        "storage": values.dtype.str,
    }
    (tmp_path / "pe.json").write_text(json.dumps(sidecar, indent=2, sort_keys=True) + "\n")
    return path


def test_a_code_outside_the_narrow_type_is_refused(tmp_path):
    path = write_npy_with_sidecar(tmp_path, np.array([[0, 131072]], np.int32), "fixed18.16")
    with pytest.raises(FormatError, match=r"131072, outside its codes \[-131072, 131071\]"):
        posenc_cli.load(path)
    result = run("inspect", str(path))
    assert result.exit_code == 1 and "outside its codes" in result.stderr and "Traceback" not in result.stderr


def test_a_code_at_the_ends_of_the_narrow_type_is_read(tmp_path):
    path = write_npy_with_sidecar(tmp_path, np.array([[-131072, 131071]], np.int32), "fixed18.16")
    assert posenc_cli.load(path).array.tolist() == [[-131072, 131071]]


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("# dtype=fixed18.16\n0,131072\n", "outside the codes of fixed18.16, [-131072, 131071]"),
        ("# dtype=fixed99.3\n0,1\n", "fixed<total>.<frac>"),
        ("# dtype=fixed18.16 scale=0.5\n0,1\n", "is not one of its keys"),
        ("# dtype=fixed12.11\n0,1.5\n", "is not an integer code of fixed12.11"),
    ],
)
def test_csv_claiming_a_fixed_type_is_read_strictly(tmp_path, text, why):
    path = tmp_path / "pe.csv"
    path.write_text(text)
    with pytest.raises(FormatError, match=None) as caught:
        posenc_cli.load(path)
    assert why in str(caught.value)


def test_csv_of_a_fixed_type_reads_its_codes(tmp_path):
    path = tmp_path / "pe.csv"
    path.write_text("# dtype=fixed18.16\n-131072,131071\n")
    table = posenc_cli.load(path)
    assert table.params == {"dtype": "fixed18.16"} and table.array.dtype == np.int32


def test_c_header_claiming_a_narrow_type_with_a_wide_code_is_refused(tmp_path):
    path = tmp_path / "pe.h"
    assert run("generate", "-n", "2", "-d", "2", "--dtype", "fixed12.11", "-o", str(path)).exit_code == 0
    text = path.read_text()
    largest = str(int(posenc_cli.generate(2, 2, dtype="fixed12.11").array.max()))
    assert largest in text
    assert f" {largest}}}," in text
    path.write_text(text.replace(f" {largest}}},", " 4096},", 1))
    with pytest.raises(FormatError, match=r"4096, outside its codes \[-2048, 2047\]"):
        posenc_cli.load(path)
