#!/usr/bin/env python3
"""Make the xPos scale goldens in this directory with torchscale's and rotary-embedding-torch's own modules (not
part of posenc).

NOT part of posenc and never imported by the suite: run by hand with torch 2.13.0 (CPU), torchscale 0.3.0,
rotary-embedding-torch 0.9.1 and einops importable (README.md beside this file). It contains no framework code:

- ``torchscale__<case>``: the ``scale`` table that ``torchscale.component.xpos_relative_position.XPOS(head_dim,
  scale_base).forward(x)`` (``offset=0``, ``downscale=False``: the query side) builds, ``(L, head_dim / 2)``
  float32, captured as the argument the module hands to its ``fixed_pos_embedding`` (the module's own name for
  it is replaced by a wrapper that keeps the argument and calls the original), cut to the last ``L`` rows as
  ``forward`` does; ``x`` is ``zeros(1, L, head_dim)``.
- ``rotary__<case>``: ``RotaryEmbedding(dim, use_xpos=True, xpos_scale_base=scale_base).get_scale(seq,
  seq_len=L)`` with ``seq = get_seq_pos(L, dtype=torch.float32)``, as ``rotate_queries_and_keys`` calls it:
  ``(L, dim)`` float32, each frequency's scale repeated over its pair of columns.
- ``<source>_zeta__<case>``: the module's ``scale`` buffer (``(arange(0, d, 2) + 0.4 d) / (1.4 d)``), float32.

Writes ``xpos_goldens.npz`` (fixed member timestamps and deflate level) and ``manifest.json`` (sorted keys);
``--check`` compares instead of writing.
"""

from __future__ import annotations

import argparse
import io
import json
import platform
import sys
import zipfile
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
ZIP_DATE = (1980, 1, 1, 0, 0, 0)
#: name: (rotated width d, scale_base, rows L)
CASES = {
    "d64_sb512_n512": (64, 512, 512),
    "d64_sb512_n17": (64, 512, 17),
    "d128_sb512_n257": (128, 512, 257),
    "d160_sb64_n130": (160, 64, 130),  # zeta_31 = 9/16: (9/16) ** (+-1/2) = 3/4, 4/3 are rational
    "d20_sb32_n129": (20, 32, 129),  # zeta_3 = 1/2: integer powers at +-32, +-64
    "d32_sb64_n257": (32, 64, 257),
}


def torchscale_scale(d: int, sb: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    from torchscale.component import xpos_relative_position as module

    captured: list[torch.Tensor] = []
    original = module.fixed_pos_embedding

    def keep(x: torch.Tensor) -> Any:
        captured.append(x.detach().clone())
        return original(x)

    module.fixed_pos_embedding = keep
    try:
        xpos = module.XPOS(d, sb)
        with torch.no_grad():
            xpos(torch.zeros(1, n, d), offset=0, downscale=False)
    finally:
        module.fixed_pos_embedding = original
    (scale,) = captured
    return scale[-n:].numpy().astype(np.float32), xpos.scale.numpy().astype(np.float32)


def rotary_scale(d: int, sb: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    from rotary_embedding_torch import RotaryEmbedding

    rotary = RotaryEmbedding(d, use_xpos=True, xpos_scale_base=sb)
    with torch.no_grad():
        seq = rotary.get_seq_pos(n, dtype=torch.float32, device=torch.device("cpu"))
        scale = rotary.get_scale(seq, seq_len=n)
    return scale.numpy().astype(np.float32), rotary.scale.numpy().astype(np.float32)


def npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for key in sorted(arrays):
            member = io.BytesIO()
            np.lib.format.write_array(member, np.ascontiguousarray(arrays[key]), allow_pickle=False)
            info = zipfile.ZipInfo(f"{key}.npy", ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, member.getvalue(), compresslevel=9)
    return out.getvalue()


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the files on disk, write nothing")
    args = parser.parse_args()
    torch.set_num_threads(1)
    arrays: dict[str, np.ndarray] = {}
    cases: dict[str, Any] = {}
    for name, (d, sb, n) in CASES.items():
        arrays[f"torchscale__{name}"], arrays[f"torchscale_zeta__{name}"] = torchscale_scale(d, sb, n)
        arrays[f"rotary__{name}"], arrays[f"rotary_zeta__{name}"] = rotary_scale(d, sb, n)
        cases[name] = {"width": d, "scale_base": sb, "rows": n}
    manifest = {
        "description": "xPos scale tables of torchscale's XPOS and rotary-embedding-torch's RotaryEmbedding(use_xpos)",
        "generator": "tests/goldens/xpos/make_xpos_goldens.py",
        "file": "xpos_goldens.npz",
        "cases": cases,
        "layout": {
            "torchscale__<case>": "(rows, width / 2) float32: one column per frequency, the query side",
            "rotary__<case>": "(rows, width) float32: each frequency repeated over its interleaved pair",
            "<source>_zeta__<case>": "(width / 2,) float32: the module's scale buffer",
        },
        "positions": {
            "torchscale": "arange(min_pos, max_pos) with min_pos = -(L + offset) // 2 (offset 0): i - ceil(L / 2)",
            "rotary-embedding-torch": "t - len(t) // 2 with t = arange(L): i - floor(L / 2)",
        },
        "environment": {
            "python": platform.python_version(),
            "machine": platform.machine(),
            "numpy": np.__version__,
            "torch": torch.__version__,
            "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "torch_num_threads": torch.get_num_threads(),
            "torchscale": metadata.version("torchscale"),
            "rotary-embedding-torch": metadata.version("rotary-embedding-torch"),
            "einops": metadata.version("einops"),
        },
    }
    files = {
        HERE / "xpos_goldens.npz": npz_bytes(arrays),
        HERE / "manifest.json": (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode(),
    }
    differ = 0
    for path, data in files.items():
        if args.check:
            if not path.exists() or path.read_bytes() != data:
                print(f"differs: {path.name}")
                differ += 1
        else:
            path.write_bytes(data)
            print(f"wrote {path.name}")
    for key in sorted(arrays):
        print(key, arrays[key].shape, arrays[key].dtype)
    print(json.dumps(manifest["environment"]))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
