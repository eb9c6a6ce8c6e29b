"""Shared test helpers.

External tools (C compilers, h5dump) are part of the test suite's contract: on CI (``CI`` set, as ``.ci/run``
runs) a missing tool is a failure, because ``.ci/run`` installs them; on a developer's machine it is a skip that
says what to install.

A test that runs one is marked ``client`` (``pytest.mark.client``): the floors run (.ci/run's first, on the oldest
numpy, h5py, click and rich) leaves them out, since what a compiler or CMake does with posenc's output does not depend
on those versions, and the main run has them all. :func:`require_tool` holds the rule: called from a test without
the mark, it fails and names the test.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import mpmath
import pytest

_running: list[pytest.Item] = []


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """The test now running, module-scoped fixtures' setup included, for :func:`require_tool`'s rule."""
    _running[:] = [item]


@pytest.fixture(autouse=True)
def _mpmath_at_60_digits() -> object:
    """Every test starts with mpmath at 60 significant digits, whatever ran before it on the same worker: a test that
    needs another precision sets it in its body, and the next test starts from 60 again (a module-level setting
    would only hold for whichever module was imported last)."""
    mpmath.mp.dps = 60
    yield
    mpmath.mp.dps = 60


def require_tool(name: str) -> str:
    """The full path of the executable ``name``; fail on CI, skip elsewhere, when it is missing. Fails, naming the
    test, when the running test is not marked ``client``."""
    if _running and _running[0].get_closest_marker("client") is None:
        pytest.fail(f"{_running[0].nodeid} runs {name}: mark it @pytest.mark.client (the floors run leaves it out)")
    path = shutil.which(name)
    if path is None:
        message = f"{name} is not installed (.ci/run installs it: see the apt-get line there)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


def touch_later(path: Path, root: Path) -> None:
    """Touch ``path`` (now, never in the future) so that it is newer than every file under ``root``, whatever the
    file system's time stamp resolution (make and Ninja compare mtimes)."""
    newest = max(p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file())
    while True:
        os.utime(path)
        if path.stat().st_mtime_ns > newest:
            return
        time.sleep(0.01)
