"""safetensors: posenc's writer against the real ``safetensors`` library, its reader against files the library wrote.

The ``safetensors`` package (Hugging Face's Rust reader and writer) is the independent client here; posenc itself
never imports it. Its numpy binding cannot load ``BF16`` (numpy has no bfloat16), so bfloat16 files are checked
with ``safetensors.deserialize``, the same Rust parser handing back the raw bytes of each tensor.
"""

from __future__ import annotations

import io
import json
import struct

import ml_dtypes
import numpy as np
import pytest
import safetensors
import safetensors.numpy
from click.testing import CliRunner

import posenc_cli
from posenc_cli.cli import cli
from posenc_cli.errors import FormatError
from posenc_cli.formats import WriteOptions
from posenc_cli.formats import safetensors as st
from posenc_cli.table import RowSource, Table

from .test_formats import random_floats

ELEMENT_TYPES = [
    ("float32", {}),
    ("float64", {}),
    ("float16", {}),
    ("bfloat16", {}),
    ("q15", {}),
    ("q7", {}),
    ("int8", {"scale": 0.015625, "zero_point": -3}),
]
#: What each posenc element type is called in the file.
SAFETENSORS_DTYPE = {
    "float32": "F32",
    "float64": "F64",
    "float16": "F16",
    "bfloat16": "BF16",
    "q15": "I16",
    "q7": "I8",
    "int8": "I8",
}


def dumps(table: Table) -> bytes:
    buffer = io.BytesIO()
    st.dump(table, buffer, WriteOptions())
    return buffer.getvalue()


def loads(data: bytes) -> Table:
    return st.load(io.BytesIO(data))


def build(header: object, data: bytes = b"", *, raw: bytes | None = None) -> bytes:
    """A file from a header (JSON-encoded unless ``raw`` bytes are given) and a data buffer, as the spec lays it out."""
    text = raw if raw is not None else json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + data


def posenc_meta(path) -> dict:
    with safetensors.safe_open(str(path), framework="np") as f:
        metadata = f.metadata()
    assert set(metadata) == {"posenc"}
    return json.loads(metadata["posenc"])


# ----------------------------------------------------------------------------------------------- round trips
@pytest.mark.parametrize(("dtype", "kwargs"), ELEMENT_TYPES)
def test_element_types_round_trip(tmp_path, dtype, kwargs):
    table = posenc_cli.generate(40, 19, dtype=dtype, **kwargs)
    path = tmp_path / "pe.safetensors"
    assert posenc_cli.save(table, path) == [path]
    back = posenc_cli.load(path)
    assert back.kind == "sinusoidal" and dict(back.params) == dict(table.params)
    assert list(back.arrays) == ["pe"]
    assert back.array.dtype == table.array.dtype and back.array.shape == (40, 19)
    assert back.array.tobytes() == table.array.tobytes()


def test_multi_array_table_round_trips_in_order(tmp_path):
    table = posenc_cli.alibi(6, 16)
    path = tmp_path / "alibi.safetensors"
    posenc_cli.save(table, path)
    back = posenc_cli.load(path)
    assert back.kind == "alibi" and dict(back.params) == {"heads": 6, "seq_len": 16, "dtype": "float32"}
    assert list(back.arrays) == ["slopes", "bias"]
    for key in ("slopes", "bias"):
        assert back.arrays[key].dtype == table.arrays[key].dtype
        assert back.arrays[key].tobytes() == table.arrays[key].tobytes()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_arbitrary_bit_patterns_round_trip(dtype):
    array = random_floats(dtype, (64, 33))
    back = loads(dumps(Table.from_array(array))).array
    assert back.dtype == array.dtype and back.tobytes() == array.tobytes()


def test_scalars_empty_and_mixed_arrays_round_trip():
    arrays = {
        "scalar": np.array(2.5, np.float64),
        "empty": np.zeros((0, 4), np.float32),
        "flags": np.array([True, False, True]),
        "counts": np.arange(-3, 4, dtype=np.int64),
        "cube": np.arange(24, dtype=np.uint16).reshape(2, 3, 4),
    }
    back = loads(dumps(Table("array", arrays)))
    assert back.kind == "array" and dict(back.params) == {}
    assert set(back.arrays) == set(arrays)
    for key, array in arrays.items():
        assert back.arrays[key].dtype == array.dtype and back.arrays[key].shape == array.shape, key
        assert back.arrays[key].tobytes() == array.tobytes(), key


def test_lazy_table_streams_in_row_blocks():
    """A table larger than a block is written block by block and gives the bytes of the same table in memory."""
    spans: list[tuple[int, int]] = []

    def rows(lo: int, hi: int) -> np.ndarray:
        spans.append((lo, hi))
        return np.arange(lo * 8, hi * 8, dtype=np.float32).reshape(-1, 8)

    lazy = RowSource((1_500_000, 8), "float32", rows)  # 48 MB: three 16 MiB blocks
    data = dumps(Table("array", {"pe": lazy}))
    assert len(spans) > 2 and max(hi - lo for lo, hi in spans) < 1_500_000
    eager = np.arange(1_500_000 * 8, dtype=np.float32).reshape(-1, 8)
    assert data == dumps(Table("array", {"pe": eager}))
    assert safetensors.numpy.load(data)["pe"].tobytes() == eager.tobytes()


# --------------------------------------------------------------------------------------- the real library reads
@pytest.mark.parametrize(("dtype", "kwargs"), ELEMENT_TYPES)
def test_safetensors_library_reads_posenc_files(tmp_path, dtype, kwargs):
    table = posenc_cli.generate(12, 10, dtype=dtype, **kwargs)
    path = tmp_path / "pe.safetensors"
    posenc_cli.save(table, path)
    [(key, tensor)] = safetensors.deserialize(path.read_bytes())
    assert key == "pe" and tensor["dtype"] == SAFETENSORS_DTYPE[dtype] and tensor["shape"] == [12, 10]
    assert bytes(tensor["data"]) == table.array.astype(table.array.dtype.newbyteorder("<")).tobytes()
    if dtype == "bfloat16":
        values = np.frombuffer(bytes(tensor["data"]), ml_dtypes.bfloat16).reshape(12, 10)
        expected = (table.array.astype(np.uint32) << 16).view(np.float32)
        assert values.astype(np.float32).tobytes() == expected.tobytes()
    else:
        loaded = safetensors.numpy.load_file(str(path))["pe"]
        assert loaded.dtype == table.array.dtype and loaded.tobytes() == table.array.tobytes()
    meta = posenc_meta(path)
    assert meta == {"generator": f"posenc {posenc_cli.__version__}", "kind": "sinusoidal", "params": dict(table.params)}


def test_safetensors_library_reads_every_array_and_the_metadata(tmp_path):
    table = posenc_cli.alibi(12, 7, dtype="float16")
    path = tmp_path / "alibi.safetensors"
    posenc_cli.save(table, path)
    loaded = safetensors.numpy.load_file(str(path))
    assert set(loaded) == {"slopes", "bias"}
    for key in loaded:
        assert loaded[key].dtype == np.float16 and loaded[key].tobytes() == table.arrays[key].tobytes()
    assert posenc_meta(path)["params"] == {"heads": 12, "seq_len": 7, "dtype": "float16"}


def test_header_is_canonical_padded_json(tmp_path):
    data = dumps(posenc_cli.generate(2, 2))
    (length,) = struct.unpack("<Q", data[:8])
    text = data[8 : 8 + length]
    assert length % 8 == 0 and len(data) == 8 + length + 2 * 2 * 4
    expected = (
        r'{"__metadata__":{"posenc":"{\"generator\":\"posenc ' + posenc_cli.__version__ + r"\",\"kind\":\"sinusoidal\","
        r"\"params\":{\"base\":10000.0,\"d_model\":2,\"dtype\":\"float32\",\"layout\":\"interleaved\","
        r'\"seq_len\":2}}"},"pe":{"data_offsets":[0,16],"dtype":"F32","shape":[2,2]}}'
    )
    assert text.rstrip(b" ").decode("ascii") == expected


def test_two_writes_give_identical_bytes(tmp_path):
    for table in (posenc_cli.generate(33, 17, dtype="bfloat16"), posenc_cli.alibi(8, 9)):
        first, second = tmp_path / "a.safetensors", tmp_path / "b.safetensors"
        posenc_cli.save(table, first)
        posenc_cli.save(table, second)
        assert first.read_bytes() == second.read_bytes()


def test_parameter_order_does_not_change_the_bytes():
    array = np.ones((2, 2), np.float32)
    assert dumps(Table("t", {"pe": array}, {"a": 1, "b": 2.0})) == dumps(Table("t", {"pe": array}, {"b": 2.0, "a": 1}))


def test_wider_arrays_come_first_so_every_array_is_aligned():
    arrays = {"small": np.ones(3, np.int8), "wide": np.ones(3, np.float64), "mid": np.ones(3, np.float32)}
    data = dumps(Table("array", arrays))
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + length])
    offsets = {key: tensor["data_offsets"] for key, tensor in header.items() if key != "__metadata__"}
    assert offsets == {"wide": [0, 24], "mid": [24, 36], "small": [36, 39]}
    assert list(loads(data).arrays) == ["wide", "mid", "small"]


# ----------------------------------------------------------------------------------- files other tools wrote
FOREIGN = {
    "wpe": np.linspace(-1, 1, 24, dtype=np.float32).reshape(6, 4),
    "half": np.arange(6, dtype=np.float16).reshape(3, 2),
    "double": np.array([[np.pi, -0.0]], np.float64),
    "bytes": np.arange(-4, 4, dtype=np.int8),
    "shorts": np.arange(5, dtype=np.int16) * -300,
    "ints": np.arange(5, dtype=np.int32) << 20,
    "longs": np.array([-(2**62), 2**62], np.int64),
    "ubytes": np.arange(250, 256, dtype=np.uint8),
    "ushorts": np.array([0, 65535], np.uint16),
    "uints": np.array([2**32 - 1], np.uint32),
    "ulongs": np.array([2**64 - 1], np.uint64),
    "mask": np.array([[True, False], [False, True]]),
    "scalar": np.array(7, np.int32),
    "empty": np.zeros((0, 3), np.float32),
}


@pytest.mark.parametrize("metadata", [None, {"format": "np"}, {"format": "pt", "note": "learned wpe"}])
def test_reads_files_the_safetensors_library_wrote(tmp_path, metadata):
    path = tmp_path / "model.safetensors"
    safetensors.numpy.save_file(FOREIGN, str(path), metadata=metadata)
    table = posenc_cli.load(path)
    assert table.kind == "array" and dict(table.params) == {}
    assert set(table.arrays) == set(FOREIGN)
    for key, array in FOREIGN.items():
        assert table.arrays[key].dtype == array.dtype and table.arrays[key].shape == array.shape, key
        assert table.arrays[key].tobytes() == array.tobytes(), key


def test_reads_a_single_learned_position_table_and_writes_it_elsewhere(tmp_path):
    learned = random_floats("float32", (16, 8), seed=3)
    safetensors.numpy.save_file({"wpe": learned}, str(tmp_path / "wpe.safetensors"))
    table = posenc_cli.load(tmp_path / "wpe.safetensors")
    assert table.array.tobytes() == learned.tobytes()
    posenc_cli.save(table, tmp_path / "wpe.npy")
    assert np.load(tmp_path / "wpe.npy").tobytes() == learned.tobytes()


def test_foreign_bfloat16_file_reads_as_a_bfloat16_table(tmp_path):
    values = np.array([[1.0, -2.5, 3.140625], [0.0, -0.0, 1e-30]], np.float32).astype(ml_dtypes.bfloat16)
    path = tmp_path / "bf16.safetensors"
    safetensors.numpy.save_file({"a": values, "b": values[:1]}, str(path))
    table = posenc_cli.load(path)
    assert table.kind == "array" and dict(table.params) == {"dtype": "bfloat16"}
    assert table.arrays["a"].dtype == np.uint16 and table.arrays["a"].tobytes() == values.tobytes()
    # Written again, it is BF16 again, byte for byte the same tensor data.
    again = dict(safetensors.deserialize(dumps(table)))
    assert again["a"]["dtype"] == "BF16" and bytes(again["a"]["data"]) == values.tobytes()


def test_bfloat16_among_other_types_is_widened_exactly(tmp_path):
    values = np.array([1.0, -2.5, 3.140625, 1e-30, 3e38], np.float32).astype(ml_dtypes.bfloat16)
    path = tmp_path / "mixed.safetensors"
    safetensors.numpy.save_file({"bf": values, "f": np.ones(2, np.float32)}, str(path))
    table = posenc_cli.load(path)
    assert dict(table.params) == {}
    assert table.arrays["bf"].dtype == np.float32
    assert table.arrays["bf"].tobytes() == values.astype(np.float32).tobytes()


# ----------------------------------------------------------------------------------------- refusing to write
def test_refuses_to_write_what_it_cannot_name(tmp_path):
    with pytest.raises(FormatError, match="complex128"):
        posenc_cli.save(Table("array", {"z": np.ones(2, complex)}), tmp_path / "z.safetensors")
    assert not (tmp_path / "z.safetensors").exists()
    with pytest.raises(FormatError, match="reserves"):
        dumps(Table("array", {"__metadata__": np.ones(2)}))


# --------------------------------------------------------------------------------------------- hostile input
F32 = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
EIGHT = b"\0" * 8


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "too short"),
        (b"\x10\x00\x00", "too short"),
        (b"\xff" * 8 + b"{}", "more than the format's 100000000"),
        (struct.pack("<Q", 100_000_001) + b"{", "more than the format's"),
        (struct.pack("<Q", 4096) + b'{"a":1}', "truncated .safetensors file: the header length is 4096"),
        (build(None, raw=b'  {"x": 1}'), "does not start with '{'"),
        (build(None, raw=b'{"x": '), "not valid UTF-8 JSON"),
        (build(None, raw=b'{"x": "\xff"}'), "not valid UTF-8 JSON"),
        (build(None, raw=b'{"a": ' + b"[" * 100_000), "nests deeper than the 32 levels"),
        (build(None, raw=b'{"x": {}, "x": {}}'), "appears twice"),
        (build({}), "holds no tensor"),
        (build({"__metadata__": {"posenc": "{}"}}), "not posenc's"),
        (build({"__metadata__": {"k": 1}, "x": F32}, EIGHT), "must map names to strings"),
        (build({"__metadata__": ["k"], "x": F32}, EIGHT), "must map names to strings"),
        (build({"__metadata__": {"posenc": "{not json"}, "x": F32}, EIGHT), "not posenc's"),
        (build({"__metadata__": {"posenc": '{"kind": "a", "params": {"p": [1]}}'}, "x": F32}, EIGHT), "not posenc's"),
        (build({"x": [1, 2]}), "expected an object"),
        (build({"x": {**F32, "dtype": "F8_E4M3"}}, EIGHT), "dtype 'F8_E4M3'; posenc reads F64"),
        (build({"x": {**F32, "dtype": None}}, EIGHT), "has dtype None"),
        (build({"x": {"shape": [2], "data_offsets": [0, 8]}}, EIGHT), "has dtype None"),
        (build({"x": {**F32, "shape": [-2]}}, EIGHT), "shape must be"),
        (build({"x": {**F32, "shape": [True, 2]}}, EIGHT), "shape must be"),
        (build({"x": {**F32, "shape": 2}}, EIGHT), "shape must be"),
        (build({"x": {**F32, "data_offsets": [0]}}, EIGHT), "data_offsets must be"),
        (build({"x": {**F32, "data_offsets": [0, 8.0]}}, EIGHT), "data_offsets must be"),
        (build({"x": {**F32, "data_offsets": [8, 0]}}, EIGHT), "needs 8 bytes"),
        (build({"x": {**F32, "data_offsets": [0, 12]}}, EIGHT + b"\0" * 4), "needs 8 bytes, its data_offsets"),
        (build({"x": {**F32, "shape": [2**40, 2**40]}}, EIGHT), "needs"),
        (build({"x": F32, "y": F32}, EIGHT), "overlaps"),
        (build({"x": {**F32, "data_offsets": [4, 12]}}, b"\0" * 12), "leaves 4 bytes unused"),
        (build({"x": {**F32, "shape": [2**40], "data_offsets": [0, 2**42]}}, EIGHT), "promises 4398046511104 bytes"),
        (build({"x": F32}, b"\0" * 4), "truncated .safetensors file: the header promises 8 bytes of data, found 4"),
        (build({"x": F32}, EIGHT + b"\0"), "1 bytes after its last tensor"),
    ],
)
def test_broken_input_is_a_clear_format_error(data, message):
    with pytest.raises(FormatError, match=message.replace("(", r"\(").replace("[", r"\[")) as err:
        loads(data)
    assert "\n" not in str(err.value)


def test_every_truncation_of_a_real_file_is_refused():
    data = dumps(posenc_cli.alibi(4, 5))
    for cut in range(len(data)):
        with pytest.raises(FormatError):
            loads(data[:cut])


def test_damaged_files_load_or_fail_with_format_error_only():
    """Random byte damage, header and data alike: a FormatError or a table, never another exception."""
    data = dumps(posenc_cli.alibi(4, 5, dtype="bfloat16"))
    rng = np.random.default_rng(7)
    for _ in range(2000):
        damaged = bytearray(data)
        for at in rng.integers(0, len(data), size=int(rng.integers(1, 4))):
            damaged[at] = int(rng.integers(0, 256))
        try:
            loads(bytes(damaged))
        except FormatError:
            pass


def test_api_load_names_the_file(tmp_path):
    path = tmp_path / "broken.safetensors"
    path.write_bytes(build({"x": F32}, b"\0" * 4))
    with pytest.raises(FormatError, match=r"broken\.safetensors.*truncated"):
        posenc_cli.load(path)


# ------------------------------------------------------------------------------------------------------- CLI
def test_cli_writes_a_file_the_library_reads(tmp_path):
    out = tmp_path / "x.safetensors"
    result = CliRunner().invoke(cli, ["generate", "-n", "8", "-d", "6", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    loaded = safetensors.numpy.load_file(str(out))
    assert list(loaded) == ["pe"]
    assert loaded["pe"].tobytes() == posenc_cli.generate(8, 6).array.tobytes()
    assert posenc_meta(out)["params"]["seq_len"] == 8


def _file(header: dict, data: bytes) -> io.BytesIO:
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    return io.BytesIO(struct.pack("<Q", len(text)) + text + data)


@pytest.mark.parametrize(
    ("header", "data", "fragment"),
    [
        ({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, b"\0" * 4, "truncated"),
        ({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
          "b": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}, b"\0" * 4, "overlaps"),
        ({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
          "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}, b"\0" * 4, "truncated"),
        ({"a": {"dtype": "F8_E4M3", "shape": [1], "data_offsets": [0, 1]}}, b"\0", "dtype"),
    ],
)  # fmt: skip
def test_reading_one_tensor_checks_the_whole_header_first(header, data, fragment):
    """load_part reads one tensor, but a file that is not valid as a whole is refused as load refuses it."""
    with pytest.raises(FormatError, match=fragment):
        st.load_part(_file(header, data), None, "a")
    with pytest.raises(FormatError, match=fragment):
        st.names(_file(header, data))


def test_reading_one_tensor_claims_only_its_bytes():
    from posenc_cli.formats.limits import Budget

    buffer = io.BytesIO(safetensors.numpy.save({"big": np.zeros(1 << 18, np.float32), "w": np.ones(3, np.float32)}))
    assert st.load_part(buffer, Budget(64), "w").arrays["w"].tolist() == [1.0, 1.0, 1.0]
    with pytest.raises(st.MissingTensor) as info:
        st.load_part(io.BytesIO(buffer.getvalue()), Budget(64), "x")
    assert info.value.keys == ["big", "w"]
    with pytest.raises(FormatError, match="memory|bytes"):
        st.load_part(io.BytesIO(buffer.getvalue()), Budget(64), "big")
