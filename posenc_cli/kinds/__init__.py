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

Adding a kind is a module in ``encodings/`` (the math), a module here (its ``KIND``) and one line in :data:`KINDS`;
``tests/test_kinds.py`` walks the registry against every surface, and ``tests/test_new_kind.py`` drives a made-up
kind through all of them. A kind's module imports its encoding only inside its maker, so reading the registry (every
command's start) loads no kind's engine.

:data:`ELEMENT` (the element type) and :data:`OUTPUT` (where and how to write) are the parameters every table
command shares after its own; :data:`RUN` are the command line's own switches (quiet, check, ...), which a manifest
does not take: they are options of ``posenc build`` itself.
"""

from __future__ import annotations

from ..errors import SpecError
from . import alibi, axial, detr, mrope, relative, rope, sincos2d, sinusoid, window
from ._shared import CONVERT, ELEMENT, INDEX_ELEMENT, OUTPUT, RUN, Kind, check

__all__ = [
    "CONVERT", "ELEMENT", "INDEX_ELEMENT", "KINDS", "OUTPUT", "RUN", "Kind", "by_command", "by_table", "check"
]  # fmt: skip

#: Every table kind's module, one a line, in the order ``posenc --help`` and the docs list them: the registry.
_MODULES = (
    sinusoid,
    rope,
    mrope,
    axial,
    alibi,
    sincos2d,
    detr,
    relative,
    window,
)
#: Every table kind, by its command name.
KINDS: dict[str, Kind] = {module.KIND.command: module.KIND for module in _MODULES}


def by_command(command: str) -> Kind:
    """The kind ``posenc <command>`` makes; ``SpecError`` naming the commands otherwise."""
    try:
        return KINDS[command]
    except KeyError:
        raise SpecError(f"unknown command {command!r}; choose one of {', '.join(KINDS)}", param="command") from None


def by_table(table: str) -> Kind:
    """The kind whose tables record ``kind=table`` (``sinusoidal`` is made by ``generate``)."""
    for kind in KINDS.values():
        if kind.table == table:
            return kind
    known = ", ".join(k.table for k in KINDS.values())
    raise SpecError(f"posenc cannot regenerate a table of kind {table!r}; it regenerates {known}", param="kind")
