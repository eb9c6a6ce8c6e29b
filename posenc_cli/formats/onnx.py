"""ONNX: a model whose graph takes no input and outputs the table's arrays, held as constants (write-only).

Spec: https://onnx.ai/onnx/repo-docs/IR.html (the ONNX IR) and ``onnx/onnx.proto``; checked with
``onnx.checker.check_model(model, full_check=True)`` and run by ``onnx.reference.ReferenceEvaluator``. A table written
here drops into another ONNX graph: ``onnx.compose.merge_models`` wires its outputs to that graph's inputs, which then
read the table as constant initializers, the form every ONNX runtime and TensorRT's ONNX parser take weights in.

Written through the ``onnx`` package, an optional extra (``pip install 'posenc[onnx]'``), imported by :func:`dump`
only; without it the write is refused with a :class:`~posenc_cli.errors.PosencError` that says so. posenc does not
read ``.onnx`` files back (the format's ``load`` is ``None``): a model is a program, not a table.

Layout written (one ``ModelProto``, serialized deterministically):

- ``ir_version`` :data:`IR_VERSION` (8) and one ``opset_import``, the default domain at :data:`OPSET` (17): what
  ONNX 1.12 (2022) writes, so every ``onnx`` since reads it, as does every runtime whose opset reaches 17 (ONNX
  Runtime's version matrix: 1.13 and later). The graph uses no operator, so nothing newer would be gained; graphs
  merged with it must share its IR version and opset (``onnx.version_converter`` converts either).
- ``producer_name`` ``"posenc"``, ``producer_version`` posenc's version, a fixed ``doc_string``; no timestamp, no
  path, nothing that differs between two runs: the same table gives the same bytes.
- ``graph``: named after the table (the ``name`` write option: ``--name``, else the output's stem), with no node and
  no input. Each array of the table, in the table's order, is one ``initializer`` (a ``TensorProto``: the array's
  shape as ``dims``, its little-endian C-order bytes as ``raw_data``) and one graph ``output`` of the same name, type
  and shape. An output may name an initializer directly (IR version 4 and later let initializers be constants,
  not inputs, and the checker accepts them as graph outputs), so there is no ``Identity`` node to run and each
  output carries exactly the array's name.
- ``metadata_props``, sorted by key, each value canonical JSON (sorted keys, no spaces, ASCII): ``posenc.kind``
  the table's kind (``"rope"``), and ``posenc.params.<name>`` for each of its parameters (``posenc.params.dtype``:
  ``"q15"``, ``posenc.params.seq_len``: ``4096``). Read them back with
  ``{p.key: json.loads(p.value) for p in onnx.load(path).metadata_props}``.

Element types (posenc element type -> ONNX ``TensorProto`` type; each array by its own storage):

==================================  ======================================================================
float32, float64, float16           ``FLOAT``, ``DOUBLE``, ``FLOAT16``
bfloat16 (``uint16`` bit patterns)  ``BFLOAT16``: the bits as they are, where the table's ``dtype``
                                    parameter is ``bfloat16``; any other ``uint16`` array is ``UINT16``
q15, q7, fixed<T>.<F>               the integer type that stores them (``INT16``, ``INT8``, the smallest
                                    integer type that holds ``T`` bits); the real value is ``code / 2**F``
                                    (``posenc.params.dtype`` names the type)
int8 with a scale                   ``INT8``; the value is ``(code - zero_point) * scale``, both in
                                    ``posenc.params``
index tables (int8 to int64)        ``INT8``, ``INT16``, ``INT32``, ``INT64``
arrays read from other files        also ``BOOL``, ``UINT8``, ``UINT16``, ``UINT32``, ``UINT64``
==================================  ======================================================================

Any other element type (complex, the 8-bit floats) is refused with :class:`~posenc_cli.errors.FormatError`.

Names: ONNX names are strings, not source identifiers (the IR allows any UTF-8 text), so an array's key is kept as
it is (``model.embed_positions.weight``, ``cos_long``) and nothing posenc writes here is ever pasted into code. A
key may still come from a hostile file, so one that is empty (ONNX's name for "absent"), or holds a character that is
not printable (``str.isprintable``: control characters, newlines, bidirectional overrides and other format
characters, lone surrogates that are no UTF-8), is refused with :class:`~posenc_cli.errors.FormatError` naming it; so
is such a parameter name, since it becomes a metadata key.

Size: a protobuf message holds at most 2 GiB (:data:`MAX_BYTES`), and posenc writes no external-data files (it never
writes outside the one output), so a table whose arrays take more is refused before any of it is computed: write
``.safetensors``, ``.npz`` or ``.gguf`` for those, or fewer positions. Building the model holds the whole table in
memory (protobuf has no streaming writer).
"""

from __future__ import annotations

import json
import math
from typing import Any, BinaryIO

import numpy as np  # noqa: F401  (the docstring examples use it)

from .._version import __version__
from ..dtypes import element_of
from ..errors import FormatError, PosencError
from ..system.capacity import human
from ..table import Array, Table
from ._blocks import raw_bytes, row_blocks
from .options import WriteOptions

__all__ = ["IR_VERSION", "MAX_BYTES", "MISSING_ONNX", "OPSET", "dump", "metadata", "onnx_type"]

#: ONNX IR version 8 (ONNX 1.10 to 1.13 write it): read by every onnx and runtime of the last years.
IR_VERSION = 8
#: The default domain's opset: 17 (ONNX 1.12, 2022, within IR 8).
OPSET = 17
#: The largest serialized protobuf message: 2 GiB less one byte (protobuf's signed 32-bit sizes).
MAX_BYTES = (1 << 31) - 1
#: The one line a user sees when the optional dependency is missing.
MISSING_ONNX = "writing .onnx needs the onnx package: pip install 'posenc[onnx]'"
#: The prefix of every metadata key posenc writes.
PREFIX = "posenc."

#: numpy storage (little-endian) -> ``onnx.TensorProto`` data type name; ``<u2`` is ``BFLOAT16`` in bfloat16 tables.
_TYPES = {
    "<f4": "FLOAT",
    "<f8": "DOUBLE",
    "<f2": "FLOAT16",
    "|i1": "INT8",
    "<i2": "INT16",
    "<i4": "INT32",
    "<i8": "INT64",
    "|u1": "UINT8",
    "<u2": "UINT16",
    "<u4": "UINT32",
    "<u8": "UINT64",
    "|b1": "BOOL",
}


def onnx_type(table: Table, key: str) -> str:
    """The ONNX ``TensorProto`` data type name of ``table.arrays[key]``; ``FormatError`` for a type ONNX is not given.

    Examples
    --------
    >>> onnx_type(Table("rope", {"cos": np.zeros(2, np.uint16)}, {"dtype": "bfloat16"}), "cos")
    'BFLOAT16'
    >>> onnx_type(Table("relative", {"index": np.zeros(2, np.int16)}, {"dtype": "int16"}), "index")
    'INT16'
    """
    array = table.arrays[key]
    storage = array.dtype.newbyteorder("<").str
    if storage == "<u2" and element_of(table.params, array.dtype) == "bfloat16":
        return "BFLOAT16"
    if storage not in _TYPES:
        raise FormatError(
            f"array {key!r} holds {array.dtype}, which posenc does not write to .onnx; it writes bool, 8- to 64-bit "
            "integers, float16, float32, float64 and the uint16 bits of bfloat16 tables"
        )
    return _TYPES[storage]


def _check_name(name: str, what: str) -> str:
    """``name`` when it can be an ONNX name or metadata key as it is: not empty, every character printable."""
    if not name or not name.isprintable():
        problem = "is empty" if not name else "holds a character that is not printable"
        raise FormatError(
            f"{what} {name!r} {problem}, so it cannot name anything in an .onnx file; posenc keeps ONNX names as they "
            "are and takes any printable text"
        )
    return name


def _canonical(value: object, what: str) -> str:
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError):  # NaN, infinity, a value that is no JSON scalar
        raise FormatError(f"{what} is {value!r}, which JSON cannot hold") from None


def metadata(table: Table) -> list[tuple[str, str]]:
    """The ``metadata_props`` of ``table``'s model: ``(key, JSON value)`` pairs, sorted by key.

    Examples
    --------
    >>> metadata(Table("alibi", {"slopes": np.ones(2, np.float32)}, {"heads": 2, "dtype": "float32"}))
    [('posenc.kind', '"alibi"'), ('posenc.params.dtype', '"float32"'), ('posenc.params.heads', '2')]
    """
    pairs = [(f"{PREFIX}kind", _canonical(table.kind, "the table's kind"))]
    for name, value in table.params.items():
        key = f"{PREFIX}params.{_check_name(name, 'parameter')}"
        pairs.append((key, _canonical(value, f"parameter {name!r}")))
    return sorted(pairs)


def _check_size(table: Table) -> None:
    """Refuse, from the shapes alone, a table too large for one protobuf message."""
    data = sum(math.prod(array.shape) * array.dtype.itemsize for array in table.arrays.values())
    if data > MAX_BYTES:
        raise FormatError(
            f"this table's arrays take {human(data)}, and an .onnx file holds at most {human(MAX_BYTES + 1)} "
            "(protobuf's limit; posenc writes no external-data files): write .safetensors, .npz or .gguf, or make "
            "the table smaller"
        )


def _raw(array: Array) -> bytes:
    """``array``'s little-endian C-order bytes, gathered block by block."""
    dtype = array.dtype.newbyteorder("<")
    if array.ndim == 0:
        return bytes(raw_bytes(array, dtype))
    return b"".join(raw_bytes(block, dtype) for _, block in row_blocks(array))


def _import_onnx() -> tuple[Any, Any]:
    """The ``onnx`` package and its ``helper`` module; ``PosencError`` with the install hint without them."""
    try:
        import onnx
        from onnx import helper
    except ImportError:
        raise PosencError(MISSING_ONNX) from None
    return onnx, helper


def dump(table: Table, fp: BinaryIO, options: WriteOptions) -> None:
    """Write ``table`` to ``fp`` as an ONNX model whose outputs are its arrays (see the module docstring).

    Raises
    ------
    PosencError
        The ``onnx`` package is not installed.
    FormatError
        An array name or element type ONNX cannot hold, or a table larger than :data:`MAX_BYTES`.

    Examples
    --------
    >>> import io, onnx
    >>> buffer = io.BytesIO()
    >>> dump(Table("array", {"x": np.ones(3, np.float32)}), buffer, WriteOptions())
    >>> [o.name for o in onnx.load_from_string(buffer.getvalue()).graph.output]
    ['x']
    """
    types = {key: onnx_type(table, key) for key in table.arrays}
    for key in table.arrays:
        _check_name(key, "array")
    props = metadata(table)
    _check_size(table)
    onnx, helper = _import_onnx()

    initializers, outputs = [], []
    for key, array in table.arrays.items():
        data_type = getattr(onnx.TensorProto, types[key])
        shape = [int(n) for n in array.shape]
        tensor = onnx.TensorProto(name=key, data_type=data_type, dims=shape)
        tensor.raw_data = _raw(array)
        initializers.append(tensor)
        outputs.append(helper.make_tensor_value_info(key, data_type, shape))
    graph = helper.make_graph([], options.name, [], outputs, initializer=initializers)
    model = helper.make_model(
        graph,
        ir_version=IR_VERSION,
        opset_imports=[helper.make_opsetid("", OPSET)],
        producer_name="posenc",
        producer_version=__version__,
        doc_string=f"A positional-encoding table generated by posenc {__version__}: each graph output is one of its "
        "arrays; its kind and parameters are the posenc.* metadata.",
    )
    for key, value in props:
        model.metadata_props.add(key=key, value=value)
    if model.ByteSize() > MAX_BYTES:
        raise FormatError(
            f"this table's model takes {human(model.ByteSize())}, more than the {human(MAX_BYTES + 1)} an .onnx file "
            "holds (protobuf's limit): write .safetensors, .npz or .gguf, or make the table smaller"
        )
    fp.write(model.SerializeToString(deterministic=True))
