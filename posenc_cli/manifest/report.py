"""What ``posenc build`` did: one :class:`FileReport` per file, one :class:`TableReport` per entry, a
:class:`BuildReport` for the manifest (``posenc build --json`` prints :meth:`BuildReport.as_dict`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..table import Param
from .reader import Entry

__all__ = ["BuildReport", "FileReport", "TableReport"]


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
    #: The files the entries read besides the manifest (checkpoints): a depfile's other prerequisites.
    inputs: tuple[Path, ...] = ()

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
