"""The benchmark's shared parts: timing, the report table, the machine line, and the peers posenc is measured against
(the PyTorch tutorial's table, numpy's, the positional-encodings package, transformers' RoPE module).

Imported by ``bench.py``, ``targets.py`` and ``formatters.py`` (run as scripts from ``benchmarks/``, so a plain
``import peers``). Peers that are not importable are returned as None; the callers report them as skipped.
"""

from __future__ import annotations

import contextlib
import math
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from importlib import metadata
from pathlib import Path

import numpy as np

import posenc_cli
from posenc_cli import _native

SEQ, D = 8192, 1024

#: The peers' table, as a user without posenc computes it (numpy float64, then cast): the CSV and C peers start here.
PEER_TABLE = (
    "import numpy as np\n"
    f"pos = np.arange({SEQ}, dtype=np.float64)[:, None]\n"
    f"j = np.arange({D})\n"
    f"angle = pos * 10000.0 ** (-(2 * (j // 2)) / {D})\n"
    "t = np.where(j % 2 == 0, np.sin(angle), np.cos(angle)).astype(np.float32)\n"
)


def median_time(fn: Callable[[], object], repeat: int) -> float:
    fn()  # warm-up: imports, caches, page cache
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def once(fn: Callable[[], object]) -> float:
    """Wall time of one call (for the slow rows, where a warm-up run would double minutes)."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _set(values: dict[str, str | None]) -> None:
    for name, value in values.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@contextlib.contextmanager
def environ(**values: str | None) -> Iterator[None]:
    """Set (a string) or unset (None) environment variables for the block, and restore them after it: posenc reads
    ``POSENC_CORE`` and ``POSENC_THREADS`` at each call, so one process can time both cores and any thread count."""
    saved = {name: os.environ.get(name) for name in values}
    try:
        _set(values)
        yield
    finally:
        _set(saved)


# ---- generation peers -------------------------------------------------------------------------------------------
def numpy_float64_then_cast() -> np.ndarray:
    pos = np.arange(SEQ, dtype=np.float64)[:, None]
    j = np.arange(D)
    angle = pos * 10000.0 ** (-(2 * (j // 2)) / D)
    return np.where(j % 2 == 0, np.sin(angle), np.cos(angle)).astype(np.float32)


def torch_tutorial(seq: int = SEQ, d: int = D) -> Callable[[], object] | None:
    """The PyTorch tutorial's PositionalEncoding table (float32 exp path), ``seq x d``, when torch is importable.
    It runs on torch's threads: ``torch.set_num_threads`` decides how many."""
    try:
        import torch
    except ImportError:
        return None

    def run() -> object:
        position = torch.arange(seq).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d, 2) * (-math.log(10000.0) / d))
        pe = torch.zeros(seq, d)
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        return pe

    return run


def positional_encodings_pkg() -> Callable[[], object] | None:
    try:
        import torch
        from positional_encodings.torch_encodings import PositionalEncoding1D
    except ImportError:
        return None
    layer = PositionalEncoding1D(D)
    x = torch.zeros(1, SEQ, D)

    def run() -> object:
        layer.cached_penc = None  # the layer caches its last table: measure the computation, not the cache
        return layer(x)

    return run


#: Llama 3.1's RoPE: posenc's keywords and transformers' ``rope_scaling`` for the same cache.
LLAMA31 = dict(theta=500000.0, scaling="llama3", factor=8.0, original_max_positions=8192)
LLAMA31_SCALING = dict(
    rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0, original_max_position_embeddings=8192
)


def transformers_llama_rope(positions: int) -> Callable[[], object] | None:
    """transformers' own CPU computation of Llama 3.1's RoPE cache (``LlamaRotaryEmbedding``, head_dim 128), for
    ``positions`` positions: the module built (its ``inv_freq``, as posenc's call builds it too) and called on
    ``position_ids = arange(positions)[None]`` under ``torch.no_grad()``; None when transformers is not importable."""
    try:
        import torch
        from transformers import LlamaConfig
        from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding
    except ImportError:
        return None
    config = LlamaConfig(
        hidden_size=4096,
        num_attention_heads=32,
        max_position_embeddings=positions,
        rope_theta=500000.0,
        rope_scaling=dict(LLAMA31_SCALING),
    )
    x = torch.zeros(1, dtype=torch.float32)  # the forward takes only its dtype and device

    def run() -> object:
        with torch.no_grad():
            module = LlamaRotaryEmbedding(config=config)
            return module(x, torch.arange(positions)[None])

    return run


# ---- processes --------------------------------------------------------------------------------------------------
def run_process(cmd: list[str], cwd: Path) -> tuple[float, int]:
    """Wall time and peak RSS (bytes) of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr.decode()}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    # ru_maxrss of children is the max over all children so far: measure big runs in a fresh helper process.
    return elapsed, max(peak, before) * 1024


def peak_rss_of(cmd: list[str], cwd: Path) -> tuple[float, int]:
    """Run ``cmd`` under a fresh Python that reports only that child's peak RSS."""
    probe = (
        "import resource, subprocess, sys, time\n"
        "t = time.perf_counter(); p = subprocess.run(sys.argv[1:], capture_output=True)\n"
        "t = time.perf_counter() - t\n"
        "sys.exit(p.stderr.decode()) if p.returncode else None\n"
        "print(t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe, *cmd], cwd=cwd, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {out.stderr}")
    elapsed, peak = out.stdout.split()
    return float(elapsed), int(peak)


# ---- the report -------------------------------------------------------------------------------------------------
class Report:
    def __init__(self) -> None:
        self.rows: list[tuple[str, str, str, str]] = []

    def add(self, what: str, value: str, ratio: str = "", verdict: str = "") -> None:
        self.rows.append((what, value, ratio, verdict))
        print(f"{what:<58} {value:>14} {ratio:>16} {verdict}", file=sys.stderr, flush=True)

    def markdown(self) -> str:
        lines = ["| measurement | value | ratio | target |", "|---|---:|---:|---|"]
        lines += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in self.rows]
        return "\n".join(lines)


def verdict(ok: bool, target: str) -> str:
    return f"{'met' if ok else 'NOT met'}: {target}"


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    peers = []
    for name in ("torch", "transformers", "pyarrow", "orjson"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            peers.append(f", {name} {metadata.version(name)}")
    return (
        f"{cpu}, {os.cpu_count()} logical CPUs visible, {len(os.sched_getaffinity(0))} usable; Python "
        f"{platform.python_version()}, numpy {np.__version__}{''.join(peers)}, posenc {posenc_cli.__version__} "
        f"({_native.CORE} core)"
    )
