"""The working memory and threads of the float32 text code (:mod:`~posenc_cli.formats.text.floats`).

Blocks are cut into chunks that worker threads format in parallel, NumPy releasing the GIL; each thread reuses its
scratch arrays from chunk to chunk, and the output buffers of one block are reused for the next. The pool and the
buffers are shared by every thread that formats text; a forked child (which has none of its parent's threads, and
maybe a lock some thread held) starts them afresh.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..._native import threads

_local = threading.local()
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()
_spare_outputs: list[np.ndarray] = []


def cpus() -> int:
    """The CPUs this process may run on, at most ``POSENC_THREADS`` (:func:`posenc_cli._native.threads`)."""
    return threads()


def executor(workers: int) -> ThreadPoolExecutor:
    """The shared pool of worker threads, started with ``workers`` threads on first use (a later call's count does
    not resize it)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="posenc-text")
        return _pool


def _after_fork() -> None:
    """A forked child has none of its parent's threads, and maybe a lock some thread held: start afresh."""
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()
    _spare_outputs.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def take_output(size: int) -> np.ndarray:
    """A uint8 buffer of at least ``size`` bytes, its contents undefined: one given back earlier, or a new one."""
    with _pool_lock:
        for i, buf in enumerate(_spare_outputs):
            if buf.size >= size:
                return _spare_outputs.pop(i)
    return np.empty(size, np.uint8)


def give_back(bufs: list[np.ndarray], keep: int) -> None:
    """Keep ``bufs`` for :func:`take_output`, and no more than the ``keep`` last buffers given back in all."""
    with _pool_lock:
        _spare_outputs.extend(bufs)
        del _spare_outputs[: max(0, len(_spare_outputs) - keep)]


class Scratch:
    """Arrays reused from chunk to chunk (one set per thread), for at most ``n`` values."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.x32 = np.empty(n, np.float32)
        self.u32 = [np.empty(n, np.uint32) for _ in range(4)]
        self.f = [np.empty(n) for _ in range(6)]
        self.i = [np.empty(n, np.int64) for _ in range(8)]
        self.u = [np.empty(n, np.uint64) for _ in range(10)]
        self.b = [np.empty(n, np.bool_) for _ in range(6)]


def scratch(n: int, name: str = "work") -> Scratch:
    """This thread's scratch arrays called ``name``, for ``n`` values at least (grown by doubling)."""
    work: Scratch | None = getattr(_local, name, None)
    if work is None or work.n < n:
        work = Scratch(max(n, 2 * work.n if work else 1024))
        setattr(_local, name, work)
    return work
