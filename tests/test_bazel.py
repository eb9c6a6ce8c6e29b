"""examples/bazel with a real Bazel (Debian's bazel-bootstrap), offline: the genrules of BUILD and posenc.bzl write
posenc's tables (downloads are disabled, so a rule that needed the network would fail the test); gcc compiles the
example's program against them and it prints posenc's values; a second build runs nothing; a changed manifest
reruns only its rule.

cc_binary //:posenc_example is not built: Bazel 4 resolves C++ toolchains through rules_cc, which it downloads.
Bazel runs in batch mode (no server left behind) with an output root of the test's own.
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

from .conftest import require_tool

pytestmark = pytest.mark.client  # every test here runs a real client

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "bazel"
BIN = Path(sys.executable).parent  # posenc of the test environment

GENERATED = ["alibi.h", "pe.h", "rope.c", "rope.h", "t5_buckets.h", "tables/pe_q15.h"]


def _bazel(bazel: str, workspace: Path, root: Path) -> str:
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(BIN), env.get("PATH", "")])
    startup = [bazel, "--nohome_rc", "--noworkspace_rc", "--batch", f"--output_user_root={root}"]
    options = ["--experimental_repository_disable_download", "--action_env=PATH", "--subcommands"]
    command = [*startup, "build", *options, "//:tables"]
    result = subprocess.run(command, cwd=workspace, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout + result.stderr


def _bits(value: float) -> str:
    return f"0x{int(np.float32(value).view(np.uint32)):08x}"


def test_bazel_genrules_write_the_tables_offline_and_a_second_build_runs_nothing(tmp_path):
    bazel = require_tool("bazel")
    gcc = require_tool("gcc")
    assert (BIN / "posenc").exists(), f"no posenc beside {sys.executable}"
    workspace, root = tmp_path / "example", tmp_path / "bazel-root"
    shutil.copytree(EXAMPLE, workspace)

    output = _bazel(bazel, workspace, root)
    assert "Build completed successfully" in output, output
    bin_dir = workspace / "bazel-bin"
    for name in GENERATED:
        assert (bin_dir / name).is_file(), name

    program = tmp_path / "posenc_example"
    subprocess.run([gcc, "-std=c99", "-Wall", "-Wextra", "-Werror", f"-I{bin_dir}", str(workspace / "main.c"),
                    str(bin_dir / "rope.c"), "-o", str(program)], check=True, timeout=120)  # fmt: skip
    printed = dict(
        line.split(" = ", 1) for line in subprocess.run([str(program)], capture_output=True, text=True, check=True,
                                                         timeout=30).stdout.splitlines()
    )  # fmt: skip
    pe = posenc_cli.generate(64, 32).array[1, 0]
    rope = posenc_cli.rope(128, 16, theta=500000.0).arrays["cos"][127, 1]
    slope = posenc_cli.alibi(8, 32).arrays["slopes"][7]
    for key, value in (("pe[1][0]", pe), ("rope_cos[127][1]", rope), ("alibi_slopes[7]", slope)):
        decimal, bits = printed[key].split()
        assert bits == _bits(value) and np.float32(decimal) == np.float32(value), (key, printed[key])
    assert int(printed["t5_buckets[0][15]"]) == posenc_cli.relative("t5", 16).arrays["index"][0, 15]
    q15 = posenc_cli.generate(16, 8, dtype="q15", preset="fairseq").array[2, 0]
    assert int(printed["pe_q15[2][0]"]) == int(q15)

    def stamps() -> dict[str, int]:
        return {name: (bin_dir / name).stat().st_mtime_ns for name in GENERATED}

    before = stamps()
    output = _bazel(bazel, workspace, root)
    assert "posenc table" not in output and "posenc manifest" not in output, output
    assert re.search(r"INFO: \d+ process(es)?: \d+ internal\.", output), output  # no action ran
    assert stamps() == before

    # A changed manifest reruns its rule, and only it.
    manifest = workspace / "posenc.toml"
    manifest.write_text(manifest.read_text().replace("seq_len = 16", "seq_len = 24"))
    output = _bazel(bazel, workspace, root)
    assert "Building posenc manifest posenc.toml" in output and "Generating posenc table" not in output, output
    after = stamps()
    assert after["tables/pe_q15.h"] != before["tables/pe_q15.h"]
    assert {k: v for k, v in after.items() if k != "tables/pe_q15.h"} == {
        k: v for k, v in before.items() if k != "tables/pe_q15.h"
    }
    assert "#define PE_Q15_SEQ_LEN 24" in (bin_dir / "tables" / "pe_q15.h").read_text()
