"""Formatters (#30): posenc's float32 text against the libraries that already print float32 shortest digits.

#30 asks, where a well-kept library formats these values fast (orjson prints numpy float32 arrays with their shortest
round-trip digits, pyarrow's CSV writer does too), to measure it against the compiled core and against the bytes
posenc must write, and to take the library where it wins and can give posenc's exact bytes. ``python
benchmarks/bench.py --formatters`` measures, in-process, on the 8192 x 1024 float32 sinusoid table
(``posenc_cli.sinusoidal(8192, 1024)``):

- posenc's text block (:func:`posenc_cli.formats.text.floats.join_rows` with CSV separators: every value's
  shortest round-trip text, ``,`` between values, ``\\n`` after each row; what the CSV writer writes after its
  header), with the compiled core and with ``POSENC_CORE=pure``; and the whole CSV written in memory
  (:func:`posenc_cli.formats.csvfile.dump` into a ``BytesIO``: header, then the block in 1 MiB row blocks);
- ``orjson.dumps(array, option=orjson.OPT_SERIALIZE_NUMPY)`` of the float32 array (JSON rows);
- ``pyarrow.csv.write_csv`` of the same columns (a ``pyarrow.Table`` of float32 columns, built before the timing)
  into a ``BytesIO``.

For each library, the values are taken apart from both outputs into their decimal strings and compared with
posenc's string for string; the row says how many differ and how many of those name another number (different
digits) rather than the same number spelled otherwise (``0.00001`` for posenc's ``1e-05``, ``1`` for ``1.0``), and
the row below it gives three examples.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from decimal import Decimal

import numpy as np
from peers import SEQ, D, Report, environ, median_time, once

import posenc_cli
from posenc_cli import _native
from posenc_cli.errors import PosencError
from posenc_cli.formats import csvfile
from posenc_cli.formats.options import WriteOptions
from posenc_cli.formats.text.floats import join_rows
from posenc_cli.table import Table

#: What one value's text position is reported as: (row, column).
Where = tuple[int, int]


def compare(ours: list[bytes], theirs: list[bytes]) -> tuple[int, int, list[tuple[Where, str, str]]]:
    """Compare two outputs' rows (each ``v,v,...,v`` without its line end) value by value, as strings.

    Returns the number of values whose text differs, how many of those are another number (not the same decimal
    value spelled otherwise; the sign of zero counts), and up to three examples of each kind, as
    ``((row, column), ours, theirs)``. Rows whose bytes are equal are equal value for value and are not split.
    """
    if len(ours) != len(theirs):
        raise SystemExit(f"the outputs have {len(ours)} and {len(theirs)} rows")
    spelled: list[tuple[Where, str, str]] = []
    other: list[tuple[Where, str, str]] = []
    differ = numbers = 0
    for r, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        if a == b:
            continue
        cells_a, cells_b = a.split(b","), b.split(b",")
        if len(cells_a) != len(cells_b):
            raise SystemExit(f"row {r}: {len(cells_a)} and {len(cells_b)} values")
        for c, (x, y) in enumerate(zip(cells_a, cells_b, strict=True)):
            if x == y:
                continue
            differ += 1
            same = Decimal(x.decode()).normalize().as_tuple() == Decimal(y.decode()).normalize().as_tuple()
            if not same:
                numbers += 1
            kept = spelled if same else other
            if len(kept) < 3:
                kept.append(((r, c), x.decode(), y.decode()))
    return differ, numbers, other + spelled


def csv_rows(text: bytes, header: bool) -> list[bytes]:
    """The value rows of CSV text (LF line ends, a final LF), its header row left out."""
    rows = text.split(b"\n")
    if rows and rows[-1] == b"":
        rows.pop()
    return rows[1:] if header else rows


def json_rows(text: bytes) -> list[bytes]:
    """The rows of a JSON array of arrays of numbers without spaces (``[[v,v],[v,v]]``, as orjson writes it)."""
    if not (text.startswith(b"[[") and text.endswith(b"]]")):
        raise SystemExit(f"not a JSON array of rows: {text[:20]!r}...")
    return text[2:-2].split(b"],[")


def formatters(report: Report, repeat: int) -> None:
    table = posenc_cli.sinusoidal(SEQ, D)
    seps = [b","] * (D - 1) + [b"\n"]
    values = table.size
    times: dict[str, float] = {}
    for core in ("compiled", "pure"):
        with environ(POSENC_CORE=core):
            try:
                _native.native("_ctext")
            except PosencError:
                report.add(f"posenc text block {SEQ}x{D} float32, compiled core", "skipped", "", "not built here")
                continue
            times[core] = median_time(lambda: join_rows(table, seps=seps), repeat)
    block = join_rows(table, seps=seps)
    buffer = io.BytesIO()
    csvfile.dump(Table.from_array(table), buffer, WriteOptions())
    ours = buffer.getvalue()
    if not ours.endswith(block):
        raise SystemExit("posenc's CSV writer and join_rows disagree: the benchmark's picture of posenc is wrong")
    ours_rows = csv_rows(ours, header=True)
    core = "compiled" if "compiled" in times else "pure"
    base = times[core]  # what the libraries are measured against: posenc's text with the compiled core where built
    for name, seconds in times.items():
        ratio = f"{times['pure'] / seconds:.1f}x faster than pure" if name == "compiled" and "pure" in times else ""
        report.add(
            f"posenc text block {SEQ}x{D} float32 (join_rows, CSV separators), {name} core",
            f"{seconds * 1e3:.0f} ms",
            ratio,
            f"{seconds / values * 1e9:.1f} ns a value",
        )
    writer = median_time(lambda: csvfile.dump(Table.from_array(table), io.BytesIO(), WriteOptions()), repeat)
    report.add(
        f"  posenc's whole CSV in memory (csvfile.dump to BytesIO, {len(ours) >> 20} MiB), default core",
        f"{writer * 1e3:.0f} ms",
        f"{writer / base:.2f}x join_rows ({core})",
    )
    libraries: list[tuple[str, Callable[[], tuple[Callable[[], bytes], str] | None], Callable[[bytes], list[bytes]]]]
    libraries = [
        ("orjson.dumps(OPT_SERIALIZE_NUMPY), float32 array to JSON", lambda: orjson_dumps(table), json_rows),
        ("pyarrow.csv.write_csv of the float32 columns to BytesIO", lambda: arrow_csv(table), arrow_rows),
    ]
    for label, make, rows_of in libraries:
        made = make()
        if made is None:
            report.add(label, "skipped", "", "not importable")
            continue
        run, note = made
        label += note
        seconds = median_time(run, repeat)
        differ, numbers, examples = compare(ours_rows, rows_of(run()))
        bytes_ = "posenc's bytes" if not differ else "not posenc's bytes"
        report.add(
            label,
            f"{seconds * 1e3:.0f} ms",
            f"{seconds / base:.2f}x posenc ({core})",
            f"{'faster' if seconds < base else 'slower'} than posenc; of {values} values, {values - numbers} have "
            f"posenc's digits, {differ} differ in text ({numbers} another number): {bytes_}",
        )
        if examples:
            shown = "; ".join(f"[{r},{c}] posenc {x} vs {y}" for (r, c), x, y in examples[:3])
            report.add(f"  e.g. (row, column) posenc vs {label.split('.')[0]}", "", "", shown)


def orjson_dumps(table: np.ndarray) -> tuple[Callable[[], bytes], str] | None:
    try:
        import orjson
    except ImportError:
        return None
    return lambda: orjson.dumps(table, option=orjson.OPT_SERIALIZE_NUMPY), ""


def arrow_csv(table: np.ndarray) -> tuple[Callable[[], bytes], str] | None:
    """pyarrow's CSV writer on a ``pyarrow.Table`` of the columns (built here, once: its time goes in the label,
    not in the timing)."""
    try:
        import pyarrow as pa
        import pyarrow.csv as pacsv
    except ImportError:
        return None
    frame: list[object] = []
    build = once(lambda: frame.append(pa.table({f"d{k}": table[:, k] for k in range(table.shape[1])})))

    def run() -> bytes:
        out = io.BytesIO()
        pacsv.write_csv(frame[0], out)
        return out.getvalue()

    return run, f" (the pyarrow.Table built before, in {build * 1e3:.0f} ms, not timed)"


def arrow_rows(text: bytes) -> list[bytes]:
    """pyarrow's CSV rows: its header (quoted names) left out; the values are never quoted."""
    return csv_rows(text, header=True)
