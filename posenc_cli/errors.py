"""posenc's exceptions: one base class, a few subclasses with builtin bases.

The library raises these and nothing else for bad input or failed writes; the CLI maps them to exit codes in one
place (``SpecError`` -> 2, every other ``PosencError`` -> 1).
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Iterable


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
    """Advice about an output that is what was asked for (a C table large enough to compile slowly, and what to
    write instead): the CLI prints it as a ``Note:`` once, when it creates or changes the output it is about; never
    for an output left as it was, under ``--check``, or with ``-q``."""


def warn(warning: PosencWarning) -> None:
    """Issue ``warning`` (:func:`warnings.warn`) from the first caller outside posenc: the line of the user's code
    that called posenc (``posenc_cli.save(...)``), whatever chain of posenc's own functions led to it, so that
    ``warnings``' filters by module and its ``file:line`` name the caller's code, never a line inside posenc
    (Python 3.12's ``skip_file_prefixes``, for every Python posenc runs on)."""
    frame = sys._getframe(1)
    level = 2  # 1 is this function; 2 its caller
    while frame.f_back is not None and str(frame.f_globals.get("__name__", "")).split(".")[0] == __package__:
        frame = frame.f_back
        level += 1
    warnings.warn(warning, stacklevel=level)


def close_matches(value: object, choices: Iterable[str]) -> list[str]:
    """The choices ``value`` is probably a typo of, closest first (at most three; none for a value like no choice):
    the one rule behind every "did you mean" posenc says about a name from a closed list (a preset, a format, a
    scaling, an element type). Case is ignored in the comparison (``Fairseq`` is close to ``fairseq``).

    Examples
    --------
    >>> close_matches("fairsq", ["vaswani", "fairseq", "marian"])
    ['fairseq']
    >>> close_matches("NPY", ["npy", "npz"]), close_matches("xyz", ["vaswani", "fairseq"])
    (['npy', 'npz'], [])
    """
    import difflib  # only on the way to an error

    by_lower: dict[str, str] = {}
    for choice in choices:
        by_lower.setdefault(choice.lower(), choice)
    return [by_lower[m] for m in difflib.get_close_matches(str(value).lower(), list(by_lower), n=3, cutoff=0.6)]


def did_you_mean(value: object, choices: Iterable[str], quote: Callable[[str], str] = repr) -> str:
    """``did you mean 'fairseq'?`` (``'a' or 'b'`` for two, ``'a', 'b' or 'c'`` for three) for a ``value`` close to
    some of ``choices`` (:func:`close_matches`), each spelled by ``quote``; ``""`` when none is close.

    Examples
    --------
    >>> did_you_mean("fairsq", ["vaswani", "fairseq"])
    "did you mean 'fairseq'?"
    >>> did_you_mean("lama3", ["llama3", "linear"], quote=str)
    'did you mean llama3?'
    """
    matches = [quote(m) for m in close_matches(value, choices)]
    if not matches:
        return ""
    listed = matches[0] if len(matches) == 1 else f"{', '.join(matches[:-1])} or {matches[-1]}"
    return f"did you mean {listed}?"
