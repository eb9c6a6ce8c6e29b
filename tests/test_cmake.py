"""posenc's CMake package with real CMake: the installed package builds a project outside any checkout, the
example builds, prints posenc's tables, and rebuilds only what changed.

The CMake files live in the package (posenc_cli/cmake/: posenc-config.cmake, posenc-config-version.cmake,
posenc.cmake); ``posenc --cmake-dir`` prints their folder and cmake/posenc.cmake in the checkout includes them.
One module-scoped fixture builds a wheel of this checkout and installs it in a fresh virtual environment, so the
package is tested as users get it: ``find_package(posenc CONFIG)`` from site-packages, the venv's own posenc found
beside it (PATH holds no posenc, only a decoy that must never run). The other tests run posenc through a wrapper
script (``python -m posenc_cli`` of this checkout) that logs every call, so "posenc did not run" is checked
directly, besides the time stamps of the generated files and of the program, and the build log.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import posenc_cli
from posenc_cli.cli import cli
from posenc_cli.encodings.presets import PRESETS

from .conftest import require_tool, touch_later

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "cmake"
MODULE = REPO / "cmake" / "posenc.cmake"  # the checkout's one-line include of the packaged module
PACKAGE_DIR = REPO / "posenc_cli" / "cmake"
CMAKE_FILES = ("posenc-config-version.cmake", "posenc-config.cmake", "posenc.cmake")

# The example's second table, fixed in examples/cmake/CMakeLists.txt, and its manifest's table.
LONG = {"seq_len": 16, "d_model": 8, "base": 500000.0, "dtype": "float64"}
ROPE = {"seq_len": 16, "head_dim": 8, "theta": 500000.0}

LINE = re.compile(r"^(pe|pe_long|rope_cos)\[(\d+)\]\[(\d+)\] = (\S+) 0x([0-9a-f]+)$")


def _wrapper(path: Path, log: Path, body: str) -> Path:
    path.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$*\" >> {shlex.quote(str(log))}\n{body}")
    path.chmod(0o755)
    return path


@pytest.fixture
def posenc_wrapper(tmp_path: Path) -> tuple[Path, Path]:
    """An executable that runs this checkout's posenc_cli and appends its arguments to a log; (script, log)."""
    log = tmp_path / "posenc-calls.log"
    pythonpath = shlex.quote(str(REPO))
    body = (
        f"PYTHONPATH={pythonpath}${{PYTHONPATH:+:$PYTHONPATH}}\nexport PYTHONPATH\n"
        f'exec {shlex.quote(sys.executable)} -m posenc_cli "$@"\n'
    )
    return _wrapper(tmp_path / "posenc-wrapper", log, body), log


def path_without_posenc(*first: Path) -> str:
    """PATH without the folders that hold a ``posenc`` program (the test's own venv among them), ``first`` first:
    so that only what a test sets up can be found."""
    kept = [d for d in os.environ.get("PATH", "").split(os.pathsep) if d and not (Path(d) / "posenc").exists()]
    return os.pathsep.join([*map(str, first), *kept])


def clean_env(*first: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = path_without_posenc(*first)
    env.pop("PYTHONPATH", None)
    return env


def dev_cmake_dir() -> Path:
    """``posenc --cmake-dir`` of the environment running the tests (its console script, beside its python)."""
    script = Path(sys.executable).parent / "posenc"
    assert script.exists(), f"no posenc console script beside {sys.executable}: install posenc in this environment"
    result = subprocess.run([str(script), "--cmake-dir"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    return Path(result.stdout.rstrip("\n"))


@dataclass
class Build:
    """A CMake build tree of a project, with helpers that run cmake and check their result."""

    source: Path
    binary: Path
    generator: str
    env: dict[str, str] = field(default_factory=clean_env)

    def configure(self, *defines: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        cmake = require_tool("cmake")
        command = [cmake, "-S", str(self.source), "-B", str(self.binary), "-G", self.generator, *defines]
        result = subprocess.run(command, capture_output=True, text=True, env=self.env, timeout=300)
        if check:
            assert result.returncode == 0, result.stdout + result.stderr
        return result

    def build(self, *options: str) -> str:
        cmake = require_tool("cmake")
        result = subprocess.run(
            [cmake, "--build", str(self.binary), "--parallel", "4", *options],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=300,
        )
        assert result.returncode == 0, result.stdout + result.stderr
        return result.stdout + result.stderr

    def run(self, program: str = "posenc_example") -> str:
        path = self.binary / program
        return subprocess.run([str(path)], capture_output=True, text=True, check=True, timeout=30).stdout

    def outputs(self) -> list[Path]:
        """Every file whose time stamp says whether something was regenerated, recompiled or relinked."""
        generated = [self.binary / "posenc" / name for name in ("pe.h", "pe_long.c", "pe_long.h", "tables/rope.h")]
        objects = sorted(self.binary.glob("CMakeFiles/posenc_example.dir/**/*.o"))
        assert len(objects) == 2, objects
        return [*generated, *objects, self.binary / "posenc_example"]

    def stamps(self) -> dict[str, int]:
        return {str(p.relative_to(self.binary)): p.stat().st_mtime_ns for p in self.outputs()}


def _check_generator(generator: str) -> None:
    require_tool("ninja" if generator == "Ninja" else "make")
    require_tool("gcc")


@pytest.fixture(params=["Unix Makefiles", "Ninja"], ids=["make", "ninja"])
def example(request, tmp_path: Path, posenc_wrapper: tuple[Path, Path]) -> tuple[Build, Path]:
    """The example configured through find_package (posenc_DIR from ``posenc --cmake-dir`` of the test's
    environment), with the wrapper as POSENC_EXECUTABLE, and built once; (build, wrapper log)."""
    _check_generator(request.param)
    script, log = posenc_wrapper
    build = Build(EXAMPLE, tmp_path / "build", request.param)
    configured = build.configure(f"-Dposenc_DIR={dev_cmake_dir()}", f"-DPOSENC_EXECUTABLE={script}")
    assert f"posenc: {script} (posenc {posenc_cli.__version__})" in configured.stdout
    output = build.build()
    assert "Generating posenc table posenc/pe.h (64 x 32 float32)" in output
    assert "Generating posenc table posenc/pe_long.c (16 x 8 float64)" in output
    assert "Building posenc manifest posenc.toml (1 file)" in output
    return build, log


def generate_calls(log: Path) -> list[str]:
    return [line for line in log.read_text().splitlines() if line.startswith("generate ")]


def build_calls(log: Path) -> list[str]:
    """The `posenc build` runs of posenc_add_manifest's rule (its --list-outputs at configure time left out)."""
    lines = log.read_text().splitlines()
    return [line for line in lines if line.startswith("build ") and "--list-outputs" not in line]


def expected(seq_len: int, d_model: int, tmp_path: Path, **kwargs) -> np.ndarray:
    """The table as posenc_cli.save writes it to a .npy, read back with numpy."""
    path = tmp_path / f"expected-{seq_len}x{d_model}-{kwargs.get('dtype', 'float32')}.npy"
    posenc_cli.save(posenc_cli.generate(seq_len, d_model, **kwargs), path)
    return np.load(path, allow_pickle=False)


def check_printout(text: str, seq_len: int, d_model: int, tmp_path: Path) -> None:
    """The program's dimensions and values are those of the .npy: same bits, and a decimal that reads back to them."""
    lines = text.splitlines()
    assert f"pe: {seq_len} x {d_model}" in lines
    assert f"pe_long: {LONG['seq_len']} x {LONG['d_model']}" in lines
    assert f"rope_cos: {ROPE['seq_len']} x {ROPE['head_dim']}" in lines
    rope = tmp_path / "expected-rope.npz"
    posenc_cli.save(posenc_cli.rope(ROPE["seq_len"], ROPE["head_dim"], theta=ROPE["theta"]), rope)
    with np.load(rope, allow_pickle=False) as npz:
        rope_cos = npz["cos"]
    tables = {
        "pe": (expected(seq_len, d_model, tmp_path), np.uint32),
        "pe_long": (expected(tmp_path=tmp_path, **LONG), np.uint64),
        "rope_cos": (rope_cos, np.uint32),
    }
    seen: dict[str, set[tuple[int, int]]] = {name: set() for name in tables}
    for line in lines:
        match = LINE.match(line)
        if match is None:
            continue
        name, pos, col, decimal, bits = match.group(1), int(match.group(2)), int(match.group(3)), *match.group(4, 5)
        table, uint = tables[name]
        value = table[pos, col]
        assert int(bits, 16) == int(value.view(uint)), line
        assert table.dtype.type(decimal).tobytes() == value.tobytes(), line
        seen[name].add((pos, col))
    # Rows 0, 1 and the last, every column (the last row only of rope_cos).
    assert seen["pe"] == {(p, c) for p in (0, 1, seq_len - 1) for c in range(d_model)}
    assert seen["pe_long"] == {(p, c) for p in (0, 1, LONG["seq_len"] - 1) for c in range(LONG["d_model"])}
    assert seen["rope_cos"] == {(ROPE["seq_len"] - 1, c) for c in range(ROPE["head_dim"])}


def assert_nothing_rebuilt(build: Build, log: Path, stamps: dict[str, int], calls: int) -> None:
    output = build.build()
    assert "posenc table" not in output and "Building" not in output and "Linking" not in output, output
    assert len(generate_calls(log)) == calls, generate_calls(log)
    assert build.stamps() == stamps


@pytest.mark.client
def test_example_prints_the_table_and_a_second_build_does_nothing(example, tmp_path):
    build, log = example
    check_printout(build.run(), 64, 32, tmp_path)
    assert len(generate_calls(log)) == 2
    # The header is what `posenc generate` writes, and the .c/.h pair has the table in the .c, declared in the .h.
    header = (build.binary / "posenc" / "pe.h").read_text()
    assert "static const float pe[PE_SEQ_LEN][PE_D_MODEL]" in header and "#define PE_SEQ_LEN 64" in header
    definition = (build.binary / "posenc" / "pe_long.c").read_text()
    assert "const double pe_long[PE_LONG_SEQ_LEN][PE_LONG_D_MODEL] POSENC_TABLE_ATTRIBUTE = {" in definition
    assert "extern const double pe_long[" in (build.binary / "posenc" / "pe_long.h").read_text()

    stamps = build.stamps()
    assert_nothing_rebuilt(build, log, stamps, calls=2)
    # Configuring again with the same values changes nothing either.
    build.configure()
    assert_nothing_rebuilt(build, log, stamps, calls=2)


@pytest.mark.client
def test_changing_a_parameter_regenerates_only_that_table(example, tmp_path):
    build, log = example
    before = build.stamps()
    build.configure("-DEXAMPLE_SEQ_LEN=100")
    output = build.build()
    assert "Generating posenc table posenc/pe.h (100 x 32 float32)" in output
    # The other table is neither regenerated nor recompiled.
    assert "posenc table posenc/pe_long" not in output and "pe_long.c.o" not in output, output
    calls = generate_calls(log)
    assert len(calls) == 3 and calls[-1].startswith("generate -n 100 -d 32 "), calls
    after = build.stamps()
    for unchanged in ("posenc/pe_long.c", "posenc/pe_long.h"):
        assert after[unchanged] == before[unchanged]
    for changed in ("posenc/pe.h", "posenc_example"):
        assert after[changed] > before[changed]
    check_printout(build.run(), 100, 32, tmp_path)
    assert_nothing_rebuilt(build, log, after, calls=3)

    # Another parameter (D_MODEL), and back: each change regenerates, and the program follows.
    build.configure("-DEXAMPLE_D_MODEL=6")
    build.build()
    check_printout(build.run(), 100, 6, tmp_path)
    build.configure("-DEXAMPLE_SEQ_LEN=64", "-DEXAMPLE_D_MODEL=32")
    build.build()
    check_printout(build.run(), 64, 32, tmp_path)
    assert len(generate_calls(log)) == 5


@pytest.mark.client
def test_a_reinstalled_posenc_reruns_once_then_nothing(example):
    """posenc's program is a dependency: touching it (as a reinstall does) reruns posenc once, and only once."""
    build, log = example
    before = build.stamps()
    os.utime(build.binary.parent / "posenc-wrapper")
    output = build.build()
    assert len(generate_calls(log)) == 4, output
    assert len(build_calls(log)) == 2 and "Building posenc manifest posenc.toml" in output, output
    after = build.stamps()
    if build.generator == "Ninja":
        # Ninja restats the outputs: posenc wrote identical bytes, left them untouched, so nothing is recompiled.
        assert after == before and "Building C" not in output and "Linking" not in output, output
    else:
        # make compares time stamps only: the outputs are touched (or posenc would run at every build).
        assert all(after[key] > before[key] for key in before), (before, after)
    assert_nothing_rebuilt(build, log, after, calls=4)


@pytest.mark.client
def test_copied_example_with_the_checkouts_package_falls_back_to_python(tmp_path):
    """A copy of the example outside the repository, with posenc_DIR the checkout's posenc_cli/cmake (no posenc
    on PATH, a broken POSENC_EXECUTABLE): posenc is found as python -m posenc_cli, whose --cmake-dir is that folder."""
    _check_generator("Unix Makefiles")
    source = tmp_path / "example"
    shutil.copytree(EXAMPLE, source)
    broken = _wrapper(tmp_path / "broken-posenc", tmp_path / "broken.log", "exit 3\n")
    build = Build(source, tmp_path / "build", "Unix Makefiles")
    build.env["PYTHONPATH"] = str(REPO)
    configured = build.configure(
        f"-Dposenc_DIR={PACKAGE_DIR}",
        f"-DPOSENC_EXECUTABLE={broken}",
        f"-DPython3_EXECUTABLE={sys.executable}",
    )
    assert f"POSENC_EXECUTABLE={broken} does not run" in " ".join(configured.stderr.split())
    assert f"posenc: {sys.executable} -m posenc_cli (posenc {posenc_cli.__version__})" in configured.stdout
    build.build()
    check_printout(build.run(), 64, 32, tmp_path)
    assert (tmp_path / "broken.log").read_text() == "--version\n"  # probed once at configure time, never run after


@pytest.mark.client
def test_a_table_shared_by_a_library_and_programs_in_a_cxx_project(tmp_path, posenc_wrapper):
    """One table, generated once (even by a parallel make) for a library, a program that links it and a program
    that asks for the same table again (through an ALIAS); FORMAT c compiles as C++ in a project without C."""
    _check_generator("Unix Makefiles")
    require_tool("g++")
    script, log = posenc_wrapper
    source = tmp_path / "project"
    source.mkdir()
    (source / "main.cpp").write_text(
        '#include <cstdio>\n#include "shared.h"\n'
        'int main() { std::printf("%d x %d %a\\n", SHARED_SEQ_LEN, SHARED_D_MODEL, shared[1][0]); return 0; }\n'
    )
    (source / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.16)\nproject(cxx_only CXX)\n"
        f'include("{MODULE.as_posix()}")\n'
        "add_library(tables STATIC)\n"
        "posenc_add_table(tables SEQ_LEN 8 D_MODEL 4 NAME shared FORMAT c OUTPUT_DIR tables)\n"
        "add_executable(one main.cpp)\ntarget_link_libraries(one PRIVATE tables)\n"
        "add_executable(two main.cpp)\nadd_executable(cxx::two ALIAS two)\n"
        "posenc_add_table(cxx::two SEQ_LEN 8 D_MODEL 4 NAME shared FORMAT c OUTPUT_DIR tables)\n"
    )
    build = Build(source, tmp_path / "build", "Unix Makefiles")
    build.configure(f"-DPOSENC_EXECUTABLE={script}")
    output = build.build()
    assert output.count("Generating posenc table tables/shared.c (8 x 4 float32)") == 1, output
    assert len(generate_calls(log)) == 1
    value = float(posenc_cli.sinusoidal(8, 4)[1, 0])  # printed exactly, with %a
    for program in ("one", "two"):
        printed = subprocess.run([str(build.binary / program)], capture_output=True, text=True, check=True).stdout
        rows, x, cols, hexfloat = printed.split()
        assert (rows, x, cols) == ("8", "x", "4") and float.fromhex(hexfloat) == value, printed
    files = [build.binary / "tables" / "shared.c", build.binary / "tables" / "shared.h", build.binary / "one"]
    files += [build.binary / "two", build.binary / "libtables.a", *build.binary.glob("CMakeFiles/*.dir/**/*.o")]
    stamps = {p: p.stat().st_mtime_ns for p in files}
    output = build.build()
    assert "posenc table" not in output and "Building" not in output and "Linking" not in output, output
    assert {p: p.stat().st_mtime_ns for p in files} == stamps and len(generate_calls(log)) == 1


@pytest.mark.client
@pytest.mark.parametrize("generator", ["Unix Makefiles", "Ninja"], ids=["make", "ninja"])
def test_cxx_tables_in_a_c_and_cxx_project_compile_as_cxx(tmp_path, posenc_wrapper, generator):
    """project(x C CXX), the default languages: a table written with --lang c++ (FORMAT c, in a namespace) keeps
    its names, pe.c and pe.h, and its .c is compiled by the C++ compiler (the C compiler stops at <cstddef>); a C
    table of the same program stays C; --lang=c++ is read too. The program prints posenc's values."""
    _check_generator(generator)
    require_tool("g++")
    script, _ = posenc_wrapper
    source = tmp_path / "project"
    source.mkdir()
    (source / "main.cpp").write_text(
        '#include <cstdio>\n#include "pe.h"\n#include "hdr.h"\n#include "c_table.h"\n'
        'int main() { std::printf("%a %a %a\\n", (double)model::pe[1][0], (double)hdr[2][1], '
        "(double)c_table[3][2]); return 0; }\n"
    )
    (source / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.16)\nproject(mixed C CXX)\n"
        f'include("{MODULE.as_posix()}")\nadd_executable(app main.cpp)\n'
        "posenc_add_table(app SEQ_LEN 8 D_MODEL 4 FORMAT c ARGS --lang c++ --namespace model)\n"
        "posenc_add_table(app SEQ_LEN 8 D_MODEL 4 NAME hdr ARGS --lang=c++)\n"
        "posenc_add_table(app SEQ_LEN 8 D_MODEL 4 NAME c_table FORMAT c)\n"
    )
    build = Build(source, tmp_path / "build", generator)
    build.configure(f"-DPOSENC_EXECUTABLE={script}")
    output = build.build("--verbose")
    generated = build.binary / "posenc"
    assert sorted(p.name for p in generated.iterdir()) == ["c_table.c", "c_table.h", "hdr.h", "pe.c", "pe.h"]
    assert "namespace model" in (generated / "pe.c").read_text()
    # Which compiler compiled which .c: the build's own command lines.
    cache = (build.binary / "CMakeCache.txt").read_text()
    compilers = dict(re.findall(r"^CMAKE_(C|CXX)_COMPILER:\w+=(.+)$", cache, re.MULTILINE))
    compiled = {
        name: re.sub(r"^\[\d+/\d+\] ", "", line).split()[0]
        for line in output.splitlines()
        for name in ("pe.c", "c_table.c")
        if line.rstrip().endswith(f"posenc/{name}") and " -c " in line
    }
    assert compiled == {"pe.c": compilers["CXX"], "c_table.c": compilers["C"]}, (compiled, output)
    printed = subprocess.run([str(build.binary / "app")], capture_output=True, text=True, check=True).stdout.split()
    table = posenc_cli.sinusoidal(8, 4)
    assert [float.fromhex(v) for v in printed] == [float(table[1, 0]), float(table[2, 1]), float(table[3, 2])]


@pytest.mark.client
def test_no_posenc_of_this_package_is_a_clear_configure_error(tmp_path):
    """find_package fails, saying what it tried: a broken POSENC_EXECUTABLE and Python, and a posenc on PATH that
    belongs to another installation (its --cmake-dir is elsewhere), which is reported and never run for a table."""
    _check_generator("Unix Makefiles")
    broken = _wrapper(tmp_path / "broken", tmp_path / "broken.log", "exit 3\n")
    decoys = tmp_path / "bin"
    decoys.mkdir()
    elsewhere = tmp_path / "elsewhere" / "posenc_cli" / "cmake"
    elsewhere.mkdir(parents=True)
    decoy_log = tmp_path / "decoy.log"
    _wrapper(decoys / "posenc", decoy_log, f'case "$1" in --cmake-dir) echo {shlex.quote(str(elsewhere))};; '
             f"--version) echo 'posenc {posenc_cli.__version__}';; *) exit 9;; esac\n")  # fmt: skip
    build = Build(EXAMPLE, tmp_path / "build", "Unix Makefiles", clean_env(decoys))
    result = build.configure(
        f"-Dposenc_DIR={PACKAGE_DIR}", f"-DPOSENC_EXECUTABLE={broken}", f"-DPython3_EXECUTABLE={broken}", check=False
    )
    assert result.returncode != 0
    message = " ".join(result.stderr.split())
    assert "but it set posenc_FOUND to FALSE" in message
    assert f"cannot run the posenc of {PACKAGE_DIR}. Tried:" in message
    assert f"POSENC_EXECUTABLE={broken}: `{broken} --version` failed (exit code 3)" in message
    assert "is not in an installed package's site-packages folder" in message
    assert (
        f"posenc on PATH, {decoys / 'posenc'}: it belongs to another posenc installation (its --cmake-dir is "
        f"{elsewhere}, not {PACKAGE_DIR})" in message
    )
    assert f"Python3_EXECUTABLE={broken}: `{broken} -m posenc_cli --cmake-dir` failed (exit code 3)" in message
    assert "-DPOSENC_EXECUTABLE=" in message and "-DPython3_EXECUTABLE=" in message
    assert decoy_log.read_text() == "--cmake-dir\n"  # asked whose it is, nothing else


@pytest.mark.client
@pytest.mark.parametrize(
    ("call", "fragment"),
    [
        pytest.param("posenc_add_table(app D_MODEL 8)", "SEQ_LEN is required", id="no-seq-len"),
        pytest.param(
            "posenc_add_table(app SEQ_LEN 0 D_MODEL 8)", "SEQ_LEN must be a positive integer, not '0'", id="zero"
        ),
        pytest.param(
            "posenc_add_table(app SEQ_LEN 16 D_MODEL 8 FORMAT npy)", "FORMAT must be h (one header) or c", id="format"
        ),
        pytest.param(
            "posenc_add_table(app SEQ_LEN 16 D_MODEL 8 NAME pe-table)", "NAME must be a C identifier", id="name"
        ),
        pytest.param("posenc_add_table(app SEQ_LEN 16 D_MODEL 8 BASE ten)", "BASE must be a number > 1", id="base"),
        pytest.param(
            "posenc_add_table(app SEQ_LEN 16 D_MODEL 8 LAYOUT x)", "unknown arguments 'LAYOUT;x'", id="unknown"
        ),
        pytest.param("posenc_add_table(app SEQ_LEN 16 D_MODEL 8 NAME)", "NAME needs a value", id="no-value"),
        pytest.param("posenc_add_table(nosuch SEQ_LEN 16 D_MODEL 8)", "there is no target 'nosuch'", id="no-target"),
        pytest.param(
            "add_library(iface INTERFACE)\nposenc_add_table(iface SEQ_LEN 16 D_MODEL 8)",
            "(it is: INTERFACE_LIBRARY)",
            id="interface-target",
        ),
        pytest.param(
            "add_library(lib STATIC IMPORTED)\nposenc_add_table(lib SEQ_LEN 16 D_MODEL 8)",
            "(it is: imported STATIC_LIBRARY)",
            id="imported-target",
        ),
        pytest.param(
            "posenc_add_table(app SEQ_LEN 16 D_MODEL 8 DTYPE int8)", "DTYPE int8 needs SCALE", id="int8-without-scale"
        ),
        pytest.param(
            "posenc_add_table(app SEQ_LEN 16 D_MODEL 8 SCALE 0.5)",
            "SCALE and ZERO_POINT are for DTYPE int8",
            id="scale",
        ),
        pytest.param("posenc_add_table(app SEQ_LEN 16 D_MODEL 8 DTYPE f32)", "DTYPE must be one of", id="dtype"),
        pytest.param(
            "posenc_add_table(app SEQ_LEN 16 D_MODEL 8 PRESET fairsek)",
            f"PRESET must be one of {', '.join(PRESETS)} (`posenc presets` says what each one is), not 'fairsek'",
            id="preset",
        ),
        pytest.param(
            "posenc_add_table(app SEQ_LEN 16 D_MODEL 8 PRESET vaswani)\n"
            "posenc_add_table(app SEQ_LEN 16 D_MODEL 8 NAME two PRESET Fairseq)",
            "PRESET must be one of vaswani, ",
            id="second-preset",
        ),
        pytest.param(
            "posenc_add_table(app SEQ_LEN 16 D_MODEL 8 ARGS --lang c++)",
            "ARGS --lang c++ makes a C++ table, and this project does not enable C++",
            id="cxx-without-cxx",
        ),
        pytest.param(
            "posenc_add_table(app SEQ_LEN 16 D_MODEL 8)\nposenc_add_table(app SEQ_LEN 32 D_MODEL 8)",
            "is already generated by another posenc_add_table or posenc_add_manifest call",
            id="same-file-twice",
        ),
        ("posenc_add_table(app COMMAND xpos ARGS -n 4)", "COMMAND must be one of"),
        ("posenc_add_table(app COMMAND rope SEQ_LEN 4 ARGS --head-dim 8)", "SEQ_LEN is for COMMAND generate"),
        ("posenc_add_table(app COMMAND rope ARGS -n 4 --head-dim 8 INPUTS missing.json)", "which is not a file"),
        pytest.param("posenc_add_manifest(app nosuch.toml)", "nosuch.toml is not a file", id="no-manifest"),
        pytest.param("posenc_add_manifest(app good.toml OUTPUT_DIR)", "OUTPUT_DIR needs a value", id="manifest-dir"),
        pytest.param(
            "posenc_add_manifest(app good.toml EXTRA x)", "unknown arguments 'EXTRA;x'", id="manifest-arguments"
        ),
        pytest.param("posenc_add_manifest(nosuch good.toml)", "there is no target 'nosuch'", id="manifest-target"),
        pytest.param(
            "posenc_add_manifest(app bad.toml)",
            "bad.toml, table #1 (output 'pe.h'): unknown key 'seq_length' (did you mean 'seq_len'?)",
            id="bad-manifest",
        ),
        pytest.param(
            "posenc_add_manifest(app semicolon.toml)",
            "table #1 (output 'a;b.h'): cannot give 'a;b.h' to a build tool (--list-outputs, --depfile, CMake): "
            "it holds ';'",
            id="semicolon-output",
        ),
        pytest.param(
            "posenc_add_table(app SEQ_LEN 4 D_MODEL 4)\nposenc_add_manifest(app good.toml)",
            "posenc/pe.h is already generated by another posenc_add_table or posenc_add_manifest call",
            id="table-and-manifest",
        ),
    ],
)
def test_invalid_arguments_stop_the_configure_step(tmp_path, posenc_wrapper, call, fragment):
    require_tool("make")
    script, log = posenc_wrapper
    source = tmp_path / "project"
    source.mkdir()
    (source / "app.c").write_text("int main(void) { return 0; }\n")
    entry = '[[table]]\ncommand = "generate"\noutput = "{}"\n{} = 4\nd_model = 4\n'
    (source / "good.toml").write_text(entry.format("pe.h", "seq_len"))
    (source / "bad.toml").write_text(entry.format("pe.h", "seq_length"))
    (source / "semicolon.toml").write_text(entry.format("a;b.h", "seq_len"))
    (source / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.16)\nproject(bad NONE)\n"  # no compiler needed: configuring stops first
        f'include("{MODULE.as_posix()}")\nadd_executable(app app.c)\n{call}\n'
    )
    build = Build(source, tmp_path / "build", "Unix Makefiles")
    result = build.configure(f"-DPOSENC_EXECUTABLE={script}", check=False)
    assert result.returncode != 0
    assert fragment in " ".join(result.stderr.split()), result.stderr


@pytest.mark.client
def test_element_types_presets_and_extra_options_reach_the_table(tmp_path, posenc_wrapper):
    """DTYPE q15 + PRESET + ARGS (--align, --start), int8, fixed18.16: the compiled tables' bytes are posenc's for
    those options, and changing ARGS regenerates the one table."""
    require_tool("make")
    require_tool("gcc")
    script, log = posenc_wrapper
    source = tmp_path / "project"
    source.mkdir()
    (source / "main.c").write_text(
        '#include <stdio.h>\n#include "pe_q15.h"\n#include "pe_i8.h"\n#include "pe_fx.h"\n'
        "int main(void) {\n    const unsigned char *p = (const unsigned char *)pe_q15;\n    unsigned long k;\n"
        '    for (k = 0; k < sizeof(pe_q15); k++) printf("%02x", p[k]);\n    printf("\\n");\n'
        "    p = (const unsigned char *)pe_i8;\n"
        '    for (k = 0; k < sizeof(pe_i8); k++) printf("%02x", p[k]);\n    printf("\\n");\n'
        "    p = (const unsigned char *)pe_fx;\n"
        '    for (k = 0; k < sizeof(pe_fx); k++) printf("%02x", p[k]);\n    printf("\\n");\n'
        "    return ((unsigned long)pe_q15 % 16 != 0) + (PE_I8_ZERO_POINT != -3);\n}\n"
    )
    args = "ARGS --align 16 --start 2"
    (source / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.16)\nproject(types C)\n"
        f'include("{MODULE.as_posix()}")\nadd_executable(types main.c)\n'
        f"posenc_add_table(types SEQ_LEN 12 D_MODEL 9 DTYPE q15 PRESET fairseq NAME pe_q15 {args})\n"
        "posenc_add_table(types SEQ_LEN 5 D_MODEL 4 DTYPE int8 SCALE 0.015625 ZERO_POINT -3 NAME pe_i8)\n"
        "posenc_add_table(types SEQ_LEN 3 D_MODEL 4 DTYPE fixed18.16 NAME pe_fx)\n"
    )
    build = Build(source, tmp_path / "build", "Unix Makefiles")
    build.configure(f"-DPOSENC_EXECUTABLE={script}")
    build.build()
    printed = subprocess.run([str(build.binary / "types")], capture_output=True, text=True, check=True).stdout
    q15, i8, fx = printed.split()
    assert fx == posenc_cli.generate(3, 4, dtype="fixed18.16").array.astype("<i4").tobytes().hex()
    want = posenc_cli.generate(12, 9, dtype="q15", preset="fairseq", start=2.0).array
    assert q15 == want.astype("<i2").tobytes().hex()
    assert i8 == posenc_cli.generate(5, 4, dtype="int8", scale=0.015625, zero_point=-3).array.tobytes().hex()
    calls = len(generate_calls(log))
    (source / "CMakeLists.txt").write_text((source / "CMakeLists.txt").read_text().replace("--start 2", "--start 3"))
    build.configure(f"-DPOSENC_EXECUTABLE={script}")
    build.build()
    assert len(generate_calls(log)) == calls + 1  # only the changed table
    q15 = subprocess.run([str(build.binary / "types")], capture_output=True, text=True, check=True).stdout.split()[0]
    want = posenc_cli.generate(12, 9, dtype="q15", preset="fairseq", start=3.0).array
    assert q15 == want.astype("<i2").tobytes().hex()


@pytest.mark.client
def test_a_rope_table_from_a_config_json_is_rebuilt_when_the_config_changes(tmp_path, posenc_wrapper):
    """COMMAND rope with ARGS --config and the config in INPUTS: the compiled caches are posenc's for the config,
    and editing config.json (a new rope_theta) regenerates them at the next build."""
    import json

    require_tool("make")
    require_tool("gcc")
    script, log = posenc_wrapper
    source = tmp_path / "project"
    (source / "llama").mkdir(parents=True)
    scaling = {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8,
               "rope_type": "llama3"}  # fmt: skip
    config = {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "max_position_embeddings": 32,
              "rope_theta": 500000.0, "rope_scaling": scaling}  # fmt: skip
    (source / "llama" / "config.json").write_text(json.dumps(config))
    (source / "main.c").write_text(
        '#include <stdio.h>\n#include "rope.h"\n'
        "int main(void) {\n    const unsigned char *p = (const unsigned char *)rope_cos;\n    unsigned long k;\n"
        '    for (k = 0; k < sizeof(rope_cos); k++) printf("%02x", p[k]);\n    printf("\\n");\n    return 0;\n}\n'
    )
    (source / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.16)\nproject(cfg C)\n"
        f'include("{MODULE.as_posix()}")\nadd_executable(cfg main.c)\n'
        'posenc_add_table(cfg COMMAND rope NAME rope ARGS --config "${CMAKE_CURRENT_SOURCE_DIR}/llama" -n 8 '
        "INPUTS llama/config.json)\n"
    )
    build = Build(source, tmp_path / "build", "Unix Makefiles")
    build.configure(f"-DPOSENC_EXECUTABLE={script}")
    output = build.build()
    assert "Generating posenc table posenc/rope.h (posenc rope)" in " ".join(str(output).split())

    def printed() -> str:
        return subprocess.run([str(build.binary / "cfg")], capture_output=True, text=True, check=True).stdout.strip()

    want = posenc_cli.rope(8, config=source / "llama").arrays["cos"]
    assert printed() == np.ascontiguousarray(want, "<f4").tobytes().hex()
    config["rope_theta"] = 10000.0
    (source / "llama" / "config.json").write_text(json.dumps(config))
    build.build()
    want = posenc_cli.rope(8, config=source / "llama").arrays["cos"]
    assert printed() == np.ascontiguousarray(want, "<f4").tobytes().hex()


# ------------------------------------------------------------------------------ the installed package, from a wheel
@dataclass(frozen=True)
class Installed:
    """This checkout built into a wheel and installed in a fresh virtual environment."""

    venv: Path
    posenc: Path
    cmake_dir: Path
    wheel: Path


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """A wheel of this checkout (built from a copy of its sources, so the checkout gets no build/ folder; the build
    backend comes from the package index, as for any pip install) installed with pip into a new venv. The venv has
    no pip and reads posenc's dependencies from the test environment through a .pth file; its own site-packages
    comes first, so `import posenc_cli` there is the wheel's."""
    root = tmp_path_factory.mktemp("installed")
    source = root / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(REPO / name, source / name)
    shutil.copytree(REPO / "posenc_cli", source / "posenc_cli", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    wheels = root / "wheels"
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(source)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    (wheel,) = wheels.glob("posenc-*.whl")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout.strip()  # fmt: skip
    import click
    import h5py
    import rich

    dependencies = dict.fromkeys(str(Path(m.__file__).resolve().parents[1]) for m in (np, click, rich, h5py))
    (Path(site) / "test-dependencies.pth").write_text("\n".join(dependencies) + "\n")
    # --ignore-installed: the .pth exposes the test environment, where a non-editable posenc may be installed too
    command = [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "-q"]
    command.append("--ignore-installed")
    result = subprocess.run([*command, str(wheel)], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    posenc = venv / "bin" / "posenc"
    printed = subprocess.run([str(posenc), "--cmake-dir"], capture_output=True, text=True, timeout=60, env=clean_env())
    assert printed.returncode == 0 and printed.stderr == "", printed.stderr
    return Installed(venv, posenc, Path(printed.stdout.rstrip("\n")), wheel)


def test_the_wheel_ships_the_cmake_package_and_cmake_dir_prints_its_folder(installed):
    names = set(zipfile.ZipFile(installed.wheel).namelist())
    assert {f"posenc_cli/cmake/{name}" for name in CMAKE_FILES} <= names
    purelib = subprocess.run(
        [str(installed.venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout.strip()  # fmt: skip
    assert installed.cmake_dir == Path(purelib) / "posenc_cli" / "cmake"
    for name in CMAKE_FILES:
        assert (installed.cmake_dir / name).read_bytes() == (PACKAGE_DIR / name).read_bytes()
    # The same answer from the checkout's CLI: only the path, on stdout.
    result = CliRunner().invoke(cli, ["--cmake-dir"])
    assert result.exit_code == 0 and result.stdout == f"{PACKAGE_DIR}\n"


def _decoy(folder: Path, log: Path) -> Path:
    """A `posenc` that claims to be any installation's and logs its calls: it must never be used."""
    folder.mkdir()
    return _wrapper(folder / "posenc", log, f'case "$1" in --cmake-dir) echo "$POSENC_DECOY_DIR";; '
                    f"--version) echo 'posenc {posenc_cli.__version__}';; *) exit 9;; esac\n")  # fmt: skip


# (command, ARGS, NAME, FORMAT): one table per table command, through posenc_add_table.
TABLES = [
    ("generate", "-n 6 -d 4 --base 500", "gen", "h"),
    ("rope", "-n 6 --head-dim 4 --theta 500000", "rp", "c"),
    ("alibi", "--heads 4 -n 6", "al", "h"),
    ("sincos2d", "-g 3x2 -d 8 --cls-token", "sc", "h"),
    ("relative", "--scheme t5 -Q 5 --causal", "rl", "c"),
    ("window", "--scheme swin -w 3", "wn", "h"),
]
T5_KEY = "encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight"
MANIFEST = f"""\
[[table]]
command = "relative"
output = "tables/t5.h"
scheme = "t5"
query_length = 5
bias = "model.safetensors"
key = "{T5_KEY}"

[[table]]
command = "generate"
output = "tables/pe.c"
seq_len = 8
d_model = 4

[[table]]
command = "generate"
output = "data/pe_bf16.npy"
seq_len = 8
d_model = 4
dtype = "bfloat16"

[[table]]
command = "rope"
output = "data/rope table.npz"
seq_len = 8
head_dim = 4
"""


def _dump_program(symbols: list[str], headers: list[str]) -> str:
    """A C program that prints each symbol's bytes in hex, one `name hex` line each."""
    lines = ["#include <stdio.h>", *(f'#include "{h}"' for h in headers)]
    lines.append(
        "static void dump(const char *name, const void *p, size_t n) {\n"
        "    const unsigned char *b = (const unsigned char *)p;\n    size_t k;\n"
        '    printf("%s ", name);\n    for (k = 0; k < n; k++) printf("%02x", b[k]);\n    printf("\\n");\n}'
    )
    body = "".join(f'    dump("{s}", {s}, sizeof({s}));\n' for s in symbols)
    lines.append(f"int main(void) {{\n{body}    return 0;\n}}")
    return "\n".join(lines) + "\n"


def _expected_dumps(tmp_path: Path, checkpoint: Path, manifest_query: int) -> dict[str, str]:
    """What each symbol must hold: the arrays of the .npz the same posenc command writes (this checkout's CLI)."""
    want: dict[str, str] = {}
    runs = [(c, a, n) for c, a, n, _ in TABLES]
    runs.append(("relative", f"--scheme t5 -Q {manifest_query} --bias {checkpoint} --key {T5_KEY}", "t5"))
    runs.append(("generate", "-n 8 -d 4", "pe"))
    for command, args, name in runs:
        npz = tmp_path / f"want-{name}.npz"
        result = CliRunner().invoke(cli, [command, *shlex.split(args), "-o", str(npz)])
        assert result.exit_code == 0, result.output
        with np.load(npz, allow_pickle=False) as arrays:
            keys = list(arrays.files)
            for key in keys:
                symbol = name if len(keys) == 1 else f"{name}_{key}"
                array = arrays[key]
                want[symbol] = np.ascontiguousarray(array, array.dtype.newbyteorder("<")).tobytes().hex()
    return want


@pytest.mark.client
@pytest.mark.parametrize("generator", ["Unix Makefiles", "Ninja"], ids=["make", "ninja"])
def test_a_project_outside_the_checkout_builds_with_the_installed_package(installed, generator, tmp_path):
    """find_package(posenc CONFIG) from the venv's site-packages, nothing of the checkout: posenc_add_table for
    every table command and posenc_add_manifest (a checkpoint read through the depfile, a .c compiled, data files),
    shared by two programs. The venv's own posenc is found beside its package (PATH holds only a decoy); the
    program prints exactly the tables posenc writes; a second build does nothing; touching an input reruns posenc,
    and a changed manifest changes the program."""
    from safetensors.numpy import save_file

    _check_generator(generator)
    source = tmp_path / "project"
    source.mkdir()
    rng = np.random.default_rng(5)
    checkpoint = source / "model.safetensors"
    save_file({T5_KEY: rng.standard_normal((32, 12)).astype(np.float32)}, str(checkpoint))
    (source / "posenc.toml").write_text(MANIFEST)
    want = _expected_dumps(tmp_path, checkpoint, 5)
    headers = [f"{name}.h" for _, _, name, _ in TABLES] + ["tables/t5.h", "tables/pe.h"]
    (source / "main.c").write_text(_dump_program(sorted(want), headers))
    (source / "other.c").write_text('#include "tables/pe.h"\nint main(void) { return pe[1][0] > 0.0f ? 0 : 1; }\n')
    calls = "".join(
        f"posenc_add_table(app COMMAND {command} NAME {name} FORMAT {fmt} ARGS {args})\n"
        for command, args, name, fmt in TABLES
    )
    (source / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.16)\nproject(outside C)\n"
        "find_package(posenc 0.1 CONFIG REQUIRED)\n"
        'message(STATUS "POSENC_COMMAND=${POSENC_COMMAND} posenc_VERSION=${posenc_VERSION}")\n'
        f"add_executable(app main.c)\n{calls}posenc_add_manifest(app posenc.toml)\n"
        "add_executable(other other.c)\nposenc_add_manifest(other posenc.toml)\n"  # shared: built once
    )
    decoy_log = tmp_path / "decoy.log"
    decoy = _decoy(tmp_path / "decoy", decoy_log)
    build = Build(source, tmp_path / "build", generator, clean_env(decoy.parent))
    build.env["POSENC_DECOY_DIR"] = str(installed.cmake_dir)  # even claiming to be it, it is never asked
    configured = build.configure(f"-Dposenc_DIR={installed.cmake_dir}")
    assert f"posenc: {installed.posenc} (posenc {posenc_cli.__version__})" in configured.stdout
    assert f"POSENC_COMMAND={installed.posenc} posenc_VERSION={posenc_cli.__version__}" in configured.stdout
    output = build.build()
    assert output.count("Building posenc manifest posenc.toml (6 files)") == 1, output
    for _, _, name, _ in TABLES:
        assert f"Generating posenc table posenc/{name}." in output

    # Nothing of the checkout in the build tree, and the decoy never ran.
    for path in build.binary.rglob("*"):
        if path.is_file() and path.suffix in (".txt", ".ninja", ".make", ".cmake", ".params", ".d"):
            assert str(REPO) not in path.read_text(errors="replace"), path
    assert not decoy_log.exists()

    def dumps() -> dict[str, str]:
        return dict(line.split(" ", 1) for line in build.run("app").splitlines())

    assert dumps() == want
    assert subprocess.run([str(build.binary / "other")], timeout=30).returncode == 0
    generated = build.binary / "posenc"
    listed = {str(p.relative_to(generated)) for p in generated.rglob("*") if p.is_file() and p.suffix != ".d"}
    tables = {f"{n}.{e}" for _, _, n, fmt in TABLES for e in (("c", "h") if fmt == "c" else ("h",))}
    manifest_outputs = {"tables/t5.h", "tables/pe.c", "tables/pe.h", "data/pe_bf16.npy", "data/pe_bf16.json",
                        "data/rope table.npz"}  # fmt: skip
    assert listed == tables | manifest_outputs
    (depfile,) = generated.glob(".posenc-*.d")
    assert depfile.read_text().endswith(f": {source / 'posenc.toml'} {checkpoint}\n")

    def snapshot() -> dict[str, int]:
        files = [p for p in build.binary.rglob("*") if p.is_file() and (p.suffix in (".o", ".c", ".h", ".npy",
                 ".json", ".npz") or p.name in ("app", "other"))]  # fmt: skip
        return {str(p.relative_to(build.binary)): p.stat().st_mtime_ns for p in files}

    def nothing_to_do() -> None:
        output = build.build()
        if generator == "Ninja":
            assert "ninja: no work to do." in output, output
        for word in ("Generating", "posenc table", "posenc manifest", "Building", "Linking"):
            assert word not in output, output

    stamps = snapshot()
    nothing_to_do()
    assert snapshot() == stamps

    # The checkpoint (known through the depfile only) is touched: posenc build reruns, once.
    touch_later(checkpoint, build.binary)
    output = build.build()
    assert output.count("Building posenc manifest posenc.toml") == 1, output
    after = snapshot()
    outputs = {key for key in stamps if key.startswith("posenc/") and not key.endswith((".o",))}
    manifest_files = {key for key in outputs if key.startswith(("posenc/tables/", "posenc/data/"))}
    if generator == "Ninja":  # same bytes, untouched, restat: nothing recompiled
        assert after == stamps and "Building C" not in output, output
    else:  # make: the manifest's outputs are touched, what includes them is rebuilt
        assert all(after[key] > stamps[key] for key in manifest_files)
        assert all(after[key] == stamps[key] for key in outputs - manifest_files)
    nothing_to_do()
    assert dumps() == want

    # A changed manifest: CMake lists the outputs again, posenc rebuilds, the program follows.
    (source / "posenc.toml").write_text(MANIFEST.replace("query_length = 5", "query_length = 7"))
    output = build.build()
    assert "Building posenc manifest posenc.toml" in output, output
    changed = _expected_dumps(tmp_path, checkpoint, 7)
    assert dumps() == changed and changed["t5_bias"] != want["t5_bias"]
    nothing_to_do()


@pytest.mark.client
def test_a_manifest_in_a_subdirectory_of_a_project_with_old_policies_reads_its_depfile(tmp_path, posenc_wrapper):
    """CMake before 3.20 (policy CMP0116 OLD) gave Ninja depfile paths relative to the top build folder: the module
    sets the policy for its own functions, so a manifest in a subdirectory of a project that declares 3.16 still
    reruns when a checkpoint it reads changes, and only then."""
    from safetensors.numpy import save_file

    _check_generator("Ninja")
    script, log = posenc_wrapper
    source = tmp_path / "project"
    (source / "sub").mkdir(parents=True)
    save_file({"w": np.arange(64, dtype=np.float32).reshape(32, 2)}, str(source / "sub" / "m.safetensors"))
    (source / "sub" / "posenc.toml").write_text(
        '[[table]]\ncommand = "relative"\noutput = "t5.h"\nscheme = "t5"\nquery_length = 4\n'
        'bias = "m.safetensors"\nkey = "w"\n'
    )
    (source / "sub" / "main.c").write_text('#include "t5.h"\nint main(void) { return t5_bias[0][0][0] < 0.0f; }\n')
    (source / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.16)\nproject(old C)\nfind_package(posenc CONFIG REQUIRED)\n"
        "add_subdirectory(sub)\n"
    )
    (source / "sub" / "CMakeLists.txt").write_text("add_executable(app main.c)\nposenc_add_manifest(app posenc.toml)\n")
    build = Build(source, tmp_path / "build", "Ninja")
    configured = build.configure(f"-Dposenc_DIR={dev_cmake_dir()}", f"-DPOSENC_EXECUTABLE={script}")
    assert "CMP0116" not in configured.stderr, configured.stderr
    assert "Building posenc manifest sub/posenc.toml (1 file)" in build.build()
    assert len(build_calls(log)) == 1 and "ninja: no work to do." in build.build()
    touch_later(source / "sub" / "m.safetensors", build.binary)
    output = build.build()
    assert len(build_calls(log)) == 2 and "Building C" not in output, output  # same bytes: nothing recompiled
    assert "ninja: no work to do." in build.build()


@pytest.mark.client
@pytest.mark.parametrize(
    ("request_", "found"),
    [
        ("{major}.{minor}", True),
        ("{version} EXACT", True),
        ("{major}.{minor}...{next_major}", True),
        ("{major}.{next_minor}", False),
        ("{next_major}", False),
        ("{major}.{minor}.0.0 EXACT", True),
    ],
)
def test_the_package_version_follows_the_installed_posenc(installed, tmp_path, request_, found):
    """posenc-config-version.cmake reads the version from the installed package: the same major version, this one
    or older (the same minor while the major is 0), EXACT, and ranges."""
    require_tool("make")
    major, minor = (int(part) for part in posenc_cli.__version__.split(".")[:2])
    asked = request_.format(version=posenc_cli.__version__, major=major, minor=minor, next_major=major + 1,
                            next_minor=minor + 1)  # fmt: skip
    source = tmp_path / "project"
    source.mkdir()
    (source / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.19)\nproject(version NONE)\n"
        f"find_package(posenc {asked} CONFIG)\n"
        'message(STATUS "found=${posenc_FOUND} version=${posenc_VERSION}")\n'
    )
    build = Build(source, tmp_path / "build", "Unix Makefiles")
    configured = build.configure(f"-Dposenc_DIR={installed.cmake_dir}")
    assert ("found=1 version=" if found else "found=0") in configured.stdout, configured.stdout + configured.stderr
