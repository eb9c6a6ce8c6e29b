"""The one value that crosses posenc's layers: a frozen ``Table``.

A table is a small set of named arrays plus the parameters that produced them and a ``kind``:

- ``kind="sinusoidal"``: one array ``{"pe": (seq_len, d_model)}``, parameters ``seq_len``, ``d_model``, ``base``,
  ``dtype``, ``layout``.
- ``kind="array"``: an array read from a file that records no parameters (a bare ``.npy`` or ``.csv``).

Every writer takes a ``Table``; every reader returns one (safetensors' ``dict[str, ndarray]`` model). Parameters are
plain JSON-able scalars (``int``, ``float``, ``str``, ``bool``) so that every format can store them and their order
never changes what is written: writers sort them.

An array is either a ``numpy.ndarray`` or a :class:`RowSource`, a table whose rows are computed on demand (a
:class:`FileArray` is one whose values are read from an open file). Writers only ever take ``shape``, ``dtype``,
``ndim`` and row slices ``array[lo:hi]`` of an array, so a table far larger than memory streams from the generator to
the file block by block, and ``posenc inspect`` and ``verify`` read a file's table a block at a time.
"""

from __future__ import annotations

import math
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

Param = int | float | str | bool


class RowSource:
    """An array of at least one axis whose rows (slices along its first axis) are computed on demand by
    ``rows(start, stop)``, which returns an ndarray of shape ``(stop - start, *shape[1:])``.

    Supports what writers use: ``shape``, ``dtype``, ``ndim``, ``size``, ``nbytes``, ``len()``, contiguous row
    slices (``source[lo:hi]`` returns a new ndarray), and ``numpy.asarray(source)`` (computes every row).

    Examples
    --------
    >>> src = RowSource((3, 2), "float32", lambda a, b: np.full((b - a, 2), a, np.float32))
    >>> src[1:3].tolist(), src.nbytes
    ([[1.0, 1.0], [1.0, 1.0]], 24)
    """

    def __init__(self, shape: tuple[int, ...], dtype: npt.DTypeLike, rows: Callable[[int, int], np.ndarray]) -> None:
        if not shape:
            raise ValueError("a RowSource has at least one axis")
        self.shape: tuple[int, ...] = tuple(int(n) for n in shape)
        self.dtype = np.dtype(dtype)
        self._rows = rows

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, key: slice) -> np.ndarray:
        if not isinstance(key, slice):
            raise TypeError("a RowSource is read by contiguous row slices, source[lo:hi]")
        lo, hi, step = key.indices(self.shape[0])
        if step != 1:
            raise TypeError("a RowSource is read by contiguous row slices, source[lo:hi]")
        return self._rows(lo, max(lo, hi))

    def __array__(self, dtype: npt.DTypeLike | None = None, copy: bool | None = None) -> np.ndarray:
        whole = self._rows(0, self.shape[0])
        return whole if dtype is None else whole.astype(dtype)

    def __repr__(self) -> str:
        return f"RowSource(shape={self.shape}, dtype={self.dtype})"


class FileArray(RowSource):
    """An array that a file holds, read on demand while the file is open: ``flat(start, stop)`` returns its values
    from C-order position ``start`` to ``stop`` as a new 1-D ndarray in native byte order.

    A reader returns one where it can read an array in parts (:func:`posenc_cli.read.opened`), so that
    ``posenc inspect`` and ``verify`` hold a block of it at a time (:func:`~posenc_cli.formats._blocks.flat_blocks`),
    never the whole array. Rows are flat ranges: ``array[lo:hi]`` reads ``flat(lo * row, hi * row)``.

    Examples
    --------
    >>> values = np.arange(6, dtype=np.int16)
    >>> stored = FileArray((2, 3), np.int16, lambda a, b: values[a:b].copy())
    >>> stored[1:2].tolist(), stored.flat(2, 4).tolist()
    ([[3, 4, 5]], [2, 3])
    """

    def __init__(self, shape: tuple[int, ...], dtype: npt.DTypeLike, flat: Callable[[int, int], np.ndarray]) -> None:
        row = math.prod(shape[1:])
        rest = tuple(int(n) for n in shape[1:])
        super().__init__(shape, dtype, lambda lo, hi: flat(lo * row, hi * row).reshape((hi - lo, *rest)))
        self.flat = flat

    def __repr__(self) -> str:
        return f"FileArray(shape={self.shape}, dtype={self.dtype})"


Array = np.ndarray | RowSource


def array_sha256(array: np.ndarray) -> str:
    """The sha256 of ``array``'s values: its bytes little-endian, in C order (what a ``<key>_sha256`` parameter
    records for an array that parameters cannot regenerate, such as a bias gathered from a checkpoint).

    Examples
    --------
    >>> array_sha256(np.zeros(2, np.int8))[:16]
    '96a296d224f285c6'
    """
    import hashlib

    little = np.ascontiguousarray(array, array.dtype.newbyteorder("<"))
    return hashlib.sha256(little.tobytes()).hexdigest()


@dataclass(frozen=True)
class Table:
    """Named arrays, the parameters that made them, and their kind.

    Parameters
    ----------
    kind : str
        What the arrays are (``"sinusoidal"``, ``"array"``).
    arrays : Mapping[str, numpy.ndarray | RowSource]
        At least one array; ndarrays are made read-only, row sources are kept as they are. Order is kept.
    params : Mapping[str, int | float | str | bool]
        The generating parameters (empty for ``kind="array"``).
    axes : Mapping[str, tuple[str, ...]]
        Optional names of each array's axes (``("seq_len", "head_dim")``): writers name dimensions after them
        (C size macros). See :meth:`axes_of` for the defaults.

    Examples
    --------
    >>> import numpy as np
    >>> t = Table("array", {"x": np.zeros((2, 3), np.float32)})
    >>> t.array.shape
    (2, 3)
    """

    kind: str
    arrays: Mapping[str, Array]
    params: Mapping[str, Param] = field(default_factory=dict)
    axes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.arrays:
            raise ValueError("a Table needs at least one array")
        frozen: dict[str, Array] = {}
        for key, value in self.arrays.items():
            if isinstance(value, RowSource):
                frozen[key] = value
                continue
            array = np.asarray(value)
            if array.flags.writeable:
                array = array.view()
                array.flags.writeable = False
            frozen[key] = array
        object.__setattr__(self, "arrays", types.MappingProxyType(frozen))
        object.__setattr__(self, "params", types.MappingProxyType(dict(self.params)))
        for key, names in self.axes.items():
            if key not in frozen or len(names) != frozen[key].ndim:
                raise ValueError(f"axes for {key!r} must name each axis of an array of the table")
        object.__setattr__(self, "axes", types.MappingProxyType(dict(self.axes)))

    def axes_of(self, key: str) -> tuple[str, ...]:
        """Axis names of ``arrays[key]``: as given, else ``seq_len, d_model`` for 2-D, ``len`` for 1-D, ``dimN``."""
        if key in self.axes:
            return self.axes[key]
        ndim = self.arrays[key].ndim
        return {2: ("seq_len", "d_model"), 1: ("len",)}.get(ndim, tuple(f"dim{i}" for i in range(ndim)))

    def part(self, key: str) -> Table:
        """The table reduced to its array ``key``; ``KeyError`` naming the parts otherwise.

        The parameters are kept and, when the table held several arrays, record ``part=key``: a file that holds one
        array of a RoPE or ALiBi table says which (``posenc verify`` compares it with that part).
        """
        if key not in self.arrays:
            raise KeyError(f"this {self.kind} table has no part {key!r}; its parts are {', '.join(self.arrays)}")
        params = {**self.params, "part": key} if len(self.arrays) > 1 else self.params
        return Table(self.kind, {key: self.arrays[key]}, params, {key: self.axes_of(key)})

    @property
    def array(self) -> Array:
        """The table's only array; ``ValueError`` (a :class:`~posenc_cli.errors.FormatError`) when it holds several."""
        if len(self.arrays) != 1:
            from .errors import FormatError

            raise FormatError(
                f"this {self.kind} table holds {len(self.arrays)} arrays ({', '.join(self.arrays)}) and this format "
                "holds one: pick one with --part (part= in the API), or write .npz, .h5 or C, which hold them all"
            )
        return next(iter(self.arrays.values()))

    @classmethod
    def from_array(cls, array: npt.ArrayLike, key: str = "pe") -> Table:
        """Wrap a bare 2-D array (for example a learned position table) as ``kind="array"``."""
        return cls("array", {key: np.asarray(array)})
