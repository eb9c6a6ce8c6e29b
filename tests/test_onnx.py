"""ONNX: posenc's writer against the real ``onnx`` package.

Every file is checked by ``onnx.checker.check_model(full_check=True)`` (which runs shape and type inference) and run
by ``onnx.reference.ReferenceEvaluator``; what it outputs is compared bit for bit with what numpy reads from the
``.npz`` of the same table, the independent copy. ``onnx.compose.merge_models`` wires a table into a second graph.
"""

from __future__ import annotations

import io
import json
import sys
import zipfile

import numpy as np
import onnx
import onnx.compose
import pytest
from click.testing import CliRunner
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import posenc_cli
from posenc_cli import api
from posenc_cli.cli import cli
from posenc_cli.dtypes import INDEX_DTYPES
from posenc_cli.errors import FormatError
from posenc_cli.formats import WriteOptions
from posenc_cli.formats import onnx as onnx_format
from posenc_cli.kinds import KINDS
from posenc_cli.table import RowSource, Table

from .test_cli import assert_one_line_error
from .test_kinds import SAMPLES

CASES = [(command, number) for command, samples in SAMPLES.items() for number in range(len(samples))]
ELEMENT_TYPES = [
    ("float32", {}, "FLOAT"),
    ("float64", {}, "DOUBLE"),
    ("float16", {}, "FLOAT16"),
    ("bfloat16", {}, "BFLOAT16"),
    ("q15", {}, "INT16"),
    ("q7", {}, "INT8"),
    ("int8", {"scale": 0.015625, "zero_point": -3}, "INT8"),
]


def write_both(table: Table, tmp_path, stem: str = "t"):
    """The table written as .onnx and .npz through the public API: the model, checked, and numpy's arrays."""
    model_path, npz_path = tmp_path / f"{stem}.onnx", tmp_path / f"{stem}.npz"
    assert api.save(table, model_path) == [model_path]
    api.save(table, npz_path)
    model = onnx.load(str(model_path))
    onnx.checker.check_model(model, full_check=True)
    with np.load(npz_path) as npz:
        arrays = {key: npz[key] for key in npz.files}
    with zipfile.ZipFile(npz_path) as archive:
        meta = json.loads(archive.comment)
    return model, arrays, meta


def run(model) -> dict[str, np.ndarray]:
    outputs = ReferenceEvaluator(model).run(None, {})
    return {o.name: value for o, value in zip(model.graph.output, outputs, strict=True)}


def bits(value: np.ndarray) -> bytes:
    """The value's little-endian bytes; ONNX's bfloat16 (ml_dtypes) compared as the uint16 patterns posenc stores."""
    value = np.asarray(value)
    if value.dtype.kind == "V" or value.dtype.name == "bfloat16":
        value = value.view(np.uint16)
    return np.ascontiguousarray(value, value.dtype.newbyteorder("<")).tobytes()


def props(model) -> dict[str, object]:
    return {p.key: json.loads(p.value) for p in model.metadata_props}


# ----------------------------------------------------------------------------------------------- round trips
@pytest.mark.parametrize(("command", "number"), CASES)
def test_every_table_kind_runs_to_the_arrays_of_its_npz(tmp_path, command, number):
    table = KINDS[command].build(SAMPLES[command][number])
    model, arrays, meta = write_both(table, tmp_path)
    assert [i.name for i in model.graph.initializer] == list(arrays) == list(table.arrays)
    assert [o.name for o in model.graph.output] == list(arrays)
    assert len(model.graph.node) == 0 and len(model.graph.input) == 0
    got = run(model)
    for key, want in arrays.items():
        assert got[key].shape == want.shape, key
        assert bits(got[key]) == bits(want), key
        if meta["params"].get("dtype") != "bfloat16" or want.dtype != np.uint16:
            assert got[key].dtype == want.dtype, key
    assert props(model) == {
        "posenc.kind": meta["kind"],
        **{f"posenc.params.{name}": value for name, value in meta["params"].items()},
    }


@pytest.mark.parametrize(("dtype", "kwargs", "onnx_type"), ELEMENT_TYPES)
def test_element_types(tmp_path, dtype, kwargs, onnx_type):
    table = posenc_cli.generate(40, 19, dtype=dtype, **kwargs)
    model, arrays, _ = write_both(table, tmp_path)
    (output,) = model.graph.output
    assert output.type.tensor_type.elem_type == getattr(TensorProto, onnx_type)
    assert [d.dim_value for d in output.type.tensor_type.shape.dim] == [40, 19]
    assert bits(run(model)["pe"]) == bits(arrays["pe"])
    meta = props(model)
    assert meta["posenc.params.dtype"] == dtype  # what decodes q15, q7 and int8
    for name, value in kwargs.items():
        assert meta[f"posenc.params.{name}"] == value


@pytest.mark.parametrize("dtype", INDEX_DTYPES)
def test_index_types(tmp_path, dtype):
    table = posenc_cli.relative("t5", 6, key_length=9, dtype=dtype)
    model, arrays, _ = write_both(table, tmp_path)
    assert model.graph.output[0].type.tensor_type.elem_type == getattr(TensorProto, dtype.upper())
    got = run(model)["index"]
    assert got.dtype == np.dtype(dtype) and np.array_equal(got, arrays["index"])


def test_a_fixed_point_table_is_its_storage_integer_with_the_type_in_the_metadata():
    codes = np.array([[-(1 << 17), (1 << 17) - 1], [0, 1 << 16]], np.int32)  # fixed18.16 codes, stored in int32
    model = onnx.load_from_string(dumps(Table("sinusoidal", {"pe": codes}, {"dtype": "fixed18.16"})))
    onnx.checker.check_model(model, full_check=True)
    assert model.graph.output[0].type.tensor_type.elem_type == TensorProto.INT32
    assert np.array_equal(run(model)["pe"], codes) and props(model)["posenc.params.dtype"] == "fixed18.16"


def test_unsigned_and_boolean_arrays_of_other_files_keep_their_types():
    table = Table("array", {"u": np.arange(4, dtype=np.uint16), "b": np.array([True, False]), "s": np.array(7)})
    model = onnx.load_from_string(dumps(table))
    onnx.checker.check_model(model, full_check=True)
    got = run(model)
    assert [o.type.tensor_type.elem_type for o in model.graph.output] == [
        TensorProto.UINT16,
        TensorProto.BOOL,
        TensorProto.INT64,
    ]
    assert got["u"].tolist() == [0, 1, 2, 3] and got["b"].tolist() == [True, False] and got["s"].shape == ()


def test_the_model_header_is_posencs_and_pinned(tmp_path):
    model, _, _ = write_both(posenc_cli.alibi(4, seq_len=3), tmp_path, "slopes_and_bias")
    assert (model.ir_version, [(o.domain, o.version) for o in model.opset_import]) == (8, [("", 17)])
    assert (model.producer_name, model.producer_version) == ("posenc", posenc_cli.__version__)
    assert model.graph.name == "slopes_and_bias"
    assert [p.key for p in model.metadata_props] == sorted(p.key for p in model.metadata_props)


def test_the_table_drops_into_another_graph(tmp_path):
    """merge_models wires the table's output into a consumer's input, as a user building a larger graph would."""
    table = posenc_cli.generate(5, 4)
    model, arrays, _ = write_both(table, tmp_path)
    consumer = helper.make_model(
        helper.make_graph(
            [helper.make_node("Add", ["positions", "tokens"], ["embedded"])],
            "consumer",
            [
                helper.make_tensor_value_info("positions", TensorProto.FLOAT, [5, 4]),
                helper.make_tensor_value_info("tokens", TensorProto.FLOAT, [5, 4]),
            ],
            [helper.make_tensor_value_info("embedded", TensorProto.FLOAT, [5, 4])],
        ),
        ir_version=onnx_format.IR_VERSION,
        opset_imports=[helper.make_opsetid("", onnx_format.OPSET)],
    )
    merged = onnx.compose.merge_models(model, consumer, io_map=[("pe", "positions")])
    onnx.checker.check_model(merged, full_check=True)
    tokens = np.full((5, 4), 0.25, np.float32)
    (embedded,) = ReferenceEvaluator(merged).run(None, {"tokens": tokens})
    assert np.array_equal(embedded, arrays["pe"] + tokens)


def test_two_writes_give_the_same_bytes(tmp_path):
    table = posenc_cli.rope(64, 16, scaling="yarn", factor=4.0, original_max_positions=16)
    first, second = tmp_path / "a.onnx", tmp_path / "b.onnx"
    api.save(table, first, name="rope")
    api.save(posenc_cli.rope(64, 16, scaling="yarn", factor=4.0, original_max_positions=16), second, name="rope")
    assert first.read_bytes() == second.read_bytes()


def test_a_part_is_one_output(tmp_path):
    path = tmp_path / "cos.onnx"
    api.save(posenc_cli.rope(6, 8), path, part="cos")
    model = onnx.load(str(path))
    onnx.checker.check_model(model, full_check=True)
    assert [o.name for o in model.graph.output] == ["cos"] and props(model)["posenc.params.part"] == "cos"


# ----------------------------------------------------------------------------------------------- names, limits
def dumps(table: Table) -> bytes:
    buffer = io.BytesIO()
    onnx_format.dump(table, buffer, WriteOptions())
    return buffer.getvalue()


@pytest.mark.parametrize("key", ["model.embed_positions.weight", "a b/../../c", "é位置", "x;DROP TABLE", "'\"\\"])
def test_odd_but_printable_keys_are_kept_as_they_are(key):
    model = onnx.load_from_string(dumps(Table("array", {key: np.ones(3, np.float32)})))
    onnx.checker.check_model(model, full_check=True)
    assert [o.name for o in model.graph.output] == [key] and list(run(model)) == [key]


@pytest.mark.parametrize("key", ["", "a\nb", "nul\0", "esc\x1b[2J", "bidi\u202eevil", "lone\ud800", "tab\tx"])
def test_keys_that_are_not_printable_are_refused(tmp_path, key):
    with pytest.raises(FormatError, match="array .* (is empty|not printable)"):
        dumps(Table("array", {key: np.ones(3, np.float32)}))
    path = tmp_path / "x.onnx"
    with pytest.raises(FormatError):
        api.save(Table("array", {key: np.ones(3, np.float32)}), path)
    assert list(tmp_path.iterdir()) == []


def test_hostile_parameters():
    with pytest.raises(FormatError, match=r"parameter 'a\\nb' holds a character that is not printable"):
        dumps(Table("array", {"x": np.ones(1, np.float32)}, {"a\nb": 1}))
    with pytest.raises(FormatError, match="JSON"):
        dumps(Table("array", {"x": np.ones(1, np.float32)}, {"nan": float("nan")}))
    with pytest.raises(FormatError, match="JSON"):
        dumps(Table("array", {"x": np.ones(1, np.float32)}, {"n": np.int64(3)}))  # not a parameter type
    # A value may hold anything: it is JSON, ASCII-escaped, so a lone surrogate or a newline reads back as it was.
    odd = {"note": "line\nbreak \ud800 \u202e", "kind": "x"}
    model = onnx.load_from_string(dumps(Table("strange\ud800kind", {"x": np.ones(1, np.float32)}, odd)))
    onnx.checker.check_model(model, full_check=True)
    assert props(model) == {
        "posenc.kind": "strange\ud800kind",
        "posenc.params.kind": "x",
        "posenc.params.note": odd["note"],
    }


def test_types_onnx_is_not_given_are_refused():
    with pytest.raises(FormatError, match="complex64.*does not write to .onnx"):
        dumps(Table("array", {"z": np.zeros(2, np.complex64)}))


def test_a_table_past_protobufs_limit_is_refused_before_a_row_is_computed():
    def rows(lo: int, hi: int) -> np.ndarray:
        raise AssertionError("no row may be computed for a table that cannot be written")

    huge = Table("sinusoidal", {"pe": RowSource((1 << 17, 1 << 12), np.float32, rows)}, {"dtype": "float32"})
    with pytest.raises(FormatError, match=r"2\.0 GiB.*protobuf"):
        dumps(huge)


# ------------------------------------------------------------------------------------------------------- CLI
def test_cli_writes_a_model(tmp_path):
    out = tmp_path / "rope.onnx"
    result = CliRunner().invoke(cli, ["rope", "-n", "8", "--head-dim", "8", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    model = onnx.load(str(out))
    onnx.checker.check_model(model, full_check=True)
    assert list(run(model)) == ["cos", "sin", "inv_freq"]


def test_without_the_onnx_package_one_line_says_how_to_get_it(tmp_path, monkeypatch):
    for name in [m for m in sys.modules if m == "onnx" or m.startswith("onnx.")] + ["onnx"]:
        monkeypatch.setitem(sys.modules, name, None)
    out = tmp_path / "pe.onnx"
    result = CliRunner().invoke(cli, ["generate", "-n", "8", "-d", "4", "-o", str(out)])
    assert_one_line_error(result, 1, "pip install 'posenc[onnx]'")
    assert list(tmp_path.iterdir()) == []
