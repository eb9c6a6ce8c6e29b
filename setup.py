"""posenc's optional compiled cores (everything else is declared in pyproject.toml).

Each extension is optional: where no C compiler is present, or the build fails, setuptools prints a warning and
installs posenc without it, and posenc runs its pure path, which writes the same bytes
(:mod:`posenc_cli._native` says which core runs; ``posenc --version`` prints it). The C sources read arrays through
the buffer protocol, so the build needs no NumPy headers.

With ``POSENC_CORE=compiled`` in the environment the extensions are required: a failed build is an error (CI).

The arithmetic must be IEEE double, operation for operation, as the pure path's NumPy does it: no contraction of a
multiply and an add into a fused multiply-add (``-ffp-contract=off``), no ``-ffast-math`` (the sources refuse it).
"""

from __future__ import annotations

import os

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))

#: The compiled modules and their sources; one whose sources are not in this tree is left out.
CORES = {
    "posenc_cli._core": ["posenc_cli/_core/core.c"],
    "posenc_cli._ctext": ["posenc_cli/_core/text.c"],
}

#: Flags per compiler family: optimised, C99, IEEE double arithmetic without contraction.
FLAGS = {
    "unix": ["-O3", "-std=c99", "-ffp-contract=off", "-fno-fast-math"],
    "msvc": ["/O2", "/fp:precise"],
}


class BuildCores(build_ext):
    """build_ext with :data:`FLAGS` for the compiler in use."""

    def build_extensions(self) -> None:
        flags = FLAGS.get(self.compiler.compiler_type, FLAGS["unix"])  # mingw32, cygwin: gcc's flags
        for extension in self.extensions:
            extension.extra_compile_args = [*flags, *extension.extra_compile_args]
        super().build_extensions()


setup(
    ext_modules=[
        Extension(name, sources=sources, optional=os.environ.get("POSENC_CORE") != "compiled")
        for name, sources in CORES.items()
        if all(os.path.exists(os.path.join(HERE, source)) for source in sources)
    ],
    cmdclass={"build_ext": BuildCores},
)
