"""One rule for the names posenc gives build tools (posenc_cli/manifest/names.py): ``posenc build --list-outputs``,
the depfile and CMake's ``posenc_add_manifest`` accept exactly the same names, and a refused name writes nothing.

Every name of :data:`NAMES` is walked through each reader for real: the CLI's ``--list-outputs`` and ``--depfile``
runs; for an accepted name, Ninja and GNU make reading the depfile (a second run does nothing, a touched manifest
reruns posenc once: they found the files the depfile names); and CMake configuring, generating and building a
project with Ninja, whose build breaks when CMake's rewrite of the depfile spoils a name (``$``: posenc would run at
every build). The expected answers are written here, not taken from the code under test.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from posenc_cli.cli import cli
from posenc_cli.manifest import name_problem
from posenc_cli.manifest.names import ALLOWED

from .conftest import require_tool, touch_later
from .test_cmake import MODULE, Build, posenc_wrapper  # noqa: F401  (a fixture)

REPO = Path(__file__).resolve().parents[1]

#: An output name, and whether build tools can all be given it.
NAMES = {
    "a$b.h": False,  # CMake's depfile rewrite writes '$' back unescaped: Ninja then reruns posenc at every build
    "a#b.h": False,  # CMake refuses it in an OUTPUT (at generate time); make reads a comment
    "~a.h": False,  # make reads a home directory
    "sub/~a.h": False,  # the depfile may spell it from sub/: '~' starts no name
    "a b.h": True,
    "a\nb.h": False,
    "a\\b.h": False,
    "a:b.h": False,
    "a;b.h": False,
    "a'b.h": False,
    'a"b.h': False,
    "a\tb.h": False,
    "ünïcødé.h": True,
    "a\u202eb.h": False,  # a bidirectional override: the name would not read as it is
    "sub/../a.h": False,
    "a~b.h": True,
    "x+y,z@w!{v}.h": True,
}
ACCEPTED = [name for name, accepted in NAMES.items() if accepted]
FIRST = '[[table]]\ncommand = "generate"\noutput = "first.h"\nseq_len = 4\nd_model = 4\n'


def manifest_text(name: str) -> str:
    """A manifest whose second entry writes ``name``: a refused name must not let the first be written either."""
    return f'{FIRST}\n[[table]]\ncommand = "generate"\noutput = {json.dumps(name)}\nseq_len = 4\nd_model = 6\n'


def files_under(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


def _run(command: list[str], cwd: Path) -> str:
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=_env(), timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout + result.stderr


POSENC = f"{shlex.quote(sys.executable)} -m posenc_cli"


def test_the_rule_is_the_table_above_and_docs_state_it():
    """The answers this file expects are the rule's (each case below then checks every reader against them), and
    docs/build.md states the rule as the error messages do."""
    assert {name: name_problem(name) is None for name in NAMES} == NAMES
    assert ALLOWED in " ".join((REPO / "docs" / "build.md").read_text().split())


@pytest.mark.parametrize("name", list(NAMES))
def test_list_outputs_and_the_depfile_give_the_same_answer(tmp_path, monkeypatch, name):
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "posenc.toml").write_text(manifest_text(name))
    monkeypatch.chdir(folder)
    listed = CliRunner().invoke(cli, ["build", "--list-outputs", "--make-dirs"])
    assert files_under(folder) == ["posenc.toml"]  # --list-outputs writes nothing, not even folders
    built = CliRunner().invoke(cli, ["build", "--depfile", "posenc.d", "--stamp", "posenc.stamp", "--make-dirs"])
    if not NAMES[name]:
        for result in (listed, built):
            assert result.exit_code == 2 and result.stdout == "", (result.exit_code, result.output)
            line = result.stderr.strip()
            assert "\n" not in line and line.startswith("Error: posenc.toml, table #2 (output "), line
            assert f"cannot give {name!r} to a build tool" in line and "rename the file" in line, line
        assert files_under(folder) == ["posenc.toml"]  # refused before anything, a folder included, is written
        return
    assert listed.exit_code == 0 and built.exit_code == 0, (listed.output, built.output)
    assert listed.stdout.splitlines() == [str(folder.resolve() / "first.h"), str(folder.resolve() / name)]
    assert (folder / name).is_file() and (folder / "posenc.stamp").is_file()
    assert (folder / "posenc.d").read_text() == "posenc.stamp: posenc.toml\n"


@pytest.mark.client
@pytest.mark.parametrize("name", ACCEPTED)
def test_ninja_and_make_read_an_accepted_name_from_the_depfile(tmp_path, name):
    """Ninja (restat) and make (a stamp) build the outputs the depfile names, then do nothing, and rerun posenc
    once when the manifest is touched."""
    ninja, make = require_tool("ninja"), require_tool("make")
    in_ninja, in_make = name.replace(" ", "$ "), name.replace(" ", "\\ ")  # each file's own escape of a space
    for tool in ("ninja", "make"):
        folder = tmp_path / tool
        folder.mkdir()
        (folder / "posenc.toml").write_text(manifest_text(name))
        if tool == "ninja":
            (folder / "build.ninja").write_text(
                f"rule posenc\n  command = {POSENC} build posenc.toml --depfile posenc.d -q\n  depfile = posenc.d\n"
                f"  restat = 1\nbuild first.h {in_ninja}: posenc\n"
            )
            command, nothing = [ninja], "ninja: no work to do."
        else:
            (folder / "Makefile").write_text(
                f"TABLES := first.h {in_make}\nall: $(TABLES)\n"
                f"posenc.stamp:\n\t{POSENC} build posenc.toml --depfile posenc.d --stamp $@ -q\n"
                "$(TABLES): posenc.stamp ;\n-include posenc.d\n"
            )
            command, nothing = [make], "Nothing to be done for 'all'"
        assert "posenc_cli build" in _run(command, folder)
        assert (folder / name).is_file()
        assert nothing in _run(command, folder)
        touch_later(folder / "posenc.toml", folder)
        assert "posenc_cli build" in _run(command, folder)
        assert nothing in _run(command, folder)


@pytest.mark.client
def test_cmake_gives_every_name_the_same_answer(tmp_path, posenc_wrapper):  # noqa: F811
    """posenc_add_manifest, with real CMake and Ninja: a refused name stops the configure step with posenc's
    one-line reason and writes nothing; an accepted one configures, generates, builds, and a second build does
    nothing (Ninja found the files CMake's rewrite of the depfile names)."""
    require_tool("ninja")
    require_tool("gcc")
    script, _ = posenc_wrapper
    source = tmp_path / "project"
    source.mkdir()
    (source / "main.c").write_text('#include "first.h"\nint main(void) { return FIRST_D_MODEL == 4 ? 0 : 1; }\n')
    (source / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.16)\nproject(names C)\n"
        f'include("{MODULE.as_posix()}")\nadd_executable(app main.c)\n'
        'posenc_add_manifest(app "${MANIFEST}" OUTPUT_DIR "${OUT}")\n'
    )
    build = Build(source, tmp_path / "build", "Ninja")
    answers = {}
    for index, name in enumerate(NAMES):
        manifest = source / f"m{index}.toml"
        manifest.write_text(manifest_text(name))
        out = build.binary / f"gen{index}"
        configured = build.configure(
            f"-DPOSENC_EXECUTABLE={script}", f"-DMANIFEST={manifest.name}", f"-DOUT={out}", check=False
        )
        answers[name] = configured.returncode == 0
        if not answers[name]:
            message = " ".join(configured.stderr.split())
            assert f"table #2 (output {name!r}): cannot give {name!r} to a build tool" in message, message
            assert not out.exists()
            continue
        output = build.build()
        assert "Building posenc manifest" in output, output
        assert (out / name).is_file()
        assert "ninja: no work to do." in build.build()
    assert answers == NAMES


@pytest.mark.client
def test_cmake_with_make_builds_every_accepted_name(tmp_path, posenc_wrapper):  # noqa: F811
    """The accepted names in one manifest, through CMake's Makefiles generator (its own rewrite of the depfile):
    built, then nothing to do."""
    require_tool("make")
    require_tool("gcc")
    script, _ = posenc_wrapper
    source = tmp_path / "project"
    source.mkdir()
    (source / "main.c").write_text("int main(void) { return 0; }\n")
    (source / "posenc.toml").write_text(
        "".join(
            f'[[table]]\ncommand = "generate"\noutput = {json.dumps(name)}\nseq_len = 4\nd_model = 4\nname = "t{i}"\n'
            for i, name in enumerate(ACCEPTED)
        )
    )
    (source / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.20)\nproject(names C)\n"
        f'include("{MODULE.as_posix()}")\nadd_executable(app main.c)\nposenc_add_manifest(app posenc.toml)\n'
    )
    build = Build(source, tmp_path / "build", "Unix Makefiles")
    build.configure(f"-DPOSENC_EXECUTABLE={script}")
    assert "Building posenc manifest posenc.toml" in build.build()
    assert sorted(p.name for p in (build.binary / "posenc").iterdir() if not p.name.startswith(".")) == sorted(ACCEPTED)
    output = build.build()
    assert "Building posenc manifest" not in output and "Building C" not in output, output
