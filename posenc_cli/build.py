"""Deprecated: the manifest package is :mod:`posenc_cli.manifest`; this module re-exports its names for one release.

``posenc_cli.build`` was the package of ``posenc build`` until issue #26 renamed it (a folder named ``build`` is what
``.gitignore`` files and build tools take for build output). Importing this module warns (``DeprecationWarning``,
pointing at the import) and gives the same objects as :mod:`posenc_cli.manifest`. Its submodules are not kept:
``posenc_cli.build.manifest`` is ``posenc_cli.manifest.reader``; ``depfile``, ``names``, ``report`` and ``stamp``
keep their names under ``posenc_cli.manifest``. Nothing in posenc imports this module.
"""

from __future__ import annotations

import warnings

from .manifest import *  # noqa: F403  (the whole public surface, listed once: posenc_cli.manifest.__all__)
from .manifest import __all__ as __all__

# stacklevel 2: the warnings machinery skips the import system's own frames, so the warning names the line that
# imports posenc_cli.build (and Python's default filters show it when that line is in __main__).
warnings.warn(
    "posenc_cli.build is deprecated and goes in the next release: import posenc_cli.manifest, which has the same names",
    DeprecationWarning,
    stacklevel=2,
)
