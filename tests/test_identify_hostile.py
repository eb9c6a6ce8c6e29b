"""``posenc identify`` and ``posenc inspect`` on hostile tables (issue #25): the time bombs and the stray warnings.

Each attack is carried out: the files are built here (numpy's ``savez_compressed``, the ``safetensors`` library)
and read by the CLI or the API. The work is counted, never timed: the maker and the comparison of
:mod:`posenc_cli.identification._search` are wrapped to count every table entry a hypothesis makes and every entry
compared, and the counts are held to a small multiple of the table's size (the bound docs/identify.md states).
The warnings are looked for where a user sees them: the stderr of a ``posenc`` process run with every warning
shown (``-W default``, ``PYTHONWARNINGS=always``), and an API call run with warnings as errors.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import safetensors.numpy
from click.testing import CliRunner

from posenc_cli.cli import cli
from posenc_cli.identification import (
    WHOLES,
    WORK_FLOOR,
    WORK_PER_ENTRY,
    Identifier,
    _search,
    identify,
    identify_array,
)
from posenc_cli.identification._hypothesis import Hypothesis
from posenc_cli.table import RowSource

ZERO_NOTE = "every entry is 0: a constant table has no position to read off"


class Counted:
    """Entries made by hypotheses' tables and entries compared, by the functions the search calls."""

    def __init__(self) -> None:
        self.made = 0
        self.compared = 0
        self.wholes = 0  # comparisons with a whole table (not a sample): one to three per whole evaluation

    @property
    def total(self) -> int:
        return self.made + self.compared


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Counted:
    count = Counted()
    make, compare = _search._make, _search.compare

    def counting_make(hypothesis, dtype, lazy):  # type: ignore[no-untyped-def]
        out = make(hypothesis, dtype, lazy)
        if isinstance(out, RowSource):  # rows made when asked for: count those

            def rows(lo: int, hi: int) -> np.ndarray:
                block = out[lo:hi]
                count.made += block.size
                return block

            return RowSource(out.shape, out.dtype, rows)
        count.made += np.asarray(out).size
        return out

    def counting_compare(stored, exact, **options):  # type: ignore[no-untyped-def]
        count.compared += stored.size
        count.wholes += not options.get("screen", False)
        return compare(stored, exact, **options)

    monkeypatch.setattr(_search, "_make", counting_make)
    monkeypatch.setattr(_search, "compare", counting_compare)
    return count


def run(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(cli, list(args))


def paper(n: int, d: int) -> np.ndarray:
    """DistilBERT's table (float64 angles, rounded once to float32), computed by numpy."""
    j = np.arange(d)
    angle = np.arange(n)[:, None] / np.power(10000, 2 * (j // 2) / d)
    return np.where(j % 2 == 0, np.sin(angle), np.cos(angle)).astype(np.float32)


# ------------------------------------------------------------------------------------- the time bombs
def test_a_16_kb_compressed_zero_table_is_inspected_without_any_reading(tmp_path: Path, counted: Counted) -> None:
    """5041 x 832 zeros compress to 16 KB: 5040 rows after a zero class-token row have 60 divisors, each once a
    2-D sincos grid whose whole table was made and compared (71 s). A constant table needs no reading."""
    path = tmp_path / "zeros.npz"
    np.savez_compressed(path, pe=np.zeros((5041, 832), np.float32))
    assert path.stat().st_size < 64 << 10
    result = run("inspect", str(path), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["arrays"]["pe"]["identified"] is None
    result = run("identify", str(path))
    assert result.exit_code == 1 and "no match" in result.output and ZERO_NOTE in result.output
    assert counted.total == 0


def test_a_4096_square_zero_table_is_identified_without_any_reading(tmp_path: Path, counted: Counted) -> None:
    """A 65 KB file of 4096 x 4096 zeros (174 s and 1.7 GB before): every divisor of 4095 was a grid."""
    path = tmp_path / "zeros.npz"
    np.savez_compressed(path, pe=np.zeros((4096, 4096), np.float32))
    assert path.stat().st_size < 128 << 10
    result = run("identify", str(path), "--json")
    assert result.exit_code == 1
    doc = json.loads(result.output)
    assert doc["match"] is None and doc["tensors"][0]["note"] == ZERO_NOTE and doc["tensors"][0]["nearest"] == []
    assert counted.total == 0


def test_a_file_of_many_copies_costs_one(tmp_path: Path, counted: Counted) -> None:
    """16 arrays in one file: the zero ones cost no reading, and 16 copies of a table that does cost work (one entry
    edited: a reading within the rule on its sample, then compared whole) are identified once."""
    edited = paper(512, 64)
    edited[300, 7] += 0.01
    np.savez_compressed(
        tmp_path / "many.npz",
        **{f"zero{i}": np.zeros((1024, 1024), np.float32) for i in range(16)},
        **{f"copy{i}": edited for i in range(16)},
    )
    result = identify(tmp_path / "many.npz")
    assert counted.total > 0
    once = counted.total
    counted.made = counted.compared = 0
    single = identify_array(edited)
    assert counted.total == once  # the 15 other copies cost nothing
    tensors = {t.key: t for t in result.tensors}
    assert all(tensors[f"zero{i}"].note.endswith(ZERO_NOTE) for i in range(16))
    for i in range(16):
        copy = tensors[f"copy{i}"]
        assert copy.match is None and copy.nearest[0].comparison.rows == (300,)
        assert copy.nearest == single.nearest
    assert tensors["copy1"].note.startswith("the same values as 'copy0'")


def test_a_checkpoint_of_many_zero_tensors_costs_no_reading(tmp_path: Path, counted: Counted) -> None:
    """A .safetensors of 300 zero tensors, read one at a time: each is answered as constant, none searched."""
    path = tmp_path / "zeros.safetensors"
    safetensors.numpy.save_file({f"zero.{i}": np.zeros((8, 8), np.float32) for i in range(300)}, path)
    result = identify(path)
    assert len(result.tensors) == 300 and result.match is None
    assert all(t.note is not None and t.note.endswith(ZERO_NOTE) for t in result.tensors)
    assert counted.total == 0


def test_a_checkpoint_of_2000_zero_tensors_reads_its_header_twice_not_per_tensor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, counted: Counted
) -> None:
    """The issue's 2000-tensor .safetensors of zeros: reading each tensor alone used to parse the whole header again
    (the walk cost the square of the count). Now the header is read once to list the tensors and once to read them,
    and every tensor is answered as constant without a search."""
    from posenc_cli.formats import safetensors as st

    path = tmp_path / "zeros.safetensors"
    safetensors.numpy.save_file({f"layer.{i}.zero": np.zeros((4, 8), np.float32) for i in range(2000)}, path)
    parsed = []
    real = st._read_header
    monkeypatch.setattr(st, "_read_header", lambda *args: parsed.append(1) or real(*args))
    result = identify(path)
    assert len(result.tensors) == 2000 and result.match is None
    assert all(t.note is not None and t.note.endswith(ZERO_NOTE) for t in result.tensors)
    assert len(parsed) == 2 and counted.total == 0


def test_the_tensors_of_one_file_share_one_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, counted: Counted
) -> None:
    """Distinct small tables that each cost a few steps share the file's floor (here eight steps' worth): once it is
    spent, each has only its own WORK_PER_ENTRY entries per entry, too few for a step, and its search stops and
    says so. The file's work stays within WORK_PER_ENTRY entries per entry it holds, plus the floor."""
    floor = 8 * _search.STEP
    monkeypatch.setattr(_search, "WORK_FLOOR", floor)
    rng = np.random.default_rng(3)
    tensors = {}
    for i in range(40):  # tables of 24 rows, each with an entry off: every reading compared whole
        table = paper(24, 32)
        table[int(rng.integers(1, 24)), int(rng.integers(0, 32))] += np.float32(0.01 * (i + 1))
        tensors[f"near.{i}"] = table
    safetensors.numpy.save_file(tensors, tmp_path / "many.safetensors")
    result = identify(tmp_path / "many.safetensors")
    assert len(result.tensors) == 40 and result.match is None
    searched = [t for t in result.tensors if t.note is None]
    stopped = [t for t in result.tensors if t.note is not None and "work budget" in t.note]
    assert 1 <= len(searched) <= 4 and len(searched) + len(stopped) == 40
    held = sum(t.size for t in tensors.values())
    assert 0 < counted.total <= WORK_PER_ENTRY * held + floor


# -------------------------------------------------------------------------- the work is bounded by the table
def _grid_garbage(height: int, width: int, d: int, cls: bool) -> np.ndarray:
    """A table with a 2-D sincos grid's structure (one half repeats every ``width`` rows, the other is constant
    along them) but random values: a reading for the grid, whose tables then differ."""
    rng = np.random.default_rng(5)
    x = rng.uniform(-1, 1, (width, d // 2)).astype(np.float32)
    y = rng.uniform(-1, 1, (height, d // 2)).astype(np.float32)
    grid = np.concatenate([np.tile(x, (height, 1)), np.repeat(y, width, axis=0)], axis=1)
    return np.concatenate([np.zeros((1, d), np.float32), grid]) if cls else grid


def _edited(table: np.ndarray) -> np.ndarray:
    """``table`` with one entry off by 0.01, in a row no sample holds: a reading passes its sample, then departs."""
    table = table.copy()
    table[len(table) // 2 + 3, 5] += np.float32(0.01)
    return table


def _bfloat16(values: np.ndarray) -> np.ndarray:
    """float32 values rounded to the nearest bfloat16 (ties to even), as float32."""
    bits = values.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16).astype(np.uint32).view(np.float32)


@pytest.mark.parametrize(
    "table",
    [
        pytest.param(_grid_garbage(70, 72, 64, cls=True), id="grid-of-5040-rows-with-60-divisors"),
        pytest.param(np.random.default_rng(0).normal(0, 0.02, (2048, 256)).astype(np.float32), id="learned"),
        pytest.param(_edited(paper(2048, 256)), id="sinusoid-one-entry-off"),
        pytest.param(_edited(_bfloat16(paper(2048, 256))), id="bfloat16-sinusoid-one-entry-off"),
    ],
)
def test_the_work_is_a_small_multiple_of_the_table(table: np.ndarray, counted: Counted) -> None:
    """Tables built to keep the search busy: what it makes and compares stays within a few times the table (the
    readings that pass their sample are compared whole: the true one, and a close one such as tensor2tensor's
    frequencies at base 9306, which round the paper's to 1e-5), far within the budget of WORK_PER_ENTRY per entry."""
    identify_array(table)
    assert counted.total <= 8 * table.size < WORK_PER_ENTRY * table.size
    assert counted.wholes <= 4


def test_a_learned_table_is_passed_over_from_a_few_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sinusoid reading first checks the rows it would read (a few dozen) for one amplitude per sin/cos pair:
    a learned table fails there, in each layout, before any pass over the whole table."""
    from posenc_cli.identification import _sinusoid

    amplitudes: list[int] = []

    class Numpy:  # numpy, with hypot (the amplitudes of the pairs) counted
        def __getattr__(self, name: str) -> object:
            return getattr(np, name)

        @staticmethod
        def hypot(x: np.ndarray, y: np.ndarray) -> np.ndarray:
            amplitudes.append(x.size)
            return np.hypot(x, y)

    monkeypatch.setattr(_sinusoid, "np", Numpy())
    table = np.random.default_rng(2).normal(0, 0.02, (8192, 256)).astype(np.float32)
    assert identify_array(table).match is None
    assert 0 < len(amplitudes) <= 3 and sum(amplitudes) <= 3 * 64 * 128


def _wrong(values: dict[str, object], command: str = "generate", head=None) -> Hypothesis:  # type: ignore[no-untyped-def]
    return Hypothesis(command, values, "pe", command, head=head)


def test_a_reading_far_off_on_its_sample_never_has_its_whole_table_made(
    monkeypatch: pytest.MonkeyPatch, counted: Counted
) -> None:
    """Readings that are wrong (the base, the layout, the grid's base) are rejected on their 32 sample rows: the
    rows are made alone (row by row for generate, a grid of one row of patches for 2-D sincos), never the table."""
    table = paper(4096, 128)
    wrong = [
        _wrong({"seq_len": 4096, "d_model": 128, "base": 20000.0}),
        _wrong({"seq_len": 4096, "d_model": 128, "layout": "sin-cos"}),
        _wrong({"seq_len": 4096, "d_model": 128, "start": 1.0}),
    ]
    grid = {"grid": (64, 64), "d_model": 128}
    wrong.append(_wrong(grid, "sincos2d", head=lambda rows: _wrong({**grid, "grid": (1, 64)}, "sincos2d")))
    monkeypatch.setattr(_search, "_hypotheses", lambda values: iter(wrong))
    result = identify_array(table)
    assert result.match is None and counted.wholes == 0
    assert counted.made == 3 * 32 * 128 + 64 * 128  # each reading's sample rows; the grid's first 64 rows
    assert counted.compared == 4 * 32 * 128
    assert [c.comparison.compared for c in result.nearest] == [32 * 128] * 3


def test_the_budget_stops_the_search_and_says_so(monkeypatch: pytest.MonkeyPatch, counted: Counted) -> None:
    """With the budget shrunk to four entries per entry and no floor, a genuine table whose sample passes cannot
    pay for its whole comparison: the search stops, says why, claims no match, and spent no more than the budget."""
    monkeypatch.setattr(_search, "WORK_PER_ENTRY", 4)
    monkeypatch.setattr(_search, "WORK_FLOOR", 0)
    table = paper(4096, 64)
    identifier = Identifier()
    result = identifier.identify(table)
    assert result.match is None and "the search stopped" in str(result.note) and "work budget" in str(result.note)
    assert counted.wholes == 0 and 0 < counted.total <= identifier.work.spent <= 4 * table.size
    assert result.nearest[0].hypothesis.preset == "vaswani"  # the sample that passed is reported


def test_the_search_pays_for_every_entry_it_makes_and_compares(
    monkeypatch: pytest.MonkeyPatch, counted: Counted
) -> None:
    """With the steps' fixed cost set to zero, what the budget was paid is exactly what was made and compared."""
    monkeypatch.setattr(_search, "STEP", 0)
    monkeypatch.setattr(_search, "COLUMN_STEP", {})
    for table in (paper(4096, 64), paper(4096, 64).astype(np.float16), paper(100, 32)):
        edited = table.copy()
        edited[-3, 5] += 0.01  # a departure outside the sample rows: whole comparisons, no match
        for stored in (table, edited):
            counted.made = counted.compared = 0
            identifier = Identifier()
            identifier.identify(stored)
            assert counted.total == identifier.work.spent > 0
            assert identifier.work.spent <= WORK_PER_ENTRY * stored.size + WORK_FLOOR


def test_at_most_whole_comparisons_per_array(counted: Counted) -> None:
    """Many readings within the rule on their sample (LongRoPE's pre-training lengths name one table) and an entry
    off elsewhere: the whole comparisons stop at WHOLES, and the report says so and where the table departs."""
    from .test_identify import stored

    table = stored("rope_longrope.h5", "model.layers.0.self_attn.rotary_emb.cos_cached").copy()
    table[100, 5] += np.float32(1e-4)  # within the reading's tolerance, beyond the float32 rule
    result = identify_array(table)
    assert result.match is None
    assert counted.wholes <= WHOLES and f"at most {WHOLES} readings" in str(result.note)
    assert result.nearest[0].comparison.rows == (100,)


# ---------------------------------------------------------------------------- what is answered, not searched
@pytest.mark.parametrize(
    ("table", "note"),
    [
        (np.full((300, 16), 0.5, np.float32), "every entry is 0.5"),
        (np.tile(np.linspace(-1, 1, 16, dtype=np.float32), (300, 1)), "every row holds the same values"),
        (np.full((300, 16), np.nan, np.float32), "NaN"),
        (np.array([[1.0, np.inf], [0.0, 1.0]]), "NaN or infinite"),
        (paper(300, 16).astype(np.float64) * 2.0**70, "largest magnitude"),
        (paper(300, 16).astype(np.float64) * 2.0**-70, "largest magnitude"),
    ],
    ids=["constant", "equal-rows", "all-nan", "inf", "huge", "tiny"],
)
def test_tables_with_no_position_to_read_are_answered_without_hypotheses(
    table: np.ndarray, note: str, counted: Counted
) -> None:
    result = identify_array(table)
    assert result.match is None and result.nearest == () and note in str(result.note)
    assert counted.total == 0


# -------------------------------------------------------------------------------------------- no warnings
def _hostile_tables() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(11)
    tables: dict[str, np.ndarray] = {
        "zeros": np.zeros((64, 32), np.float32),
        "zeros_big": np.zeros((300, 64), np.float32),
        "zeros_1d": np.zeros(32, np.float32),
        "random": rng.standard_normal((300, 64)).astype(np.float32),
        "random_small": rng.standard_normal((20, 16)).astype(np.float16),
        "nan": np.full((16, 8), np.nan, np.float32),
        "inf": np.where(rng.random((40, 8)) < 0.1, np.inf, 1.0),
        "huge": rng.uniform(-1, 1, (100, 32)) * np.finfo(np.float64).max,
        "tiny": rng.uniform(-1, 1, (100, 32)) * np.finfo(np.float64).smallest_subnormal * 8,
        "float32_max": rng.uniform(-1, 1, (100, 32)).astype(np.float32) * np.finfo(np.float32).max,
        "first_row_zero": np.vstack([np.zeros((1, 32)), rng.uniform(-1, 1, (99, 32))]).astype(np.float32),
    }
    idle = np.outer(np.arange(100), 10000.0 ** (-np.arange(0, 32, 2) / 32))
    idle[:, [0, 1]] = 0  # RoPE caches whose first frequencies are idle: a ratio of zeros
    tables["rope_idle_cos"] = np.cos(np.concatenate([idle, idle], 1)).astype(np.float32)
    return tables


def test_identify_and_inspect_print_no_warning(tmp_path: Path) -> None:
    """The CLI, in a process of its own with every warning shown: stderr holds no warning, only one-line notes."""
    path = tmp_path / "hostile.npz"
    np.savez(path, **_hostile_tables())
    env = {**os.environ, "PYTHONWARNINGS": "always"}
    for command in (["identify", str(path)], ["identify", str(path), "--json"], ["inspect", str(path)]):
        proc = subprocess.run(
            [sys.executable, "-W", "default", "-m", "posenc_cli", *command], capture_output=True, text=True, env=env
        )
        assert proc.returncode in (0, 1), proc.stderr
        assert "Warning" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_identify_array_is_warning_free_for_api_users(tmp_path: Path) -> None:
    """The API, with warnings as errors (what a library user's test suite does): no RuntimeWarning escapes the
    search, and nothing is printed (LAPACK prints to the process's stderr when handed NaN)."""
    path = tmp_path / "hostile.npz"
    np.savez(path, **_hostile_tables())
    code = (
        "import sys\n"
        "import numpy as np\n"
        "from posenc_cli.identification import identify_array\n"
        "with np.load(sys.argv[1]) as tables:\n"
        "    for name in tables.files:\n"
        "        identify_array(tables[name], key=name)\n"
    )
    proc = subprocess.run([sys.executable, "-W", "error", "-c", code, str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "" and proc.stdout == ""


def test_the_bounds_are_what_the_docs_say() -> None:
    doc = (Path(__file__).resolve().parents[1] / "docs" / "identify.md").read_text()
    assert f"{WORK_PER_ENTRY} entries of work per entry" in doc
    assert f"2^{int(math.log2(WORK_FLOOR))}" in doc
