"""posenc's benchmark: posenc against its peers, side by side in one run, medians and ratios.

Not part of the test suite (tests never assert on time). Run from the repository root, in an environment where posenc
is installed; peers that are not importable (torch, transformers, positional-encodings, pyarrow, orjson) are reported
as skipped::

    python benchmarks/bench.py                 # everything (writes ~8 GiB of scratch files, a few minutes)
    python benchmarks/bench.py --quick         # skip the 4 GiB streaming case (and the targets' 1 GiB stream)
    python benchmarks/bench.py --markdown      # the table as markdown, for the README
    python benchmarks/bench.py --targets       # only the compiled-core issue's (#30) rows, each against its peer
    python benchmarks/bench.py --formatters    # only posenc's float32 text against orjson's and pyarrow's (#30)
    python benchmarks/bench.py --core          # generation, pure and compiled core, against the PyTorch tutorial

Each timing is the median of ``--repeat`` runs. ``--targets`` prints the targets of the compiled-core issue (#30,
``targets.py``), the other rows those of the "exact and fast" issue (#17) and of the issues they name; every line
with a target says whether it was met in this run. The shared parts (timing, the report, the peers) are in
``peers.py``, the formatter comparison in ``formatters.py``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from formatters import formatters
from peers import (
    SEQ,
    D,
    Report,
    environ,
    machine,
    median_time,
    numpy_float64_then_cast,
    once,
    peak_rss_of,
    positional_encodings_pkg,
    run_process,
    torch_tutorial,
    verdict,
)
from targets import targets

import posenc_cli
from posenc_cli import _native
from posenc_cli.errors import PosencError

BIG_SEQ, BIG_D = 262144, 4096  # 4 GiB of float32


def main() -> None:
    # Child processes run as a user's do: with bytecode caching. pip compiles an installed package's modules; an
    # editable checkout gets its .pyc files at the first import (median_time's warm-up run) unless this variable
    # forbids writing them, in which case every start-up would recompile posenc from source (about 60 ms of
    # compile() here) and measure something no installed posenc does.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="skip the 4 GiB (and the targets' 1 GiB) streaming case")
    parser.add_argument("--markdown", action="store_true", help="print the table as markdown on stdout")
    parser.add_argument("--targets", action="store_true", help="only the compiled core's targets (#30)")
    parser.add_argument("--formatters", action="store_true", help="only posenc's text against orjson, pyarrow (#30)")
    parser.add_argument("--identify", action="store_true", help="only posenc identify and its time bombs (#18, #25)")
    parser.add_argument("--arithmetic", action="store_true", help="only exact against framework arithmetic (#27)")
    parser.add_argument("--core", action="store_true", help="only generation, pure and compiled core (#30)")
    parser.add_argument("--dir", type=Path, default=None, help="scratch directory (default: a temp dir in .)")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="posenc-bench-", dir=args.dir or Path.cwd()))
    report = Report()
    print(f"machine: {machine()}", file=sys.stderr)
    try:
        if args.identify:
            identify_time(report, args.repeat, scratch)
        elif args.arithmetic:
            arithmetic(report, args.repeat)
        elif args.core:
            cores(report, args.repeat)
        elif args.formatters:
            formatters(report, args.repeat)
        else:
            targets(report, args.repeat, scratch, args.quick)
        if not (args.targets or args.identify or args.arithmetic or args.core or args.formatters):
            formatters(report, args.repeat)
            identify_time(report, args.repeat, scratch)
            arithmetic(report, args.repeat)
            cores(report, args.repeat)
            generation(report, args.repeat)
            text(report, args.repeat, scratch)
            startup(report, args.repeat, scratch)
            compile_time(report, scratch)
            if not args.quick:
                streaming(report, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if args.markdown:
        print(f"Machine: {machine()}.\n\n{report.markdown()}")


def cores(report: Report, repeat: int) -> None:
    """The compiled core (#30): ``generate`` 8192x1024 float32 in-process with the pure core and the compiled one,
    on every usable CPU and on one thread (``POSENC_THREADS=1``), against the PyTorch tutorial's float32 path on as
    many threads (``torch.set_num_threads``)."""
    tutorial = torch_tutorial()
    torch_times: dict[int, float] = {}
    if tutorial is not None:
        import torch

        default = torch.get_num_threads()
        for n in (default, 1):
            torch.set_num_threads(n)
            torch_times[n] = median_time(tutorial, repeat)
        torch.set_num_threads(default)
    pure: dict[int, float] = {}
    done = []
    with environ(POSENC_CORE=None, POSENC_THREADS=None):  # set below, as each row needs; restored after
        for core in ("pure", "compiled"):
            os.environ["POSENC_CORE"] = core
            try:
                _native.native("_core")
            except PosencError:
                report.add(f"generate {SEQ}x{D} float32, compiled core", "skipped", "", "not built here")
                continue
            done.append(core)
            for limit in (None, 1):
                if limit is None:
                    os.environ.pop("POSENC_THREADS", None)
                else:
                    os.environ["POSENC_THREADS"] = str(limit)
                n = _native.threads()
                ours = median_time(lambda: posenc_cli.sinusoidal(SEQ, D), repeat)
                ratios = []
                if core == "pure":
                    pure[n] = ours
                else:
                    ratios.append(f"{pure[n] / ours:.1f}x faster than pure")
                peer = torch_times.get(n if limit else max(torch_times, default=0))
                if peer is not None:
                    ratios.append(f"{ours / peer:.2f}x torch")
                report.add(
                    f"generate {SEQ}x{D} float32, {core} core, {n} thread{'s' if n > 1 else ''}",
                    f"{ours * 1e3:.1f} ms",
                    ", ".join(ratios),
                    verdict(ours <= peer, "<= 1.0x the PyTorch tutorial") if peer is not None else "",
                )
        os.environ.pop("POSENC_THREADS", None)
        wide = {}
        for core in ("pure", "compiled") if "compiled" in done else ("pure",):
            os.environ["POSENC_CORE"] = core
            wide[core] = median_time(lambda: posenc_cli.sinusoidal(SEQ, D, dtype="float64"), max(1, repeat // 2))
            ratio = f"{wide['pure'] / wide[core]:.1f}x faster than pure" if core == "compiled" else ""
            report.add(f"generate {SEQ}x{D} float64, {core} core", f"{wide[core] * 1e3:.1f} ms", ratio)
    if not torch_times:
        report.add("  PyTorch tutorial path", "skipped", "", "torch not importable")
    for n, t in sorted(torch_times.items(), reverse=True):
        report.add(f"  PyTorch tutorial path (float32), {n} thread{'s' if n > 1 else ''}", f"{t * 1e3:.1f} ms")


def arithmetic(report: Report, repeat: int) -> None:
    """Both arithmetics (#27): Llama 3.1's llama3 cache and Qwen2.5's YaRN cache, 8192 x 128 float32, built whole
    (cos, sin and inv_freq); Whisper's and DDPM's sinusoid tables, 4096 x 512 float32."""
    cases = {
        "llama3": dict(theta=500000.0, scaling="llama3", factor=8.0, original_max_positions=8192),
        "yarn": dict(theta=1e6, scaling="yarn", factor=4.0, original_max_positions=32768),
    }
    for name, settings in cases.items():
        times = {}
        for mode in ("exact", "framework"):
            times[mode] = median_time(
                lambda mode=mode, settings=settings: posenc_cli.rope(8192, 128, arithmetic=mode, **settings), repeat
            )
        report.add(f"rope {name} 8192x128 float32, --arithmetic exact", f"{times['exact'] * 1e3:.1f} ms")
        report.add(
            "  --arithmetic framework",
            f"{times['framework'] * 1e3:.1f} ms",
            f"framework/exact {times['framework'] / times['exact']:.2f}",
        )
    for preset in ("whisper", "ddpm"):
        times = {}
        for mode in ("exact", "framework"):
            times[mode] = median_time(
                lambda mode=mode, preset=preset: posenc_cli.generate(4096, 512, preset=preset, arithmetic=mode), repeat
            )
        report.add(f"generate -p {preset} 4096x512 float32, --arithmetic exact", f"{times['exact'] * 1e3:.1f} ms")
        report.add(
            "  --arithmetic framework",
            f"{times['framework'] * 1e3:.1f} ms",
            f"framework/exact {times['framework'] / times['exact']:.2f}",
        )


def generation(report: Report, repeat: int) -> None:
    ours = median_time(lambda: posenc_cli.sinusoidal(SEQ, D), repeat)
    base = median_time(numpy_float64_then_cast, repeat)
    report.add(f"generate {SEQ}x{D} float32, posenc (correctly rounded)", f"{ours * 1e3:.1f} ms")
    report.add(
        "  numpy float64-then-cast",
        f"{base * 1e3:.1f} ms",
        f"posenc/numpy {ours / base:.2f}",
        verdict(ours <= base / 2, "posenc <= 0.5 x numpy"),
    )
    tutorial = torch_tutorial()
    if tutorial is None:
        report.add("  PyTorch tutorial path", "skipped", "", "torch not importable")
    else:
        t = median_time(tutorial, repeat)
        report.add(
            "  PyTorch tutorial path (float32)",
            f"{t * 1e3:.1f} ms",
            f"posenc/torch {ours / t:.2f}",
            verdict(ours <= t, "posenc <= torch tutorial"),
        )
    pkg = positional_encodings_pkg()
    if pkg is None:
        report.add("  positional-encodings (PyPI)", "skipped", "", "not importable")
    else:
        t = median_time(pkg, repeat)
        report.add("  positional-encodings (PyPI)", f"{t * 1e3:.1f} ms", f"posenc/pkg {ours / t:.2f}")


def text(report: Report, repeat: int, scratch: Path) -> None:
    table = posenc_cli.sinusoidal(SEQ, D)
    csv_path, c_path = scratch / "t.csv", scratch / "t.h"
    ours_csv = median_time(lambda: posenc_cli.save(table, csv_path), repeat)
    ours_c = median_time(lambda: posenc_cli.save(table, c_path), repeat)
    savetxt = median_time(lambda: np.savetxt(scratch / "s.csv", table, fmt="%.9g", delimiter=","), max(1, repeat // 2))
    report.add(f"CSV {SEQ}x{D} float32, posenc (shortest round-trip)", f"{ours_csv:.3f} s")
    report.add(f"C header {SEQ}x{D} float32, posenc", f"{ours_c:.3f} s")
    report.add(
        "  np.savetxt('%.9g')",
        f"{savetxt:.3f} s",
        f"savetxt/csv {savetxt / ours_csv:.1f}x, /C {savetxt / ours_c:.1f}x",
        verdict(max(ours_csv, ours_c) * 4 <= savetxt, "posenc CSV and C >= 4x savetxt"),
    )
    try:
        import pyarrow as pa
        import pyarrow.csv as pacsv
    except ImportError:
        report.add("  pyarrow.csv.write_csv", "skipped", "", "pyarrow not importable")
    else:
        frame = pa.table({f"d{j}": table[:, j] for j in range(D)})
        arrow = median_time(lambda: pacsv.write_csv(frame, scratch / "a.csv"), repeat)
        report.add(
            "  pyarrow.csv.write_csv",
            f"{arrow:.3f} s",
            f"arrow/csv {arrow / ours_csv:.2f}, /C {arrow / ours_c:.2f}",
            verdict(max(ours_csv, ours_c) <= arrow, "posenc CSV and C <= pyarrow"),
        )
    np.save(scratch / "t.npy", table)
    if shutil.which("xxd"):
        xxd = median_time(
            lambda: subprocess.run(["xxd", "-i", "t.npy", "x.h"], cwd=scratch, check=True), max(1, repeat // 2)
        )
        report.add("  xxd -i (bytes, not values)", f"{xxd:.3f} s", f"xxd/C {xxd / ours_c:.1f}x")
    npsave = median_time(lambda: np.save(scratch / "f.npy", table), repeat)
    ours_npy = median_time(lambda: posenc_cli.save(table, scratch / "p.npy"), repeat)
    report.add("  np.save of the precomputed array (I/O floor)", f"{npsave * 1e3:.1f} ms")
    report.add(
        "  posenc .npy save of the same array (fsync included)",
        f"{ours_npy * 1e3:.1f} ms",
        f"{ours_npy / npsave:.1f}x np.save",
    )


def identify_time(report: Report, repeat: int, scratch: Path) -> None:
    """posenc identify on 8192x1024 tables numpy computes as the PyTorch tutorial (float32) and DistilBERT (float64,
    rounded once) do, a learned one and a zero one: the issue (#18) asks for an answer within seconds, and #25 for
    that bound whatever the values. Then the files of #25's time bombs: a .safetensors of 2000 zero tensors (read
    one at a time), and the 16 KB .npz of 5041 x 832 zeros that kept ``posenc inspect`` busy for 71 s."""
    from posenc_cli.identification import Identifier, identify, identify_array
    from posenc_cli.read import load_each, names

    pos = np.arange(SEQ, dtype=np.float32)[:, None]
    div = np.exp(np.arange(0, D, 2, dtype=np.float32) * np.float32(-np.log(10000.0) / D))
    tutorial = np.zeros((SEQ, D), np.float32)
    tutorial[:, 0::2], tutorial[:, 1::2] = np.sin(pos * div), np.cos(pos * div)
    j = np.arange(D)
    angle = np.arange(SEQ)[:, None] / np.power(10000, 2 * (j // 2) / D)
    distilbert = np.where(j % 2 == 0, np.sin(angle), np.cos(angle)).astype(np.float32)
    learned = (np.random.default_rng(0).standard_normal((SEQ, D)) * 0.02).astype(np.float32)
    zeros = np.zeros((SEQ, D), np.float32)
    edited = distilbert.copy()
    edited[4000, 77] += 0.01  # two readings pass their sample (tensor2tensor's at base 9306 too): two whole tables
    for label, table in (
        ("PyTorch tutorial float32", tutorial),
        ("DistilBERT float64", distilbert),
        ("DistilBERT, one entry off", edited),
        ("learned", learned),
        ("zeros", zeros),
    ):
        identifier = Identifier()
        found = identifier.identify(table).match
        seconds = median_time(lambda table=table: identify_array(table), max(1, repeat // 2))
        said = f"{found.hypothesis.preset}, {found.comparison.agreement}" if found else "no match"
        work = f"{identifier.work.spent / table.size:.1f} entries/entry"
        report.add(
            f"identify {SEQ}x{D}, {label}",
            f"{seconds:.2f} s",
            f"{said}; {work}",
            verdict(seconds <= 10, "within seconds (<= 10 s)"),
        )
    import safetensors.numpy

    many = scratch / "zeros2000.safetensors"
    safetensors.numpy.save_file({f"layer.{i}.weight": np.zeros((64, 64), np.float32) for i in range(2000)}, many)
    seconds = once(lambda: identify(many))  # (minutes before #25: once is enough)
    report.add(
        "identify, .safetensors of 2000 zero 64x64 tensors",
        f"{seconds:.2f} s",
        "",
        verdict(seconds <= 10, "within seconds (<= 10 s)"),
    )
    reading = once(lambda: list(load_each(many, names(many) or [])))
    report.add("  reading the tensors alone, one at a time (read.load_each)", f"{reading:.2f} s")
    bomb = scratch / "zeros5041.npz"
    np.savez_compressed(bomb, pe=np.zeros((5041, 832), np.float32))
    inspect = [sys.executable, "-m", "posenc_cli", "inspect", str(bomb)]
    seconds = once(lambda: subprocess.run(inspect, check=True, capture_output=True))
    size = f"{bomb.stat().st_size >> 10} KiB"
    report.add(
        f"posenc inspect, {size} .npz of 5041x832 zeros",
        f"{seconds:.2f} s",
        "",
        verdict(seconds <= 10, "within seconds (<= 10 s)"),
    )


def startup(report: Report, repeat: int, scratch: Path) -> None:
    posenc = [sys.executable, "-m", "posenc_cli", "generate", "-n", "512", "-d", "128", "-o", "x.npy"]
    script = "import numpy as np; np.save('y.npy', np.zeros((512, 128), np.float32))"
    ours = median_time(lambda: run_process(posenc, scratch), repeat * 2)
    base = median_time(lambda: run_process([sys.executable, "-c", script], scratch), repeat * 2)
    report.add("start-up: posenc generate -n 512 -d 128 -o x.npy", f"{ours * 1e3:.0f} ms")
    report.add(
        "  python -c 'np.save(zeros)'",
        f"{base * 1e3:.0f} ms",
        f"posenc/numpy {ours / base:.2f}",
        verdict(ours <= 1.5 * base, "posenc <= 1.5 x"),
    )


def compile_time(report: Report, scratch: Path) -> None:
    """gcc -O2 -c of a 16 MiB float32 table: initializer header against the .bin + .incbin form."""
    if not shutil.which("gcc"):
        report.add("compile time of a 16 MiB table", "skipped", "", "gcc not found")
        return
    args = [sys.executable, "-m", "posenc_cli", "generate", "-n", "2048", "-d", "2048", "-q", "--name", "pe"]
    (scratch / "init").mkdir()
    subprocess.run([*args, "-o", str(scratch / "init" / "pe.h")], cwd=scratch, check=True)
    subprocess.run([*args, "-o", "pe.bin"], cwd=scratch, check=True)
    (scratch / "a.c").write_text('#include "init/pe.h"\nconst void *f(void);\nconst void *f(void) { return pe; }\n')
    (scratch / "b.c").write_text('#define PE_INCBIN\n#include "pe.h"\n')
    times = {}
    for unit in ("a.c", "b.c"):
        times[unit], peak = peak_rss_of(["gcc", "-O2", "-c", unit, "-o", unit + ".o"], scratch)
        label = "initializer header (.h)" if unit == "a.c" else ".bin + .incbin header"
        report.add(f"gcc -O2 -c, 16 MiB float32 table, {label}", f"{times[unit]:.2f} s", f"{peak / 2**20:.0f} MiB RSS")
    report.add("  .incbin speed-up", f"{times['a.c'] / times['b.c']:.0f}x")


def streaming(report: Report, scratch: Path) -> None:
    size = BIG_SEQ * BIG_D * 4
    dd = ["dd", "if=/dev/zero", "of=dd.bin", "bs=1M", f"count={size >> 20}", "conv=fdatasync", "status=none"]
    dd_time, _ = peak_rss_of(dd, scratch)
    (scratch / "dd.bin").unlink()
    report.add(f"dd bs=1M conv=fdatasync, {size >> 20} MiB", f"{size / dd_time / 1e9:.2f} GB/s")
    for suffix in (".npy", ".h5"):
        cmd = [
            sys.executable,
            "-m",
            "posenc_cli",
            "generate",
            "-n",
            str(BIG_SEQ),
            "-d",
            str(BIG_D),
            "-o",
            f"big{suffix}",
        ]
        elapsed, peak = peak_rss_of(cmd, scratch)
        (scratch / f"big{suffix}").unlink()
        rate = size / elapsed / 1e9
        report.add(
            f"stream {BIG_SEQ}x{BIG_D} float32 (4 GiB) to {suffix}",
            f"{rate:.2f} GB/s",
            f"{rate / (size / dd_time / 1e9):.2f} x dd",
            verdict(rate >= 0.5 * size / dd_time / 1e9, ">= 0.5 x dd"),
        )
        report.add(f"  peak RSS, {suffix}", f"{peak / 2**20:.0f} MiB", "", verdict(peak < 256 * 2**20, "< 256 MiB"))
    for suffix in (".csv", ".h"):
        rows = BIG_SEQ // 16  # text is ~2.5x the binary size: a 256 MiB table keeps the run short
        cmd = [sys.executable, "-m", "posenc_cli", "generate", "-n", str(rows), "-d", str(BIG_D), "-o", f"big{suffix}"]
        elapsed, peak = peak_rss_of(cmd, scratch)
        (scratch / f"big{suffix}").unlink()
        report.add(f"stream {rows}x{BIG_D} float32 (256 MiB of values) to {suffix}", f"{elapsed:.1f} s")
        report.add(f"  peak RSS, {suffix}", f"{peak / 2**20:.0f} MiB", "", verdict(peak < 256 * 2**20, "< 256 MiB"))


if __name__ == "__main__":
    main()
