"""``posenc build``: every table of a manifest, written as the single commands write them; and a depfile.

- :mod:`~posenc_cli.manifest.reader`: the manifest's format, read and checked in full (:func:`load_manifest`);
- :mod:`~posenc_cli.manifest.run`: :func:`build`, which writes each entry's file as ``posenc <command> ... -o
  <output>`` writes it, byte for byte (the table built by its kind, written with :func:`posenc_cli.api.save`:
  atomic; a file that already holds the new bytes is left untouched, mtime included), its C provenance comment
  recording that command;
- :mod:`~posenc_cli.manifest.report`: what a build did;
- :mod:`~posenc_cli.manifest.depfile`: the make rule for CMake's ``DEPFILE``, Ninja and make;
- :mod:`~posenc_cli.manifest.names`: the one rule for the names given to build tools (``--list-outputs``, the
  depfile, CMake);
- :mod:`~posenc_cli.manifest.stamp`: the stamp make rules use (``--stamp``).

Until issue #26 this package was ``posenc_cli.manifest``: a folder named ``build`` is what ``.gitignore`` files and
build tools take for build output (a ``build/`` line once left it out of every clone). :mod:`posenc_cli.manifest`
still re-exports the names below, with a ``DeprecationWarning``, for one release.
"""

from __future__ import annotations

from .depfile import check_build_names, check_depfile, depfile_text, write_depfile
from .names import name_problem
from .reader import DEFAULT_MANIFEST, KEYS, MAX_KEY_PARTS, MAX_MANIFEST, Entry, Manifest, load_manifest, prepare
from .report import BuildReport, FileReport, TableReport
from .run import build
from .stamp import STAMP_TEXT, check_stamp, touch_stamp

__all__ = ["DEFAULT_MANIFEST", "KEYS", "MAX_KEY_PARTS", "MAX_MANIFEST", "STAMP_TEXT", "BuildReport", "Entry"]
__all__ += ["FileReport", "Manifest", "TableReport", "build", "check_build_names", "check_depfile", "check_stamp"]
__all__ += ["depfile_text", "load_manifest", "name_problem", "prepare", "touch_stamp", "write_depfile"]
