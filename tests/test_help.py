"""Every command's ``--help`` equals its golden in tests/goldens/help/ (regenerate with make_help.py there)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

HELP = Path(__file__).resolve().parent / "goldens" / "help"


def test_help_matches_the_goldens():
    spec = importlib.util.spec_from_file_location("make_help", HELP / "make_help.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    made_with = (HELP / "CLICK_VERSION").read_text().strip()
    if module.rendered_by() != made_with:  # the floors run of .ci/run: another click wraps help text otherwise
        pytest.skip(f"the goldens are click {made_with}'s formatting; this is click {module.rendered_by()}")
    printed = module.helps()
    assert sorted(printed) == sorted(p.name for p in HELP.glob("*.txt")), "a command was added or removed"
    stale = [name for name, text in printed.items() if (HELP / name).read_text(encoding="utf-8") != text]
    assert not stale, f"--help changed for {stale}: if intended, run python tests/goldens/help/make_help.py"
