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

Python delivers these exceptions between any two bytecodes, also inside code that cannot raise: a weakref callback
(the import system's module locks have one), a ``__del__``. There Python prints "Exception ignored in ..." with a
traceback and goes on as if nothing had happened. Within :func:`terminating_cleanly` such a swallowed interrupt is
kept instead, silently, and raised again at the next point that asks (:func:`raise_swallowed`: the atomic writer
asks before it renames anything into place) or when the block ends: the run still ends as interrupted, in one line.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType

#: The signals :func:`terminating_cleanly` turns into :class:`Terminated`.
SIGNALS = (signal.SIGTERM, signal.SIGHUP)

#: Interrupts Python swallowed as unraisable within :func:`terminating_cleanly`, oldest first.
_swallowed: list[BaseException] = []


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
    previous_hook = sys.unraisablehook

    def keep_interrupts(unraisable: sys.UnraisableHookArgs) -> None:
        if isinstance(unraisable.exc_value, (KeyboardInterrupt, Terminated)):
            _swallowed.append(unraisable.exc_value)
        else:
            previous_hook(unraisable)

    sys.unraisablehook = keep_interrupts
    del _swallowed[:]
    try:
        yield
        raise_swallowed()
    except Terminated:
        raise
    except BaseException as exc:
        if received:
            raise Terminated(received[0]) from exc
        raise
    finally:
        sys.unraisablehook = previous_hook
        for signum, old in previous.items():
            signal.signal(signum, old)


def raise_swallowed() -> None:
    """Raise the first interrupt Python swallowed inside :func:`terminating_cleanly`, if there was one.

    Called where going on would make the interrupted run's work permanent (before an output is renamed into
    place), and when the block ends.

    Examples
    --------
    >>> raise_swallowed()   # nothing was swallowed: nothing happens
    """
    if _swallowed:
        exc = _swallowed[0]
        del _swallowed[:]
        raise exc
