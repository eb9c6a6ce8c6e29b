"""posenc's Python API: make a table, save it in any registered format, load it back.

>>> import posenc_cli
>>> pe = posenc_cli.sinusoidal(16, 8)                      # numpy array, float32, correctly rounded
>>> table = posenc_cli.generate(seq_len=16, d_model=8)     # the same values as a Table with its parameters
>>> paths = posenc_cli.save(table, "pe.h")                 # doctest: +SKIP
>>> posenc_cli.load("pe.npy").array.shape                  # doctest: +SKIP
(16, 8)

This layer knows paths: it picks the format (explicitly or from the suffix), names the table, and writes every file
atomically through :mod:`posenc_cli._atomic`. It never prints and never exits; errors are
:class:`~posenc_cli.errors.PosencError` subclasses.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Union

import numpy as np

from . import _atomic, _resources
from .dtypes import ElementType
from .encodings import alibi as alibi_encoding
from .encodings import check_params, presets, sinusoidal, sinusoidal_rows
from .encodings import rope as rope_encoding
from .encodings import sincos2d as sincos2d_encoding
from .errors import FormatError, SpecError
from .formats import C_OPTIONS, FORMATS, Format, WriteOptions, by_name, check_options, infer
from .formats.limits import Budget
from .formats.options import check_name, name_from_path
from .table import Array, Param, RowSource, Table

PathLike = Union[str, "os.PathLike[str]"]

#: The keyword arguments of :func:`save` that shape C output.

__all__ = ["Output", "alibi", "convert", "generate", "load", "plan", "rope", "save", "sincos2d", "sinusoidal"]


def generate(
    seq_len: int,
    d_model: int,
    *,
    base: float | None = None,
    dtype: str = "float32",
    scale: float | None = None,
    zero_point: int | None = None,
    lazy: bool = False,
    preset: str | None = None,
    layout: str | None = None,
    freq_shift: float | None = None,
    min_timescale: float | None = None,
    odd: str | None = None,
    start: float | None = None,
    step: float | None = None,
    padding_idx: int | None = None,
    no_padding: bool = False,
    amplitude: float | None = None,
) -> Table:
    """A 1-D sinusoidal table as a :class:`Table` with its parameters: the paper's by default, any framework's with
    ``preset`` and the parameters of :mod:`posenc_cli.encodings.presets` (which override the preset's).

    The paper: ``PE[pos, 2i] = sin(pos / base**(2i/d_model))``, ``PE[pos, 2i+1] = cos(pos / base**(2i/d_model))``
    for ``pos`` in ``0..seq_len-1``; an odd ``d_model`` ends with a sine column. Every value is the exact value
    correctly rounded.

    ``dtype`` is any element type of :data:`posenc_cli.dtypes.DTYPES` (``scale`` and ``zero_point`` for
    int8: the quantisation step; the table's own multiplier is ``amplitude``). The parameters record the dtype by
    name, the preset, and every value that differs from the paper's table.

    With ``lazy=True`` the table's array is a :class:`~posenc_cli.table.RowSource`: nothing is computed until a
    writer asks for rows, block by block, so :func:`save` streams tables larger than memory with bounded memory.

    Examples
    --------
    >>> t = generate(4, 6, dtype="float64")
    >>> t.kind, t.array.shape, t.params["layout"]
    ('sinusoidal', (4, 6), 'interleaved')
    >>> generate(4, 6, preset="whisper").params["layout"]
    'sin-cos'
    """
    seq_len, d_model, base_value, element = check_params(
        seq_len, d_model, 10000.0 if base is None else base, dtype, scale=scale, zero_point=zero_point
    )
    spec = presets.resolve(
        preset, d_model=d_model, base=base_value, layout=layout, freq_shift=freq_shift, min_timescale=min_timescale,
        odd=odd, start=start, step=step, padding_idx=padding_idx, no_padding=no_padding, amplitude=amplitude,
    )  # fmt: skip
    quantisation: dict[str, Param] = {}
    if element.scale is not None:
        quantisation = {"scale": element.scale, "zero_point": element.zero_point}
    zero_point_arg = element.zero_point if element.scale is not None else None
    rows: Callable[[int, int], np.ndarray]
    if spec == presets.SinusoidSpec(d_model, base_value):  # the paper's table: its own (identical, leaner) path
        rows = functools.partial(
            sinusoidal_rows, d_model=d_model, base=base_value, dtype=element.name, scale=element.scale,
            zero_point=zero_point_arg,
        )  # fmt: skip
    else:
        presets.check_rows(spec, seq_len, element.name, quant_scale=element.scale, zero_point=zero_point_arg)
        rows = functools.partial(
            presets.preset_rows, spec, dtype=element.name, quant_scale=element.scale, zero_point=zero_point_arg
        )
    array: Array = RowSource((seq_len, d_model), element.storage, rows)
    if not lazy:
        _resources.check_memory(
            seq_len * d_model * _resources.WORK_BYTES_PER_VALUE["sinusoidal"],
            f"the {seq_len} x {d_model} table built whole (lazy=True streams it)",
        )
        array = np.asarray(array)
    params: dict[str, Param] = {
        "seq_len": seq_len,
        "d_model": d_model,
        "base": float(base_value),
        "dtype": element.name,
    }
    if preset is not None:
        params["preset"] = preset
    params.update(spec.params())
    params.update(quantisation)
    return Table("sinusoidal", {"pe": array}, params)


def rope(
    seq_len: int,
    head_dim: int,
    *,
    theta: float = 10000.0,
    layout: str = "half",
    scaling: str = "none",
    attention_scaling: bool = True,
    dtype: str = "float32",
    scale: float | None = None,
    zero_point: int | None = None,
    lazy: bool = False,
    **scaling_params: object,
) -> Table:
    """RoPE caches as HF transformers computes them: a :class:`Table` of kind ``"rope"`` with arrays ``cos`` and
    ``sin`` (seq_len, head_dim) and ``inv_freq`` (head_dim/2,).

    ``scaling`` is ``none``, ``linear``, ``dynamic``, ``yarn``, ``llama3`` or ``longrope`` with its parameters named
    as in HF's ``rope_parameters`` (``factor``, ``original_max_positions``, ``max_positions``, ``low_freq_factor``,
    ``high_freq_factor``, ``beta_fast``, ``beta_slow``, ``truncate``, ``mscale``, ``mscale_all_dim``,
    ``attention_factor``, ``short_factor``, ``long_factor``); :mod:`posenc_cli.encodings.rope` defines each. HF
    multiplies cos and sin by the mode's attention scaling (YaRN, LongRoPE); ``attention_scaling=False`` leaves it
    out (the parameters record its value either way). ``layout`` ``half`` is HF/GPT-NeoX ``rotate_half``,
    ``interleaved`` GPT-J/llama.cpp's adjacent pairs. Every value is correctly rounded.

    Examples
    --------
    >>> t = rope(8, 64, scaling="yarn", factor=4.0, original_max_positions=4096)
    >>> t.arrays["cos"].shape, t.arrays["inv_freq"].shape, round(t.params["attention_scaling"], 6)
    ((8, 64), (32,), 1.138629)
    """
    _, _, _, element = check_params(1, 1, 10000.0, dtype, scale=scale, zero_point=zero_point)
    spec = rope_encoding.resolve(
        seq_len=seq_len, head_dim=head_dim, theta=theta, layout=layout, scaling=scaling,
        fold_scaling=attention_scaling, **scaling_params,  # type: ignore[arg-type]
    )  # fmt: skip
    zero_point_arg = element.zero_point if element.scale is not None else None
    arrays: dict[str, Array] = {}
    if not lazy:
        _resources.check_memory(
            2 * spec.seq_len * spec.head_dim * _resources.WORK_BYTES_PER_VALUE["rope"],
            f"the RoPE caches ({spec.seq_len} x {spec.head_dim}) built whole (lazy=True streams them)",
        )
    for part in ("cos", "sin"):
        rows = functools.partial(
            rope_encoding.cache_rows, spec, part, dtype=element.name, quant_scale=element.scale,
            zero_point=zero_point_arg,
        )  # fmt: skip
        source = RowSource((spec.seq_len, spec.head_dim), element.storage, rows)
        arrays[part] = source if lazy else np.asarray(source)
    arrays["inv_freq"] = rope_encoding.inv_freq(
        spec, element.name, quant_scale=element.scale, zero_point=zero_point_arg
    )
    params: dict[str, Param] = {**spec.params(), "dtype": element.name}
    if element.scale is not None:
        params.update(scale=element.scale, zero_point=element.zero_point)
    axes = {"cos": ("seq_len", "head_dim"), "sin": ("seq_len", "head_dim"), "inv_freq": ("freqs",)}
    return Table("rope", arrays, params, axes)


def alibi(
    heads: int,
    seq_len: int | None = None,
    *,
    dtype: str = "float32",
    scale: float | None = None,
    zero_point: int | None = None,
) -> Table:
    """ALiBi slopes (and, with ``seq_len``, the bias matrix) as a :class:`Table` of kind ``"alibi"``.

    Arrays ``slopes`` (heads,) and ``bias`` (heads, seq_len) = ``slope[h] * j``, HF BLOOM's ``build_alibi_tensor``
    for an all-ones mask; see :mod:`posenc_cli.encodings.alibi` for the slopes' rule and the exactness argument.

    Examples
    --------
    >>> t = alibi(6, 4)
    >>> t.arrays["slopes"].tolist(), t.arrays["bias"][0].tolist()
    ([0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125], [0.0, 0.25, 0.5, 0.75])
    """
    heads, seq_len = alibi_encoding.check(heads, seq_len)
    if seq_len is not None:
        _resources.check_memory(
            heads * seq_len * _resources.WORK_BYTES_PER_VALUE["alibi"], f"the ALiBi bias matrix ({heads} x {seq_len})"
        )
    element = ElementType.of(dtype, scale=scale, zero_point=zero_point)
    arrays = alibi_encoding.slopes_and_bias(heads, seq_len, element)
    params: dict[str, Param] = {"heads": heads, "dtype": element.name}
    if seq_len is not None:
        params["seq_len"] = seq_len
    if element.scale is not None:
        params.update(scale=element.scale, zero_point=element.zero_point)
    axes = {"slopes": ("heads",), "bias": ("heads", "seq_len")}
    return Table("alibi", arrays, params, {key: axes[key] for key in arrays})


def sincos2d(
    height: int,
    width: int,
    d_model: int,
    *,
    cls_token: bool = False,
    base: float = 10000.0,
    dtype: str = "float32",
    scale: float | None = None,
    zero_point: int | None = None,
) -> Table:
    """MAE's 2-D sincos position embedding as a :class:`Table` of kind ``"sincos2d"``, one array ``pe``.

    Rows are the patches in row-major order (``y * width + x``), after a zero row when ``cls_token``; columns
    ``[sin x | cos x | sin y | cos y]`` (:mod:`posenc_cli.encodings.sincos2d`).

    Examples
    --------
    >>> sincos2d(14, 14, 768, cls_token=True).array.shape
    (197, 768)
    """
    height, width, d_model = sincos2d_encoding.check(height, width, d_model)
    rows = int(cls_token) + height * width
    _resources.check_memory(
        rows * d_model * _resources.WORK_BYTES_PER_VALUE["sincos2d"], f"the 2-D sincos table ({rows} x {d_model})"
    )
    _, _, base, element = check_params(1, 1, base, dtype, scale=scale, zero_point=zero_point)
    array = sincos2d_encoding.sincos2d(height, width, d_model, cls_token=cls_token, base=base, element=element)
    params: dict[str, Param] = {
        "grid_height": height,
        "grid_width": width,
        "d_model": d_model,
        "cls_token": bool(cls_token),
        "base": base,
        "dtype": element.name,
        "layout": "[sin x | cos x | sin y | cos y], rows y * width + x",
    }
    if element.scale is not None:
        params.update(scale=element.scale, zero_point=element.zero_point)
    return Table("sincos2d", {"pe": array}, params)


def convert(
    table: Table,
    *,
    dtype: str | None = None,
    scale: float | None = None,
    zero_point: int | None = None,
    key: str | None = None,
) -> Table:
    """``table`` (or its array ``key``) with every value re-encoded as the element type ``dtype``.

    The stored values are read as the real numbers they stand for (:func:`~posenc_cli.dtypes.decode`:
    quantised codes and bfloat16 bits decoded), then each is rounded once to the new type, exactly as a generated
    table would be (float types to nearest, ties to even; q15/q7/int8 halves away from zero, saturated). Kind,
    parameters and axes are kept, with ``dtype`` (and int8's ``scale``/``zero_point``) updated and ``converted_from``
    naming the type the values were rounded from (a generated table converted is rounded twice; to change the type
    of a generated table, generate it again). Arrays are converted block by block as a writer asks for rows.
    ``dtype=None`` keeps the stored values as they are.

    Raises
    ------
    SpecError
        An unknown ``key`` or ``dtype``; NaN or infinite values for an integer type; finite values that overflow a
        float type (a float16 table cannot hold 1e5).

    Examples
    --------
    >>> t = convert(generate(4, 4, dtype="float64"), dtype="q15")
    >>> t.params["dtype"], t.array.dtype.name, int(t.array[0, 1])
    ('q15', 'int16', 32767)
    """
    if key is not None:
        try:
            table = table.part(key)
        except KeyError as exc:
            raise SpecError(str(exc.args[0]), param="key") from None
    if dtype is None:
        if scale is not None or zero_point is not None:
            raise SpecError("--scale and --zero-point need --dtype int8", param="scale")
        return table
    element = ElementType.of(dtype, scale=scale, zero_point=zero_point)
    source_params = dict(table.params)
    arrays: dict[str, Array] = {}
    for name, array in table.arrays.items():
        if array.ndim == 0 or np.asarray(array[:0]).dtype.kind not in "biuf":
            raise SpecError(f"array {name!r} holds {array.dtype} values, not numbers", param="key")
        check = functools.partial(_converted, array, name, source_params, element)
        if array.ndim == 1:
            arrays[name] = check(0, array.shape[0])
        else:
            arrays[name] = RowSource(array.shape, element.storage, check)
    params: dict[str, Param] = {k: v for k, v in source_params.items() if k not in ("scale", "zero_point")}
    params["dtype"] = element.name
    params.setdefault("converted_from", str(source_params.get("dtype", _dtype_name(table))))
    if element.scale is not None:
        params.update(scale=element.scale, zero_point=element.zero_point)
    return Table(table.kind, arrays, params, dict(table.axes))


def _dtype_name(table: Table) -> str:
    return str(np.dtype(next(iter(table.arrays.values())).dtype).name)


def _converted(array: Array, name: str, params: dict[str, Param], element: ElementType, lo: int, hi: int) -> np.ndarray:
    from fractions import Fraction

    from .dtypes import decode

    real = decode(np.asarray(array[lo:hi]), params)
    finite = np.isfinite(real)
    if not element.is_float and not finite.all():
        raise SpecError(f"array {name!r} holds NaN or infinite values, which {element.name} cannot hold", param="dtype")
    stored, undecided = element.convert(real)
    for index in zip(*np.nonzero(undecided), strict=True):  # exact inputs: decide each tie from the value itself
        stored[index] = element.from_exact(Fraction(float(real[index])))
    if element.is_float:
        widened = decode(stored, {"dtype": element.name})
        if np.any(finite & ~np.isfinite(widened)):
            big = float(np.max(np.abs(real[finite])))
            raise SpecError(f"array {name!r} holds {big:g}, beyond the largest {element.name}", param="dtype")
    return stored


@dataclass(frozen=True)
class Output:
    """Where and how a table will be written: the format, the table's name and every file it makes."""

    format: Format
    name: str
    paths: tuple[Path, ...]


def plan(path: PathLike, *, format: str | None = None, name: str | None = None, check_paths: bool = True) -> Output:
    """Check an output before any work is done: format known, name valid, every file writable.

    Raises
    ------
    SpecError
        Unknown ``format``, a suffix that names no format, an invalid ``name``, or a path that does not name a file
        (empty, ``.``, ending in ``/``).
    OutputError
        A missing directory, a directory without write permission, a path that is a directory.
    """
    text = os.fspath(path)
    if check_paths and (not text or text.endswith(("/", os.sep)) or Path(text).name in ("", ".", "..")):
        raise SpecError(f"the output must name a file, got {text!r}", param="output")
    path = Path(text)
    fmt = by_name(format) if format is not None else infer(path)
    table_name = check_name(name) if name is not None else name_from_path(path)
    paths = [path]
    if fmt.companion is not None:
        companion = path.with_suffix(fmt.companion.suffix)
        if companion == path:
            raise SpecError(
                f"the {fmt.name} format writes a {fmt.companion.suffix} file beside the output, "
                f"so the output {str(path)!r} cannot itself end in {fmt.companion.suffix}",
                param="format",
            )
        paths.append(companion)
    for p in paths if check_paths else ():
        _atomic.check_writable(p)
    return Output(fmt, table_name, tuple(paths))


def save(
    table: Table | np.ndarray,
    path: PathLike,
    *,
    format: str | None = None,
    name: str | None = None,
    header: bool = True,
    command: str | None = None,
    part: str | None = None,
    check: bool = False,
    stdout: BinaryIO | None = None,
    **c_options: object,
) -> list[Path]:
    """Write ``table`` (or a bare 2-D array) to ``path`` atomically; return every path written.

    With ``check=True`` nothing is written: the result is the paths whose content would change (missing or
    different; an empty list means every output is up to date). With ``stdout`` (a binary stream) the one output is
    built in full in a temporary file, then copied to the stream; ``path`` then only names the format and table
    (``"-"`` with ``format=``), nothing is written to disk and the result is empty.

    Parameters
    ----------
    table : Table or numpy.ndarray
        What to write; a bare array is wrapped with :meth:`Table.from_array`.
    path : str or os.PathLike
        The output. Its suffix picks the format (``posenc_cli.formats.FORMATS``) unless ``format`` is given.
        The ``c`` format also writes ``<stem>.h`` next to it.
    format : str, optional
        A key of ``FORMATS``: ``npy``, ``h5``, ``csv``, ``h``, ``c``.
    name : str, optional
        The C symbol and HDF5 dataset name; by default the file's stem made a C identifier.
    header : bool
        CSV: write the ``d0,d1,...`` header row.
    command : str, optional
        The command line recorded in C provenance comments.
    part : str, optional
        Write only this array of a table that holds several (``cos`` of a RoPE table); formats that hold one array
        (npy, csv) need it for such tables.
    **c_options
        C outputs: ``lang``, ``namespace``, ``align``, ``progmem``, ``float_literal``, ``half_type``, as
        :class:`~posenc_cli.formats.options.WriteOptions` documents them.

    Examples
    --------
    >>> save(generate(16, 8), "pe.c", name="pe_table")  # doctest: +SKIP
    [PosixPath('pe.c'), PosixPath('pe.h')]
    """
    if not isinstance(table, Table):
        table = Table.from_array(np.asarray(table))
    if part is not None:
        try:
            table = table.part(part)
        except KeyError as exc:
            raise SpecError(str(exc.args[0]), param="part") from None
    out = plan(path, format=format, name=name, check_paths=stdout is None)
    if out.format.single and len(table.arrays) > 1:
        raise SpecError(
            f"this {table.kind} table holds {len(table.arrays)} arrays ({', '.join(table.arrays)}) and "
            f"{out.format.name} holds one: pick one with --part (part= in the API), or write npz, h5 or C, "
            "which hold them all",
            param="part",
        )
    companion = out.format.companion
    if companion is not None and companion.when is not None and not companion.when(table):
        out = dataclasses.replace(out, paths=out.paths[:1])
    unknown = sorted(set(c_options) - C_OPTIONS)
    if unknown:
        raise SpecError(f"unknown option {unknown[0]!r}; save takes {', '.join(sorted(C_OPTIONS))}", param=unknown[0])
    check_options(out.format, {"header": header, **c_options})
    options = WriteOptions(
        name=out.name,
        header=header,
        command=command,
        filename=out.paths[0].name,
        group=name,
        **c_options,  # type: ignore[arg-type]
    )

    def dump(files: Sequence[BinaryIO]) -> None:
        out.format.dump(table, files[0], options)
        if companion is not None and len(out.paths) > 1:
            companion.dump(table, files[1], dataclasses.replace(options, filename=out.paths[1].name))

    # Refuse what cannot fit before the first byte; stdout and check build the file in full in the temp directory.
    spool = stdout is not None or check
    where = Path(tempfile.gettempdir(), "posenc") if spool else out.paths[0]
    _resources.check_disk(where, _resources.estimate_bytes(table, out.format).low)
    if stdout is not None:
        if len(out.paths) > 1:
            raise SpecError(
                f"the {out.format.name} format writes a {out.paths[1].suffix} file beside its output and stdout takes "
                "one file: write to files, or pick a one-file format (h for C)",
                param="output",
            )
        with tempfile.TemporaryFile() as tmp:  # built in full before the first byte goes out
            dump([tmp])
            tmp.seek(0)
            shutil.copyfileobj(tmp, stdout, 1 << 20)
            stdout.flush()
        return []
    if check:
        with contextlib.ExitStack() as stack:
            files: list[BinaryIO] = [stack.enter_context(tempfile.TemporaryFile()) for _ in out.paths]
            dump(files)
            for fp in files:
                fp.flush()
            return [path for fp, path in zip(files, out.paths, strict=True) if not _atomic._same_content(fp, path)]
    with _atomic.atomic_outputs(out.paths) as outputs:
        dump(outputs)
    return list(out.paths)


def load(path: PathLike, *, format: str | None = None, max_memory: int | None = None) -> Table:
    """Read a table from any format posenc can read back (see :data:`~posenc_cli.formats.FORMATS`).

    The file is untrusted: it must be a regular file (a FIFO, a device or a link to one is refused before reading),
    and the arrays it declares may take at most ``max_memory`` bytes in all (by default half the available memory,
    :mod:`posenc_cli.formats.limits`), checked before anything is allocated.

    Raises
    ------
    FormatError
        The file is not a regular file, not a valid file of its format, declares more than the limits allow, or its
        format cannot be read back.
    """
    path = Path(os.fspath(path))
    fmt = by_name(format) if format is not None else infer(path)
    if fmt.load is None:
        readable = ", ".join(f.name for f in FORMATS.values() if f.load is not None)
        raise FormatError(f"posenc cannot read {fmt.name} files back; it reads {readable}")
    budget = Budget(max_memory)
    with _naming(path):
        with _open_regular(path) as fp:
            table = fmt.load(fp, budget)
    companion = fmt.companion
    if companion is not None and companion.load is not None:
        sidecar = path.with_suffix(companion.suffix)
        if os.path.lexists(sidecar):
            with _naming(sidecar), _open_regular(sidecar) as fp:
                table = companion.load(table, fp, budget)
    return table


@contextlib.contextmanager
def _naming(path: Path) -> Iterator[None]:
    """Errors reading ``path`` as one ``FormatError`` that starts with its name."""
    try:
        yield
    except OSError as exc:
        raise FormatError(f"cannot read {str(path)!r}: {exc.strerror or exc}") from None
    except FormatError as exc:
        raise FormatError(f"{str(path)!r}: {exc}") from None


def _open_regular(path: Path) -> BinaryIO:
    """``path`` opened for reading if it is a regular file (after following links); ``FormatError`` otherwise.

    Opened with ``O_NONBLOCK`` so that a FIFO cannot block the open, then checked with ``fstat`` on the open file
    (no race between the check and the read).
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            what = "a directory" if stat.S_ISDIR(info.st_mode) else "a FIFO, a device or a socket"
            raise FormatError(f"not a regular file but {what}; posenc reads tables only from regular files")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
