"""The ``posenc`` command: exit codes, one-line errors on stderr, silence on success, nothing left on failure."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import posenc_cli
from posenc_cli._native import CORE
from posenc_cli.cli import cli

from .conftest import require_tool


def run(*args: str):
    return CliRunner().invoke(cli, list(args))


def assert_one_line_error(result, code: int, *fragments: str) -> None:
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("Error: ")
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


def test_generate_is_silent_and_writes_the_table(tmp_path):
    out = tmp_path / "pe.npy"
    result = run("generate", "-n", "16", "-d", "8", "-o", str(out))
    assert result.exit_code == 0 and result.stdout == "" and result.stderr == ""
    table = np.load(out)
    assert table.shape == (16, 8) and table.dtype == np.float32
    assert table.tobytes() == posenc_cli.sinusoidal(16, 8).tobytes()


def test_verbose_says_what_was_written_on_stderr(tmp_path):
    result = run("generate", "-n", "4", "-d", "4", "-o", str(tmp_path / "pe.c"), "-v")
    assert result.exit_code == 0 and result.stdout == ""
    assert "pe.c" in result.stderr and "pe.h" in result.stderr and "4 x 4 float32" in result.stderr


def test_format_option_overrides_the_suffix(tmp_path):
    out = tmp_path / "table.bin"
    assert run("generate", "-n", "3", "-d", "2", "-o", str(out), "--format", "npy").exit_code == 0
    assert np.load(out).shape == (3, 2)


def test_name_sets_the_c_symbol_and_h5_dataset(tmp_path):
    assert run("generate", "-n", "3", "-d", "2", "-o", str(tmp_path / "x.h"), "--name", "pos_table").exit_code == 0
    text = (tmp_path / "x.h").read_text()
    assert "pos_table[POS_TABLE_SEQ_LEN][POS_TABLE_D_MODEL]" in text
    assert run("generate", "-n", "3", "-d", "2", "-o", str(tmp_path / "x.h5"), "--name", "pos_table").exit_code == 0
    assert list(posenc_cli.load(tmp_path / "x.h5").arrays) == ["pos_table"]


def test_no_header_drops_the_csv_header(tmp_path):
    assert run("generate", "-n", "2", "-d", "2", "-o", str(tmp_path / "x.csv"), "--no-header").exit_code == 0
    assert (tmp_path / "x.csv").read_text() == "0.0,1.0\n0.84147096,0.5403023\n"


def test_version_and_help():
    result = run("--version")
    assert result.exit_code == 0 and result.stdout.strip() == f"posenc {posenc_cli.__version__} ({CORE} core)"
    top = run("--help")
    assert top.exit_code == 0 and "generate" in top.stdout and "posenc generate -n 2048" in top.stdout
    sub = run("generate", "--help")
    assert sub.exit_code == 0 and "Examples:" in sub.stdout and "--seq-len" in sub.stdout
    for name in posenc_cli.FORMATS:
        assert name in sub.stdout


def test_python_dash_m_and_console_script_work(tmp_path):
    result = subprocess.run([sys.executable, "-m", "posenc_cli", "--version"], capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.strip() == f"posenc {posenc_cli.__version__} ({CORE} core)"
    bad = subprocess.run(
        [sys.executable, "-m", "posenc_cli", "generate", "-n", "0", "-d", "2", "-o", str(tmp_path / "x.npy")],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and bad.stdout == ""


BAD_PARAMETERS = [
    (["-n", "0", "-d", "8"], "--seq-len", "an integer with 1 <= x <= 2**32, got '0'"),
    (["-n", "-3", "-d", "8"], "--seq-len", "-3"),
    (["-n", "1.5", "-d", "8"], "--seq-len", "1.5"),
    (["-n", "abc", "-d", "8"], "--seq-len", "abc"),
    (["-n", "8", "-d", "0"], "--d-model", "an integer with 1 <= x <= 2**20, got '0'"),
    (["-n", "8", "-d", "-1"], "--d-model", "-1"),
    (["-n", "8", "-d", "2.0"], "--d-model", "2.0"),
    (["-n", "8", "-d", "8", "--base", "0"], "--base", "a number with 1 < x <= 1e12, got '0'"),
    (["-n", "8", "-d", "8", "--base", "-10"], "--base", "a number with 1 < x <= 1e12, got '-10'"),
    (["-n", "8", "-d", "8", "--base", "nan"], "--base", "nan"),
    (["-n", "8", "-d", "8", "--base", "inf"], "--base", "inf"),
    (["-n", "8", "-d", "8", "--dtype", "float8"], "--dtype", "float8"),
    (["-n", "8", "-d", "8", "--dtype", "int8"], "--scale", "needs a scale"),
    (["-n", "8", "-d", "8", "--dtype", "int8", "--scale", "0"], "--scale", "2**-126 <= x <= 2**127, got '0'"),
    (["-n", "8", "-d", "8", "--dtype", "q15", "--scale", "0.5"], "--scale", "int8 only"),
    (["-n", "8", "-d", "8", "--dtype", "int8", "--scale", "0.1", "--zero-point", "200"], "--zero-point", "-128"),
    (["-n", "8", "-d", "8", "--name", "1abc"], "--name", "C identifier"),
    (["-n", "8", "-d", "8", "--name", "pe-table"], "--name", "pe-table"),
    (["-n", "8", "-d", "8", "--name", "int"], "--name", "keyword"),
    (["-n", "8", "-d", "8", "--name", "class"], "--name", "keyword"),
    (["-n", "8", "-d", "8", "--format", "xlsx"], "--format", "xlsx"),
]


@pytest.mark.parametrize(("args", "option", "fragment"), BAD_PARAMETERS)
@pytest.mark.parametrize("suffix", [".npy", ".h"])
def test_bad_parameters_exit_2_with_one_line_and_no_file(tmp_path, args, option, fragment, suffix):
    out = tmp_path / f"pe{suffix}"
    result = run("generate", *args, "-o", str(out))
    assert_one_line_error(result, 2, option, fragment)
    assert list(tmp_path.iterdir()) == []


def test_unknown_suffix_without_format_exits_2(tmp_path):
    result = run("generate", "-n", "8", "-d", "8", "-o", str(tmp_path / "pe.txt"))
    assert_one_line_error(result, 2, "'.txt'", ".npy", "--format")
    assert list(tmp_path.iterdir()) == []


def test_missing_required_option_exits_2(tmp_path):
    assert_one_line_error(run("generate", "-d", "8", "-o", str(tmp_path / "x.npy")), 2, "--seq-len")


def test_missing_directory_exits_1(tmp_path):
    out = tmp_path / "nowhere" / "pe.h"
    assert_one_line_error(run("generate", "-n", "8", "-d", "8", "-o", str(out)), 1, "does not exist", "nowhere")
    assert not (tmp_path / "nowhere").exists()


def test_output_that_is_a_directory_exits_1(tmp_path):
    (tmp_path / "pe.npy").mkdir()
    assert_one_line_error(run("generate", "-n", "8", "-d", "8", "-o", str(tmp_path / "pe.npy")), 1, "is a directory")


@pytest.mark.client
def test_directory_without_write_permission_exits_1(tmp_path):
    """A real permission check even when the suite runs as root (CI does): root loses CAP_DAC_OVERRIDE first."""
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    script = (
        f"from posenc_cli.cli import main; main(['generate', '-n', '8', '-d', '8', '-o', {str(locked / 'pe.h')!r}])"
    )
    command = [sys.executable, "-c", script]
    if os.geteuid() == 0:
        command = [require_tool("setpriv"), "--bounding-set=-dac_override,-dac_read_search", "--", *command]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    try:
        result = subprocess.run(command, capture_output=True, text=True, env=env)
    finally:
        locked.chmod(0o755)
    assert result.returncode == 1, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    assert "permission" in lines[0].lower() and "locked" in lines[0], lines[0]
    assert list(locked.iterdir()) == []


def test_failed_run_keeps_the_previous_file(tmp_path):
    out = tmp_path / "pe.csv"
    out.write_text("previous\n")
    result = run("generate", "-n", "0", "-d", "8", "-o", str(out))
    assert result.exit_code == 2
    assert out.read_text() == "previous\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pe.csv"]


def test_new_files_follow_the_umask(tmp_path):
    old = os.umask(0o027)
    try:
        assert run("generate", "-n", "2", "-d", "2", "-o", str(tmp_path / "pe.npy")).exit_code == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "pe.npy").stat().st_mode) == 0o640


def _run_on_a_terminal(args: list[str]) -> tuple[int, str]:
    """Run posenc with stderr on a pseudo-terminal; return the exit code and what the terminal showed."""
    import pty

    leader, follower = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1]), "COLUMNS": "100"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "posenc_cli", *args], stderr=follower, stdout=subprocess.DEVNULL, env=env
    )
    os.close(follower)
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the terminal closes when the process exits
            break
        if not chunk:
            break
        shown += chunk
    os.close(leader)
    return proc.wait(), shown.decode("utf-8", "replace")


def test_progress_bar_on_a_terminal_only_for_long_work_and_never_with_quiet(tmp_path):
    big = ["generate", "-n", "10000", "-d", "2048", "-o", str(tmp_path / "big.csv")]
    code, shown = _run_on_a_terminal(big)
    assert code == 0 and "writing" in shown and "%" in shown
    code, shown = _run_on_a_terminal([*big, "--quiet"])
    assert code == 0 and shown == ""
    code, shown = _run_on_a_terminal(["generate", "-n", "16", "-d", "8", "-o", str(tmp_path / "small.csv")])
    assert code == 0 and shown == ""


def test_unchanged_output_is_left_untouched_and_a_changed_one_replaced(tmp_path):
    out = tmp_path / "pe.h"
    assert run("generate", "-n", "8", "-d", "4", "-o", str(out)).exit_code == 0
    past = 1_000_000_000
    os.utime(out, (past, past))
    assert run("generate", "-n", "8", "-d", "4", "-o", str(out)).exit_code == 0
    assert out.stat().st_mtime == past
    assert run("generate", "-n", "9", "-d", "4", "-o", str(out)).exit_code == 0
    assert out.stat().st_mtime != past and "PE_SEQ_LEN 9" in out.read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pe.h"]


# ------------------------------------------------------------------------------ pipelines: --check, -o -, --json
@pytest.mark.parametrize("suffix", [".npy", ".h", ".c", ".csv", ".h5", ".npz", ".safetensors"])
def test_check_tells_whether_the_output_would_change_and_writes_nothing(tmp_path, suffix):
    out = tmp_path / f"pe{suffix}"
    args = ["generate", "-n", "8", "-d", "6", "-o", str(out)]
    missing = run(*args, "--check")
    assert missing.exit_code == 1 and f"would create {out}" in missing.stderr and not out.exists()
    assert sorted(os.listdir(tmp_path)) == []  # not even a temporary file
    assert run(*args).exit_code == 0
    written = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in tmp_path.iterdir()}
    up_to_date = run(*args, "--check")
    assert up_to_date.exit_code == 0 and up_to_date.stdout == "" and up_to_date.stderr == ""
    changed = run("generate", "-n", "9", "-d", "6", "-o", str(out), "--check")
    assert changed.exit_code == 1 and f"would rewrite {out}" in changed.stderr
    assert {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in tmp_path.iterdir()} == written
    rewritten = run(*args)  # a normal run of the same table leaves every file untouched, mtime included
    assert rewritten.exit_code == 0
    assert {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in tmp_path.iterdir()} == written


def test_check_json_report(tmp_path):
    import json

    out = tmp_path / "pe.npy"
    result = run("generate", "-n", "8", "-d", "6", "-o", str(out), "--check", "--json")
    assert result.exit_code == 1
    assert json.loads(result.stdout) == {"up_to_date": False, "would_change": [str(out)]}


@pytest.mark.parametrize("fmt", ["npy", "npz", "safetensors", "h5", "csv", "h", "bin"])
def test_stdout_gets_the_same_bytes_as_a_file(tmp_path, fmt):
    out = tmp_path / f"pe.{fmt}"
    args = ["generate", "-n", "8", "-d", "6", "--name", "pe", "-f", fmt]
    if fmt == "bin":  # two files: refused on stdout, one line, nothing written
        assert_one_line_error(run(*args, "-o", "-"), 2, "-o", "stdout")
        return
    piped = run(*args, "-o", "-")
    assert piped.exit_code == 0 and piped.stderr == ""
    assert run(*args, "-o", str(out)).exit_code == 0
    want = out.read_bytes()
    if fmt == "h":  # the provenance comment names the output: "-" (the file name and in "-o -")
        want = want.replace(b"pe.h", b"-")
    assert piped.stdout_bytes == want


def test_stdout_usage_errors():
    assert_one_line_error(run("generate", "-n", "4", "-d", "4", "-o", "-"), 2, "--format", "stdout")
    assert_one_line_error(run("generate", "-n", "4", "-d", "4", "-o", "-", "-f", "c"), 2, "stdout")
    assert_one_line_error(run("generate", "-n", "4", "-d", "4", "-o", "-", "-f", "npy", "--json"), 2, "--json")
    assert_one_line_error(run("generate", "-n", "4", "-d", "4", "-o", "-", "-f", "npy", "--check"), 2, "--check")


def test_stdout_through_a_real_pipe():
    """The table reaches a consumer process intact (numpy reading the pipe)."""
    cmd = [sys.executable, "-m", "posenc_cli", "generate", "-n", "32", "-d", "16", "-f", "npy", "-o", "-"]
    produced = subprocess.run(cmd, capture_output=True, check=True)
    import io

    assert np.load(io.BytesIO(produced.stdout)).tobytes() == posenc_cli.sinusoidal(32, 16).tobytes()
    assert produced.stderr == b""


@pytest.mark.parametrize(
    "args",
    [
        ["generate", "-n", "40", "-d", "10", "-p", "fairseq"],
        ["rope", "-n", "12", "--head-dim", "8"],
        ["alibi", "-H", "6", "-n", "5"],
        ["sincos2d", "-g", "3x2", "-d", "8"],
    ],
)
def test_json_report_names_every_output_and_hashes_the_data(tmp_path, args):
    import hashlib
    import json
    import zipfile

    out = tmp_path / "t.npz"
    result = run(*args, "-o", str(out), "--json")
    assert result.exit_code == 0 and result.stderr == ""
    doc = json.loads(result.stdout)
    assert doc["format"] == "npz" and doc["outputs"] == [{"path": str(out), "bytes": out.stat().st_size}]
    with np.load(out) as data:
        for key, entry in doc["arrays"].items():
            array = data[key]
            assert entry["shape"] == list(array.shape)
            assert entry["sha256"] == hashlib.sha256(np.ascontiguousarray(array, "<f4").tobytes()).hexdigest()
    assert doc["kind"] == json.loads(zipfile.ZipFile(out).comment)["kind"]
    again = run(*args, "-o", str(tmp_path / "u.npz"))  # --json changes nothing in the file
    assert again.exit_code == 0 and (tmp_path / "u.npz").read_bytes() == out.read_bytes()


# --------------------------------------------------------------------------- plot, show, completion, --help
def test_plot_writes_a_png_an_image_library_opens(tmp_path):
    from PIL import Image

    out = tmp_path / "pe.png"
    result = run("plot", "-n", "128", "-d", "64", "--dims", "0,1,10", "-o", str(out))
    assert result.exit_code == 0 and result.stdout == "" and result.stderr == "", result.output
    with Image.open(out) as image:
        assert image.format == "PNG" and image.size == (800, 900)  # 8 x 9 in at 100 dpi: heatmap + line panel
        pixels = np.asarray(image.convert("RGB")).reshape(-1, 3).astype(int)
    assert len(np.unique(pixels, axis=0)) > 200  # a real heatmap, not a blank canvas
    assert np.any((pixels[:, 0] > 150) & (pixels[:, 2] < 90)) and np.any((pixels[:, 2] > 150) & (pixels[:, 0] < 90))
    npy = tmp_path / "rope.npz"
    assert run("rope", "-n", "32", "--head-dim", "16", "-o", str(npy)).exit_code == 0
    assert run("plot", str(npy), "--part", "sin", "-o", str(tmp_path / "sin.png")).exit_code == 0
    with Image.open(tmp_path / "sin.png") as image:
        assert image.size == (800, 600)


#: A title matplotlib's default font has no glyph for: drawing it, matplotlib warns (UserWarning "Glyph ... missing").
NO_GLYPH = "\U0001f984 table"


def test_matplotlib_does_warn_about_a_missing_glyph(tmp_path):
    """What the next two tests rely on: the library itself warns, so a clean stderr there is the CLI's doing."""
    pytest.importorskip("matplotlib")
    code = (f"import posenc_cli, posenc_cli.plot as p; p.heatmap_png(posenc_cli.generate(8, 8), {str(tmp_path)!r} "
            f"+ '/p.png', title={NO_GLYPH!r}, dpi=20)")  # fmt: skip
    done = subprocess.run([sys.executable, "-W", "always", "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and "Glyph" in done.stderr and "UserWarning" in done.stderr, done.stderr


@pytest.mark.parametrize("setting", ["always", "error", "default"])
def test_no_python_warning_reaches_the_terminal(tmp_path, setting):
    """``PYTHONWARNINGS=always`` (or ``error``, which would make matplotlib's warning a failure) and a title
    matplotlib warns about: the command succeeds and stderr is empty (issue #25)."""
    pytest.importorskip("matplotlib")
    env = {**os.environ, "PYTHONWARNINGS": setting}
    argv = [sys.executable, "-m", "posenc_cli", "plot", "-n", "8", "-d", "8", "--title", NO_GLYPH, "-o", "pe.png"]
    done = subprocess.run([*argv, "--dpi", "20"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert (done.returncode, done.stderr, done.stdout) == (0, "", "")
    assert (tmp_path / "pe.png").read_bytes().startswith(b"\x89PNG")


def test_no_python_warning_reaches_the_terminal_in_process(tmp_path):
    """The same through ``cli.main`` (CliRunner, no console script), with every warning turned on around it: none
    leaves the group (to be shown or recorded), and posenc's own notes still come through as notes."""
    pytest.importorskip("matplotlib")
    import warnings

    with warnings.catch_warnings(record=True) as escaped:
        warnings.simplefilter("always")
        result = run("plot", "-n", "8", "-d", "8", "--title", NO_GLYPH, "-o", str(tmp_path / "pe.png"), "--dpi", "20")
        assert (result.exit_code, result.stderr) == (0, "")
        big = run("generate", "-n", "1024", "-d", "300", "-o", str(tmp_path / "pe.h"))
        assert big.exit_code == 0 and big.stderr.startswith("Note: pe.h holds") and len(big.stderr.splitlines()) == 1
    assert [str(w.message) for w in escaped] == []


def test_plot_errors_are_one_line(tmp_path, monkeypatch):
    out = str(tmp_path / "pe.png")
    assert_one_line_error(run("plot", "-o", out), 2, "FILE")
    assert_one_line_error(run("plot", "-n", "8", "-d", "4", "-o", str(tmp_path / "pe.jpg")), 2, ".png")
    assert_one_line_error(run("plot", str(tmp_path / "missing.npy"), "-o", out), 1, "missing.npy")
    assert_one_line_error(run("plot", "-n", "8", "-d", "4", "--dims", "0,x", "-o", out), 2, "--dims")
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert_one_line_error(run("plot", "-n", "8", "-d", "4", "-o", out), 1, "pip install 'posenc[plot]'")
    assert not (tmp_path / "pe.png").exists()


def test_show_draws_a_small_heatmap(tmp_path):
    result = run("show", "-n", "256", "-d", "64", "--width", "50", "--height", "10")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("sinusoidal") and "256×64" in lines[0] and len(lines) <= 10
    assert all(len(line) <= 50 for line in lines) and "▀" in result.stdout
    out = tmp_path / "alibi.npz"
    assert run("alibi", "-H", "8", "-n", "16", "-o", str(out)).exit_code == 0
    shown = run("show", str(out))  # the one 2-D array (bias) by default
    assert shown.exit_code == 0 and "bias" in shown.stdout.splitlines()[0]


def test_shell_completion_is_clicks():
    env = {
        **os.environ,
        "_POSENC_COMPLETE": "bash_complete",
        "COMP_WORDS": "posenc generate --preset f",
        "COMP_CWORD": "3",
    }
    done = subprocess.run([sys.executable, "-m", "posenc_cli"], env=env, capture_output=True, text=True)
    assert done.returncode == 0 and "fairseq" in done.stdout
    env = {**os.environ, "_POSENC_COMPLETE": "bash_source"}
    script = subprocess.run([sys.executable, "-m", "posenc_cli"], env=env, capture_output=True, text=True).stdout
    assert "complete -o nosort -F _posenc_completion posenc" in script


def test_help_lists_every_command_with_one_line():
    result = run("--help")
    listed = result.stdout.split("Commands:")[1].strip().splitlines()
    names = [line.split()[0] for line in listed]
    assert names == sorted(cli.commands)
    assert all(len(line.split(None, 1)) == 2 for line in listed)  # every command has its one-line summary


def test_the_group_names_every_registered_kind():
    """The group's commands are the registry's kinds and the others, each imported only when asked for."""
    from posenc_cli.cli import OTHER_COMMANDS, command_names
    from posenc_cli.kinds import KINDS

    assert set(command_names()) == {kind.command for kind in KINDS.values()} | set(OTHER_COMMANDS)
    assert not set(OTHER_COMMANDS) & set(KINDS)
    for name in command_names():
        assert cli.commands[name].name == name


#: What ``posenc generate ... -o x.npy`` must not import: the other commands' machinery (RoPE, the index kinds,
#: the manifest reader, the verifier, rich, h5py, the text formatter). Start-up time is part of every build step's.
NOT_FOR_NPY = (
    "posenc_cli.kinds._rope_caches",
    "posenc_cli.kinds.rope_config",
    "posenc_cli.encodings.rope",
    "posenc_cli.encodings.relative",
    "posenc_cli.encodings.window",
    "posenc_cli.encodings.alibi",
    "posenc_cli.encodings.sincos2d",
    "posenc_cli.manifest",
    "posenc_cli.verify",
    "posenc_cli.cli.build",
    "posenc_cli.cli.files",
    "posenc_cli.cli.view",
    "posenc_cli.cli.identify",
    "posenc_cli.identification",
    "posenc_cli.formats.text",
    "tomllib",
    "rich",
    "h5py",
    "posenc_cli.cli.reference",
    "posenc_cli.describe",
    "posenc_cli.plot",
    "posenc_cli.formats.c",
)

#: The encoding modules ``posenc generate`` (the paper's table) stands on: the exact engine, nothing more.
NPY_ENCODINGS = [
    "posenc_cli.encodings._columns",
    "posenc_cli.encodings._combine",
    "posenc_cli.encodings._engine",
    "posenc_cli.encodings._exact",
    "posenc_cli.encodings._kernel",
    "posenc_cli.encodings.presets",
    "posenc_cli.encodings.sinusoid",
    "posenc_cli.encodings.sinusoidal",
]

#: Standard modules only some paths need, which ``generate ... -o x.npy`` must not import (tempfile: every atomic
#: write makes its own temporary file without it; the others are the other commands').
STDLIB_NOT_FOR_NPY = ("tempfile", "shutil", "bz2", "lzma", "random", "hashlib", "zipfile", "tomllib", "csv")


def test_generate_npy_imports_only_what_it_needs(tmp_path):
    code = (
        "import sys\n"
        "from posenc_cli.cli import main\n"
        "try:\n"
        f"    main(['generate', '-n', '16', '-d', '8', '-o', {str(tmp_path / 'pe.npy')!r}])\n"
        "except SystemExit as exc:\n"
        "    assert not exc.code, exc.code\n"
        "print('\\n'.join(sorted(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(done.stdout.split())
    assert (tmp_path / "pe.npy").is_file()
    assert sorted(name for name in NOT_FOR_NPY if name in loaded) == []
    # The registry names its kinds without importing them: generate imports its own kind and no other's.
    assert sorted(name for name in loaded if name.startswith("posenc_cli.kinds")) == [
        "posenc_cli.kinds", "posenc_cli.kinds._shared", "posenc_cli.kinds.sinusoid"
    ]  # fmt: skip
    assert sorted(name for name in loaded if name.startswith("posenc_cli.encodings.")) == NPY_ENCODINGS
    # what numpy and click import themselves is theirs (numpy 1.24 imports random and hashlib; numpy 2 does not)
    theirs = subprocess.run(
        [sys.executable, "-c", "import sys, numpy, click; print('\\n'.join(sys.modules))"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    assert sorted(name for name in STDLIB_NOT_FOR_NPY if name in loaded and name not in theirs) == []


@pytest.mark.client
def test_non_ascii_digits_and_file_names(tmp_path):
    """Unicode digits are not numbers here ('²'.isdigit() is true in Python), and a non-ASCII output name works in
    every C output (the .incbin directive spells it with octal escapes)."""
    assert_one_line_error(run("generate", "-n", "2", "-d", "2", "--padding-idx", "²", "-o", "x.npy"), 2, "--padding")
    assert_one_line_error(run("sincos2d", "-g", "²x3", "-d", "8", "-o", "x.npy"), 2, "--grid")
    assert_one_line_error(run("plot", "-n", "8", "-d", "4", "--dims", "1,٣", "-o", "x.png"), 2, "--dims")
    for name in ("entête.h", "tablé.c", "donnée.bin"):
        result = run("generate", "-n", "4", "-d", "4", "-o", str(tmp_path / name))
        assert result.exit_code == 0, result.output
    header = (tmp_path / "donnée.h").read_text("utf-8")
    assert '.incbin \\"donn\\303\\251e.bin\\"' in header
    gcc = require_tool("gcc")
    for source, define in (("tablé.c", []), ("use.c", ["-DDONN_E_INCBIN"])):
        if source == "use.c":
            (tmp_path / source).write_text(
                '#include "donnée.h"\nint main(void) { return donn_e[1][0] > 0.8f ? 0 : 1; }\n'
            )
        flags = ["-std=c99", "-Wall", "-Wextra", "-Wpedantic", "-Werror", *define]
        command = [gcc, *flags, source, "-o", f"{source}.out"] + (["-c"] if source == "tablé.c" else [])
        compiled = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True)
        assert compiled.returncode == 0, compiled.stderr
    assert subprocess.run([str(tmp_path / "use.c.out")]).returncode == 0  # the assembler found donnée.bin
    quote = tmp_path / 'a"b.c'
    assert_one_line_error(run("generate", "-n", "2", "-d", "2", "-o", str(quote)), 2, "#include")
    assert not quote.exists()


@pytest.mark.parametrize(
    "options, output, flag",
    [
        (["--progmem"], "x.npy", "--progmem"),
        (["--align", "16"], "x.npy", "--align"),
        (["--float-literal", "hex"], "x.npy", "--float-literal"),
        (["--lang", "c++", "--namespace", "x"], "x.csv", "--lang"),
        (["--c-half-type", "_Float16", "--dtype", "float16"], "x.h5", "--c-half-type"),
        (["--no-header"], "x.h", "--header"),
        (["--align", "16"], "x.safetensors", "--align"),
    ],
)
def test_an_option_the_format_does_not_take_is_refused(tmp_path, monkeypatch, options, output, flag):
    """Options that could not take effect were ignored (exit 0); now one line names the option and who takes it."""
    monkeypatch.chdir(tmp_path)
    result = run("generate", "-n", "4", "-d", "4", *options, "-o", output)
    assert_one_line_error(result, 2, flag)
    assert "csv" in result.stderr if flag == "--header" else "h, c, bin formats" in result.stderr
    assert os.listdir(tmp_path) == []


def test_options_left_at_their_defaults_are_accepted_by_every_format(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for output in ("x.npy", "x.csv", "x.h5", "x.npz", "x.safetensors", "x.h", "x.c", "x.bin"):
        result = run("generate", "-n", "4", "-d", "4", "--lang", "c", "--float-literal", "decimal", "--header",
                     "-o", output)  # fmt: skip
        assert result.exit_code == 0, (output, result.stderr)
