"""Numbers as text: what every text format (CSV, C, Rust, the ROM images' comments) writes for a value.

- :mod:`~posenc_cli.formats.text.floats`: float32 and float64 values as the shortest decimal that reads back to
  the identical value, always with a ``.`` or an exponent, byte for byte NumPy's and Python's own spelling (its
  docstring is that contract, which files must keep from release to release and machine to machine), made with
  NumPy array operations over worker threads;
- :mod:`~posenc_cli.formats.text.spell`: every element type as decimal text (float16 and bfloat16 by the shortest
  decimal that reads back to the same bits, the fixed-point codes and plain integers as integers), and which
  element type each array of a table is.

The fast float32 path is three steps, each a private module of this package: the digits
(:mod:`~posenc_cli.formats.text._digits`), the text in 16-byte records (:mod:`~posenc_cli.formats.text._records`),
and the bytes (:mod:`~posenc_cli.formats.text._emit`), on the working memory and threads of
:mod:`~posenc_cli.formats.text._work`. Where posenc was built with its optional C extension ``posenc_cli._ctext``,
float32 and float64 blocks go through it instead, to the same bytes (the floats module's docstring says how).
"""
