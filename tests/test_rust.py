"""Rust output (``.rs``), built by the real rustc: warning-free, and every compiled value equals the ``.npz``.

Each table of every kind and element type is written through :func:`posenc_cli.save` (and the CLI), next to the
``.npz`` of the same table. One program ``mod``-s them all and prints every entry (floats as ``to_bits()`` in hex,
integers in decimal) and every constant; the printout is compared with the ``.npz`` as NumPy reads it, and the
constants with the table's shapes and parameters. The same files are included with ``include!``, linted by clippy
(pedantic, ``missing_docs``) in a library, checked by rustfmt, and compiled in every edition. Hostile array keys,
parameters and command lines must compile and inject nothing.
"""

from __future__ import annotations

import re
import struct
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import posenc_cli
from posenc_cli.cli import cli
from posenc_cli.errors import FormatError, PosencAdvice
from posenc_cli.formats import rust
from posenc_cli.kinds import KINDS
from posenc_cli.table import Table

from .conftest import require_tool
from .test_kinds import SAMPLES

#: The element types of the float kinds: every named type, an affine int8, and fixed-point types of every storage.
FLOAT_TYPES = [
    {"dtype": "float32"},
    {"dtype": "float64"},
    {"dtype": "float16"},
    {"dtype": "bfloat16"},
    {"dtype": "q31"},
    {"dtype": "q15"},
    {"dtype": "q7"},
    {"dtype": "int8", "scale": 1 / 100, "zero_point": -2},
    {"dtype": "fixed5.3"},
    {"dtype": "fixed12.10"},
    {"dtype": "fixed18.16"},
    {"dtype": "fixed40.0"},
    {"dtype": "fixed64.62"},
]
INDEX_TYPES = [{"dtype": name} for name in ("int8", "int16", "int32", "int64")]
#: For each kind, the sample that reaches most of its arrays (ALiBi's bias, RoPE's inv_freq, the 3-D window coords).
BASE = {
    "generate": SAMPLES["generate"][0],
    "rope": SAMPLES["rope"][0],
    "alibi": SAMPLES["alibi"][1],
    "sincos2d": SAMPLES["sincos2d"][0],
    "relative": SAMPLES["relative"][0],
    "window": SAMPLES["window"][2],
    "mrope": SAMPLES["mrope"][0],
    "axial": SAMPLES["axial"][0],
    "detr": SAMPLES["detr"][0],
}


def cases() -> list[tuple[str, dict[str, object]]]:
    """(command, values): every sample of every kind, and each kind's base sample in every element type."""
    out = [(command, values) for command, samples in SAMPLES.items() for values in samples]
    for command, base in BASE.items():
        types = INDEX_TYPES if command in ("relative", "window", "mrope") else FLOAT_TYPES
        out += [(command, {**base, **types_, **_saturated(types_)}) for types_ in types]
    return out


def _saturated(element: dict[str, object]) -> dict[str, object]:
    """What the Rust source is tested for is each storage type, not the values a type can hold: ALiBi's bias is
    past q31's 1.0, so the integer types clip it, on request (``saturate``, which a float type refuses)."""
    dtype = str(element["dtype"])
    return {"saturate": True} if dtype in ("q31", "q15", "q7", "int8") or dtype.startswith("fixed") else {}


def rustc(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [require_tool("rustc"), "-D", "warnings", *map(str, args)]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True)


def built(result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode == 0, result.stderr[-4000:]


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def expected_names(table: Table, name: str) -> tuple[dict[str, str], dict[str, int]]:
    """The spec's names (module docstring), for tables whose keys and axes are plain lower-case identifiers:
    ``{key: static}`` and ``{size constant: size}``."""
    upper = name.upper()
    statics = {key: upper if len(table.arrays) == 1 else f"{upper}_{key.upper()}" for key in table.arrays}
    sizes = {}
    for key, array in table.arrays.items():
        for axis, size in zip(table.axes_of(key), array.shape, strict=True):
            sizes[f"{upper}_{axis.upper()}"] = size
    return statics, sizes


def printer(module: str, static: str, array: np.ndarray) -> str:
    """Rust lines that print each entry of ``module::static`` as ``<module> <static> <value>``."""
    flat = ".iter()" + ".flatten()" * (array.ndim - 1)
    value = "v.to_bits()" if array.dtype.kind == "f" and array.dtype.itemsize > 2 else "v"
    form = "{:x}" if value != "v" else "{}"
    return f'    for v in {module}::{static}{flat} {{ writeln!(out, "{module} {static} {form}", {value}).unwrap(); }}\n'


def expected_lines(module: str, static: str, array: np.ndarray) -> list[str]:
    """What :func:`printer` prints, from the array NumPy read: IEEE bit patterns of floats, integers as they are.
    A float16 array is printed by Rust as its u16 bit patterns."""
    flat = np.ascontiguousarray(array).reshape(-1)
    if array.dtype.kind == "f":
        bits = flat.view(f"u{array.dtype.itemsize}").tolist()
        texts = [str(b) if array.dtype.itemsize == 2 else format(b, "x") for b in bits]
    else:
        texts = [str(v) for v in flat.tolist()]
    return [f"{module} {static} {text}" for text in texts]


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> tuple[Path, list[tuple[str, Table, dict[str, np.ndarray]]]]:
    """Every case as ``t<n>.rs`` (and ``t<n>.npz``, read back by NumPy), the table named ``pe``."""
    workdir = tmp_path_factory.mktemp("rust")
    out = []
    for n, (command, values) in enumerate(cases()):
        table = KINDS[command].build(values)
        module = f"t{n}"
        posenc_cli.save(table, workdir / f"{module}.rs", name="pe", command=f"posenc {command} (case {n})")
        posenc_cli.save(table, workdir / f"{module}.npz")
        with np.load(workdir / f"{module}.npz") as npz:
            arrays = {key: npz[key] for key in table.arrays}
        out.append((module, table, arrays))
    return workdir, out


@pytest.mark.client
def test_every_kind_and_element_type_compiles_warning_free_and_holds_the_npz_values(written):
    workdir, tables = written
    seen = {(t.kind, str(t.params.get("dtype"))) for _, t, _ in tables}
    assert {dtype for kind, dtype in seen if kind == "sinusoidal"} >= {v["dtype"] for v in FLOAT_TYPES}
    main = "use std::fmt::Write as _;\n" + "".join(f"mod {module};\n" for module, _, _ in tables)
    main += "fn main() {\n    let mut out = String::new();\n"
    expected: list[str] = []
    for module, table, arrays in tables:
        statics, sizes = expected_names(table, "pe")
        source = (workdir / f"{module}.rs").read_text()
        defined = re.findall(r"^pub (?:const|static) ([A-Z0-9_]+): ", source, re.M)
        extra = []
        params = table.params
        if params.get("dtype") == "int8" and "scale" in params:
            extra = ["PE_SCALE", "PE_ZERO_POINT"]
            main += f'    writeln!(out, "{module} PE_SCALE {{:x}}", {module}::PE_SCALE.to_bits()).unwrap();\n'
            main += f'    writeln!(out, "{module} PE_ZERO_POINT {{}}", {module}::PE_ZERO_POINT).unwrap();\n'
            expected.append(f"{module} PE_SCALE {struct.unpack('<Q', struct.pack('<d', params['scale']))[0]:x}")
            expected.append(f"{module} PE_ZERO_POINT {params['zero_point']}")
        dtype = str(params.get("dtype"))
        frac = {"q31": 31, "q15": 15, "q7": 7}.get(dtype)
        if dtype.startswith("fixed"):
            frac = int(dtype.split(".")[1])
        if frac is not None:
            extra = ["PE_FRAC_BITS"]
            main += f'    writeln!(out, "{module} PE_FRAC_BITS {{}}", {module}::PE_FRAC_BITS).unwrap();\n'
            expected.append(f"{module} PE_FRAC_BITS {frac}")
        assert sorted(defined) == sorted([*sizes, *extra, *statics.values()]), (module, defined)
        for constant, size in sizes.items():
            main += f'    writeln!(out, "{module} {constant} {{}}", {module}::{constant}).unwrap();\n'
            expected.append(f"{module} {constant} {size}")
        for key, static in statics.items():
            main += printer(module, static, arrays[key])
            expected += expected_lines(module, static, arrays[key])
    main += '    print!("{out}");\n}\n'
    (workdir / "main.rs").write_text(main)
    built(rustc("--edition", "2021", "main.rs", "-o", "main", cwd=workdir))
    printed = subprocess.run([str(workdir / "main")], capture_output=True, text=True, check=True).stdout
    assert printed.splitlines() == expected


def test_the_element_types_are_the_rust_types_of_the_storage(written):
    """A 16-bit float is u16, fixed point the smallest signed integer that holds its bits, floats f32/f64."""
    workdir, tables = written
    want = {"float32": "f32", "float64": "f64", "float16": "u16", "bfloat16": "u16", "q31": "i32", "q15": "i16",
            "q7": "i8", "int8": "i8", "fixed5.3": "i8", "fixed12.10": "i16", "fixed18.16": "i32",
            "fixed40.0": "i64", "fixed64.62": "i64", "int16": "i16", "int32": "i32", "int64": "i64"}  # fmt: skip
    for module, table, _ in tables:
        if table.kind != "sinusoidal":
            continue
        source = (workdir / f"{module}.rs").read_text()
        rtype = want[str(table.params["dtype"])]
        assert f"pub static PE: [[{rtype}; PE_D_MODEL]; PE_SEQ_LEN] = [\n" in source, module


@pytest.mark.client
def test_include_at_the_crate_root_and_in_a_module_uses_one_array_warning_free(written):
    """No inner attribute: ``include!`` takes the file anywhere; items a binary does not use do not warn."""
    workdir, tables = written
    float32 = {t.kind: m for m, t, _ in reversed(tables) if t.params.get("dtype") == "float32"}
    first, second = float32["sinusoidal"], float32["rope"]  # one array, several arrays
    (workdir / "inc.rs").write_text(
        f'include!("{first}.rs");\n'
        f'mod rope {{\n    include!("{second}.rs");\n}}\n'
        'fn main() {\n    println!("{:x} {:x}", PE[1][0].to_bits(), rope::PE_SIN[1][0].to_bits());\n}\n'
    )
    built(rustc("--edition", "2021", "inc.rs", "-o", "inc", cwd=workdir))
    printed = subprocess.run([str(workdir / "inc")], capture_output=True, text=True, check=True).stdout.split()
    arrays = {module: arrays for module, _, arrays in tables}
    assert printed == [format(int(arrays[first]["pe"][1, 0].view(np.uint32)), "x"),
                       format(int(arrays[second]["sin"][1, 0].view(np.uint32)), "x")]  # fmt: skip


def library(workdir: Path, tables: list[tuple[str, Table, dict[str, np.ndarray]]]) -> Path:
    lib = workdir / "lib.rs"
    lib.write_text("//! posenc tables.\n#![no_std]\n" + "".join(f"/// A table.\npub mod {m};\n" for m, _, _ in tables))
    return lib


@pytest.mark.client
@pytest.mark.parametrize("edition", ["2015", "2018", "2021", "2024"])
def test_every_edition_compiles_the_files_no_std_with_missing_docs(written, edition):
    workdir, tables = written
    library(workdir, tables)
    built(rustc("--edition", edition, "--crate-type", "lib", "-W", "missing_docs", "--emit", "metadata",
                "-o", f"lib{edition}.rmeta", "lib.rs", cwd=workdir))  # fmt: skip


@pytest.mark.client
def test_clippy_pedantic_finds_nothing(written):
    """Clippy's deny-by-default approx_constant (an ALiBi slope of 16 heads is FRAC_1_SQRT_2) and pedantic lints."""
    workdir, tables = written
    table = posenc_cli.alibi(16)
    assert np.float32(0.70710677) in np.asarray(table.arrays["slopes"])
    posenc_cli.save(table, workdir / "slopes.rs", name="pe")
    lib = library(workdir, [*tables, ("slopes", table, {})])
    command = [require_tool("clippy-driver"), "--edition", "2021", "--crate-type", "lib", "-D", "warnings",
               "-W", "clippy::pedantic", "-W", "missing_docs", "--emit", "metadata",
               "-o", "clippy.rmeta", lib]  # fmt: skip
    result = subprocess.run(list(map(str, command)), cwd=workdir, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-4000:]


@pytest.mark.client
def test_rustfmt_leaves_every_file_as_it_is(written):
    workdir, tables = written
    files = [str(workdir / f"{module}.rs") for module, _, _ in tables]
    result = subprocess.run([require_tool("rustfmt"), "--check", "--edition", "2021", *files],
                            capture_output=True, text=True)  # fmt: skip
    assert result.returncode == 0, result.stdout[-4000:]


# ----------------------------------------------------------------------------------------- exact values
EXTREMES = {
    "f32": np.array([0.0, -0.0, 1e-45, -1e-45, 1.1754942e-38, 1.1754944e-38, 3.4028235e38, -3.4028235e38, 1e-05,
                     0.1, 16777217.0, 1.0000001, 0.70710677, 3.1415927], np.float32),
    "f64": np.array([0.0, -0.0, 5e-324, -5e-324, 2.225073858507201e-308, 2.2250738585072014e-308,
                     1.7976931348623157e308, -1.7976931348623157e308, 0.1, 1e16, 1e-05, 9007199254740993.0,
                     0.1 + 0.2, np.pi], np.float64),
    "f16": np.array([0.0, -0.0, 6e-08, -6e-08, 6.1e-05, 65504.0, -65504.0, 1.0, 0.1], np.float16),
    "i8": np.array([-128, 127, 0, -1], np.int8),
    "i16": np.array([-32768, 32767, 0, -1], np.int16),
    "i32": np.array([-(2**31), 2**31 - 1, 0, -1], np.int32),
    "i64": np.array([-(2**63), 2**63 - 1, 2**53 + 1, -1], np.int64),
    "u8": np.array([0, 255], np.uint8),
    "u64": np.array([0, 2**64 - 1], np.uint64),
}  # fmt: skip


@pytest.mark.client
def test_extreme_values_and_every_storage_type_are_exact(tmp_path):
    """Subnormals, -0.0, the extremes and the minimum of each integer type, also big-endian and in 3-D."""
    arrays = {key: values for key, values in EXTREMES.items()}
    arrays["big_endian"] = EXTREMES["f64"].astype(">f8")
    arrays["cube"] = np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 11.5
    arrays["deep"] = np.arange(64, dtype=np.int16).reshape(2, 2, 2, 2, 2, 2) - 32
    axes = {key: tuple(f"{key}_{axis}" for axis in range(values.ndim)) for key, values in arrays.items()}
    table = Table("array", arrays, axes=axes)
    posenc_cli.save(table, tmp_path / "x.rs", name="x")
    main = "use std::fmt::Write as _;\nmod x;\nfn main() {\n    let mut out = String::new();\n"
    expected: list[str] = []
    for key, values in arrays.items():
        static = f"X_{key.upper()}"
        native = values.astype(values.dtype.newbyteorder("="))
        main += printer("x", static, native)
        expected += expected_lines("x", static, native)
    (tmp_path / "main.rs").write_text(main + '    print!("{out}");\n}\n')
    built(rustc("--edition", "2021", "-O", "main.rs", "-o", "main", cwd=tmp_path))
    printed = subprocess.run([str(tmp_path / "main")], capture_output=True, text=True, check=True).stdout
    assert printed.splitlines() == expected


@pytest.mark.parametrize(
    "array",
    [
        np.array([[1.0, np.nan]], np.float32),
        np.array([np.inf], np.float64),
        np.array([[-np.inf, 0.0]], np.float16),
    ],
    ids=["nan32", "inf64", "inf16"],
)
def test_nan_and_infinity_are_refused_and_nothing_is_written(tmp_path, array):
    with pytest.raises(FormatError, match="NaN or infinite"):
        posenc_cli.save(Table("array", {"pe": array}), tmp_path / "pe.rs")
    assert list(tmp_path.iterdir()) == []


def test_bfloat16_infinities_are_refused(tmp_path):
    table = Table("sinusoidal", {"pe": np.array([[0x3F80, 0x7F80]], np.uint16)}, {"dtype": "bfloat16"})
    with pytest.raises(FormatError, match="NaN or infinite"):
        posenc_cli.save(table, tmp_path / "pe.rs")
    assert list(tmp_path.iterdir()) == []


# ----------------------------------------------------------------------------------------------- hostile
HOSTILE_KEYS = [
    "*/ pub static EVIL: u8 = 0; /*",
    "a\nfn evil() {}\n",
    '"); } fn evil() { ("',
    "match",
    "Self",
    "r#type",
    "crate",
    "async",
    "ünïcödé ✓",
    "x\u202eb",
    "// comment",
    "\u2028line",
]
HOSTILE_TEXT = "*/ /* \n#![no_main]\r\n\u2028\u2029\u202e\u2066 */ fn evil() {} // \x00\x1b[2J ??/"


@pytest.mark.client
def test_hostile_keys_params_and_command_compile_and_inject_nothing(tmp_path):
    arrays = {key: np.full((2, 3), n, np.float32) for n, key in enumerate(HOSTILE_KEYS)}
    params = {"dtype": "float32", HOSTILE_TEXT: HOSTILE_TEXT, "note": HOSTILE_TEXT}
    table = Table("array", arrays, params)
    posenc_cli.save(table, tmp_path / "h.rs", name="h", command=f"posenc {HOSTILE_TEXT}")
    source = (tmp_path / "h.rs").read_text()
    comment, _, code = source.partition("\n\n")
    assert all(line.startswith("//") for line in comment.splitlines())
    assert all(ch == "\n" or ch.isprintable() for ch in source) and "\r" not in source
    assert "/*" not in source and "*/" not in source and "fn evil" not in code and "no_main" not in code
    for line in code.splitlines():  # code lines are only what posenc writes
        assert re.fullmatch(
            r"(///.*|#\[.*\]|pub (const|static) [A-Z0-9_]+: .* = .*|\s*\[?[-0-9., \[\]]*|\];|)", line
        ), line
    statics = re.findall(r"^pub static ([A-Z0-9_]+): ", code, re.M)
    assert len(statics) == len(HOSTILE_KEYS) and all(re.fullmatch(r"H_[A-Z0-9_]+", s) for s in statics)
    main = "use std::fmt::Write as _;\nmod h;\nfn main() {\n    let mut out = String::new();\n"
    main += "".join(printer("h", static, arrays[key]) for key, static in zip(HOSTILE_KEYS, statics, strict=True))
    (tmp_path / "main.rs").write_text(main + '    print!("{out}");\n}\n')
    for edition in ("2015", "2021", "2024"):
        built(rustc("--edition", edition, "main.rs", "-o", "main", cwd=tmp_path))
    printed = subprocess.run([str(tmp_path / "main")], capture_output=True, text=True, check=True).stdout
    expected = [line for n, key in enumerate(HOSTILE_KEYS)
                for line in expected_lines("h", statics[n], arrays[key])]  # fmt: skip
    assert printed.splitlines() == expected


def test_rust_keywords_are_kept_out_of_names():
    from posenc_cli.formats.identifiers import RUST_KEYWORDS, identifier

    for word in RUST_KEYWORDS:
        assert identifier(word, rust=True) == "pe_" + word
        assert identifier(word, part=True, rust=True) == word + "_"
    assert identifier("loop") == "loop" and identifier("loop", part=True) == "loop"  # C names stay as they were


@pytest.mark.parametrize(
    ("arrays", "fragment"),
    [
        ({"a": np.zeros(2), "A": np.zeros(2)}, "PE_A"),
        ({"self": np.zeros(2), "Self": np.zeros(2)}, "PE_SELF_"),
        ({"seq_len": np.zeros((2, 2)), "x": np.zeros((2, 2))}, "PE_SEQ_LEN"),
        ({"x": np.zeros(())}, "dimensions"),
        ({"x": np.zeros((2, 0))}, "empty"),
        ({"x": np.zeros(2, complex)}, "complex128"),
    ],
    ids=["case", "keyword-case", "size-constant", "scalar", "empty", "complex"],
)
def test_what_rust_cannot_name_or_hold_is_refused(tmp_path, arrays, fragment):
    with pytest.raises(FormatError, match=fragment):
        posenc_cli.save(Table("array", arrays), tmp_path / "pe.rs")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.client
def test_hostile_file_names_through_convert(tmp_path):
    """A safetensors file whose tensor names are Rust code, converted by the CLI, compiles to the mapped names."""
    from safetensors.numpy import save_file

    values = np.arange(6, dtype=np.float32).reshape(2, 3)
    save_file({"pe": values, "x: u8 = 0; pub fn evil() {} pub static y": values + 1}, str(tmp_path / "in.safetensors"))
    code, _, err = run("convert", str(tmp_path / "in.safetensors"), str(tmp_path / "out.rs"))
    assert code == 0, err
    source = (tmp_path / "out.rs").read_text()
    mapped = "OUT_X_U8_0_PUB_FN_EVIL_PUB_STATIC_Y"
    assert "fn evil" not in source and f"pub static {mapped}: " in source
    (tmp_path / "main.rs").write_text(
        f'mod out;\nfn main() {{\n    println!("{{}} {{}}", out::OUT_PE[1][2], out::{mapped}[1][0]);\n}}\n'
    )
    built(rustc("--edition", "2021", "main.rs", "-o", "main", cwd=tmp_path))
    assert subprocess.run([str(tmp_path / "main")], capture_output=True, text=True, check=True).stdout == "5 4\n"


# ------------------------------------------------------------------------------------------- the CLI, and more
def test_the_cli_writes_rs_by_its_suffix_and_refuses_c_options(tmp_path):
    code, out, err = run("generate", "-n", "4", "-d", "6", "-o", str(tmp_path / "pe.rs"))
    assert code == 0 and err == "", err
    text = (tmp_path / "pe.rs").read_text()
    assert text.startswith("// pe.rs: positional-encoding table generated by posenc ")
    assert "//   command: posenc generate " in text and "pub static PE: [[f32; PE_D_MODEL]; PE_SEQ_LEN] = [\n" in text
    code, _, err = run("generate", "-n", "4", "-d", "6", "--align", "16", "-o", str(tmp_path / "other.rs"))
    assert code == 2 and "align" in err and not (tmp_path / "other.rs").exists()


def test_two_writes_are_byte_identical(tmp_path):
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        code, _, err = run(
            "rope", "-n", "5", "--head-dim", "8", "--dtype", "bfloat16", "-o", str(tmp_path / name / "pe.rs")
        )
        assert code == 0, err
    assert (tmp_path / "a" / "pe.rs").read_bytes() == (tmp_path / "b" / "pe.rs").read_bytes()


def test_a_large_table_is_advised_against(tmp_path, monkeypatch):
    monkeypatch.setattr(rust, "BIG_TABLE", 10)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        posenc_cli.save(posenc_cli.generate(4, 4), tmp_path / "pe.rs")
    advice = [w for w in caught if issubclass(w.category, PosencAdvice) and "include_bytes!" in str(w.message)]
    assert len(advice) == 1 and advice[0].filename == __file__  # from the caller's line, not posenc's
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        posenc_cli.save(posenc_cli.generate(2, 4), tmp_path / "small.rs")  # 8 values: no advice
