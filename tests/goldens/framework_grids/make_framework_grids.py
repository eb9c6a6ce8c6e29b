"""Goldens for ``--arithmetic framework`` of ``posenc relative``, ``posenc window`` and ``posenc sincos2d``, made by
the frameworks' own functions on CPU. NOT part of posenc and never imported by the suite: run by hand in a throwaway
venv with torch 2.13.0 (CPU) and transformers 5.25 (``README.md`` beside it).

It imports transformers' functions and calls them; it computes nothing itself. Files (``np.savez_compressed``):

- ``t5_causal.npz``: for each T5 setting ``(n, D)`` named ``n{n}_d{D}`` (``num_buckets = n``, causal), the buckets
  ``T5Attention._relative_position_bucket(-a, bidirectional=False, ...)`` of every distance ``a = 0 .. 4096``
  (int16), and ``log_e{e}``: torch's own float32 ``torch.log(a.float() / max_exact)`` of the same distances for each
  ``max_exact = e`` (the one elementary function of that code, to tell its rounding from the sequence's).
- ``t5_bidirectional.npz``: ``compute_bias``'s bucket matrix for one bidirectional setting, ``index`` (int16).
- ``deberta.npz``: ``make_log_bucket_position(r, b, P)`` of ``r = -4096 .. 4096`` for each ``b{b}_p{P}`` (int16),
  and torch's own float32 logarithms: ``log_m{m}`` of ``a / m`` for ``a = 0 .. 4096``, ``den_b{b}_p{P}`` of
  ``torch.tensor((P - 1) / m)``.
- ``swinv2.npz``: ``Swinv2SelfAttention(...).create_coords_table_and_index()[0][0]`` for each window
  ``w{H}x{W}_p{h}x{w}`` (float32).
- ``sincos2d.npz``: ``build_2d_sinusoidal_position_embedding(16, 16, 128, cls_token=True, dtype=torch.float32)``
  (``pe``, transformers' raw layout ``[sin y | cos y | sin x | cos x]``).

The settings are the T5 and DeBERTa settings (among ``n`` = 4 .. 256 in powers of two and every ``D`` up to 4096)
where transformers' buckets differ from the exact ones somewhere in ``0 .. 4096``: found by comparing the two over
every such setting (``SETTINGS`` lists what that search found), plus the common settings.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch
import transformers
from transformers import Swinv2Config
from transformers.models.deberta_v2.modeling_deberta_v2 import make_log_bucket_position
from transformers.models.swinv2.modeling_swinv2 import Swinv2SelfAttention
from transformers.models.t5.modeling_t5 import T5Attention
from transformers.models.vit_mae.modeling_vit_mae import build_2d_sinusoidal_position_embedding

HERE = Path(__file__).resolve().parent

#: (num_buckets, max_distance) of the causal T5 settings whose HF buckets differ from the exact ones in 0 .. 4096.
T5_SETTINGS = (
    (16, 1461), (16, 2455), (32, 939), (32, 2533), (32, 2811), (32, 2922), (64, 1878), (64, 2418), (64, 3039),
    (64, 3199), (64, 3224), (64, 3314), (64, 3627), (64, 3649), (64, 3791), (64, 3938), (64, 4075), (128, 441),
    (128, 1564), (128, 2216), (128, 2668), (128, 2698), (128, 3319), (128, 3435), (128, 3756), (128, 3789),
    (128, 4067), (256, 882), (256, 1509), (256, 1861), (256, 1951), (256, 2022), (256, 2060), (256, 2085),
    (256, 2128), (256, 2143), (256, 2248), (256, 2354), (256, 2434), (256, 2453),
    (16, 128), (32, 128), (64, 256), (8, 20),
)  # fmt: skip
#: (position_buckets, max_relative_positions) of the DeBERTa settings (buckets 16, 32, 64) whose HF buckets differ
#: from the exact ones in -4096 .. 4096, and the common settings.
DEBERTA_SETTINGS = (
    (16, 598), (16, 763), (16, 1201), (16, 1722), (16, 1832), (16, 3117), (16, 3290), (32, 37), (32, 69), (32, 551),
    (32, 591), (32, 636), (32, 729), (32, 733), (32, 1730), (32, 2036), (32, 2243), (32, 2307), (32, 2344),
    (32, 3095), (32, 3350), (32, 3538), (32, 3638), (64, 37), (64, 45), (64, 73), (64, 93), (64, 215), (64, 251),
    (64, 331), (64, 340), (64, 388), (64, 442), (64, 548), (64, 653), (64, 909), (64, 985), (64, 1237), (64, 1370),
    (64, 1513), (64, 1961), (64, 2007), (64, 2068), (64, 2341), (64, 2393), (64, 2526), (64, 2606), (64, 2647),
    (64, 2793), (64, 2892), (64, 2935), (64, 2982), (64, 3294), (64, 3366), (64, 3388), (64, 3747), (64, 3802),
    (64, 3879),
    (256, 512), (128, 512), (64, 256), (32, 128), (16, 64),
)  # fmt: skip
SWINV2_WINDOWS = (((8, 8), (0, 0)), ((12, 12), (8, 8)), ((16, 16), (12, 12)), ((24, 24), (16, 16)), ((6, 10), (4, 4)))


def main() -> None:
    torch.set_num_threads(1)
    a = torch.arange(0, 4097, dtype=torch.long)
    t5 = {}
    for n, d in T5_SETTINGS:
        t5[f"n{n}_d{d}"] = T5Attention._relative_position_bucket(-a, bidirectional=False, num_buckets=n, max_distance=d)
        t5[f"log_e{n // 2}"] = torch.log(a.float() / (n // 2))
    np.savez_compressed(
        HERE / "t5_causal.npz", **{k: v.numpy().astype(np.int16 if k[0] == "n" else np.float32) for k, v in t5.items()}
    )

    # compute_bias's matrix: memory_position - context_position, queries at 780 .. 783, keys 0 .. 1599
    rel = torch.arange(1600)[None, :] - torch.arange(780, 784)[:, None]
    bi = T5Attention._relative_position_bucket(rel, bidirectional=True, num_buckets=32, max_distance=1461)
    np.savez_compressed(HERE / "t5_bidirectional.npz", index=bi.numpy().astype(np.int16))

    r = torch.arange(-4096, 4097, dtype=torch.long)
    deb = {
        f"b{b}_p{p}": make_log_bucket_position(r, b, p).to(torch.long).numpy().astype(np.int16)
        for b, p in DEBERTA_SETTINGS
    }
    for b, p in DEBERTA_SETTINGS:  # torch's own logarithms: of |r| / mid, and of the float32 (P - 1) / mid
        deb[f"log_m{b // 2}"] = torch.log(torch.arange(4097) / (b // 2)).numpy()
        deb[f"den_b{b}_p{p}"] = torch.log(torch.tensor((p - 1) / (b // 2))).numpy()
    np.savez_compressed(HERE / "deberta.npz", **deb)

    swin = {}
    for (h, w), (ph, pw) in SWINV2_WINDOWS:
        attn = Swinv2SelfAttention(Swinv2Config(), 32, 2, [h, w], pretrained_window_size=[ph, pw])
        table, _ = attn.create_coords_table_and_index()
        swin[f"w{h}x{w}_p{ph}x{pw}"] = table[0].numpy()
    np.savez_compressed(HERE / "swinv2.npz", **swin)

    pe = build_2d_sinusoidal_position_embedding(16, 16, 128, cls_token=True, dtype=torch.float32)
    np.savez_compressed(HERE / "sincos2d.npz", pe=pe.numpy())
    print(
        "torch", torch.__version__, "transformers", transformers.__version__, "numpy", np.__version__, file=sys.stderr
    )


if __name__ == "__main__":
    main()
