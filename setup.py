"""posenc's optional compiled cores (everything else is declared in pyproject.toml).

Each extension is optional: where no C compiler is present, or the build fails, setuptools prints a warning and
installs posenc without it, and posenc runs its pure path, which writes the same bytes. The C sources read arrays
through the buffer protocol, so the build needs no NumPy headers.
"""

import os

from setuptools import Extension, setup

EXTENSIONS = [
    ("posenc_cli._core", ["posenc_cli/_core/core.c"]),
    ("posenc_cli._ctext", ["posenc_cli/_core/text.c"]),
]

setup(
    ext_modules=[
        Extension(name, sources, optional=True, extra_compile_args=["-O2", "-std=c99", "-fno-fast-math"])
        for name, sources in EXTENSIONS
        if all(os.path.exists(s) for s in sources)
    ]
)
