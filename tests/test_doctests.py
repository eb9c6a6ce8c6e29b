"""The examples in posenc's docstrings are specs (STYLE.md): each one runs and prints what it says.

Every module of the package is imported and its docstring examples run with :mod:`doctest` (numbers printed as the
docstring prints them; ``# doctest: +SKIP`` marks the few that write files). A module added to the package is
collected without a line here.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import posenc_cli

#: Deprecated aliases of another module (they warn on import and hold no code of their own).
SHIMS = {"posenc_cli.build"}
MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(posenc_cli.__path__, "posenc_cli.")
    if not info.name.endswith("__main__") and info.name not in SHIMS
)


def test_the_package_has_modules_to_check():
    assert len(MODULES) > 50 and "posenc_cli.encodings.float32" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_every_docstring_example_prints_what_it_says(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples in {name} failed (printed above)"
