"""GGUF (llama.cpp, ggml): the table's arrays as tensors, its kind and parameters as metadata (write-only).

Spec: https://github.com/ggml-org/ggml/blob/master/docs/gguf.md (GGUF version 3), and llama.cpp's reader
(``ggml/src/gguf.cpp``), whose checks this writer meets; read back in posenc's tests by the ``gguf`` package's
``GGUFReader`` (llama.cpp's gguf-py). Writing needs no package. posenc does not read ``.gguf`` files (the format's
``load`` is ``None``).

The writer is posenc's own, with no dependency: GGUF is a short list of little-endian records, the layout below is
all there is to it, and a writer that places every byte itself is reproducible by construction (the same table gives
the same bytes), needs nothing installed to write, and streams a table far larger than memory into the file block by
block (``gguf.GGUFWriter`` takes each tensor as one whole ndarray).

Layout written (all integers little-endian; a string is its UTF-8 length as ``uint64``, then its bytes, no NUL)::

    "GGUF"  uint32 3  uint64 tensor_count  uint64 metadata_kv_count
    metadata, sorted by key:  string key, uint32 value type, value
    tensor infos, in the table's order:  string name, uint32 n_dims, uint64 ne[n_dims], uint32 ggml type,
                                         uint64 offset (from the start of the data, a multiple of ALIGN)
    0x00 padding to a multiple of ALIGN (from the start of the file)
    each tensor's data, little-endian, ggml order, then 0x00 padding to a multiple of ALIGN (the last one too)

Dimensions: ggml lists a tensor's sizes fastest-varying first, ``ne[0]`` the length of a row, the reverse of numpy's
``shape``. A numpy array of ``shape`` ``(rows, cols)`` (C order, the last axis contiguous) is written with
``ne = [cols, rows]``, ``(a, b, c)`` with ``ne = [c, b, a]``; the bytes are the array's C-order bytes unchanged. A
sinusoidal table ``pe`` of ``(seq_len, d_model)`` is therefore ``ne = [d_model, seq_len]``, the shape llama.cpp
gives ``position_embd`` (``{n_embd, n_ctx_train}``). ``GGUFReader`` reports ``ne`` as ``tensor.shape`` and hands
the data back in numpy order (``tensor.data.shape == (rows, cols)``). At most :data:`MAX_DIMS` dimensions (ggml's
``GGML_MAX_DIMS``); a 0-d array is ``n_dims`` 0 (ggml reads it as one element); an array with an empty dimension is
refused, since ggml tensors are never empty (llama.cpp's reader divides by each size).

Metadata (GGUF value types in brackets):

- ``general.architecture`` [string] ``"posenc"``: the spec requires the key, and a table is no model llama.cpp can
  run, so it names no model architecture: llama.cpp's model loader refuses the file as an unknown architecture
  instead of misreading it. posenc's own keys then carry the architecture's prefix, as the spec's namespacing asks.
  A table of ``posenc rope --runtime llama.cpp`` names its ``gguf_arch`` instead (``llama``, ``qwen2``, ``qwen3``,
  ``phi3``), since llama.cpp and gguf-py read ``{arch}.*`` keys only under the architecture this key names (the
  loader formats every key it reads with it): with ``"posenc"`` there, ``llama.rope.freq_base`` would be a key no
  reader of a Llama file asks for. llama.cpp's loader still refuses the file as a model, now for the keys and
  tensors every model has and a table has not (``{arch}.embedding_length``, ``{arch}.block_count``,
  ``token_embd.weight``), so nothing is misread either way.
- llama.cpp's RoPE keys, for a ``--runtime llama.cpp`` table only (:mod:`posenc_cli.formats.gguf_llama`, a fixed
  mapping): ``{arch}.context_length``, ``{arch}.rope.dimension_count``, ``{arch}.rope.scaling.original_context_length``
  [uint32], ``{arch}.rope.freq_base``, ``{arch}.rope.scaling.factor``, ``{arch}.rope.scaling.attn_factor``,
  ``{arch}.rope.scaling.yarn_beta_fast``, ``{arch}.rope.scaling.yarn_beta_slow`` [float32],
  ``{arch}.rope.scaling.type`` [string], each where the table records it (``gguf_context_length`` and the rest),
  with the types gguf-py's ``GGUFWriter.add_*`` methods give them.
- ``general.name`` [string]: the table's name (the ``name`` write option: ``--name``, else the output's stem).
- ``general.alignment`` [uint32] :data:`ALIGN`.
- ``posenc.generator`` [string] ``"posenc X.Y.Z"``; ``posenc.kind`` [string] the table's kind (``"rope"``).
- ``posenc.arrays`` [array of string]: the table's key of each tensor, in tensor order (a tensor named as llama.cpp
  names it, below, says here which array it is).
- ``posenc.params.<name>`` for each parameter: strings [string], booleans [bool], integers [int64], floats
  [float64] (exact). ``posenc.params.dtype`` names the element type, and with ``scale`` and ``zero_point`` decodes
  the integer-coded ones (q15, q7, fixed point, int8).

Tensor types (posenc element type -> ggml type; each array by its own storage): float32 ``F32``, float64 ``F64``,
float16 ``F16``, bfloat16 ``BF16`` (posenc's ``uint16`` bit patterns, where the table's ``dtype`` parameter is
``bfloat16``), q15 ``I16``, q7 ``I8``, ``fixed<T>.<F>`` the integer that stores it (``I8`` to ``I64``; the value is
``code / 2**F``), int8 with a scale ``I8`` (the value is ``(code - zero_point) * scale``), the index types int8 to
int64 ``I8``, ``I16``, ``I32``, ``I64``. GGUF has no unsigned or boolean tensor type: any other array (a ``uint16``
one in a table that is not bfloat16, ``uint8``, ``bool``, complex) is refused with
:class:`~posenc_cli.errors.FormatError`.

Tensor names: llama.cpp's name where a posenc array is exactly what llama.cpp keeps under it (gguf-py's
``MODEL_TENSOR`` names, :data:`LLAMA_TENSORS`), else the array's own key:

- a sinusoidal table's ``pe`` is ``position_embd.weight``: llama.cpp's absolute position embedding (GPT-2's ``wpe``,
  BERT's ``position_embeddings``), one row of ``n_embd`` values per position, added to the token embeddings; row
  ``i`` is row ``i`` of posenc's table (a fairseq preset's offset rows included: see its parameters). An integer
  element type (q15, int8) keeps the name too; llama.cpp's graphs add the rows to float activations, so such a file
  is for readers that decode it from the metadata.
- RoPE's ``inv_freq`` keeps its key: llama.cpp's ``rope_freqs.weight`` is not the inverse frequencies but the
  per-frequency factors that divide them (``ggml_rope_ext``'s ``freq_factors``: 1 where unscaled, ``factor`` where
  fully scaled, as llama.cpp's converter computes them for Llama 3), so ``inv_freq`` there would be read as
  divisors. posenc's ``cos_long``/``sin_long`` caches have no llama.cpp tensor (it computes them).
- a ``--runtime llama.cpp`` table's 1-D ``rope_freqs``, ``rope_factors_long`` and ``rope_factors_short`` are
  ``rope_freqs.weight``, ``rope_factors_long.weight`` and ``rope_factors_short.weight``
  (:data:`posenc_cli.formats.gguf_llama.TENSORS`): exactly the tensors llama.cpp's converter writes (Llama 3's
  divisors; Phi-3's LongRoPE factor lists, which other RoPE tables record as parameters).
- every other array (RoPE's ``cos``/``sin``, ALiBi's ``slopes`` and ``bias``, a sincos2d ``pe``, relative and window
  ``index`` tables, ``coords``) keeps its key: llama.cpp computes ALiBi and RoPE itself and keeps no such tables.
  (Its vision encoders' ``v.position_embd.weight`` lives only in multimodal projector files, whose loader needs a
  whole vision tower around it.)

A key may come from a hostile file: GGUF strings carry their length, so no name can break the layout, but a tensor
name that is empty, holds a character that is not printable (``str.isprintable``: NUL, which ggml's C strings would
cut at, control characters, bidirectional overrides, lone surrogates that are no UTF-8), or is longer than
:data:`MAX_NAME` bytes of UTF-8 (ggml's ``GGML_MAX_NAME`` is 64 with the NUL; llama.cpp refuses longer names), and
two arrays with one tensor name, are refused with :class:`~posenc_cli.errors.FormatError`. Parameter names must be
``lower_snake_case`` ASCII (the spec's rule for key segments), parameter values valid UTF-8 and integers within
int64; anything else is refused the same way, never changed.
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Iterable
from typing import BinaryIO

import numpy as np  # noqa: F401  (the docstring examples use it)

from .._version import __version__
from ..dtypes import element_of
from ..errors import FormatError
from ..table import Array, Param, Table
from . import gguf_llama
from ._blocks import raw_bytes, row_blocks
from .options import WriteOptions

__all__ = [
    "ALIGN",
    "ARCHITECTURE",
    "GGML_TYPES",
    "LLAMA_TENSORS",
    "MAX_DIMS",
    "MAX_NAME",
    "VERSION",
    "dump",
    "ggml_type",
    "header",
    "metadata",
    "tensor_names",
]

MAGIC = b"GGUF"
#: The GGUF version written: 3, the current one (64-bit counts and sizes), the only one llama.cpp writes.
VERSION = 3
#: Data alignment: GGUF's default (``GGUF_DEFAULT_ALIGNMENT``), so a reader that ignores ``general.alignment`` agrees.
ALIGN = 32
#: The longest tensor name in bytes of UTF-8: ggml's ``GGML_MAX_NAME`` (64) less the terminating NUL.
MAX_NAME = 63
#: The most dimensions of one tensor: ggml's ``GGML_MAX_DIMS``.
MAX_DIMS = 4
#: ``general.architecture``: posenc's namespace, no model's.
ARCHITECTURE = "posenc"
#: The prefix of posenc's own metadata keys.
PREFIX = f"{ARCHITECTURE}."

#: numpy storage (little-endian) -> ``(ggml type name, ggml_type value)``; ``<u2`` is ``BF16`` in bfloat16 tables.
GGML_TYPES: dict[str, tuple[str, int]] = {
    "<f4": ("F32", 0),
    "<f2": ("F16", 1),
    "|i1": ("I8", 24),
    "<i2": ("I16", 25),
    "<i4": ("I32", 26),
    "<i8": ("I64", 27),
    "<f8": ("F64", 28),
}
_BF16 = ("BF16", 30)

#: ``(table kind, array key) -> tensor name`` for the arrays that are exactly what llama.cpp keeps under its name.
LLAMA_TENSORS: dict[tuple[str, str], str] = {("sinusoidal", "pe"): "position_embd.weight"}

# GGUF metadata value types (``gguf_type``).
_UINT32, _FLOAT32, _BOOL, _STRING, _ARRAY, _INT64, _FLOAT64 = 4, 6, 7, 8, 9, 11, 12
#: One segment of a GGUF key: ``lower_snake_case`` ASCII.
_SEGMENT = re.compile(r"[a-z0-9_]+")
#: The longest key the spec allows, in bytes.
_MAX_KEY = (1 << 16) - 1


class UInt32(int):
    """A metadata integer written as GGUF's ``uint32`` (``general.alignment``: llama.cpp reads it as one)."""


class Float32(float):
    """A metadata number written as GGUF's ``float32`` (llama.cpp's RoPE keys: its loader reads them as ``float``),
    rounded to nearest; the caller has checked it is within float32's range."""


Value = str | bool | int | float | list[str]


def ggml_type(table: Table, key: str) -> tuple[str, int]:
    """The ggml type ``(name, value)`` of ``table.arrays[key]``; ``FormatError`` for a type GGUF has no tensor for.

    Examples
    --------
    >>> ggml_type(Table("rope", {"cos": np.zeros(2, np.uint16)}, {"dtype": "bfloat16"}), "cos")
    ('BF16', 30)
    >>> ggml_type(Table("sinusoidal", {"pe": np.zeros(2, np.int16)}, {"dtype": "q15"}), "pe")
    ('I16', 25)
    """
    array = table.arrays[key]
    storage = array.dtype.newbyteorder("<").str
    if storage == "<u2" and element_of(table.params, array.dtype) == "bfloat16":
        return _BF16
    if storage not in GGML_TYPES:
        raise FormatError(
            f"array {key!r} holds {array.dtype}, which GGUF has no tensor type for; posenc writes float16, float32, "
            "float64, 8- to 64-bit signed integers and the uint16 bits of bfloat16 tables to .gguf"
        )
    return GGML_TYPES[storage]


def _utf8(text: str, what: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise FormatError(f"{what} {text!r} is not valid UTF-8 text, which GGUF strings must be") from None


def tensor_names(table: Table) -> list[str]:
    """The tensor name of each array of ``table``, in its order: llama.cpp's (:data:`LLAMA_TENSORS`) or the key,
    checked (see the module docstring).

    Examples
    --------
    >>> tensor_names(Table("sinusoidal", {"pe": np.zeros((2, 4), np.float32)}))
    ['position_embd.weight']
    >>> tensor_names(Table("rope", {"cos": np.zeros((2, 4)), "inv_freq": np.zeros(2)}))
    ['cos', 'inv_freq']
    """
    names: dict[str, str] = {}
    for key, array in table.arrays.items():
        name = LLAMA_TENSORS.get((table.kind, key), key) if array.ndim == 2 else key
        name = gguf_llama.tensor_name(table.params, key, array.ndim) or name
        if not name or not name.isprintable():
            problem = "is empty" if not name else "holds a character that is not printable"
            raise FormatError(f"array {key!r}: its tensor name {name!r} {problem}; GGUF tensor names are text")
        size = len(_utf8(name, "tensor name"))
        if size > MAX_NAME:
            raise FormatError(
                f"array {key!r}: its tensor name takes {size} bytes of UTF-8, and ggml's are at most {MAX_NAME} "
                "(GGML_MAX_NAME, 64 with the NUL; llama.cpp refuses longer ones)"
            )
        if name in names:
            raise FormatError(f"arrays {names[name]!r} and {key!r} would both be the GGUF tensor {name!r}")
        names[name] = key
    return list(names)


def _ne(key: str, array: Array) -> list[int]:
    """ggml's ``ne`` of ``array``: its shape reversed, checked."""
    shape = [int(n) for n in array.shape]
    if len(shape) > MAX_DIMS:
        raise FormatError(f"array {key!r} has {len(shape)} dimensions, and a ggml tensor at most {MAX_DIMS}")
    if 0 in shape:
        raise FormatError(f"array {key!r} of shape {tuple(shape)} is empty, and a ggml tensor never is")
    return shape[::-1]


def metadata(table: Table, options: WriteOptions) -> dict[str, Value]:
    """The metadata of ``table``'s file, by key (written in sorted order).

    Examples
    --------
    >>> meta = metadata(Table("alibi", {"slopes": np.ones(2, np.float32)}, {"heads": 2}), WriteOptions(name="ab"))
    >>> sorted(meta)
    ['general.alignment', 'general.architecture', 'general.name', 'posenc.arrays', 'posenc.generator', \
'posenc.kind', 'posenc.params.heads']
    >>> meta["posenc.arrays"], meta["posenc.params.heads"]
    (['slopes'], 2)
    """
    arch = gguf_llama.architecture(table.params)
    meta: dict[str, Value] = {
        "general.architecture": arch or ARCHITECTURE,
        "general.name": options.name,
        "general.alignment": UInt32(ALIGN),
        f"{PREFIX}generator": f"posenc {__version__}",
        f"{PREFIX}kind": table.kind,
        f"{PREFIX}arrays": list(table.arrays),
    }
    for name, value in table.params.items():
        key = f"{PREFIX}params.{name}"
        if not _SEGMENT.fullmatch(name) or len(key) > _MAX_KEY:
            raise FormatError(
                f"parameter {name!r} cannot be a GGUF key: its segments must be lower_snake_case ASCII "
                f"(a-z, 0-9, _) and the whole key at most {_MAX_KEY} bytes"
            )
        meta[key] = value
    for key, (kind, value) in gguf_llama.keys(table.params).items():
        meta[key] = UInt32(value) if kind == "uint32" else Float32(value) if kind == "float32" else value
    return meta


def _string(text: str, what: str) -> bytes:
    data = _utf8(text, what)
    return struct.pack("<Q", len(data)) + data


def _value(key: str, value: Value | Param) -> bytes:
    """The value type and value of one metadata entry."""
    if isinstance(value, UInt32):
        return struct.pack("<II", _UINT32, value)
    if isinstance(value, Float32):
        return struct.pack("<If", _FLOAT32, value)
    if isinstance(value, bool):
        return struct.pack("<IB", _BOOL, int(value))
    if isinstance(value, int):
        if not -(1 << 63) <= value < 1 << 63:
            raise FormatError(f"metadata {key!r} is {value}, outside the int64 range GGUF integers take")
        return struct.pack("<Iq", _INT64, value)
    if isinstance(value, float):
        return struct.pack("<Id", _FLOAT64, value)
    if isinstance(value, str):
        return struct.pack("<I", _STRING) + _string(value, f"metadata {key!r}")
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        items = b"".join(_string(item, f"an entry of metadata {key!r}") for item in value)
        return struct.pack("<IIQ", _ARRAY, _STRING, len(value)) + items
    raise FormatError(f"metadata {key!r} is {value!r}; GGUF metadata here is text, a boolean, an integer or a float")


def _padding(size: int) -> bytes:
    return b"\0" * (-size % ALIGN)


def header(table: Table, options: WriteOptions) -> bytes:
    """Everything before the first tensor's data: the header, the metadata, the tensor infos and the padding.

    Examples
    --------
    >>> head = header(Table("array", {"x": np.zeros((2, 3), np.float32)}), WriteOptions())
    >>> head[:4], int.from_bytes(head[4:8], "little"), len(head) % ALIGN
    (b'GGUF', 3, 0)
    """
    types = [ggml_type(table, key) for key in table.arrays]
    names = tensor_names(table)
    shapes = [_ne(key, array) for key, array in table.arrays.items()]
    meta = metadata(table, options)
    parts = [MAGIC, struct.pack("<IQQ", VERSION, len(names), len(meta))]
    parts += [_string(key, "metadata key") + _value(key, meta[key]) for key in sorted(meta)]
    offset = 0
    for name, ne, (_, code), array in zip(names, shapes, types, table.arrays.values(), strict=True):
        parts.append(_string(name, "tensor name") + struct.pack(f"<I{len(ne)}QIQ", len(ne), *ne, code, offset))
        size = math.prod(ne) * array.dtype.itemsize
        offset += size + len(_padding(size))
    head = b"".join(parts)
    return head + _padding(len(head))


def _blocks(array: Array) -> Iterable[memoryview]:
    dtype = array.dtype.newbyteorder("<")
    if array.ndim == 0:
        yield raw_bytes(array, dtype)
        return
    for _, block in row_blocks(array):
        yield raw_bytes(block, dtype)


def dump(table: Table, fp: BinaryIO, options: WriteOptions) -> None:
    """Write ``table`` to ``fp`` as GGUF version 3, block by block (see the module docstring).

    Raises
    ------
    FormatError
        An array GGUF cannot hold (type, dimensions, emptiness), or a name or parameter it cannot name.

    Examples
    --------
    >>> import io
    >>> buffer = io.BytesIO()
    >>> dump(Table("array", {"x": np.ones((2, 3), np.float32)}), buffer, WriteOptions())
    >>> len(buffer.getvalue()) % ALIGN, buffer.getvalue()[-32:-8] == np.ones(6, "<f4").tobytes()
    (0, True)
    """
    fp.write(header(table, options))
    for array in table.arrays.values():
        size = 0
        for data in _blocks(array):
            fp.write(data)
            size += len(data)
        fp.write(_padding(size))
