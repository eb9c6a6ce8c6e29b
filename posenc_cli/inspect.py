"""Inspect and verify a table: what a file holds, and whether it holds exactly what its parameters give.

- :func:`describe`: the kind, the parameters and, per array, shape, element type, real min and max, the SHA-256
  of the stored bytes and their size: the facts ``posenc inspect`` shows (``--json`` prints the dict as it is).
- :func:`regenerate`: the table that recorded parameters give, computed again (``generate``, ``rope``, ``alibi``
  or ``sincos2d`` of :mod:`posenc_cli.api`).
- :func:`verify`: every value of a table against a reference, bit for bit.
- :func:`parse_settings`: ``key=value`` strings (``posenc verify -s seq_len=128``) as typed parameters.

Every array is read in row blocks (:func:`~posenc_cli.formats._blocks.row_blocks`, about 4 MiB each), so a lazy
reference (:class:`~posenc_cli.table.RowSource`, which :func:`regenerate` returns for sinusoidal and RoPE tables)
is never computed whole. No printing, no click, no rich: the CLI formats what these return.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _resources, api
from .dtypes import ElementType, decode
from .errors import SpecError
from .formats._blocks import row_blocks
from .formats.limits import Budget
from .table import Array, Param, Table

__all__ = ["Mismatch", "VerifyResult", "describe", "parse_settings", "regenerate", "verify"]

_INT, _FLOAT, _BOOL, _TEXT = "an integer", "a number", "true or false", "text"
_QUANTISATION = {"dtype": _TEXT, "scale": _FLOAT, "zero_point": _INT, "converted_from": _TEXT}
#: Every parameter each kind records, with its type. Some are derived (RoPE's attention_scaling and dynamic_base,
#: sincos2d's layout): they are not inputs, but must agree with what the others give.
_SCHEMAS: dict[str, dict[str, str]] = {
    "sinusoidal": {
        "seq_len": _INT, "d_model": _INT, "base": _FLOAT, **_QUANTISATION, "preset": _TEXT, "layout": _TEXT,
        "freq": _TEXT, "freq_shift": _FLOAT, "min_timescale": _FLOAT, "odd": _TEXT, "start": _FLOAT,
        "step": _FLOAT, "padding_idx": _INT, "amplitude": _FLOAT,
    },
    "rope": {
        "seq_len": _INT, "head_dim": _INT, "theta": _FLOAT, "layout": _TEXT, "scaling": _TEXT, **_QUANTISATION,
        "attention_scaling": _FLOAT, "attention_scaling_folded": _BOOL, "dynamic_base": _FLOAT, "factor": _FLOAT,
        "original_max_positions": _INT, "max_positions": _INT, "low_freq_factor": _FLOAT,
        "high_freq_factor": _FLOAT, "beta_fast": _FLOAT, "beta_slow": _FLOAT, "truncate": _BOOL, "mscale": _FLOAT,
        "mscale_all_dim": _FLOAT, "attention_factor": _FLOAT, "short_factor": _TEXT, "long_factor": _TEXT,
    },
    "alibi": {"heads": _INT, "seq_len": _INT, **_QUANTISATION},
    "sincos2d": {
        "grid_height": _INT, "grid_width": _INT, "d_model": _INT, "cls_token": _BOOL, "base": _FLOAT,
        **_QUANTISATION, "layout": _TEXT,
    },
}  # fmt: skip
_REQUIRED = {
    "sinusoidal": ("seq_len", "d_model"),
    "rope": ("seq_len", "head_dim"),
    "alibi": ("heads",),
    "sincos2d": ("grid_height", "grid_width", "d_model"),
}
#: RoPE scaling parameters, passed through to :func:`posenc_cli.api.rope` as given.
_ROPE_SCALING = (
    "factor", "original_max_positions", "max_positions", "low_freq_factor", "high_freq_factor", "beta_fast",
    "beta_slow", "truncate", "mscale", "mscale_all_dim", "attention_factor",
)  # fmt: skip
#: The paper's values of the sinusoidal parameters a file records only when they differ from them.
_PAPER = {"layout": "interleaved", "odd": "natural", "start": 0.0, "step": 1.0, "amplitude": 1.0}
_EXAMPLE = "-s seq_len=128 -s d_model=64"


# ------------------------------------------------------------------------------------------------- describe
def describe(table: Table) -> dict[str, Any]:
    """The facts of a table: kind, parameters and, per array, what it holds.

    Parameters
    ----------
    table : Table
        Any table, as :func:`posenc_cli.api.load` returns it or as made in memory.

    Returns
    -------
    dict
        JSON-able: ``{"kind": str, "params": {...}, "arrays": {key: {...}}}`` where each array has ``shape``
        (list of int), ``dtype`` (posenc's element type from the ``dtype`` parameter, else the NumPy dtype name),
        ``storage`` (the stored NumPy type, little-endian spelling: ``"<f4"``, ``"<u2"``, ``"|i1"``), ``min`` and
        ``max`` (real values, float, NaN ignored; ``None`` for an empty or all-NaN array: q15, q7, int8 and
        bfloat16 decoded by :func:`~posenc_cli.dtypes.decode`), ``sha256`` (hex digest of the stored
        bytes, little-endian, C order) and ``nbytes``.

    Examples
    --------
    >>> import posenc_cli
    >>> facts = describe(posenc_cli.generate(4, 6, dtype="q15"))
    >>> facts["kind"], facts["arrays"]["pe"]["dtype"], facts["arrays"]["pe"]["storage"]
    ('sinusoidal', 'q15', '<i2')
    >>> facts["arrays"]["pe"]["min"], facts["arrays"]["pe"]["max"], facts["arrays"]["pe"]["nbytes"]
    (-0.989990234375, 0.999969482421875, 48)
    """
    element = table.params.get("dtype")
    arrays: dict[str, dict[str, Any]] = {}
    for key, array in table.arrays.items():
        digest = hashlib.sha256()
        low, high = math.inf, -math.inf
        little = array.dtype.newbyteorder("<")
        for block in _blocks(array):
            digest.update(np.ascontiguousarray(block, little).tobytes())
            real = decode(np.asarray(block), table.params)
            real = real[~np.isnan(real)]
            if real.size:
                low, high = min(low, float(real.min())), max(high, float(real.max()))
        found = low <= high
        arrays[key] = {
            "shape": [int(n) for n in array.shape],
            "dtype": element if isinstance(element, str) else array.dtype.name,
            "storage": little.str,
            "min": low if found else None,
            "max": high if found else None,
            "sha256": digest.hexdigest(),
            "nbytes": int(array.nbytes),
        }
    return {"kind": table.kind, "params": dict(table.params), "arrays": arrays}


def _blocks(array: Array) -> Iterable[np.ndarray]:
    """Row blocks of any array (a 0-d array is one block of itself)."""
    if array.ndim == 0:
        return [np.asarray(array)]
    return (block for _, block in row_blocks(array))


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
        return int(text)
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
    if kind not in _SCHEMAS:
        known = ", ".join(_SCHEMAS)
        raise SpecError(f"posenc cannot regenerate a table of kind {kind!r}; it regenerates {known}", param="kind")
    schema = _SCHEMAS[kind]
    for key in given:
        if key not in schema:
            raise SpecError(
                f"{kind} tables have no parameter {key!r}; theirs are {', '.join(sorted(schema))}", param=key
            )
    values = {key: _convert(key, value, schema[key]) for key, value in given.items()}
    missing = [key for key in _REQUIRED[kind] if key not in values]
    if missing:
        example = " ".join(f"-s {key}=..." for key in missing)
        raise SpecError(f"a {kind} table needs {', '.join(missing)}: give them ({example})", param=missing[0])
    Budget(max_memory).claim(max(0, _work_bytes(kind, values)), f"the {kind} table its parameters describe")
    source = values.get("converted_from")
    if source is None:
        table = _MAKERS[kind](values)
    else:  # posenc convert: the table generated in the source type, then converted as convert did
        if source == "int8":
            raise SpecError(
                "the table was converted from int8, whose scale the parameters do not keep: it cannot be regenerated",
                param="converted_from",
            )
        target: dict[str, Any] = {key: values[key] for key in ("dtype", "scale", "zero_point") if key in values}
        inputs = {k: v for k, v in values.items() if k not in target and k != "converted_from"}
        table = api.convert(_MAKERS[kind]({**inputs, "dtype": source}), **target)
    for key, value in values.items():
        if key in ("short_factor", "long_factor"):
            agree = _factors(key, str(value)) == _factors(key, str(table.params[key]))
        else:
            agree = key not in table.params or table.params[key] == value
        if not agree:
            raise SpecError(
                f"{key} is recorded as {value!r} but the other parameters give {table.params[key]!r}: "
                "the parameters do not describe one table",
                param=key,
            )
    return table


def _work_bytes(kind: str, values: Mapping[str, Param]) -> int:
    """The memory :func:`regenerate` takes to build a ``kind`` table whole (its lazy kinds stream: nothing)."""
    per_value = _resources.WORK_BYTES_PER_VALUE.get(kind, 0)
    if kind == "alibi" and isinstance(values.get("seq_len"), int):
        return int(values["heads"]) * int(values["seq_len"]) * per_value
    if kind == "sincos2d":
        rows = 1 + int(values["grid_height"]) * int(values["grid_width"])
        return rows * int(values["d_model"]) * per_value
    return 0


def _convert(key: str, value: object, kind: str) -> Param:
    """``value`` as the type ``kind`` names; ``SpecError`` saying what was expected otherwise."""
    if kind == _BOOL:
        if isinstance(value, (bool, np.bool_)):
            return bool(value)
        if isinstance(value, str) and value.strip().lower() in ("true", "false", "1", "0"):
            return value.strip().lower() in ("true", "1")
        if isinstance(value, (int, np.integer)) and value in (0, 1):
            return bool(value)
    elif kind == _INT:
        if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
            return int(value)
        if isinstance(value, (float, np.floating)) and float(value).is_integer():
            return int(value)
        if isinstance(value, str) and re.fullmatch(r"\s*[+-]?[0-9]+\s*", value):
            return int(value)
    elif kind == _FLOAT:
        if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_)):
            return float(value)
        if isinstance(value, str) and value.isascii():
            try:
                return float(value)
            except ValueError:
                pass
    elif isinstance(value, str):
        return value
    elif key in ("short_factor", "long_factor") and isinstance(value, (int, float)) and not isinstance(value, bool):
        return repr(float(value))  # one factor (head_dim 2), typed as a number by parse_settings
    raise SpecError(f"{key} must be {kind}, got {value!r}", param=key)


def _sinusoidal(p: dict[str, Any]) -> Table:
    args: dict[str, Any] = {key: p[key] for key in ("base", "preset", "padding_idx", "scale", "zero_point") if key in p}
    record = "preset" in p and "layout" in p  # a file's record: absent values are the paper's
    for key, paper in _PAPER.items():
        if key in p or record:
            args[key] = p.get(key, paper)
    if record and "padding_idx" not in p:
        args["no_padding"] = True
    freq = p.get("freq", "paper")
    if freq not in ("paper", "shift", "timescales"):
        raise SpecError(f"freq must be one of paper, shift, timescales, got {freq!r}", param="freq")
    if freq == "shift" or "freq_shift" in p:
        args["freq_shift"] = p.get("freq_shift", 0.0)
    if freq == "timescales" or "min_timescale" in p:
        args["min_timescale"] = p.get("min_timescale", 1.0)
    return api.generate(p["seq_len"], p["d_model"], dtype=p.get("dtype", "float32"), lazy=True, **args)


def _rope(p: dict[str, Any]) -> Table:
    args: dict[str, Any] = {key: p[key] for key in ("theta", "layout", "scaling", "scale", "zero_point") if key in p}
    args.update({key: p[key] for key in _ROPE_SCALING if key in p})
    for key in ("short_factor", "long_factor"):
        if key in p:
            args[key] = _factors(key, str(p[key]))
    if "attention_scaling_folded" in p:
        args["attention_scaling"] = p["attention_scaling_folded"]
    return api.rope(p["seq_len"], p["head_dim"], dtype=p.get("dtype", "float32"), lazy=True, **args)


def _factors(key: str, text: str) -> list[float]:
    try:
        return [float(part) for part in text.split(",")]
    except ValueError:
        raise SpecError(f"{key} must be comma-separated numbers (1.0,1.5,...), got {text!r}", param=key) from None


def _alibi(p: dict[str, Any]) -> Table:
    args = {key: p[key] for key in ("scale", "zero_point") if key in p}
    return api.alibi(p["heads"], p.get("seq_len"), dtype=p.get("dtype", "float32"), **args)


def _sincos2d(p: dict[str, Any]) -> Table:
    args = {key: p[key] for key in ("cls_token", "base", "scale", "zero_point") if key in p}
    return api.sincos2d(
        p["grid_height"],
        p["grid_width"],
        p["d_model"],
        dtype=p.get("dtype", "float32"),
        **args,
    )


#: The API call of each kind, from parameters already converted to their types.
_MAKERS: dict[str, Callable[[dict[str, Any]], Table]] = {
    "sinusoidal": _sinusoidal,
    "rope": _rope,
    "alibi": _alibi,
    "sincos2d": _sincos2d,
}


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
        for lo, want in _blocks_of(expected):
            have = np.asarray(stored[lo : lo + len(want)]) if stored.ndim else np.asarray(stored)
            converted, bad = conform(have, want)
            differ = bad | (_bits(converted) != _bits(want))
            compared += want.size
            count = int(np.count_nonzero(differ))
            if not count:
                continue
            mismatched += count
            for flat in np.flatnonzero(differ)[: max(0, max_report - len(found))].tolist():
                where = np.unravel_index(flat, want.shape) if want.ndim else ()
                index = ((lo + int(where[0]),) + tuple(int(i) for i in where[1:])) if want.ndim else ()
                found.append(
                    Mismatch(
                        key,
                        index,
                        have.reshape(-1)[flat].item(),
                        want.reshape(-1)[flat].item(),
                        float(decode(have.reshape(-1)[flat : flat + 1], table.params)[0]),
                        float(decode(want.reshape(-1)[flat : flat + 1], reference.params)[0]),
                    )
                )
    return VerifyResult(compared, mismatched, tuple(found), tuple(problems), tuple(notes))


def _pairs(table: Table, reference: Table) -> tuple[list[tuple[str, Array, Array]], list[str]]:
    """``(key, stored, expected)`` of the arrays to compare, and the arrays that only one side has."""
    if len(table.arrays) == 1 and len(reference.arrays) == 1:
        (key, expected), stored = next(iter(reference.arrays.items())), next(iter(table.arrays.values()))
        return [(key, stored, expected)], []
    pairs = [(key, table.arrays[key], array) for key, array in reference.arrays.items() if key in table.arrays]
    problems = [f"the table has no array {key!r}" for key in reference.arrays if key not in table.arrays]
    problems += [
        f"the table has an array {key!r} that the reference lacks"
        for key in table.arrays
        if key not in reference.arrays
    ]
    return pairs, problems


def _blocks_of(array: Array) -> Iterable[tuple[int, np.ndarray]]:
    if array.ndim == 0:
        return [(0, np.asarray(array))]
    return row_blocks(array)


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
    from .formats._spell import decimal

    spell = decimal(name)
    for flat in np.flatnonzero(undecided).tolist():
        expected = want.reshape(-1)[flat : flat + 1].reshape(1, 1)
        text = spell(expected, [b""], b"").decode("ascii")
        if float(text) == float(have.reshape(-1)[flat]):
            converted.reshape(-1)[flat] = want.reshape(-1)[flat]
    return converted
