"""Regenerate the sample outputs: a 16 x 8 table in every format, and the other kinds' tables (RoPE, ALiBi, T5's
16 x 16 bucket matrix, Swin's 7 x 7 window index) in C, Rust, ROM images, ONNX and GGUF, written by the real
``posenc`` command.

Run from anywhere: ``python sample_outputs/make_samples.py`` (or pass another directory). The test suite runs the
same commands into a temporary directory and fails when the files here no longer match what the code writes.
"""

from __future__ import annotations

import sys
from pathlib import Path

#: Model configs that samples are made from (an .npz records the fields it read, not the path).
CONFIGS = Path(__file__).resolve().parents[1] / "examples" / "configs"

#: One ``posenc`` argument vector per sample; the file name after ``-o`` is written into the samples directory.
SAMPLES = [
    ["generate", "-n", "16", "-d", "8", "-o", "pe.npy"],
    ["generate", "-n", "16", "-d", "8", "-o", "pe.h5"],
    ["generate", "-n", "16", "-d", "8", "-o", "pe.csv"],
    ["generate", "-n", "16", "-d", "8", "-o", "pe.h"],
    ["generate", "-n", "16", "-d", "8", "-o", "pe_table.c"],
    ["generate", "-n", "16", "-d", "8", "--dtype", "float64", "-o", "pe_f64.h"],
    ["generate", "-n", "16", "-d", "8", "--dtype", "q15", "-o", "pe_q15.h"],
    ["generate", "-n", "16", "-d", "8", "--dtype", "float16", "-o", "pe_f16.h"],
    ["generate", "-n", "16", "-d", "8", "--progmem", "-o", "pe_progmem.h"],
    ["alibi", "-H", "12", "-n", "8", "-o", "alibi.h"],
    ["rope", "-n", "16", "--head-dim", "8", "-o", "rope.h"],
    [
        "rope",
        "-n",
        "16",
        "--head-dim",
        "8",
        "--theta",
        "500000",
        "--scaling",
        "llama3",
        "--factor",
        "8",
        "--original-max-positions",
        "8192",
        "-o",
        "rope_llama3.npz",
    ],
    ["generate", "-n", "16", "-d", "8", "--preset", "fairseq", "-o", "pe_fairseq.csv"],
    ["generate", "-n", "16", "-d", "8", "-o", "pe.safetensors"],
    ["alibi", "-H", "12", "-n", "8", "-o", "alibi.npz"],
    [
        "generate",
        "-n",
        "16",
        "-d",
        "8",
        "--lang",
        "c++",
        "--namespace",
        "posenc",
        "--align",
        "16",
        "-o",
        "pe.hpp",
        "--format",
        "h",
    ],
    ["relative", "--scheme", "t5", "-Q", "16", "-o", "t5_buckets.h"],
    ["rope", "--config", str(CONFIGS / "llama-3.1-8b"), "-n", "16", "-o", "rope_llama31_from_config.npz"],
    [
        "rope",
        "--config",
        str(CONFIGS / "llama-3.1-8b"),
        "-n",
        "16",
        "--arithmetic",
        "framework",
        "-o",
        "rope_llama31_framework.npz",
    ],
    ["window", "--scheme", "swin", "-w", "7", "-o", "swin_index.h"],
    [
        "mrope",
        "-m",
        "qwen2.5-vl",
        "--prompt",
        "text:4,image:1x8x12,text:4,video:2x8x12,text:8",
        "--tokens-per-second",
        "2",
        "-o",
        "mrope_ids_qwen2.5_vl.h",
    ],
    ["rope", "-n", "16", "--head-dim", "8", "-o", "rope.rs"],
    ["generate", "-n", "16", "-d", "8", "-o", "pe.mem"],
    ["generate", "-n", "16", "-d", "8", "--dtype", "fixed18.16", "-o", "pe_fixed18_16.mem"],
    ["generate", "-n", "16", "-d", "8", "--dtype", "q15", "-o", "pe_q15.coe"],
    ["rope", "-n", "16", "--head-dim", "8", "--part", "cos", "-o", "rope_cos.mif"],
    ["rope", "-n", "16", "--head-dim", "8", "-o", "rope.onnx"],
    ["generate", "-n", "16", "-d", "8", "-o", "pe.gguf"],
    ["detr", "-g", "4x6", "-d", "16", "-o", "detr_pos.h"],
    ["axial", "-m", "pixtral", "-g", "4x6", "--head-dim", "16", "-o", "axial_pixtral.h"],
]


def make(directory: Path) -> list[Path]:
    """Write every sample into ``directory``; return the files written."""
    from click.testing import CliRunner

    from posenc_cli.cli import cli

    written = []
    for args in SAMPLES:
        out = args.index("-o") + 1
        argv = [*args[:out], str(directory / args[out]), *args[out + 1 :], "-v"]
        result = CliRunner().invoke(cli, argv, catch_exceptions=False)
        if result.exit_code != 0:
            raise SystemExit(f"posenc {' '.join(args)} failed: {result.stderr}")
        written += [Path(line.split()[1]) for line in result.stderr.splitlines() if line.startswith("wrote ")]
    return written


if __name__ == "__main__":
    here = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    for path in make(here):
        print(path)
