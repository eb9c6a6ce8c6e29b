"""GGUF: posenc's own writer against the ``gguf`` package's ``GGUFReader`` (llama.cpp's gguf-py).

Every file is read back by ``GGUFReader``; its tensors are compared bit for bit with what numpy reads from the
``.npz`` of the same table (the independent copy), respecting ggml's reversed dimension order, and its metadata with
the ``.npz``'s parameters. The layout rules llama.cpp's C reader (``gguf.cpp``) adds on top of what ``GGUFReader``
checks (tensor offsets packed in order, every tensor padded, the file ending at the last padding) are checked from
the spec's arithmetic.
"""

from __future__ import annotations

import io
import json
import zipfile

import numpy as np
import pytest
from click.testing import CliRunner
from gguf import GGMLQuantizationType, GGUFReader, GGUFValueType

import posenc_cli
from posenc_cli import api
from posenc_cli.cli import cli
from posenc_cli.dtypes import INDEX_DTYPES
from posenc_cli.errors import FormatError
from posenc_cli.formats import WriteOptions
from posenc_cli.formats import gguf as gguf_format
from posenc_cli.kinds import KINDS
from posenc_cli.table import Table

from .test_kinds import SAMPLES

CASES = [(command, number) for command, samples in SAMPLES.items() for number in range(len(samples))]
ELEMENT_TYPES = [
    ("float32", {}, "F32"),
    ("float64", {}, "F64"),
    ("float16", {}, "F16"),
    ("bfloat16", {}, "BF16"),
    ("q15", {}, "I16"),
    ("q7", {}, "I8"),
    ("int8", {"scale": 0.015625, "zero_point": -3}, "I8"),
]
#: What each Python parameter type is in the file.
VALUE_TYPES = {bool: GGUFValueType.BOOL, int: GGUFValueType.INT64, float: GGUFValueType.FLOAT64,
               str: GGUFValueType.STRING}  # fmt: skip


def value(field):
    """A field's value from its raw parts (the reader's oldest interface)."""
    kind = field.types[0]
    if kind == GGUFValueType.ARRAY:
        assert field.types[1] == GGUFValueType.STRING
        return [bytes(field.parts[i]).decode("utf-8") for i in field.data]
    part = field.parts[field.data[0]]
    if kind == GGUFValueType.STRING:
        return bytes(part).decode("utf-8")
    if kind == GGUFValueType.BOOL:
        return bool(part[0])
    return part[0].item()


def write_both(table: Table, tmp_path, stem: str = "t"):
    """The table written as .gguf and .npz through the public API: the reader, numpy's arrays and metadata."""
    path, npz_path = tmp_path / f"{stem}.gguf", tmp_path / f"{stem}.npz"
    assert api.save(table, path) == [path]
    api.save(table, npz_path)
    with np.load(npz_path) as npz:
        arrays = {key: npz[key] for key in npz.files}
    with zipfile.ZipFile(npz_path) as archive:
        meta = json.loads(archive.comment)
    return GGUFReader(path), arrays, meta


def tensor_bytes(tensor) -> bytes:
    return np.ascontiguousarray(tensor.data).tobytes()


def le_bytes(array: np.ndarray) -> bytes:
    return np.ascontiguousarray(array, array.dtype.newbyteorder("<")).tobytes()


def check_llama_layout(reader: GGUFReader, path) -> None:
    """What llama.cpp's reader demands beyond GGUFReader: the data starts aligned, each tensor's offset is the sum
    of the padded sizes before it, and the file ends exactly after the last tensor's padding."""
    assert reader.data_offset % gguf_format.ALIGN == 0
    position = reader.data_offset
    for tensor in reader.tensors:
        assert tensor.data_offset == position, tensor.name
        position += -(-tensor.n_bytes // gguf_format.ALIGN) * gguf_format.ALIGN
    assert position == path.stat().st_size


# ----------------------------------------------------------------------------------------------- round trips
@pytest.mark.parametrize(("command", "number"), CASES)
def test_every_table_kind_reads_back_as_its_npz(tmp_path, command, number):
    table = KINDS[command].build(SAMPLES[command][number])
    reader, arrays, meta = write_both(table, tmp_path)
    check_llama_layout(reader, tmp_path / "t.gguf")
    fields = {key: value(field) for key, field in reader.fields.items() if not key.startswith("GGUF.")}
    assert fields.pop("posenc.arrays") == list(arrays) == list(table.arrays)
    expected_names = ["position_embd.weight" if meta["kind"] == "sinusoidal" else key for key in arrays]
    assert [t.name for t in reader.tensors] == expected_names
    for tensor, (key, want) in zip(reader.tensors, arrays.items(), strict=True):
        assert tensor.shape.tolist() == list(want.shape)[::-1], key  # ggml's ne: fastest-varying first
        assert tensor.n_elements == want.size
        if tensor.tensor_type == GGMLQuantizationType.BF16:  # GGUFReader hands BF16 over as raw bytes
            assert want.dtype == np.uint16 and meta["params"]["dtype"] == "bfloat16"
        else:
            assert tensor.data.shape == want.shape and tensor.data.dtype == want.dtype, key
        assert tensor_bytes(tensor) == le_bytes(want), key
    assert fields == {
        "general.architecture": "posenc",
        "general.name": "t",
        "general.alignment": 32,
        "posenc.generator": f"posenc {posenc_cli.__version__}",
        "posenc.kind": meta["kind"],
        **{f"posenc.params.{name}": v for name, v in meta["params"].items()},
    }
    for name, v in meta["params"].items():
        assert reader.fields[f"posenc.params.{name}"].types == [VALUE_TYPES[type(v)]], name
    assert reader.fields["general.alignment"].types == [GGUFValueType.UINT32]


@pytest.mark.parametrize(("dtype", "kwargs", "ggml_type"), ELEMENT_TYPES)
def test_element_types(tmp_path, dtype, kwargs, ggml_type):
    table = posenc_cli.generate(40, 19, dtype=dtype, **kwargs)
    reader, arrays, _ = write_both(table, tmp_path)
    (tensor,) = reader.tensors
    assert tensor.tensor_type == GGMLQuantizationType[ggml_type]
    assert tensor.shape.tolist() == [19, 40]
    assert tensor_bytes(tensor) == le_bytes(arrays["pe"])
    if ggml_type == "BF16":  # the bit patterns are bfloat16's: widened to float32 they are the values
        widened = (np.frombuffer(tensor_bytes(tensor), "<u2").astype(np.uint32) << 16).view(np.float32)
        exact = posenc_cli.generate(40, 19, dtype="float64").array
        assert np.all(np.abs(widened.reshape(40, 19) - np.asarray(exact)) <= np.abs(np.asarray(exact)) * 2.0**-8)
    assert value(reader.fields["posenc.params.dtype"]) == dtype
    for name, v in kwargs.items():
        assert value(reader.fields[f"posenc.params.{name}"]) == v


@pytest.mark.parametrize("dtype", INDEX_DTYPES)
def test_index_types(tmp_path, dtype):
    reader, arrays, _ = write_both(posenc_cli.relative("t5", 6, key_length=9, dtype=dtype), tmp_path)
    (tensor,) = reader.tensors
    assert tensor.tensor_type == GGMLQuantizationType[f"I{np.dtype(dtype).itemsize * 8}"]
    assert tensor.name == "index" and tensor.shape.tolist() == [9, 6]
    assert np.array_equal(tensor.data, arrays["index"]) and tensor.data.dtype == np.dtype(dtype)


def test_a_fixed_point_table_is_its_storage_integer_with_the_type_in_the_metadata(tmp_path):
    codes = np.array([[-(1 << 17), (1 << 17) - 1, 5], [0, 1 << 16, -1]], np.int32)  # fixed18.16 codes in int32
    path = tmp_path / "fixed.gguf"
    api.save(Table("sinusoidal", {"pe": codes}, {"dtype": "fixed18.16"}), path)
    reader = GGUFReader(path)
    (tensor,) = reader.tensors
    assert tensor.tensor_type == GGMLQuantizationType.I32 and np.array_equal(tensor.data, codes)
    assert value(reader.fields["posenc.params.dtype"]) == "fixed18.16"


def test_rope_keeps_its_keys_and_a_3d_array_reverses_every_axis(tmp_path):
    """inv_freq is not llama.cpp's rope_freqs (those are factors dividing the frequencies), so it keeps its key."""
    reader, arrays, _ = write_both(posenc_cli.window("swinv2", (3, 2), pretrained_window=(4, 4)), tmp_path)
    assert [t.name for t in reader.tensors] == ["index", "coords"]
    coords = reader.tensors[1]
    assert arrays["coords"].shape == (5, 3, 2) and coords.shape.tolist() == [2, 3, 5]
    assert np.array_equal(coords.data, arrays["coords"])
    assert coords.data[4, 1, 0] == arrays["coords"][4, 1, 0]  # numpy index (i, j, k) is ggml's ne index (k, j, i)
    rope, _, _ = write_both(posenc_cli.rope(6, 8, scaling="llama3", factor=8.0, original_max_positions=4), tmp_path)
    assert [t.name for t in rope.tensors] == ["cos", "sin", "inv_freq"]


def test_a_scalar_is_a_tensor_of_no_dimensions(tmp_path):
    reader = GGUFReader(dump_to(Table("array", {"s": np.array(7, np.int32)}), tmp_path))
    (tensor,) = reader.tensors
    assert tensor.shape.tolist() == [] and tensor.data.reshape(()) == 7


def test_two_writes_give_the_same_bytes(tmp_path):
    first, second = tmp_path / "a.gguf", tmp_path / "b.gguf"
    api.save(posenc_cli.rope(64, 16, scaling="yarn", factor=4.0, original_max_positions=16), first, name="r")
    api.save(posenc_cli.rope(64, 16, scaling="yarn", factor=4.0, original_max_positions=16), second, name="r")
    assert first.read_bytes() == second.read_bytes()


def test_a_table_larger_than_a_block_streams_into_the_file(tmp_path):
    table = posenc_cli.generate(3000, 512)  # 6 MiB, computed in row blocks of 4 MiB
    reader, arrays, _ = write_both(table, tmp_path)
    check_llama_layout(reader, tmp_path / "t.gguf")
    assert tensor_bytes(reader.tensors[0]) == le_bytes(arrays["pe"])


# ----------------------------------------------------------------------------------------------- names, limits
def dump_to(table: Table, tmp_path):
    """``table`` dumped straight to a file by the format's ``dump`` (GGUFReader memory-maps a path)."""
    path = tmp_path / "direct.gguf"
    with open(path, "wb") as fp:
        gguf_format.dump(table, fp, WriteOptions())
    return path


def dumps(table: Table) -> bytes:
    buffer = io.BytesIO()
    gguf_format.dump(table, buffer, WriteOptions())
    return buffer.getvalue()


@pytest.mark.parametrize("key", ["model.embed_positions.weight", "a b/../../c", "é位置", "x" * 63, "é" * 31 + "x"])
def test_odd_but_printable_short_keys_are_kept_as_they_are(tmp_path, key):
    (tensor,) = GGUFReader(dump_to(Table("array", {key: np.ones(3, np.float32)}), tmp_path)).tensors
    assert tensor.name == key


@pytest.mark.parametrize(
    ("key", "fragment"),
    [
        ("", "is empty"),
        ("nul\0byte", "not printable"),
        ("a\nb", "not printable"),
        ("bidi\u202eevil", "not printable"),
        ("lone\ud800", "not printable"),
        ("x" * 64, "64 bytes of UTF-8.*at most 63"),
        ("é" * 32, "64 bytes of UTF-8"),
    ],
)
def test_tensor_names_ggml_cannot_hold_are_refused(tmp_path, key, fragment):
    with pytest.raises(FormatError, match=fragment):
        dumps(Table("array", {key: np.ones(3, np.float32)}))
    with pytest.raises(FormatError):
        api.save(Table("array", {key: np.ones(3, np.float32)}), tmp_path / "x.gguf")
    assert list(tmp_path.iterdir()) == []


def test_two_arrays_with_one_tensor_name_are_refused():
    table = Table("sinusoidal", {"pe": np.ones((2, 2), np.float32), "position_embd.weight": np.ones(2, np.float32)})
    with pytest.raises(FormatError, match="'pe' and 'position_embd.weight' would both be"):
        dumps(table)


@pytest.mark.parametrize(
    ("params", "fragment"),
    [
        ({"Seq-Len": 3}, "cannot be a GGUF key"),
        ({"a.b": 3}, "cannot be a GGUF key"),
        ({"": 3}, "cannot be a GGUF key"),
        ({"big": 1 << 63}, "int64"),
        ({"note": "lone \ud800"}, "not valid UTF-8"),
        ({"n": np.int64(3)}, "GGUF metadata here is"),  # not a parameter type
    ],
)
def test_hostile_parameters_are_refused(params, fragment):
    with pytest.raises(FormatError, match=fragment):
        dumps(Table("array", {"x": np.ones(1, np.float32)}, params))


def test_odd_parameter_values_read_back(tmp_path):
    params = {"note": "line\nbreak \u202e 位置", "small": -(1 << 63), "tiny": 5e-324, "flag": False}
    reader = GGUFReader(dump_to(Table("array", {"x": np.ones(1, np.float32)}, params), tmp_path))
    assert {name: value(reader.fields[f"posenc.params.{name}"]) for name in params} == params


@pytest.mark.parametrize(
    ("array", "fragment"),
    [
        (np.zeros(2, np.uint16), "uint16, which GGUF has no tensor type for"),
        (np.zeros(2, np.uint8), "no tensor type"),
        (np.zeros(2, bool), "no tensor type"),
        (np.zeros(2, np.complex64), "no tensor type"),
        (np.zeros((1, 1, 1, 1, 2), np.float32), "5 dimensions.*at most 4"),
        (np.zeros((0, 3), np.float32), "empty"),
    ],
)
def test_arrays_ggml_cannot_hold_are_refused(array, fragment):
    with pytest.raises(FormatError, match=fragment):
        dumps(Table("array", {"x": array}))


# ------------------------------------------------------------------------------------------------------- CLI
def test_cli_writes_a_file_the_reader_reads(tmp_path):
    out = tmp_path / "pe.gguf"
    result = CliRunner().invoke(cli, ["generate", "-n", "8", "-d", "6", "--dtype", "float16", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    (tensor,) = GGUFReader(out).tensors
    assert tensor.name == "position_embd.weight" and tensor.tensor_type == GGMLQuantizationType.F16
    assert tensor.data.tobytes() == le_bytes(np.asarray(posenc_cli.generate(8, 6, dtype="float16").array))
