"""Real clients read real files: h5dump reads the .h5, pandas and the csv module read the .csv."""

from __future__ import annotations

import csv
import re
import subprocess

import numpy as np
import pytest

import posenc_cli

from .conftest import require_tool


@pytest.fixture(scope="module")
def table() -> np.ndarray:
    return posenc_cli.sinusoidal(64, 33)


@pytest.mark.client
def test_h5dump_reads_the_dataset_bytes_and_attributes(tmp_path, table):
    h5 = tmp_path / "pe.h5"
    posenc_cli.save(posenc_cli.generate(64, 33), h5, name="pe_table")
    raw = tmp_path / "pe.bin"
    h5dump = require_tool("h5dump")
    subprocess.run([h5dump, "-d", "/pe_table", "-b", "LE", "-o", str(raw), str(h5)], check=True, capture_output=True)
    assert raw.read_bytes() == table.astype("<f4").tobytes()
    header = subprocess.run([h5dump, "-H", "-A", str(h5)], check=True, capture_output=True, text=True).stdout
    assert 'DATASET "pe_table"' in header and "H5T_IEEE_F32LE" in header and "( 64, 33 )" in header
    for attribute in ("kind", "seq_len", "d_model", "base", "dtype", "layout", "generator"):
        assert f'ATTRIBUTE "{attribute}"' in header
    text = subprocess.run(
        [h5dump, "-m", "%.9g", "-d", "/pe_table", str(h5)], check=True, capture_output=True, text=True
    ).stdout
    start = text.index("DATA {") + len("DATA {")
    body = re.sub(r"\(\d+,\d+\):", " ", text[start : text.index("}", start)])
    numbers = np.array([float(tok) for tok in body.replace(",", " ").split()], np.float32)
    assert numbers.tobytes() == table.tobytes()


def test_pandas_reads_float_columns_that_cast_back_exactly(tmp_path, table):
    pandas = pytest.importorskip("pandas")
    path = tmp_path / "pe.csv"
    posenc_cli.save(table, path)
    frame = pandas.read_csv(path)
    assert list(frame.columns) == [f"d{j}" for j in range(33)]
    assert all(dtype == np.float64 for dtype in frame.dtypes)
    assert frame.to_numpy().astype(np.float32).tobytes() == table.tobytes()


def test_csv_module_reads_every_value(tmp_path, table):
    path = tmp_path / "pe.csv"
    posenc_cli.save(table, path, header=False)
    assert b"\r" not in path.read_bytes()
    with open(path, newline="") as f:
        rows = [[float(cell) for cell in row] for row in csv.reader(f)]
    assert np.array(rows, np.float32).tobytes() == table.tobytes()
