"""posenc_cli.describe: describe, regenerate and verify tables read from every format posenc reads.

Facts are checked against independent computations (hashlib over the loaded bytes, NumPy and ml_dtypes for the
real values); a value flipped in a file is found at its index, with both values.
"""

from __future__ import annotations

import hashlib
import math
import re
from pathlib import Path

import numpy as np
import pytest

import posenc_cli
from posenc_cli.describe import Mismatch, describe, parse_settings, regenerate, verify
from posenc_cli.dtypes import decode
from posenc_cli.errors import SpecError
from posenc_cli.formats import FORMATS
from posenc_cli.table import Table

READABLE = [name for name, fmt in FORMATS.items() if fmt.load is not None]

TABLES = {
    "sinusoidal": lambda: posenc_cli.generate(12, 10),
    "sinusoidal-f64-whisper": lambda: posenc_cli.generate(7, 6, dtype="float64", preset="whisper"),
    "sinusoidal-f16": lambda: posenc_cli.generate(7, 5, dtype="float16"),
    "sinusoidal-bf16": lambda: posenc_cli.generate(9, 6, dtype="bfloat16"),
    "sinusoidal-q15": lambda: posenc_cli.generate(9, 6, dtype="q15"),
    "sinusoidal-q7": lambda: posenc_cli.generate(9, 6, dtype="q7", preset="fairseq"),
    "sinusoidal-int8": lambda: posenc_cli.generate(9, 6, dtype="int8", scale=1 / 64, zero_point=-2),
    "rope-yarn": lambda: posenc_cli.rope(6, 8, scaling="yarn", factor=2.0, original_max_positions=4),
    "alibi": lambda: posenc_cli.alibi(4, 5),
    "sincos2d": lambda: posenc_cli.sincos2d(2, 3, 8, cls_token=True),
}
CASES = [
    (fmt, key) for fmt in READABLE for key in TABLES if not (FORMATS[fmt].single and len(TABLES[key]().arrays) > 1)
]


def real(array: np.ndarray, params: dict) -> np.ndarray:
    """Real values, computed independently of posenc's decode (ml_dtypes for bfloat16)."""
    dtype = params.get("dtype")
    if dtype == "bfloat16" and array.dtype == np.uint16:
        import ml_dtypes

        return array.view(ml_dtypes.bfloat16).astype(np.float64)
    if dtype == "q15" and array.dtype == np.int16:
        return array / 32768.0
    if dtype == "q7" and array.dtype == np.int8:
        return array / 128.0
    if dtype == "int8" and array.dtype == np.int8:
        return (array.astype(np.float64) - params["zero_point"]) * params["scale"]
    return array.astype(np.float64)


def saved(tmp_path: Path, fmt: str, table: Table) -> Path:
    path = tmp_path / f"t{FORMATS[fmt].suffixes[0]}"
    posenc_cli.save(table, path)
    return path


def settings_of(table: Table) -> list[str]:
    """The ``-s key=value`` a user would type to describe ``table``."""
    return [f"{key}={value}" for key, value in table.params.items()] + [f"kind={table.kind}"]


@pytest.mark.parametrize(("fmt", "key"), CASES)
def test_describe_states_the_facts(tmp_path, fmt, key):
    table = TABLES[key]()
    loaded = posenc_cli.load(saved(tmp_path, fmt, table))
    facts = describe(loaded)
    assert facts["kind"] == loaded.kind and facts["params"] == dict(loaded.params)
    assert list(facts["arrays"]) == list(loaded.arrays)
    for name, array in loaded.arrays.items():
        fact = facts["arrays"][name]
        stored = np.asarray(array)
        assert fact["shape"] == list(stored.shape)
        assert fact["nbytes"] == stored.size * stored.dtype.itemsize
        assert fact["storage"] == stored.dtype.newbyteorder("<").str
        little = np.ascontiguousarray(stored, stored.dtype.newbyteorder("<")).tobytes()
        assert fact["sha256"] == hashlib.sha256(little).hexdigest()
        values = real(stored, dict(loaded.params))
        assert fact["min"] == float(values.min()) and fact["max"] == float(values.max())
        if fmt != "csv":
            assert fact["dtype"] == (table.params["dtype"] if "dtype" in loaded.params else stored.dtype.name)
            written = table.arrays[name] if name in table.arrays else table.array  # h5 names one array after the file
            assert fact["sha256"] == hashlib.sha256(np.asarray(written).tobytes()).hexdigest()


def test_describe_sinusoid_range_and_lazy_tables():
    eager = posenc_cli.generate(300, 64)
    lazy = posenc_cli.generate(300, 64, lazy=True)
    assert describe(lazy) == describe(eager)
    facts = describe(eager)["arrays"]["pe"]
    table = np.asarray(eager.array, np.float64)
    assert (facts["min"], facts["max"]) == (table.min(), table.max())
    assert facts["max"] == 1.0 and -1.0 <= facts["min"] < -0.99
    assert facts["dtype"] == "float32" and facts["storage"] == "<f4" and facts["nbytes"] == 300 * 64 * 4


def test_describe_edge_arrays():
    facts = describe(Table("array", {"x": np.array([np.nan, -0.0, 2.0]), "e": np.zeros((0, 3), np.float32)}))
    assert (facts["arrays"]["x"]["min"], facts["arrays"]["x"]["max"]) == (-0.0, 2.0)
    assert facts["arrays"]["e"]["min"] is None and facts["arrays"]["e"]["sha256"] == hashlib.sha256(b"").hexdigest()
    assert describe(Table("array", {"s": np.array(3.5)}))["arrays"]["s"]["shape"] == []
    # integers above 2**53 keep their exact value (a float64 would round 2**62 + 1 to 2**62)
    big = describe(Table("array", {"i": np.array([-(2**63), 2**62 + 1], np.int64)}))["arrays"]["i"]
    assert (big["min"], big["max"]) == (-(2**63), 2**62 + 1) and isinstance(big["max"], int)
    top = describe(Table("array", {"u": np.array([0, 2**64 - 1], np.uint64)}))["arrays"]["u"]
    assert top["max"] == 2**64 - 1


@pytest.mark.parametrize(("fmt", "key"), CASES)
def test_what_posenc_wrote_verifies(tmp_path, fmt, key):
    table = TABLES[key]()
    loaded = posenc_cli.load(saved(tmp_path, fmt, table))
    if not loaded.params.keys() - {"dtype", "scale", "zero_point"}:  # csv (a quantised one: its dtype), bare .npy
        if not loaded.params:
            with pytest.raises(SpecError, match="records no parameters .* give them, e.g. -s seq_len=128"):
                regenerate(loaded.kind, loaded.params)
        reference = regenerate(loaded.kind, parse_settings(settings_of(table)))
    else:
        reference = regenerate(loaded.kind, loaded.params)
    result = verify(loaded, reference)
    assert result.ok, result
    assert result.compared == sum(np.asarray(a).size for a in table.arrays.values())
    assert result.mismatches == () and result.problems == ()
    assert bool(result.notes) == (fmt == "csv" and table.params["dtype"] not in ("float64", "q15", "q7", "int8"))


# ------------------------------------------------------------------------------------------ flipped values
def flipped_text(path: Path, row_line: int, column: int, literal: str, after: str = "= {") -> None:
    """Replace value ``column`` of the ``row_line``-th initializer row after the line containing ``after``."""
    lines = path.read_text().split("\n")
    start = next(i for i, line in enumerate(lines) if after in line) + 1
    line = lines[start + row_line]
    cells = line.strip().strip("{},").split(", ")
    cells[column] = literal
    lines[start + row_line] = "    {" + ", ".join(cells) + "},"
    path.write_text("\n".join(lines))


def assert_one_mismatch(result, array: str, index: tuple[int, ...], stored: float, expected: float) -> None:
    assert not result.ok and result.mismatched == 1 and result.problems == ()
    (found,) = result.mismatches
    assert isinstance(found, Mismatch)
    assert (found.array, found.index) == (array, index)
    assert found.stored == stored and found.expected == expected


def test_flipped_npy_bytes_are_found(tmp_path):
    table = posenc_cli.generate(20, 8)
    path = saved(tmp_path, "npy", table)
    data = bytearray(path.read_bytes())
    offset = len(data) - table.array.nbytes + (13 * 8 + 5) * 4  # the data section ends the file
    original = float(np.frombuffer(bytes(data[offset : offset + 4]), "<f4")[0])
    data[offset : offset + 4] = np.float32(0.375).tobytes()
    path.write_bytes(bytes(data))
    reference = regenerate("array", parse_settings(["seq_len=20", "d_model=8"]))
    assert original == float(np.asarray(table.array)[13, 5])
    assert_one_mismatch(verify(posenc_cli.load(path), reference), "pe", (13, 5), 0.375, original)


def test_flipped_header_literal_is_found(tmp_path):
    table = posenc_cli.generate(6, 4)
    path = saved(tmp_path, "h", table)
    flipped_text(path, 3, 2, "0.125f")
    loaded = posenc_cli.load(path)
    expected = float(np.asarray(table.array)[3, 2])
    assert_one_mismatch(verify(loaded, regenerate(loaded.kind, loaded.params)), "pe", (3, 2), 0.125, expected)
    assert describe(loaded)["arrays"]["pe"]["sha256"] != describe(table)["arrays"]["pe"]["sha256"]


def test_flipped_c_source_literal_is_found_in_its_array(tmp_path):
    table = posenc_cli.rope(5, 4)
    path = tmp_path / "r.c"
    posenc_cli.save(table, path)
    flipped_text(path, 4, 1, "-0.0f", after="r_sin[")
    loaded = posenc_cli.load(path)
    expected = float(np.asarray(table.arrays["sin"])[4, 1])
    result = verify(loaded, regenerate(loaded.kind, loaded.params))
    assert_one_mismatch(result, "sin", (4, 1), -0.0, expected)
    assert result.compared == 2 * 5 * 4 + 2


def test_flipped_negative_zero_is_a_mismatch(tmp_path):
    table = posenc_cli.generate(3, 4)
    path = saved(tmp_path, "h", table)
    flipped_text(path, 0, 0, "-0.0f")  # sin(0) is +0.0
    loaded = posenc_cli.load(path)
    assert_one_mismatch(verify(loaded, regenerate(loaded.kind, loaded.params)), "pe", (0, 0), -0.0, 0.0)


def test_flipped_bin_bytes_are_refused_as_a_changed_pair(tmp_path):
    """A .bin carries no identity of its own: its .h records the identity of the values it was written with, so a
    .bin changed after posenc wrote it (one flipped bit) is refused as a torn pair, naming both files, rather than
    read as a table its header does not describe. (An edited .c literal is still read and located by verify.)"""
    table = posenc_cli.alibi(4, 5, dtype="q7")
    path = saved(tmp_path, "bin", table)
    data = bytearray(path.read_bytes())
    data[16 + 2 * 5 + 3] ^= 0x01  # bias[2, 3], after 4 slopes padded to 16 bytes
    path.write_bytes(bytes(data))
    with pytest.raises(posenc_cli.FormatError, match="torn pair.*changed after posenc wrote it"):
        posenc_cli.load(path)
    data[16 + 2 * 5 + 3] ^= 0x01  # flipped back: the pair is whole again
    path.write_bytes(bytes(data))
    assert verify(posenc_cli.load(path), regenerate("alibi", table.params)).ok


def test_flipped_csv_cell_is_found(tmp_path):
    table = posenc_cli.generate(6, 4)
    path = saved(tmp_path, "csv", table)
    lines = path.read_text().splitlines()
    cells = lines[1 + 2].split(",")  # the header row, then row 2
    cells[1] = "0.25"
    lines[3] = ",".join(cells)
    path.write_text("\n".join(lines) + "\n")
    result = verify(posenc_cli.load(path), regenerate("array", parse_settings(["seq_len=6", "d_model=4"])))
    assert_one_mismatch(result, "pe", (2, 1), 0.25, float(np.asarray(table.array)[2, 1]))


@pytest.mark.parametrize("fmt", ["npz", "safetensors", "h5"])
def test_changed_value_in_container_formats_is_found(tmp_path, fmt):
    table = posenc_cli.rope(5, 6, dtype="bfloat16")
    cos = np.array(table.arrays["cos"])
    cos[3, 4] ^= 0x0001
    changed = Table(table.kind, {**table.arrays, "cos": cos}, table.params, table.axes)
    loaded = posenc_cli.load(saved(tmp_path, fmt, changed))
    result = verify(loaded, regenerate(loaded.kind, loaded.params))
    expected = int(table.arrays["cos"][3, 4])
    assert_one_mismatch(result, "cos", (3, 4), expected ^ 1, expected)
    import ml_dtypes

    assert result.mismatches[0].stored_value == float(np.array(expected ^ 1, np.uint16).view(ml_dtypes.bfloat16))


# ------------------------------------------------------------------------------------------------- verify
def test_verify_reports_structure_and_counts():
    reference = posenc_cli.rope(4, 6)
    cos, sin = np.array(reference.arrays["cos"]), np.array(reference.arrays["sin"])
    assert verify(Table("rope", {"cos": cos, "sin": sin}, reference.params), reference).problems == (
        "the table has no array 'inv_freq'",
    )
    extra = Table("rope", {**reference.arrays, "x": np.zeros(2)}, reference.params)
    assert verify(extra, reference).problems == ("the table has an array 'x' that the reference lacks",)
    wide = Table("rope", {**reference.arrays, "cos": np.zeros((4, 8), np.float32)}, reference.params)
    assert verify(wide, reference).problems == ("'cos' has shape (4, 8), the reference (4, 6)",)
    double = Table("rope", {k: np.asarray(v, np.float64) for k, v in reference.arrays.items()}, reference.params)
    result = verify(double, reference)
    assert not result.ok and "'cos' is stored as float32 (<f8), the reference as float32 (<f4)" in result.problems
    sin[:] = 7.0
    result = verify(Table("rope", {"cos": cos, "sin": sin, "inv_freq": reference.arrays["inv_freq"]}), reference)
    assert result.mismatched == 24 and len(result.mismatches) == 10 and result.compared == 4 * 6 * 2 + 3
    assert [m.index for m in result.mismatches[:3]] == [(0, 0), (0, 1), (0, 2)]
    assert len(verify(Table("rope", {"cos": cos, "sin": sin, "inv_freq": reference.arrays["inv_freq"]}), reference,
                      max_report=0).mismatches) == 0  # fmt: skip
    with pytest.raises(SpecError, match="max_report"):
        verify(reference, reference, max_report=-1)


def test_single_arrays_are_compared_whatever_their_names(tmp_path):
    rope = posenc_cli.rope(4, 6)
    posenc_cli.save(rope, tmp_path / "cos.npy", part="cos")
    loaded = posenc_cli.load(tmp_path / "cos.npy")
    reference = regenerate("array", parse_settings(["kind=rope", "seq_len=4", "head_dim=6"]))
    assert not verify(loaded, reference).ok
    assert verify(loaded, reference.part("cos")).ok
    assert not verify(loaded, reference.part("sin")).ok


def test_mismatch_index_past_the_first_row_block():
    reference = posenc_cli.generate(140_000, 8, lazy=True)  # 4.5 MB: two row blocks of about 4 MiB
    stored = np.array(reference.array)
    stored[135_001, 5] = 2.0
    result = verify(Table("sinusoidal", {"pe": stored}, reference.params), reference)
    assert result.mismatched == 1 and result.mismatches[0].index == (135_001, 5)


# --------------------------------------------------------------------------------------------- regenerate
REGENERATED = [
    lambda preset=preset: posenc_cli.generate(5, 6, preset=preset)
    for preset in (None, "vaswani", "tensor2tensor", "fairseq", "marian", "whisper", "ddpm", "openai-diffusion")
] + [
    lambda: posenc_cli.generate(5, 6, preset="musicgen", dtype="bfloat16"),
    lambda: posenc_cli.generate(5, 6, preset="fairseq", no_padding=True),
    lambda: posenc_cli.generate(5, 6, preset="fairseq", odd="natural", padding_idx=0, layout="interleaved"),
    lambda: posenc_cli.generate(
        5, 7, preset="tensor2tensor", min_timescale=2.0, start=3.0, step=0.5, amplitude=2.0, dtype="int8",
        scale=0.05, zero_point=3,
    ),
    lambda: posenc_cli.generate(5, 6, freq_shift=0.5, layout="cos-sin", dtype="float16"),
    lambda: posenc_cli.generate(5, 6, preset="whisper", odd="natural", base=500.0, dtype="q7"),
    lambda: posenc_cli.rope(
        4, 8, scaling="longrope", short_factor=[1, 2, 3, 4], long_factor=[1, 2, 3, 4], original_max_positions=2,
        factor=2.0,
    ),
    lambda: posenc_cli.rope(4, 8, scaling="yarn", factor=4.0, original_max_positions=2, attention_scaling=False,
                            truncate=False, mscale=1.0, mscale_all_dim=0.5, dtype="float16"),
    lambda: posenc_cli.rope(4, 8, scaling="dynamic", factor=4.0, max_positions=2, layout="interleaved", theta=500.0),
    lambda: posenc_cli.rope(4, 8, scaling="llama3", factor=4.0, original_max_positions=2, low_freq_factor=1.0,
                            high_freq_factor=4.0, dtype="q15"),
    lambda: posenc_cli.rope(4, 8, scaling="linear", factor=2.0, dtype="int8", scale=0.01),
    lambda: posenc_cli.alibi(5),
    lambda: posenc_cli.alibi(6, 3, dtype="float64"),
    lambda: posenc_cli.sincos2d(2, 3, 8, cls_token=True),
    lambda: posenc_cli.sincos2d(2, 2, 8, base=100.0, dtype="int8", scale=0.01),
    lambda: posenc_cli.convert(posenc_cli.generate(5, 6, dtype="float64"), dtype="q15"),
    lambda: posenc_cli.convert(posenc_cli.rope(3, 4), dtype="bfloat16"),
]  # fmt: skip


@pytest.mark.parametrize("make", REGENERATED)
def test_regenerate_gives_the_same_table(make):
    table = make()
    again = regenerate(table.kind, table.params)
    assert again.kind == table.kind and dict(again.params) == dict(table.params)
    assert verify(table, again).ok
    # The same parameters typed at a command line (every value as text) give the same table too.
    typed = regenerate("array", parse_settings(settings_of(table)))
    assert dict(typed.params) == dict(table.params) and verify(table, typed).ok


def test_regenerate_with_a_preset_and_no_layout_takes_the_preset_values():
    table = regenerate("array", parse_settings(["preset=fairseq", "seq_len=5", "d_model=6"]))
    assert verify(table, posenc_cli.generate(5, 6, preset="fairseq")).ok


@pytest.mark.parametrize(
    ("kind", "params", "match", "param"),
    [
        ("array", {}, r"records no parameters \(a .csv or a bare .npy", "settings"),
        ("bessel", {"seq_len": 4}, "cannot regenerate a table of kind 'bessel'; it regenerates sinusoidal", "kind"),
        ("array", {"kind": "bessel", "seq_len": 4}, "kind 'bessel'", "kind"),
        ("sinusoidal", {"seq_len": 4}, "which the file does not record: give it with -s d_model=", "d_model"),
        ("sinusoidal", {"seq_len": 4, "d_model": 4, "sequence": 2}, "no parameter 'sequence'; theirs are", "sequence"),
        ("sinusoidal", {"seq_len": "four", "d_model": 4}, r"seq_len must be an integer with 1 <= x <= 2\*\*32, got 'four'",  # noqa: E501
         "seq_len"),
        ("sinusoidal", {"seq_len": 4.5, "d_model": 4}, r"seq_len must be an integer with 1 <= x <= 2\*\*32, got 4.5",
         "seq_len"),
        ("sinusoidal", {"seq_len": 4, "d_model": 4, "base": "big"}, "base must be a number", "base"),
        (
            "sincos2d",
            {"grid_height": 2, "grid_width": 2, "d_model": 8, "cls_token": "maybe"},
            "cls_token must be true or false",
            "cls_token",
        ),
        ("sinusoidal", {"seq_len": -4, "d_model": 4}, "seq_len", "seq_len"),
        ("sinusoidal", {"seq_len": 4, "d_model": 4, "dtype": "float8"}, "dtype must be one of", "dtype"),
        ("sinusoidal", {"seq_len": 4, "d_model": 4, "freq": "log"}, "freq must be one of paper, shift", "freq"),
        (
            "rope",
            {"seq_len": 4, "head_dim": 4, "attention_scaling": 1.5},
            "attention_scaling is recorded as 1.5 but the other parameters give 1.0",
            "attention_scaling",
        ),
        (
            "rope",
            {"seq_len": 4, "head_dim": 4, "scaling": "longrope", "short_factor": "1,x", "long_factor": "1,2",
             "factor": 2.0, "original_max_positions": 2},
            "short_factor must be comma-separated numbers",
            "short_factor",
        ),
        (
            "sinusoidal",
            {"seq_len": 4, "d_model": 4, "dtype": "q15", "converted_from": "int8"},
            "converted from int8",
            "converted_from",
        ),
    ],
)  # fmt: skip
def test_regenerate_refuses_what_it_cannot_do(kind, params, match, param):
    with pytest.raises(SpecError, match=match) as err:
        regenerate(kind, params)
    if param is not None:
        assert err.value.param == param
    assert "\n" not in str(err.value)


def test_parse_settings_types_values():
    assert parse_settings(
        ["seq_len=128", "base=1e4", "layout=sin-cos", "cls_token=true", "x=False", "f=-0.5", "s=1.0,1.5", "n=+3"]
    ) == {"seq_len": 128, "base": 10000.0, "layout": "sin-cos", "cls_token": True, "x": False, "f": -0.5,
          "s": "1.0,1.5", "n": 3}  # fmt: skip
    assert isinstance(parse_settings(["seq_len=128"])["seq_len"], int)
    assert parse_settings([" d_model = 64 "]) == {"d_model": 64}


@pytest.mark.parametrize(
    ("pairs", "match"),
    [
        (["seq_len"], "key=value .* got 'seq_len'"),
        (["=4"], "key=value"),
        (["seq_len="], "key=value"),
        (["seq-len=4"], "key=value"),
        (["seq_len=4", "seq_len=5"], "seq_len is given twice"),
    ],
)
def test_parse_settings_refuses_malformed_pairs(pairs, match):
    with pytest.raises(SpecError, match=match) as err:
        parse_settings(pairs)
    assert err.value.param == "settings"


# ------------------------------------------------------------------------------------------------- decode
def test_decode_gives_real_values():
    import ml_dtypes

    bits = np.arange(0, 1 << 16, 97, dtype=np.uint16)
    bits = bits[(bits & 0x7F80) != 0x7F80]  # finite patterns
    assert np.array_equal(decode(bits, {"dtype": "bfloat16"}), bits.view(ml_dtypes.bfloat16).astype(np.float64))
    codes = np.array([-32768, -1, 0, 1, 32767], np.int16)
    assert decode(codes, {"dtype": "q15"}).tolist() == [-1.0, -(2.0**-15), 0.0, 2.0**-15, 1 - 2.0**-15]
    assert decode(np.array([-128, 127], np.int8), {"dtype": "q7"}).tolist() == [-1.0, 127 / 128]
    int8 = decode(np.array([-128, 0, 127], np.int8), {"dtype": "int8", "scale": 0.5, "zero_point": -3})
    assert int8.tolist() == [-62.5, 1.5, 65.0]
    # Storage that does not match the named type (a bare array) is its values.
    assert decode(np.array([3], np.int32), {"dtype": "q15"}).tolist() == [3.0]
    assert decode(np.array([0.5], np.float32), {}).dtype == np.float64
    assert math.isnan(decode(np.array([np.nan]), {})[0])


def test_module_stays_out_of_the_cli():
    import posenc_cli.describe as module

    source = Path(module.__file__).read_text()
    assert not re.search(r"^\s*(import|from)\s+(click|rich)", source, re.M) and "print(" not in source
