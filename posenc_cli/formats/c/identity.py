"""The table identity that ties the two files of a C pair together: ``<NAME>_TABLE_ID``.

posenc writes a ``.c`` and its ``.h`` (and a ``.bin`` and its ``.h``) one after the other, so an interrupted or
concurrent write can leave the two files of two different tables. Both files therefore carry the identity of the
table they were written for: the ``.h`` defines ``#define <NAME>_TABLE_ID 0x<16 hex digits>``, and the ``.c`` ends
with ``#if !defined(<NAME>_TABLE_ID) || <NAME>_TABLE_ID != 0x...`` / ``#error``, so it does not compile against
the ``.h`` of another table. posenc's reader (:mod:`~posenc_cli.formats.c.reader`) refuses a pair whose files
disagree: a ``.c`` and a ``.h`` of two identities, a ``.bin`` whose values are not those of its ``.h``'s identity
(a ``.bin`` carries none of its own, and the assembler can only check its size).

The identity is the first 8 bytes of BLAKE2b (person ``posenc-table-id``), as a big-endian number, of the canonical
JSON (sorted keys, no spaces, ASCII) of::

    {"version": posenc's version, "kind": the kind line, "params": [each parameter's line (sorted by name)],
     "arrays": [[symbol, its element type, stored dtype, [[size macro, size], ...]], ...] (in the table's order),
     "options": {"name", "lang", "namespace", "align", "progmem", "float_literal", "half_type"},
     "values": BLAKE2b-256 (hex) of every array's stored values}

Every text is spelled as the provenance comment spells it (the kind and each parameter as their whole comment line,
`` *   base: 10000.0``, :func:`~.names.comment_line`), so a reader gets the same identity from a file as the
writer had from the table. The values are each array's stored elements, little-endian, row-major (the bytes of the
``.bin`` without its padding), each array preceded by its byte count as 8 bytes, little-endian: rows computed on
demand and arrays held in memory give one identity. They are hashed as the writer writes them (the ``.c``, or the
``.bin``) and remembered for the second file of the same save, so no table is generated twice. Not covered: the file
names and the command line, which change no compiled value.
"""

from __future__ import annotations

import hashlib
import json
import weakref
from collections.abc import Iterator, Mapping

import numpy as np

from ...table import Array, Table
from .._blocks import row_blocks
from ..options import WriteOptions
from .names import CNames, comment_line, comment_safe

_PERSON = b"posenc-table-id"


class ValuesHash:
    """The BLAKE2b-256 of a table's stored values, fed array by array as a writer walks the rows."""

    def __init__(self) -> None:
        self._hash = hashlib.blake2b(digest_size=32)

    def start(self, array: Array) -> None:
        self._hash.update(int(array.nbytes).to_bytes(8, "little"))

    def update(self, block: np.ndarray) -> None:
        self._hash.update(little_endian(block))

    def hexdigest(self) -> str:
        return self._hash.hexdigest()


def little_endian(block: np.ndarray) -> bytes | memoryview:
    """The stored bytes of ``block``, little-endian, row-major (no copy when they already are)."""
    array = np.ascontiguousarray(block, block.dtype.newbyteorder("<"))
    return array.data.cast("B") if array.flags.c_contiguous and array.dtype.isnative else array.tobytes()


def blocks(table: Table, hasher: ValuesHash | None, key: str) -> Iterator[np.ndarray]:
    """The row blocks of ``table.arrays[key]`` (text writers' size), fed to ``hasher`` on the way."""
    array = table.arrays[key]
    if hasher is not None:
        hasher.start(array)
    for _, block in row_blocks(array, 1 << 20):
        if hasher is not None:
            hasher.update(block)
        yield block


# A save writes the .c (or .bin) and then the .h of the same Table object: the digest of its values, taken while
# the first file was written, is kept (weakly: it goes with the table) for the second.
_DIGESTS: dict[int, tuple[weakref.ref[Table], str]] = {}


def remember(table: Table, digest: str) -> None:
    """Keep ``digest`` as the values digest of ``table`` while the table lives."""
    key = id(table)

    def forget(ref: weakref.ref[Table]) -> None:
        if _DIGESTS.get(key, (None,))[0] is ref:
            del _DIGESTS[key]

    _DIGESTS[key] = (weakref.ref(table, forget), digest)


def values_digest(table: Table) -> str:
    """The digest of ``table``'s values: remembered from its first file, or computed (one pass over the rows)."""
    entry = _DIGESTS.get(id(table))
    if entry is not None and entry[0]() is table:
        return entry[1]
    hasher = ValuesHash()
    for key in table.arrays:
        for _ in blocks(table, hasher, key):
            pass
    remember(table, hasher.hexdigest())
    return hasher.hexdigest()


def table_id(
    table: Table, names: CNames, elements: Mapping[str, str], options: WriteOptions, version: str, digest: str
) -> str:
    """The identity (module docstring) as C writes it: ``0x`` and 16 upper-case hex digits; ``elements`` maps each
    array's key to its element type."""
    description = {
        "version": comment_safe(version),
        "kind": comment_line(f"  kind: {table.kind}"),
        "params": [comment_line(f"  {key}: {table.params[key]}") for key in sorted(table.params)],
        "arrays": [
            [
                names.symbols[key],
                elements[key],
                array.dtype.newbyteorder("<").str,
                [[macro, names.sizes[macro]] for macro in names.dims[key]],
            ]
            for key, array in table.arrays.items()
        ],
        "options": {
            "name": options.name,
            "lang": options.lang,
            "namespace": options.namespace,
            "align": options.align,
            "progmem": options.progmem,
            "float_literal": options.float_literal,
            "half_type": options.c_half_type,  # the digest's key keeps its first name: its bytes never change
        },
        "values": digest,
    }
    text = json.dumps(description, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    value = hashlib.blake2b(text.encode("ascii"), digest_size=8, person=_PERSON).digest()
    return f"0x{value.hex().upper()}"
