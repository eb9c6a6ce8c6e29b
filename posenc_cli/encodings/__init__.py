"""Positional-encoding generators.

Currently the sinusoidal table of "Attention Is All You Need" (:mod:`posenc_cli.encodings.sinusoidal`), correctly
rounded to float32 or float64.
"""

from posenc_cli.encodings.sinusoidal import MAX_D_MODEL, MAX_POSITIONS, check_params, sinusoidal, sinusoidal_rows

__all__ = ["MAX_D_MODEL", "MAX_POSITIONS", "check_params", "sinusoidal", "sinusoidal_rows"]
