#!/usr/bin/env python3
"""Make the DETR sine position-embedding goldens in this directory by calling transformers' own modules.

NOT part of posenc and never imported by the suite: run by hand in a throwaway venv with torch (CPU), transformers
and numpy (README.md beside this file). It contains no framework code: each ``pos`` array is what
``DetrSinePositionEmbedding`` / ``DeformableDetrSinePositionEmbedding`` return for ``shape=(1, C, H, W)``, float32,
on the CPU, with the mask given (``mask``: 1 = a real pixel, as DETR's downsampled ``pixel_mask``). The .npz members
carry a fixed timestamp, so a re-run with the same versions gives the same bytes; ``--check`` compares instead of
writing.
"""

from __future__ import annotations

import argparse
import io
import sys
import zipfile
from pathlib import Path

import numpy as np
import torch
import transformers
from transformers.models.deformable_detr.modeling_deformable_detr import DeformableDetrSinePositionEmbedding
from transformers.models.detr.modeling_detr import DetrSinePositionEmbedding

HERE = Path(__file__).resolve().parent
ZIP_DATE = (1980, 1, 1, 0, 0, 0)


def padded(height: int, width: int, rows: int, cols: int) -> np.ndarray:
    """A pixel mask of one image of ``rows x cols`` real pixels, padded (0) to ``height x width`` (DETR pads
    bottom and right)."""
    mask = np.zeros((height, width), np.bool_)
    mask[:rows, :cols] = True
    return mask


# name: (module class, height, width, num_position_features, normalize, scale, mask or None)
CASES = {
    "detr_5x7_d16": (DetrSinePositionEmbedding, 5, 7, 8, True, None, None),
    "detr_5x7_d16_mask": (DetrSinePositionEmbedding, 5, 7, 8, True, None, padded(5, 7, 3, 4)),
    "detr_5x7_d16_raw": (DetrSinePositionEmbedding, 5, 7, 8, False, None, None),
    "detr_5x7_d16_raw_mask": (DetrSinePositionEmbedding, 5, 7, 8, False, None, padded(5, 7, 4, 6)),
    "detr_5x7_d16_scale1": (DetrSinePositionEmbedding, 5, 7, 8, True, 1.0, None),
    "detr_r50_25x34_d256": (DetrSinePositionEmbedding, 25, 34, 128, True, None, None),
    "detr_r50_25x34_d256_mask": (DetrSinePositionEmbedding, 25, 34, 128, True, None, padded(25, 34, 19, 34)),
    "detr_r50_25x34_d256_raw": (DetrSinePositionEmbedding, 25, 34, 128, False, None, None),
    "deformable_5x7_d16_mask": (DeformableDetrSinePositionEmbedding, 5, 7, 8, True, None, padded(5, 7, 3, 4)),
    "deformable_25x34_d256": (DeformableDetrSinePositionEmbedding, 25, 34, 128, True, None, None),
}


def make(case: tuple) -> dict[str, np.ndarray]:
    cls, height, width, n, normalize, scale, mask = case
    module = cls(n, normalize=normalize, scale=scale)
    given = None if mask is None else torch.from_numpy(mask)[None]
    with torch.no_grad():
        pos = module(shape=torch.Size([1, 2 * n, height, width]), device="cpu", dtype=torch.float32, mask=given)
    arrays = {"pos": pos[0].numpy().astype(np.float32)}
    if mask is not None:
        arrays["mask"] = mask.astype(np.uint8)
    return arrays


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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the files on disk, write nothing")
    args = parser.parse_args()
    torch.set_num_threads(1)
    differ = 0
    for name, case in CASES.items():
        data = npz_bytes(make(case))
        path = HERE / f"{name}.npz"
        if args.check:
            if not path.exists() or path.read_bytes() != data:
                print(f"differs: {path.name}")
                differ += 1
        else:
            path.write_bytes(data)
            print(f"wrote {path.name}")
    print(
        f"torch {torch.__version__}, transformers {transformers.__version__}, numpy {np.__version__}, "
        f"Python {sys.version.split()[0]}"
    )
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
