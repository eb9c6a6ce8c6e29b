"""cmake/posenc.cmake with real CMake: the example builds, prints posenc's table, and rebuilds only what changed.

posenc runs through a wrapper script (``python -m posenc_cli`` of this checkout) that logs every call, so "posenc did
not run" is checked directly, besides the time stamps of the generated files and of the program, and the build log.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

import posenc_cli

from .conftest import require_tool

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "cmake"
MODULE = REPO / "cmake" / "posenc.cmake"

# The example's second table, fixed in examples/cmake/CMakeLists.txt.
LONG = {"seq_len": 16, "d_model": 8, "base": 500000.0, "dtype": "float64"}

LINE = re.compile(r"^(pe|pe_long)\[(\d+)\]\[(\d+)\] = (\S+) 0x([0-9a-f]+)$")


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


@dataclass
class Build:
    """A CMake build tree of a project, with helpers that run cmake and check their result."""

    source: Path
    binary: Path
    generator: str
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))

    def configure(self, *defines: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        cmake = require_tool("cmake")
        command = [cmake, "-S", str(self.source), "-B", str(self.binary), "-G", self.generator, *defines]
        result = subprocess.run(command, capture_output=True, text=True, env=self.env, timeout=120)
        if check:
            assert result.returncode == 0, result.stdout + result.stderr
        return result

    def build(self) -> str:
        cmake = require_tool("cmake")
        result = subprocess.run(
            [cmake, "--build", str(self.binary), "--parallel", "4"],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=120,
        )
        assert result.returncode == 0, result.stdout + result.stderr
        return result.stdout + result.stderr

    def run(self) -> str:
        program = self.binary / "posenc_example"
        return subprocess.run([str(program)], capture_output=True, text=True, check=True, timeout=30).stdout

    def outputs(self) -> list[Path]:
        """Every file whose time stamp says whether something was regenerated, recompiled or relinked."""
        generated = [self.binary / "posenc" / name for name in ("pe.h", "pe_long.c", "pe_long.h")]
        objects = sorted(self.binary.glob("CMakeFiles/posenc_example.dir/**/*.o"))
        assert len(objects) == 2, objects
        return [*generated, *objects, self.binary / "posenc_example"]

    def stamps(self) -> dict[str, int]:
        return {str(p.relative_to(self.binary)): p.stat().st_mtime_ns for p in self.outputs()}


def _check_generator(generator: str) -> None:
    if generator == "Ninja":
        if shutil.which("ninja") is None:
            pytest.skip("ninja is not installed (optional: the Makefile generator is tested without it)")
    else:
        require_tool("make")
    require_tool("gcc")


@pytest.fixture(params=["Unix Makefiles", "Ninja"], ids=["make", "ninja"])
def example(request, tmp_path: Path, posenc_wrapper: tuple[Path, Path]) -> tuple[Build, Path]:
    """The example configured with the wrapper as POSENC_EXECUTABLE and built once; (build, wrapper log)."""
    _check_generator(request.param)
    script, log = posenc_wrapper
    build = Build(EXAMPLE, tmp_path / "build", request.param)
    configured = build.configure(f"-DPOSENC_EXECUTABLE={script}")
    assert f"posenc: {script} (posenc {posenc_cli.__version__})" in configured.stdout
    output = build.build()
    assert "Generating posenc table posenc/pe.h (64 x 32 float32)" in output
    assert "Generating posenc table posenc/pe_long.c (16 x 8 float64)" in output
    return build, log


def generate_calls(log: Path) -> list[str]:
    return [line for line in log.read_text().splitlines() if line.startswith("generate ")]


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
    tables = {
        "pe": (expected(seq_len, d_model, tmp_path), np.uint32),
        "pe_long": (expected(tmp_path=tmp_path, **LONG), np.uint64),
    }
    seen = {"pe": set(), "pe_long": set()}
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
    # Rows 0, 1 and the last, every column.
    assert seen["pe"] == {(p, c) for p in (0, 1, seq_len - 1) for c in range(d_model)}
    assert seen["pe_long"] == {(p, c) for p in (0, 1, LONG["seq_len"] - 1) for c in range(LONG["d_model"])}


def assert_nothing_rebuilt(build: Build, log: Path, stamps: dict[str, int], calls: int) -> None:
    output = build.build()
    assert "posenc table" not in output and "Building" not in output and "Linking" not in output, output
    assert len(generate_calls(log)) == calls, generate_calls(log)
    assert build.stamps() == stamps


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


def test_a_reinstalled_posenc_reruns_once_then_nothing(example):
    """posenc's program is a dependency: touching it (as a reinstall does) reruns posenc once, and only once."""
    build, log = example
    before = build.stamps()
    os.utime(build.binary.parent / "posenc-wrapper")
    output = build.build()
    assert len(generate_calls(log)) == 4, output
    after = build.stamps()
    if build.generator == "Ninja":
        # Ninja restats the outputs: posenc wrote identical bytes, left them untouched, so nothing is recompiled.
        assert after == before and "Building" not in output and "Linking" not in output, output
    else:
        # make compares time stamps only: the outputs are touched (or posenc would run at every build).
        assert all(after[key] > before[key] for key in before), (before, after)
    assert_nothing_rebuilt(build, log, after, calls=4)


def test_copied_example_finds_the_module_on_the_module_path_and_falls_back_to_python(tmp_path):
    """A copy of the example outside the repository, with -DCMAKE_MODULE_PATH; posenc found as python -m posenc_cli."""
    _check_generator("Unix Makefiles")
    source = tmp_path / "example"
    shutil.copytree(EXAMPLE, source)
    broken = _wrapper(tmp_path / "broken-posenc", tmp_path / "broken.log", "exit 3\n")
    build = Build(source, tmp_path / "build", "Unix Makefiles")
    build.env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    configured = build.configure(
        f"-DCMAKE_MODULE_PATH={MODULE.parent}",
        f"-DPOSENC_EXECUTABLE={broken}",
        f"-DPython3_EXECUTABLE={sys.executable}",
    )
    assert f"POSENC_EXECUTABLE={broken} does not run" in " ".join(configured.stderr.split())
    assert f"posenc: {sys.executable} -m posenc_cli (posenc {posenc_cli.__version__})" in configured.stdout
    build.build()
    check_printout(build.run(), 64, 32, tmp_path)
    assert (tmp_path / "broken.log").read_text() == "--version\n"  # probed once at configure time, never run after


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


def test_no_posenc_is_a_clear_configure_error(tmp_path):
    _check_generator("Unix Makefiles")
    broken = _wrapper(tmp_path / "broken", tmp_path / "broken.log", "exit 3\n")
    build = Build(EXAMPLE, tmp_path / "build", "Unix Makefiles")
    result = build.configure(f"-DPOSENC_EXECUTABLE={broken}", f"-DPython3_EXECUTABLE={broken}", check=False)
    assert result.returncode != 0
    message = " ".join(result.stderr.split())
    assert "posenc_add_table: cannot run posenc" in message
    assert f"POSENC_EXECUTABLE={broken}: `{broken} --version` failed (exit code 3)" in message
    assert f"Python3_EXECUTABLE={broken}: `{broken} -m posenc_cli --version` failed (exit code 3)" in message
    assert "-DPOSENC_EXECUTABLE=" in message and "-DPython3_EXECUTABLE=" in message


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
            "posenc_add_table(app SEQ_LEN 16 D_MODEL 8)\nposenc_add_table(app SEQ_LEN 32 D_MODEL 8)",
            "is already generated by another posenc_add_table call",
            id="same-file-twice",
        ),
        ("posenc_add_table(app COMMAND xpos ARGS -n 4)", "COMMAND must be one of"),
        ("posenc_add_table(app COMMAND rope SEQ_LEN 4 ARGS --head-dim 8)", "SEQ_LEN is for COMMAND generate"),
        ("posenc_add_table(app COMMAND rope ARGS -n 4 --head-dim 8 INPUTS missing.json)", "which is not a file"),
    ],
)
def test_invalid_arguments_stop_the_configure_step(tmp_path, posenc_wrapper, call, fragment):
    require_tool("make")
    script, log = posenc_wrapper
    source = tmp_path / "project"
    source.mkdir()
    (source / "app.c").write_text("int main(void) { return 0; }\n")
    (source / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.16)\nproject(bad NONE)\n"  # no compiler needed: configuring stops first
        f'include("{MODULE.as_posix()}")\nadd_executable(app app.c)\n{call}\n'
    )
    build = Build(source, tmp_path / "build", "Unix Makefiles")
    result = build.configure(f"-DPOSENC_EXECUTABLE={script}", check=False)
    assert result.returncode != 0
    assert fragment in " ".join(result.stderr.split()), result.stderr


def test_element_types_presets_and_extra_options_reach_the_table(tmp_path, posenc_wrapper):
    """DTYPE q15 + PRESET + ARGS (--align, --start): the compiled table's bytes are posenc's for those options, and
    changing ARGS regenerates it."""
    require_tool("make")
    require_tool("gcc")
    script, log = posenc_wrapper
    source = tmp_path / "project"
    source.mkdir()
    (source / "main.c").write_text(
        '#include <stdio.h>\n#include "pe_q15.h"\n#include "pe_i8.h"\n'
        "int main(void) {\n    const unsigned char *p = (const unsigned char *)pe_q15;\n    unsigned long k;\n"
        '    for (k = 0; k < sizeof(pe_q15); k++) printf("%02x", p[k]);\n    printf("\\n");\n'
        "    p = (const unsigned char *)pe_i8;\n"
        '    for (k = 0; k < sizeof(pe_i8); k++) printf("%02x", p[k]);\n    printf("\\n");\n'
        "    return ((unsigned long)pe_q15 % 16 != 0) + (PE_I8_ZERO_POINT != -3);\n}\n"
    )
    args = "ARGS --align 16 --start 2"
    (source / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.16)\nproject(types C)\n"
        f'include("{MODULE.as_posix()}")\nadd_executable(types main.c)\n'
        f"posenc_add_table(types SEQ_LEN 12 D_MODEL 9 DTYPE q15 PRESET fairseq NAME pe_q15 {args})\n"
        "posenc_add_table(types SEQ_LEN 5 D_MODEL 4 DTYPE int8 SCALE 0.0078125 ZERO_POINT -3 NAME pe_i8)\n"
    )
    build = Build(source, tmp_path / "build", "Unix Makefiles")
    build.configure(f"-DPOSENC_EXECUTABLE={script}")
    build.build()
    q15, i8 = subprocess.run([str(build.binary / "types")], capture_output=True, text=True, check=True).stdout.split()
    want = posenc_cli.generate(12, 9, dtype="q15", preset="fairseq", start=2.0).array
    assert q15 == want.astype("<i2").tobytes().hex()
    assert i8 == posenc_cli.generate(5, 4, dtype="int8", scale=0.0078125, zero_point=-3).array.tobytes().hex()
    calls = len(generate_calls(log))
    (source / "CMakeLists.txt").write_text((source / "CMakeLists.txt").read_text().replace("--start 2", "--start 3"))
    build.configure(f"-DPOSENC_EXECUTABLE={script}")
    build.build()
    assert len(generate_calls(log)) == calls + 1  # only the changed table
    q15 = subprocess.run([str(build.binary / "types")], capture_output=True, text=True, check=True).stdout.split()[0]
    want = posenc_cli.generate(12, 9, dtype="q15", preset="fairseq", start=3.0).array
    assert q15 == want.astype("<i2").tobytes().hex()


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
