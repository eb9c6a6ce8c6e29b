"""KINDS: every table kind, one module each, and the one place that lists them.

A kind's module (:mod:`~posenc_cli.kinds.sinusoid`, :mod:`~posenc_cli.kinds.rope`, ...) holds everything about it: its
parameters (:class:`~posenc_cli.params.Param`: name, type with its range, default, required, help, flags), the
function that makes its table (the API function of the command's name: ``posenc_cli.rope``), how its table records
its parameters and reads them back, its help text, its work estimate, and its optional capabilities (a C formula,
an ``identify`` reader); it ends with its :class:`~posenc_cli.kinds._shared.Kind` record, ``KIND``. Every surface is
generated from :data:`KINDS`:

- the API functions (:mod:`posenc_cli.api`) and the package's names (:mod:`posenc_cli`);
- the click commands, their options and ``--help`` (:mod:`posenc_cli.cli.tables`);
- the manifest keys of ``[[table]]`` entries and their checks (:mod:`posenc_cli.manifest.reader`);
- the command line recorded in C provenance comments (:func:`posenc_cli.params.command_line`) and the formula there;
- ``posenc verify``'s, ``inspect``'s and ``identify``'s regeneration from recorded parameters
  (:mod:`posenc_cli.verify`, :mod:`posenc_cli.identification`) and the memory they claim first;
- the reference ``docs/commands.md`` (:mod:`posenc_cli.cli.reference`).

Adding a kind is a module in ``encodings/`` (the math), a module here (its ``KIND``) and one line in
:data:`REGISTRY`; ``tests/test_kinds.py`` walks the registry against every surface, and ``tests/test_new_kind.py``
drives a made-up kind through all of them. :data:`REGISTRY` names each kind's module, which is imported only when
that kind is asked for (:func:`by_command`, :func:`by_table`) or every kind is (:data:`KINDS`, built on first use):
``posenc generate`` imports the sinusoid kind alone. A kind's module imports its encoding only inside its maker, so
reading a kind loads no kind's engine.

:data:`ELEMENT` (the element type) and :data:`OUTPUT` (where and how to write) are the parameters every table
command shares after its own; :data:`RUN` are the command line's own switches (quiet, check, ...), which a manifest
does not take: they are options of ``posenc build`` itself.
"""

from __future__ import annotations

import importlib

from ..errors import SpecError
from ._shared import CONVERT, ELEMENT, INDEX_ELEMENT, OUTPUT, RUN, Kind, check

__all__ = [
    "CONVERT", "ELEMENT", "INDEX_ELEMENT", "KINDS", "OUTPUT", "REGISTRY", "RUN", "Kind", "by_command", "by_table",
    "check",
]  # fmt: skip

#: The registry: every table kind, one a line, in the order ``posenc --help`` and the docs list them: its command,
#: the module of this package that holds its ``KIND``, and the kind its tables record (``Kind.table``).
#: Written out, not read from the modules, so that a command finds its kind without importing the others
#: (``tests/test_kinds.py`` holds each line to its module's ``KIND``).
REGISTRY: dict[str, tuple[str, str]] = {
    "generate": ("sinusoid", "sinusoidal"),
    "rope": ("rope", "rope"),
    "mrope": ("mrope", "mrope_ids"),
    "axial": ("axial", "axial_rope"),
    "alibi": ("alibi", "alibi"),
    "sincos2d": ("sincos2d", "sincos2d"),
    "detr": ("detr", "detr_sine"),
    "relative": ("relative", "relative"),
    "window": ("window", "window"),
}

#: Every table kind, by its command name, in :data:`REGISTRY`'s order: made on first use (PEP 562), which imports
#: every kind's module.
KINDS: dict[str, Kind]


def __getattr__(name: str) -> object:
    if name == "KINDS":
        kinds = {command: by_command(command) for command in REGISTRY}
        globals()["KINDS"] = kinds
        return kinds
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def by_command(command: str) -> Kind:
    """The kind ``posenc <command>`` makes (its module alone imported); ``SpecError`` naming the commands otherwise."""
    try:
        module, _ = REGISTRY[command]
    except KeyError:
        raise SpecError(f"unknown command {command!r}; choose one of {', '.join(REGISTRY)}", param="command") from None
    kind: Kind = importlib.import_module(f"{__name__}.{module}").KIND
    return kind


def by_table(table: str) -> Kind:
    """The kind whose tables record ``kind=table`` (``sinusoidal`` is made by ``generate``)."""
    for command, (_, recorded) in REGISTRY.items():
        if recorded == table:
            return by_command(command)
    known = ", ".join(recorded for _, recorded in REGISTRY.values())
    raise SpecError(f"posenc cannot regenerate a table of kind {table!r}; it regenerates {known}", param="kind")
