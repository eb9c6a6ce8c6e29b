"""Regenerate the sample outputs: a 16 x 8 table in every format, written by the real ``posenc`` command.

Run from anywhere: ``python sample_outputs/make_samples.py`` (or pass another directory). The test suite runs the
same commands into a temporary directory and fails when the files here no longer match what the code writes.
"""

from __future__ import annotations

import sys
from pathlib import Path

#: One ``posenc`` argument vector per sample; the output file name comes last.
SAMPLES = [
    ["generate", "-n", "16", "-d", "8", "-o", "pe.npy"],
    ["generate", "-n", "16", "-d", "8", "-o", "pe.h5"],
    ["generate", "-n", "16", "-d", "8", "-o", "pe.csv"],
    ["generate", "-n", "16", "-d", "8", "-o", "pe.h"],
    ["generate", "-n", "16", "-d", "8", "-o", "pe_table.c"],
    ["generate", "-n", "16", "-d", "8", "--dtype", "float64", "-o", "pe_f64.h"],
]


def make(directory: Path) -> list[Path]:
    """Write every sample into ``directory``; return the files written."""
    from click.testing import CliRunner

    from posenc_cli.cli import cli

    written = []
    for args in SAMPLES:
        result = CliRunner().invoke(cli, [*args[:-1], str(directory / args[-1]), "-v"], catch_exceptions=False)
        if result.exit_code != 0:
            raise SystemExit(f"posenc {' '.join(args)} failed: {result.stderr}")
        written += [Path(line.split()[1]) for line in result.stderr.splitlines() if line.startswith("wrote ")]
    return written


if __name__ == "__main__":
    here = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    for path in make(here):
        print(path)
