"""Nothing lost, nothing half-written: posenc under signals, full disks, odd paths, rivals and absurd sizes.

Whatever happens, an output holds either the complete new file or what it held before; every error is one line;
no request can exhaust the machine. Each test really does it: real signals to real processes, a real full file
system (a tmpfs in a private mount namespace, else a file-size limit), real concurrent writers.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from posenc_cli import _resources, api
from posenc_cli.cli import cli
from posenc_cli.errors import OutputError, PosencError
from posenc_cli.formats import FORMATS
from posenc_cli.formats.text.spell import bfloat16_text
from posenc_cli.system import atomic, capacity, signals
from posenc_cli.table import RowSource, Table

from .conftest import require_tool

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
PREVIOUS = b"previous output, not a table\n"
#: Tables big enough to take seconds to write (each run is signalled long before it ends).
BIG = {"npy": ["-n", "250000", "-d", "1024"], "csv": ["-n", "100000", "-d", "1024"]}
#: No test process may write more than this, whatever goes wrong: the disk of the machine running the tests is safe.
FILE_SIZE_CAP = 2 << 30


def run(*args: str):
    return CliRunner().invoke(cli, list(args))


def one_error_line(stderr: str) -> str:
    """The one line a failed posenc printed (click puts a blank line after a ^C), checked to be the only one."""
    assert "Traceback" not in stderr, stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: "), stderr
    return lines[0]


def temps(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if p.name.endswith(atomic.TMP_SUFFIX))


def _child_setup(file_size: int) -> Callable[[], None]:
    def setup() -> None:
        # As a shell would start a command: signals at their defaults, even when the tests run in the background
        # (SIGINT ignored) or under nohup (SIGHUP ignored). And a cap on file sizes, so a runaway cannot fill the disk.
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, signal.SIG_DFL)
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, file_size))

    return setup


@pytest.fixture
def posenc() -> Iterator[Callable[..., subprocess.Popen[str]]]:
    """Start ``python -m posenc_cli ARGS``; every process still running at the end is killed."""
    started: list[subprocess.Popen[str]] = []

    def start(*args: str, file_size: int = FILE_SIZE_CAP, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            [sys.executable, "-m", "posenc_cli", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**ENV, **(env or {})},
            preexec_fn=_child_setup(file_size),
        )
        started.append(proc)
        return proc

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def wait_for_growing_temp(directory: Path, proc: subprocess.Popen[str], at_least: int = 2 << 20) -> Path:
    """The temporary file ``proc`` writes in ``directory``, once it holds ``at_least`` bytes."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for tmp in temps(directory):
            with contextlib.suppress(FileNotFoundError):  # renamed or removed since the listing
                if f".{proc.pid}." in tmp.name and tmp.stat().st_size >= at_least:
                    return tmp
        assert proc.poll() is None, f"posenc ended before it was signalled: {proc.communicate()}"
        time.sleep(0.005)
    raise AssertionError("posenc never started writing")


# Temporary files: named after the target and the writer, removed when their writer is gone, and only then.


def test_temporary_file_is_named_after_target_and_writer_and_locked(tmp_path):
    out = tmp_path / "pe.npy"
    with atomic.atomic_outputs([out]) as (fp,):
        fp.write(b"abc")
        (tmp,) = temps(tmp_path)
        assert tmp.name.startswith(f".pe.npy.{os.getpid()}.") and tmp.name.endswith(".posenc-tmp")
        fd = os.open(tmp, os.O_RDWR)
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
    assert out.read_bytes() == b"abc" and temps(tmp_path) == []


def test_a_very_long_name_still_makes_a_valid_temporary_name(tmp_path):
    out = tmp_path / ("é" * 120 + ".npy")  # 244 bytes: a full temporary name would pass 255
    assert run("generate", "-n", "4", "-d", "4", "-o", str(out)).exit_code == 0
    assert np.load(out).shape == (4, 4) and temps(tmp_path) == []


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_only_temporary_files_of_gone_writers_are_removed(tmp_path):
    out = tmp_path / "pe.npy"
    dead, sleeper = _dead_pid(), subprocess.Popen(["sleep", "60"])
    try:
        names = {
            "stale": f".pe.npy.{dead}.abc123.posenc-tmp",
            "live writer": f".pe.npy.{sleeper.pid}.abc123.posenc-tmp",
            "this process": f".pe.npy.{os.getpid()}.abc123.posenc-tmp",
            "locked": f".pe.npy.{dead}.locked.posenc-tmp",  # a writer in another PID namespace or on another host
            "other target": f".other.npy.{dead}.abc123.posenc-tmp",
            "not posenc's": ".pe.npy.notapid.posenc-tmp",
        }
        for name in names.values():
            (tmp_path / name).write_bytes(b"partial")
        locked = os.open(tmp_path / names["locked"], os.O_RDWR)
        fcntl.flock(locked, fcntl.LOCK_EX)
        try:
            assert atomic.remove_stale_temps(out) == [tmp_path / names["stale"]]
        finally:
            os.close(locked)
        kept = {p.name for p in tmp_path.iterdir()}
        assert kept == set(names.values()) - {names["stale"]}
        assert run("generate", "-n", "4", "-d", "4", "-o", str(out)).exit_code == 0  # cleans the lock's file now
        assert {p.name for p in tmp_path.iterdir()} == kept - {names["locked"]} | {"pe.npy"}
    finally:
        sleeper.kill()
        sleeper.wait()


# Signals: SIGINT, SIGTERM and SIGHUP unwind and clean up; SIGKILL leaves a temporary file the next run removes.

CATCHABLE = [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "SIGTERM"), (signal.SIGHUP, 129, "SIGHUP")]


@pytest.mark.slow
@pytest.mark.parametrize(("signum", "code", "words"), CATCHABLE, ids=lambda v: getattr(v, "name", None))
@pytest.mark.parametrize(("fmt", "previous"), [("npy", PREVIOUS), ("csv", None)], ids=["npy-over-previous", "csv-new"])
def test_signal_while_writing_keeps_the_previous_output_and_no_temporary_file(
    tmp_path, posenc, signum, code, words, fmt, previous
):
    out = tmp_path / f"pe.{fmt}"
    if previous is not None:
        out.write_bytes(previous)
    proc = posenc("generate", *BIG[fmt], "-o", str(out))
    wait_for_growing_temp(tmp_path, proc)
    proc.send_signal(signum)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == code, stderr
    assert words in one_error_line(stderr) and stdout == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ([out.name] if previous is not None else [])
    if previous is not None:
        assert out.read_bytes() == previous


class _InterruptedInDel:
    """Ctrl-C arriving inside a ``__del__`` (or a weakref callback, as in the import system's module locks)."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def __del__(self) -> None:
        raise self.exc


@pytest.mark.parametrize("exc", [KeyboardInterrupt(), signals.Terminated(signal.SIGTERM)], ids=["SIGINT", "SIGTERM"])
def test_an_interrupt_python_would_swallow_ends_the_block_silently(exc, capsys):
    went_on = False
    with pytest.raises(type(exc)):
        with signals.terminating_cleanly():
            _InterruptedInDel(exc)  # Python prints "Exception ignored in ..." and goes on, unless kept
            went_on = True
    assert went_on and capsys.readouterr().err == ""
    signals.raise_swallowed()  # nothing is left over for the next block


def test_an_interrupt_python_would_swallow_replaces_no_output(tmp_path):
    out = tmp_path / "pe.npy"
    out.write_bytes(PREVIOUS)
    with pytest.raises(KeyboardInterrupt):
        with signals.terminating_cleanly(), atomic.atomic_outputs([out]) as (fp,):
            fp.write(b"new bytes")
            _InterruptedInDel(KeyboardInterrupt())
    assert out.read_bytes() == PREVIOUS and [p.name for p in tmp_path.iterdir()] == ["pe.npy"]


def test_other_unraisable_errors_still_reach_pythons_hook(monkeypatch):
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", lambda unraisable: seen.append(type(unraisable.exc_value)))
    with signals.terminating_cleanly():
        _InterruptedInDel(ValueError("a bug in a __del__"))
    assert seen == [ValueError] and sys.unraisablehook is not None


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["npy", "csv"])
def test_sigkill_leaves_a_recognisable_temporary_file_that_the_next_run_removes(tmp_path, posenc, fmt):
    out = tmp_path / f"pe.{fmt}"
    out.write_bytes(PREVIOUS)
    proc = posenc("generate", *BIG[fmt], "-o", str(out))
    tmp = wait_for_growing_temp(tmp_path, proc)
    proc.kill()
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    assert out.read_bytes() == PREVIOUS
    assert temps(tmp_path) == [tmp] and tmp.name.startswith(f".{out.name}.{proc.pid}.")
    assert run("generate", "-n", "8", "-d", "8", "-o", str(out)).exit_code == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [out.name]
    assert api.load(out).array.shape == (8, 8)


@pytest.mark.slow
def test_a_live_writers_temporary_file_is_never_removed(tmp_path, posenc):
    out = tmp_path / "pe.npy"
    slow = posenc("generate", *BIG["npy"], "-o", str(out))
    tmp = wait_for_growing_temp(tmp_path, slow)
    quick = posenc("generate", "-n", "8", "-d", "8", "-o", str(out))
    assert quick.wait(timeout=60) == 0, quick.communicate()
    assert tmp.exists() and slow.poll() is None
    assert np.load(out).shape == (8, 8)
    slow.terminate()
    slow.communicate(timeout=60)
    assert slow.returncode == 143 and sorted(p.name for p in tmp_path.iterdir()) == ["pe.npy"]
    assert np.load(out).shape == (8, 8)


# Two writers, one output: one complete table or the other, never a mix.


@pytest.mark.slow
def test_two_processes_writing_one_output_leave_one_complete_table(tmp_path, posenc):
    out = tmp_path / "pe.npy"
    tables = {
        "10000": ["-n", "30000", "-d", "1024", "--base", "10000"],
        "500": ["-n", "30000", "-d", "1024", "--base", "500"],
    }
    # The pure core on one thread: the compiled core computes these tables in a fraction of a process's start-up,
    # where the two writers might never overlap.
    slow = {"POSENC_CORE": "pure", "POSENC_THREADS": "1"}
    procs = [posenc("generate", *args, "-o", str(out), env=slow) for args in tables.values()]
    overlapped = False
    while any(p.poll() is None for p in procs):
        overlapped = overlapped or len(temps(tmp_path)) == 2
        time.sleep(0.002)
    for proc in procs:
        stdout, stderr = proc.communicate()
        assert proc.returncode == 0 and stdout == stderr == "", stderr
    assert overlapped, "the two writers never wrote at the same time: the test proves nothing"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pe.npy"]
    written = np.load(out)
    candidates = [api.generate(30000, 1024, base=float(base)).array for base in tables]
    assert any(np.array_equal(written, c) for c in candidates)


# Full disks: a file-size limit (EFBIG) anywhere, a real full file system (ENOSPC) where a mount namespace can be made.


@pytest.mark.parametrize("fmt", ["npy", "csv", "h"])
def test_file_size_limit_fails_with_one_line_and_keeps_the_previous_output(tmp_path, posenc, fmt):
    out = tmp_path / f"pe.{fmt}"
    out.write_bytes(PREVIOUS)
    proc = posenc("generate", "-n", "4096", "-d", "1024", "-o", str(out), file_size=1 << 20)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 1 and stdout == ""
    line = one_error_line(stderr)
    assert f"cannot write {str(out)!r}: File too large" in line
    assert out.read_bytes() == PREVIOUS and temps(tmp_path) == []


#: Run inside a private mount namespace: mount a small tmpfs, run posenc in it, report what it left. The mount
#: vanishes with the namespace.
_IN_NAMESPACE = r"""
import json, os, subprocess, sys
spec = json.loads(sys.argv[1])
where = spec["dir"]
if subprocess.run(["mount", "-t", "tmpfs", "-o", spec["options"], "tmpfs", where]).returncode:
    sys.exit(77)
for name, text in spec["files"].items():
    with open(os.path.join(where, name), "w") as fp:
        fp.write(text)
if spec["read_only"] and subprocess.run(["mount", "-o", "remount,ro", where]).returncode:
    sys.exit(77)
command = [sys.executable, "-m", "posenc_cli"]
runs = [subprocess.run([*command, *args], capture_output=True, text=True) for args in spec["runs"]]
left = {}
for name in os.listdir(where):
    with open(os.path.join(where, name), "rb") as fp:
        left[name] = fp.read(200).decode("latin-1")
print(json.dumps({"runs": [[r.returncode, r.stdout, r.stderr] for r in runs], "left": left}))
"""


def in_small_file_system(
    tmp_path: Path, runs: list[list[str]], files: dict[str, str], read_only: bool = False, size: int = 1 << 20
):
    """Run posenc ``runs`` in a tmpfs of ``size`` bytes at ``tmp_path / "fs"`` holding ``files``: the runs and what
    is left."""
    where = tmp_path / "fs"
    where.mkdir()
    unshare = require_tool("unshare")
    namespace = [unshare, "--mount"] if os.geteuid() == 0 else [unshare, "--user", "--map-root-user", "--mount"]
    spec = {"dir": str(where), "options": f"size={size}", "files": files, "read_only": read_only, "runs": runs}
    result = subprocess.run(
        [*namespace, sys.executable, "-c", _IN_NAMESPACE, json.dumps(spec)], capture_output=True, text=True, env=ENV
    )
    if result.returncode == 77 or result.stderr.startswith("unshare:"):  # the kernel said no
        pytest.skip(f"cannot mount a tmpfs in a private mount namespace here: {result.stderr.strip()}")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    return [tuple(r) for r in report["runs"]], report["left"], where


PAGE = 4096  # tmpfs counts whole pages


def room_for_the_fewest_bytes(seq_len: int, d_model: int, fmt: str) -> int:
    """Space for the fewest bytes the table can take (what posenc checks before writing), not for the whole file:
    the check passes, and the file system fills while posenc writes, as when something else fills it meanwhile."""
    low = _resources.estimate_bytes(api.generate(seq_len, d_model, lazy=True), FORMATS[fmt]).low
    return -(-low // PAGE) * PAGE


@pytest.mark.client
@pytest.mark.parametrize("fmt", ["npy", "csv", "c"])
def test_full_file_system_fails_with_one_line_and_keeps_the_previous_output(tmp_path, fmt):
    out = f"pe.{fmt}"
    args = ["generate", "-n", "4096", "-d", "1024", "-o", str(tmp_path / "fs" / out)]
    size = PAGE + room_for_the_fewest_bytes(4096, 1024, fmt)  # a page for the previous output
    runs, left, where = in_small_file_system(tmp_path, [args], {out: "previous\n"}, size=size)
    ((code, stdout, stderr),) = runs
    assert code == 1 and stdout == ""
    line = one_error_line(stderr)
    assert str(where) in line and "No space left on device" in line
    assert left == {out: "previous\n"}


@pytest.mark.client
def test_full_file_system_without_a_previous_output_is_left_empty(tmp_path):
    out = str(tmp_path / "fs" / "pe.h5")
    size = room_for_the_fewest_bytes(4096, 1024, "h5")
    runs, left, _ = in_small_file_system(tmp_path, [["generate", "-n", "4096", "-d", "1024", "-o", out]], {}, size=size)
    assert runs[0][0] == 1 and "No space left on device" in one_error_line(runs[0][2]) and left == {}


# Paths that cannot be written, or that lead elsewhere.


@pytest.mark.client
def test_read_only_file_system_fails_before_any_work(tmp_path):
    out = str(tmp_path / "fs" / "pe.npy")
    runs, left, _ = in_small_file_system(
        tmp_path, [["generate", "-n", "8", "-d", "8", "-o", out]], {"pe.npy": "previous\n"}, read_only=True
    )
    ((code, _, stderr),) = runs
    assert code == 1 and "read-only" in one_error_line(stderr) and left == {"pe.npy": "previous\n"}


@pytest.mark.client
def test_directory_without_write_permission_keeps_the_previous_output(tmp_path):
    """As root, too: CAP_DAC_OVERRIDE is dropped, so the permission bits count."""
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "pe.csv").write_bytes(PREVIOUS)
    locked.chmod(0o555)
    command = [sys.executable, "-m", "posenc_cli", "generate", "-n", "8", "-d", "8", "-o", str(locked / "pe.csv")]
    if os.geteuid() == 0:
        command = [require_tool("setpriv"), "--bounding-set=-dac_override,-dac_read_search", "--", *command]
    try:
        result = subprocess.run(command, capture_output=True, text=True, env=ENV)
    finally:
        locked.chmod(0o755)
    assert result.returncode == 1 and "no permission" in one_error_line(result.stderr)
    assert [p.name for p in locked.iterdir()] == ["pe.csv"] and (locked / "pe.csv").read_bytes() == PREVIOUS


def test_output_that_is_a_link_to_a_directory_exits_1(tmp_path):
    (tmp_path / "dir").mkdir()
    (tmp_path / "pe.npy").symlink_to("dir")
    result = run("generate", "-n", "8", "-d", "8", "-o", str(tmp_path / "pe.npy"))
    assert result.exit_code == 1 and "is a directory" in one_error_line(result.stderr)


def test_symlink_is_followed_and_its_target_replaced_atomically(tmp_path, monkeypatch):
    (tmp_path / "tables").mkdir()
    real = tmp_path / "tables" / "pe.npy"
    real.write_bytes(PREVIOUS)
    link = tmp_path / "pe.npy"
    link.symlink_to(Path("tables") / "pe.npy")
    before = real.stat().st_ino
    temp_dirs = []
    make_temp = atomic.make_temp

    def recording(prefix, folder):
        temp_dirs.append(Path(folder))
        return make_temp(prefix, folder)

    monkeypatch.setattr(atomic, "make_temp", recording)
    assert run("generate", "-n", "8", "-d", "8", "-o", str(link)).exit_code == 0
    assert link.is_symlink() and os.readlink(link) == str(Path("tables") / "pe.npy")
    assert np.load(real).shape == (8, 8) and real.stat().st_ino != before  # a new file renamed over the old one
    assert temp_dirs == [real.parent]  # written beside the real file: same file system, atomic rename
    assert temps(tmp_path) == temps(real.parent) == []


def test_dangling_symlink_is_followed_and_its_target_created(tmp_path):
    link = tmp_path / "pe.npy"
    link.symlink_to("made.npy")
    assert run("generate", "-n", "8", "-d", "8", "-o", str(link)).exit_code == 0
    assert link.is_symlink() and np.load(tmp_path / "made.npy").shape == (8, 8)


def test_dangling_symlink_into_a_missing_directory_exits_1(tmp_path):
    (tmp_path / "pe.npy").symlink_to("nowhere/pe.npy")
    result = run("generate", "-n", "8", "-d", "8", "-o", str(tmp_path / "pe.npy"))
    assert result.exit_code == 1 and "does not exist" in one_error_line(result.stderr)
    assert [p.name for p in tmp_path.iterdir()] == ["pe.npy"]


def test_symlink_loop_exits_1(tmp_path):
    (tmp_path / "a.npy").symlink_to("b.npy")
    (tmp_path / "b.npy").symlink_to("a.npy")
    result = run("generate", "-n", "8", "-d", "8", "-o", str(tmp_path / "a.npy"))
    assert result.exit_code == 1 and "loop of symbolic links" in one_error_line(result.stderr)
    assert all(p.is_symlink() for p in tmp_path.iterdir())


# Any OS error while writing: exit 1, "cannot write '<path>': <the OS's words>", nothing left behind.


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EFBIG, errno.EIO, errno.EROFS])
def test_os_error_while_writing_is_one_line_naming_path_and_cause(tmp_path, monkeypatch, code):
    def failing(table, fp, options):
        fp.write(b"x" * (3 << 20))
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr("posenc_cli.formats.npy.dump", failing)
    out = tmp_path / "pe.npy"
    out.write_bytes(PREVIOUS)
    result = run("generate", "-n", "8", "-d", "8", "-o", str(out))
    assert result.exit_code == 1
    assert one_error_line(result.stderr) == f"Error: cannot write {str(out)!r}: {os.strerror(code)}"
    assert out.read_bytes() == PREVIOUS and temps(tmp_path) == []


def test_os_error_the_library_did_not_map_is_still_one_line(tmp_path, monkeypatch):
    def failing(*args, **kwargs):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), "/some/file")

    monkeypatch.setattr(api, "save", failing)
    result = run("generate", "-n", "8", "-d", "8", "-o", str(tmp_path / "pe.npy"))
    assert result.exit_code == 1 and one_error_line(result.stderr) == "Error: '/some/file': Permission denied"


# Memory and disk space: sizes are known before any work, and what cannot fit is refused at once.


def test_estimate_is_exact_for_binary_formats_and_bounds_text_formats(tmp_path):
    table = api.rope(64, 32, dtype="float32")
    for fmt in FORMATS.values():
        target = tmp_path / f"pe{fmt.suffixes[0]}"
        written = api.save(table, target, part=None if not fmt.single else "cos")
        part = table.part("cos") if fmt.single else table
        size = _resources.estimate_bytes(part, fmt)
        total = sum(p.stat().st_size for p in written)
        if not fmt.text:
            assert size.low == sum(a.nbytes for a in part.arrays.values())
        assert size.low <= total <= size.high, fmt.name


def _widest_values(dtype: str) -> np.ndarray:
    """Values of ``dtype`` (as stored) whose text is as long as any: the 1024 longest decimals of the 16-bit
    patterns, the extremes of the wider types."""
    if dtype in ("float16", "bfloat16"):
        bits = np.arange(1 << 16, dtype=np.uint32)
        if dtype == "float16":
            values = bits.astype("<u2").view("<f2")
            values = values[np.isfinite(values)]
            length = np.array([len(str(v)) for v in values])
        else:  # spelling every pattern takes seconds: a fixed sample of them, the extremes included
            values = bits.astype("<u2")[np.isfinite((bits << 16).view("<f4"))]
            sample = np.random.default_rng(7).choice(values, 4096, replace=False)
            values = np.concatenate([[0xFF7F, 0x8080, 0x8001, 0xFF7E, 0x807F], sample]).astype("<u2")
            length = np.array([len(bfloat16_text(int(v))) for v in values])
        return values[np.argsort(-length, kind="stable")[:1024]]
    if dtype in ("q15", "q7", "int8"):
        info = np.iinfo("<i2" if dtype == "q15" else "i1")
        return np.full(1024, info.min, info.dtype)
    finfo = np.finfo(dtype)
    awkward = [finfo.max, finfo.tiny, finfo.smallest_subnormal, 1e16, 9.9999e15, 1.2345678901234567e-4, 1 / 3]
    values = np.array(awkward, dtype)
    with np.errstate(over="ignore"):
        values = np.concatenate([values, np.nextafter(values, np.array(np.inf, dtype)), np.nextafter(values, 0)])
    values = values[np.isfinite(values)]
    return -np.abs(np.tile(values, 50))


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "q15", "q7", "int8"])
def test_text_estimate_bounds_the_widest_values_in_every_text_format_and_style(tmp_path, dtype):
    values = _widest_values(dtype)
    values = values[: len(values) // 64 * 64].reshape(-1, 64)
    params = {"dtype": dtype, **({"scale": 0.5, "zero_point": 0} if dtype == "int8" else {})}
    table = Table("array", {"pe": values}, params)
    styles = [{}, {"float_literal": "hex"}, {"float_literal": "bits"}, {"lang": "c++"}, {"progmem": True}]
    if dtype == "float16":
        styles.append({"c_half_type": "_Float16"})
    for fmt in (f for f in FORMATS.values() if f.text):
        for style in styles if fmt.name != "csv" else [{}]:
            try:
                written = api.save(table, tmp_path / f"t{fmt.suffixes[0]}", **style)
            except PosencError:  # a style this element type does not have
                continue
            size = _resources.estimate_bytes(table, fmt)
            total = sum(p.stat().st_size for p in written)
            assert size.low <= total <= size.high, (fmt.name, style, total, size)


@pytest.mark.parametrize("dtype", ["int32", "uint16", "float32", "int8"])
def test_text_estimate_bounds_bare_arrays_without_a_dtype_parameter(tmp_path, dtype):
    info = np.iinfo(dtype) if np.dtype(dtype).kind in "iu" else np.finfo(dtype)
    for fill in (info.min, 0):
        table = Table.from_array(np.full((16, 64), fill, dtype))
        for fmt in (f for f in FORMATS.values() if f.text):
            try:
                written = api.save(table, tmp_path / f"t{fmt.suffixes[0]}")
            except PosencError:  # C holds no int32 or uint16 tables
                continue
            size = _resources.estimate_bytes(table, fmt)
            assert size.low <= sum(p.stat().st_size for p in written) <= size.high, (fmt.name, fill)


def test_check_disk_refuses_what_the_free_space_cannot_hold(tmp_path):
    stats = os.statvfs(tmp_path)
    free = stats.f_bavail * stats.f_frsize
    capacity.check_disk(tmp_path / "pe.npy", min(free, 1 << 20))
    with pytest.raises(OutputError) as caught:
        capacity.check_disk(tmp_path / "pe.npy", free + (1 << 30))
    message = str(caught.value)
    assert str(tmp_path / "pe.npy") in message and "needs at least" in message and "iB is free" in message


def test_an_absurd_table_is_refused_at_once_by_its_size(tmp_path):
    """2**52 values: the lazy table costs nothing, its size is known, and no file system holds 16 PiB."""
    table = api.generate(2**32, 2**20, lazy=True)
    size = _resources.estimate_bytes(table, FORMATS["npy"])
    assert size.low == 2**54
    with pytest.raises(OutputError, match=r"needs at least 16\.0 PiB"):
        capacity.check_disk(tmp_path / "x.npy", size.low)
    assert list(tmp_path.iterdir()) == []


def test_check_memory_refuses_more_than_is_available(monkeypatch):
    available = capacity.available_memory()
    assert available is None or available > 0
    monkeypatch.setattr(capacity, "available_memory", lambda: 3 << 30)
    capacity.check_memory(1 << 30, "the ALiBi bias matrix")
    with pytest.raises(PosencError) as caught:
        capacity.check_memory(5 << 30, "the ALiBi bias matrix (64 x 262144)")
    assert "the ALiBi bias matrix (64 x 262144) needs about 5.0 GiB of memory and 3.0 GiB is available" in str(
        caught.value
    )
    monkeypatch.setattr(capacity, "available_memory", lambda: None)
    capacity.check_memory(1 << 80, "anything")  # unknown: never a reason to refuse


def test_available_memory_honours_the_process_limits():
    script = "from posenc_cli.system.capacity import available_memory; print(available_memory())"

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, resource.RLIM_INFINITY))

    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=ENV, preexec_fn=limit, check=True
    )
    assert 0 < int(result.stdout) <= 3 << 30


@pytest.mark.slow
def test_in_memory_builds_stay_within_their_declared_work_memory():
    """The per-value peaks check_memory is given (each kind's ``work_per_value``) hold for every kind built whole in
    memory (ru_maxrss, fresh)."""
    script = (
        "import resource, sys\nfrom posenc_cli import api\nfrom posenc_cli.kinds import by_table\n"
        "base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "kind, dtype = sys.argv[1:]\n"
        "make = {'sinusoidal': lambda: api.generate(4096, 1024, dtype=dtype), "
        "'rope': lambda: api.rope(16384, 128, dtype=dtype), 'alibi': lambda: api.alibi(64, 32768, dtype=dtype), "
        "'sincos2d': lambda: api.sincos2d(64, 64, 1024, dtype=dtype), "
        "'relative': lambda: api.relative('deberta', 2048, buckets=256, max_distance=512), "
        "'window': lambda: api.window('beit', (24, 24))}\n"
        "t = make[kind]()\n"
        "values = sum(a.size for a in t.arrays.values())\n"
        "peak = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) * 1024\n"
        "assert peak <= values * by_table(kind).work_per_value, (kind, dtype, peak / values)\n"
    )
    for kind in ("sinusoidal", "rope", "alibi", "sincos2d", "relative", "window"):
        for dtype in ("float32", "bfloat16"):
            result = subprocess.run(
                [sys.executable, "-c", script, kind, dtype], capture_output=True, text=True, env=ENV
            )
            assert result.returncode == 0, result.stderr


def test_sizes_in_human_units():
    assert capacity.human(0) == "0 bytes"
    assert capacity.human(1536) == "1.5 KiB"
    assert capacity.human(2**54) == "16.0 PiB"


def test_streaming_writers_never_hold_the_whole_table():
    """generate and rope (lazy, as the CLI builds them) are row sources: their size costs no memory."""
    assert isinstance(api.generate(2**32, 2**20, lazy=True).array, RowSource)
    assert all(isinstance(a, RowSource) for k, a in api.rope(2**32, 128, lazy=True).arrays.items() if k != "inv_freq")


# Refused before any work once api.py calls _resources (check_disk in save, check_memory in the in-memory builds).
# Each runs posenc in a child with a file-size or address-space cap, so a missing check fails fast and harmlessly.


@pytest.mark.parametrize("suffix", [".npy", ".csv", ".h5"])
def test_an_absurd_table_is_refused_at_once_naming_its_size(tmp_path, posenc, suffix):
    out = tmp_path / f"x{suffix}"
    proc = posenc("generate", "-n", "4294967296", "-d", "1048576", "-o", str(out), file_size=1 << 20)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 1 and stdout == ""
    line = one_error_line(stderr)
    assert "needs at least 16.0 PiB" in line and "is free" in line, line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.client
def test_an_output_larger_than_the_free_space_is_refused_before_writing(tmp_path):
    out = str(tmp_path / "fs" / "pe.npy")  # 4 MiB into a 1 MiB file system
    runs, left, _ = in_small_file_system(tmp_path, [["generate", "-n", "1024", "-d", "1024", "-o", out]], {})
    ((code, _, stderr),) = runs
    line = one_error_line(stderr)
    assert code == 1 and "needs at least 4.0 MiB" in line and "MiB is free" in line, line
    assert left == {}


def _at_most_4_gib() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, resource.RLIM_INFINITY))


@pytest.mark.parametrize(
    ("args", "what"),
    [
        (["alibi", "-H", "65536", "-n", "4294967296", "-o", "a.npz"], "the ALiBi bias matrix (65536 x 4294967296)"),
        (["sincos2d", "-g", "65536", "-d", "4096", "-o", "s.npy"], "the 2-D sincos table (4294967296 x 4096)"),
    ],
)
def test_a_table_built_in_memory_that_cannot_fit_is_refused_at_once(tmp_path, args, what):
    args = [*args[:-1], str(tmp_path / args[-1])]
    result = subprocess.run(
        [sys.executable, "-m", "posenc_cli", *args], capture_output=True, text=True, env=ENV,
        preexec_fn=_at_most_4_gib, timeout=60,
    )  # fmt: skip
    assert result.returncode == 1 and result.stdout == ""
    line = one_error_line(result.stderr)
    assert f"{what} needs about" in line and "of memory" in line, line
    assert list(tmp_path.iterdir()) == []


def test_the_api_refuses_a_whole_table_larger_than_memory_and_streams_it_lazily(monkeypatch):
    monkeypatch.setattr(capacity, "available_memory", lambda: 1 << 20)
    with pytest.raises(PosencError, match=r"needs about 256\.0 MiB of memory and 1\.0 MiB is available"):
        api.generate(4096, 1024)
    with pytest.raises(PosencError, match="the RoPE caches"):
        api.rope(4096, 128)
    assert isinstance(api.generate(4096, 1024, lazy=True).array, RowSource)


def test_a_link_or_file_planted_at_the_temporary_name_is_never_written_through(tmp_path, monkeypatch):
    """An attacker who can guess the next temporary name plants a link to a victim file, or a file of their own:
    make_temp neither writes through the link nor opens the planted file, and takes another name."""
    victim = tmp_path / "victim"
    victim.write_bytes(b"keep")
    draws = iter([b"\x00" * 6, b"\x01" * 6, b"\x02" * 6])
    monkeypatch.setattr(atomic.os, "urandom", lambda n: next(draws))
    (tmp_path / f".pe.npy.1.{'00' * 6}{atomic.TMP_SUFFIX}").symlink_to(victim)
    (tmp_path / f".pe.npy.1.{'01' * 6}{atomic.TMP_SUFFIX}").write_bytes(b"planted")
    fd, path = atomic.make_temp(".pe.npy.1.", tmp_path)
    os.write(fd, b"new")
    os.close(fd)
    assert Path(path).name == f".pe.npy.1.{'02' * 6}{atomic.TMP_SUFFIX}" and Path(path).read_bytes() == b"new"
    assert victim.read_bytes() == b"keep"
    assert (tmp_path / f".pe.npy.1.{'01' * 6}{atomic.TMP_SUFFIX}").read_bytes() == b"planted"
