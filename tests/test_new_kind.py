"""A new kind is its math (``encodings/<x>.py``), its module (``kinds/<x>.py``) and its name in the registry
(:data:`posenc_cli.kinds.REGISTRY`): nothing else of the package changes, and every surface has it.

The test makes a throwaway kind, ``ramp`` (``pe[p, j] = (p * d_model + j) / scale``, no framework's), in a copy of
the package in a temporary folder, and drives it through the command line (its command, ``--help``, a refused
value), the Python API, a manifest (``posenc build``), ``inspect``, ``verify`` (regenerated from what the file
records, and a changed value found) and the reference page. The copy differs from the package by the two new
files and the registry's one line alone, which the test checks first.
"""

from __future__ import annotations

import difflib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "posenc_cli"

ENCODING = '''"""A ramp: pe[p, j] = (p * d_model + j) / scale, the math of a kind made up to test the registry."""

from __future__ import annotations

import numpy as np


def ramp(seq_len: int, d_model: int, scale: float) -> np.ndarray:
    return (np.arange(seq_len * d_model, dtype=np.float64) / scale).reshape(seq_len, d_model)
'''

KIND = '''"""``posenc ramp``: a made-up kind (the registry's test)."""

from __future__ import annotations

from ..params import NUMBER, Param
from ..ranges import Range
from ..table import Table
from ._shared import D_MODEL, ELEMENT_KEYS, QUANTISATION, SEQ_LEN, Kind, check, same_names

DIVISOR = NUMBER.within(Range("1 <= x <= 1e6", "a made-up range"))
PARAMS = (
    Param("seq_len", SEQ_LEN, "Rows.", required=True, short="-n", always_recorded=True),
    Param("d_model", D_MODEL, "Columns.", required=True, short="-d", always_recorded=True),
    Param("divisor", DIVISOR, "What every value is divided by.", default=2.0, always_recorded=True),
)


def ramp(seq_len: int, d_model: int, *, divisor: float = 2.0, dtype: str = "float32", scale: float | None = None,
         zero_point: int | None = None, saturate: bool = False) -> Table:
    """A ramp table."""
    check(KIND.inputs, seq_len=seq_len, d_model=d_model, divisor=divisor, scale=scale, zero_point=zero_point)
    from ..encodings import ramp as encoding

    values = encoding.ramp(seq_len, d_model, divisor).astype(dtype)
    return Table("ramp", {"pe": values}, {"seq_len": seq_len, "d_model": d_model, "divisor": divisor, "dtype": dtype})


KIND = Kind(
    command="ramp",
    table="ramp",
    short_help="Write a ramp (a made-up kind).",
    doc="Write a ramp: pe[p, j] = (p * d_model + j) / divisor.",
    params=PARAMS,
    make=ramp,
    lazy=False,
    recorded={"seq_len": SEQ_LEN, "d_model": D_MODEL, "divisor": DIVISOR, **QUANTISATION},
    from_record=same_names(("seq_len", "d_model", "divisor", *ELEMENT_KEYS)),
    work_per_value=8,
)
'''


def registered(text: str) -> str:
    """``kinds/__init__.py`` with ``ramp`` added to its registry: its line (command, module, table) in the list."""
    last = '    "window": ("window", "window"),\n}\n'
    assert last in text, "the registry's lines moved: update this test"
    return text.replace(last, '    "window": ("window", "window"),\n    "ramp": ("ramp", "ramp"),\n}\n')


@pytest.fixture(scope="module")
def house(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the package with the ramp kind added, as a contributor would add it."""
    root = tmp_path_factory.mktemp("house")
    shutil.copytree(PACKAGE, root / "posenc_cli", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "posenc_cli" / "encodings" / "ramp.py").write_text(ENCODING)
    (root / "posenc_cli" / "kinds" / "ramp.py").write_text(KIND)
    registry = root / "posenc_cli" / "kinds" / "__init__.py"
    registry.write_text(registered(registry.read_text()))
    return root


def changes(house: Path) -> tuple[list[str], list[str]]:
    """The files the copy adds, and the lines it changes in the files both have."""
    ours = {p.relative_to(PACKAGE) for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts}
    theirs = {p.relative_to(house / "posenc_cli") for p in (house / "posenc_cli").rglob("*.py")}
    changed = []
    for path in sorted(ours & theirs):
        before, after = (
            (PACKAGE / path).read_text().splitlines(),
            (house / "posenc_cli" / path).read_text().splitlines(),
        )
        changed += [f"{path}: {line}" for line in difflib.unified_diff(before, after, lineterm="", n=0)
                    if line[:1] in "+-" and not line.startswith(("+++", "---"))]  # fmt: skip
    return sorted(str(p) for p in theirs - ours), changed


def posenc(house: Path, *args: object, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m posenc_cli`` of the copy (run from outside the checkout, whose own package ``-m`` would find)."""
    env = {**os.environ, "PYTHONPATH": str(house), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([sys.executable, "-m", "posenc_cli", *map(str, args)], capture_output=True, text=True,
                          env=env, cwd=cwd or house, timeout=120)  # fmt: skip


def python(house: Path, code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(house), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=cwd, timeout=120)


def test_a_new_kind_is_two_new_modules_and_its_name_in_the_registry(house):
    added, changed = changes(house)
    assert added == ["encodings/ramp.py", "kinds/ramp.py"]
    assert changed == ['kinds/__init__.py: +    "ramp": ("ramp", "ramp"),'], changed  # one line added


def test_the_command_line_writes_it_and_refuses_what_its_parameters_refuse(house, tmp_path):
    done = posenc(house, "ramp", "-n", 3, "-d", 4, "--divisor", 4, "-o", tmp_path / "r.npy")
    assert done.returncode == 0, done.stderr
    want = (np.arange(12, dtype=np.float64) / 4).reshape(3, 4).astype(np.float32)  # the formula, computed here
    assert np.array_equal(np.load(tmp_path / "r.npy"), want)
    refused = posenc(house, "ramp", "-n", 3, "-d", 4, "--divisor", 0.5, "-o", tmp_path / "bad.npy")
    assert refused.returncode == 2 and "--divisor" in refused.stderr and "1 <= x <= 1e6" in refused.stderr
    assert not (tmp_path / "bad.npy").exists()
    helped = posenc(house, "ramp", "--help")
    assert helped.returncode == 0 and "--divisor FLOAT" in helped.stdout and "-n, --seq-len" in helped.stdout
    listed = posenc(house, "--help")
    assert "ramp" in listed.stdout and "Write a ramp" in listed.stdout


def test_the_api_has_it_by_its_command_name(house, tmp_path):
    code = ("import posenc_cli\nt = posenc_cli.ramp(2, 3, divisor=3.0)\nprint(t.kind, t.array.tolist())\n"
            "print('ramp' in posenc_cli.__all__)")  # fmt: skip
    done = python(house, code, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["ramp " + str((np.arange(6) / 3).reshape(2, 3).astype(np.float32).tolist()),
                                           "True"]  # fmt: skip


def test_a_manifest_builds_it_and_verify_regenerates_it(house, tmp_path):
    (tmp_path / "posenc.toml").write_text(
        '[[table]]\ncommand = "ramp"\noutput = "m.npz"\nseq_len = 4\nd_model = 2\ndivisor = 8.0\n'
    )
    built = posenc(house, "build", "posenc.toml", cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    with np.load(tmp_path / "m.npz") as stored:
        assert np.array_equal(stored["pe"], (np.arange(8) / 8).reshape(4, 2).astype(np.float32))
    verified = posenc(house, "verify", tmp_path / "m.npz")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    facts = json.loads(posenc(house, "inspect", tmp_path / "m.npz", "--json").stdout)
    assert facts["kind"] == "ramp" and facts["params"]["divisor"] == 8.0
    with zipfile.ZipFile(tmp_path / "m.npz") as archive:  # one value changed, posenc's record (the comment) kept
        record = archive.comment
    with np.load(tmp_path / "m.npz") as stored:
        values = stored["pe"].copy()
    values[3, 1] = 0.5
    np.savez(tmp_path / "m.npz", pe=values)
    with zipfile.ZipFile(tmp_path / "m.npz", "a") as archive:
        archive.comment = record
    changed = posenc(house, "verify", tmp_path / "m.npz")
    assert changed.returncode == 1 and "pe[3, 1]: file 0.5, parameters give 0.875" in changed.stdout, changed.stderr


def test_the_reference_page_has_its_section(house, tmp_path):
    done = python(house, "from posenc_cli.cli import cli, reference\nprint(reference.render(cli))", tmp_path)
    assert done.returncode == 0, done.stderr
    assert "## posenc ramp" in done.stdout and "`divisor`" in done.stdout and "`posenc_cli.ramp(...)`" in done.stdout
