"""The one rule for the file names posenc hands to build tools: ``--list-outputs``, the depfile, CMake.

A manifest's outputs, and the files its entries read, reach three readers: ``posenc build --list-outputs`` prints
them for CMake (``posenc_add_manifest`` declares them as the ``OUTPUT`` of a custom command), the depfile names them
for make and Ninja, and CMake rewrites that depfile (``DEPFILE``, policy CMP0116) before Ninja or make reads it. A
name is given to a build tool only when every one of them reads it back as the same file, so all three accept
exactly the names this module accepts, and refuse the others before anything is written.

Allowed, in each name of a path (a folder or the file; ``/`` separates them): ASCII letters and digits,
``. _ - + , @ ! { } ~`` and the space, and any printable non-ASCII character (``str.isprintable``: letters of any
script; not a no-break space, a line separator or a bidirectional override). ``~`` may not start a name, and no name
may be ``..``. Everything else is refused, each for a reader that would misread it:

- ``$``: GNU make and Ninja read ``$$`` in a depfile, but CMake's rewrite writes a single ``$`` back, which Ninja
  takes as the end of the name: the build never finds its output and reruns posenc every time;
- ``#``: CMake refuses an ``OUTPUT`` that holds it (at generate time), and make starts a comment there;
- ``~`` at the start of a name: make reads ``~/`` and ``~user`` as a home directory;
- a newline: it ends a line of ``--list-outputs`` and of a depfile; any other control character (a tab): make and
  Ninja end a name at it; a non-printable non-ASCII character (a no-break space, a bidirectional override): it is
  not what the name shows;
- ``\\``: make's and Ninja's escape, and a folder separator on Windows;
- ``:`` ``;`` ``=`` ``%`` ``*`` ``?`` ``[`` ``]`` ``(`` ``)``: make syntax (rules, variables, patterns, wildcards,
  archive members); ``;`` also splits a CMake list, and brackets change how CMake splits one;
- quotes, ``& | < > ^`` and the backquote: Ninja ends a name at them; CMake refuses ``<`` and ``>`` in an ``OUTPUT``;
- ``..``: CMake and Ninja resolve it in the text (``a/link/../b.h`` is ``a/b.h``), the system through the link, so
  the file written would not be the file the build declared.

Plain ``posenc build`` (no ``--depfile``) and the table commands take any name the file system takes: only a name
given to a build tool must satisfy this rule.
"""

from __future__ import annotations

import os
import string
from collections.abc import Iterable

__all__ = ["ALLOWED", "name_problem"]

#: The ASCII characters every build tool posenc serves reads as part of a file name (the space escaped in a depfile).
_PLAIN = frozenset(string.ascii_letters + string.digits + "._-+,@!{}~ /")
#: What the rule allows, in the words of the error messages.
ALLOWED = "letters, digits, space, printable non-ASCII and . _ - + , @ ! { } ~ (not first in a name)"
#: Why a build tool misreads each refused ASCII character, for the error message.
_WHY = {
    "$": "CMake's depfile rewrite leaves it unescaped, and Ninja then misreads the name",
    "#": "CMake refuses it in an OUTPUT, and make reads it as a comment",
    "\\": "make and Ninja read it as an escape, Windows as a folder separator",
    ":": "make reads it as a rule",
    ";": "make ends a rule at it and CMake splits a list there",
    "=": "make reads it as a variable",
    "%": "make reads it as a pattern",
    "*": "make reads it as a wildcard",
    "?": "make reads it as a wildcard",
    "[": "make reads it as a wildcard and CMake as a list bracket",
    "]": "make reads it as a wildcard and CMake as a list bracket",
    "(": "make reads it as an archive member",
    ")": "make reads it as an archive member",
    "<": "Ninja ends a name at it and CMake refuses it in an OUTPUT",
    ">": "Ninja ends a name at it and CMake refuses it in an OUTPUT",
}


def name_problem(path: str) -> str | None:
    """Why build tools cannot all be given ``path`` (see the module's docstring), or ``None`` when they can.

    The answer is a phrase for an error message: the character or the name at fault, and who misreads it.

    Examples
    --------
    >>> name_problem("tables/my table ünï.h") is None
    True
    >>> name_problem("tables/a$b.h")
    "it holds '$': CMake's depfile rewrite leaves it unescaped, and Ninja then misreads the name"
    >>> name_problem("~/pe.h")
    "the name '~' starts with '~', which make reads as a home directory"
    """
    for char in path:
        if char in _PLAIN or (ord(char) >= 128 and char.isprintable()):
            continue
        if char == "\n":
            return "it holds a newline, which ends a line of --list-outputs and of a depfile"
        if ord(char) >= 128:
            return f"it holds {char!r}, which is not printable (a space, a separator or a formatting character)"
        if not char.isprintable():
            return f"it holds the control character {char!r}, at which make and Ninja end a name"
        return f"it holds {char!r}: {_WHY.get(char, 'Ninja ends a name at it')}"
    for name in _names(path):
        if name == os.pardir:
            return "it holds '..', which CMake and Ninja resolve in the text but the system through links"
        if name.startswith("~"):
            return f"the name {name!r} starts with '~', which make reads as a home directory"
    return None


def _names(path: str) -> Iterable[str]:
    return path.split("/")
