"""The manifest of ``posenc build``: read, checked in full against :data:`posenc_cli.kinds.KINDS`, nothing written.

The manifest (``posenc.toml``)
------------------------------
A TOML 1.0 file with two top-level keys::

    [defaults]                  # optional: applied to every entry whose command takes the key
    dtype = "float32"
    lang = "c++"

    [defaults.rope]             # optional: applied to the rope entries only
    seq_len = 8192

    [[table]]                   # one entry per output, built in this order
    command = "generate"        # a table command: generate, rope, mrope, axial, alibi, sincos2d, detr, relative, window
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

Every other key of an entry is an option of ``posenc <command>``: the long option with underscores, which is also
the Python API's keyword (``seq_len``, ``float_literal``, ``original_max_positions``, ``c_half_type``; :data:`KEYS`
lists them per command, from :data:`posenc_cli.kinds.KINDS`). Integers are TOML integers, numbers are integers or
floats, flags are booleans. A ``--x/--no-x`` pair is the boolean ``x``: ``attention_scaling = false``
(``--no-attention-scaling``), ``header = false`` (``--no-header``), ``truncate = false`` (``--no-truncate``).
``half_type``, this key's first spelling, is still read, with a note. An option the output's format does not take
(``progmem`` for an ``.npy``) is refused, as on the command line.
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
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import json
import os
import stat
import sys
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union

from .. import api
from ..errors import OutputError, PosencError, PosencWarning, SpecError
from ..formats import C_OPTIONS
from ..formats.limits import MAX_NESTING
from ..kinds import KINDS
from ..kinds.rope_config import config_file
from ..params import Param, Wrong, command_line, show
from ..system import atomic
from ..table import Table

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

PathLike = Union[str, "os.PathLike[str]"]

__all__ = ["DEFAULT_MANIFEST", "KEYS", "MAX_KEY_PARTS", "MAX_MANIFEST", "Entry", "Manifest", "check_inside"]
__all__ += ["about", "load_manifest", "prepare"]

#: The file ``posenc build`` reads when no manifest is named.
DEFAULT_MANIFEST = "posenc.toml"

#: Each command's keys, in the order ``posenc <command>`` declares its options (the order of the recorded command
#: line): the kind's parameters, the element type, the output options (:attr:`posenc_cli.kinds.Kind.keys`).
KEYS: dict[str, dict[str, Param]] = {name: {p.name: p for p in kind.keys} for name, kind in KINDS.items()}
#: Keys spelled otherwise before one name was given to each option: still read, with a note.
RENAMED = {"half_type": "c_half_type"}
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
    #: The files the entry reads (a ``bias`` checkpoint), by parameter, resolved from the manifest's folder.
    inputs: Mapping[str, Path] = dataclasses.field(default_factory=dict)

    def table(self) -> Table:
        """The entry's table, made by its kind (lazily where it can: rows are made as they are written)."""
        return KINDS[self.command].build({**self.options, **{key: str(p) for key, p in self.inputs.items()}})

    @property
    def command_line(self) -> str:
        """The ``posenc <command>`` line that writes the same file, as the CLI records it in C comments
        (:func:`posenc_cli.params.command_line`, the one both use): the table name resolved, the output's name."""
        given = [(p, self.plan.name if p.name == "name" else self.options[p.name]) for p in KINDS[self.command].keys]
        return command_line(self.command, [], given, self.path.name)

    def where(self, manifest: str) -> str:
        return f"{manifest}, table #{self.index} (output {self.output!r})"


@dataclass(frozen=True)
class Manifest:
    """A manifest read and checked in full: nothing it asks for can fail before the files are written."""

    path: Path
    entries: tuple[Entry, ...]
    #: The folder every output (and the depfile) must resolve inside; ``None`` with ``allow_outside=True``.
    root: Path | None = None
    #: The folder the outputs are relative to (``output_dir``, else the manifest's), links resolved: the only
    #: place :func:`prepare` creates folders in.
    base: Path | None = None

    @property
    def paths(self) -> tuple[Path, ...]:
        """Every file the entries may write (a ``.npy``'s ``.json`` sidecar included, written only when needed)."""
        return tuple(p for entry in self.entries for p in entry.plan.paths)

    @property
    def inputs(self) -> tuple[Path, ...]:
        """Every file the entries read besides the manifest (checkpoints), once each, in entry order."""
        return tuple(dict.fromkeys(p for entry in self.entries for p in entry.inputs.values()))


def load_manifest(
    path: PathLike,
    *,
    output_dir: PathLike | None = None,
    allow_outside: bool = False,
    make_dirs: bool = False,
    check: bool = False,
) -> Manifest:
    """Read and check a manifest in full (see the module's docstring), writing nothing but, with ``make_dirs``,
    the folders of its outputs.

    Outputs are relative to ``output_dir`` if given (an out-of-source build tree), else to the manifest's directory,
    and must resolve (symbolic links followed) inside that folder unless ``allow_outside``: a manifest is not
    trusted, and ``output = "../../home/me/.profile"``, an absolute path or a link committed beside it would
    otherwise replace files anywhere. Once the whole manifest is checked, :func:`prepare` checks that every output
    can be written, after creating, with ``make_dirs``, each output's missing folder (only where it resolves inside
    that folder: a fresh build tree has none of them; a hostile ``output`` creates nothing outside).

    ``check`` reads the manifest for a run that writes nothing (``posenc build --check``, ``--list-outputs``):
    :func:`prepare` is not called, so nothing is created, and an output whose folder does not exist yet is no error
    (it would be created). Call :func:`prepare` before building from such a manifest.

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
        raise _spec(f"{label}: defaults must be a table ([defaults]), got {show(defaults)}")
    every_key = {key for keys in KEYS.values() for key in keys}
    layers: dict[str, dict[str, Any]] = {"": _renamed({k: v for k, v in defaults.items() if k not in KEYS}, label)}
    for command in KEYS:
        layer = defaults.get(command, {})
        if not isinstance(layer, dict):
            raise _spec(f"{label}, [defaults]: {command} must be a table ([defaults.{command}]), got {show(layer)}")
        layers[command] = _renamed(layer, label)
    for command, layer in layers.items():
        where, known = (f"[defaults.{command}]", KEYS[command]) if command else ("[defaults]", every_key)
        for key in layer:
            if key in ("command", "output"):
                raise _spec(f"{label}, {where}: {key} belongs in each [[table]] entry, not in defaults")
            if key not in known:
                raise _spec(f"{label}, {where}: unknown key {key!r}{_hint(key, known)}; keys are the options of "
                            f"{command or ', '.join(KINDS)}, with underscores")  # fmt: skip
    tables = doc.get("table")
    if not isinstance(tables, list) or not tables or not all(isinstance(t, dict) for t in tables):
        found = "none" if tables is None else show(tables)
        raise _spec(f"{label}: expected [[table]] entries (an array of tables, each with command and output), "
                    f"got {found}")  # fmt: skip
    base = Path(os.fspath(output_dir)) if output_dir is not None else path.parent
    entries = [_entry(label, i, raw, layers, base, path.parent, allow_outside) for i, raw in enumerate(tables, 1)]
    _check_collisions(label, path, entries)
    root = None if allow_outside else Path(os.path.realpath(base))
    if root is not None:
        for entry in entries:
            for file in entry.plan.paths:
                check_inside(root, file, f"{entry.where(label)}: output {str(file)!r}")
    manifest = Manifest(path, tuple(entries), root, Path(os.path.realpath(base)))
    if not check:
        prepare(manifest, make_dirs=make_dirs)
    return manifest


def prepare(manifest: Manifest, *, make_dirs: bool = False) -> None:
    """Check that every output of ``manifest`` can be written, before the first is: with ``make_dirs``, first
    create each output's missing folder, only where it resolves inside the output folder (:attr:`Manifest.base`),
    every one checked before the first is made; a manifest read with ``check`` needs this before a build.

    Raises
    ------
    SpecError
        A folder to create that resolves outside the output folder (``param="manifest"``), naming the entry.
    OutputError
        An output that cannot be written (missing directory, no permission), or a folder that cannot be created,
        naming the entry.
    """
    label = str(manifest.path)
    base = manifest.base if manifest.base is not None else Path(os.path.realpath(manifest.path.parent))
    missing: dict[Path, Entry] = {}
    for entry in manifest.entries if make_dirs else ():
        folder = entry.path.parent
        if not os.path.isdir(folder) and folder not in missing:
            check_inside(base, folder, f"{entry.where(label)}: the folder of output {entry.output!r}")
            missing[folder] = entry
    for folder, entry in missing.items():
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError as exc:
            raise OutputError(f"{entry.where(label)}: cannot create the folder {str(folder)!r}: "
                              f"{exc.strerror or exc}") from None  # fmt: skip
    for entry in manifest.entries:
        with about(entry.where(label)):
            for file in entry.plan.paths:
                atomic.check_writable(file)


def check_inside(root: Path, file: Path, what: str, *, param: str = "manifest") -> None:
    real = os.path.realpath(file)
    if os.path.commonpath([real, root]) != str(root):
        raise SpecError(
            f"{what} resolves to {real!r}, outside {str(root)!r}: a manifest writes only inside its folder "
            "(or --output-dir); pass --allow-outside if that is meant",
            param=param,
        )


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


def _renamed(layer: dict[str, Any], label: str) -> dict[str, Any]:
    """``layer`` with each key of :data:`RENAMED` under its name now (a note says so); both given is an error."""
    out = dict(layer)
    for old, new in RENAMED.items():
        if old in out:
            if new in out:
                raise _spec(f"{label}: {old} and {new} are one key (spelled {new} now): give it once")
            warnings.warn(f"{label}: the key {old} is spelled {new} now (--{new.replace('_', '-')})", PosencWarning,
                          stacklevel=2)  # fmt: skip
            out[new] = out.pop(old)
    return out


def _entry(
    label: str,
    index: int,
    raw: dict[str, Any],
    defaults: Mapping[str, dict[str, Any]],
    base: Path,
    sources: Path,
    allow_outside: bool,
) -> Entry:
    """One checked entry; ``base`` is where outputs go, ``sources`` the manifest's folder, where inputs are read.
    An output's folder may be missing (:func:`prepare` says so, or creates it)."""
    raw = _renamed(raw, label)
    output = raw.get("output")
    where = f"{label}, table #{index}" + (f" (output {output!r})" if isinstance(output, str) else "")
    command = raw.get("command")
    if command is None:
        raise _spec(f"{where}: missing key 'command'; it is one of {', '.join(KEYS)}")
    if command not in KEYS:
        raise _spec(f"{where}: command must be one of {', '.join(map(json.dumps, KEYS))}, got {show(command)}")
    if output is None:
        raise _spec(f"{where}: missing key 'output', the file to write (relative to the manifest's directory)")
    if not isinstance(output, str) or not output.strip() or output == "-":
        raise _spec(f"{where}: output must be a file name (a non-empty string, not '-'), got {show(output)}")
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
    for key, param in keys.items():
        if key not in given:
            options[key] = param.default
            continue
        try:
            options[key] = param.type.from_toml(given[key])
        except Wrong as exc:
            origin = origins.get(key, "")
            raise _spec(f"{where}: {key}{origin} must be {exc.args[0]}, got {show(given[key])}") from None
    required = [key for key, param in keys.items() if param.required]
    missing = [key for key in required if key not in given]
    if missing:
        raise _spec(f"{where}: missing key {missing[0]!r}; {command} needs {' and '.join(required)}")
    path = base / output
    where = f"{label}, table #{index} (output {output!r})"
    inputs: dict[str, Path] = {}
    root = Path(os.path.realpath(sources))
    for key in KINDS[command].files:
        if options.get(key) is not None:
            inputs[key] = sources / options[key]
            if key == "config":  # a model folder: the depfile's prerequisite is its config.json
                inputs[key] = config_file(inputs[key])
            if not allow_outside:
                check_inside(root, inputs[key], f"{where}: {key} {options[key]!r}")
    with about(where, origins):
        out = api.plan(path, format=options["format"], name=options["name"], missing_dirs=True)
        api.c_write_options(out, {key: options[key] for key in _C_OPTIONS}, header=options["header"])
        entry = Entry(index, command, output, path, options, out, inputs)
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
def about(where: str, origins: Mapping[str, str] | None = None) -> Iterator[None]:
    """Prefix the errors raised inside with the entry they are about (and the key, where the message omits it)."""
    try:
        yield
    except SpecError as exc:
        message, key = str(exc), exc.param
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
