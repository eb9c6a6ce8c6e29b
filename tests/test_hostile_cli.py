"""The attacks of issue #11 on the command line's own ground: where outputs go, what reaches the terminal, what
a manifest may write, and the odd inputs and streams a hostile caller or file can arrange.

Each test performs the attack for real (a FIFO, /dev/null as root, a log behind /dev/stdout, two writers racing on
one .c/.h pair, a manifest that climbs out of its folder, escape sequences in a file's names, a closed stdout,
Ctrl-C during start-up) and checks the rule docs/guarantees.md states. The readers' own attacks are in
test_hostile_files.py, test_hostile_hdf5.py and test_hostile_c.py.
"""

from __future__ import annotations

import io
import json
import os
import re
import resource
import signal
import stat
import subprocess
import sys
import textwrap
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from posenc_cli.cli import cli

POSENC = [sys.executable, "-m", "posenc_cli"]


def run(*args: str):
    return CliRunner().invoke(cli, list(args))


def assert_one_line_error(result, code: int, *fragments: str) -> None:
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and "Traceback" not in result.stderr, result.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


def posenc(*args: str, timeout: float = 60, **kwargs) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*POSENC, *args], capture_output=True, text=True, timeout=timeout, **kwargs)


# ----------------------------------------------------------------------------------- outputs that are not files
def test_dev_null_is_never_replaced(tmp_path):
    """As root, ``-o /dev/null`` used to rename a regular file over the system's /dev/null."""
    before = os.stat("/dev/null")
    assert stat.S_ISCHR(before.st_mode)
    assert_one_line_error(run("generate", "-n", "4", "-d", "4", "-f", "npy", "-o", "/dev/null"), 1, "not a regular")
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev


def test_a_fifo_output_is_refused_and_kept(tmp_path):
    fifo = tmp_path / "pe.npy"
    os.mkfifo(fifo)
    result = posenc("generate", "-n", "4", "-d", "4", "-o", str(fifo), timeout=30)  # must not block on the FIFO
    assert result.returncode == 1 and "not a regular file" in result.stderr and "Traceback" not in result.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert sorted(os.listdir(tmp_path)) == ["pe.npy"]


@pytest.mark.parametrize("target", ["/dev/stdout", "/dev/fd/1", "/proc/self/fd/1", "link"])
def test_a_log_behind_stdout_is_not_wiped(tmp_path, target):
    """``posenc ... -o /dev/stdout >> build.log`` replaced build.log with the table."""
    log = tmp_path / "build.log"
    log.write_text("earlier build output\n")
    if target == "link":
        (tmp_path / "pe.csv").symlink_to("/dev/stdout")
        target = str(tmp_path / "pe.csv")
    with open(log, "ab") as out:
        result = subprocess.run(
            [*POSENC, "generate", "-n", "4", "-d", "4", "-f", "csv", "-o", target],
            stdout=out,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    assert result.returncode == 1, result.stderr
    assert "use -o - to write to stdout" in result.stderr and "Traceback" not in result.stderr
    assert log.read_text() == "earlier build output\n"
    assert stat.S_ISREG(os.lstat(log).st_mode)


def test_dash_o_dash_still_writes_to_stdout():
    result = posenc("generate", "-n", "2", "-d", "2", "-f", "csv", "-o", "-")
    assert result.returncode == 0 and result.stdout.splitlines()[0] == "d0,d1"


# ------------------------------------------------------------------------------------ modes and read-only files
def test_a_rewrite_keeps_the_files_mode(tmp_path):
    out = tmp_path / "pe.npy"
    assert run("generate", "-n", "4", "-d", "4", "-o", str(out)).exit_code == 0
    os.chmod(out, 0o600)
    assert run("generate", "-n", "8", "-d", "4", "-o", str(out)).exit_code == 0
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o600
    assert np.load(out).shape == (8, 4)


def test_a_read_only_file_is_not_replaced(tmp_path):
    """As root, posenc replaced 0444 files; cp refuses them."""
    out = tmp_path / "pe.npy"
    assert run("generate", "-n", "4", "-d", "4", "-o", str(out)).exit_code == 0
    os.chmod(out, 0o444)
    before = out.read_bytes()
    assert_one_line_error(run("generate", "-n", "8", "-d", "4", "-o", str(out)), 1, "read-only", "0444")
    assert out.read_bytes() == before and stat.S_IMODE(os.stat(out).st_mode) == 0o444


# ------------------------------------------------------------------------------------- torn pairs: the race
def _rows_and_declared(c_file: Path, h_file: Path) -> tuple[int, int]:
    rows = sum(1 for line in c_file.read_text().splitlines() if line.startswith("    {"))
    declared = int(re.search(r"#define PE_SEQ_LEN ([0-9]+)", h_file.read_text()).group(1))
    return rows, declared


def test_concurrent_writers_of_one_pair_never_leave_a_torn_pair(tmp_path):
    """Two processes write pe.c/pe.h at once, one 8 rows, one 16: the pair is always one writer's.

    Without the pair lock this left a .c of 8 rows beside a .h declaring 16 in 2 of 40 trials.
    """
    c_file = tmp_path / "pe.c"
    for trial in range(12):
        writers = [
            subprocess.Popen(
                [*POSENC, "generate", "-n", str(n), "-d", "64", "--name", "pe", "-o", str(c_file)],
                stderr=subprocess.PIPE,
            )
            for n in ((8, 16) if trial % 2 else (16, 8))
        ]
        for writer in writers:
            _, err = writer.communicate(timeout=120)
            assert writer.returncode == 0, err
        rows, declared = _rows_and_declared(c_file, tmp_path / "pe.h")
        assert rows == declared, f"trial {trial}: pe.c has {rows} rows, pe.h declares {declared}"
    assert sorted(os.listdir(tmp_path)) == ["pe.c", "pe.h"]


# --------------------------------------------------------------------------------- a manifest writes anywhere
def _manifest(directory: Path, output: str, name: str = "posenc.toml") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(
        textwrap.dedent(
            f"""\
            [[table]]
            command = "generate"
            output = {json.dumps(output)}
            format = "csv"
            seq_len = 4
            d_model = 4
            """
        )
    )
    return path


@pytest.mark.parametrize("output", ["../home/.profile", "{outside}/.profile", "sub/../../x.csv"])
def test_a_manifest_cannot_write_outside_its_folder(tmp_path, output):
    project, outside = tmp_path / "project", tmp_path / "home"
    outside.mkdir()
    (outside / ".profile").write_text("export PATH=/usr/bin\n")
    (project / "sub").mkdir(parents=True)
    manifest = _manifest(project, output.format(outside=outside))
    assert_one_line_error(run("build", str(manifest)), 2, "outside", "--allow-outside")
    assert (outside / ".profile").read_text() == "export PATH=/usr/bin\n"
    assert not (tmp_path / "x.csv").exists()


def test_a_symlink_committed_in_the_repository_cannot_redirect_an_output(tmp_path):
    project, outside = tmp_path / "project", tmp_path / "home"
    outside.mkdir()
    victim = outside / ".bashrc"
    victim.write_text("mine\n")
    manifest = _manifest(project, "tables/pe.csv")
    (project / "tables").mkdir()
    (project / "tables" / "pe.csv").symlink_to(victim)
    assert_one_line_error(run("build", str(manifest)), 2, "outside")
    (project / "tables" / "pe.csv").unlink()
    (project / "tables").rmdir()
    (project / "tables").symlink_to(outside)
    assert_one_line_error(run("build", str(manifest)), 2, "outside")
    assert victim.read_text() == "mine\n" and not (outside / "pe.csv").exists()


def test_allow_outside_is_the_command_lines_to_give(tmp_path):
    project = tmp_path / "project"
    manifest = _manifest(project, "../shared/pe.csv")
    (tmp_path / "shared").mkdir()
    result = run("build", str(manifest), "--allow-outside")
    assert result.exit_code == 0, result.stderr
    assert (tmp_path / "shared" / "pe.csv").read_text().startswith("d0,d1,d2,d3\n")


def test_output_dir_is_the_root_when_given(tmp_path):
    manifest = _manifest(tmp_path / "src", "pe.csv")
    build = tmp_path / "build"
    build.mkdir()
    result = run("build", str(manifest), "--output-dir", str(build), "--depfile", str(build / "pe.d"))
    assert result.exit_code == 0, result.stderr
    assert (build / "pe.csv").exists() and (build / "pe.d").exists()


@pytest.mark.parametrize("which", ["manifest", "output"])
def test_the_depfile_cannot_be_the_manifest_or_an_output(tmp_path, which):
    manifest = _manifest(tmp_path, "pe.csv")
    text = manifest.read_text()
    depfile = manifest if which == "manifest" else tmp_path / "pe.csv"
    assert_one_line_error(run("build", str(manifest), "--depfile", str(depfile)), 2, "depfile")
    assert manifest.read_text() == text
    assert not (tmp_path / "pe.csv").exists()


def test_a_depfile_link_cannot_point_outside(tmp_path):
    project, outside = tmp_path / "project", tmp_path / "home"
    outside.mkdir()
    manifest = _manifest(project, "pe.csv")
    (project / "tables.d").symlink_to(outside / ".profile")
    assert_one_line_error(run("build", str(manifest), "--depfile", str(project / "tables.d")), 2, "outside")
    assert not (outside / ".profile").exists() and not (project / "pe.csv").exists()


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("x = " + "[" * 100_000 + "]" * 100_000 + "\n", "nest deeper"),
        ("a = " + "{b = " * 5_000 + "1" + "}" * 5_000 + "\n", "nest deeper"),
        ("a" + ".a" * 100_000 + " = 1\n", "dotted key"),
        ("[" + ".".join(["t"] * 1_000) + "]\nx = 1\n", "dotted key"),
    ],
)
def test_toml_bombs_are_refused_as_bad_manifests(tmp_path, text, fragment):
    """A nesting bomb was a RecursionError (exit 1); 10^5 dotted parts took 28 s."""
    (tmp_path / "posenc.toml").write_text(text)
    assert_one_line_error(run("build", str(tmp_path / "posenc.toml")), 2, fragment)


def test_ordinary_manifests_pass_the_bomb_scan(tmp_path):
    manifest = tmp_path / "posenc.toml"
    factors = ", ".join(["1.0", "1.5", "2.25"] * 11)  # many dots in values, none in keys
    manifest.write_text(
        textwrap.dedent(
            f"""\
            # a comment with [brackets] and a.dotted.word
            [defaults]
            dtype = "float32"  # trailing [comment]
            [defaults.rope]
            seq_len = 16
            [[table]]
            command = "rope"
            output = "r.npz"
            head_dim = 66
            scaling = "longrope"
            factor = 4.0
            original_max_positions = 8
            short_factor = [{factors}]
            long_factor = [{factors}]
            """
        )
    )
    result = run("build", str(manifest))
    assert result.exit_code == 0, result.stderr


def test_a_huge_manifest_is_refused(tmp_path):
    (tmp_path / "posenc.toml").write_text("# " + "x" * (2 << 20) + "\n")
    assert_one_line_error(run("build", str(tmp_path / "posenc.toml")), 2, "larger than")


# ------------------------------------------------------------------------------------ terminal and markup
ESCAPES = "\x1b]8;;http://attacker.example/\x1b\\click\x1b]8;;\x1b\\\x1b[2J\r\u202e"


def _npz(path: Path, members: dict[str, np.ndarray], meta: dict | None = None) -> None:
    with zipfile.ZipFile(path, "w") as archive:
        for name, array in members.items():
            buffer = io.BytesIO()
            np.save(buffer, array)
            archive.writestr(name, buffer.getvalue())
        if meta is not None:
            archive.writestr("posenc.json", json.dumps(meta))


def test_escape_sequences_and_markup_from_a_file_are_printed_escaped(tmp_path):
    table = tmp_path / "evil.npz"
    meta = {"kind": "array" + ESCAPES, "params": {"note": "[link=http://attacker.example/]x[/link]" + ESCAPES}}
    _npz(table, {"pe.npy": np.ones((2, 2), np.float32), f"[bold]k{ESCAPES}.npy": np.zeros((2, 2), np.float32)}, meta)
    for command in (["inspect", str(table)], ["show", str(table), "--part", "pe"]):
        result = posenc(*command)
        assert result.returncode in (0, 1), result.stderr
        for stream in (result.stdout, result.stderr):
            assert "\x1b" not in stream and "\r" not in stream and "\u202e" not in stream, repr(stream)
        if result.returncode == 0 and command[0] == "inspect":
            assert "[link=http://attacker.example/]x[/link]" in result.stdout  # shown as text, not as a link
            assert "\\x1b" in result.stdout


def test_an_error_naming_a_hostile_key_is_one_escaped_line(tmp_path):
    table = tmp_path / "evil.npz"
    _npz(table, {"pe.npy": np.ones((2, 2), np.float32)})
    result = posenc("convert", str(table), str(tmp_path / "out.npy"), "--key", "nope" + ESCAPES)
    assert result.returncode == 2 and "\x1b" not in result.stderr and len(result.stderr.splitlines()) == 1


# ---------------------------------------------------------------------------------------- inputs, streams
def test_a_fifo_input_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pe.npy"
    os.mkfifo(fifo)
    result = posenc("inspect", str(fifo), timeout=30)
    assert result.returncode == 1 and "not a regular file" in result.stderr


def test_a_link_to_dev_zero_is_refused_before_reading(tmp_path):
    (tmp_path / "pe.npy").symlink_to("/dev/zero")
    for command in ("inspect", "verify"):
        result = posenc(command, str(tmp_path / "pe.npy"), timeout=30)
        assert result.returncode == 1 and "not a regular file" in result.stderr, result.stderr


def test_a_closed_stdout_is_an_error_not_lost_output(tmp_path):
    table = tmp_path / "pe.npz"
    assert run("generate", "-n", "4", "-d", "4", "-o", str(table)).exit_code == 0
    for args in (["inspect", str(table), "--json"], ["generate", "-n", "4", "-d", "4", "-f", "csv", "-o", "-"]):
        result = subprocess.run([*POSENC, *args], stdout=None, stderr=subprocess.PIPE, text=True, timeout=60,
                                preexec_fn=lambda: os.close(1))  # fmt: skip
        assert result.returncode == 1 and "stdout is closed" in result.stderr, result.stderr
        assert "Traceback" not in result.stderr


@pytest.mark.parametrize("delay", [0.0, 0.02, 0.08, 0.2])
def test_ctrl_c_during_start_up_is_one_line(tmp_path, delay):
    """SIGINT in the first ~0.3 s (while numpy and click are imported) printed a Python traceback.

    The signal is sent once the entry module is imported (``-X importtime`` says when), then after ``delay``:
    from there on, start-up is posenc's (before it, the interpreter's own start-up answers Ctrl-C as Python does).
    """
    process = subprocess.Popen(
        [sys.executable, "-X", "importtime", "-c", "from posenc_cli._entry import main; main()", "generate",
         "-n", "64", "-d", "64", "-o", str(tmp_path / "pe.npy")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert process.stderr is not None
    seen = []
    for line in process.stderr:
        seen.append(line)
        if line.rstrip().endswith("| posenc_cli._entry"):
            break
    time.sleep(delay)
    process.send_signal(signal.SIGINT)
    rest, _ = process.communicate(timeout=60)[1], None
    err = "".join(line for line in [*seen, *rest.splitlines(keepends=True)] if not line.startswith("import time:"))
    assert "Traceback" not in err, err
    # 130: posenc's answer, before or during the work. 0: the signal came as the process was exiting, still under
    # Python's handler. -SIGINT: it came after the interpreter's finalisation had put SIGINT back to its default
    # action (CPython does, as its last step), so the process died of it, as a shell counts 130 too.
    assert process.returncode in (0, 130, -signal.SIGINT), (process.returncode, err)
    if process.returncode == 130:
        assert err.strip() == "Error: interrupted"
    else:
        assert err == ""
    if process.returncode != 130 or (tmp_path / "pe.npy").exists():  # (130: it came after the rename, or before)
        assert np.load(tmp_path / "pe.npy").shape == (64, 64)  # the whole table, never a part
    assert [p.name for p in tmp_path.iterdir()] in ([], ["pe.npy"])  # and no temporary file


def test_inspect_json_writes_infinities_as_json_allows(tmp_path):
    np.save(tmp_path / "inf.npy", np.array([[1.0, np.inf], [-np.inf, 0.0]], np.float32))
    result = run("inspect", str(tmp_path / "inf.npy"), "--json")
    assert result.exit_code == 0, result.stderr
    facts = json.loads(result.stdout)  # strict JSON: Python's json would also take Infinity, so check the text
    assert "Infinity" not in result.stdout
    (array,) = facts["arrays"].values()
    assert array["min"] == "-inf" and array["max"] == "inf"


@pytest.mark.parametrize(
    "args",
    [
        ["generate", "-n", "\u0661\u0662", "-d", "4", "-f", "npy", "-o", "x.npy"],
        ["generate", "-n", "4", "-d", "\uff18", "-f", "npy", "-o", "x.npy"],
        ["generate", "-n", "4", "-d", "4", "--base", "\u0661\u0660\u0660", "-o", "x.npy"],
        ["rope", "-n", "4", "--head-dim", "8", "--theta", "\u0967\u0966", "-o", "x.npz"],
    ],
)
def test_numbers_are_ascii_only(tmp_path, monkeypatch, args):
    """``-n ١٢`` was read as 12."""
    monkeypatch.chdir(tmp_path)
    assert_one_line_error(run(*args), 2, "ASCII")
    assert os.listdir(tmp_path) == []


# ------------------------------------------------------------------------------- parameters that are bombs
def test_verify_refuses_a_tiny_file_whose_parameters_claim_a_huge_table(tmp_path):
    """A 657-byte .npz claiming a huge ALiBi bias made verify build it (gigabytes) before comparing."""
    table = tmp_path / "claim.npz"
    meta = {"kind": "alibi", "params": {"heads": 256, "seq_len": 1 << 20, "dtype": "float32"}}
    _npz(table, {"bias.npy": np.zeros((1, 1), np.float32)}, meta)
    assert table.stat().st_size < 1024

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    result = subprocess.run([*POSENC, "verify", str(table)], capture_output=True, text=True, timeout=120,
                            preexec_fn=limit)  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert "needs" in result.stderr and "--max-memory" in result.stderr and "Traceback" not in result.stderr


def test_max_memory_is_a_size(tmp_path):
    table = tmp_path / "pe.npy"
    assert run("generate", "-n", "4", "-d", "4", "-o", str(table)).exit_code == 0
    assert run("inspect", str(table), "--max-memory", "64M").exit_code == 0
    assert_one_line_error(run("inspect", str(table), "--max-memory", "lots"), 2, "--max-memory")
    assert_one_line_error(run("inspect", str(table), "--max-memory", "0"), 2, "--max-memory")
    result = run("inspect", str(table), "--max-memory", "16")
    assert_one_line_error(result, 1, "--max-memory")
