"""Reading in parts (``posenc_cli.read.opened``, each format's ``stream``): what ``posenc inspect`` and ``verify``
read gives the facts numpy's own readers give, block after block, and exactly what reading the whole file gives.

Files are written by the formats' own clients (numpy, h5py, safetensors), in the layouts posenc does not write
(deflated members, chunks, big-endian values, Fortran order, unwritten chunks), and read with blocks made tiny
(a few values) so that every array spans many blocks and many rows are cut. The hostile members of an .npz (data
that runs longer or shorter than the directory says) are made by hand and refused.
"""

from __future__ import annotations

import hashlib
import io
import json
import struct
import zipfile
import zlib
from pathlib import Path

import h5py
import numpy as np
import pytest
import safetensors.numpy
from click.testing import CliRunner

import posenc_cli
from posenc_cli import verify as checking
from posenc_cli.cli import cli
from posenc_cli.describe import describe
from posenc_cli.errors import FormatError
from posenc_cli.formats import _blocks
from posenc_cli.formats import npy as npy_format
from posenc_cli.formats import npz as npz_format
from posenc_cli.formats._hdf5_values import MAX_BAND
from posenc_cli.read import opened
from posenc_cli.table import FileArray

RNG = np.random.default_rng(25)
WIDE = RNG.standard_normal((9, 20)).astype(np.float32)
WIDE[0, 0], WIDE[3, 4], WIDE[8, 19] = np.nan, -0.0, 0.0
CUBE = RNG.integers(-1000, 1000, (5, 3, 7)).astype(">i4")  # big-endian, three axes
LINE = RNG.standard_normal(33)
ARRAYS = {"wide": WIDE, "cube": CUBE, "line": LINE}


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks of 48 bytes (12 float32 values): a row of WIDE (80 bytes) is cut, a row of CUBE (84) too, LINE
    (264 bytes) is 6 blocks; verify's reference blocks are one row."""
    monkeypatch.setattr(_blocks, "BLOCK_BYTES", 48)
    monkeypatch.setattr(checking, "BLOCK_VALUES", 7)


def numpy_facts(array: np.ndarray) -> dict[str, object]:
    """sha256 of the little-endian C-order values, min and max ignoring NaN, bytes: numpy's own answers."""
    little = np.ascontiguousarray(array, array.dtype.newbyteorder("<"))
    if array.dtype.kind in "iu":
        low, high = int(array.min()), int(array.max())
    else:
        low, high = float(np.nanmin(array.astype(np.float64))), float(np.nanmax(array.astype(np.float64)))
    return {"sha256": hashlib.sha256(little.tobytes()).hexdigest(), "min": low, "max": high, "nbytes": array.nbytes}


def write(path: Path, layout: str) -> dict[str, np.ndarray]:
    """Write ``ARRAYS`` to ``path`` with the format's own client, in ``layout``; the arrays as that client reads them
    back."""
    if layout == "npy":
        np.save(path, WIDE)
    elif layout == "npy-fortran":
        np.save(path, np.asfortranarray(WIDE))
    elif layout == "npz-stored":
        np.savez(path, **ARRAYS)
    elif layout == "npz-deflated":
        np.savez_compressed(path, **ARRAYS)
    elif layout == "safetensors":
        safetensors.numpy.save_file({k: np.ascontiguousarray(a, a.dtype.newbyteorder("<")) for k, a in ARRAYS.items()},
                                    str(path))  # fmt: skip
    else:
        with h5py.File(path, "w") as f:
            for key, array in ARRAYS.items():
                if layout == "h5-contiguous":
                    f.create_dataset(key, data=array)
                elif layout == "h5-chunked":  # every filter posenc decodes, chunks that cut rows and columns
                    chunks = {"wide": (2, 7), "cube": (2, 2, 3), "line": (5,)}[key]
                    f.create_dataset(key, data=array, chunks=chunks, compression="gzip", shuffle=True,
                                     fletcher32=True)  # fmt: skip
                elif layout == "h5-chunk-per-row":  # a row is one chunk, and a chunk longer than the data
                    chunks = {"wide": (1, 20), "cube": (1, 1, 7), "line": (64,)}[key]
                    f.create_dataset(key, data=array, chunks=chunks, compression="gzip",
                                     maxshape=(None,) * array.ndim)  # fmt: skip
    if layout.startswith("npy"):
        return {"pe": np.load(path)}
    if layout.startswith("npz"):
        with np.load(path) as z:
            return {k: z[k] for k in z.files}
    if layout == "safetensors":
        return safetensors.numpy.load_file(str(path))
    with h5py.File(path, "r") as f:
        return {k: f[k][()] for k in f}


LAYOUTS = {
    "npy": ".npy",
    "npy-fortran": ".npy",
    "npz-stored": ".npz",
    "npz-deflated": ".npz",
    "safetensors": ".safetensors",
    "h5-contiguous": ".h5",
    "h5-chunked": ".h5",
    "h5-chunk-per-row": ".h5",
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_read_in_parts_gives_numpys_facts(tmp_path, small_blocks, layout):
    path = tmp_path / f"t{LAYOUTS[layout]}"
    expected = write(path, layout)
    with opened(path) as table:
        kinds = {key: isinstance(array, FileArray) for key, array in table.arrays.items()}
        facts = describe(table)["arrays"]
    assert kinds == {key: layout != "npy-fortran" for key in expected}  # Fortran order: read whole
    for key, array in expected.items():
        got = {name: facts[key][name] for name in ("sha256", "min", "max", "nbytes")}
        assert got == numpy_facts(array), key


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_read_in_parts_describes_exactly_what_reading_whole_does(tmp_path, layout):
    path = tmp_path / f"t{LAYOUTS[layout]}"
    write(path, layout)
    with opened(path) as table:
        in_parts = json.dumps(describe(table), sort_keys=True)
    assert in_parts == json.dumps(describe(posenc_cli.load(path)), sort_keys=True)


def suite_files() -> list[Path]:
    root = Path(__file__).resolve().parents[1]
    found = [*sorted((root / "sample_outputs").iterdir()), *sorted((root / "tests" / "goldens").rglob("*"))]
    return [p for p in found if p.suffix in (".npy", ".npz", ".h5", ".safetensors")]


def test_the_suite_has_files_to_read():
    assert {p.suffix for p in suite_files()} >= {".npy", ".npz", ".h5", ".safetensors"}


@pytest.mark.parametrize("path", suite_files(), ids=lambda p: p.name)
def test_every_file_the_suite_inspects_gives_the_same_facts(path):
    """sha256, min, max and nbytes (and all else inspect --json says) are byte for byte those of the whole read; a
    golden posenc does not read (tests/goldens/framework_grids/deberta.npz: 131 arrays, past the 65 members posenc
    reads) is refused alike both ways."""
    try:
        whole = posenc_cli.load(path)
    except FormatError as exc:
        with pytest.raises(FormatError) as parts:
            with opened(path):
                pass
        assert str(parts.value) == str(exc)
        return
    with opened(path) as table:
        assert all(isinstance(a, FileArray) for a in table.arrays.values() if a.ndim and a.size)
        in_parts = json.dumps(describe(table), sort_keys=True)
    assert in_parts == json.dumps(describe(whole), sort_keys=True)


def test_q7_extremes_come_from_the_codes(tmp_path, small_blocks):
    path = tmp_path / "q7.npz"
    posenc_cli.save(posenc_cli.generate(40, 24, dtype="q7"), path)
    with np.load(path) as z:
        codes = z["pe"]
    with opened(path) as table:
        facts = describe(table)["arrays"]["pe"]
    assert (facts["min"], facts["max"]) == (codes.min() / 128, codes.max() / 128)


@pytest.mark.parametrize("scale", [0.25, -0.25])  # a negative scale (no table posenc writes) reverses the order
def test_affine_int8_extremes_are_those_of_the_values(tmp_path, small_blocks, scale):
    codes = RNG.integers(-128, 128, (7, 9)).astype(np.int8)
    path = tmp_path / "int8.npz"
    np.savez(path, pe=codes)
    meta = {"kind": "array", "params": {"dtype": "int8", "scale": scale, "zero_point": 3}}
    with zipfile.ZipFile(path, "a") as archive:
        archive.writestr("posenc.json", json.dumps(meta))
    real = (codes.astype(np.float64) - 3) * scale
    with opened(path) as table:
        facts = describe(table)["arrays"]["pe"]
    assert (facts["min"], facts["max"]) == (real.min(), real.max())


def test_unwritten_storage_reads_as_its_fill_value(tmp_path, small_blocks):
    path = tmp_path / "fill.h5"
    with h5py.File(path, "w") as f:
        # Three axes: constant tables of one or two are what describe passes to identification, which is not read here
        f.create_dataset("never", shape=(2, 4, 6), dtype="<f4", fillvalue=1.5)  # contiguous, never allocated
        part = f.create_dataset("part", shape=(2, 6, 6), dtype="<f8", chunks=(1, 2, 3), fillvalue=-0.0)
        part[1, 2:4, 3:6] = 7.0  # one chunk of eighteen written
    with h5py.File(path, "r") as f:
        expected = {k: f[k][()] for k in f}
    with opened(path) as table:
        assert all(isinstance(a, FileArray) for a in table.arrays.values())
        facts = describe(table)["arrays"]
    for key, array in expected.items():
        assert facts[key]["sha256"] == numpy_facts(array)["sha256"], key


def test_a_row_of_chunks_past_the_band_is_read_whole(tmp_path):
    width = MAX_BAND // 4 // 64 + 1  # tall chunks of 64 rows across a row just too wide for a band of float32
    path = tmp_path / "tall.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("tall", shape=(64, width), dtype="<f4", chunks=(64, 1), compression="gzip")
        f.create_dataset("h5py", shape=(64, width), dtype="<f4", compression="gzip")  # h5py's chunks
    with opened(path) as table:
        assert not isinstance(table.arrays["tall"], FileArray) and isinstance(table.arrays["h5py"], FileArray)
        facts = describe(table)["arrays"]
    assert facts["tall"]["sha256"] == facts["h5py"]["sha256"] == numpy_facts(np.zeros((64, width), "<f4"))["sha256"]


def test_a_code_out_of_range_in_a_later_block_is_refused(tmp_path, small_blocks):
    codes = np.zeros((30, 5), np.int32)
    codes[27, 3] = 131072  # one past fixed18.16's codes
    path = tmp_path / "pe.npy"
    np.save(path, codes)
    sidecar = {"dtype": "fixed18.16", "generator": "posenc 0", "kind": "array", "params": {"dtype": "fixed18.16"},
               "storage": "<i4"}  # fmt: skip
    (tmp_path / "pe.json").write_text(json.dumps(sidecar, indent=2, sort_keys=True) + "\n")
    with opened(path) as table, pytest.raises(FormatError, match=r"pe\.npy.*131072, outside its codes"):
        describe(table)


def test_an_array_read_after_its_file_is_closed_says_so(tmp_path):
    np.save(tmp_path / "pe.npy", WIDE)
    with opened(tmp_path / "pe.npy") as table:
        array = table.array
    assert isinstance(array, FileArray)
    with pytest.raises(ValueError, match="inside `with opened"):
        array.flat(0, 1)


def test_a_format_read_whole_is_opened_whole(tmp_path):
    path = tmp_path / "pe.csv"
    posenc_cli.save(posenc_cli.generate(3, 4), path)
    with opened(path) as table:
        assert isinstance(table.array, np.ndarray)


# ---------------------------------------------------------------------------------------------------- verify
def run(*args: object):
    return CliRunner().invoke(cli, [str(a) for a in args])


def changed_near_the_end(tmp_path: Path, suffix: str) -> tuple[Path, list[str]]:
    """A sinusoidal table posenc wrote, rewritten by the format's own client with one value changed, the
    second-to-last of its last row; the settings verify needs for it."""
    table = posenc_cli.generate(61, 30)
    values = np.array(table.array)
    posenc_cli.save(table, tmp_path / f"good{suffix}")
    assert run("verify", tmp_path / f"good{suffix}", "-s", "seq_len=61", "-s", "d_model=30").exit_code == 0
    values[60, 28] = 0.5
    path, settings = tmp_path / f"pe{suffix}", []
    meta = json.dumps({"kind": "sinusoidal", "params": dict(table.params)})
    if suffix == ".npy":
        np.save(path, values)
        settings = ["-s", "seq_len=61", "-s", "d_model=30"]
    elif suffix == ".npz":
        np.savez_compressed(path, pe=values)
        with zipfile.ZipFile(path, "a") as archive:
            archive.writestr("posenc.json", meta)
    elif suffix == ".safetensors":
        safetensors.numpy.save_file({"pe": values}, str(path), metadata={"posenc": meta})
    else:
        with h5py.File(path, "w") as f:
            ds = f.create_dataset("pe", data=values, chunks=(4, 7), compression="gzip", shuffle=True)
            ds.attrs["kind"] = "sinusoidal"
            for key, value in table.params.items():
                ds.attrs[key] = value
    return path, settings


@pytest.mark.parametrize("suffix", [".npy", ".npz", ".safetensors", ".h5"])
def test_verify_finds_one_changed_value_near_the_end(tmp_path, small_blocks, suffix):
    path, settings = changed_near_the_end(tmp_path, suffix)
    result = run("verify", path, *settings, "--json")
    assert result.exit_code == 1, result.output
    found = json.loads(result.stdout)
    assert (found["compared"], found["mismatched"]) == (61 * 30, 1)
    assert [(m["index"], m["stored"]) for m in found["mismatches"]] == [([60, 28], 0.5)]


@pytest.mark.parametrize("suffix", [".npz", ".h5"])
def test_verify_finds_one_changed_value_near_the_end_of_a_large_table(tmp_path, suffix):
    """With the blocks as they are: 8 MiB of float32, two blocks of the file and sixteen of the reference."""
    table = posenc_cli.generate(2048, 1024)
    values = np.array(table.array)
    values[2046, 1021] = -values[2046, 1021]
    path = tmp_path / f"pe{suffix}"
    if suffix == ".npz":
        np.savez_compressed(path, pe=values)
        with zipfile.ZipFile(path, "a") as archive:
            archive.writestr("posenc.json", json.dumps({"kind": "sinusoidal", "params": dict(table.params)}))
    else:
        with h5py.File(path, "w") as f:
            ds = f.create_dataset("pe", data=values, compression="gzip")  # h5py's chunks
            ds.attrs["kind"] = "sinusoidal"
            for key, value in table.params.items():
                ds.attrs[key] = value
    with opened(path) as stored:
        assert isinstance(stored.array, FileArray)
        result = checking.verify(stored, checking.regenerate("sinusoidal", stored.params))
    assert (result.compared, result.mismatched) == (2048 * 1024, 1)
    assert [(m.index, m.stored) for m in result.mismatches] == [((2046, 1021), float(values[2046, 1021]))]


def test_verify_hashes_a_gathered_bias_in_blocks(tmp_path, small_blocks):
    weights = RNG.standard_normal((32, 4)).astype(np.float32)
    key = "encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight"
    safetensors.numpy.save_file({key: weights}, str(tmp_path / "model.safetensors"))
    out = tmp_path / "bias.npz"
    made = run("relative", "--scheme", "t5", "-Q", 9, "--bias", tmp_path / "model.safetensors", "--key", key, "-o", out)
    assert made.exit_code == 0 and run("verify", out).exit_code == 0, made.output
    with np.load(out) as z:
        arrays = {k: z[k] for k in z.files}
    with zipfile.ZipFile(out) as archive:
        record = archive.comment  # posenc's record: the ZIP comment
    arrays["bias"][3, 8, 7] += 1.0  # near the end: the recorded sha256 no longer matches
    np.savez_compressed(out, **arrays)
    with zipfile.ZipFile(out, "a") as archive:
        archive.comment = record
    result = run("verify", out)
    assert result.exit_code == 1 and "'bias' is not what was written: its sha256 differs" in result.stdout


# ---------------------------------------------------------------------------------------- .npz members, by hand
def one_member_zip(name: str, data: bytes, *, method: int, size: int, crc: int, stored: bytes | None = None) -> bytes:
    """A ZIP of one member ``name`` whose directory says ``size`` bytes and CRC-32 ``crc``, holding ``stored`` (by
    default ``data`` deflated, or as it is for a stored member): every field may lie."""
    if stored is None:
        squeeze = zlib.compressobj(9, zlib.DEFLATED, -15)
        stored = squeeze.compress(data) + squeeze.flush() if method == zipfile.ZIP_DEFLATED else data
    raw = name.encode()
    local = struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, method, 0, 0x21, crc, len(stored), size, len(raw), 0)
    central = struct.pack(
        "<4s6H3L5H2L", b"PK\x01\x02", 20, 20, 0, method, 0, 0x21, crc, len(stored), size, len(raw), 0, 0, 0, 0, 0, 0
    )
    body = local + raw + stored
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, 1, 1, len(central) + len(raw), len(body), 0)
    return body + central + raw + end


HEAD = npy_format.header((1, 4), np.dtype("<f4"))
DATA = HEAD + np.arange(4, dtype="<f4").tobytes()


def test_the_hand_made_zip_is_read_when_nothing_lies():
    archive = one_member_zip("pe.npy", DATA, method=zipfile.ZIP_DEFLATED, size=len(DATA), crc=zlib.crc32(DATA))
    assert np.load(io.BytesIO(archive))["pe"].tolist() == [[0, 1, 2, 3]]
    assert npz_format.load(io.BytesIO(archive)).array.tolist() == [[0, 1, 2, 3]]


MEMBERS = {
    # The stream inflates 1 MiB past the 144 bytes the directory gives: zipfile stops there and says nothing.
    "runs-longer": (
        dict(data=DATA + bytes(1 << 20), method=zipfile.ZIP_DEFLATED, size=len(DATA), crc=zlib.crc32(DATA)),
        "inflates past the 144 bytes the directory gives it",
    ),
    "runs-shorter": (
        dict(data=DATA[:-8], method=zipfile.ZIP_DEFLATED, size=len(DATA), crc=zlib.crc32(DATA)),
        "its data ends after 136 bytes, and the directory gives it 144",
    ),
    "bytes-after-the-stream": (
        dict(
            data=DATA,
            method=zipfile.ZIP_DEFLATED,
            size=len(DATA),
            crc=zlib.crc32(DATA),
            stored=zlib.compress(DATA)[2:-4] + b"junk",
        ),  # fmt: skip
        "holds 4 compressed bytes after the end of its deflate stream",
    ),
    "stream-cut": (
        dict(
            data=DATA,
            method=zipfile.ZIP_DEFLATED,
            size=len(DATA),
            crc=zlib.crc32(DATA),
            stored=zlib.compress(DATA)[2:-9],
        ),  # fmt: skip
        "its data ends after 139 bytes, and the directory gives it 144",
    ),
    # Every byte is there, but the stream never ends (no final block): a truncated file that happens to hold it all.
    "no-final-block": (
        dict(
            data=DATA,
            method=zipfile.ZIP_DEFLATED,
            size=len(DATA),
            crc=zlib.crc32(DATA),
            stored=(lambda c: c.compress(DATA) + c.flush(zlib.Z_SYNC_FLUSH))(zlib.compressobj(9, zlib.DEFLATED, -15)),
        ),
        "ends inside its deflate stream",
    ),
    "stored-sizes-differ": (
        dict(data=DATA, method=zipfile.ZIP_STORED, size=len(DATA), crc=zlib.crc32(DATA), stored=DATA + b"junk"),
        "stored (not compressed) in 148 bytes, and the directory gives it 144",
    ),
    "bad-crc": (
        dict(data=DATA, method=zipfile.ZIP_DEFLATED, size=len(DATA), crc=zlib.crc32(DATA) ^ 1),
        "Bad CRC-32 of its data",
    ),
}


@pytest.mark.parametrize("case", list(MEMBERS))
@pytest.mark.parametrize("command", ["inspect", "verify"])
def test_a_member_that_is_not_the_size_the_directory_says_is_refused(tmp_path, case, command):
    fields, problem = MEMBERS[case]
    path = tmp_path / f"{case}.npz"
    path.write_bytes(one_member_zip("pe.npy", **fields))
    settings = ["-s", "seq_len=1", "-s", "d_model=4"] if command == "verify" else []
    result = run(command, path, *settings)
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == 1 and len(lines) == 1 and "Traceback" not in result.output, result.output
    assert f"{case}.npz" in lines[0] and "'pe.npy'" in lines[0] and problem in lines[0], lines[0]


def test_zipfile_itself_reads_the_member_that_runs_longer():
    """The attack is real: zipfile gives the declared bytes and checks their CRC, the rest of the stream unread."""
    fields, _ = MEMBERS["runs-longer"]
    with zipfile.ZipFile(io.BytesIO(one_member_zip("pe.npy", **fields))) as archive:
        assert archive.read("pe.npy") == DATA


def test_compressed_bytes_past_the_archive_are_refused(tmp_path):
    archive = bytearray(one_member_zip("pe.npy", DATA, method=zipfile.ZIP_STORED, size=len(DATA),
                                       crc=zlib.crc32(DATA)))  # fmt: skip
    central = archive.index(b"PK\x01\x02")
    struct.pack_into("<2L", archive, central + 20, 1 << 30, len(DATA))  # compressed size: 1 GiB
    (tmp_path / "far.npz").write_bytes(bytes(archive))
    result = run("inspect", tmp_path / "far.npz")
    assert result.exit_code == 1 and "run past the end of the archive" in result.stderr, result.output
