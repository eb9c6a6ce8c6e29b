"""sample_outputs/ holds exactly what the current code writes (regenerate with sample_outputs/make_samples.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SAMPLES = Path(__file__).resolve().parents[1] / "sample_outputs"


def load_script():
    spec = importlib.util.spec_from_file_location("make_samples", SAMPLES / "make_samples.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_samples_match_the_code(tmp_path):
    written = load_script().make(tmp_path)
    names = sorted(p.name for p in written)
    assert names == sorted(p.name for p in SAMPLES.iterdir() if p.suffix != ".py" and p.is_file())
    stale = [name for name in names if (tmp_path / name).read_bytes() != (SAMPLES / name).read_bytes()]
    assert not stale, f"sample_outputs/ is stale for {stale}: run python sample_outputs/make_samples.py"
