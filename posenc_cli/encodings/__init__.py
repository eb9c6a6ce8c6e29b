"""Positional-encoding generators: numpy in, numpy out, every value the exact value rounded once.

- :mod:`~posenc_cli.encodings.sinusoidal`: the table of "Attention Is All You Need".
- :mod:`~posenc_cli.encodings.sinusoid`: the general sinusoid engine behind it (any column layout, frequency
  denominator, fractional or strided positions, amplitude) that framework presets are built on.
- :mod:`~posenc_cli.encodings.alibi`: ALiBi slopes and bias.

The output element types they round to are :mod:`posenc_cli.dtypes`, a value shared with formats/ (which never
imports this package).
"""

from posenc_cli.encodings.sinusoid import MAX_POSITION, Columns, check_sinusoid, sinusoid_columns, sinusoid_rows
from posenc_cli.encodings.sinusoidal import MAX_D_MODEL, MAX_POSITIONS, check_params, sinusoidal, sinusoidal_rows

__all__ = [
    "MAX_D_MODEL",
    "MAX_POSITION",
    "MAX_POSITIONS",
    "Columns",
    "check_params",
    "check_sinusoid",
    "sinusoid_columns",
    "sinusoid_rows",
    "sinusoidal",
    "sinusoidal_rows",
]
