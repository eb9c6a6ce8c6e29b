"""Verify a table: whether a file holds exactly what its parameters give, bit for bit.

- :func:`regenerate`: the table that recorded parameters give, computed again through the kind's record in
  :data:`posenc_cli.kinds.KINDS` (which says what each kind records and how it reads back).
- :func:`verify`: every value of a table against a reference, bit for bit.
- :func:`parse_settings`: ``key=value`` strings (``posenc verify -s seq_len=128``) as typed parameters.

Every array is read in row blocks (:func:`~posenc_cli.formats._blocks.row_blocks`, of :data:`BLOCK_VALUES` values
each), so a lazy reference (:class:`~posenc_cli.table.RowSource`, which :func:`regenerate` returns for sinusoidal
and RoPE tables) is never computed whole, and an array a file holds (:func:`posenc_cli.read.opened`) is read in flat
blocks of at most 4 MiB within each (:func:`~posenc_cli.formats._blocks.flat_blocks`), so it is never held whole
either. No printing, no click, no rich: the CLI formats what these return.
"""

from __future__ import annotations

import hashlib
import math
import re
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .conversion import convert
from .dtypes import FLOATS, ElementType, decode, is_element_type
from .errors import PosencWarning, SpecError
from .formats._blocks import flat_blocks, raw_bytes, row_blocks
from .formats.limits import Budget
from .kinds import Kind, by_table
from .params import ValueType, Wrong, spell
from .table import Array, FileArray, Param, Table

__all__ = ["Mismatch", "VerifyResult", "parse_settings", "regenerate", "verify"]

_EXAMPLE = "-s seq_len=128 -s d_model=64"


# ------------------------------------------------------------------------------------------------- settings
def parse_settings(pairs: Iterable[str]) -> dict[str, Param]:
    """``key=value`` strings as parameters, each value typed by its spelling.

    ``true``/``false`` (any case) are booleans, ``-?digits`` integers, anything Python's ``float`` reads (``1e4``,
    ``0.5``) floats, everything else text (``layout=sin-cos``, ``short_factor=1.0,1.5``); :func:`regenerate`
    converts each to the parameter's own type. ``SpecError`` (``param="settings"``) for a pair without ``=``, an
    empty key or value, or a key given twice.

    Examples
    --------
    >>> parse_settings(["seq_len=128", "base=1e4", "layout=sin-cos", "cls_token=True"])
    {'seq_len': 128, 'base': 10000.0, 'layout': 'sin-cos', 'cls_token': True}
    """
    out: dict[str, Param] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        key, text = key.strip(), text.strip()
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key) or not text:
            raise SpecError(f"settings are key=value with a parameter name and a value, got {pair!r}", param="settings")
        if key in out:
            raise SpecError(f"{key} is given twice ({out[key]!r} and {text!r})", param="settings")
        out[key] = _typed(text)
    return out


def _typed(text: str) -> Param:
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    if re.fullmatch(r"[+-]?[0-9]+", text):
        return int(text) if len(text) <= 4000 else text  # int() refuses past 4300 digits: the range check says why
    if not text.isascii():  # float() would read other scripts' digits
        return text
    try:
        return float(text)
    except ValueError:
        return text


# ----------------------------------------------------------------------------------------------- regenerate
def regenerate(kind: str, params: Mapping[str, Param], *, max_memory: int | None = None) -> Table:
    """The table that ``params`` give, computed again by :mod:`posenc_cli.api`.

    Parameters
    ----------
    kind : str
        ``sinusoidal``, ``rope``, ``alibi`` or ``sincos2d``; ``array`` (a file that records no kind: a CSV, a bare
        ``.npy``) takes the kind from ``params["kind"]``, ``sinusoidal`` by default.
    params : Mapping[str, int | float | str | bool]
        The parameters as a file records them (``Table.params``), or as given (:func:`parse_settings`); values are
        converted to each parameter's type (``"128"`` and ``128.0`` to ``seq_len=128``, ``"true"`` to ``True``).
        RoPE's ``short_factor``/``long_factor`` are comma-separated numbers (as recorded); its
        ``attention_scaling_folded`` is the API's ``attention_scaling``. A table that ``posenc convert`` made
        records ``converted_from``: it is generated in that type and converted to ``dtype`` as convert does (a
        table converted twice records only its first type, so its regeneration rounds once less).

        Sinusoidal tables with a ``preset``: a file records the layout always and every other value only where
        it differs from the paper's table, so when ``layout`` is given an absent ``odd``, ``start``, ``step``,
        ``amplitude`` or ``padding_idx`` means the paper's value (no padding row); without ``layout`` the
        preset's values apply, as ``posenc generate --preset`` gives them.

    Returns
    -------
    Table
        Sinusoidal and RoPE tables are lazy (their 2-D arrays are row sources, computed as they are read).

    Raises
    ------
    SpecError
        An unknown kind, no parameters at all, a missing or unknown parameter, a value of the wrong type or outside
        its domain (the API's own message), or recorded values that disagree with what the others give (a derived
        ``attention_scaling``, ``freq``...).
    FormatError
        A table built whole in memory (ALiBi's bias, the 2-D sincos table) that would take more than
        ``max_memory`` (:class:`~posenc_cli.formats.limits.Budget`; by default half the available memory): the
        parameters come from a file, and a few bytes may claim a table of gigabytes.

    Examples
    --------
    >>> t = regenerate("sinusoidal", {"seq_len": "4", "d_model": 6, "dtype": "float64"})
    >>> t.kind, t.array.shape, t.params["dtype"]
    ('sinusoidal', (4, 6), 'float64')
    >>> regenerate("rope", {"seq_len": 2, "head_dim": 4, "theta": 10000.0}).arrays["inv_freq"].tolist()
    [1.0, 0.009999999776482582]
    """
    given = dict(params)
    chosen = given.pop("kind", None)
    if kind == "array" or chosen is not None:
        if not given:
            raise SpecError(
                "the table records no parameters (a .csv or a bare .npy holds only values): "
                f"give them, e.g. {_EXAMPLE}",
                param="settings",
            )
        kind = str(chosen) if chosen is not None else "sinusoidal"
    record = by_table(kind)
    schema = record.recorded
    for key in given:
        if key not in schema:
            raise SpecError(
                f"{kind} tables have no parameter {key!r}; theirs are {', '.join(sorted(schema))}", param=key
            )
    values = {key: _typed_as(key, value, schema[key]) for key, value in given.items()}
    missing = [key for key in record.required_records() if key not in values]
    if missing:
        example = " ".join(f"-s {key}=..." for key in missing)
        what, them = " and ".join(missing), "it" if len(missing) == 1 else "them"
        raise SpecError(
            f"a {kind} table is made from {what}, which the file does not record: give {them} with {example}",
            param=missing[0],
        )
    Budget(max_memory).claim(max(0, record.work(values)), f"the {kind} table its parameters describe")
    source = values.get("converted_from")
    with warnings.catch_warnings():  # the makers' notes (a frequency rounded to 0) were for whoever wrote the file
        warnings.simplefilter("ignore", PosencWarning)
        if source is None:
            table = record.build(record.from_record(values))
        else:  # posenc convert: the table generated in the source type, then converted as convert did
            table = _converted(record, values, str(source))
    for key, value in values.items():
        agree = key not in table.params or _typed_as(key, table.params[key], schema[key]) == value
        if not agree:
            raise SpecError(
                f"{key} is recorded as {_shown(value)} but the other parameters give {table.params[key]!r}: "
                "the parameters do not describe one table",
                param=key,
            )
    return table


def _converted(record: Kind, values: dict[str, Any], source: str) -> Table:
    """The table ``posenc convert`` made: generated in the ``source`` type from ``values``, then converted."""
    if source == "int8":
        raise SpecError(
            "the table was converted from int8, whose scale the parameters do not keep: it cannot be regenerated",
            param="converted_from",
        )
    target: dict[str, Any] = {key: values[key] for key in ("dtype", "scale", "zero_point") if key in values}
    inputs = {k: v for k, v in values.items() if k not in target and k not in ("converted_from", "saturate")}
    if values.get("saturate"):  # one record for both steps: it lets each clip whose type can (it changes no value)
        for step, element in ((inputs, source), (target, values.get("dtype"))):
            if is_element_type(element) and element not in FLOATS:
                step["saturate"] = True
    return convert(record.build(record.from_record({**inputs, "dtype": source})), **target)


def _typed_as(key: str, value: object, kind: ValueType) -> Any:
    """``value`` read as ``kind`` reads recorded values; ``SpecError`` saying what was expected otherwise."""
    try:
        return kind.from_value(value)
    except Wrong as exc:
        raise SpecError(f"{key} must be {kind.typed or exc.args[0]}, got {spell(value)}", param=key) from None


def _shown(value: object) -> str:
    return ",".join(map(repr, value)) if isinstance(value, tuple) else repr(value)


# --------------------------------------------------------------------------------------------------- verify
@dataclass(frozen=True)
class Mismatch:
    """One value that differs: where, and both values (stored, and real as :func:`describe` decodes them)."""

    array: str
    index: tuple[int, ...]
    stored: int | float
    expected: int | float
    stored_value: float
    expected_value: float


@dataclass(frozen=True)
class VerifyResult:
    """What :func:`verify` found.

    ``compared`` values were compared bit for bit and ``mismatched`` of them differ; ``mismatches`` holds the first
    ones (array order, then C order). ``problems`` are differences of structure (an array missing, another shape or
    element type); ``notes`` say how values were compared when that is not plain (a text format's float64 values
    rounded to the reference's element type). ``ok`` when nothing differs.
    """

    compared: int
    mismatched: int
    mismatches: tuple[Mismatch, ...]
    problems: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.mismatched and not self.problems


def verify(table: Table, reference: Table, *, max_report: int = 10) -> VerifyResult:
    """Compare every value of ``table`` with ``reference`` bit for bit (``-0.0`` differs from ``0.0``).

    Arrays are matched by key and must have the same shape and storage type; when each table holds one array,
    those two are compared whatever their keys (a bare ``.npy`` against ``reference.part("cos")``). A table that
    records no element type and holds float64 values (read from a CSV) is first rounded to the reference's
    element type, as the CSV's decimals read back: exactly the stored values when posenc wrote the CSV.

    Memory: the reference's row blocks of :data:`BLOCK_VALUES` values (a row source computes
    :data:`~posenc_cli.formats._blocks.AHEAD` more ahead) and, for each, the stored values in pieces of at most
    4 MiB when ``table`` is read from a file in parts (:func:`posenc_cli.read.opened`): never either table whole
    (unless the reference is built whole: :func:`regenerate` says which).

    Parameters
    ----------
    table : Table
        What a file holds (:func:`posenc_cli.api.load`).
    reference : Table
        What it should hold (:func:`regenerate`).
    max_report : int
        How many mismatches to keep, at least 0; all are counted.

    Examples
    --------
    >>> import numpy as np, posenc_cli
    >>> good = posenc_cli.generate(4, 6)
    >>> verify(good, regenerate("sinusoidal", good.params)).ok
    True
    >>> bad = np.array(good.array)
    >>> bad[2, 3] = 0.5
    >>> result = verify(posenc_cli.table.Table("sinusoidal", {"pe": bad}, good.params), good)
    >>> result.mismatched, result.mismatches[0].index, result.mismatches[0].stored
    (1, (2, 3), 0.5)
    """
    if isinstance(max_report, bool) or not isinstance(max_report, int) or max_report < 0:
        raise SpecError(f"max_report must be an integer of at least 0, got {max_report!r}", param="max_report")
    pairs, problems = _pairs(table, reference)
    compared = mismatched = 0
    for key, digest in _digested(table, reference).items():
        values = table.arrays[key]
        compared += values.size
        if _sha256(values) != digest:
            problems.append(
                f"{key!r} is not what was written: its sha256 differs from the {key}_sha256 the table records"
            )
    found: list[Mismatch] = []
    notes: list[str] = []
    for key, stored, expected in pairs:
        if stored.shape != expected.shape:
            problems.append(f"{key!r} has shape {stored.shape}, the reference {expected.shape}")
            continue
        conform = _conformer(table, stored, reference, expected)
        if conform is None:
            problems.append(
                f"{key!r} is stored as {_type(table, stored)}, the reference as {_type(reference, expected)}"
            )
            continue
        if stored.dtype != expected.dtype:
            notes.append(
                f"{key!r} holds {stored.dtype} values without an element type (a text format): compared after rounding "
                f"them to {_type(reference, expected)}, as its decimals read back"
            )
        row = math.prod(expected.shape[1:])
        for lo, block in _blocks_of(expected):
            wanted = np.asarray(block).reshape(-1)
            for at, have in _stored_pieces(stored, lo, len(block) if block.ndim else 1, row):
                want = wanted[at - lo * row : at - lo * row + have.size]
                converted, bad = conform(have, want)
                differ = bad | (_bits(converted) != _bits(want))
                compared += want.size
                count = int(np.count_nonzero(differ))
                if not count:
                    continue
                mismatched += count
                wanted_more = max(0, max_report - len(found))
                for flat in np.flatnonzero(differ)[:wanted_more].tolist() if wanted_more else ():
                    index = tuple(int(i) for i in np.unravel_index(at + flat, stored.shape)) if stored.ndim else ()
                    found.append(
                        Mismatch(
                            key,
                            index,
                            have[flat].item(),
                            want[flat].item(),
                            float(decode(have[flat : flat + 1], table.params)[0]),
                            float(decode(want[flat : flat + 1], reference.params)[0]),
                        )
                    )
    return VerifyResult(compared, mismatched, tuple(found), tuple(problems), tuple(notes))


def _stored_pieces(stored: Array, lo: int, rows: int, row: int) -> Iterator[tuple[int, np.ndarray]]:
    """``(position, values)``: the stored values of rows ``lo`` to ``lo + rows`` (of ``row`` values each), 1-D, with
    the C-order position of the first: in flat blocks of at most 4 MiB from a file's array, else in one piece."""
    if isinstance(stored, FileArray):
        yield from flat_blocks(stored, lo * row, (lo + rows) * row)
    elif stored.ndim:
        yield lo * row, np.asarray(stored[lo : lo + rows]).reshape(-1)
    else:
        yield 0, np.asarray(stored).reshape(-1)


def _sha256(array: Array) -> str:
    """The sha256 of ``array``'s values, little-endian, in C order (as :func:`~posenc_cli.table.array_sha256`),
    read a block at a time."""
    digest = hashlib.sha256()
    little = array.dtype.newbyteorder("<")
    if isinstance(array, FileArray):
        blocks: Iterable[np.ndarray] = (values for _, values in flat_blocks(array))
    else:
        blocks = (values for _, values in _blocks_of(array))
    for values in blocks:
        digest.update(raw_bytes(values, little))
    return digest.hexdigest()


def _digested(table: Table, reference: Table) -> dict[str, str]:
    """The arrays parameters cannot regenerate (a bias gathered from a checkpoint): those the reference lacks and
    whose sha256 the table records as ``<key>_sha256``, with that digest."""
    out = {}
    for key in table.arrays:
        digest = table.params.get(f"{key}_sha256")
        if key not in reference.arrays and isinstance(digest, str):
            out[key] = digest
    return out


def _pairs(table: Table, reference: Table) -> tuple[list[tuple[str, Array, Array]], list[str]]:
    """``(key, stored, expected)`` of the arrays to compare, and the arrays that only one side has (an array
    checked by its recorded sha256 instead, :func:`_digested`, is neither)."""
    digested = _digested(table, reference)
    if len(table.arrays) == 1 and len(reference.arrays) == 1 and not digested:
        (key, expected), stored = next(iter(reference.arrays.items())), next(iter(table.arrays.values()))
        return [(key, stored, expected)], []
    pairs = [(key, table.arrays[key], array) for key, array in reference.arrays.items() if key in table.arrays]
    problems = [f"the table has no array {key!r}" for key in reference.arrays if key not in table.arrays]
    problems += [
        f"the table has an array {key!r} that the reference lacks"
        for key in table.arrays
        if key not in reference.arrays and key not in digested
    ]
    return pairs, problems


#: The most values of a block of the reference :func:`verify` compares at a time (whole rows; one row where a row
#: is longer). Computing a block (a row source) and comparing it take a few float64 arrays of its values whatever
#: the element type, so blocks are counted in values, not bytes: writers' 16 MiB blocks of q7 are 16 million
#: values, hundreds of MiB of work. Half a million take no more CPU per value than larger blocks (a quarter of
#: a million take a third more).
BLOCK_VALUES = 1 << 19


def _blocks_of(array: Array) -> Iterable[tuple[int, np.ndarray]]:
    """Row blocks of ``array`` of at most :data:`BLOCK_VALUES` values (a 0-d array is one block of itself)."""
    if array.ndim == 0:
        return [(0, np.asarray(array))]
    return row_blocks(array, BLOCK_VALUES * array.dtype.itemsize)


def _bits(values: np.ndarray) -> np.ndarray:
    """The stored bits, as unsigned integers of the same width (so NaN == NaN and -0.0 != 0.0)."""
    native = np.ascontiguousarray(values, values.dtype.newbyteorder("="))
    return native.view(f"u{native.dtype.itemsize}") if native.dtype.itemsize in (1, 2, 4, 8) else native


def _type(table: Table, array: Array) -> str:
    element = table.params.get("dtype")
    return f"{element} ({array.dtype.str})" if isinstance(element, str) else array.dtype.str


Conform = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


def _conformer(table: Table, stored: Array, reference: Table, expected: Array) -> Conform | None:
    """How to bring ``stored``'s blocks to ``expected``'s type: ``(values, bad)`` with ``bad`` marking values that
    have no exact counterpart; ``None`` when the types differ and cannot be reconciled."""
    element, recorded = reference.params.get("dtype"), table.params.get("dtype")
    if stored.dtype == expected.dtype and (recorded == element or recorded is None or element is None):
        return lambda have, want: (have, np.zeros(have.shape, bool))
    name = element if isinstance(element, str) else expected.dtype.name
    if stored.dtype != np.float64 or recorded is not None or name == "float64" or expected.dtype.kind not in "fiu":
        return None

    def conform(have: np.ndarray, want: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if expected.dtype.kind in "iu" and name != "bfloat16":
            info = np.iinfo(expected.dtype)
            bad = ~np.isfinite(have) | (have != np.round(have)) | (have < info.min) | (have > info.max)
            return np.where(bad, 0, have).astype(expected.dtype), bad
        if name == "bfloat16":
            converted, undecided = ElementType("bfloat16").convert(have)
            return _settle(have, converted, want, undecided, name), np.zeros(have.shape, bool)
        with np.errstate(over="ignore"):
            converted = have.astype(expected.dtype)
        back = converted.astype(np.float64)
        towards = np.nextafter(converted, np.where(have > back, np.inf, -np.inf).astype(expected.dtype))
        halfway = (have != back) & (have == (back + towards.astype(np.float64)) / 2)
        return _settle(have, converted, want, halfway, name), np.zeros(have.shape, bool)

    return conform


def _settle(have: np.ndarray, converted: np.ndarray, want: np.ndarray, undecided: np.ndarray, name: str) -> np.ndarray:
    """Values read as float64 that fall exactly on a rounding boundary of ``name`` lost the digits that decide
    them; such a value is the expected one when posenc's own spelling of the expected value reads back to it."""
    from .formats.text.spell import decimal

    spell = decimal(name)
    for flat in np.flatnonzero(undecided).tolist():
        expected = want.reshape(-1)[flat : flat + 1].reshape(1, 1)
        text = spell(expected, [b""], b"").decode("ascii")
        if float(text) == float(have.reshape(-1)[flat]):
            converted.reshape(-1)[flat] = want.reshape(-1)[flat]
    return converted
