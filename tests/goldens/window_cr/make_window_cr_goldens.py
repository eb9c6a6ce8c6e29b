#!/usr/bin/env python3
"""Make the SwinV2-CR golden coordinate tables in this directory with timm's own module (not part of posenc).

NOT part of posenc and never imported by the suite: run by hand in a throwaway venv with torch 2.13.0 (CPU),
timm 1.0.31 and numpy (README.md beside this file). It contains no framework code: each ``coords`` array is the
``relative_coordinates_log`` buffer that a real ``timm.models.swin_transformer_v2_cr.WindowMultiHeadAttention``
holds after construction, ``(H*W*H*W, 2)`` float32, and ``log`` is ``torch.log`` of the integers ``1 .. 256`` (the
one elementary function of that code, so a test can tell torch's rounding from the sequence's).

Writes ``window_cr_goldens.npz`` (fixed member timestamps, fixed deflate level) and ``manifest.json`` (sorted keys);
``--check`` recomputes both and compares them with the files on disk without writing.
"""

from __future__ import annotations

import argparse
import glob
import importlib.util
import io
import json
import os
import platform
import sys
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
ZIP_DATE = (1980, 1, 1, 0, 0, 0)
WINDOWS = ((8, 8), (7, 7), (12, 12), (6, 10), (10, 6), (1, 5), (16, 16))
_SHIM: Any = None


def prepare_torchvision() -> str:
    """Let ``import timm`` succeed beside a CPU torch whose paired torchvision wheel cannot load its compiled ops.

    timm imports torchvision at import time; torchvision's ``_meta_registrations`` registers fake kernels for
    ``torchvision::nms`` and ``qnms`` whether or not its ops loaded, and fails when they did not. Declaring the two
    schemas (no kernels) lets the Python package import; nothing here runs a torchvision op.
    """
    global _SHIM
    spec = importlib.util.find_spec("torchvision")
    if spec is None or not spec.submodule_search_locations:
        return "not installed"
    for lib in sorted(glob.glob(os.path.join(list(spec.submodule_search_locations)[0], "_C*.so")))[:1]:
        try:
            torch.ops.load_library(lib)
        except OSError:
            break
        return "compiled ops loaded"
    _SHIM = torch.library.Library("torchvision", "DEF")
    _SHIM.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    _SHIM.define("qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    return "compiled ops not loadable; schemas torchvision::nms and ::qnms declared (no kernels) so that it imports"


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


def make(tv_status: str) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    import timm
    from timm.models.swin_transformer_v2_cr import WindowMultiHeadAttention

    arrays: dict[str, np.ndarray] = {}
    goldens: dict[str, Any] = {}
    for h, w in WINDOWS:
        torch.manual_seed(0)
        attention = WindowMultiHeadAttention(dim=16, num_heads=2, window_size=(h, w)).eval()
        buffer = attention.relative_coordinates_log
        if buffer.dtype != torch.float32 or tuple(buffer.shape) != (h * w * h * w, 2):
            raise AssertionError(f"{h}x{w}: {buffer.dtype} {tuple(buffer.shape)}")
        name = f"coords_{h}x{w}"
        arrays[name] = buffer.detach().numpy().copy()
        goldens[name] = {
            "window": [h, w],
            "call": f"WindowMultiHeadAttention(dim=16, num_heads=2, window_size=({h}, {w})).relative_coordinates_log",
            "shape": [h * w * h * w, 2],
            "dtype": "float32",
        }
    arrays["log"] = torch.log(torch.arange(1, 257, dtype=torch.float32)).numpy()
    manifest = {
        "description": "timm's SwinV2-CR relative_coordinates_log buffers (posenc window --scheme swinv2-cr)",
        "generator": "tests/goldens/window_cr/make_window_cr_goldens.py",
        "file": "window_cr_goldens.npz",
        "layout": (
            "coords_<H>x<W>: (H*W*H*W, 2) float32, row t * H*W + u for tokens t, u (row-major, t = y * W + x), "
            "columns (sign(y_t - y_u) * log(1 + |y_t - y_u|), the same of x); log: torch.log(arange(1, 257) float32)"
        ),
        "function": (
            "timm.models.swin_transformer_v2_cr.WindowMultiHeadAttention._make_pair_wise_relative_positions: "
            "coordinates = stack(ndgrid(arange(H), arange(W))) float32, flatten(1); relative = coordinates[:, :, None]"
            " - coordinates[:, None, :]; permute(1, 2, 0).reshape(-1, 2); torch.sign(r) * torch.log(1.0 + r.abs())"
        ),
        "goldens": goldens,
        "environment": {
            "python": platform.python_version(),
            "machine": platform.machine(),
            "numpy": np.__version__,
            "torch": torch.__version__,
            "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "torch_num_threads": torch.get_num_threads(),
            "timm": timm.__version__,
            "torchvision_status": tv_status,
        },
    }
    return arrays, manifest


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the files on disk, write nothing")
    args = parser.parse_args()
    torch.set_num_threads(1)
    arrays, manifest = make(prepare_torchvision())
    files = {
        HERE / "window_cr_goldens.npz": npz_bytes(arrays),
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
