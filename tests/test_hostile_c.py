"""The attacks on posenc's C outputs, performed (issue #11, points 1, 4 and 7).

1. Code from names: files crafted with safetensors, zipfile and h5py whose array names are C code go through
   ``posenc convert`` to every C format, and a compiler builds and runs a program with the result. The payload's
   constructor must never run; the symbol is the mapped identifier.
2. ``verify`` vouching for other values: genuine files edited the ways a compiler would honour (``#if 0``,
   ``#define``, an extra function, a second definition, ``#include``, trailing code, a line splice) are refused by
   ``verify`` and ``inspect`` (exit 1, one ``Error:`` line), while gcc shows the edits are real.
3. Torn pairs: the ``.h`` of another table beside a ``.c`` or a ``.bin`` stops the build, and ``verify`` and
   ``inspect`` name both files.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import zipfile
from pathlib import Path

import h5py
import numpy as np
import pytest
from click.testing import CliRunner
from safetensors.numpy import save_file

import posenc_cli
from posenc_cli.cli import cli
from posenc_cli.errors import FormatError
from posenc_cli.table import Table

from .conftest import require_tool

#: A tensor name that, pasted into a declarator, closes it and adds a constructor that runs before main().
PAYLOAD = (
    'x[1]={0};__attribute__((constructor)) static void p(void){extern int puts(const char *); puts("PWNED");} '
    "static const float y"
)
#: What identifiers.identifier makes of it (as a part): ASCII letters, digits and single '_', cut to 54 characters.
MAPPED = "x_1_0_attribute_constructor_static_void_p_void_extern"
WARNINGS = ["-Wall", "-Wextra", "-Werror"]


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def assert_refused(args: list[str], *fragments: str) -> str:
    """The command exits 1 with exactly one ``Error:`` line holding every fragment."""
    code, out, err = run(*args)
    assert code == 1, (code, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), err
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


def build(tmp_path: Path, sources: list[str], *flags: str, compiler: str = "gcc") -> subprocess.CompletedProcess[str]:
    command = [require_tool(compiler), *WARNINGS, *flags, f"-Wa,-I{tmp_path}", *sources, "-o", "prog"]
    return subprocess.run(command, cwd=tmp_path, capture_output=True, text=True)


def build_and_run(tmp_path: Path, sources: list[str], *flags: str, compiler: str = "gcc") -> str:
    built = build(tmp_path, sources, *flags, compiler=compiler)
    assert built.returncode == 0, built.stderr
    return subprocess.run([str(tmp_path / "prog")], capture_output=True, text=True, check=True).stdout


# ------------------------------------------------------------------------------------------- 1. code from names
def crafted(tmp_path: Path, suffix: str, arrays: dict[str, np.ndarray]) -> Path:
    """A file of ``arrays`` under their names as given, made with the format's own library."""
    path = tmp_path / f"in{suffix}"
    if suffix == ".safetensors":
        save_file(arrays, str(path))
    elif suffix == ".npz":
        with zipfile.ZipFile(path, "w") as archive:
            for name, array in arrays.items():
                buffer = io.BytesIO()
                np.save(buffer, array)
                archive.writestr(name + ".npy", buffer.getvalue())
    else:
        with h5py.File(path, "w") as f:
            for name, array in arrays.items():
                f[name] = array
    return path


MAIN = """#include <stdio.h>
{define}#include "out.h"
int main(void)
{{
    printf("%g %g\\n", (double)out_pe[1][2], (double)out_{symbol}[1][0]);
    return 0;
}}
"""


@pytest.mark.client
def test_the_payload_is_a_real_attack(tmp_path):
    """The payload pasted into a declarator (what posenc did before) compiles, and runs its constructor."""
    (tmp_path / "pasted.c").write_text(
        f"static const float {PAYLOAD}[2][2] = {{{{0.0f, 1.0f}}, {{2.0f, 3.0f}}}};\n"
        "int main(void) { return (int)y[0][0]; }\n"
    )
    assert "PWNED" in build_and_run(tmp_path, ["pasted.c"], "-Wno-unused-variable")


@pytest.mark.client
@pytest.mark.parametrize("source", [".safetensors", ".npz", ".h5"])
@pytest.mark.parametrize("output", ["h", "c", "bin"])
def test_array_names_never_become_code(tmp_path, source, output):
    values = np.arange(6, dtype=np.float32).reshape(2, 3)
    path = crafted(tmp_path, source, {"pe": values, PAYLOAD: values + 10})
    code, _, err = run("convert", str(path), str(tmp_path / f"out.{output}"))
    assert code == 0, err
    header = (tmp_path / "out.h").read_text()
    assert "constructor)" not in header and "puts(" not in header and PAYLOAD not in header
    assert f"out_{MAPPED}[OUT_SEQ_LEN][OUT_D_MODEL]" in header
    define = "#define OUT_INCBIN\n" if output == "bin" else ""
    (tmp_path / "main.c").write_text(MAIN.format(define=define, symbol=MAPPED))
    sources = ["main.c", "out.c"] if output == "c" else ["main.c"]
    assert build_and_run(tmp_path, sources, "-Wpedantic") == "5 13\n"  # and no PWNED: the constructor never ran
    if output == "h":
        shutil.copy(tmp_path / "main.c", tmp_path / "main.cpp")
        assert build_and_run(tmp_path, ["main.cpp"], "-Wpedantic", compiler="g++") == "5 13\n"
    # posenc reads its own output back, the mapped names included
    assert run("inspect", str(tmp_path / f"out.{output}"))[0] == 0


@pytest.mark.client
@pytest.mark.parametrize(
    ("name", "mapped"),
    [
        ("a\nb", "a_b"),
        ("*/ int evil; /*", "int_evil"),
        ("\\", "x"),
        ('"q"', "q"),
        ("#define pe", "define_pe"),
        ("donnée", "donn_e"),
        ("int", "int_"),
        ("../x", "x"),
        ("ab\u202e", "ab"),  # a bidi override (Trojan Source)
        ("??/", "x"),
    ],
)
def test_odd_names_are_mapped(tmp_path, name, mapped):
    values = np.arange(6, dtype=np.float32).reshape(2, 3)
    path = crafted(tmp_path, ".safetensors", {"pe": values, name: values + 10})
    code, _, err = run("convert", str(path), str(tmp_path / "out.h"))
    assert code == 0, err
    assert (tmp_path / "out.h").read_bytes().isascii()
    (tmp_path / "main.c").write_text(MAIN.format(define="", symbol=mapped))
    assert build_and_run(tmp_path, ["main.c"], "-std=c89", "-Wpedantic") == "5 13\n"  # trigraphs are live in C89


@pytest.mark.parametrize("output", ["h", "c", "bin"])
def test_names_that_collide_after_mapping_are_refused(tmp_path, output):
    values = np.zeros((2, 2), np.float32)
    path = crafted(tmp_path, ".safetensors", {"a-b": values, "a_b": values})
    assert_refused(["convert", str(path), str(tmp_path / f"out.{output}")], "'a-b'", "'a_b'", "a_b")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.safetensors"]


def test_a_symbol_cannot_be_a_macro(tmp_path):
    values = np.zeros((2, 2), np.float32)
    path = crafted(tmp_path, ".safetensors", {"SEQ_LEN": values, "b": values})
    assert_refused(["convert", str(path), str(tmp_path / "OUT.h"), "--name", "OUT"], "OUT_SEQ_LEN")
    assert not (tmp_path / "OUT.h").exists()


@pytest.mark.client
def test_axis_names_become_mapped_macros(tmp_path):
    values = np.arange(6, dtype=np.float32).reshape(2, 3)
    table = Table("array", {"pe": values}, axes={"pe": (PAYLOAD, "d\n#error")})
    posenc_cli.save(table, tmp_path / "out.h")
    header = (tmp_path / "out.h").read_text()
    assert f"#define OUT_{MAPPED.upper()} 2\n" in header and "#define OUT_D_ERROR 3\n" in header
    (tmp_path / "main.c").write_text('#include "out.h"\nint main(void) { return (int)out[1][2] - 5; }\n')
    assert build_and_run(tmp_path, ["main.c"], "-Wpedantic") == ""
    clash = Table("array", {"pe": values}, axes={"pe": ("seq-len", "seq_len")})
    with pytest.raises(FormatError, match="'seq-len' and 'seq_len' both become the C macro OUT_SEQ_LEN"):
        posenc_cli.save(clash, tmp_path / "out.h")


def test_names_longer_than_c_keeps_are_refused(tmp_path):
    values = np.zeros((2, 2), np.float32)
    path = crafted(tmp_path, ".safetensors", {"a": values, "k" * 60: values})
    assert_refused(["convert", str(path), str(tmp_path / "out.h"), "--name", "n" * 20], "63")
    code, _, err = run(
        "generate",
        "-n",
        "2",
        "-d",
        "2",
        "--dtype",
        "int8",
        "--scale",
        "0.01",
        "--name",
        "t" * 53,
        "-o",
        str(tmp_path / "q.h"),
    )
    assert code == 2 and "ZERO_POINT" in err and "63" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.safetensors"]


@pytest.mark.client
def test_comment_text_cannot_leave_the_comment(tmp_path):
    """Parameters and kinds are free text: none of it may end the comment, splice a line or hide characters."""
    texts = ["*/ int broken = ; /*", "??/", "a\\", "x\r\n#error", "\x0c\x1b[31m", "\u202egnp.exe", "* /*/ **/", "???/"]
    params = {f"p{i}": text for i, text in enumerate(texts)}
    table = Table("ab*/c??/\\", {"pe": np.full((2, 2), 0.5, np.float32)}, params)
    posenc_cli.save(table, tmp_path / "pe.h", command="posenc x --note '*/ #error \\'")
    data = (tmp_path / "pe.h").read_bytes()
    comment = data[: data.index(b" */\n")]
    assert b"*/" not in comment and b"??" not in comment and data.isascii()
    assert all(not line.endswith(b"\\") for line in data.splitlines())
    (tmp_path / "main.c").write_text('#include "pe.h"\nint main(void) { return pe[1][1] == 0.5f ? 0 : 1; }\n')
    for std in ("c89", "c99"):  # trigraphs are live in C89
        build_and_run(tmp_path, ["main.c"], f"-std={std}", "-Wpedantic")
    back = posenc_cli.load(tmp_path / "pe.h")  # the escaped text is read back, and re-written to the same bytes
    assert back.params["p0"] == "* / int broken = ; / *" and back.params["p2"] == "a\\x5c"


@pytest.mark.parametrize("bad", ['a"b', "a\\b", "a'b", "a??b", "a\nb", "a\u202eb"])
@pytest.mark.parametrize("suffix", [".c", ".bin"])
def test_file_names_in_source_are_refused_unless_plain(tmp_path, bad, suffix):
    code, _, err = run("generate", "-n", "2", "-d", "2", "-o", str(tmp_path / f"{bad}{suffix}"))
    assert code == 2 and "#include" in err, err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.client
def test_file_names_with_spaces_and_hashes_build(tmp_path):
    for name in ("my table.c", "t#1.bin"):
        assert run("generate", "-n", "4", "-d", "4", "-o", str(tmp_path / name))[0] == 0
    (tmp_path / "main.c").write_text(
        '#define T_1_INCBIN\n#include "t#1.h"\n#include "my table.h"\n'
        "int main(void) { return my_table[1][0] == t_1[1][0] ? 0 : 1; }\n"
    )
    build_and_run(tmp_path, ["main.c", "my table.c"], "-Wpedantic")


# ------------------------------------------------------------------------------- 2. files posenc did not write
GENUINE = "static const float pe[PE_SEQ_LEN][PE_D_MODEL] POSENC_TABLE_ATTRIBUTE = {\n"
OTHER = "static const float pe[PE_SEQ_LEN][PE_D_MODEL] = {{9.0f, 9.0f}, {9.0f, 9.0f}};\n"


def definition(text: str) -> str:
    start = text.index(GENUINE)
    return text[start : text.index("};\n", start) + 3]


ATTACKS = {
    "if-0": lambda t: t.replace(definition(t), f"#if 0\n{definition(t)}#else\n{OTHER}#endif\n"),
    "define": lambda t: t.replace(
        "#endif /* POSENC_PE_H */",
        "static const float evil[2][2] = {{9.0f, 9.0f}, {9.0f, 9.0f}};\n#define pe evil\n#endif",
    ),
    "constructor": lambda t: t.replace(
        "#endif /* POSENC_PE_H */",
        '__attribute__((constructor)) static void evil(void) { extern int puts(const char *); puts("PWNED"); }\n'
        "#endif /* POSENC_PE_H */",
    ),
    "second-definition": lambda t: t.replace(
        definition(t), f"#if defined(__GNUC__)\n{OTHER}#else\n{definition(t)}#endif\n"
    ),
    "include": lambda t: t.replace("#define PE_SEQ_LEN", '#include "/etc/passwd"\n#define PE_SEQ_LEN'),
    "trailing": lambda t: t + "static const float extra = 1.0f;\n",
    "splice": lambda t: t.replace(" * Needs: C89.\n", " * Needs: C89.\\\n"),
    "line-comment-splice": lambda t: t.replace("#define PE_D_MODEL 2\n", "#define PE_D_MODEL 2 // \\\n"),
    "pragma": lambda t: t.replace("#ifndef POSENC_PE_H", "#pragma GCC poison x\n#ifndef POSENC_PE_H"),
    "respelled": lambda t: t.replace("0.0f, 1.0f", "0.0f, 1.00f", 1),
    "crlf": lambda t: t.replace("\n", "\r\n"),
    "nul": lambda t: t + "\0",
}
PROGRAM = '#include <stdio.h>\n#include "pe.h"\nint main(void) { printf("%g\\n", (double)pe[1][1]); return 0; }\n'


@pytest.fixture
def genuine(tmp_path) -> str:
    assert run("generate", "-n", "2", "-d", "2", "-o", str(tmp_path / "pe.h"))[0] == 0
    assert run("verify", str(tmp_path / "pe.h"))[0] == 0
    return (tmp_path / "pe.h").read_text()


@pytest.mark.parametrize("attack", ATTACKS)
def test_edited_headers_are_refused_by_verify_and_inspect(tmp_path, genuine, attack):
    edited = ATTACKS[attack](genuine)
    assert edited != genuine
    (tmp_path / "pe.h").write_text(edited, newline="")
    for command in ("verify", "inspect"):
        line = assert_refused([command, str(tmp_path / "pe.h")], "pe.h")
        assert "a C file posenc did not write" in line, line


@pytest.mark.client
@pytest.mark.parametrize(("attack", "printed"), [("if-0", "9\n"), ("define", "9\n"), ("second-definition", "9\n")])
def test_the_attacks_compile_to_other_values(tmp_path, genuine, attack, printed):
    """gcc honours the edits that posenc refuses: the compiled value is not the table's (0.540302 at [1][1])."""
    (tmp_path / "main.c").write_text(PROGRAM)
    (tmp_path / "pe.h").write_text(genuine)
    assert build_and_run(tmp_path, ["main.c"]) == "0.540302\n"
    (tmp_path / "pe.h").write_text(ATTACKS[attack](genuine))
    assert build_and_run(tmp_path, ["main.c"], "-Wno-unused-variable") == printed


@pytest.mark.client
def test_the_constructor_attack_runs_under_gcc(tmp_path, genuine):
    (tmp_path / "main.c").write_text(PROGRAM)
    (tmp_path / "pe.h").write_text(ATTACKS["constructor"](genuine))
    assert build_and_run(tmp_path, ["main.c"]) == "PWNED\n0.540302\n"


def test_edited_pair_headers_are_refused(tmp_path):
    assert run("generate", "-n", "2", "-d", "2", "-o", str(tmp_path / "pe.c"))[0] == 0
    assert run("generate", "-n", "2", "-d", "2", "-o", str(tmp_path / "raw.bin"))[0] == 0
    header = (tmp_path / "pe.h").read_text()
    (tmp_path / "pe.h").write_text(
        header.replace("#endif /* POSENC_PE_H */", "#define pe other\n#endif /* POSENC_PE_H */")
    )
    assert_refused(["verify", str(tmp_path / "pe.c")], "posenc did not write", "#define pe other")
    raw = (tmp_path / "raw.h").read_text()
    (tmp_path / "raw.h").write_text(raw.replace('    ".previous\\n"\n', '    ".global evil\\n"\n    ".previous\\n"\n'))
    assert_refused(["inspect", str(tmp_path / "raw.bin")], "posenc did not write", ".global evil")


def test_an_edited_canonical_value_is_what_verify_reports(tmp_path, genuine):
    """A value changed to another literal posenc would write is read as the compiler reads it: verify finds it."""
    (tmp_path / "pe.h").write_text(genuine.replace("0.5403023f", "0.5f"))
    code, out, _ = run("verify", str(tmp_path / "pe.h"))
    assert code == 1 and "0.5" in out + _


def test_reading_is_bounded_by_the_memory_limit(tmp_path):
    for name in ("text.h", "pe.c", "raw.bin"):
        assert run("generate", "-n", "512", "-d", "64", "-o", str(tmp_path / name))[0] == 0
    for name in ("text.h", "pe.c", "raw.bin"):
        assert_refused(["inspect", "--max-memory", "64K", str(tmp_path / name)], "needs", "--max-memory")


# ------------------------------------------------------------------------------------------------ 3. torn pairs
def pair(tmp_path: Path, sub: str, suffix: str, *args: str) -> Path:
    (tmp_path / sub).mkdir()
    assert run("generate", *args, "-o", str(tmp_path / sub / f"pe{suffix}"))[0] == 0
    return tmp_path / sub


USE = (
    '#include <stdio.h>\n{define}#include "pe.h"\n'
    'int main(void) {{ printf("%d\\n", (int)(sizeof pe / sizeof pe[0])); return 0; }}\n'
)


@pytest.mark.client
@pytest.mark.parametrize(("mine", "theirs"), [(("-n", "8"), ("-n", "16")), (("-n", "16"), ("-n", "8"))])
def test_a_torn_c_pair_does_not_build_and_is_refused(tmp_path, mine, theirs):
    a = pair(tmp_path, "a", ".c", *mine, "-d", "4")
    b = pair(tmp_path, "b", ".c", *theirs, "-d", "4")
    (a / "use.c").write_text(USE.format(define=""))
    assert build_and_run(a, ["use.c", "pe.c"]) == f"{mine[1]}\n"
    shutil.copy(b / "pe.h", a / "pe.h")  # the .c of one write, the .h of the other
    built = build(a, ["use.c", "pe.c"])
    assert built.returncode != 0 and "#error" in built.stderr and "torn pair" in built.stderr
    for command in ("verify", "inspect"):
        assert_refused(
            [command, str(a / "pe.c")],
            "a torn pair: pe.c and pe.h hold different tables",
            f"{mine[1]} x 4 and {theirs[1]} x 4",
        )


@pytest.mark.client
def test_a_torn_c_pair_of_one_shape_is_found_by_its_identity(tmp_path):
    a = pair(tmp_path, "a", ".c", "-n", "8", "-d", "4")
    b = pair(tmp_path, "b", ".c", "-n", "8", "-d", "4", "--base", "500")
    c = pair(tmp_path, "c", ".c", "-n", "8", "-d", "4", "--align", "64")  # the options are part of the identity
    for other in (b, c):
        shutil.copy(other / "pe.h", a / "pe.h")
        built = build(a, ["pe.c"], "-c")
        assert built.returncode != 0 and "torn pair" in built.stderr
        assert_refused(["verify", str(a / "pe.c")], "a torn pair: pe.c and pe.h", "table identities 0x")
    assert run("generate", "-n", "8", "-d", "4", "-o", str(a / "pe.c"))[0] == 0
    assert run("verify", str(a / "pe.c"))[0] == 0 and build(a, ["pe.c"], "-c").returncode == 0


@pytest.mark.client
@pytest.mark.parametrize(("mine", "theirs"), [("8", "16"), ("16", "8")])
@pytest.mark.parametrize("compiler", ["gcc", "clang"])
def test_a_torn_bin_pair_does_not_assemble_and_is_refused(tmp_path, mine, theirs, compiler):
    a = pair(tmp_path, "a", ".bin", "-n", mine, "-d", "4")
    b = pair(tmp_path, "b", ".bin", "-n", theirs, "-d", "4")
    (a / "use.c").write_text(USE.format(define="#define PE_INCBIN\n"))
    assert build_and_run(a, ["use.c"], compiler=compiler) == f"{mine}\n"
    shutil.copy(b / "pe.h", a / "pe.h")  # the .bin of one write, the .h of the other: another size
    built = build(a, ["use.c"], compiler=compiler)
    assert built.returncode != 0 and (".org" in built.stderr or "invalid for file size" in built.stderr), built.stderr
    for command in ("verify", "inspect"):
        assert_refused([command, str(a / "pe.bin")], "a torn pair: pe.bin and pe.h hold different tables", "bytes")


def test_a_torn_bin_pair_of_one_size_is_found_by_its_identity(tmp_path):
    a = pair(tmp_path, "a", ".bin", "-n", "8", "-d", "4")
    b = pair(tmp_path, "b", ".bin", "-n", "8", "-d", "4", "--base", "500")
    shutil.copy(b / "pe.h", a / "pe.h")
    for command in ("verify", "inspect"):
        assert_refused([command, str(a / "pe.bin")], "a torn pair: pe.bin and pe.h", "table identity 0x")


def test_pair_headers_carry_the_identity_their_sources_check(tmp_path):
    a = pair(tmp_path, "a", ".c", "-n", "8", "-d", "4")
    source, header = (a / "pe.c").read_text(), (a / "pe.h").read_text()
    identity = header.split("#define PE_TABLE_ID ")[1].split("\n")[0]
    assert len(identity) == 18 and identity.startswith("0x")
    assert f"#if !defined(PE_TABLE_ID) || PE_TABLE_ID != {identity}\n#error" in source
    again = pair(tmp_path, "again", ".c", "-n", "8", "-d", "4")
    assert (again / "pe.h").read_text().split("#define PE_TABLE_ID ")[1].split("\n")[0] == identity  # reproducible
