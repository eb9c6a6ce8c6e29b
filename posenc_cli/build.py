"""``posenc build``: every table of a manifest, written as the single commands write them; and a depfile.

The manifest (``posenc.toml``)
------------------------------
A TOML 1.0 file with two top-level keys::

    [defaults]                  # optional: applied to every entry whose command takes the key
    dtype = "float32"
    lang = "c++"

    [defaults.rope]             # optional: applied to the rope entries only
    seq_len = 8192

    [[table]]                   # one entry per output, built in this order
    command = "generate"        # generate, rope, alibi or sincos2d
    output = "tables/pe.h"      # relative to the manifest's directory (or output_dir); the suffix picks the format
    seq_len = 2048
    d_model = 512
    preset = "fairseq"

    [[table]]
    command = "rope"
    output = "tables/rope.npz"
    seq_len = 8192
    head_dim = 128
    theta = 500000
    scaling = "llama3"
    factor = 8.0
    original_max_positions = 8192

Every other key of an entry is an option of ``posenc <command>``, spelled as the Python API spells it: the long
option with underscores (``seq_len``, ``float_literal``, ``original_max_positions``; :data:`KEYS` lists them per
command). Integers are TOML integers, numbers are integers or floats, flags are booleans. Where the CLI has a
negative flag the key is the positive boolean: ``attention_scaling = false`` (``--no-attention-scaling``),
``header = false`` (``--no-header``), ``truncate = false`` (``--no-truncate``); ``half_type`` is ``--c-half-type``.
Lists are arrays: ``short_factor = [1.0, 1.5]``; ``grid`` (sincos2d) is ``14``, ``"16x24"`` or ``[16, 24]``;
``padding_idx`` is a row or ``"none"``. ``command`` and ``output`` are required in every entry and allowed only
there; ``seq_len`` and ``d_model`` (generate), ``seq_len`` and ``head_dim`` (rope), ``heads`` (alibi), ``grid`` and
``d_model`` (sincos2d) are required, in the entry or in its defaults. A default applies only to the entries whose
command takes it (``d_model`` reaches generate and sincos2d, not rope); ``[defaults.<command>]`` holds defaults for
one command's entries. An entry's key overrides ``[defaults.<command>]``, which overrides ``[defaults]``; TOML has
no null, so a default cannot be unset: keep out of ``[defaults]`` what some entries must leave out.

Everything is checked before the first file is written, and a bad manifest writes nothing, not even its valid
entries: TOML syntax, unknown keys (with the nearest known one), types, choices, missing keys, values out of range,
the output directories, and outputs that two entries would write (a ``.c`` entry's ``.h`` included). Errors are
:class:`~posenc_cli.errors.SpecError` (``param="manifest"``) naming the entry by its 1-based position and output,
and the key.

Each file is the one ``posenc <command> ... -o <output>`` writes, byte for byte: the table is built through
:mod:`posenc_cli.api` and written with :func:`posenc_cli.api.save` (atomic; a file that already holds the new bytes
is left untouched, mtime included). C outputs record that equivalent command in their provenance comment.

Depfiles
--------
:func:`depfile_text` gives one make rule, ``out1 out2 ...: manifest``, for CMake's
``add_custom_command(OUTPUT ... DEPFILE ...)``, Ninja's ``depfile =`` and make's ``-include``. The targets are every
file the build wrote, in manifest order (an entry's file, then the companion it writes beside it): Ninja wants the
first to be its edge's first output and every one to be a declared output. Paths are relative to the current
directory (where make, Ninja and CMake's custom commands run) when they lie under it, else absolute.

Escaping is GCC's ``-MD`` dialect, which GNU make and Ninja (1.10+) both read: a space is ``\\ ``, ``#`` is
``\\#``, ``$`` is ``$$``. Every other character must read the same in both without escaping: ASCII letters and
digits, ``. _ - + , / @ ! { } ~`` (``~`` not first) and non-ASCII. Any other is refused (``SpecError``,
``param="depfile"``) rather than written in a form one of them misreads: make reads ``: ; = %`` as syntax,
``* ? [ ]`` as wildcards, ``a(b)`` as an archive member and a leading ``~`` as a home directory; Ninja 1.11 ends a
file name at ``* ? & | ; ' " < > ^`` and the backquote, and keeps the backslash of ``\\%`` (make's escape). Backslashes
and control characters are refused too. ``posenc build --check`` writes no depfile (it writes nothing).

Build rules: Ninja and CMake's Ninja generators restat the outputs (``restat = 1``), so an output posenc left
untouched rebuilds nothing downstream; make compares time stamps only, so a make recipe should ``touch`` its
outputs after ``posenc build`` (as ``cmake/posenc.cmake`` does), or posenc reruns at every build once the manifest
is newer than an unchanged output.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import json
import os
import shlex
import stat
import string
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union

from . import _atomic, api
from .dtypes import DTYPES
from .encodings import presets
from .encodings import rope as rope_encoding
from .errors import PosencError, SpecError
from .formats import C_OPTIONS, FORMATS, check_options
from .formats.limits import MAX_NESTING
from .formats.options import FLOAT_LITERALS, HALF_TYPES, LANGS, WriteOptions
from .table import Param, Table

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

PathLike = Union[str, "os.PathLike[str]"]

__all__ = ["KEYS", "BuildReport", "Entry", "FileReport", "Manifest", "TableReport", "build", "depfile_text"]
__all__ += ["check_depfile", "load_manifest", "write_depfile"]

#: The file ``posenc build`` reads when no manifest is named.
DEFAULT_MANIFEST = "posenc.toml"


class _Wrong(Exception):
    """A manifest value of the wrong type; the argument says what was expected."""


def _show(value: object) -> str:
    """A value as TOML spells it, with its type: what an error message says was found."""
    if isinstance(value, bool):
        return f"{str(value).lower()} (a boolean)"
    if isinstance(value, str):
        return f"{json.dumps(value)} (a string)"
    if isinstance(value, (int, float)):
        return f"{value!r} (an {'integer' if isinstance(value, int) else 'float'})"
    if isinstance(value, list):
        return f"{value!r} (an array)"
    return f"{value} (a {'table' if isinstance(value, dict) else type(value).__name__})"


def _integer(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Wrong("an integer")
    return value


def _number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _Wrong("a number")
    return float(value)  # as click's FLOAT makes it: an integer is shown 500000.0 in the recorded command


def _boolean(value: object) -> bool:
    if not isinstance(value, bool):
        raise _Wrong("true or false")
    return value


def _string(value: object) -> str:
    if not isinstance(value, str):
        raise _Wrong("a string")
    return value


def _choice(*choices: str) -> Callable[[object], str]:
    def check(value: object) -> str:
        if not isinstance(value, str) or value not in choices:
            raise _Wrong(f"one of {', '.join(map(json.dumps, choices))}")
        return value

    return check


def _numbers(value: object) -> tuple[float, ...]:
    if not isinstance(value, list) or not value:
        raise _Wrong("a non-empty array of numbers, e.g. [1.0, 1.5]")
    try:
        return tuple(_number(v) for v in value)
    except _Wrong:
        raise _Wrong("a non-empty array of numbers, e.g. [1.0, 1.5]") from None


def _grid(value: object) -> tuple[int, int]:
    expected = 'H, "HxW" or [H, W] (positive integers, e.g. 14, "16x24" or [16, 24])'
    if isinstance(value, int) and not isinstance(value, bool):
        return (value, value)
    if isinstance(value, str):
        sides = value.lower().split("x")
        if len(sides) in (1, 2) and all(s.strip().isascii() and s.strip().isdigit() for s in sides):
            return (int(sides[0]), int(sides[-1]))
    if isinstance(value, list) and len(value) == 2 and all(type(v) is int for v in value):
        return (value[0], value[1])
    raise _Wrong(expected)


def _row(value: object) -> int | str:
    if value == "none" or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    raise _Wrong('a row index (an integer) or "none"')


_ELEMENT = {"dtype": _choice(*DTYPES), "scale": _number, "zero_point": _integer}
_OUTPUT = {
    "format": _choice(*FORMATS), "name": _string, "part": _string, "header": _boolean, "lang": _choice(*LANGS),
    "namespace": _string, "align": _integer, "progmem": _boolean, "float_literal": _choice(*FLOAT_LITERALS),
    "half_type": _choice(*HALF_TYPES),
}  # fmt: skip
_ROPE_SCALING = {
    "factor": _number, "original_max_positions": _integer, "max_positions": _integer, "low_freq_factor": _number,
    "high_freq_factor": _number, "beta_fast": _number, "beta_slow": _number, "truncate": _boolean,
    "mscale": _number, "mscale_all_dim": _number, "attention_factor": _number, "short_factor": _numbers,
    "long_factor": _numbers,
}  # fmt: skip

#: Each command's keys and their checks, in the order ``posenc <command>`` declares its options (the order of the
#: recorded command line).
KEYS: dict[str, dict[str, Callable[[object], object]]] = {
    "generate": {
        "seq_len": _integer, "d_model": _integer, "base": _number, "preset": _choice(*presets.PRESETS),
        "layout": _choice(*presets.LAYOUTS), "freq_shift": _number, "min_timescale": _number,
        "odd": _choice(*presets.ODD), "start": _number, "step": _number, "padding_idx": _row, "amplitude": _number,
        **_ELEMENT, **_OUTPUT,
    },
    "rope": {
        "seq_len": _integer, "head_dim": _integer, "theta": _number, "layout": _choice(*rope_encoding.LAYOUTS),
        "scaling": _choice(*rope_encoding.SCALINGS), **_ROPE_SCALING, "attention_scaling": _boolean,
        **_ELEMENT, **_OUTPUT,
    },
    "alibi": {"heads": _integer, "seq_len": _integer, **_ELEMENT, **_OUTPUT},
    "sincos2d": {"grid": _grid, "d_model": _integer, "cls_token": _boolean, "base": _number, **_ELEMENT, **_OUTPUT},
}  # fmt: skip
_REQUIRED = {"generate": ("seq_len", "d_model"), "rope": ("seq_len", "head_dim"), "alibi": ("heads",)}
_REQUIRED["sincos2d"] = ("grid", "d_model")
#: The CLI's defaults: a key left out takes them (every other key: not given).
_DEFAULTS: dict[str, object] = {
    "base": 10000.0, "theta": 10000.0, "scaling": "none", "attention_scaling": True, "cls_token": False,
    "dtype": "float32", "header": True, "lang": "c", "progmem": False, "float_literal": "decimal",
}  # fmt: skip
_ROPE_DEFAULTS = {"layout": "half"}


def _default(command: str, key: str) -> object:
    return _ROPE_DEFAULTS[key] if command == "rope" and key in _ROPE_DEFAULTS else _DEFAULTS.get(key)


#: Recorded in the command line even when they equal their default (as the CLI records them).
_ALWAYS_SHOWN = frozenset({"seq_len", "d_model", "heads", "name", "dtype", "base"})
_FLAGS = {"half_type": "--c-half-type"}
_C_OPTIONS = tuple(sorted(C_OPTIONS))
_TOP_LEVEL = ("defaults", "table")


@dataclass(frozen=True)
class Entry:
    """One ``[[table]]`` of a checked manifest.

    ``options`` holds every key of the command (its default, or ``None``, where the manifest leaves it out);
    ``output`` is the output as the manifest spells it, ``path`` where it is written, ``plan`` what
    :func:`posenc_cli.api.plan` made of it (format, table name, every file).
    """

    index: int
    command: str
    output: str
    path: Path
    options: Mapping[str, Any]
    plan: api.Output

    def table(self) -> Table:
        """The entry's table, built through the API (lazily where the API can: rows are made as they are written)."""
        o = self.options
        element = {"dtype": o["dtype"], "scale": o["scale"], "zero_point": o["zero_point"]}
        if self.command == "generate":
            shape = {k: o[k] for k in ("preset", "layout", "freq_shift", "min_timescale", "odd", "start", "step")}
            padding = o["padding_idx"]
            return api.generate(
                o["seq_len"], o["d_model"], base=o["base"], lazy=True, amplitude=o["amplitude"],
                padding_idx=None if padding == "none" else padding, no_padding=padding == "none", **shape, **element,
            )  # fmt: skip
        if self.command == "rope":
            given = {k: o[k] for k in _ROPE_SCALING if o[k] is not None}
            return api.rope(
                o["seq_len"], o["head_dim"], theta=o["theta"], layout=o["layout"], scaling=o["scaling"],
                attention_scaling=o["attention_scaling"], lazy=True, **given, **element,
            )  # fmt: skip
        if self.command == "alibi":
            return api.alibi(o["heads"], o["seq_len"], **element)
        height, width = o["grid"]
        return api.sincos2d(height, width, o["d_model"], cls_token=o["cls_token"], base=o["base"], **element)

    @property
    def command_line(self) -> str:
        """The ``posenc <command>`` line that writes the same file, as the CLI records it in C comments: every
        option that differs from its default, in declaration order, the table name resolved, the output's file name.
        """
        words = ["posenc", self.command]
        for key in KEYS[self.command]:
            value = self.plan.name if key == "name" else self.options[key]
            flag = _FLAGS.get(key, "--" + key.replace("_", "-"))
            if key in ("attention_scaling", "header", "truncate") and value is False:
                words.append(f"--no-{flag[2:]}")
            elif value is None or value is False:
                continue
            elif key not in _ALWAYS_SHOWN and value == _default(self.command, key):
                continue
            elif value is True:
                words.append(flag)
            elif key == "grid":
                words += [flag, "x".join(map(str, value))]
            elif isinstance(value, tuple):
                words += [flag, ",".join(map(repr, value))]
            else:
                words += [flag, repr(value) if isinstance(value, float) else str(value)]
        return shlex.join([*words, "-o", self.path.name])

    def where(self, manifest: str) -> str:
        return f"{manifest}, table #{self.index} (output {self.output!r})"


@dataclass(frozen=True)
class Manifest:
    """A manifest read and checked in full: nothing it asks for can fail before the files are written."""

    path: Path
    entries: tuple[Entry, ...]
    #: The folder every output (and the depfile) must resolve inside; ``None`` with ``allow_outside=True``.
    root: Path | None = None

    @property
    def paths(self) -> tuple[Path, ...]:
        """Every file the entries may write (a ``.npy``'s ``.json`` sidecar included, written only when needed)."""
        return tuple(p for entry in self.entries for p in entry.plan.paths)


@dataclass(frozen=True)
class FileReport:
    """One file: ``written``, ``unchanged`` (already held these bytes: left untouched), or with ``check``:
    ``missing`` / ``outdated`` (would be created / rewritten; ``bytes`` and ``sha256`` are then ``None``)."""

    path: Path
    status: str
    bytes: int | None
    sha256: str | None


@dataclass(frozen=True)
class TableReport:
    """What one entry made: its table's kind, parameters and arrays (shape, element type), and its files."""

    entry: Entry
    kind: str
    params: Mapping[str, Param]
    arrays: Mapping[str, tuple[tuple[int, ...], str]]
    files: tuple[FileReport, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "index": self.entry.index,
            "command": self.entry.command,
            "command_line": self.entry.command_line,
            "output": self.entry.output,
            "format": self.entry.plan.format.name,
            "name": self.entry.plan.name,
            "kind": self.kind,
            "params": dict(self.params),
            "arrays": {key: {"shape": list(shape), "dtype": dtype} for key, (shape, dtype) in self.arrays.items()},
            "outputs": [
                {"path": str(f.path), "status": f.status, "bytes": f.bytes, "sha256": f.sha256} for f in self.files
            ],
        }


@dataclass(frozen=True)
class BuildReport:
    """The result of :func:`build`: one :class:`TableReport` per entry built, in manifest order."""

    manifest: Path
    check: bool
    tables: tuple[TableReport, ...]

    @property
    def files(self) -> tuple[FileReport, ...]:
        return tuple(f for table in self.tables for f in table.files)

    @property
    def paths(self) -> tuple[Path, ...]:
        """Every file written (or, with ``check``, that would be), in manifest order: a depfile's targets."""
        return tuple(f.path for f in self.files)

    @property
    def changed(self) -> tuple[FileReport, ...]:
        """The files written, or with ``check`` the files that would be (``black --check``: exit 1 if any)."""
        return tuple(f for f in self.files if f.status != "unchanged")

    def as_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data (``posenc build --json``)."""
        return {
            "manifest": str(self.manifest),
            "check": self.check,
            "up_to_date": not self.changed,
            "tables": [table.as_dict() for table in self.tables],
        }


def load_manifest(path: PathLike, *, output_dir: PathLike | None = None, allow_outside: bool = False) -> Manifest:
    """Read and check a manifest in full (see the module's docstring), writing nothing.

    Outputs are relative to ``output_dir`` if given (an out-of-source build tree), else to the manifest's directory,
    and must resolve (symbolic links followed) inside that folder unless ``allow_outside``: a manifest is not
    trusted, and ``output = "../../home/me/.profile"``, an absolute path or a link committed beside it would
    otherwise replace files anywhere.

    Raises
    ------
    SpecError
        A missing or invalid manifest, naming the entry and the key (``param="manifest"``).
    OutputError
        An output that cannot be written (missing directory, no permission), naming the entry.

    Examples
    --------
    >>> load_manifest("posenc.toml").entries[0].command_line  # doctest: +SKIP
    'posenc generate --seq-len 2048 --d-model 512 --base 10000.0 --dtype float32 --name pe -o pe.h'
    """
    path = Path(os.fspath(path))
    label = str(path)
    doc = _read_toml(path)
    unknown = [key for key in doc if key not in _TOP_LEVEL]
    if unknown:
        raise _spec(f"{label}: unknown top-level key {unknown[0]!r}{_hint(unknown[0], _TOP_LEVEL)}; a manifest holds "
                    "an optional [defaults] table and [[table]] entries")  # fmt: skip
    defaults = doc.get("defaults", {})
    if not isinstance(defaults, dict):
        raise _spec(f"{label}: defaults must be a table ([defaults]), got {_show(defaults)}")
    every_key = {key for keys in KEYS.values() for key in keys}
    layers: dict[str, dict[str, Any]] = {"": {k: v for k, v in defaults.items() if k not in KEYS}}
    for command in KEYS:
        layer = defaults.get(command, {})
        if not isinstance(layer, dict):
            raise _spec(f"{label}, [defaults]: {command} must be a table ([defaults.{command}]), got {_show(layer)}")
        layers[command] = layer
    for command, layer in layers.items():
        where, known = (f"[defaults.{command}]", KEYS[command]) if command else ("[defaults]", every_key)
        for key in layer:
            if key in ("command", "output"):
                raise _spec(f"{label}, {where}: {key} belongs in each [[table]] entry, not in defaults")
            if key not in known:
                raise _spec(f"{label}, {where}: unknown key {key!r}{_hint(key, known)}; keys are the options of "
                            f"{command or 'generate, rope, alibi and sincos2d'}, with underscores")  # fmt: skip
    tables = doc.get("table")
    if not isinstance(tables, list) or not tables or not all(isinstance(t, dict) for t in tables):
        found = "none" if tables is None else _show(tables)
        raise _spec(f"{label}: expected [[table]] entries (an array of tables, each with command and output), "
                    f"got {found}")  # fmt: skip
    base = Path(os.fspath(output_dir)) if output_dir is not None else path.parent
    entries = [_entry(label, i, raw, layers, base) for i, raw in enumerate(tables, 1)]
    _check_collisions(label, path, entries)
    root = None if allow_outside else Path(os.path.realpath(base))
    if root is not None:
        for entry in entries:
            for file in entry.plan.paths:
                _check_inside(root, file, f"{entry.where(label)}: output {str(file)!r}")
    return Manifest(path, tuple(entries), root)


def check_depfile(manifest: Manifest, depfile: PathLike) -> None:
    """``SpecError`` (``param="depfile"``) when ``depfile`` is the manifest or one of its outputs, or resolves
    outside the manifest's root (see :func:`load_manifest`; a link placed where the depfile goes cannot send it
    elsewhere)."""
    real = os.path.realpath(depfile)
    if real == os.path.realpath(manifest.path):
        raise SpecError(f"the depfile {str(depfile)!r} is the manifest itself; name another file", param="depfile")
    for file in manifest.paths:
        if real == os.path.realpath(file):
            raise SpecError(f"the depfile {str(depfile)!r} is an output of the manifest; name another file",
                            param="depfile")  # fmt: skip
    if manifest.root is not None:
        _check_inside(manifest.root, Path(os.fspath(depfile)), f"the depfile {str(depfile)!r}", param="depfile")


def _check_inside(root: Path, file: Path, what: str, *, param: str = "manifest") -> None:
    real = os.path.realpath(file)
    if os.path.commonpath([real, root]) != str(root):
        raise SpecError(
            f"{what} resolves to {real!r}, outside {str(root)!r}: a manifest writes only inside its folder "
            "(or --output-dir); pass --allow-outside if that is meant",
            param=param,
        )


def build(
    manifest: PathLike | Manifest,
    *,
    check: bool = False,
    only: Sequence[str] | None = None,
    output_dir: PathLike | None = None,
    allow_outside: bool = False,
) -> BuildReport:
    """Write every table of ``manifest`` (a path, or a :class:`Manifest` from :func:`load_manifest`).

    The whole manifest is checked first (:func:`load_manifest`), so a bad one writes nothing. Each output is then
    written atomically; a file that already holds its new bytes is left untouched and reported ``unchanged``.
    With ``check=True`` nothing is written: the report says which files are ``missing`` or ``outdated``
    (:attr:`BuildReport.changed`; the ``black --check`` contract: the caller exits 1 if any). ``only`` builds just
    these outputs, spelled as in the manifest (the others are still checked).

    Examples
    --------
    >>> report = build("posenc.toml")                      # doctest: +SKIP
    >>> [(str(f.path), f.status) for f in report.files]    # doctest: +SKIP
    [('pe.h', 'written'), ('rope.npz', 'unchanged')]
    """
    if not isinstance(manifest, Manifest):
        manifest = load_manifest(manifest, output_dir=output_dir, allow_outside=allow_outside)
    elif output_dir is not None:
        raise SpecError("output_dir goes to load_manifest when build is given a Manifest", param="output_dir")
    entries = manifest.entries
    if only is not None:
        wanted = {os.path.normpath(o): o for o in only}
        known = {os.path.normpath(e.output) for e in entries}
        missing = [o for key, o in wanted.items() if key not in known]
        if missing:
            outputs = ", ".join(repr(e.output) for e in entries)
            raise SpecError(f"{manifest.path} has no output {missing[0]!r}; its outputs are {outputs}", param="only")
        entries = tuple(e for e in entries if os.path.normpath(e.output) in wanted)
    reports = []
    for entry in entries:
        with _about(entry.where(str(manifest.path))):
            reports.append(_build_one(entry, check))
    return BuildReport(manifest.path, check, tuple(reports))


def depfile_text(
    report: BuildReport | Manifest, manifest: PathLike | None = None, *, relative_to: PathLike | None = None
) -> str:
    """A make-style depfile: every file of ``report`` depends on ``manifest`` (by default the report's).

    Paths are relative to ``relative_to`` (by default the current directory) when they lie under it, else absolute,
    and escaped as the module's docstring says; a path make and Ninja cannot both read raises ``SpecError``.

    Examples
    --------
    >>> depfile_text(build("posenc.toml"))  # doctest: +SKIP
    'tables/pe.h tables/my\\\\ rope.npz: posenc.toml\\n'
    """
    base = os.path.abspath(relative_to if relative_to is not None else os.curdir)
    source = report.manifest if isinstance(report, BuildReport) else report.path
    targets = " ".join(_make_word(_spelled(p, base)) for p in report.paths)
    return f"{targets}: {_make_word(_spelled(manifest if manifest is not None else source, base))}\n"


def write_depfile(path: PathLike, report: BuildReport | Manifest, manifest: PathLike | None = None) -> Path:
    """Write :func:`depfile_text` (paths relative to the current directory) to ``path``, atomically; an unchanged
    depfile is left untouched."""
    text = depfile_text(report, manifest)
    target = Path(os.fspath(path))
    with _atomic.atomic_outputs([target]) as (fp,):
        fp.write(os.fsencode(text))
    return target


# --------------------------------------------------------------------------------------------------- internals
def _spec(message: str) -> SpecError:
    return SpecError(message, param="manifest")


def _hint(key: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(key.replace("-", "_"), sorted(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


#: The largest manifest posenc reads: a manifest is a few kilobytes; a larger one is not one.
MAX_MANIFEST = 1 << 20
#: The most parts of one dotted key (``a.b.c`` has 3): tomllib takes quadratic time in them.
MAX_KEY_PARTS = 16


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as fp:
            if not stat.S_ISREG(os.fstat(fp.fileno()).st_mode):
                raise _spec(f"the manifest {str(path)!r} is not a regular file: name a TOML file")
            data = fp.read(MAX_MANIFEST + 1)
        if len(data) > MAX_MANIFEST:
            raise _spec(f"{path}: the manifest is larger than the {MAX_MANIFEST >> 10} KiB posenc reads")
        problem = _toml_bomb(data)
        if problem:
            raise _spec(f"{path}: invalid manifest: {problem}")
        return tomllib.loads(data.decode("utf-8"))
    except FileNotFoundError:
        raise _spec(
            f"no manifest {str(path)!r}: the file does not exist (name one, or write {DEFAULT_MANIFEST})"
        ) from None
    except IsADirectoryError:
        raise _spec(f"the manifest {str(path)!r} is a directory: name a TOML file") from None
    except OSError as exc:
        raise PosencError(f"cannot read the manifest {str(path)!r}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise _spec(f"{path}: invalid TOML: the file is not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise _spec(f"{path}: invalid TOML: {exc}") from None


def _toml_bomb(data: bytes) -> str | None:
    """What in ``data`` would make the TOML parser recurse or slow down past reason, before it runs: brackets
    nested deeper than :data:`~posenc_cli.formats.limits.MAX_NESTING`, or a dotted key of more than
    :data:`MAX_KEY_PARTS` parts. A linear scan that skips strings and comments; the parser checks the rest."""
    depth: list[str] = []  # per open bracket: "h" a table header, "a" an array, "t" an inline table
    quote = 0
    escaped = comment = False
    in_key, parts = True, 1
    for byte in data:
        if comment:
            comment = byte != 0x0A
            if not comment and not depth:
                in_key, parts = True, 1
            continue
        if quote:
            if escaped:
                escaped = False
            elif byte == 0x5C and quote == 0x22:
                escaped = True
            elif byte == quote:
                quote = 0
            continue
        if byte in (0x22, 0x27):
            quote = byte
        elif byte == 0x23:
            comment = True
        elif byte == 0x0A and not depth:
            in_key, parts = True, 1
        elif byte in (0x5B, 0x7B):
            kind = "t" if byte == 0x7B else "h" if in_key and (not depth or depth[-1] == "h") else "a"
            depth.append(kind)
            if len(depth) > MAX_NESTING:
                return f"arrays or tables nest deeper than the {MAX_NESTING} levels posenc reads"
            in_key = kind != "a"
            if kind == "t":
                parts = 1
        elif byte in (0x5D, 0x7D):
            if depth:
                depth.pop()
            in_key = False
        elif byte == 0x3D:
            in_key = False
        elif byte == 0x2C and depth:
            in_key, parts = depth[-1] == "t", 1
        elif byte == 0x2E and in_key:
            parts += 1
            if parts > MAX_KEY_PARTS:
                return f"a dotted key has more than the {MAX_KEY_PARTS} parts posenc reads"
    return None


def _entry(label: str, index: int, raw: dict[str, Any], defaults: Mapping[str, dict[str, Any]], base: Path) -> Entry:
    output = raw.get("output")
    where = f"{label}, table #{index}" + (f" (output {output!r})" if isinstance(output, str) else "")
    command = raw.get("command")
    if command is None:
        raise _spec(f"{where}: missing key 'command'; it is one of {', '.join(KEYS)}")
    if command not in KEYS:
        raise _spec(f"{where}: command must be one of {', '.join(map(json.dumps, KEYS))}, got {_show(command)}")
    if output is None:
        raise _spec(f"{where}: missing key 'output', the file to write (relative to the manifest's directory)")
    if not isinstance(output, str) or not output.strip() or output == "-":
        raise _spec(f"{where}: output must be a file name (a non-empty string, not '-'), got {_show(output)}")
    keys = KEYS[command]
    for key in raw:
        if key not in keys and key not in ("command", "output"):
            raise _spec(f"{where}: unknown key {key!r}{_hint(key, keys)}; {command} takes {', '.join(keys)}")
    given: dict[str, Any] = {}
    origins: dict[str, str] = {}  # where a key not in the entry came from, for error messages
    for layer, origin in ((defaults[""], " (from [defaults])"), (defaults[command], f" (from [defaults.{command}])")):
        given.update((key, value) for key, value in layer.items() if key in keys)
        origins.update((key, origin) for key in layer if key in keys)
    given.update((key, value) for key, value in raw.items() if key not in ("command", "output"))
    for key in raw:
        origins.pop(key, None)
    options: dict[str, Any] = {}
    for key, check in keys.items():
        if key not in given:
            options[key] = _default(command, key)
            continue
        try:
            options[key] = check(given[key])
        except _Wrong as exc:
            origin = origins.get(key, "")
            raise _spec(f"{where}: {key}{origin} must be {exc.args[0]}, got {_show(given[key])}") from None
    missing = [key for key in _REQUIRED[command] if key not in given]
    if missing:
        raise _spec(f"{where}: missing key {missing[0]!r}; {command} needs {' and '.join(_REQUIRED[command])}")
    path = base / output
    where = f"{label}, table #{index} (output {output!r})"
    with _about(where, origins):
        WriteOptions(**{key: options[key] for key in _C_OPTIONS})
        out = api.plan(path, format=options["format"], name=options["name"])
        check_options(out.format, {"header": options["header"], **{key: options[key] for key in _C_OPTIONS}})
        entry = Entry(index, command, output, path, options, out)
        table = entry.table()  # every parameter checked (lazy tables: nothing computed yet)
        parts, part = list(table.arrays), options["part"]
        if part is not None:
            if part not in parts:
                raise SpecError(f"this {table.kind} table has no part {part!r}; its parts are {', '.join(parts)}",
                                param="part")  # fmt: skip
            parts = [part]
        fmt = entry.plan.format
        if fmt.single and len(parts) > 1:
            raise SpecError(
                f"this {table.kind} table holds {len(parts)} arrays ({', '.join(parts)}) and {fmt.name} holds one: "
                "pick one with part, or write npz, h5 or C, which hold them all",
                param="part",
            )
    return entry


@contextlib.contextmanager
def _about(where: str, origins: Mapping[str, str] | None = None) -> Iterator[None]:
    """Prefix the errors raised inside with the entry they are about (and the key, where the message omits it)."""
    try:
        yield
    except SpecError as exc:
        message, key = str(exc), {"no_padding": "padding_idx"}.get(exc.param or "", exc.param)
        if key and key != "manifest":
            message = message if key in message else f"{key}: {message}"
            message += (origins or {}).get(key, "")
        raise _spec(f"{where}: {message}") from None
    except PosencError as exc:
        raise type(exc)(f"{where}: {exc}") from None


def _check_collisions(label: str, manifest: Path, entries: Sequence[Entry]) -> None:
    """Each file comes from one entry (companions included), and none is the manifest."""
    owners: dict[str, Entry] = {}
    itself = os.path.realpath(manifest)
    for entry in entries:
        for path in entry.plan.paths:
            real = os.path.realpath(path)
            if real == itself:
                raise _spec(f"{entry.where(label)}: writing {str(path)!r} would overwrite the manifest itself")
            other = owners.setdefault(real, entry)
            if other is not entry:
                raise _spec(f"{entry.where(label)}: {str(path)!r} is also written by table #{other.index} (output "
                            f"{other.output!r}); each file must come from one entry")  # fmt: skip


def _build_one(entry: Entry, check: bool) -> TableReport:
    o = entry.options
    table = entry.table()
    if o["part"] is not None:
        table = table.part(o["part"])
    options: dict[str, Any] = {key: o[key] for key in _C_OPTIONS}
    options.update(format=o["format"], name=o["name"] and entry.plan.name, header=o["header"])
    if check:
        changed = set(api.save(table, entry.path, command=entry.command_line, check=True, **options))
        files = tuple(_checked_file(p, p in changed) for p in _files_of(entry.plan, table))
    else:
        before = {p: _identity(p) for p in entry.plan.paths}
        written = api.save(table, entry.path, command=entry.command_line, **options)
        files = tuple(_written_file(p, before.get(p)) for p in written)
    arrays = {key: (tuple(a.shape), str(table.params.get("dtype", a.dtype))) for key, a in table.arrays.items()}
    return TableReport(entry, table.kind, table.params, arrays, files)


def _files_of(plan: api.Output, table: Table) -> tuple[Path, ...]:
    """The files :func:`api.save` writes for ``table``: a companion only when its format wants it for this table."""
    companion = plan.format.companion
    if companion is not None and companion.when is not None and not companion.when(table):
        return plan.paths[:1]
    return plan.paths


def _identity(path: Path) -> tuple[int, ...] | None:
    """What changes when a file is replaced (a new inode) or written to (times, size); ``None``: no file."""
    try:
        st = os.stat(os.path.realpath(path))  # the file api.save writes: symbolic links and '..' resolved as it does
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _written_file(path: Path, before: tuple[int, ...] | None) -> FileReport:
    status = "unchanged" if before is not None and before == _identity(path) else "written"
    return FileReport(path, status, *_size_and_sha256(path))


def _checked_file(path: Path, changed: bool) -> FileReport:
    if changed:
        return FileReport(path, "outdated" if _identity(path) else "missing", None, None)
    return FileReport(path, "unchanged", *_size_and_sha256(path))


def _size_and_sha256(path: Path) -> tuple[int, str]:
    digest, size = hashlib.sha256(), 0
    with open(os.path.realpath(path), "rb") as fp:
        while block := fp.read(1 << 20):
            digest.update(block)
            size += len(block)
    return size, digest.hexdigest()


def _spelled(path: PathLike, base: str) -> str:
    """``path`` relative to ``base`` when it lies under it, else absolute: how make, Ninja and CMake name it."""
    absolute = os.path.abspath(path)
    relative = os.path.relpath(absolute, base)
    return absolute if relative == os.pardir or relative.startswith(os.pardir + os.sep) else relative


#: Characters make and Ninja both read as part of a file name, unescaped.
_PLAIN = frozenset(string.ascii_letters + string.digits + "._-+,/@!{}~")
#: GCC's -MD escapes, which GNU make and Ninja both undo.
_ESCAPES = {" ": "\\ ", "#": "\\#", "$": "$$"}


def _make_word(path: str) -> str:
    allowed = "letters, digits, non-ASCII, space and . _ - + , / @ ! { } ~ # $"
    for char in path:
        if char not in _PLAIN and char not in _ESCAPES and ord(char) < 128:
            raise SpecError(
                f"cannot name {path!r} in a depfile: make and Ninja do not read {char!r} in a file name alike "
                f"(allowed: {allowed}); rename the file",
                param="depfile",
            )
    if path.startswith("~"):
        raise SpecError(f"cannot name {path!r} in a depfile: make reads a leading '~' as a home directory; "
                        "rename the file", param="depfile")  # fmt: skip
    return "".join(_ESCAPES.get(char, char) for char in path)
