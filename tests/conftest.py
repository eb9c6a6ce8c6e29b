"""Shared test helpers.

External tools (C compilers, h5dump) are part of the test suite's contract: on CI (``CI`` set, as ``.ci/run``
runs) a missing tool is a failure, because ``.ci/run`` installs them; on a developer's machine it is a skip that
says what to install.
"""

from __future__ import annotations

import os
import shutil

import pytest


def require_tool(name: str) -> str:
    """The full path of the executable ``name``; fail on CI, skip elsewhere, when it is missing."""
    path = shutil.which(name)
    if path is None:
        message = f"{name} is not installed (.ci/run installs it: see the apt-get line there)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path
