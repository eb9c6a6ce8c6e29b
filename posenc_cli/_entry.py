"""The ``posenc`` console script: Ctrl-C is answered before anything heavy is imported.

Importing the CLI (numpy, click, the formats) takes a few hundred milliseconds; a SIGINT in that time used to print
a Python traceback. From the moment this module is imported (the interpreter's own start-up, about 0.1 s, comes
before and is Python's) until the CLI is imported, SIGINT ends the process with the CLI's own one line and exit code 130
(nothing has been written yet, so there is nothing to clean up); then Python's usual handler is back, and the CLI
turns ``KeyboardInterrupt`` into the same line after removing its temporary files. A SIGINT the caller chose to
ignore (``nohup``, a background job) stays ignored.
"""

from __future__ import annotations

import os
import signal
from types import FrameType


def _interrupted(signum: int, frame: FrameType | None) -> None:
    os.write(2, b"Error: interrupted\n")
    os._exit(130)


# Installed as this module is imported (the console script's first import), not when main() starts.
_EARLY = signal.getsignal(signal.SIGINT) is signal.default_int_handler
if _EARLY:
    signal.signal(signal.SIGINT, _interrupted)


def main() -> None:
    """Import the CLI under the early SIGINT answer, restore Python's handler, run.

    The CLI turns ``KeyboardInterrupt`` into its one line once its command has started; one that lands in the few
    steps before that (between restoring the handler and the CLI's own ``try``) is answered here the same way.

    No Python warning reaches the terminal, whatever ``PYTHONWARNINGS`` or ``-W`` say: not while the CLI is
    imported, not at exit (an unclosed file's ``ResourceWarning``); inside a command the CLI prints posenc's own
    notes and nothing else (:func:`posenc_cli.cli._run.no_warnings`).
    """
    import warnings

    warnings.simplefilter("ignore")  # for the life of this process, which is the command's
    from .cli import main as run

    try:
        if _EARLY:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        run()
    except KeyboardInterrupt:
        os.write(2, b"Error: interrupted\n")
        raise SystemExit(130) from None
