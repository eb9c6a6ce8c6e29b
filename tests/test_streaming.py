"""Streaming: a lazily generated table, written block by block, gives exactly the bytes of the table built whole.

The references are independent of posenc's writers: numpy's own ``np.save``/``np.load`` of the in-memory array, and
each format's own reader (``safetensors``, ``gguf``'s ``GGUFReader``, ``onnx``). Blocks are made small and odd-sized
so that every table spans several blocks and ends in a partial one.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np
import pytest

import posenc_cli.api as api
from posenc_cli.formats import _blocks
from posenc_cli.kinds.rope import rope
from posenc_cli.kinds.sinusoid import generate
from posenc_cli.table import RowSource, Table


def _bits(array: np.ndarray) -> bytes:
    """The values' little-endian C-order bytes (comparing bytes compares -0.0 and NaN bit for bit)."""
    return np.ascontiguousarray(array, array.dtype.newbyteorder("<")).tobytes()


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    # 7 rows of a 24-wide float32 table, plus a remainder that does not make an eighth row: odd boundaries.
    monkeypatch.setattr(_blocks, "SOURCE_BLOCK_BYTES", 7 * 24 * 4 + 13)


def _lazy_and_whole(dtype: str = "float32") -> tuple[Table, Table]:
    lazy = generate(50, 24, dtype=dtype, lazy=True)
    assert isinstance(lazy.array, RowSource)
    return lazy, generate(50, 24, dtype=dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "q15"])
def test_npy_stream_equals_numpy_save(tmp_path: Path, small_blocks: None, dtype: str) -> None:
    lazy, whole = _lazy_and_whole(dtype)
    api.save(lazy, tmp_path / "t.npy")
    reference = io.BytesIO()
    np.save(reference, np.asarray(whole.array))
    ours = (tmp_path / "t.npy").read_bytes()
    nbytes = whole.array.nbytes
    assert ours[-nbytes:] == reference.getvalue()[-nbytes:] == _bits(np.asarray(whole.array))
    loaded = np.load(tmp_path / "t.npy", allow_pickle=False)
    assert loaded.shape == (50, 24) and _bits(loaded) == _bits(np.asarray(whole.array))


def test_npz_stream_equals_numpy(tmp_path: Path, small_blocks: None) -> None:
    lazy = rope(50, 24, lazy=True)
    whole = rope(50, 24)
    assert any(isinstance(a, RowSource) for a in lazy.arrays.values())
    api.save(lazy, tmp_path / "t.npz")
    with np.load(tmp_path / "t.npz", allow_pickle=False) as npz:
        found = [_bits(npz[name]) for name in npz.files if isinstance(npz[name], np.ndarray)]
    expected = sorted(_bits(np.asarray(a)) for a in whole.arrays.values())
    assert all(e in found for e in expected)
    with zipfile.ZipFile(tmp_path / "t.npz") as archive:
        assert archive.testzip() is None  # every member's CRC matches what was streamed


def test_safetensors_stream_equals_whole(tmp_path: Path, small_blocks: None) -> None:
    from safetensors.numpy import load_file

    lazy, whole = rope(50, 24, lazy=True), rope(50, 24)
    api.save(lazy, tmp_path / "t.safetensors")
    found = load_file(str(tmp_path / "t.safetensors"))
    assert set(found) == set(whole.arrays)
    for key, array in whole.arrays.items():
        assert _bits(found[key]) == _bits(np.asarray(array))


def test_gguf_stream_equals_whole(tmp_path: Path, small_blocks: None) -> None:
    from gguf import GGUFReader

    lazy, whole = rope(50, 24, lazy=True), rope(50, 24)
    api.save(lazy, tmp_path / "t.gguf")
    found = sorted(np.asarray(t.data).tobytes() for t in GGUFReader(tmp_path / "t.gguf").tensors)
    assert found == sorted(_bits(np.asarray(a)) for a in whole.arrays.values())


def test_onnx_stream_equals_whole(tmp_path: Path, small_blocks: None) -> None:
    import onnx
    from onnx import numpy_helper

    lazy, whole = rope(50, 24, lazy=True), rope(50, 24)
    api.save(lazy, tmp_path / "t.onnx")
    model = onnx.load(str(tmp_path / "t.onnx"))
    found = sorted(_bits(numpy_helper.to_array(t)) for t in model.graph.initializer)
    assert all(_bits(np.asarray(a)) in found for a in whole.arrays.values())


def test_parallel_blocks_equal_the_whole_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Blocks of 288 rows x 4096 float64 (over a million entries) take the engine's two-thread path in each block.
    monkeypatch.setattr(_blocks, "SOURCE_BLOCK_BYTES", 9 << 20)
    lazy = generate(600, 4096, dtype="float64", lazy=True)
    api.save(lazy, tmp_path / "big.npy")
    expected = np.asarray(generate(600, 4096, dtype="float64").array)
    assert _bits(np.load(tmp_path / "big.npy")) == _bits(expected)


def test_row_blocks_of_a_source_are_in_order_and_complete() -> None:
    calls: list[tuple[int, int]] = []

    def rows(lo: int, hi: int) -> np.ndarray:
        calls.append((lo, hi))
        return np.arange(lo * 3, hi * 3, dtype=np.int32).reshape(hi - lo, 3)

    source = RowSource((23, 3), np.int32, rows)
    blocks = list(_blocks.row_blocks(source, 5 * 12))
    assert [lo for lo, _ in blocks] == list(range(0, 23, 5))
    assert np.array_equal(np.concatenate([b for _, b in blocks]), np.arange(69, dtype=np.int32).reshape(23, 3))
    assert sorted(calls) == [(lo, min(23, lo + 5)) for lo in range(0, 23, 5)]


def test_row_blocks_closed_early_stops_computing() -> None:
    calls: list[int] = []

    def rows(lo: int, hi: int) -> np.ndarray:
        calls.append(lo)
        return np.zeros((hi - lo, 2), np.float32)

    blocks = _blocks.row_blocks(RowSource((1000, 2), np.float32, rows), 8)
    next(blocks)
    blocks.close()  # a writer that failed: the pool is shut down, no block beyond the look-ahead is computed
    assert len(calls) <= 2 + _blocks.AHEAD


def test_a_failing_block_reaches_the_writer(tmp_path: Path) -> None:
    def rows(lo: int, hi: int) -> np.ndarray:
        if lo >= 4:
            raise ValueError("row source failed")
        return np.zeros((hi - lo, 2), np.float32)

    with pytest.raises(ValueError, match="row source failed"):
        list(_blocks.row_blocks(RowSource((10, 2), np.float32, rows), 8))


@pytest.mark.parametrize(
    "array",
    [
        np.arange(6, dtype=">f4").reshape(2, 3),  # big-endian: converted
        np.arange(12, dtype="<f8").reshape(3, 4)[:, ::2],  # not contiguous: copied
        np.arange(6, dtype="<i2").reshape(2, 3),  # already right: a view
        np.float32(1.5).reshape(()),  # 0-d
        np.zeros((0, 3), "<f4"),  # empty
    ],
)
def test_raw_bytes_are_the_little_endian_c_order_values(array: np.ndarray) -> None:
    dtype = array.dtype.newbyteorder("<")
    assert bytes(_blocks.raw_bytes(array, dtype)) == array.astype(dtype).tobytes(order="C")


def test_raw_bytes_of_a_contiguous_block_do_not_copy() -> None:
    block = np.arange(8, dtype="<f4")
    view = _blocks.raw_bytes(block, np.dtype("<f4"))
    block[0] = 7.0
    assert bytes(view[:4]) == np.float32(7.0).tobytes()


def test_a_fifo_put_where_the_target_was_is_never_read(tmp_path: Path) -> None:
    """The temporary output compares itself with the target it will replace; a FIFO put there after the target
    was checked (a hostile swap) is opened without blocking, seen not to be a regular file, and left unread."""
    import os

    from posenc_cli.system.atomic import _FlushingFile

    fifo = tmp_path / "t.npy"
    os.mkfifo(fifo)
    out = _FlushingFile(io.FileIO(tmp_path / "t.tmp", "w+"), target=fifo)  # returns: no writer is awaited
    try:
        assert out.matches is False
        out.write(b"posenc")
        assert out.unchanged(fifo) is None  # no answer from a file never compared
    finally:
        out.close()
    assert (tmp_path / "t.tmp").read_bytes() == b"posenc"
