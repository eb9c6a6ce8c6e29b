"""The parameters a user types, one record each: the single source of every surface that names them.

A :class:`Param` is one option of one or more commands. From it come the click option (:mod:`posenc_cli.cli.options`),
the manifest key and its check (:mod:`posenc_cli.manifest.reader`), the reading of ``-s key=value`` and of recorded
parameters (:mod:`posenc_cli.verify`), the API keyword (the same word), the spelling in the command line recorded in
C provenance comments (:func:`command_line`) and the reference in ``docs/commands.md``.

One name everywhere: the manifest key and the API keyword are the long option without its dashes, with underscores
(``--c-half-type``: ``c_half_type``; ``--seq-len``: ``seq_len``). A boolean that has a negative form is a pair
(``--header/--no-header``), whose key is the positive word (``header = false``).

Each :class:`ValueType` reads a value three ways, and each way is strict about what it takes:

- :meth:`ValueType.from_toml`: a manifest's TOML value (an integer must be a TOML integer, never ``true``);
- :meth:`ValueType.from_text`: what a user typed (ASCII digits only: ``١٢`` is not 12);
- :meth:`ValueType.from_value`: a parameter a file recorded (NumPy scalars, ``"128"``, ``128.0`` for an integer).

All three raise :class:`Wrong` with what was expected; the caller names the place (option, key, entry).

A numeric type may carry a :class:`Range` (:meth:`ValueType.within`): then all three readers refuse a value outside
it, and what is expected says so (``"a number with 1 < x <= 1e12"``). The ranges of posenc's parameters, each with
its reason, are declared beside the parameters, in each kind's module (:mod:`posenc_cli.kinds`).

This module knows no click, no TOML parser and no table: it is data and the rules that read it.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from .dtypes import DTYPES, FIXED_BITS, FIXED_SPELLING, is_element_type
from .errors import did_you_mean
from .ranges import Range

__all__ = [
    "BOOLEAN", "INTEGER", "INTEGERS", "NUMBER", "NUMBERS", "GRID", "GRID_OR_VIDEO", "ROW", "TEXT", "Choice", "Param",
    "ValueType", "Wrong", "command_line", "show", "spell", "toml_value",
]  # fmt: skip


class Wrong(Exception):
    """A value of the wrong type or spelling; ``args[0]`` says what was expected (``"an integer"``)."""


def toml_value(value: object) -> str:
    """``value`` (a boolean, number, string, or a list or tuple of them) as a TOML value: what a manifest entry
    posenc prints holds (``posenc identify``). Strings are basic strings with JSON's escapes, valid in TOML.

    >>> toml_value(True), toml_value(1e4), toml_value("pe"), toml_value((16, 24))
    ('true', '10000.0', '"pe"', '[16, 24]')
    """
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return repr(value)


def show(value: object) -> str:
    """A value as TOML spells it, with its type: what an error message says was found."""
    if isinstance(value, bool):
        return f"{toml_value(value)} (a boolean)"
    if isinstance(value, str):
        return f"{toml_value(value)} (a string)"
    if isinstance(value, (int, float)):
        return f"{spell(value)} (an {'integer' if isinstance(value, int) else 'float'})"
    if isinstance(value, list):
        return f"{spell(value)} (an array)"
    return f"{value} (a {'table' if isinstance(value, dict) else type(value).__name__})"


#: Integers longer than this are spelled by their size: Python will not even write one of over 4300 digits.
_MAX_DIGITS = 30
#: Items of a list an error message spells before "...".
_MAX_ITEMS = 8


def spell(value: object) -> str:
    """A value as an error message writes it: a number as a person would have typed it (``1e+308``, ``32.0``,
    ``4096``), never as a fraction of a hundred digits; an integer too long to read by its size; a list by its first
    items.

    >>> spell(1e308), spell(2**63), spell(10**400), spell([1.5, 2]), spell(Fraction(1, 10**300))
    ('1e+308', '9223372036854775808', 'an integer of 401 digits', '[1.5, 2]', '1e-300')
    """
    import numpy as np

    if isinstance(value, (bool, np.bool_)):
        return str(bool(value)).lower()
    if isinstance(value, (int, np.integer)):
        number = int(value)
        if abs(number) < 10**_MAX_DIGITS:
            return str(number)
        digits = int(math.log10(abs(number))) + 1  # str() refuses past 4300 digits; the log does not
        return f"an integer of {digits} digits" if number > 0 else f"a negative integer of {digits} digits"
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    if isinstance(value, Fraction):
        if len(str(value)) <= 40:  # 1/3: the fraction itself is what was given
            return str(value)
        try:
            return repr(float(value))
        except OverflowError:
            return "a fraction beyond 1e308" if value > 0 else "a fraction below -1e308"
    if isinstance(value, (list, tuple, np.ndarray)):
        items = list(value[: _MAX_ITEMS + 1])
        shown = [spell(v) for v in items[:_MAX_ITEMS]] + (["..."] if len(items) > _MAX_ITEMS else [])
        return "[" + ", ".join(shown) + "]"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _is_int(value: object) -> bool:
    import numpy as np

    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _is_real(value: object) -> bool:
    import numpy as np

    return _is_int(value) or isinstance(value, (float, np.floating))


_ASCII_INT = re.compile(r"\s*[+-]?[0-9]+\s*")


def _int(text: str, expected: str) -> int:
    """The integer ``text`` spells (ASCII digits, checked by the caller); :class:`Wrong` for one longer than Python
    converts (4300 digits): no range of posenc's comes near it."""
    try:
        return int(text)
    except ValueError:
        raise Wrong(expected) from None


@dataclass(frozen=True)
class ValueType:
    """How one kind of value is read and spelled. Subclasses override the readers they need (``_toml``, ``_text``,
    ``_value``); the public readers add the check of :attr:`range`."""

    #: What is expected, for messages: ``"an integer"``.
    expected: str
    #: The placeholder in help and docs: ``INTEGER``.
    metavar: str
    #: What is expected on a command line, when it is spelled otherwise than in TOML.
    typed: str = ""
    #: The values allowed (each of a list, each side of a grid; :class:`posenc_cli.ranges.Range`); ``None``: any
    #: the type reads.
    range: Range | None = None
    #: How a range is said of this type's values: ``"each "`` for a list.
    each = ""

    def within(self, range_: Range, *, expected: str | None = None, typed: str | None = None) -> ValueType:
        """This type, reading only values in ``range_``, and saying so in :attr:`expected` and :attr:`typed` (before
        their example: ``"comma-separated numbers, each with 0 < x <= 1, e.g. 0.5,1.0"``), or as given."""

        def say(text: str) -> str:
            if not text or not self.each:
                return f"{text} with {range_.text}" if text else ""
            at = text.find(", e.g.")
            at = len(text) if at < 0 else at
            return f"{text[:at]}, {self.each}with {range_.text}{text[at:]}"

        expected = say(self.expected) if expected is None else expected
        typed = say(self.typed) if typed is None else typed
        return dataclasses.replace(self, expected=expected, typed=typed, range=range_)

    @property
    def range_help(self) -> str:
        """The range as ``--help`` and the reference say it, without spaces as click writes its own ranges (so that
        a line is never broken inside it): ``"[range: 1<x<=1e12]"``, ``"[range: each 0<=x<=2**15]"``; empty
        without one."""
        if self.range is None:
            return ""
        said = ", ".join(part.replace(" ", "") for part in self.range.text.split(" and "))
        return f"[range: {self.each}{said}]"

    def from_toml(self, value: object) -> Any:
        return self._within(self._toml(value))

    def from_text(self, text: str) -> Any:
        return self._within(self._text(text))

    def from_value(self, value: object) -> Any:
        return self._within(self._value(value))

    def numbers(self, value: Any) -> tuple[object, ...]:
        """The numbers of a value read (or given to the API) that :attr:`range` applies to: the value itself, each
        item of a list, each side of a grid; nothing of a value of another type (its own check says what is
        wrong with it)."""
        return (value,) if _is_real(value) or isinstance(value, Fraction) else ()

    def holds(self, value: Any) -> bool:
        """Whether every number of ``value`` (:meth:`numbers`) is in :attr:`range` (true without one)."""
        return self.range is None or all(n in self.range for n in self.numbers(value))

    def _within(self, value: Any) -> Any:
        if not self.holds(value):
            raise Wrong(self.expected)
        return value

    def _toml(self, value: object) -> Any:
        raise NotImplementedError

    def _text(self, text: str) -> Any:
        return self._toml(text)

    def _value(self, value: object) -> Any:
        return self._toml(value)

    def spell(self, value: Any) -> str:
        """The value as a command line writes it (recorded in C provenance comments)."""
        return repr(value) if isinstance(value, float) else str(value)


class _Integer(ValueType):
    def _toml(self, value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise Wrong(self.expected)
        return value

    def _text(self, text: str) -> int:
        if not isinstance(text, str) or not text.isascii() or not _ASCII_INT.fullmatch(text):
            raise Wrong(self.expected)
        return _int(text, self.expected)

    def _value(self, value: object) -> int:
        if _is_int(value):
            return int(value)  # type: ignore[call-overload, no-any-return]
        if isinstance(value, float) or (_is_real(value) and not _is_int(value)):
            if math.isfinite(float(value)) and float(value).is_integer():  # type: ignore[arg-type]
                return int(float(value))  # type: ignore[arg-type]
        if isinstance(value, str) and _ASCII_INT.fullmatch(value):
            return _int(value, self.expected)
        raise Wrong(self.expected)


class _Number(ValueType):
    def _toml(self, value: object) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise Wrong(self.expected)
        try:
            return float(value)  # as click's FLOAT makes it: an integer is recorded 500000.0
        except OverflowError:  # an integer beyond every float: beyond every range too
            raise Wrong(self.expected) from None

    def _text(self, text: str) -> float:
        if not isinstance(text, str) or not text.isascii():
            raise Wrong(self.expected)
        try:
            return float(text)
        except ValueError:
            raise Wrong(self.expected) from None

    def _value(self, value: object) -> float:
        if _is_real(value):
            try:
                return float(value)  # type: ignore[arg-type]
            except OverflowError:
                raise Wrong(self.expected) from None
        if isinstance(value, str):
            return self._text(value)
        raise Wrong(self.expected)


class _Boolean(ValueType):
    def _toml(self, value: object) -> bool:
        if not isinstance(value, bool):
            raise Wrong(self.expected)
        return value

    def _text(self, text: str) -> bool:
        if isinstance(text, str) and text.strip().lower() in ("true", "false", "1", "0"):
            return text.strip().lower() in ("true", "1")
        raise Wrong(self.expected)

    def _value(self, value: object) -> bool:
        import numpy as np

        if isinstance(value, (bool, np.bool_)):
            return bool(value)
        if _is_int(value) and value in (0, 1):
            return bool(value)
        if isinstance(value, str):
            return self._text(value)
        raise Wrong(self.expected)


class _Text(ValueType):
    def _toml(self, value: object) -> str:
        if not isinstance(value, str):
            raise Wrong(self.expected)
        return value


class Choice(ValueType):
    """One of ``choices``, spelled exactly."""

    choices: tuple[str, ...]

    def __init__(self, choices: Sequence[str]) -> None:
        object.__setattr__(self, "choices", tuple(choices))
        object.__setattr__(self, "expected", f"one of {', '.join(map(json.dumps, self.choices))}")
        object.__setattr__(self, "metavar", "[" + "|".join(self.choices) + "]")
        object.__setattr__(self, "typed", "")
        object.__setattr__(self, "range", None)

    def _toml(self, value: object) -> str:
        if not isinstance(value, str) or value not in self.choices:
            hint = did_you_mean(value, self.choices, quote=json.dumps) if isinstance(value, str) else ""
            raise Wrong(f"{self.expected} ({hint})" if hint else self.expected)
        return value


class _ElementName(ValueType):
    """An element type of a float table: a name of :data:`posenc_cli.dtypes.DTYPES` or a ``fixed<T>.<F>``."""

    def _toml(self, value: object) -> str:
        if not is_element_type(value):
            hint = did_you_mean(value, DTYPES, quote=json.dumps) if isinstance(value, str) else ""
            raise Wrong(f"{self.expected} ({hint})" if hint else self.expected)
        return str(value)


def _items(value: object) -> tuple[object, ...]:
    """The numbers of a list or tuple (an API value, a value read); nothing of anything else."""
    if isinstance(value, (list, tuple)) or type(value).__name__ == "ndarray":
        return tuple(v for v in value if _is_real(v) or isinstance(v, Fraction))  # type: ignore[attr-defined]
    return ()


class _Numbers(ValueType):
    """A non-empty list of numbers: ``[1.0, 1.5]`` in TOML, ``1.0,1.5`` typed or recorded."""

    each = "each "

    def numbers(self, value: Any) -> tuple[object, ...]:
        return _items(value)

    def _toml(self, value: object) -> tuple[float, ...]:
        if not isinstance(value, list) or not value:
            raise Wrong(self.expected)
        try:
            return tuple(NUMBER.from_toml(v) for v in value)
        except Wrong:
            raise Wrong(self.expected) from None

    def _text(self, text: str) -> tuple[float, ...]:
        if not isinstance(text, str):
            raise Wrong(self.expected)
        try:
            return tuple(NUMBER.from_text(v) for v in text.split(","))
        except Wrong:
            raise Wrong(self.expected) from None

    def _value(self, value: object) -> tuple[float, ...]:
        try:
            if isinstance(value, (list, tuple)):
                return tuple(NUMBER.from_value(v) for v in value)
            if _is_real(value) and not isinstance(value, bool):
                return (NUMBER.from_value(value),)  # one factor (head_dim 2), typed as a number
        except Wrong:
            raise Wrong(self.expected) from None
        return self._text(value)  # type: ignore[arg-type]

    def spell(self, value: Any) -> str:
        return ",".join(map(repr, value))


class _Grid(ValueType):
    """Patches per side: ``14``, ``"16x24"`` or ``[16, 24]`` in TOML; ``14`` or ``16x24`` typed."""

    each = "each side "

    def numbers(self, value: Any) -> tuple[object, ...]:
        return _items(value) if isinstance(value, (list, tuple)) else ValueType.numbers(self, value)

    def _toml(self, value: object) -> tuple[int, int]:
        if isinstance(value, int) and not isinstance(value, bool):
            return (value, value)
        if isinstance(value, list) and len(value) == 2 and all(type(v) is int for v in value):
            return (value[0], value[1])
        if isinstance(value, str):
            return self._text(value)
        raise Wrong(self.expected)

    def _text(self, text: str) -> tuple[int, int]:
        sides = str(text).lower().split("x")
        if len(sides) in (1, 2) and all(s.strip().isascii() and s.strip().isdigit() for s in sides):
            return (_int(sides[0], self.expected), _int(sides[-1], self.expected))
        raise Wrong(self.expected)

    def spell(self, value: Any) -> str:
        return "x".join(map(str, value))


class _GridOrVideo(ValueType):
    """A patch grid as :class:`_Grid` reads it, or a video latent's frames x height x width: ``"3x8x12"`` or
    ``[3, 8, 12]`` in TOML, ``3x8x12`` typed (the maker refuses three sides where its table has two)."""

    each = "each side "

    def numbers(self, value: Any) -> tuple[object, ...]:
        return _items(value) if isinstance(value, (list, tuple)) else ValueType.numbers(self, value)

    def _toml(self, value: object) -> tuple[int, ...]:
        if isinstance(value, int) and not isinstance(value, bool):
            return (value, value)
        if isinstance(value, list) and len(value) in (2, 3) and all(type(v) is int for v in value):
            return tuple(value)
        if isinstance(value, str):
            return self._text(value)
        raise Wrong(self.expected)

    def _text(self, text: str) -> tuple[int, ...]:
        sides = str(text).lower().split("x")
        if len(sides) in (1, 2, 3) and all(s.strip().isascii() and s.strip().isdigit() for s in sides):
            read = tuple(_int(s, self.expected) for s in sides)
            return read * 2 if len(read) == 1 else read
        raise Wrong(self.expected)

    def spell(self, value: Any) -> str:
        return "x".join(map(str, value))


class _Row(ValueType):
    """A row index, or ``none`` (no zero row at all)."""

    def _toml(self, value: object) -> int | str:
        if value == "none" or (isinstance(value, int) and not isinstance(value, bool)):
            return value
        raise Wrong(self.expected)

    def _text(self, text: str) -> int | str:
        if text == "none":
            return text
        stripped = str(text).strip()
        if stripped.isascii() and stripped.isdigit():
            return _int(stripped, self.expected)
        raise Wrong(self.expected)


INTEGER: ValueType = _Integer("an integer", "INTEGER")
NUMBER: ValueType = _Number("a number", "FLOAT")
BOOLEAN: ValueType = _Boolean("true or false", "BOOLEAN")
TEXT: ValueType = _Text("a string", "TEXT")
NUMBERS: ValueType = _Numbers(
    "a non-empty array of numbers, e.g. [1.0, 1.5]", "X,Y,...", "comma-separated numbers, e.g. 1.0,1.5,2.0"
)


class _Integers(ValueType):
    """A non-empty list of non-negative integers: ``[16, 24, 24]`` in TOML, ``16,24,24`` typed or recorded."""

    each = "each "

    def numbers(self, value: Any) -> tuple[object, ...]:
        return _items(value)

    def _toml(self, value: object) -> tuple[int, ...]:
        if not isinstance(value, list) or not value:
            raise Wrong(self.expected)
        try:
            out = tuple(INTEGER.from_toml(v) for v in value)
        except Wrong:
            raise Wrong(self.expected) from None
        if any(v < 0 for v in out):
            raise Wrong(self.expected)
        return out

    def _text(self, text: str) -> tuple[int, ...]:
        if not isinstance(text, str) or not re.fullmatch(r"\s*[0-9]+\s*(,\s*[0-9]+\s*)*", text):
            raise Wrong(self.expected)
        return tuple(_int(v, self.expected) for v in text.split(","))

    def _value(self, value: object) -> tuple[int, ...]:
        try:
            if isinstance(value, (list, tuple)):
                return tuple(INTEGER.from_value(v) for v in value)
        except Wrong:
            raise Wrong(self.expected) from None
        if _is_int(value):
            return (int(value),)  # type: ignore[call-overload]
        return self._text(value)  # type: ignore[arg-type]

    def spell(self, value: Any) -> str:
        return ",".join(str(int(v)) for v in value)


INTEGERS: ValueType = _Integers(
    "a non-empty array of non-negative integers, e.g. [16, 24, 24]",
    "N,N,...",
    "comma-separated integers, e.g. 16,24,24",
)
GRID: ValueType = _Grid(
    'H, "HxW" or [H, W] (positive integers, e.g. 14, "16x24" or [16, 24])',
    "H[xW]",
    "H or HxW (positive integers, e.g. 14 or 16x24)",
)
#: A grid or a video latent (``posenc axial``'s video styles), shared by every kind that takes ``grid``.
GRID_OR_VIDEO: ValueType = _GridOrVideo(
    'H, "HxW", "TxHxW", [H, W] or [T, H, W] (positive integers, e.g. 14, "16x24" or [3, 8, 12])',
    "H[xW]",
    "H or HxW (positive integers, e.g. 14 or 16x24; TxHxW: a video latent)",
)
ELEMENT_TYPE: ValueType = _ElementName(
    f"one of {', '.join(map(json.dumps, DTYPES))} or {FIXED_SPELLING} (signed fixed point: {FIXED_BITS[0]} <= total <= "
    f"{FIXED_BITS[1]}, 0 <= frac < total, e.g. fixed16.14)",
    "[" + "|".join(DTYPES) + "|fixedT.F]",
)
ROW: ValueType = _Row('a row index (an integer) or "none"', "ROW|none", "a row index (a non-negative integer) or none")


@dataclass(frozen=True)
class Param:
    """One option: its name (the manifest key and API keyword), type, default, help and command-line spelling.

    ``default`` is what a value left out means (``None``: not given). A :data:`BOOLEAN` param is a flag
    (``--progmem``) or, with ``pair``, a ``--x/--no-x`` pair whose default may be ``True`` or ``None``.
    ``always_recorded`` params are written in the recorded command line even at their default (so that a reader
    sees the table's size and type without knowing the defaults). ``near`` lists flags people type by mistake for
    this one (``-d`` on ``posenc rope``, whose head dimension is ``--head-dim``): the "no such option" error then
    names this option.
    """

    name: str
    type: ValueType
    help: str
    default: Any = None
    required: bool = False
    short: str | None = None
    pair: bool = False
    always_recorded: bool = False
    near: tuple[str, ...] = ()
    #: The short option this one had until the last release (relative's ``-q``, the query length, is ``-Q`` now):
    #: a command line using it with a value is refused with one line giving the new spelling. Drop it one release
    #: after the change.
    formerly: str | None = None

    @property
    def flag(self) -> str:
        """The long option: ``--`` and the name with dashes."""
        return "--" + self.name.replace("_", "-")

    @property
    def negative(self) -> str:
        """The negative form of a pair (``--no-header``)."""
        return "--no-" + self.flag[2:]

    @property
    def is_flag(self) -> bool:
        return self.type is BOOLEAN and not self.pair

    @property
    def full_help(self) -> str:
        """What ``--help`` and the reference say: :attr:`help`, then the type's range where it has one."""
        return f"{self.help}  {self.type.range_help}" if self.type.range is not None else self.help


def command_line(command: str, positional: Sequence[str], given: Iterable[tuple[Param, Any]], output: str) -> str:
    """The ``posenc <command>`` line that writes the same file, as recorded in C provenance comments.

    Every option whose value differs from its default (and every ``always_recorded`` one that is given), in the
    order given, then ``-o output``. Values: floats by ``repr`` (``10000.0``), lists of numbers comma-joined,
    grids ``HxW``, flags bare, a pair's negative side as ``--no-x``. The CLI and ``posenc build`` both record
    through this one function, so the two agree byte for byte.

    Examples
    --------
    >>> p = Param("seq_len", INTEGER, "rows", short="-n", always_recorded=True)
    >>> command_line("generate", [], [(p, 8)], "pe.h")
    'posenc generate --seq-len 8 -o pe.h'
    """
    words = ["posenc", command, *positional]
    for param, value in given:
        if value is None:
            continue
        if param.type is BOOLEAN:
            if param.pair:
                if value != param.default:
                    words.append(param.flag if value else param.negative)
            elif value:
                words.append(param.flag)
            continue
        if value == param.default and not param.always_recorded:
            continue
        words += [param.flag, param.type.spell(value)]
    return shlex.join([*words, "-o", Path(output).name])
