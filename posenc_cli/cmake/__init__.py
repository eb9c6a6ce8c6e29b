"""posenc's CMake package: data files, shipped in the wheel beside the code (``posenc --cmake-dir`` prints where).

- ``posenc-config.cmake``: for ``find_package(posenc CONFIG)`` with ``-Dposenc_DIR=$(posenc --cmake-dir)``; it loads
  ``posenc.cmake`` and finds the posenc program of this installation (nothing is recorded at install time);
- ``posenc-config-version.cmake``: the package's version, read from :mod:`posenc_cli._version`;
- ``posenc.cmake``: ``posenc_add_table`` and ``posenc_add_manifest``; its header documents them.

A Python package only so that setuptools ships the folder (it has no package-data directories).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["FOLDER"]

#: The folder holding the CMake files: what ``posenc --cmake-dir`` prints.
FOLDER = Path(__file__).resolve().parent
