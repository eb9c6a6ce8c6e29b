"""The names each encoding accepts for its choices, defined once here and imported by the encoding that defines
their meaning, so that the registry (:mod:`posenc_cli.kinds`) lists them as option choices without importing the
encodings themselves: ``posenc generate`` does not import the RoPE, ALiBi or index machinery to start."""

from __future__ import annotations

#: :mod:`posenc_cli.encodings.rope`: the column layouts of a RoPE cache and the HF ``rope_type`` scaling modes.
ROPE_LAYOUTS = ("half", "interleaved", "half-width")
#: :mod:`posenc_cli.kinds.runtimes`: the serving runtimes whose own RoPE cache layout and names ``rope`` writes.
ROPE_RUNTIMES = ("vllm", "tensorrt-llm", "llama.cpp", "onnxruntime-genai")
ROPE_SCALINGS = ("none", "linear", "dynamic", "yarn", "llama3", "longrope", "proportional")
#: :mod:`posenc_cli.encodings.alibi`: whose ALiBi bias (BLOOM's or MPT's).
ALIBI_VARIANTS = ("bloom", "mpt")
#: :mod:`posenc_cli.encodings.relative`: whose relative positions.
RELATIVE_SCHEMES = ("t5", "deberta", "shaw")
#: :mod:`posenc_cli.encodings.window`: whose window attention index.
WINDOW_SCHEMES = ("swin", "beit", "swinv2", "swinv2-cr")
#: :mod:`posenc_cli.encodings.xpos`: whose centring of xPos's positions (they differ for an odd number of rows).
XPOS_CENTERS = ("torchscale", "rotary-embedding-torch")
#: :mod:`posenc_cli.encodings.mrope_ids`: whose ``get_rope_index`` (transformers) gives the M-RoPE position ids.
MROPE_MODELS = ("qwen2-vl", "qwen2.5-vl", "qwen3-vl", "glm-4.1v")
#: :mod:`posenc_cli.encodings.axial_rope`: whose axial RoPE over a patch grid (vision towers, FLUX, video);
#: ``timm-pixel`` is :mod:`posenc_cli.encodings.axial_pixel`'s.
AXIAL_ROPE_MODELS = (
    "pixtral", "qwen2-vl", "qwen2.5-vl", "llama4", "eva02", "timm-pixel", "flux", "hunyuan-video", "wan"
)  # fmt: skip
#: ... of which the video styles, over a latent's frames x height x width (``-g TxHxW``).
AXIAL_ROPE_VIDEO = ("hunyuan-video", "wan")
#: :mod:`posenc_cli.encodings.sincos2d`: whose 2-D (or 3-D) sincos table: rows, column order, positions.
SINCOS_LAYOUTS = ("mae", "timm", "simple-vit", "dit", "sd3", "cogvideox")
