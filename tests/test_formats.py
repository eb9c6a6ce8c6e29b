"""Formats: every registered format round-trips, writes the same bytes twice, and refuses broken input clearly.

Values here are arbitrary float bit patterns (subnormals, huge and tiny magnitudes, negative zero), not only
positional tables, so the text writers' shortest round-trip spelling is tested where it is hardest.
"""

from __future__ import annotations

import io
import pickle

import numpy as np
import pytest

import posenc_cli
from posenc_cli.errors import FormatError, SpecError
from posenc_cli.formats import FORMATS, WriteOptions, by_name, infer, npy
from posenc_cli.formats import csvfile as csv_format
from posenc_cli.formats.options import check_name, name_from_path
from posenc_cli.table import Table

READABLE = [name for name, fmt in FORMATS.items() if fmt.load is not None]


def random_floats(dtype: str, shape: tuple[int, int], seed: int = 0) -> np.ndarray:
    """Finite values drawn uniformly over bit patterns, plus the classic edge cases."""
    rng = np.random.default_rng(seed)
    bits = np.dtype(dtype).itemsize * 8
    utype = np.dtype(f"u{bits // 8}")
    raw = rng.integers(0, 2**bits - 1, size=shape, dtype=utype, endpoint=True).view(dtype)
    raw[~np.isfinite(raw)] = 0.5
    edge = np.array(
        [
            0.0,
            -0.0,
            1.0,
            -1.0,
            1e-5,
            0.1,
            np.finfo(dtype).tiny,
            np.finfo(dtype).max,
            np.finfo(dtype).smallest_subnormal,
        ],
        dtype,
    )
    raw.flat[: edge.size] = edge
    return raw


@pytest.mark.parametrize("fmt", READABLE)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_round_trip_is_bit_exact(tmp_path, fmt, dtype):
    array = random_floats(dtype, (64, 33))
    path = tmp_path / f"t{FORMATS[fmt].suffixes[0]}"
    posenc_cli.save(array, path)
    back = posenc_cli.load(path).array
    assert back.shape == array.shape
    # CSV has no dtype: it reads float64, which casts back to the written values exactly.
    assert back.astype(dtype).tobytes() == array.tobytes()


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_two_writes_give_identical_bytes(tmp_path, fmt):
    table = posenc_cli.generate(16, 8)
    paths = []
    for run in ("a", "b"):
        (tmp_path / run).mkdir()
        paths.append(posenc_cli.save(table, tmp_path / run / f"pe{FORMATS[fmt].suffixes[0]}"))
    for first, second in zip(*paths, strict=True):
        assert first.read_bytes() == second.read_bytes()


def test_h5_keeps_kind_and_parameters(tmp_path):
    path = tmp_path / "pe.h5"
    posenc_cli.save(posenc_cli.generate(16, 8, base=500.0, dtype="float64"), path, name="table")
    back = posenc_cli.load(path)
    assert back.kind == "sinusoidal"
    assert dict(back.params) == {
        "seq_len": 16,
        "d_model": 8,
        "base": 500.0,
        "dtype": "float64",
        "layout": "interleaved",
    }
    assert list(back.arrays) == ["table"]
    import h5py

    with h5py.File(path) as f:
        assert f["table"].attrs["generator"] == f"posenc {posenc_cli.__version__}"


def test_npy_header_is_the_plain_spec_and_aligned():
    head = npy.header((16, 8), np.dtype("<f4"))
    assert head.startswith(b"\x93NUMPY\x01\x00") and len(head) % 64 == 0 and head.endswith(b"\n")
    assert b"{'descr': '<f4', 'fortran_order': False, 'shape': (16, 8), }" in head


def test_npy_loads_with_numpy_without_pickle(tmp_path):
    array = random_floats("float32", (5, 7))
    posenc_cli.save(array, tmp_path / "x.npy")
    assert np.load(tmp_path / "x.npy", allow_pickle=False).tobytes() == array.tobytes()


def test_csv_layout(tmp_path):
    posenc_cli.save(np.array([[0.0, 1.0, 1e-5]], np.float32), tmp_path / "a.csv")
    assert (tmp_path / "a.csv").read_bytes() == b"d0,d1,d2\n0.0,1.0,1e-05\n"
    posenc_cli.save(np.array([[0.0, -0.0]], np.float64), tmp_path / "b.csv", header=False)
    assert (tmp_path / "b.csv").read_bytes() == b"0.0,-0.0\n"


def test_text_formats_refuse_non_finite(tmp_path):
    with pytest.raises(FormatError, match="NaN or infinite"):
        posenc_cli.save(np.array([[1.0, np.nan]], np.float32), tmp_path / "x.csv")
    assert not (tmp_path / "x.csv").exists()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "not a valid .npy"),
        (b"PK\x03\x04 not numpy at all", "not a valid .npy"),
        (npy.header((1000, 1000), np.dtype("<f4")) + b"\0" * 16, "truncated"),
        (npy.header((10**9, 10**9), np.dtype("<f8")), "truncated"),
    ],
)
def test_npy_broken_input(data, message):
    with pytest.raises(FormatError, match=message):
        npy.load(io.BytesIO(data))


def test_npy_with_pickled_objects_is_refused_not_unpickled(monkeypatch):
    buffer = io.BytesIO()
    np.save(buffer, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    buffer.seek(0)

    def no_unpickling(*args, **kwargs):
        raise AssertionError("posenc must never unpickle")

    monkeypatch.setattr(pickle, "load", no_unpickling)
    monkeypatch.setattr(pickle, "loads", no_unpickling)
    with pytest.raises(FormatError, match="holds dtype object"):
        npy.load(buffer)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no rows"),
        ("d0,d1\n", "no rows"),
        ("d0,d1\n1.0,2.0\n3.0\n", "row 2 has 1 values"),
        ("d0,d1\n1.0,abc\n", "row 1"),
        ("1.0,nan\n", "NaN"),
    ],
)
def test_csv_broken_input(text, message):
    with pytest.raises(FormatError, match=message):
        csv_format.load(io.BytesIO(text.encode()))


def test_registry_drives_suffix_inference():
    for name, fmt in FORMATS.items():
        for suffix in fmt.suffixes:
            assert infer(f"dir/x{suffix.upper()}").name == name
    with pytest.raises(SpecError, match=r"'x\.txt': no format has the suffix '\.txt'; .*\.npy.*give --format") as err:
        infer("x.txt")
    assert err.value.param == "format"
    with pytest.raises(SpecError, match="no suffix"):
        infer("x")
    with pytest.raises(SpecError, match="unknown format 'xls'"):
        by_name("xls")


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("pe.h", "pe"),
        ("out/pos-enc.v2.h", "pos_enc_v2"),
        ("2048x512.npy", "pe_2048x512"),
        ("int.h", "pe_int"),
        ("__x__.c", "x"),
        ("Ünïcode.h", "n_code"),
        ("-.h", "pe"),
    ],
)
def test_default_name_is_a_valid_identifier(path, name):
    assert name_from_path(path) == name
    assert check_name(name) == name


@pytest.mark.parametrize("bad", ["", "1pe", "pe-table", "_pe", "pe__x", "int", "class", "constexpr", "a b", "x" * 55])
def test_bad_names_are_refused(bad):
    with pytest.raises(SpecError) as err:
        check_name(bad)
    assert err.value.param == "name"


def test_options_defaults():
    assert WriteOptions() == WriteOptions(name="pe", header=True, command=None, filename=None)


def test_table_is_frozen():
    table = Table.from_array(np.zeros((2, 2), np.float32))
    with pytest.raises(ValueError):
        table.array[0, 0] = 1.0
    with pytest.raises(TypeError):
        table.arrays["other"] = np.zeros(1)  # type: ignore[index]


@pytest.mark.parametrize(
    ("dtype", "kwargs"),
    [
        ("float16", {}),
        ("bfloat16", {}),
        ("q15", {}),
        ("q7", {}),
        ("int8", {"scale": 0.0078125, "zero_point": -3, "saturate": True}),  # -1 is past its codes: clipped, asked
    ],
)
def test_element_types_round_trip_through_csv_and_h5(tmp_path, dtype, kwargs):
    from posenc_cli.dtypes import ElementType

    table = posenc_cli.generate(40, 19, dtype=dtype, **kwargs)
    stored = np.asarray(table.array)
    posenc_cli.save(table, tmp_path / "t.csv")
    values = posenc_cli.load(tmp_path / "t.csv").array
    if dtype == "bfloat16":
        back = ElementType.of("bfloat16").convert(values)[0]
    else:
        back = values.astype(stored.dtype)
    assert back.tobytes() == stored.tobytes()
    posenc_cli.save(table, tmp_path / "t.h5")
    loaded = posenc_cli.load(tmp_path / "t.h5")
    assert loaded.array.tobytes() == stored.tobytes() and loaded.params["dtype"] == dtype
    if dtype == "int8":
        assert loaded.params["scale"] == 0.0078125 and loaded.params["zero_point"] == -3
        assert (tmp_path / "t.csv").read_text().startswith("# dtype=int8 scale=0.0078125 zero_point=-3\nd0,")


def test_npy_sidecar_carries_what_npy_cannot_name(tmp_path):
    table = posenc_cli.generate(8, 6, dtype="int8", scale=0.0078125, zero_point=-3, saturate=True)
    written = posenc_cli.save(table, tmp_path / "pe.npy")
    assert [p.name for p in written] == ["pe.npy", "pe.json"]
    import json

    meta = json.loads((tmp_path / "pe.json").read_text())
    assert meta["dtype"] == "int8" and meta["storage"] == "|i1" and meta["params"]["scale"] == 0.0078125
    back = posenc_cli.load(tmp_path / "pe.npy")
    assert back.kind == "sinusoidal" and back.params["zero_point"] == -3
    assert np.load(tmp_path / "pe.npy").tobytes() == np.asarray(table.array).tobytes()
    assert [p.name for p in posenc_cli.save(posenc_cli.generate(8, 6), tmp_path / "f.npy")] == ["f.npy"]
    (tmp_path / "pe.json").write_text("{not json")
    with pytest.raises(FormatError, match="sidecar"):
        posenc_cli.load(tmp_path / "pe.npy")
