"""``posenc generate``: the 1-D sinusoidal table of "Attention Is All You Need", and every framework's variant of it
(:mod:`posenc_cli.encodings.presets`): its parameters, maker, record, help and C formula.

Every value is checked once, at the API's edge (:func:`generate`), by its parameter's type and range (:data:`PARAMS`:
the ranges the command line, a manifest and a file's recorded parameters are held to), then by the encoding that
defines its domain; the row functions take checked values and never check again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ..dtypes import ElementType
from ..encodings import presets
from ..encodings.sinusoid import count
from ..encodings.sinusoidal import MAX_POSITIONS, paper_rows
from ..errors import SpecError
from ..params import INTEGER, NUMBER, ROW, TEXT, Choice, Param, ValueType
from ..ranges import Range
from ..saturation import check_saturate, may_clip, refuse_clipping
from ..system.capacity import check_memory
from ..table import Array, RowSource, Table
from ..table import Param as Value
from ._shared import BASE, D_MODEL, ELEMENT_KEYS, QUANTISATION, SEQ_LEN, Kind, arithmetic, check

__all__ = ["KIND", "PARAMS", "VIEWED", "generate", "listed_presets"]

#: The float64 table of the same parameters: the correctly rounded values a quantised table rounds from.
_FLOAT64 = ElementType.of("float64")

_PADDING_ROWS = Range("0 <= x < 2**32", "a row of a table of at most 2**32 rows")


PADDING_IDX = ROW.within(
    _PADDING_ROWS,
    expected=f'a row index (an integer with {_PADDING_ROWS.text}) or "none"',
    typed=f"a row index (an integer with {_PADDING_ROWS.text}) or none",
)


PADDING_ROW = INTEGER.within(_PADDING_ROWS)  # as a table records it


START = NUMBER.within(
    Range(
        "-2**32 < x < 2**32",
        "the engine's exact domain: |position| below 2**32 (tensor2tensor's start_index is a few thousand at most)",
    )
)


STEP = NUMBER.within(
    Range(
        "-2**32 < x < 2**32 and x != 0",
        "the distance between rows (diffusion timesteps: 1e-3 to 1000); a negative step runs the positions down "
        "(Transformer-XL); 0 would put every row at one position, a table of identical rows; the last row's "
        "position must stay below 2**32 in magnitude too",
    )
)


FREQ_SHIFT = NUMBER.within(
    Range(
        "-2**20 <= x <= 2**20",
        "diffusers' downscale_freq_shift, 0 or 1; it must stay below d_model // 2 (checked with the width), and one "
        "beyond the widest table's 2**20 columns would swamp any width",
    )
)


MIN_TIMESCALE = NUMBER.within(
    Range("2**-64 <= x <= 2**32", "tensor2tensor's min_timescale (1) multiplies every frequency: the engine's range")
)


AMPLITUDE = NUMBER.within(
    Range(
        "-1e6 <= x <= 1e6 and x != 0",
        "multiplies every value: 1 in every framework posenc reproduces, sqrt(d_model) where a model scales its "
        "embedding; 0 makes a table of zeros",
    )
)


PARAMS: tuple[Param, ...] = (
    Param("seq_len", SEQ_LEN, "Number of positions (rows).", required=True, short="-n", always_recorded=True),
    Param("d_model", D_MODEL, "Model dimension (columns).", required=True, short="-d", always_recorded=True),
    Param("base", BASE, "Wavelength base (max_period, max_timescale).", default=10000.0, always_recorded=True),
    Param("preset", Choice(tuple(presets.PRESETS)), "A framework's convention (posenc presets).", short="-p"),
    Param("layout", Choice(presets.LAYOUTS), "Column order.  [default: the preset's]"),
    Param("freq_shift", FREQ_SHIFT, "Frequencies base^(-k/(d_model//2 - S))."),
    Param("min_timescale", MIN_TIMESCALE, "tensor2tensor's frequencies m * (base/m)^(-k/(h-1))."),
    Param("odd", Choice(presets.ODD), "Odd d_model: natural, zero column or error."),
    Param("start", START, "Position of row 0 (fractional allowed).  [default: 0]"),
    Param("step", STEP, "Position step between rows (fractional allowed).  [default: 1]"),
    Param("padding_idx", PADDING_IDX, "Zero this row (fairseq); none: no zero row."),
    Param("amplitude", AMPLITUDE, "Multiply every value by this.  [default: 1]"),
    arithmetic("the code the preset follows"),
)


DOC = """Write a 1-D sinusoidal table: the paper's, or a framework's with --preset.

The paper (preset vaswani): PE[pos, 2i] = sin(pos / base^(2i/d_model)), PE[pos, 2i+1] = cos(pos /
base^(2i/d_model)), for pos = 0 .. seq_len-1; an odd d_model ends with a sine column. Other frameworks
differ in layout, frequencies, positions, padding row and odd widths: --preset picks one (list them with
posenc presets) and the other options override it. Every value is the exact value correctly rounded;
--arithmetic framework gives the values the preset's own code computes in float32 (docs/tables.md).

\b
Examples:
  posenc generate -n 2048 -d 512 -o pe.h             # C header, static const float pe[2048][512]
  posenc generate -n 2048 -d 512 -o pe.c --name pe   # pe.c (definition) + pe.h (extern declaration)
  posenc generate -n 1026 -d 1024 -p fairseq -o m2m100_pos.npy
  posenc generate -n 1000 -d 320 -p openai-diffusion -o timesteps.h
"""


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
    padding_idx: int | str | None = None,
    no_padding: bool = False,
    amplitude: float | None = None,
    saturate: bool = False,
    arithmetic: str = "exact",
) -> Table:
    """A 1-D sinusoidal table as a :class:`Table` with its parameters: the paper's by default, any framework's with
    ``preset`` and the parameters of :mod:`posenc_cli.encodings.presets` (which override the preset's).

    The paper: ``PE[pos, 2i] = sin(pos / base**(2i/d_model))``, ``PE[pos, 2i+1] = cos(pos / base**(2i/d_model))``
    for ``pos`` in ``0..seq_len-1``; an odd ``d_model`` ends with a sine column. Every value is the exact value
    correctly rounded.

    ``padding_idx`` zeroes that row (fairseq); ``"none"`` (or ``no_padding=True``) drops a preset's padding row. A
    padding row past the last row could not take effect and is refused.

    Row ``r`` is at position ``start + step * r``: a negative ``step`` runs the positions down (Transformer-XL's
    relative positions), and ``step=0``, which would put every row at one position, is refused; every number is
    held to its range (:data:`PARAMS`).

    ``dtype`` is any element type of :data:`posenc_cli.dtypes.DTYPES` (``scale`` and ``zero_point`` for
    int8: the quantisation step; the table's own multiplier is ``amplitude``). The parameters record the dtype by
    name, the preset, and every value that differs from the paper's table.

    A fixed-point or int8 table whose values the type cannot hold (an ``amplitude`` beyond q15's [-1, 1]) is
    refused with the count of values that would clip (:mod:`posenc_cli.saturation`), unless ``saturate=True`` asks
    for them to be clipped to the type's ends; the table then records ``saturate``. When the amplitude fits the type
    no value can clip and nothing is counted; otherwise the values are computed once in float64 and counted here,
    before this returns (and so before any file is opened).

    ``arithmetic="framework"`` gives the table the preset's own code computes (no preset: PyTorch's tutorial), its
    float32 operations in its order with each elementary function correctly rounded
    (:mod:`posenc_cli.encodings.framework` names the code each preset follows); other element types round those
    float32 values. It is recorded; ``"exact"`` (the default) is not.

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
    if arithmetic not in ("exact", "framework"):
        raise SpecError(f"arithmetic must be one of exact, framework, got {arithmetic!r}", param="arithmetic")
    check(
        KIND.inputs, seq_len=seq_len, d_model=d_model, base=base, freq_shift=freq_shift, min_timescale=min_timescale,
        start=start, step=step, padding_idx=padding_idx, amplitude=amplitude, scale=scale, zero_point=zero_point,
    )  # fmt: skip
    seq_len = count(seq_len, "seq_len", 1, MAX_POSITIONS)  # d_model and base: by the preset's resolution, once
    element = ElementType.of(dtype, scale=scale, zero_point=zero_point)
    if padding_idx == "none":
        padding_idx, no_padding = None, True
    elif isinstance(padding_idx, str):
        raise SpecError(f"padding_idx must be a row index or 'none', got {padding_idx!r}", param="padding_idx")
    if isinstance(padding_idx, int) and not isinstance(padding_idx, bool) and padding_idx >= seq_len >= 1:
        raise SpecError(
            f"padding_idx {padding_idx} is past the last row: a table of seq_len {seq_len} has rows 0 to "
            f"{seq_len - 1}, so the padding row would not be in it",
            param="padding_idx",
        )
    if preset in presets.PRESETS and presets.PRESETS[preset].descending and start is None and step is None:
        start, step = float(seq_len - 1), -1.0
    spec = presets.resolve(
        preset, d_model=d_model, base=base, layout=layout, freq_shift=freq_shift, min_timescale=min_timescale,
        odd=odd, start=start, step=step, padding_idx=padding_idx, no_padding=no_padding, amplitude=amplitude,
    )  # fmt: skip
    quantisation: dict[str, Value] = {}
    if element.scale is not None:
        quantisation = {"scale": element.scale, "zero_point": element.zero_point}
    zero_point_arg = element.zero_point if element.scale is not None else None
    rows: Callable[[int, int], np.ndarray]  # checked here, once: the writer's thousands of blocks are not checked
    d_model, base_value = spec.d_model, spec.base
    paper = spec == presets.SinusoidSpec(d_model, base_value)
    framework_rows = None
    if arithmetic == "framework":
        from ..encodings import framework

        presets.check_rows(spec, seq_len, "float64")  # the positions' domain, checked as an exact table's
        framework_rows = framework.sinusoid_rows(spec, preset, element)
    if framework_rows is not None:
        rows = framework_rows
    elif paper:  # the paper's table: its own (identical, leaner) path
        rows = paper_rows(d_model, base_value, element)
    else:
        rows = presets.rows_of(spec, seq_len, element.name, quant_scale=element.scale, zero_point=zero_point_arg)
    saturated = check_saturate(saturate, element)
    reach = abs(spec.amplitude)  # |amplitude * sin| and |amplitude * cos| never exceed it
    if not saturated and may_clip(element, -reach, reach):
        if framework_rows is not None:
            exact = framework.sinusoid_rows(spec, preset, _FLOAT64)
            assert exact is not None
        elif paper:
            exact = paper_rows(d_model, base_value, _FLOAT64)
        else:
            exact = presets.rows_of(spec, seq_len, "float64")
        refuse_clipping(element, {"pe": RowSource((seq_len, d_model), np.float64, exact)})
    array: Array = RowSource((seq_len, d_model), element.storage, rows)
    if not lazy:
        check_memory(
            seq_len * d_model * KIND.work_per_value,
            f"the {seq_len} x {d_model} table built whole (lazy=True streams it)",
        )
        array = np.asarray(array)
    params: dict[str, Value] = {
        "seq_len": seq_len,
        "d_model": d_model,
        "base": float(base_value),
        "dtype": element.name,
    }
    if preset is not None:
        params["preset"] = preset
    params.update(spec.params())
    params.update(quantisation)
    if saturated:
        params["saturate"] = True
    if arithmetic != "exact":
        params["arithmetic"] = arithmetic
    return Table("sinusoidal", {"pe": array}, params)


#: The paper's values of the sinusoidal parameters a file records only when they differ from them.
_PAPER = {"layout": "interleaved", "odd": "natural", "start": 0.0, "step": 1.0, "amplitude": 1.0}


def _sinusoidal_from_record(p: Mapping[str, Any]) -> dict[str, Any]:
    """A file records the layout always and every other value only where it differs from the paper's table, so
    with ``preset`` and ``layout`` both recorded an absent value means the paper's (and no padding row); without
    ``layout`` (parameters given by hand) the preset's values apply, as ``posenc generate --preset`` gives them."""
    keys = ("seq_len", "d_model", "base", "preset", "padding_idx", "arithmetic")
    args: dict[str, Any] = {k: p[k] for k in keys if k in p}
    args.update({k: p[k] for k in ELEMENT_KEYS if k in p})
    record = "preset" in p and "layout" in p
    for key, paper in _PAPER.items():
        if key in p or record:
            args[key] = p.get(key, paper)
    if record and "padding_idx" not in p:
        args["padding_idx"] = "none"
    freq = p.get("freq", "paper")
    if freq not in ("paper", "shift", "timescales"):
        raise SpecError(f"freq must be one of paper, shift, timescales, got {freq!r}", param="freq")
    if freq == "shift" or "freq_shift" in p:
        args["freq_shift"] = p.get("freq_shift", 0.0)
    if freq == "timescales" or "min_timescale" in p:
        args["min_timescale"] = p.get("min_timescale", 1.0)
    return args


def listed_presets() -> list[tuple[presets.Preset, dict[str, Value]]]:
    """Every ``--preset``, with the values it gives (``posenc presets``): its parameters as a table records them,
    with its odd-width rule and frequency form."""
    rows = []
    for preset in presets.PRESETS.values():
        spec = presets.resolve(preset.name, d_model=8)
        values: dict[str, Value] = dict(spec.params())
        values["odd"] = spec.odd
        values["freq"] = spec.freq
        rows.append((preset, values))
    return rows


#: The parameters ``posenc plot`` and ``show`` take to make a table to look at without a file (``generate``'s own
#: options, none required), with their help there.
VIEWED = {
    "seq_len": "Without FILE: positions of a generated table.",
    "d_model": "Without FILE: its model dimension.",
    "preset": "Without FILE: its preset.",
    "base": "Without FILE: its base.  [default: 10000]",
}


#: The parameters of the paper's own table: with any other, its formula does not describe the table.
_PAPER_PARAMS = {"seq_len", "d_model", "base", "dtype", "layout", "scale", "zero_point"}


def _c_formula(params: Mapping[str, Any]) -> tuple[str, ...]:
    """The paper's formula, for the paper's table; for any other, where its parameters are said."""
    if not set(params) <= _PAPER_PARAMS:  # a preset or other frequencies: the parameters say it
        return ("the parameters above define the table (posenc generate --help, posenc presets)",)
    return ("{name}[pos][2i]   = sin(pos / base^(2i / d_model))", "{name}[pos][2i+1] = cos(pos / base^(2i / d_model))")


# fmt: off
RECORDED: dict[str, ValueType] = {
    "seq_len": SEQ_LEN, "d_model": D_MODEL, "base": BASE, **QUANTISATION, "preset": TEXT,
    "layout": TEXT, "freq": TEXT, "freq_shift": FREQ_SHIFT, "min_timescale": MIN_TIMESCALE,
    "odd": TEXT, "start": START, "step": STEP, "padding_idx": PADDING_ROW,
    "amplitude": AMPLITUDE, "arithmetic": TEXT,
}

# fmt: on

KIND = Kind(
    command="generate",
    table="sinusoidal",
    short_help="Write a 1-D sinusoidal table (any framework's).",
    doc=DOC,
    params=PARAMS,
    make=generate,
    lazy=True,
    recorded=RECORDED,
    from_record=_sinusoidal_from_record,
    work_per_value=64,  # bfloat16 peaks at 57 bytes a value, float32 at 6
    c_formula=_c_formula,
    identify=(2, "_sinusoid:sinusoid_hypotheses"),
)
