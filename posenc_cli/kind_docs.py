"""The help text of every table command (``posenc <command> --help``, ``docs/commands.md``), one per kind of
:data:`posenc_cli.kinds.KINDS`: the first line is the summary, ``\\b`` keeps the examples' lines as written."""

GENERATE = """Write a 1-D sinusoidal table: the paper's, or a framework's with --preset.

The paper (preset vaswani): PE[pos, 2i] = sin(pos / base^(2i/d_model)), PE[pos, 2i+1] = cos(pos /
base^(2i/d_model)), for pos = 0 .. seq_len-1; an odd d_model ends with a sine column. Other frameworks
differ in layout, frequencies, positions, padding row and odd widths: --preset picks one (list them with
posenc presets) and the other options override it. Every value is the exact value correctly rounded.

\b
Examples:
  posenc generate -n 2048 -d 512 -o pe.h             # C header, static const float pe[2048][512]
  posenc generate -n 2048 -d 512 -o pe.c --name pe   # pe.c (definition) + pe.h (extern declaration)
  posenc generate -n 1026 -d 1024 -p fairseq -o m2m100_pos.npy
  posenc generate -n 1000 -d 320 -p openai-diffusion -o timesteps.h
"""

ROPE = """Write RoPE caches: cos and sin (seq_len, head_dim) and inv_freq (head_dim/2), as HF transformers'
LlamaRotaryEmbedding and ROPE_INIT_FUNCTIONS compute them.

cos[p, j] = a * cos(p * inv_freq[k]), sin[p, j] = a * sin(p * inv_freq[k]) with k = j mod head_dim/2 (half)
or j // 2 (interleaved), inv_freq[k] = theta^(-2k/head_dim) scaled by the --scaling mode, and a the mode's
attention scaling (1 except yarn and longrope; --no-attention-scaling leaves it out). dynamic is evaluated at
--seq-len. Every value is the exact value correctly rounded.

\b
Examples:
  posenc rope -n 4096 --head-dim 128 -o rope.npz
  posenc rope -n 8192 --head-dim 128 --theta 500000 --scaling llama3 --factor 8 \\
      --original-max-positions 8192 -o llama31_rope.h
  posenc rope -n 4096 --head-dim 64 --scaling yarn --factor 4 --original-max-positions 4096 --part cos -o cos.npy
"""

ALIBI = """Write ALiBi slopes (Press et al.) and, with --seq-len, the bias matrix slope[h] * j.

Slopes 2^(-8(h+1)/p) for the largest power of two p <= heads, then every other slope of 2p heads (HF BLOOM
build_alibi_tensor). --variant mpt is HF MPT's build_mpt_alibi_tensor: the same slopes (its round-up construction
gives BLOOM's), the bias over positions 1-seq_len .. 0. Arrays: slopes (heads), bias (heads, seq_len); every value
correctly rounded.

\b
Examples:
  posenc alibi -H 12 -o slopes.h
  posenc alibi -H 40 -n 2048 -o alibi.npz
  posenc alibi -H 40 -n 2048 --part bias -o bias.npy
  posenc alibi -H 12 -n 2048 --variant mpt -o mpt_alibi.npz
"""

SINCOS2D = """Write MAE's 2-D sincos position embedding (get_2d_sincos_pos_embed).

Rows are the grid's patches in row-major order, after a zero row with --cls-token; columns are
[sin x | cos x | sin y | cos y], each d_model/4 wide, frequencies base^(-k/(d_model/4)). Every value is the
exact value correctly rounded.

\b
Examples:
  posenc sincos2d -g 14 -d 768 --cls-token -o vit_pos.npy      # ViT-B/16 at 224 px, MAE
  posenc sincos2d -g 16x24 -d 256 -o pos2d.h
"""

RELATIVE = """Write a relative-position index: T5's buckets, DeBERTa's log buckets or Shaw's clipped distances.

index[i, j] for query i (at position offset + i) and key j, as the framework computes it: t5 is HF
T5Attention._relative_position_bucket of k - q (bidirectional, or --causal for the decoder); deberta is HF
build_relative_position, q - k, log-bucketed with --buckets and --max-distance (values past max_distance keep
growing, as HF's); shaw is tensor2tensor's clip(k - q, -max_distance, max_distance) + max_distance. Every bucket
is exact. --bias FILE gathers a learned table (T5's relative_attention_bias.weight) into bias[h, i, j], HF's
compute_bias without the batch axis.

\b
Examples:
  posenc relative --scheme t5 -Q 512 -o t5_buckets.h
  posenc relative --scheme t5 -Q 1 --offset 99 --causal -o step100.npy     # one decoder step, 99 cached
  posenc relative --scheme deberta -Q 512 --buckets 256 --max-distance 512 -o deberta.npy
  posenc relative --scheme t5 -Q 128 --bias model.safetensors \\
      --key encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight -o t5_bias.npz
"""

WINDOW = """Write window attention's relative-position index (Swin, BEiT, SwinV2) and SwinV2's coordinates.

index is timm's relative_position_index: (HW, HW) for a window of H x W tokens, row-major; beit adds the class
token's row and column ((HW+1, HW+1), its three extra offsets). swinv2 also writes coords, (2H-1, 2W-1, 2), the
log-spaced coordinates its bias MLP reads (--pretrained-window scales them as timm does), each correctly rounded
to float32. --bias FILE gathers a relative_position_bias_table into bias[h, i, j] as the attention adds it.

\b
Examples:
  posenc window --scheme swin -w 7 -o swin_index.h
  posenc window --scheme swinv2 -w 16 --pretrained-window 12 -o swinv2.npz
  posenc window --scheme beit -w 14 -o beit_index.npy
"""
