"""Termination signals as exceptions, so that a stopped posenc cleans up the way an interrupted one does.

Python turns SIGINT into ``KeyboardInterrupt``: the stack unwinds, the atomic writer's ``finally`` removes its
temporary file, the CLI exits 130. SIGTERM (``kill``'s default; systemd, ``docker stop``, CI timeouts) and SIGHUP
(the terminal went away) instead end a Python process on the spot, by default: no ``finally`` runs and a
half-written temporary file stays behind. Inside :func:`terminating_cleanly` they raise :class:`Terminated`, so
the same cleanup runs, and the CLI exits with the shell's code for the signal, ``128 + signum``: 143 for SIGTERM,
129 for SIGHUP.

:class:`Terminated` derives from ``BaseException``, like ``KeyboardInterrupt``, so that the ``except Exception``
of a library between the signal and the CLI does not swallow it. A second signal while the first one unwinds is
ignored (the process is already on its way out; SIGKILL still ends it at once). A signal someone chose to ignore
(``nohup`` ignores SIGHUP) or to handle (an application embedding the CLI) is left as it is.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

#: The signals :func:`terminating_cleanly` turns into :class:`Terminated`.
SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Terminated(BaseException):
    """The process was asked to terminate by signal ``signum``.

    Examples
    --------
    >>> exc = Terminated(signal.SIGTERM)
    >>> str(exc), exc.exit_code
    ('terminated by SIGTERM', 143)
    """

    def __init__(self, signum: int) -> None:
        super().__init__(f"terminated by {signal.Signals(signum).name}")
        self.signum = int(signum)

    @property
    def exit_code(self) -> int:
        """The shell's exit status of a process ended by the signal: ``128 + signum``."""
        return 128 + self.signum


@contextlib.contextmanager
def terminating_cleanly(signums: tuple[signal.Signals, ...] = SIGNALS) -> Iterator[None]:
    """Within the block, ``signums`` (SIGTERM and SIGHUP) raise :class:`Terminated` in the main thread.

    Only signals at their default action are taken over, and only from the main thread (the one Python runs
    signal handlers in); the previous handlers are back when the block ends. Should a library turn the exception
    into another one on its way up (h5py makes errors of its callbacks ``OSError``), the block still ends with
    :class:`Terminated`, chained to it.

    Examples
    --------
    >>> with terminating_cleanly():
    ...     signal.getsignal(signal.SIGTERM) is signal.SIG_DFL   # kill -TERM raises Terminated here
    False
    >>> signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    True
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []

    def handler(signum: int, frame: FrameType | None) -> None:
        if received:
            return
        received.append(signum)
        raise Terminated(signum)

    previous = {}
    for signum in signums:
        if signal.getsignal(signum) is signal.SIG_DFL:
            previous[signum] = signal.signal(signum, handler)
    try:
        yield
    except Terminated:
        raise
    except BaseException as exc:
        if received:
            raise Terminated(received[0]) from exc
        raise
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)
