"""posenc's exceptions: one base class, a few subclasses with builtin bases.

The library raises these and nothing else for bad input or failed writes; the CLI maps them to exit codes in one
place (``SpecError`` -> 2, every other ``PosencError`` -> 1).
"""

from __future__ import annotations


class PosencError(Exception):
    """Base class of every error posenc raises on purpose."""


class SpecError(PosencError, ValueError):
    """A parameter is invalid: bad usage, exit code 2 in the CLI.

    ``param`` names the offending parameter the way the Python API spells it (``"seq_len"``, ``"base"``,
    ``"name"``, ``"format"``); the CLI turns it into the option name (``--seq-len``).
    """

    def __init__(self, message: str, *, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


class FormatError(PosencError, ValueError):
    """A file's content is not what its format promises (truncated, wrong magic, unexpected structure)."""


class OutputError(PosencError, OSError):
    """Writing an output failed (missing directory, no permission, disk full): exit code 1 in the CLI."""


class PosencWarning(UserWarning):
    """A note about a request that works but is spelled in a way posenc will stop reading (a renamed manifest key):
    the CLI prints it as ``Note: ...`` unless ``-q``."""


class PosencAdvice(PosencWarning):
    """Advice about an output that is what was asked for (a C table large enough to compile slowly): the CLI
    prints it only with ``-v``, and never under ``--check`` (posenc is silent on success)."""
