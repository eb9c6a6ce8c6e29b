"""What every kind shares: the :class:`Kind` record, the parameters every table command takes after its own, and
the ranges of the parameters several kinds take.

A kind's module (:mod:`posenc_cli.kinds.sinusoid`, ...) declares its own parameters, maker, record and help, and
ends with its ``KIND``; :mod:`posenc_cli.kinds` lists those records. What this module holds is what two kinds or
more would otherwise write twice:

- :data:`ELEMENT` (the element type of a float table) and :data:`INDEX_ELEMENT` (of an index table), :data:`OUTPUT`
  (where and how to write) and :data:`RUN` (the command line's own switches, which a manifest does not take: they
  are options of ``posenc build`` itself), and :data:`CONVERT` (``posenc convert``'s own);
- the ranges of the positions, widths, bases and quantisation every float kind takes (each with its reason:
  ``docs/commands.md`` lists them);
- :func:`check`, the one check of an API keyword against its parameter's type and range, at the edge;
- :data:`QUANTISATION`, how a float table records its element type, and :func:`same_names`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..dtypes import INDEX_DTYPES
from ..errors import SpecError
from ..formats import FORMAT_NAMES, FORMATS
from ..formats.options import FLOAT_LITERALS, HALF_TYPES, LANGS
from ..params import BOOLEAN, ELEMENT_TYPE, GRID_OR_VIDEO, INTEGER, NUMBER, TEXT, Choice, Param, ValueType, Wrong, spell
from ..ranges import Range
from ..table import Table

__all__ = [
    "ALIGN", "BASE", "BASE_RANGE", "CONVERT", "D_MODEL", "ELEMENT", "ELEMENT_KEYS", "INDEX_ELEMENT", "OUTPUT",
    "POSITIONS", "POSITIONS_RANGE", "QUANTISATION", "RUN", "SCALE", "SEQ_LEN", "ZERO_POINT", "Kind", "arithmetic",
    "check", "same_names",
]  # fmt: skip

# ------------------------------------------------------------------------------------------ shared ranges
POSITIONS_RANGE = Range(
    "1 <= x <= 2**32",
    "positions 0 .. 2**32 - 1: a row times a 21-bit piece of a frequency stays exact in float64, which every value's "
    "correct rounding rests on; 4 billion tokens is far past any model's context",
)
#: Rows of a table.
SEQ_LEN = INTEGER.within(POSITIONS_RANGE)
#: RoPE's pre-training length and max_position_embeddings: 2k to 128k in real configs.
POSITIONS = INTEGER.within(POSITIONS_RANGE)
D_MODEL = INTEGER.within(
    Range("1 <= x <= 2**20", "columns: the widest models have 2**14; each column's constants take microseconds")
)
BASE_RANGE = Range(
    "1 < x <= 1e12",
    "wavelengths grow with the base: 1 or less spreads none (10000 in most models, 500000 Llama 3, 1e6 Qwen2 and "
    "Gemma 3, up to about 5e10 in long-context fine-tunes); past 1e12 the slowest column turns less than "
    "2**32 / 1e12 < 0.005 rad over every position posenc makes",
)
BASE = NUMBER.within(BASE_RANGE)
# A parameter name is one declaration on every kind that takes it (tests/test_ranges.py): those several kinds share.
#: RoPE's wavelength base, ``rope_theta`` (``rope``, ``axial``).
THETA = NUMBER.within(BASE_RANGE)
HEAD_DIM_RANGE = Range(
    "2 <= x <= 2**16",
    "RoPE rotates pairs; heads are 64 to 512 wide (DeepSeek's rotary part 64, Gemma 4's global heads 512)",
)
#: An attention head's width (``rope``, ``axial``).
HEAD_DIM = INTEGER.within(HEAD_DIM_RANGE)
_GRID_SIDE = Range(
    "1 <= x <= 2**16", "cells per side of a patch grid or feature map (ViT 14 to 64, DETR an image side / 32)"
)
#: A patch grid or feature map, ``H`` or ``HxW`` (``sincos2d``, ``detr``, ``axial``; ``TxHxW`` for ``axial``'s
#: video styles, which the 2-D makers refuse) ...
GRID_SIDES = GRID_OR_VIDEO.within(_GRID_SIDE)
#: ... and each side as a table records it (``grid_height``, ``grid_width``).
GRID_SIDE = INTEGER.within(_GRID_SIDE)
#: Patches merged along each side into one token (``mrope``, ``axial``).
SPATIAL_MERGE_SIZE = INTEGER.within(
    Range("1 <= x <= 16", "patches merged along each side into one token: 2 in every published Qwen-VL and GLM-4.1V")
)
SCALE = NUMBER.within(
    Range(
        "2**-126 <= x <= 2**127",
        "the real value of one int8 step (about 1/127): TFLite and ONNX store it as a float32, whose normal numbers "
        "these are",
    )
)
ZERO_POINT = INTEGER.within(Range("-128 <= x <= 127", "an int8 code"))
ALIGN = INTEGER.within(Range("1 <= x <= 4096", "bytes, a power of two (checked): 4096 is a page"))

# ------------------------------------------------------------------------------------------ shared params
_FORMAT_HELP = "; ".join(f"{f.name}: {'/'.join(f.suffixes)}" for f in FORMATS.values())

#: The element type of every table command's output (``posenc convert`` takes them with no default dtype).
ELEMENT: tuple[Param, ...] = (
    Param("dtype", ELEMENT_TYPE, "Output element type.", default="float32", always_recorded=True),
    Param("scale", SCALE, "int8 only: the real value of one quantisation step."),
    Param("zero_point", ZERO_POINT, "int8 only: the integer that stands for 0.0.  [default: 0]"),
    Param(
        "saturate",
        BOOLEAN,
        "Fixed point, int8: clip values beyond the type's range to its ends (without it they are refused; "
        "q15's +1.0 is written as 32767 either way).",
        default=False,
    ),
)
#: The element parameters' names: what every float kind reads back from its record.
ELEMENT_KEYS = tuple(p.name for p in ELEMENT)

#: The element type of index tables (``posenc relative``, ``posenc window``): integers, no quantisation.
INDEX_ELEMENT: tuple[Param, ...] = (
    Param(
        "dtype",
        Choice(INDEX_DTYPES),
        "Index element type.  [default: the smallest of int8, int16, int32 that holds the index]",
        always_recorded=True,
    ),
)

#: Where and how a table is written: the same on every command that writes one, and the manifest keys of the same
#: names. Each format declares which of them it takes (:attr:`posenc_cli.formats.Format.options`).
OUTPUT: tuple[Param, ...] = (
    Param("format", Choice(FORMAT_NAMES), f"Force a format ({_FORMAT_HELP}).", short="-f"),
    Param(
        "name",
        TEXT,
        "C symbol / HDF5 dataset (or group) name.  [default: output stem as a C identifier]",
        always_recorded=True,
    ),
    Param("part", TEXT, "Write only this array of a table that holds several (npy and csv need it)."),
    Param("header", BOOLEAN, "CSV: write the d0,d1,... header row.", default=True, pair=True),
    Param(
        "lang",
        Choice(LANGS),
        "C headers: C (also valid C++) or C++.  [default: c; c++ for .hpp, .hh, .hxx, .cpp, .cc, .cxx]",
    ),
    Param("namespace", TEXT, "C++: put the table in this namespace (constexpr, C++11)."),
    Param("align", ALIGN, "C: align the table to N bytes (a power of two)."),
    Param("progmem", BOOLEAN, "C: put the table in AVR flash (PROGMEM).", default=False),
    Param(
        "float_literal",
        Choice(FLOAT_LITERALS),
        "C float tables: shortest decimals (C89), hex floats (C99/C++17) or bit patterns.",
        default="decimal",
    ),
    Param(
        "c_half_type",
        Choice(HALF_TYPES),
        "C float16 tables: native literals of this type.  [default: uint16_t bit patterns]",
    ),
)

#: ``posenc convert``'s own options: the array to take and the element type to re-encode it as (none: as stored).
CONVERT: tuple[Param, ...] = (
    Param("key", TEXT, "The array to take from a file that holds several (an .npz or .safetensors tensor)."),
    Param("dtype", ELEMENT_TYPE, "Re-encode the values.  [default: as stored]", always_recorded=True),
    *ELEMENT[1:],
)

#: The command line's own switches: not table parameters, never recorded, not manifest keys.
RUN: tuple[Param, ...] = (
    Param("output", TEXT, "Output file (its suffix picks the format); - for stdout.", required=True, short="-o"),
    Param("verbose", BOOLEAN, "Say what was written (on stderr).", default=False, short="-v"),
    Param("quiet", BOOLEAN, "No progress bar or notes, even on a terminal.", default=False, short="-q"),
    Param(
        "check",
        BOOLEAN,
        "Write nothing; exit 0 if the output is up to date, 1 if it would change.",
        default=False,
    ),
    Param("json", BOOLEAN, "Print a report (paths, format, shapes, sha256) on stdout.", default=False),
    Param(
        "force",
        BOOLEAN,
        "Replace a file beside the output that posenc did not write (the .json of a .npy, the .h of a .c or .bin).",
        default=False,
    ),
)


def arithmetic(followed: str, *more: str) -> Param:
    """A kind's ``arithmetic`` parameter: ``exact`` (every value correctly rounded from the real formula: the
    default, and not recorded) or ``framework`` (the values the code the kind follows computes, ``followed``: its
    operations in its order and in its types (float32, or float64 where that code uses it), each elementary function
    correctly rounded in its type), and the kind's ``more`` modes
    (RoPE's ``ggml``). Recorded only when it is not ``exact``, so exact tables keep their bytes."""
    return Param(
        "arithmetic",
        Choice(("exact", "framework", *more)),
        f"exact: every value correctly rounded; framework: the operations of {followed}, in its types, each function "
        "correctly rounded (docs/tables.md).",
        default="exact",
    )


#: How a float table records its element type (``converted_from``: the type ``posenc convert`` rounded from).
QUANTISATION: dict[str, ValueType] = {
    "dtype": TEXT, "scale": SCALE, "zero_point": ZERO_POINT, "saturate": BOOLEAN, "converted_from": TEXT
}  # fmt: skip


@dataclass(frozen=True)
class Kind:
    """One table kind: its command, parameters, maker, record and capabilities; a kind's module ends with its own.

    ``make`` is the maker (the API function of the same name as the command: ``posenc_cli.rope``), called with the
    parameters' names as keywords (``lazy=True`` too when ``lazy``: the table's rows are made as a writer asks for
    them). ``recorded`` is every parameter its tables record, with the type each reads back as; ``recorded_as``
    names the inputs a table records under other names (sincos2d's ``grid`` as ``grid_height`` and
    ``grid_width``); ``from_record`` turns recorded parameters (typed) into ``make``'s keywords; ``work`` is the
    memory, in bytes, the table takes built whole (0 for lazy kinds), claimed before a file's parameters are
    trusted to regenerate it, from ``work_per_value`` (the peak bytes per value of a table built whole, measured).
    """

    command: str
    table: str
    short_help: str
    doc: str
    params: tuple[Param, ...]
    make: Callable[..., Table]
    lazy: bool
    recorded: Mapping[str, ValueType]
    from_record: Callable[[Mapping[str, Any]], dict[str, Any]]
    #: Peak memory per value while a table is built whole (``ru_maxrss``, NumPy 2, every element type, with room to
    #: spare): what :attr:`work` and the maker's own memory check count.
    work_per_value: int
    work: Callable[[Mapping[str, Any]], int] = lambda p: 0
    recorded_as: Mapping[str, tuple[str, ...]] | None = None
    #: The element type's parameters: :data:`ELEMENT` (float tables), :data:`INDEX_ELEMENT` (index tables).
    element: tuple[Param, ...] = ELEMENT
    #: The parameters that name a file the kind reads (``bias``): a manifest resolves them from its own folder,
    #: keeps them inside it, and its depfile lists them as prerequisites.
    files: tuple[str, ...] = ()
    #: Capability: the lines of a C provenance comment that give the table's formula for these parameters (none:
    #: the comment gives the parameters alone). ``{name}`` stands for the C symbol.
    c_formula: Callable[[Mapping[str, Any]], tuple[str, ...]] | None = None
    #: Capability: ``posenc identify`` reads this kind's tables with this reader, ``(order, "module:function")``
    #: of :mod:`posenc_cli.identification` (readers are tried in ``order``; a match stops the search).
    identify: tuple[int, str] | None = None

    @property
    def inputs(self) -> tuple[Param, ...]:
        """The parameters that decide the table: the kind's own, then the element type."""
        return self.params + self.element

    @property
    def keys(self) -> tuple[Param, ...]:
        """Every manifest key of this command, in the order ``posenc <command>`` declares its options."""
        return self.inputs + OUTPUT

    def required_records(self) -> tuple[str, ...]:
        """The recorded parameters without which a table cannot be regenerated."""
        renamed = self.recorded_as or {}
        return tuple(name for p in self.params if p.required for name in renamed.get(p.name, (p.name,)))

    def build(self, values: Mapping[str, Any]) -> Table:
        """The table of ``values`` (parameter name to typed value; ``None`` or absent: not given)."""
        given = {p.name: values[p.name] for p in self.inputs if values.get(p.name) is not None}
        return self.make(**given, lazy=True) if self.lazy else self.make(**given)


def check(params: tuple[Param, ...], **values: object) -> None:
    """The one check of API keywords, at the edge: :class:`~posenc_cli.errors.SpecError` naming the first whose
    value is a number (or holds numbers) outside its parameter's range (the parameter of that name in ``params``,
    the command line's, the manifest's and a record's check too). ``None`` (not given) passes, and so does a value
    of another type: the maker's own check says what is wrong with it.

    Examples
    --------
    >>> check(ELEMENT, scale=0.5, zero_point=None)
    >>> check(ELEMENT, zero_point=300)
    Traceback (most recent call last):
    posenc_cli.errors.SpecError: zero_point must be an integer with -128 <= x <= 127, got 300
    """
    by_name = {p.name: p for p in params}
    for name, value in values.items():
        kind = by_name[name].type
        if value is not None and not kind.holds(value):
            raise SpecError(f"{name} must be {kind.expected}, got {spell(value)}", param=name)


def read_as(params: tuple[Param, ...], name: str, value: object) -> Any:
    """An API keyword read as its parameter's type reads a Python value (a list keyword as a tuple of its items: a
    single integer is a list of one); ``None`` stays ``None``; :class:`~posenc_cli.errors.SpecError` naming it for a
    value of another type or outside the range.

    Examples
    --------
    >>> from posenc_cli.kinds.axial import PARAMS
    >>> read_as(PARAMS, "axes_dim", [16, 56, 56])
    (16, 56, 56)
    >>> read_as(PARAMS, "axes_dim", [1, 2])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    posenc_cli.errors.SpecError: axes_dim must be ... each with 2 <= x <= 4096, e.g. [16, 24, 24], got [1, 2]
    """
    if value is None:
        return None
    kind = next(p.type for p in params if p.name == name)
    try:
        return kind.from_value(value)
    except Wrong:
        raise SpecError(f"{name} must be {kind.expected}, got {spell(value)}", param=name) from None


def same_names(names: tuple[str, ...]) -> Callable[[Mapping[str, Any]], dict[str, Any]]:
    """A ``from_record`` for a kind whose tables record each input by its own name."""

    def from_record(p: Mapping[str, Any]) -> dict[str, Any]:
        return {key: p[key] for key in names if key in p}

    return from_record
