"""A few MiB that declare a GiB (issue #25): ``posenc inspect`` and ``posenc verify`` read such a table a block at a
time, so the memory they take is bounded by a block, not by what the file declares (docs/inspect.md states the
bound).

Each file holds a 16384 x 16384 float32 table (1 GiB) of zeros with one 0.5 near its end, and says it is the
sinusoidal table of that size: an .npz whose member is deflated (1 MiB on disk), an .h5 of gzip chunks as h5py
makes them (5 MiB), and an .npy and a .safetensors file stored sparse (a few KiB on disk). Every one is within the
default limits, so it is really read. The command runs as the only child of a small wrapper process, which reports
the child's peak resident memory (``getrusage(RUSAGE_CHILDREN)``) once the child has exited; the same command on a
16-value table of the same format is the baseline. The child's address space is capped, so a reader that takes
the declared size fails here instead of swapping the machine. The answers are checked against numpy's own,
computed here in chunks.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import h5py
import numpy as np
import pytest

from posenc_cli.formats import npy as npy_format

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss is in KiB and RLIMIT_AS bounds memory on Linux"),
]

MiB = 1 << 20
GiB = 1 << 30
#: What docs/inspect.md promises above the interpreter and its libraries (the same command on a tiny table).
INSPECT_BOUND = 64 * MiB
VERIFY_BOUND = 96 * MiB
#: The child's address space: room for the default limit (half of what is left) to take the 1 GiB the files
#: declare, so that they are really read; and a reader that took it all would still not run the machine dry.
ADDRESS_SPACE = 3 * GiB

N = 16384
AT = (N - 1, N - 3)  # the one value that is not zero, near the end
PARAMS = {"seq_len": N, "d_model": N, "base": 10000.0, "dtype": "float32", "layout": "interleaved"}
SETTINGS = {".npy": ["-s", f"seq_len={N}", "-s", f"d_model={N}"]}

WRAPPER = """
import json, resource, subprocess, sys
def cap():
    resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[1]), resource.RLIM_INFINITY))
done = subprocess.run(sys.argv[2:], capture_output=True, text=True, preexec_fn=cap, timeout=600)
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
print(json.dumps({"peak": peak, "code": done.returncode, "stdout": done.stdout, "stderr": done.stderr}))
"""


def measured(*args: str) -> dict[str, object]:
    """``posenc *args`` run as the only child of a wrapper: its exit code, output and peak resident bytes."""
    command = [sys.executable, "-c", WRAPPER, str(ADDRESS_SPACE), sys.executable, "-m", "posenc_cli", *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, check=True)
    result: dict[str, object] = json.loads(done.stdout)
    return result


def pieces(total: int, size: int = 16 * MiB):
    """The table's bytes in pieces of ``size``: zeros, and 0.5 at ``AT``."""
    where = (AT[0] * N + AT[1]) * 4
    for start in range(0, total, size):
        piece = bytearray(min(size, total - start))
        if start <= where < start + len(piece):
            piece[where - start : where - start + 4] = np.float32(0.5).tobytes()
        yield bytes(piece)


def sparse(path: Path, head: bytes) -> None:
    """``head`` then the table, the zeros left as a hole the file system stores in no block."""
    with open(path, "wb") as out:
        out.write(head)
        out.seek(len(head) + (AT[0] * N + AT[1]) * 4)
        out.write(np.float32(0.5).tobytes())
        out.truncate(len(head) + N * N * 4)


def meta(rows: int) -> str:
    """posenc's metadata of the sinusoidal table of ``rows`` x ``rows`` float32."""
    return json.dumps({"kind": "sinusoidal", "params": {**PARAMS, "seq_len": rows, "d_model": rows}})


def safetensors_head(shape: tuple[int, int]) -> bytes:
    size = shape[0] * shape[1] * 4
    header = {
        "__metadata__": {"posenc": meta(shape[0])},
        "pe": {"dtype": "F32", "shape": list(shape), "data_offsets": [0, size]},
    }
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    return len(text).to_bytes(8, "little") + text


def write_npz(path: Path, shape: tuple[int, int], data) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        with archive.open("pe.npy", "w", force_zip64=True) as member:
            member.write(npy_format.header(shape, np.dtype("<f4")))
            for piece in data:
                member.write(piece)
        archive.writestr("posenc.json", meta(shape[0]))


def write_h5(path: Path, shape: tuple[int, int], rows_of) -> None:
    with h5py.File(path, "w") as f:
        ds = f.create_dataset("pe", shape=shape, dtype="<f4", compression="gzip", compression_opts=1)
        for lo in range(0, shape[0], 1024):
            ds[lo : lo + 1024] = rows_of(lo, min(shape[0], lo + 1024))
        ds.attrs["kind"] = "sinusoidal"
        for key, value in PARAMS.items():
            ds.attrs[key] = shape[0] if key in ("seq_len", "d_model") else value


@pytest.fixture(scope="module")
def bombs(tmp_path_factory) -> Path:
    where = tmp_path_factory.mktemp("gigabyte")
    write_npz(where / "pe.npz", (N, N), pieces(N * N * 4))

    def rows(lo: int, hi: int) -> np.ndarray:
        block = np.zeros((hi - lo, N), "<f4")
        if lo <= AT[0] < hi:
            block[AT[0] - lo, AT[1]] = 0.5
        return block

    write_h5(where / "pe.h5", (N, N), rows)
    sparse(where / "pe.npy", npy_format.header((N, N), np.dtype("<f4")))
    sparse(where / "pe.safetensors", safetensors_head((N, N)))
    tiny = where / "tiny"
    tiny.mkdir()
    write_npz(tiny / "pe.npz", (4, 4), [bytes(64)])
    write_h5(tiny / "pe.h5", (4, 4), lambda lo, hi: np.zeros((hi - lo, 4), "<f4"))
    (tiny / "pe.npy").write_bytes(npy_format.header((4, 4), np.dtype("<f4")) + bytes(64))
    (tiny / "pe.safetensors").write_bytes(safetensors_head((4, 4)) + bytes(64))
    return where


@pytest.fixture(scope="module")
def numpy_sha256() -> str:
    digest = hashlib.sha256()
    for piece in pieces(N * N * 4):
        digest.update(piece)
    return digest.hexdigest()


@pytest.fixture(scope="module")
def numpy_mismatches() -> int:
    """How many values of the file differ from the 16384 x 16384 sinusoidal table in float32, computed by numpy row
    block by row block: pe[p, 2i] = sin(p w_i), pe[p, 2i + 1] = cos(p w_i), w_i = 10000 ** (-2i / d). The file's
    zeros match the table's +0.0 values; its 0.5 matches only a 0.5."""
    omega = 10000.0 ** (-np.arange(0, N, 2) / N)
    differ = 0
    for lo in range(0, N, 512):
        angles = np.arange(lo, lo + 512, dtype=np.float64)[:, None] * omega
        table = np.empty((512, N), np.float32)
        table[:, 0::2], table[:, 1::2] = np.sin(angles), np.cos(angles)
        stored = np.zeros_like(table)
        if lo <= AT[0] < lo + 512:
            stored[AT[0] - lo, AT[1]] = 0.5
        differ += int(np.count_nonzero(stored.view(np.uint32) != table.view(np.uint32)))
    return differ


SUFFIXES = [".npz", ".h5", ".npy", ".safetensors"]


def test_the_files_are_small_and_declare_a_gigabyte(bombs):
    for suffix in SUFFIXES:
        on_disk = (bombs / f"pe{suffix}").stat().st_blocks * 512
        assert on_disk < 8 * MiB, (suffix, on_disk)
    with zipfile.ZipFile(bombs / "pe.npz") as archive:
        assert archive.getinfo("pe.npy").file_size == 128 + GiB
    with h5py.File(bombs / "pe.h5") as f:
        assert f["pe"].shape == (N, N) and f["pe"].compression == "gzip" and f["pe"][AT] == 0.5
    assert np.load(bombs / "pe.npy", mmap_mode="r")[AT] == 0.5


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_inspect_reads_a_gigabyte_in_a_block_of_memory(bombs, numpy_sha256, suffix):
    big = measured("inspect", "--json", str(bombs / f"pe{suffix}"))
    small = measured("inspect", "--json", str(bombs / "tiny" / f"pe{suffix}"))
    assert big["code"] == small["code"] == 0, (big["stderr"], small["stderr"])
    facts = json.loads(str(big["stdout"]))["arrays"]["pe"]
    assert (facts["sha256"], facts["min"], facts["max"], facts["nbytes"]) == (numpy_sha256, 0.0, 0.5, GiB)
    grew = int(big["peak"]) - int(small["peak"])  # type: ignore[call-overload]
    assert grew < INSPECT_BOUND, f"{suffix}: {grew / MiB:.1f} MiB more than for 16 values"


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_verify_reads_a_gigabyte_in_a_block_of_memory(bombs, numpy_mismatches, suffix):
    settings = SETTINGS.get(suffix, [])
    big = measured("verify", "--json", str(bombs / f"pe{suffix}"), *settings)
    small = measured(
        "verify", "--json", str(bombs / "tiny" / f"pe{suffix}"), *[s.replace(str(N), "4") for s in settings]
    )
    assert big["code"] == small["code"] == 1, (big["stderr"], small["stderr"])  # zeros are not the table
    found = json.loads(str(big["stdout"]))
    assert (found["compared"], found["mismatched"]) == (N * N, numpy_mismatches)
    # the first values that differ: row 0's cosines (1.0), where the sines are sin(0) = 0, as the file holds
    assert [m["index"] for m in found["mismatches"]] == [[0, j] for j in range(1, 20, 2)]
    assert all(m["expected"] == 1.0 and m["stored"] == 0.0 for m in found["mismatches"])
    grew = int(big["peak"]) - int(small["peak"])  # type: ignore[call-overload]
    assert grew < VERIFY_BOUND, f"{suffix}: {grew / MiB:.1f} MiB more than for 16 values"
