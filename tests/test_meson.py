"""examples/meson with the real Meson and Ninja (both from PyPI, in the test environment): a custom_target runs
``posenc build`` with a depfile; the program prints posenc's tables; a second build does nothing; a touched manifest
reruns posenc (and nothing downstream: its outputs keep their bytes and time stamps); a changed one rebuilds.

The example is copied to a temporary folder first, so the checkout's files are never touched.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import posenc_cli

from .conftest import require_tool, touch_later

pytestmark = pytest.mark.client  # every test here runs a real client

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "meson"
BIN = Path(sys.executable).parent  # the test environment's scripts: posenc, meson, ninja

LINE = re.compile(r"^(pe|rope_cos|rope_sin)\[(\d+)\]\[(\d+)\] = (\S+) 0x([0-9a-f]{8})$")


def _tool(name: str) -> str:
    """``name`` from the test environment (pip install meson ninja), else from PATH."""
    here = BIN / name
    return str(here) if here.exists() else require_tool(name)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(BIN), env.get("PATH", "")])  # Meson finds posenc and ninja here
    return env


def _run(*command: str, cwd: Path | None = None) -> str:
    result = subprocess.run(command, capture_output=True, text=True, env=_env(), cwd=cwd, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout + result.stderr


def _check(printed: str, pe_shape: tuple[int, int], rope_shape: tuple[int, int]) -> None:
    """The printed entries are the bits of posenc's tables (the last row of each, every column)."""
    lines = printed.splitlines()
    assert f"pe: {pe_shape[0]} x {pe_shape[1]}" in lines and f"rope: {rope_shape[0]} x {rope_shape[1]}" in lines
    rope = posenc_cli.rope(*rope_shape, theta=500000.0).arrays
    tables = {
        "pe": np.asarray(posenc_cli.generate(*pe_shape).array, np.float32),
        "rope_cos": np.asarray(rope["cos"], np.float32),
        "rope_sin": np.asarray(rope["sin"], np.float32),
    }
    seen: dict[str, set[int]] = {name: set() for name in tables}
    for line in lines:
        match = LINE.match(line)
        if match is None:
            continue
        name, pos, col, decimal, bits = match.group(1), int(match.group(2)), int(match.group(3)), *match.group(4, 5)
        value = tables[name][pos, col]
        assert pos == tables[name].shape[0] - 1 and int(bits, 16) == int(value.view(np.uint32)), line
        assert np.float32(decimal).tobytes() == value.tobytes(), line
        seen[name].add(col)
    assert seen == {name: set(range(table.shape[1])) for name, table in tables.items()}


def test_meson_builds_the_example_twice_and_reruns_posenc_only_when_the_manifest_changes(tmp_path):
    meson = _tool("meson")
    _tool("ninja")
    require_tool("gcc")
    assert (BIN / "posenc").exists(), f"no posenc beside {sys.executable}"
    source, build = tmp_path / "example", tmp_path / "build"
    shutil.copytree(EXAMPLE, source)
    manifest = source / "posenc.toml"

    # meson.build names the manifest's outputs: they are the ones `posenc build --list-outputs` prints.
    listed = _run(str(BIN / "posenc"), "build", str(manifest), "--list-outputs").splitlines()
    declared = re.search(r"output: \[([^]]*)\]", (source / "meson.build").read_text())
    assert declared is not None
    assert [Path(p).name for p in listed] == re.findall(r"'([^']+)'", declared.group(1))

    _run(meson, "setup", str(build), str(source))
    output = _run(meson, "compile", "-C", str(build))
    assert "Generating posenc_tables with a custom command" in output, output
    program = str(build / "posenc_example")
    _check(_run(program), (32, 16), (64, 8))
    # Meson's Ninja backend reads the depfile into its log (deps = gcc): the manifest is a dependency there.
    deps = _run(_tool("ninja"), "-C", str(build), "-t", "deps", "pe.h")
    assert "posenc.toml" in deps, deps

    generated = [build / name for name in ("pe.h", "rope.c", "rope.h")]

    def stamps() -> dict[str, int]:
        files = [*generated, build / "posenc_example", *build.glob("posenc_example.p/*.o")]
        return {p.name: p.stat().st_mtime_ns for p in files}

    before = stamps()
    assert "ninja: no work to do." in _run(meson, "compile", "-C", str(build))
    assert stamps() == before

    # Touched, same content: posenc runs again and leaves its outputs alone; Ninja restats: nothing downstream.
    touch_later(manifest, tmp_path)
    output = _run(meson, "compile", "-C", str(build))
    assert "Generating posenc_tables" in output and "Compiling" not in output and "Linking" not in output, output
    assert stamps() == before
    assert "ninja: no work to do." in _run(meson, "compile", "-C", str(build))

    # A real change rebuilds the tables and the program.
    manifest.write_text(manifest.read_text().replace("seq_len = 32", "seq_len = 40"))
    touch_later(manifest, tmp_path)
    output = _run(meson, "compile", "-C", str(build))
    assert "Generating posenc_tables" in output and "Linking" in output, output
    _check(_run(program), (40, 16), (64, 8))
    assert "ninja: no work to do." in _run(meson, "compile", "-C", str(build))
