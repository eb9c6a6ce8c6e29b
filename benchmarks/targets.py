"""The compiled-core issue's targets (#30), each row measured in this run against its peer, with ratio and verdict.

``python benchmarks/bench.py --targets`` prints them. The rows and their targets:

- generate 8192x1024 float32, correctly rounded, in-process: <= 0.5x the PyTorch tutorial's float32 path;
- stream a 1 GiB .npy, whole process: <= 1.3x ``dd bs=1M conv=fdatasync`` (skipped by ``--quick``);
- CSV 8192x1024, whole process: <= 0.25x numpy + pyarrow.csv, and <= 0.1x ``np.savetxt``;
- C header 8192x1024, whole process: <= 0.3x numpy + pyarrow.csv;
- start-up, 512x128 .npy: <= 1.2x a bare ``python -c`` numpy save;
- ``--arithmetic framework`` RoPE 131072x128 (Llama 3.1's cache), in-process: <= 1.0x transformers' own CPU
  computation (``LlamaRotaryEmbedding`` built and called: both sides build ``inv_freq``, ``cos`` and ``sin``);
- generate 65536x4096 float32 on 16 cores, in-process: <= 1.0x the PyTorch tutorial on 16 threads; measured only
  where the process may run on 16 CPUs or more (the row then says how many it may use).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import peers
from peers import PEER_TABLE, SEQ, D, Report, median_time, run_process, verdict

import posenc_cli

STREAM_SEQ, STREAM_D = 65536, 4096  # 1 GiB of float32
ROPE_POSITIONS = 131072  # Llama 3.1's max_position_embeddings
WIDE_SEQ, WIDE_D, WIDE_CPUS = 65536, 4096, 16


def targets(report: Report, repeat: int, scratch: Path, quick: bool) -> None:
    """The seven rows of #30 (the module docstring), in that order."""
    python, posenc = sys.executable, [sys.executable, "-m", "posenc_cli", "generate"]

    def process(cmd: list[str], times: int = repeat) -> float:
        return median_time(lambda: run_process(cmd, scratch), times)

    # 1. generation, in-process, correctly rounded (posenc's default arithmetic)
    ours = median_time(lambda: posenc_cli.sinusoidal(SEQ, D), repeat)
    what = f"generate {SEQ}x{D} float32, correctly rounded, in-process"
    tutorial = peers.torch_tutorial()
    if tutorial is None:
        report.add(what, f"{ours * 1e3:.0f} ms", "", "skipped: torch not importable")
    else:
        t = median_time(tutorial, repeat)
        report.add(
            f"{what} (torch tutorial {t * 1e3:.0f} ms)",
            f"{ours * 1e3:.1f} ms",
            f"{ours / t:.2f}x torch",
            verdict(ours <= 0.5 * t, "<= 0.5x the PyTorch tutorial's float32 path"),
        )
    # 2. streaming 1 GiB to .npy, whole process, against dd writing as much with fdatasync
    if quick:
        report.add("stream a 1 GiB .npy, whole process", "skipped", "", "--quick")
    else:
        size = STREAM_SEQ * STREAM_D * 4
        dd = ["dd", "if=/dev/zero", "of=dd.bin", "bs=1M", f"count={size >> 20}", "conv=fdatasync", "status=none"]
        dd_time = process(dd, 3)
        stream = process([*posenc, "-n", str(STREAM_SEQ), "-d", str(STREAM_D), "-o", "big.npy"], 3)
        for name in ("dd.bin", "big.npy"):
            (scratch / name).unlink()
        report.add(
            f"stream a 1 GiB .npy, whole process (dd bs=1M conv=fdatasync {dd_time:.2f} s)",
            f"{stream:.2f} s",
            f"{stream / dd_time:.2f}x dd",
            verdict(stream <= 1.3 * dd_time, "<= 1.3x dd bs=1M conv=fdatasync"),
        )
    # 3, 4. text, whole process, against numpy + pyarrow.csv and np.savetxt (each also computing its table)
    ours_csv = process([*posenc, "-n", str(SEQ), "-d", str(D), "-o", "t.csv"])
    ours_c = process([*posenc, "-n", str(SEQ), "-d", str(D), "-o", "t.h"])
    savetxt = process([python, "-c", PEER_TABLE + "np.savetxt('s.csv', t, fmt='%.9g', delimiter=',')"], 3)
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        arrow = None
    else:
        script = PEER_TABLE + (
            "import pyarrow as pa, pyarrow.csv as pacsv\n"
            f"pacsv.write_csv(pa.table({{f'd{{k}}': t[:, k] for k in range({D})}}), 'a.csv')\n"
        )
        arrow = process([python, "-c", script])

    def against_arrow(label: str, ours: float, limit: float) -> None:
        if arrow is None:
            report.add(f"{label} {SEQ}x{D}, whole process", f"{ours:.2f} s", "", "skipped: pyarrow not importable")
            return
        report.add(
            f"{label} {SEQ}x{D}, whole process (numpy + pyarrow.csv {arrow:.2f} s)",
            f"{ours:.2f} s",
            f"{ours / arrow:.2f}x pyarrow",
            verdict(ours <= limit * arrow, f"<= {limit}x numpy + pyarrow.csv"),
        )

    against_arrow("CSV", ours_csv, 0.25)
    report.add(
        f"  against np.savetxt ('%.9g', {savetxt:.2f} s)",
        "",
        f"{ours_csv / savetxt:.2f}x savetxt",
        verdict(ours_csv <= 0.1 * savetxt, "<= 0.1x np.savetxt"),
    )
    against_arrow("C header", ours_c, 0.3)
    # 5. start-up
    small = process([*posenc, "-n", "512", "-d", "128", "-o", "x.npy"], repeat * 2)
    bare = process([python, "-c", "import numpy as np; np.save('y.npy', np.zeros((512, 128), np.float32))"], repeat * 2)
    report.add(
        f"start-up, 512x128 .npy (bare python -c numpy save {bare * 1e3:.0f} ms)",
        f"{small * 1e3:.0f} ms",
        f"{small / bare:.2f}x",
        verdict(small <= 1.2 * bare, "<= 1.2x a bare python -c numpy save"),
    )
    framework_rope(report, repeat)
    many_cores(report, repeat)


def framework_rope(report: Report, repeat: int) -> None:
    """Row 6: Llama 3.1's 131072 x 128 cache with ``--arithmetic framework``, against transformers building it."""
    what = f"`--arithmetic framework` RoPE {ROPE_POSITIONS}x128, Llama 3.1's cache, in-process"
    target = "<= 1.0x transformers' own CPU computation"
    ours = median_time(lambda: posenc_cli.rope(ROPE_POSITIONS, 128, arithmetic="framework", **peers.LLAMA31), repeat)
    theirs = peers.transformers_llama_rope(ROPE_POSITIONS)
    if theirs is None:
        report.add(what, f"{ours * 1e3:.0f} ms", "", f"skipped: transformers not importable ({target})")
        return
    t = median_time(theirs, repeat)
    report.add(
        f"{what} (transformers' LlamaRotaryEmbedding built + forward {t * 1e3:.0f} ms; both build inv_freq)",
        f"{ours * 1e3:.0f} ms",
        f"{ours / t:.2f}x transformers",
        verdict(ours <= t, target),
    )


def many_cores(report: Report, repeat: int) -> None:
    """Row 7: 65536 x 4096 float32 (1 GiB) in-process, posenc at ``POSENC_THREADS=16`` against the PyTorch tutorial
    at ``torch.set_num_threads(16)``; one row saying why where fewer than 16 CPUs are usable."""
    what = f"generate {WIDE_SEQ}x{WIDE_D} float32 on {WIDE_CPUS} cores, in-process"
    target = f"<= 1.0x the PyTorch tutorial on {WIDE_CPUS} threads"
    usable = len(os.sched_getaffinity(0))
    if usable < WIDE_CPUS:
        report.add(what, f"not measured: {usable} CPUs usable", "", f"not measured: {target}")
        return
    with peers.environ(POSENC_THREADS=str(WIDE_CPUS)):
        ours = median_time(lambda: posenc_cli.sinusoidal(WIDE_SEQ, WIDE_D), repeat)
    tutorial = peers.torch_tutorial(WIDE_SEQ, WIDE_D)
    if tutorial is None:
        report.add(what, f"{ours * 1e3:.0f} ms", "", f"skipped: torch not importable ({target})")
        return
    import torch

    default = torch.get_num_threads()
    torch.set_num_threads(WIDE_CPUS)
    try:
        t = median_time(tutorial, repeat)
    finally:
        torch.set_num_threads(default)
    report.add(
        f"{what} (torch tutorial, {WIDE_CPUS} threads, {t * 1e3:.0f} ms; {usable} CPUs usable)",
        f"{ours * 1e3:.0f} ms",
        f"{ours / t:.2f}x torch",
        verdict(ours <= t, target),
    )
