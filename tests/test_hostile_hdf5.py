"""Hostile .h5 files, each attack made for real with h5py: storage outside the file, links, bombs, types posenc does
not read, metadata past the limits, and byte-flipped files. Through the CLI every one is one ``Error:`` line naming
the file and the problem, exit 1, no traceback, no output; through the API a ``FormatError``. Memory and time are
shown bounded in processes with an address-space limit and a timeout, so a crash or a hang fails the test.
"""

from __future__ import annotations

import hashlib
import io
import json
import resource
import subprocess
import sys
import zlib
from collections.abc import Callable
from pathlib import Path

import h5py
import numpy as np
import pytest
from click.testing import CliRunner

import posenc_cli
from posenc_cli.cli import cli
from posenc_cli.errors import FormatError
from posenc_cli.formats import hdf5, limits
from posenc_cli.formats.limits import Budget
from posenc_cli.table import Table

SECRET = b"posenc-must-never-read-this " * 8

# ------------------------------------------------------------------------------------------------- helpers


def _h5(path: Path, make: Callable[[h5py.File], object], **kwargs: object) -> Path:
    with h5py.File(path, "w", **kwargs) as f:
        make(f)
    return path


def _load(path: Path, limit: int = 1 << 30) -> Table:
    """``hdf5.load`` itself, on an in-memory copy (any binary file object will do)."""
    return hdf5.load(io.BytesIO(path.read_bytes()), Budget(limit))


def _isolated(args: list[str], memory: int, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``python args`` in a process allowed ``memory`` bytes of address space: a crash is a signal, a hang a timeout."""

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, resource.RLIM_INFINITY))

    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, preexec_fn=cap, timeout=timeout, check=False
    )


#: Loads the file named by argv[1] with the default budget, then prints "peak <bytes>": the process's own peak
#: resident memory (VmHWM: ``ru_maxrss`` would count the pytest process it was forked from).
LOAD_AND_MEASURE = """
import sys
import posenc_cli
from posenc_cli.errors import FormatError
try:
    table = posenc_cli.load(sys.argv[1])
    print("loaded", sum(a.nbytes for a in table.arrays.values()))
except FormatError as exc:
    print("refused", exc)
with open("/proc/self/status") as status:
    peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
print("peak", peak * 1024)
"""


def _measure(path: Path, memory: int) -> tuple[str, int]:
    result = _isolated(["-c", LOAD_AND_MEASURE, str(path)], memory)
    assert result.returncode == 0, (result.returncode, result.stderr[-2000:])
    lines = result.stdout.splitlines()
    return lines[0], int(lines[-1].split()[1])


COMMANDS = {
    "inspect": lambda f, out: ["inspect", str(f)],
    "inspect-json": lambda f, out: ["inspect", "--json", str(f)],
    "convert-npy": lambda f, out: ["convert", str(f), str(out / "out.npy")],
    "convert-c": lambda f, out: ["convert", str(f), str(out / "out.h")],
    "verify": lambda f, out: ["verify", str(f), "-s", "seq_len=4", "-s", "d_model=4"],
}


def _assert_refused(path: Path, out: Path, command: str, *words: str) -> str:
    """Run ``command`` on ``path``: exit 1, one ``Error:`` line naming the file and holding ``words``, no output."""
    out.mkdir(exist_ok=True)
    result = CliRunner().invoke(cli, COMMANDS[command](path, out))
    assert result.exit_code == 1, (result.exit_code, result.output, result.exception)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    line = lines[0]
    assert path.name in line and "Traceback" not in result.output and "internal error" not in line, line
    for word in words:
        assert word in line, line
    assert list(out.iterdir()) == []  # no output, no temporary file
    return result.output


# ------------------------------------------------------------------------------------------------- storage and links


def _external_storage(f: h5py.File, secret: Path) -> None:
    f.create_dataset("pe", shape=(len(SECRET) // 4,), dtype="<f4", external=[(str(secret), 0, len(SECRET))])


def _external_storage_2d(f: h5py.File, secret: Path) -> None:
    f.create_dataset("pe", shape=(4, len(SECRET) // 4), dtype="u1", external=[(str(secret), 0, len(SECRET))])


def _external_link(f: h5py.File, secret: Path) -> None:
    other = secret.with_name("other.h5")
    _h5(other, lambda g: g.create_dataset("pe", data=np.frombuffer(SECRET, "u1")))
    f["pe"] = h5py.ExternalLink(str(other), "/pe")


def _soft_link(f: h5py.File, secret: Path) -> None:
    f.create_group("hidden").create_dataset("pe", data=np.frombuffer(SECRET, "u1"))
    f["pe"] = h5py.SoftLink("/hidden/pe")


def _soft_link_loop(f: h5py.File, secret: Path) -> None:
    f["a"] = h5py.SoftLink("/b")
    f["b"] = h5py.SoftLink("/a")


def _dangling_soft_link(f: h5py.File, secret: Path) -> None:
    f.create_dataset("pe", data=np.zeros((4, 4), "f4"))
    f["x"] = h5py.SoftLink("/nowhere")


def _link_in_the_only_group(f: h5py.File, secret: Path) -> None:
    f.create_group("table")["pe"] = h5py.SoftLink("/table/pe")


OUTSIDE = {
    "external-storage": (_external_storage, ("'/pe'", "external file")),
    "external-storage-2d": (_external_storage_2d, ("'/pe'", "external file")),
    "external-link": (_external_link, ("'/pe'", "external link", "other.h5")),
    "soft-link": (_soft_link, ("'/pe'", "soft link", "/hidden/pe")),
    "soft-link-loop": (_soft_link_loop, ("'/a'", "soft link")),
    "dangling-soft-link": (_dangling_soft_link, ("'/x'", "soft link")),
    "link-in-only-group": (_link_in_the_only_group, ("'/table/pe'", "soft link")),
}


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    path = tmp_path / "secret.txt"
    path.write_bytes(SECRET)
    return path


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("attack", list(OUTSIDE))
def test_data_outside_the_file_is_refused_and_never_read(tmp_path, secret, attack, command):
    make, words = OUTSIDE[attack]
    path = _h5(tmp_path / f"{attack}.h5", lambda f: make(f, secret))
    output = _assert_refused(path, tmp_path / "out", command, *words)
    for leak in (SECRET[:16].decode(), hashlib.sha256(SECRET).hexdigest(), hashlib.sha256(SECRET[:64]).hexdigest()):
        assert leak not in output


def _virtual(f: h5py.File, source: Path) -> None:
    _h5(source, lambda g: g.create_dataset("d", data=np.frombuffer(SECRET, "u1")))
    layout = h5py.VirtualLayout(shape=(len(SECRET),), dtype="u1")
    layout[:] = h5py.VirtualSource(str(source), "d", shape=(len(SECRET),))
    f.create_virtual_dataset("pe", layout)


def _virtual_self(f: h5py.File, source: Path) -> None:
    f.create_dataset("d", data=np.arange(10, dtype="f4"))
    layout = h5py.VirtualLayout(shape=(10,), dtype="f4")
    layout[:] = h5py.VirtualSource(".", "d", shape=(10,))
    f.create_virtual_dataset("pe", layout)


@pytest.mark.parametrize("make", [_virtual, _virtual_self])
@pytest.mark.parametrize("command", ["inspect", "convert"])
def test_virtual_datasets_are_refused(tmp_path, make, command):
    """Run in a separate process: reading a virtual dataset has crashed posenc (SIGSEGV)."""
    path = _h5(tmp_path / "virtual.h5", lambda f: make(f, tmp_path / "source.h5"))
    args = ["-m", "posenc_cli", command, str(path)] + ([str(tmp_path / "out.npy")] if command == "convert" else [])
    result = _isolated(args, 2 << 30, timeout=120)
    assert result.returncode == 1, (result.returncode, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and "virtual.h5" in lines[0], result.stderr
    assert "'/pe' is a virtual dataset" in lines[0] and SECRET[:16].decode() not in result.stdout
    assert not (tmp_path / "out.npy").exists()


# ------------------------------------------------------------------------------------------------- filters


def _filtered(path: Path, **kwargs: object) -> Path:
    data = np.arange(64, dtype="<f4").reshape(8, 8)
    return _h5(path, lambda f: f.create_dataset("pe", data=data, chunks=(4, 4), **kwargs))


def _unknown_filter(path: Path) -> Path:
    """A filter id no HDF5 here knows (32001, blosc's), optional so that HDF5 writes the chunks unfiltered: reading
    it through HDF5 would look for a plugin."""
    with h5py.File(path, "w") as f:
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((4,))
        dcpl.set_filter(32001, h5py.h5z.FLAG_OPTIONAL, (1, 2))
        space = h5py.h5s.create_simple((8,))
        dataset = h5py.h5d.create(f.id, b"pe", h5py.h5t.IEEE_F32LE, space, dcpl=dcpl)
        h5py.Dataset(dataset)[...] = np.arange(8)
    return path


FILTERED = {
    "lzf": lambda p: _filtered(p, compression="lzf"),
    "scaleoffset": lambda p: _filtered(p, scaleoffset=2),
    "unknown-32001": _unknown_filter,
}
if h5py.h5z.filter_avail(h5py.h5z.FILTER_SZIP):
    FILTERED["szip"] = lambda p: _filtered(p, compression="szip")


@pytest.mark.parametrize("name", list(FILTERED))
def test_filters_posenc_does_not_decode_are_refused(tmp_path, name):
    path = FILTERED[name](tmp_path / f"{name}.h5")
    _assert_refused(path, tmp_path / "out", "inspect", "'/pe'", "filter", "posenc decodes only")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"compression": "gzip"},
        {"compression": "gzip", "compression_opts": 9, "shuffle": True},
        {"shuffle": True, "fletcher32": True},
        {"compression": "gzip", "shuffle": True, "fletcher32": True},
        {},
    ],
)
@pytest.mark.parametrize("dtype", ["<f4", ">f8", "<f2", ">i2", "u1", "<i8", ">u4"])
@pytest.mark.parametrize("shape", [(37, 11), (5,), (3, 4, 5)])
def test_chunked_data_reads_as_h5py_reads_it(tmp_path, kwargs, dtype, shape):
    """posenc decodes chunks itself: the values, partial edge chunks, byte order and unwritten chunks (the fill
    value) must come out exactly as HDF5 gives them."""
    rng = np.random.default_rng(sum(shape))
    data = (rng.standard_normal(shape) * 100).astype(dtype)
    chunks = tuple(max(1, n // 3) for n in shape)

    def make(f: h5py.File) -> None:
        ds = f.create_dataset("x", shape=shape, dtype=dtype, chunks=chunks, fillvalue=np.array(7, dtype), **kwargs)
        written = tuple(slice(0, max(1, n - n // 3)) for n in shape)  # the last chunks along each axis stay unwritten
        ds[written] = data[written]

    path = _h5(tmp_path / "c.h5", make)
    with h5py.File(path) as f:
        expected = f["x"][()]
    got = _load(path).arrays["x"]
    assert got.dtype == np.dtype(dtype).newbyteorder("=") and got.tobytes() == expected.astype(got.dtype).tobytes()


def test_a_chunk_failing_its_fletcher32_checksum_is_refused(tmp_path):
    path = _filtered(tmp_path / "f.h5", fletcher32=True)
    with h5py.File(path) as f:
        start = f["pe"].id.get_chunk_info_by_coord((4, 4)).byte_offset
    raw = bytearray(path.read_bytes())
    raw[start + 5] ^= 0x01
    path.write_bytes(bytes(raw))
    _assert_refused(path, tmp_path / "out", "inspect", "chunk (4, 4) of dataset '/pe'", "fletcher32")


def test_a_chunk_holding_no_deflate_stream_is_refused(tmp_path):
    path = _h5(
        tmp_path / "z.h5",
        lambda f: f.create_dataset("pe", shape=(8, 8), dtype="<f4", chunks=(8, 8), compression="gzip"),
    )
    with h5py.File(path, "r+") as f:
        f["pe"].id.write_direct_chunk((0, 0), b"not deflate at all")
    _assert_refused(path, tmp_path / "out", "inspect", "chunk (0, 0) of dataset '/pe'", "not deflate data")


# ------------------------------------------------------------------------------------------------- bombs


def _huge_unwritten(f: h5py.File) -> None:
    f.create_dataset("pe", shape=(10**6, 10**5), chunks=(1000, 1000), dtype="<f4")  # 400 GB declared, no data


def test_huge_declared_dims_are_refused_from_the_declaration(tmp_path):
    path = _h5(tmp_path / "huge.h5", _huge_unwritten)
    assert path.stat().st_size < 4096
    with pytest.raises(FormatError, match=r"dataset '/pe' \(1000000 x 100000 float32\) needs 372.5 GiB of memory"):
        _load(path, limits.default_limit())
    result = _isolated(["-m", "posenc_cli", "inspect", str(path)], 1 << 30, timeout=120)
    assert result.returncode == 1 and result.stdout == "", result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "huge.h5" in lines[0] and "needs 372.5 GiB of memory" in lines[0], result.stderr


def test_the_budget_counts_every_dataset(tmp_path):
    """``hdf5.load(fp, Budget(limit))``: the declared bytes of all datasets together, before any is read."""
    path = _h5(tmp_path / "two.h5", lambda f: [f.create_dataset(k, data=np.ones((16, 16), "<f8")) for k in "ab"])
    need = 2 * 16 * 16 * 8
    assert sorted(_load(path, need).arrays) == ["a", "b"]
    with pytest.raises(FormatError, match=r"dataset '/b' \(16 x 16 float64\) needs 2.0 KiB of memory.*2.0 KiB already"):
        _load(path, need - 1)


@pytest.fixture(scope="module")
def gzip_bomb(tmp_path_factory) -> Path:
    """20000 x 20000 float32 zeros in 400 gzip chunks: 1.6 GB declared in a file of a few MB. Every chunk is the
    same deflate stream, written as HDF5's gzip filter writes it (compressing it once keeps the test fast)."""
    path = tmp_path_factory.mktemp("bomb") / "bomb.h5"
    chunk = zlib.compress(bytes(1000 * 1000 * 4), 4)

    def make(f: h5py.File) -> None:
        ds = f.create_dataset("pe", shape=(20000, 20000), dtype="<f4", chunks=(1000, 1000), compression="gzip")
        for row in range(0, 20000, 1000):
            for column in range(0, 20000, 1000):
                ds.id.write_direct_chunk((row, column), chunk)

    _h5(path, make)
    assert path.stat().st_size < 8 << 20
    with h5py.File(path) as f:  # HDF5 itself reads it as zeros
        assert not f["pe"][19000:, 19000:].any()
    return path


def test_a_gzip_bomb_is_refused_by_a_small_budget(gzip_bomb):
    with pytest.raises(FormatError, match=r"dataset '/pe' \(20000 x 20000 float32\) needs 1.5 GiB of memory"):
        _load(gzip_bomb, 256 << 20)


def test_a_gzip_bomb_inflates_into_its_declared_size_only(gzip_bomb):
    """Under the default budget, in a process allowed 4.2 GB of address space (so the budget is about 1.9 GB): read
    with a peak of its declared size plus a few chunks (on a machine with less free memory, refused by the budget)."""
    declared = 20000 * 20000 * 4
    outcome, peak = _measure(gzip_bomb, 2 * declared + (1 << 30))
    if outcome.startswith("refused"):
        assert "needs 1.5 GiB of memory" in outcome
        return
    assert outcome == f"loaded {declared}"
    assert peak < declared + (320 << 20), peak


@pytest.fixture(scope="module")
def lying_chunk(tmp_path_factory) -> Path:
    """One 4 MiB chunk (1024 x 1024 float32) whose deflate stream inflates to 512 MiB: HDF5's own filter inflates it
    all, whatever the chunk's declared size."""
    path = tmp_path_factory.mktemp("lie") / "lie.h5"
    deflate = zlib.compressobj(1)
    zeros = bytes(1 << 24)
    stream = b"".join(deflate.compress(zeros) for _ in range(32)) + deflate.flush()
    assert len(stream) < 4 << 20

    def make(f: h5py.File) -> None:
        ds = f.create_dataset("pe", shape=(1024, 1024), dtype="<f4", chunks=(1024, 1024), compression="gzip")
        ds.id.write_direct_chunk((0, 0), stream)

    return _h5(path, make)


def test_a_chunk_that_inflates_past_its_declared_size_is_stopped(lying_chunk):
    outcome, peak = _measure(lying_chunk, 2 << 30)
    assert outcome.startswith("refused") and "chunk (0, 0) of dataset '/pe' inflates past its declared size" in outcome
    assert peak < 256 << 20, peak


# ------------------------------------------------------------------------------------------------- shapes and types


def _array_type(f: h5py.File) -> None:
    tid = h5py.h5t.array_create(h5py.h5t.IEEE_F32LE, (2,))
    h5py.h5d.create(f.id, b"pe", tid, h5py.h5s.create_simple((3,)))


def _custom_float(f: h5py.File) -> None:
    tid = h5py.h5t.IEEE_F32LE.copy()
    tid.set_fields(31, 23, 8, 0, 23)
    tid.set_ebias(100)  # not IEEE's 127: numpy's float32 would read other values
    h5py.h5d.create(f.id, b"pe", tid, h5py.h5s.create_simple((3,)))


UNREADABLE = {
    "null-dataspace": (lambda f: f.create_dataset("pe", data=h5py.Empty("<f4")), "null dataspace"),
    "compound": (lambda f: f.create_dataset("pe", data=np.zeros(3, [("a", "<f4"), ("b", "<i4")])), "compound"),
    "vlen": (lambda f: f.create_dataset("pe", shape=(3,), dtype=h5py.vlen_dtype("<f4")), "variable-length"),
    "enum": (lambda f: f.create_dataset("pe", data=np.zeros(3, "i1"), dtype=h5py.enum_dtype({"A": 0}, "i1")), "enum"),
    "bool": (lambda f: f.create_dataset("pe", data=np.zeros(3, bool)), "enum"),
    "reference": (lambda f: f.create_dataset("pe", shape=(3,), dtype=h5py.ref_dtype), "references"),
    "opaque": (lambda f: f.create_dataset("pe", data=np.void(b"abcd")), "opaque"),
    "strings": (lambda f: f.create_dataset("pe", data=np.array([b"abc", b"def"])), "strings"),
    "array-type": (_array_type, "arrays"),
    "long-double": (lambda f: f.create_dataset("pe", data=np.zeros(3, np.longdouble)), "floats"),
    "custom-float": (_custom_float, "bit layout"),
    "nine-dims": (lambda f: f.create_dataset("pe", data=np.zeros((1,) * 9, "<f4")), "9 dimensions"),
}


@pytest.mark.parametrize("name", list(UNREADABLE))
def test_datasets_posenc_does_not_read_are_refused(tmp_path, name):
    make, word = UNREADABLE[name]
    path = _h5(tmp_path / f"{name}.h5", make)
    _assert_refused(path, tmp_path / "out", "inspect", "dataset '/pe'", word)


def test_empty_scalar_and_big_endian_datasets_are_read(tmp_path):
    def make(f: h5py.File) -> None:
        f.create_dataset("empty", shape=(0, 4), dtype="<f4")
        f.create_dataset(
            "empty_chunked", shape=(0, 4), maxshape=(None, 4), dtype="<f4", chunks=(1, 4), compression="gzip"
        )
        f.create_dataset("scalar", data=np.float64(2.5))
        f.create_dataset("big", data=np.arange(6, dtype=">f4").reshape(2, 3))
        f.create_dataset("big_chunked", data=np.arange(6, dtype=">i8").reshape(3, 2), chunks=(2, 2), shuffle=True)

    arrays = _load(_h5(tmp_path / "edge.h5", make)).arrays
    assert arrays["empty"].shape == (0, 4) and arrays["empty_chunked"].shape == (0, 4)
    assert arrays["scalar"].shape == () and float(arrays["scalar"]) == 2.5
    assert arrays["big"].dtype == np.dtype("=f4") and arrays["big"].tolist() == [[0, 1, 2], [3, 4, 5]]
    assert arrays["big_chunked"].dtype == np.dtype("=i8") and arrays["big_chunked"].ravel().tolist() == list(range(6))


# ------------------------------------------------------------------------------------------------- metadata limits


def _many_datasets(f: h5py.File) -> None:
    for i in range(limits.MAX_ARRAYS + 1):
        f.create_dataset(f"d{i}", data=np.zeros(1, "<f4"))


def _many_attributes(f: h5py.File) -> None:
    ds = f.create_dataset("pe", data=np.zeros(4, "<f4"))
    for i in range(limits.MAX_ATTRIBUTES + 1):
        ds.attrs[f"a{i}"] = i


def _array_attribute(f: h5py.File) -> None:
    f.create_dataset("pe", data=np.zeros(4, "<f4")).attrs["big"] = np.zeros(
        8000
    )  # 64 KB: the most a compact attribute holds


def _long_fixed_string(f: h5py.File) -> None:
    f.create_dataset("pe", data=np.zeros(4, "<f4")).attrs["layout"] = np.bytes_(b"x" * (hdf5.MAX_TEXT + 1))


def _long_variable_string(f: h5py.File) -> None:
    f.create_dataset("pe", data=np.zeros(4, "<f4")).attrs["layout"] = "x" * (hdf5.MAX_TEXT + 1)


def _not_utf8_fixed(f: h5py.File) -> None:
    f.create_dataset("pe", data=np.zeros(4, "<f4")).attrs["kind"] = np.bytes_(b"\xff\xfe")


def _not_utf8_variable(f: h5py.File) -> None:
    f.create_dataset("pe", data=np.zeros(4, "<f4")).attrs["kind"] = b"\xff\xfe"  # h5py stores it variable-length


def _not_utf8_name(f: h5py.File) -> None:
    f.create_dataset(b"\xff\xfe", data=np.zeros(4, "<f4"))


def _compound_attribute(f: h5py.File) -> None:
    f.create_dataset("pe", data=np.zeros(4, "<f4")).attrs["c"] = np.zeros((), [("a", "<f4"), ("b", "<i4")])


def _kind_not_text(f: h5py.File) -> None:
    f.create_dataset("pe", data=np.zeros(4, "<f4")).attrs["kind"] = 3


def _deep_group(f: h5py.File) -> None:
    group = f.create_group("only")
    for i in range(limits.MAX_ARRAYS + 1):
        group.create_dataset(f"d{i}", data=np.zeros(1, "<f4"))


METADATA = {
    "too-many-datasets": (_many_datasets, f"more than the {limits.MAX_ARRAYS} posenc reads"),
    "too-many-in-the-only-group": (_deep_group, "group '/only/'"),
    "too-many-attributes": (_many_attributes, f"more than the {limits.MAX_ATTRIBUTES} posenc reads"),
    "array-attribute": (_array_attribute, "attribute 'big' of dataset '/pe' is not a single value"),
    "long-fixed-string": (
        _long_fixed_string,
        "attribute 'layout' of dataset '/pe'",
        "4097 bytes of text, more than the 4096",
    ),
    "long-variable-string": (
        _long_variable_string,
        "attribute 'layout' of dataset '/pe'",
        "4097 bytes of text, more than the 4096",
    ),
    "not-utf8-fixed": (_not_utf8_fixed, "attribute 'kind' of dataset '/pe' is not UTF-8 text"),
    "not-utf8-variable": (_not_utf8_variable, "attribute 'kind' of dataset '/pe' is not UTF-8 text"),
    "not-utf8-name": (_not_utf8_name, "is not UTF-8 text"),
    "compound-attribute": (_compound_attribute, "attribute 'c' of dataset '/pe' holds"),
    "kind-not-text": (_kind_not_text, "attribute 'kind' of dataset '/pe' is 3, not text"),
}


@pytest.mark.parametrize("command", ["inspect", "convert-npy"])
@pytest.mark.parametrize("name", list(METADATA))
def test_metadata_past_the_limits_is_refused(tmp_path, name, command):
    make, *words = METADATA[name]
    _assert_refused(_h5(tmp_path / f"{name}.h5", make), tmp_path / "out", command, *words)


def test_text_attributes_are_data_returned_as_they_are(tmp_path):
    """Escape sequences and markup are fine as values (the printers escape them); posenc only bounds them."""
    hostile = "\x1b]0;pwned\x07\x1b[2J[link=file:///etc/passwd]x[/link]"

    def make(f: h5py.File) -> None:
        ds = f.create_dataset("pe", data=np.zeros((2, 2), "<f4"))
        ds.attrs["kind"] = "array"
        ds.attrs["layout"] = hostile
        ds.attrs["fixed"] = np.bytes_("é".encode())
        ds.attrs["one"] = np.array([3.5])

    table = _load(_h5(tmp_path / "t.h5", make))
    assert table.kind == "array" and dict(table.params) == {"layout": hostile, "fixed": "é", "one": 3.5}


# ------------------------------------------------------------------------------------------------- writer


def test_array_names_from_a_hostile_file_never_become_hdf5_paths(tmp_path):
    """Keys read from a hostile file (``../x``, ``a/b``) name datasets only through ``member_names``: no groups,
    no path, the same bytes every time."""
    arrays = {key: np.full((2, 2), i, "<f4") for i, key in enumerate(["../x", "a/b", "/abs", "cos"])}
    table = Table("array", arrays)
    written = []
    for run in ("one", "two"):
        (tmp_path / run).mkdir()
        written.append(posenc_cli.save(table, tmp_path / run / "t.h5")[0])
    assert written[0].read_bytes() == written[1].read_bytes()
    with h5py.File(written[0]) as f:
        assert sorted(f) == ["a_b", "abs", "cos", "x"]
        assert all(isinstance(node, h5py.Dataset) for node in f.values())
    assert {k: float(v[0, 0]) for k, v in posenc_cli.load(written[0]).arrays.items()} == {
        "x": 0.0, "a_b": 1.0, "abs": 2.0, "cos": 3.0,
    }  # fmt: skip


@pytest.mark.parametrize(("key", "value"), [("", 1), ("a\0b", 1), ("note", "a\0b"), ("note", "\udcff")])
def test_parameters_hdf5_cannot_store_are_refused(tmp_path, key, value):
    table = Table("array", {"pe": np.zeros((2, 2), "<f4")}, {key: value})
    with pytest.raises(FormatError, match="cannot be an HDF5 attribute"):
        posenc_cli.save(table, tmp_path / "t.h5")
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------------------------------------- byte flips

#: Flips bytes of the template (argv[1]) in argv[3] seeded trials, each through ``posenc inspect --json``, and
#: prints one JSON line per trial: before running it (so a crash or hang names the trial) and with its result.
FUZZ = """
import json, random, resource, sys
from click.testing import CliRunner
from posenc_cli.cli import cli
template, work, trials, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
source = open(template, "rb").read()
rng = random.Random(seed)
runner = CliRunner()
for trial in range(trials):
    data = bytearray(source)
    changes = [(rng.randrange(len(data)), rng.randrange(256)) for _ in range(rng.choice((1, 1, 1, 2, 3)))]
    for at, value in changes:
        data[at] = value if rng.random() < 0.5 else data[at] ^ (1 << rng.randrange(8))
    with open(work, "wb") as out:
        out.write(data)
    print(json.dumps({"trial": trial, "changes": changes}), flush=True)
    result = runner.invoke(cli, ["inspect", "--json", work])
    print(json.dumps({"trial": trial, "code": result.exit_code, "stderr": result.stderr}), flush=True)
"""


def _templates(where: Path) -> dict[str, Path]:
    small = where / "small.h5"
    assert CliRunner().invoke(cli, ["generate", "-n", "8", "-d", "8", "-o", str(small)]).exit_code == 0
    rope = where / "rope.h5"
    posenc_cli.save(posenc_cli.rope(6, 4), rope)

    def chunked(f: h5py.File) -> None:  # the new file format: version 2 headers, chunk indexes, filters
        ds = f.create_dataset("pe", data=np.arange(64, dtype="<f4").reshape(8, 8), chunks=(4, 4), compression="gzip",
                              shuffle=True, fletcher32=True)  # fmt: skip
        for i in range(6):  # version 2 object header, attributes kept in it
            ds.attrs[f"p{i}"] = f"value {i}" if i % 2 else i

    return {"small": small, "rope": rope, "chunked": _h5(where / "chunked.h5", chunked, libver="latest")}


def _fuzz(template: Path, trials: int, seed: int) -> None:
    work = template.with_name("fuzzed.h5")
    result = _isolated(["-c", FUZZ, str(template), str(work), str(trials), str(seed)], 2 << 30, timeout=900)
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert result.returncode == 0, f"trial {records[-1] if records else '?'} crashed: {result.stderr[-2000:]}"
    outcomes = [r for r in records if "code" in r]
    assert len(outcomes) == trials
    for r in outcomes:
        lines = r["stderr"].strip().splitlines()
        ok = r["code"] == 0 or (r["code"] == 1 and len(lines) == 1 and lines[0].startswith("Error: "))
        assert ok and "internal error" not in r["stderr"] and "Traceback" not in r["stderr"], r
        assert r["code"] == 0 or "fuzzed.h5" in lines[0], r


@pytest.mark.parametrize(("template", "trials"), [("small", 500), ("rope", 200), ("chunked", 300)])
def test_byte_flipped_files_are_one_error_line_never_a_crash_or_hang(tmp_path, template, trials):
    _fuzz(_templates(tmp_path)[template], trials, seed=11)


@pytest.mark.slow
@pytest.mark.parametrize("template", ["small", "rope", "chunked"])
def test_byte_flipped_files_long_sweep(tmp_path, template):
    _fuzz(_templates(tmp_path)[template], 5000, seed=1)


def _posenc_file(path: Path) -> bytearray:
    assert CliRunner().invoke(cli, ["generate", "-n", "8", "-d", "8", "-o", str(path)]).exit_code == 0
    return bytearray(path.read_bytes())


def test_a_global_heap_object_of_size_zero_is_refused_not_looped_on(tmp_path):
    """libhdf5 walks a global heap collection (where the variable-length strings posenc writes live) by its objects'
    sizes: a free-space object of size 0 sends it into an endless loop (h5dump too)."""
    path = tmp_path / "small.h5"
    raw = _posenc_file(path)
    at = raw.index(b"GCOL\x01") + 16  # after the collection's signature, version, reserved bytes and size
    while int.from_bytes(raw[at : at + 2], "little") != 0:  # to the free-space object, the last one
        at += 16 + -(-int.from_bytes(raw[at + 8 : at + 16], "little") // 8) * 8
    raw[at + 8 : at + 16] = bytes(8)
    path.write_bytes(bytes(raw))
    result = _isolated(["-m", "posenc_cli", "inspect", str(path)], 1 << 30, timeout=60)
    assert result.returncode == 1, (result.returncode, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "small.h5" in lines[0] and "global heap collection" in lines[0], result.stderr


def test_a_string_claiming_gigabytes_costs_no_memory(tmp_path):
    """libhdf5 allocates and zeroes the length a variable-length string's reference claims before it finds the
    claim false: two flipped bytes in a posenc file made it take 4 GiB."""
    path = tmp_path / "small.h5"
    raw = _posenc_file(path)
    with h5py.File(path) as f:
        heap = raw.index(b"GCOL\x01")
        assert f["small"].attrs["dtype"] == "float32"
    # The reference of 'dtype' (length 7, the collection's address, object index) in the object header:
    reference = (7).to_bytes(4, "little") + heap.to_bytes(8, "little")
    at = raw.index(reference)
    raw[at + 2 : at + 4] = b"\xff\xff"
    path.write_bytes(bytes(raw))
    outcome, peak = _measure(path, 2 << 30)
    assert outcome.startswith("refused") and "claims 4294901767 bytes of text, more than the 4096" in outcome, outcome
    assert peak < 256 << 20, peak


def test_strings_in_dense_attribute_storage_are_refused(tmp_path):
    """More than 8 attributes in the new file format are kept in a fractal heap, where posenc cannot check a
    string's claimed length before libhdf5 reads it; numbers there are fine."""

    def make(text: bool) -> Callable[[h5py.File], None]:
        def build(f: h5py.File) -> None:
            ds = f.create_dataset("pe", data=np.zeros((2, 2), "<f4"))
            for i in range(12):
                ds.attrs[f"p{i}"] = "text" if text and i == 5 else i

        return build

    assert len(_load(_h5(tmp_path / "numbers.h5", make(False), libver="latest")).params) == 12
    path = _h5(tmp_path / "dense.h5", make(True), libver="latest")
    _assert_refused(path, tmp_path / "out", "inspect", "attribute 'p5' of dataset '/pe'", "dense or shared")


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"libver": "latest"}, {"userblock_size": 512}, {"libver": "latest", "track_order": True}],
    ids=["earliest", "latest", "userblock", "creation-order"],
)
def test_strings_posenc_can_check_are_read(tmp_path, kwargs):
    def make(f: h5py.File) -> None:
        ds = f.create_dataset("pe", data=np.ones((2, 2), "<f4"), track_times=True)
        ds.attrs["kind"] = "sinusoidal"
        ds.attrs["layout"] = "x" * hdf5.MAX_TEXT
        ds.attrs["seq_len"] = np.int64(2)

    table = _load(_h5(tmp_path / "ok.h5", make, **kwargs))
    assert table.kind == "sinusoidal" and dict(table.params) == {"layout": "x" * hdf5.MAX_TEXT, "seq_len": 2}


# ------------------------------------------------------------------------------------------------- groups: the walk
# Datasets in groups are read (issue #13): the walk that finds them follows hard links only, reaches each group once,
# and is bounded in depth, groups, datasets and links before it looks any further.


def _soft_link_in_a_group(f: h5py.File, secret: Path) -> None:
    f.create_dataset("pe", data=np.zeros((4, 4), "f4"))
    f.create_group("a/hidden").create_dataset("x", data=np.frombuffer(SECRET, "u1"))
    f["a/b/pe"] = h5py.SoftLink("/a/hidden/x")


def _external_link_in_a_group(f: h5py.File, secret: Path) -> None:
    other = secret.with_name("other.h5")
    _h5(other, lambda g: g.create_dataset("pe", data=np.frombuffer(SECRET, "u1")))
    f.create_dataset("pe", data=np.zeros((4, 4), "f4"))
    f.create_group("model_weights/pos")["embeddings"] = h5py.ExternalLink(str(other), "/pe")


def _external_storage_in_a_group(f: h5py.File, secret: Path) -> None:
    f.create_dataset("pe", data=np.zeros((4, 4), "f4"))
    f.create_group("grp").create_dataset(
        "emb", shape=(len(SECRET) // 4,), dtype="<f4", external=[(str(secret), 0, len(SECRET))]
    )


def _soft_link_to_the_root(f: h5py.File, secret: Path) -> None:
    f.create_dataset("grp/pe", data=np.zeros((4, 4), "f4"))
    f["grp/up"] = h5py.SoftLink("/")


GROUPS_OUTSIDE = {
    "soft-link-in-a-group": (_soft_link_in_a_group, ("'/a/b/pe'", "soft link", "/a/hidden/x")),
    "external-link-in-a-group": (_external_link_in_a_group, ("'/model_weights/pos/embeddings'", "external link")),
    "external-storage-in-a-group": (_external_storage_in_a_group, ("'/grp/emb'", "external file")),
    "soft-link-to-the-root": (_soft_link_to_the_root, ("'/grp/up'", "soft link to '/'")),
}


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("attack", list(GROUPS_OUTSIDE))
def test_links_and_storage_outside_the_file_are_refused_in_groups_too(tmp_path, secret, attack, command):
    make, words = GROUPS_OUTSIDE[attack]
    path = _h5(tmp_path / f"{attack}.h5", lambda f: make(f, secret))
    output = _assert_refused(path, tmp_path / "out", command, *words)
    for leak in (SECRET[:16].decode(), hashlib.sha256(SECRET).hexdigest(), hashlib.sha256(SECRET[:64]).hexdigest()):
        assert leak not in output


def _hard_link_loop(f: h5py.File) -> None:
    group = f.create_group("a")
    group.create_dataset("pe", data=np.zeros(4, "<f4"))
    group["loop"] = group


def _hard_link_to_the_root(f: h5py.File) -> None:
    f.create_dataset("a/pe", data=np.zeros(4, "<f4"))
    f["a"]["up"] = f


def _one_group_two_names(f: h5py.File) -> None:
    f.create_dataset("a/pe", data=np.zeros(4, "<f4"))
    f["b"] = f["a"]


def _too_deep(f: h5py.File) -> None:
    f.create_dataset("/".join(["g"] * (limits.MAX_NESTING + 1) + ["pe"]), data=np.zeros(4, "<f4"))


def _too_deep_under_one_group(f: h5py.File) -> None:  # the root's one group does not open a level for free
    f.create_dataset("/".join(["only"] + ["g"] * limits.MAX_NESTING + ["pe"]), data=np.zeros(4, "<f4"))


def _too_many_groups(f: h5py.File) -> None:
    f.create_dataset("pe", data=np.zeros(4, "<f4"))
    for i in range(limits.MAX_GROUPS + 1):
        f.create_group(f"g{i:03d}")


def _too_many_groups_nested(f: h5py.File) -> None:
    for i in range(limits.MAX_GROUPS // 4 + 1):
        f.create_group(f"layer{i:02d}/a/b/c")
    f.create_dataset("pe", data=np.zeros(4, "<f4"))


def _too_many_datasets_in_groups(f: h5py.File) -> None:
    for i in range(limits.MAX_ARRAYS // 2 + 1):
        f.create_dataset(f"a/d{i:02d}", data=np.zeros(1, "<f4"))
        f.create_dataset(f"b/d{i:02d}", data=np.zeros(1, "<f4"))


def _too_many_links(f: h5py.File) -> None:
    ds = f.create_dataset("a/pe", data=np.zeros(1, "<f4"))
    for i in range(20000):  # hard links to one dataset: cheap to make, each a look-up if the walk went on
        f[f"a/l{i}"] = ds


def _named_types_count_as_links(f: h5py.File) -> None:
    f.create_dataset("pe", data=np.zeros(1, "<f4"))
    for i in range(hdf5.MAX_LINKS):
        f[f"t{i}"] = np.dtype("<f4")  # a committed datatype: no data, but a link the walk looks at


def _strings_in_a_group(f: h5py.File) -> None:
    f.create_dataset("pe", data=np.zeros((2, 2), "<f4"))
    f.create_dataset("meta/names", data=np.array([b"abc", b"def"]))


def _filter_in_a_group(f: h5py.File) -> None:
    f.create_dataset("pe", data=np.zeros((2, 2), "<f4"))
    f.create_dataset("grp/lzf", data=np.zeros((64, 64), "<f4"), chunks=(8, 8), compression="lzf")


GROUPS = {
    "hard-link-loop": (_hard_link_loop, "'/a/loop' is a second hard link to the group '/a'"),
    "hard-link-to-the-root": (_hard_link_to_the_root, "'/a/up' is a second hard link to the group '/'"),
    "one-group-two-names": (_one_group_two_names, "'/b' is a second hard link to the group '/a'"),
    "too-deep": (_too_deep, f"33 groups below the root, deeper than the {limits.MAX_NESTING} levels"),
    "too-deep-under-one-group": (_too_deep_under_one_group, "33 groups below the root"),
    "too-many-groups": (
        _too_many_groups,
        f"{limits.MAX_GROUPS + 1} HDF5 groups (counted as far as '/g{limits.MAX_GROUPS:03d}'), more than the "
        f"{limits.MAX_GROUPS}",
    ),
    "too-many-groups-nested": (_too_many_groups_nested, f"more than the {limits.MAX_GROUPS} posenc reads"),
    "too-many-datasets-in-groups": (
        _too_many_datasets_in_groups,
        f"{limits.MAX_ARRAYS + 2} datasets (counted as far as the HDF5 group '/b/'), more than the {limits.MAX_ARRAYS}",
    ),
    "too-many-links": (
        _too_many_links,
        f"20002 links (counted as far as the HDF5 group '/a/'), more than the {hdf5.MAX_LINKS}",
    ),
    "named-types-count": (_named_types_count_as_links, f"{hdf5.MAX_LINKS + 1} links"),
    "strings-in-a-group": (_strings_in_a_group, "dataset '/meta/names' holds"),
    "filter-in-a-group": (_filter_in_a_group, "dataset '/grp/lzf' is stored through HDF5 filter 32000"),
}


@pytest.mark.parametrize("command", ["inspect", "convert-npy", "verify"])
@pytest.mark.parametrize("name", list(GROUPS))
def test_the_group_walk_is_bounded_and_refuses_what_it_does_not_read(tmp_path, name, command):
    make, *words = GROUPS[name]
    _assert_refused(_h5(tmp_path / f"{name}.h5", make), tmp_path / "out", command, *words)


def test_a_wide_group_is_refused_from_its_link_count(tmp_path):
    """A group's link count is read before any of its links is looked at (each would cost a look-up)."""
    path = _h5(tmp_path / "wide.h5", _too_many_links)
    result = _isolated(["-m", "posenc_cli", "inspect", str(path)], 1 << 30, timeout=20)
    assert result.returncode == 1 and "20002 links" in result.stderr, result.stderr


def test_the_budget_counts_datasets_in_groups(tmp_path):
    def make(f: h5py.File) -> None:
        f.create_dataset("a/x/pe", data=np.ones((16, 16), "<f8"))
        f.create_dataset("b/pe", data=np.ones((16, 16), "<f8"))

    path = _h5(tmp_path / "nested.h5", make)
    need = 2 * 16 * 16 * 8
    assert sorted(_load(path, need).arrays) == ["a/x/pe", "b/pe"]
    with pytest.raises(FormatError, match=r"dataset '/b/pe' \(16 x 16 float64\) needs 2.0 KiB.*2.0 KiB already"):
        _load(path, need - 1)


def test_named_datatypes_are_skipped(tmp_path):
    def make(f: h5py.File) -> None:
        f.create_dataset("grp/emb", data=np.ones((2, 2), "<f4"))
        f["grp/t"] = np.dtype("<i2")
        f["t"] = np.dtype("<f8")

    assert list(_load(_h5(tmp_path / "types.h5", make)).arrays) == ["emb"]  # the root's one group: its names
    with h5py.File(tmp_path / "types.h5", "a") as f:
        f.create_dataset("pe", data=np.ones((2, 2), "<f4"))
    assert list(_load(tmp_path / "types.h5").arrays) == ["grp/emb", "pe"]


def test_byte_flipped_nested_files_are_one_error_line_never_a_crash_or_hang(tmp_path):
    def nested(f: h5py.File) -> None:  # Keras' layout, in the new file format
        weights = f.create_group("model_weights")
        weights.attrs["layer_names"] = [b"pos", b"dense"]
        weights.create_dataset("pos/embeddings", data=np.arange(32, dtype="<f4").reshape(8, 4))
        weights.create_dataset("dense/dense/kernel:0", data=np.ones((4, 4), "<f8"))
        f.create_group("optimizer_weights")

    _fuzz(_h5(tmp_path / "nested.h5", nested, libver="latest"), 300, seed=13)
