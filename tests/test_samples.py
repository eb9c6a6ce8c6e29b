"""sample_outputs/ holds exactly what the current code writes (regenerate with sample_outputs/make_samples.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

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


@pytest.mark.client
def test_the_t5_and_swin_sample_headers_compile_to_the_frameworks_tables(tmp_path):
    """sample_outputs/t5_buckets.h and swin_index.h, compiled by gcc, print the index transformers and timm made."""
    import json
    import subprocess

    import numpy as np

    from tests.conftest import require_tool

    gcc = require_tool("gcc")
    goldens = Path(__file__).resolve().parent / "goldens" / "relative"
    manifest = json.loads((goldens / "manifest.json").read_text())["goldens"]
    with np.load(goldens / manifest["t5_bi_b32_md128_q40_k40"]["file"]) as z:
        t5 = z["index"][:16, :16]
    with np.load(goldens / manifest["swin_index_7x7"]["file"]) as z:
        swin = z["index"]
    for header, symbol, rows, cols, want in (
        ("t5_buckets.h", "t5_buckets", "T5_BUCKETS_QUERY", "T5_BUCKETS_KEY", t5),
        ("swin_index.h", "swin_index", "SWIN_INDEX_QUERY", "SWIN_INDEX_KEY", swin),
    ):
        main = tmp_path / f"{symbol}.c"
        main.write_text(
            f'#include <stdio.h>\n#include "{header}"\n'
            f"int main(void) {{ int i, j; for (i = 0; i < {rows}; i++) for (j = 0; j < {cols}; j++) "
            f'printf("%d\\n", (int){symbol}[i][j]); return 0; }}\n'
        )
        exe = tmp_path / symbol
        subprocess.run([gcc, "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", f"-I{SAMPLES}", str(main),
                        "-o", str(exe)], check=True)  # fmt: skip
        printed = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split()
        assert [int(v) for v in printed] == want.reshape(-1).tolist(), header
