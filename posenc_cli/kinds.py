"""KINDS: the one definition of every table kind, and of the options every table command shares.

A :class:`Kind` holds a command's name and help, its parameters (:class:`~posenc_cli.params.Param`: name, type,
default, required, help, flags), the function that makes its table (:mod:`posenc_cli.make`), and how its table
records its parameters (the keys a file holds and how they read back into the function's keywords). Everything
else is generated from it:

- the click options and ``--help`` of ``posenc <command>`` (:mod:`posenc_cli.cli.tables`);
- the manifest keys of ``[[table]]`` entries and their checks (:mod:`posenc_cli.build.manifest`);
- the command line recorded in C provenance comments (:func:`posenc_cli.params.command_line`);
- ``posenc verify``'s and ``inspect``'s regeneration from recorded parameters (:mod:`posenc_cli.verify`);
- the reference ``docs/commands.md`` (:mod:`posenc_cli.cli.reference`).

Adding a kind is one module in ``encodings/`` (the math), one function in :mod:`posenc_cli.make` and one entry
here; ``tests/test_kinds.py`` walks the registry against every surface.

:data:`ELEMENT` (the element type) and :data:`OUTPUT` (where and how to write) are the parameters every table
command shares after its own; :data:`RUN` are the command line's own switches (quiet, check, ...), which a manifest
does not take: they are options of ``posenc build`` itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from . import kind_docs, make, ranges
from ._resources import WORK_BYTES_PER_VALUE
from .dtypes import INDEX_DTYPES
from .encodings import names, presets
from .errors import SpecError
from .formats import FORMAT_NAMES, FORMATS
from .formats.options import FLOAT_LITERALS, HALF_TYPES, LANGS
from .params import BOOLEAN, ELEMENT_TYPE, INTEGER, NUMBER, TEXT, Choice, Param, ValueType
from .table import Table

__all__ = ["CONVERT", "ELEMENT", "INDEX_ELEMENT", "KINDS", "OUTPUT", "RUN", "Kind", "by_command", "by_table"]

_FORMAT_HELP = "; ".join(f"{f.name}: {'/'.join(f.suffixes)}" for f in FORMATS.values())

#: The element type of every table command's output (``posenc convert`` takes them with no default dtype).
ELEMENT: tuple[Param, ...] = (
    Param("dtype", ELEMENT_TYPE, "Output element type.", default="float32", always_recorded=True),
    Param("scale", ranges.SCALE, "int8 only: the real value of one quantisation step."),
    Param("zero_point", ranges.ZERO_POINT, "int8 only: the integer that stands for 0.0.  [default: 0]"),
    Param(
        "saturate",
        BOOLEAN,
        "Fixed point, int8: clip values beyond the type's range to its ends (without it they are refused; "
        "q15's +1.0 is written as 32767 either way).",
        default=False,
    ),
)
#: The element parameters' names: what every float kind reads back from its record.
_ELEMENT_KEYS = tuple(p.name for p in ELEMENT)

#: The element type of index tables (``posenc relative``, ``posenc window``): integers, no quantisation.
INDEX_ELEMENT: tuple[Param, ...] = (
    Param(
        "dtype",
        Choice(INDEX_DTYPES),
        "Index element type.  [default: the smallest of int8, int16, int32 that holds the index]",
        always_recorded=True,
    ),
)

#: Where and how a table is written: the same on every command that writes one, and the manifest keys of the same
#: names. Each format declares which of them it takes (:attr:`posenc_cli.formats.Format.options`).
OUTPUT: tuple[Param, ...] = (
    Param("format", Choice(FORMAT_NAMES), f"Force a format ({_FORMAT_HELP}).", short="-f"),
    Param(
        "name",
        TEXT,
        "C symbol / HDF5 dataset (or group) name.  [default: output stem as a C identifier]",
        always_recorded=True,
    ),
    Param("part", TEXT, "Write only this array of a table that holds several (npy and csv need it)."),
    Param("header", BOOLEAN, "CSV: write the d0,d1,... header row.", default=True, pair=True),
    Param(
        "lang",
        Choice(LANGS),
        "C headers: C (also valid C++) or C++.  [default: c; c++ for .hpp, .hh, .hxx, .cpp, .cc, .cxx]",
    ),
    Param("namespace", TEXT, "C++: put the table in this namespace (constexpr, C++11)."),
    Param("align", ranges.ALIGN, "C: align the table to N bytes (a power of two)."),
    Param("progmem", BOOLEAN, "C: put the table in AVR flash (PROGMEM).", default=False),
    Param(
        "float_literal",
        Choice(FLOAT_LITERALS),
        "C float tables: shortest decimals (C89), hex floats (C99/C++17) or bit patterns.",
        default="decimal",
    ),
    Param(
        "c_half_type",
        Choice(HALF_TYPES),
        "C float16 tables: native literals of this type.  [default: uint16_t bit patterns]",
    ),
)

#: ``posenc convert``'s own options: the array to take and the element type to re-encode it as (none: as stored).
CONVERT: tuple[Param, ...] = (
    Param("key", TEXT, "The array to take from a file that holds several (an .npz or .safetensors tensor)."),
    Param("dtype", ELEMENT_TYPE, "Re-encode the values.  [default: as stored]", always_recorded=True),
    *ELEMENT[1:],
)

#: The command line's own switches: not table parameters, never recorded, not manifest keys.
RUN: tuple[Param, ...] = (
    Param("output", TEXT, "Output file (its suffix picks the format); - for stdout.", required=True, short="-o"),
    Param("verbose", BOOLEAN, "Say what was written (on stderr).", default=False, short="-v"),
    Param("quiet", BOOLEAN, "No progress bar or notes, even on a terminal.", default=False, short="-q"),
    Param(
        "check",
        BOOLEAN,
        "Write nothing; exit 0 if the output is up to date, 1 if it would change.",
        default=False,
    ),
    Param("json", BOOLEAN, "Print a report (paths, format, shapes, sha256) on stdout.", default=False),
    Param(
        "force",
        BOOLEAN,
        "Replace a file beside the output that posenc did not write (the .json of a .npy, the .h of a .c or .bin).",
        default=False,
    ),
)


@dataclass(frozen=True)
class Kind:
    """One table kind: its command, parameters, maker and record.

    ``maker`` names the :mod:`posenc_cli.make` function (:attr:`make`), called with the parameters' names as
    keywords (``lazy=True`` too when ``lazy``: the table's rows are made as a writer asks for them). ``recorded``
    is every parameter its tables record, with the type each reads back as; ``recorded_as`` names the inputs a
    table records under other names (sincos2d's ``grid`` as ``grid_height`` and ``grid_width``); ``from_record``
    turns recorded parameters (typed) into ``make``'s keywords; ``work`` is the memory, in bytes, the table takes
    built whole (0 for lazy kinds), claimed before a file's parameters are trusted to regenerate it.
    """

    command: str
    table: str
    short_help: str
    doc: str
    params: tuple[Param, ...]
    maker: str
    lazy: bool
    recorded: Mapping[str, ValueType]
    from_record: Callable[[Mapping[str, Any]], dict[str, Any]]
    work: Callable[[Mapping[str, Any]], int]
    recorded_as: Mapping[str, tuple[str, ...]] | None = None
    #: The element type's parameters: :data:`ELEMENT` (float tables), :data:`INDEX_ELEMENT` (index tables).
    element: tuple[Param, ...] = ELEMENT
    #: The parameters that name a file the kind reads (``bias``): a manifest resolves them from its own folder,
    #: keeps them inside it, and its depfile lists them as prerequisites.
    files: tuple[str, ...] = ()

    @property
    def make(self) -> Callable[..., Table]:
        """The :mod:`posenc_cli.make` function named ``maker``, looked up when asked for: the registry names every
        maker without importing the modules behind them (RoPE, the index kinds), which only their command needs."""
        maker: Callable[..., Table] = getattr(make, self.maker)
        return maker

    @property
    def inputs(self) -> tuple[Param, ...]:
        """The parameters that decide the table: the kind's own, then the element type."""
        return self.params + self.element

    @property
    def keys(self) -> tuple[Param, ...]:
        """Every manifest key of this command, in the order ``posenc <command>`` declares its options."""
        return self.inputs + OUTPUT

    def required_records(self) -> tuple[str, ...]:
        """The recorded parameters without which a table cannot be regenerated."""
        renamed = self.recorded_as or {}
        return tuple(name for p in self.params if p.required for name in renamed.get(p.name, (p.name,)))

    def build(self, values: Mapping[str, Any]) -> Table:
        """The table of ``values`` (parameter name to typed value; ``None`` or absent: not given)."""
        given = {p.name: values[p.name] for p in self.inputs if values.get(p.name) is not None}
        return self.make(**given, lazy=True) if self.lazy else self.make(**given)


def by_command(command: str) -> Kind:
    """The kind ``posenc <command>`` makes; ``SpecError`` naming the commands otherwise."""
    try:
        return KINDS[command]
    except KeyError:
        raise SpecError(f"unknown command {command!r}; choose one of {', '.join(KINDS)}", param="command") from None


def by_table(table: str) -> Kind:
    """The kind whose tables record ``kind=table`` (``sinusoidal`` is made by ``generate``)."""
    for kind in KINDS.values():
        if kind.table == table:
            return kind
    known = ", ".join(k.table for k in KINDS.values())
    raise SpecError(f"posenc cannot regenerate a table of kind {table!r}; it regenerates {known}", param="kind")


# ---------------------------------------------------------------------------------------------- recorded types
_QUANTISATION: dict[str, ValueType] = {
    "dtype": TEXT, "scale": ranges.SCALE, "zero_point": ranges.ZERO_POINT, "saturate": BOOLEAN, "converted_from": TEXT
}  # fmt: skip
#: The paper's values of the sinusoidal parameters a file records only when they differ from them.
_PAPER = {"layout": "interleaved", "odd": "natural", "start": 0.0, "step": 1.0, "amplitude": 1.0}


def _sinusoidal_from_record(p: Mapping[str, Any]) -> dict[str, Any]:
    """A file records the layout always and every other value only where it differs from the paper's table, so
    with ``preset`` and ``layout`` both recorded an absent value means the paper's (and no padding row); without
    ``layout`` (parameters given by hand) the preset's values apply, as ``posenc generate --preset`` gives them."""
    args: dict[str, Any] = {k: p[k] for k in ("seq_len", "d_model", "base", "preset", "padding_idx") if k in p}
    args.update({k: p[k] for k in _ELEMENT_KEYS if k in p})
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


def _rope_from_record(p: Mapping[str, Any]) -> dict[str, Any]:
    """Every input is recorded by its own name except ``attention_scaling`` (fold the scaling into cos and sin),
    recorded as ``attention_scaling_folded``: the recorded ``attention_scaling`` is the scaling's value."""
    if "position_ids_sha256" in p:
        raise SpecError(
            "the caches were made at given position ids (--position-ids), which the file does not hold: they cannot "
            "be made again from its parameters",
            param="position_ids",
        )
    inputs = {param.name for param in ROPE_PARAMS} | set(_ELEMENT_KEYS)
    skip = {"attention_scaling", "config", "layer_type"}  # a config's values are all recorded in their own names
    args = {key: value for key, value in p.items() if key in inputs and key not in skip}
    if "attention_scaling_folded" in p:
        args["attention_scaling"] = p["attention_scaling_folded"]
    return args


def _same_names(names: tuple[str, ...]) -> Callable[[Mapping[str, Any]], dict[str, Any]]:
    def from_record(p: Mapping[str, Any]) -> dict[str, Any]:
        return {key: p[key] for key in names if key in p}

    return from_record


def _sincos2d_from_record(p: Mapping[str, Any]) -> dict[str, Any]:
    args = {key: p[key] for key in ("d_model", "cls_token", "base", *_ELEMENT_KEYS) if key in p}
    if "grid_height" in p and "grid_width" in p:
        args["grid"] = (p["grid_height"], p["grid_width"])
    return args


#: A gathered bias records the gathered array's sha256 and the key it was read under (not the file's path).
_BIAS_RECORDED = {"bias": ("bias_sha256",), "key": ("bias_key",)}


def _window_from_record(p: Mapping[str, Any]) -> dict[str, Any]:
    args = {key: p[key] for key in ("scheme", "dtype") if key in p}
    if "window_height" in p and "window_width" in p:
        args["window"] = (p["window_height"], p["window_width"])
    if "pretrained_height" in p and "pretrained_width" in p:
        args["pretrained_window"] = (p["pretrained_height"], p["pretrained_width"])
    return args


def _window_work(p: Mapping[str, Any]) -> int:
    tokens = int(p["window_height"]) * int(p["window_width"]) + 1
    return tokens * tokens * WORK_BYTES_PER_VALUE["window"]


def _alibi_work(p: Mapping[str, Any]) -> int:
    rows = p.get("seq_len")
    return int(p["heads"]) * int(rows) * WORK_BYTES_PER_VALUE["alibi"] if isinstance(rows, int) else 0


def _sincos2d_work(p: Mapping[str, Any]) -> int:
    rows = 1 + int(p["grid_height"]) * int(p["grid_width"])
    return rows * int(p["d_model"]) * WORK_BYTES_PER_VALUE["sincos2d"]


# ------------------------------------------------------------------------------------------------------ kinds
SEQ_LEN_HELP = "Number of positions (rows)."

GENERATE_PARAMS: tuple[Param, ...] = (
    Param("seq_len", ranges.SEQ_LEN, SEQ_LEN_HELP, required=True, short="-n", always_recorded=True),
    Param("d_model", ranges.D_MODEL, "Model dimension (columns).", required=True, short="-d", always_recorded=True),
    Param("base", ranges.BASE, "Wavelength base (max_period, max_timescale).", default=10000.0, always_recorded=True),
    Param("preset", Choice(tuple(presets.PRESETS)), "A framework's convention (posenc presets).", short="-p"),
    Param("layout", Choice(presets.LAYOUTS), "Column order.  [default: the preset's]"),
    Param("freq_shift", ranges.FREQ_SHIFT, "Frequencies base^(-k/(d_model//2 - S))."),
    Param("min_timescale", ranges.MIN_TIMESCALE, "tensor2tensor's frequencies m * (base/m)^(-k/(h-1))."),
    Param("odd", Choice(presets.ODD), "Odd d_model: natural, zero column or error."),
    Param("start", ranges.START, "Position of row 0 (fractional allowed).  [default: 0]"),
    Param("step", ranges.STEP, "Position step between rows (fractional allowed).  [default: 1]"),
    Param("padding_idx", ranges.PADDING_IDX, "Zero this row (fairseq); none: no zero row."),
    Param("amplitude", ranges.AMPLITUDE, "Multiply every value by this.  [default: 1]"),
)

ROPE_PARAMS: tuple[Param, ...] = (
    Param(
        "seq_len",
        ranges.SEQ_LEN,
        "Positions (rows) of the caches.  [required unless --position-ids gives them]",
        short="-n",
        always_recorded=True,
    ),
    Param(
        "head_dim",
        ranges.HEAD_DIM,
        "Dimension per head (even).  [required unless --config gives it]",
        near=("-d", "--d-model"),
    ),
    Param("config", TEXT, "A model's config.json (or its folder): every RoPE setting from it; options override."),
    Param(
        "layer_type", TEXT, "With --config: the layers whose RoPE to take (Gemma: full_attention, sliding_attention)."
    ),
    Param("theta", ranges.THETA, "rope_theta, the wavelength base.  [default: 10000, or the config's]"),
    Param(
        "layout",
        Choice(names.ROPE_LAYOUTS),
        "half: HF/GPT-NeoX rotate_half; interleaved: GPT-J, llama.cpp normal mode.",
        default="half",
    ),
    Param("scaling", Choice(names.ROPE_SCALINGS), "HF rope_type.  [default: none, or the config's]"),
    Param("factor", ranges.FACTOR, "Scaling factor (linear, dynamic, yarn, llama3, longrope, proportional)."),
    Param("original_max_positions", ranges.POSITIONS, "Pre-training context length."),
    Param("max_positions", ranges.POSITIONS, "max_position_embeddings (dynamic, yarn, longrope)."),
    Param("low_freq_factor", ranges.FREQ_FACTOR, "llama3.  [default: 1]"),
    Param("high_freq_factor", ranges.FREQ_FACTOR, "llama3.  [default: 4]"),
    Param("beta_fast", ranges.BETA, "yarn.  [default: 32]"),
    Param("beta_slow", ranges.BETA, "yarn.  [default: 1]"),
    Param("truncate", BOOLEAN, "yarn: floor/ceil the correction range.  [default: on]", pair=True),
    Param("mscale", ranges.MSCALE, "yarn: DeepSeek's mscale."),
    Param("mscale_all_dim", ranges.MSCALE, "yarn: DeepSeek's mscale_all_dim."),
    Param("attention_factor", ranges.ATTENTION_FACTOR, "yarn/longrope: the scaling, given."),
    Param("short_factor", ranges.LONGROPE_FACTORS, "longrope: head_dim/2 factors."),
    Param("long_factor", ranges.LONGROPE_FACTORS, "longrope: head_dim/2 factors."),
    Param(
        "attention_scaling",
        BOOLEAN,
        "Fold the attention scaling (yarn, longrope) into cos/sin as HF does; --no-attention-scaling leaves it out.",
        default=True,
        pair=True,
    ),
    Param("rotary_dim", ranges.ROTARY_DIM, "Partial rotary: rotate only the first R dimensions (caches of R columns)."),
    Param("position_ids", TEXT, "An .npy of integer positions, (seq,) or (3, seq) with --mrope-section: rows there."),
    Param("mrope_section", ranges.MROPE_SECTION, "M-RoPE (Qwen2-VL): frequencies per temporal, height, width section."),
    Param("mrope_interleaved", BOOLEAN, "M-RoPE sections interleaved (Qwen3-VL).", default=False),
    Param("longrope_pair", BOOLEAN, "longrope: write both caches, *_short and *_long.", default=False),
)

ALIBI_PARAMS: tuple[Param, ...] = (
    Param("heads", ranges.HEADS, "Number of attention heads.", required=True, short="-H", always_recorded=True),
    Param(
        "seq_len",
        ranges.SEQ_LEN,
        "Key positions of the bias matrix (omit for slopes only).",
        short="-n",
        always_recorded=True,
    ),
    Param(
        "variant",
        Choice(names.ALIBI_VARIANTS),
        "bloom: Press et al., HF BLOOM (bias at positions 0 .. n-1); mpt: HF MPT (same slopes, positions 1-n .. 0).",
        default="bloom",
    ),
)

SINCOS2D_PARAMS: tuple[Param, ...] = (
    Param(
        "grid",
        ranges.GRID_SIDES,
        "Patches per side: H (square) or HxW.",
        required=True,
        short="-g",
        near=("-n", "--seq-len"),
    ),
    Param(
        "d_model", ranges.D_MODEL, "Embedding width, a multiple of 4.", required=True, short="-d", always_recorded=True
    ),
    Param("cls_token", BOOLEAN, "Prepend MAE's all-zero class-token row.", default=False),
    Param("base", ranges.BASE, "Wavelength base.", default=10000.0, always_recorded=True),
)

BIAS_PARAMS: tuple[Param, ...] = (
    Param(
        "bias",
        TEXT,
        "A checkpoint's learned table to gather (.safetensors, .npz, .npy, .h5): adds the array bias.",
    ),
    Param("key", TEXT, "The array of --bias to take (needed when the file holds several)."),
)

RELATIVE_PARAMS: tuple[Param, ...] = (
    Param("scheme", Choice(names.RELATIVE_SCHEMES), "Whose relative positions.", required=True),
    Param(
        "query_length",
        ranges.LENGTH,
        "Query positions (rows).",
        required=True,
        short="-Q",  # -q until 0.1.0; -q is --quiet, as on every command
        always_recorded=True,
        near=("-n", "--seq-len"),
    ),
    Param("key_length", ranges.LENGTH, "Key positions (columns).  [default: offset + query length]", short="-k"),
    Param("buckets", ranges.BUCKETS, "t5, deberta: number of buckets.  [default: 32 for t5]"),
    Param(
        "max_distance",
        ranges.MAX_DISTANCE,
        "t5, deberta: the log buckets' reach; shaw: the clipping distance.  [default: 128 for t5]",
    ),
    Param("causal", BOOLEAN, "t5: the decoder's unidirectional buckets.", default=False),
    Param("offset", ranges.OFFSET, "Position of the first query (tokens already cached).  [default: 0; shaw: K - Q]"),
    *BIAS_PARAMS,
)

WINDOW_PARAMS: tuple[Param, ...] = (
    Param("scheme", Choice(names.WINDOW_SCHEMES), "Whose window attention.", required=True),
    Param("window", ranges.WINDOW_SIDES, "Window size in tokens: H (square) or HxW.", required=True, short="-w"),
    Param(
        "pretrained_window",
        ranges.PRETRAINED_SIDES,
        "swinv2: the window the model was pretrained with (scales the coords).",
    ),
    *BIAS_PARAMS,
)

#: What each kind's tables record, and the type each reads back as.
# fmt: off
_GENERATE_RECORDED: dict[str, ValueType] = {
    "seq_len": ranges.SEQ_LEN, "d_model": ranges.D_MODEL, "base": ranges.BASE, **_QUANTISATION, "preset": TEXT,
    "layout": TEXT, "freq": TEXT, "freq_shift": ranges.FREQ_SHIFT, "min_timescale": ranges.MIN_TIMESCALE,
    "odd": TEXT, "start": ranges.START, "step": ranges.STEP, "padding_idx": ranges.PADDING_ROW,
    "amplitude": ranges.AMPLITUDE,
}
_ROPE_RECORDED: dict[str, ValueType] = {
    "seq_len": ranges.SEQ_LEN, "head_dim": ranges.HEAD_DIM, "theta": ranges.THETA, "layout": TEXT, "scaling": TEXT,
    **_QUANTISATION, "attention_scaling": NUMBER, "attention_scaling_folded": BOOLEAN, "dynamic_base": NUMBER,
    "factor": ranges.FACTOR, "original_max_positions": ranges.POSITIONS, "max_positions": ranges.POSITIONS,
    "low_freq_factor": ranges.FREQ_FACTOR, "high_freq_factor": ranges.FREQ_FACTOR, "beta_fast": ranges.BETA,
    "beta_slow": ranges.BETA, "truncate": BOOLEAN, "mscale": ranges.MSCALE, "mscale_all_dim": ranges.MSCALE,
    "attention_factor": ranges.ATTENTION_FACTOR, "short_factor": ranges.LONGROPE_FACTORS,
    "long_factor": ranges.LONGROPE_FACTORS, "rotary_dim": ranges.ROTARY_DIM, "position_ids_sha256": TEXT,
    "positions_reach": INTEGER, "mrope_section": ranges.MROPE_SECTION, "mrope_interleaved": BOOLEAN,
    "longrope_pair": BOOLEAN, "config_fields": TEXT, "layer_type": TEXT,
}
_SINCOS2D_RECORDED: dict[str, ValueType] = {
    "grid_height": ranges.GRID_SIDE, "grid_width": ranges.GRID_SIDE, "d_model": ranges.D_MODEL, "cls_token": BOOLEAN,
    "base": ranges.BASE, **_QUANTISATION, "layout": TEXT,
}
_RELATIVE_RECORDED: dict[str, ValueType] = {
    "scheme": TEXT, "query_length": ranges.LENGTH, "key_length": ranges.LENGTH, "offset": ranges.OFFSET,
    "buckets": ranges.BUCKETS, "max_distance": ranges.MAX_DISTANCE, "causal": BOOLEAN, "dtype": TEXT,
    "bias_key": TEXT, "bias_heads": INTEGER, "bias_sha256": TEXT,
}
_WINDOW_RECORDED: dict[str, ValueType] = {
    "scheme": TEXT, "window_height": ranges.WINDOW_SIDE, "window_width": ranges.WINDOW_SIDE,
    "pretrained_height": ranges.PRETRAINED_SIDE, "pretrained_width": ranges.PRETRAINED_SIDE, "dtype": TEXT,
    "bias_key": TEXT, "bias_heads": INTEGER, "bias_sha256": TEXT,
}
# fmt: on

#: Every table kind, by its command name, in the order ``posenc --help`` and the docs list them.
KINDS: dict[str, Kind] = {
    "generate": Kind(
        command="generate",
        table="sinusoidal",
        short_help="Write a 1-D sinusoidal table (any framework's).",
        doc=kind_docs.GENERATE,
        params=GENERATE_PARAMS,
        maker="generate",
        lazy=True,
        recorded=_GENERATE_RECORDED,
        from_record=_sinusoidal_from_record,
        work=lambda p: 0,
    ),
    "rope": Kind(
        command="rope",
        table="rope",
        short_help="Write RoPE cos/sin caches and inv_freq.",
        doc=kind_docs.ROPE,
        params=ROPE_PARAMS,
        maker="rope",
        lazy=True,
        recorded=_ROPE_RECORDED,
        recorded_as={
            "attention_scaling": ("attention_scaling_folded",),
            "position_ids": ("position_ids_sha256",),
            "config": ("config_fields",),
        },
        from_record=_rope_from_record,
        work=lambda p: 0,
        files=("position_ids", "config"),
    ),
    "alibi": Kind(
        command="alibi",
        table="alibi",
        short_help="Write ALiBi slopes and bias.",
        doc=kind_docs.ALIBI,
        params=ALIBI_PARAMS,
        maker="alibi",
        lazy=False,
        recorded={"heads": ranges.HEADS, "seq_len": ranges.SEQ_LEN, **_QUANTISATION, "variant": TEXT},
        from_record=_same_names(("heads", "seq_len", "variant", *_ELEMENT_KEYS)),
        work=_alibi_work,
    ),
    "sincos2d": Kind(
        command="sincos2d",
        table="sincos2d",
        short_help="Write a 2-D sincos (MAE) table.",
        doc=kind_docs.SINCOS2D,
        params=SINCOS2D_PARAMS,
        maker="sincos2d",
        lazy=False,
        recorded=_SINCOS2D_RECORDED,
        recorded_as={"grid": ("grid_height", "grid_width")},
        from_record=_sincos2d_from_record,
        work=_sincos2d_work,
    ),
    "relative": Kind(
        command="relative",
        table="relative",
        short_help="Write a relative-position index (T5, DeBERTa, Shaw).",
        doc=kind_docs.RELATIVE,
        params=RELATIVE_PARAMS,
        maker="relative",
        lazy=False,
        recorded=_RELATIVE_RECORDED,
        recorded_as=_BIAS_RECORDED,
        from_record=_same_names(
            ("scheme", "query_length", "key_length", "offset", "buckets", "max_distance", "causal", "dtype")
        ),
        work=lambda p: (
            int(p["query_length"]) * int(p.get("key_length", p["query_length"])) * WORK_BYTES_PER_VALUE["relative"]
        ),
        element=INDEX_ELEMENT,
        files=("bias",),
    ),
    "window": Kind(
        command="window",
        table="window",
        short_help="Write a window attention index (Swin, BEiT, SwinV2).",
        doc=kind_docs.WINDOW,
        params=WINDOW_PARAMS,
        maker="window",
        lazy=False,
        recorded=_WINDOW_RECORDED,
        recorded_as={
            "window": ("window_height", "window_width"),
            "pretrained_window": ("pretrained_height", "pretrained_width"),
            **_BIAS_RECORDED,
        },
        from_record=_window_from_record,
        work=_window_work,
        element=INDEX_ELEMENT,
        files=("bias",),
    ),
}
