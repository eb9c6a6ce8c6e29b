"""The ``posenc`` console script: Ctrl-C is answered before anything heavy is imported.

Importing the CLI (numpy, click, the formats) takes a few hundred milliseconds; a SIGINT in that time used to print
a Python traceback. Until the CLI is imported, SIGINT ends the process with the CLI's own one line and exit code 130
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


def main() -> None:
    """Install the early SIGINT answer, import the CLI, restore Python's handler, run."""
    early = signal.getsignal(signal.SIGINT) is signal.default_int_handler
    if early:
        signal.signal(signal.SIGINT, _interrupted)
    from .cli import main as run

    if early:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    run()
