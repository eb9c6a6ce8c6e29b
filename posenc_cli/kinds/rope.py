"""``posenc rope``: RoPE's cos and sin caches and ``inv_freq``, as HF transformers computes them, from flags or from a
model's ``config.json`` (:mod:`posenc_cli.kinds.rope_config`): its parameters, maker, record and help.

The maker checks every keyword by its parameter and merges them over a config's; the caches are made by
:mod:`posenc_cli.kinds._rope_caches` (imported then, with the RoPE engine: the registry does not load it).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..dtypes import ElementType
from ..encodings.names import ROPE_LAYOUTS, ROPE_RUNTIMES, ROPE_SCALINGS, XPOS_CENTERS
from ..errors import SpecError
from ..formats.gguf_llama import ARCHITECTURES as GGUF_ARCHITECTURES
from ..params import BOOLEAN, INTEGER, INTEGERS, NUMBER, NUMBERS, TEXT, Choice, Param, ValueType
from ..ranges import Range
from ..read import PathLike
from ..table import Table
from ._shared import (
    ELEMENT_KEYS,
    HEAD_DIM,
    HEAD_DIM_RANGE,
    POSITIONS,
    QUANTISATION,
    SEQ_LEN,
    THETA,
    Kind,
    arithmetic,
    check,
    read_as,
)

if TYPE_CHECKING:
    from .rope_config import RopeConfig

__all__ = ["KIND", "PARAMS", "rope"]

ROTARY_DIM = INTEGER.within(HEAD_DIM_RANGE)


MROPE_SECTION = INTEGERS.within(
    Range("0 <= x <= 2**15", "frequencies per M-RoPE section (Qwen2-VL: 16, 24, 24), adding up to rotary_dim / 2")
)


FACTOR = NUMBER.within(
    Range(
        "1e-6 <= x <= 1e6",
        "context extension: 2 to 64 in real configs (Llama 3 8, DeepSeek 40, Phi-3 32); 1 / factor stays within the "
        "engine's frequency multipliers and dynamic's rescaled base stays finite for every length",
    )
)


FREQ_FACTOR = NUMBER.within(
    Range(
        "1e-6 <= x <= 1e6",
        "llama3's low_freq_factor and high_freq_factor (1 and 4) divide original_max_positions into wavelength "
        "thresholds; past these bounds a threshold lies beyond or below every wavelength of a table",
    )
)


BETA = NUMBER.within(
    Range(
        "1e-6 <= x <= 1e6",
        "YaRN's beta_fast and beta_slow count rotations (32 and 1); original_max_positions / (beta * 2 pi), whose "
        "logarithm YaRN takes, stays a finite positive float, and further out the range is clamped anyway",
    )
)


MSCALE = NUMBER.within(
    Range(
        "0 <= x <= 1000",
        "DeepSeek's mscale and mscale_all_dim (0.707 and 1; 0: not given): 0.1 * m * ln(factor) + 1 stays at least "
        "1, a divisor that cannot vanish, and the attention scaling within float16",
    )
)


ATTENTION_FACTOR = NUMBER.within(
    Range(
        "1e-6 <= x <= 1000",
        "the attention scaling multiplies cos and sin (YaRN about 1.1 to 1.4): positive, and within float16's "
        "largest value with a wide margin",
    )
)


LONGROPE_FACTORS = NUMBERS.within(
    Range(
        "2**-32 <= x <= 2**64",
        "each divides a frequency (Phi-3: 1 to about 60): 1 / x stays within the engine's multipliers [2**-64, 2**32]",
    )
)


NO_ROPE_LAYERS = INTEGERS.within(
    Range("0 <= x <= 1", "per layer: 1 applies RoPE, 0 is a NoPE layer (Llama 4, SmolLM3: every fourth)")
)
ATTN_SCALE = NUMBER.within(
    Range(
        "0 <= x <= 1000",
        "Llama 4's attention temperature strength (0.1): log1p(positions / floor_scale) stays below 23, so the "
        "scale stays a finite float32",
    )
)
FLOOR_SCALE = INTEGER.within(
    Range("1 <= x <= 2**32", "Llama 4's temperature step in positions (8192): within a cache's positions")
)
XPOS_SCALE_BASE = INTEGER.within(
    Range(
        "1 <= x <= 2**24",
        "xPos's scale_base (512 in torchscale and rotary-embedding-torch): a position over it is each scale's power",
    )
)
QK_HEAD_DIM = INTEGER.within(
    Range("1 <= x <= 2**20", "DeepSeek's q·k width, qk_nope_head_dim + qk_rope_head_dim (128 + 64)")
)


PARAMS: tuple[Param, ...] = (
    Param(
        "seq_len",
        SEQ_LEN,
        "Positions (rows) of the caches.  [required unless --position-ids gives them]",
        short="-n",
        always_recorded=True,
    ),
    Param(
        "head_dim",
        HEAD_DIM,
        "Dimension per head (even).  [required unless --config gives it]",
        near=("-d", "--d-model"),
    ),
    Param("config", TEXT, "A model's config.json (or its folder): every RoPE setting from it; options override."),
    Param(
        "layer_type", TEXT, "With --config: the layers whose RoPE to take (Gemma: full_attention, sliding_attention)."
    ),
    Param("theta", THETA, "rope_theta, the wavelength base.  [default: 10000, or the config's]"),
    Param(
        "layout",
        Choice(ROPE_LAYOUTS),
        "half: HF/GPT-NeoX rotate_half; interleaved: GPT-J, llama.cpp normal mode.  [default: half, or the "
        "config's model type's]",
    ),
    Param("scaling", Choice(ROPE_SCALINGS), "HF rope_type.  [default: none, or the config's]"),
    Param("factor", FACTOR, "Scaling factor (linear, dynamic, yarn, llama3, longrope, proportional)."),
    Param("original_max_positions", POSITIONS, "Pre-training context length."),
    Param("max_positions", POSITIONS, "max_position_embeddings (dynamic, yarn, longrope)."),
    Param("low_freq_factor", FREQ_FACTOR, "llama3.  [default: 1]"),
    Param("high_freq_factor", FREQ_FACTOR, "llama3.  [default: 4]"),
    Param("beta_fast", BETA, "yarn.  [default: 32]"),
    Param("beta_slow", BETA, "yarn.  [default: 1]"),
    Param("truncate", BOOLEAN, "yarn: floor/ceil the correction range.  [default: on]", pair=True),
    Param("mscale", MSCALE, "yarn: DeepSeek's mscale."),
    Param("mscale_all_dim", MSCALE, "yarn: DeepSeek's mscale_all_dim."),
    Param("attention_factor", ATTENTION_FACTOR, "yarn/longrope: the scaling, given."),
    Param("short_factor", LONGROPE_FACTORS, "longrope: head_dim/2 factors."),
    Param("long_factor", LONGROPE_FACTORS, "longrope: head_dim/2 factors."),
    Param(
        "attention_scaling",
        BOOLEAN,
        "Fold the attention scaling (yarn, longrope) into cos/sin as HF does; --no-attention-scaling leaves it out.",
        default=True,
        pair=True,
    ),
    Param("rotary_dim", ROTARY_DIM, "Partial rotary: rotate only the first R dimensions (caches of R columns)."),
    Param("position_ids", TEXT, "An .npy of integer positions, (seq,) or (3, seq) with --mrope-section: rows there."),
    Param("mrope_section", MROPE_SECTION, "M-RoPE (Qwen2-VL): frequencies per temporal, height, width section."),
    Param("mrope_interleaved", BOOLEAN, "M-RoPE sections interleaved (Qwen3-VL).", default=False),
    Param("longrope_pair", BOOLEAN, "longrope: write both caches, *_short and *_long.", default=False),
    Param(
        "no_rope_layers", NO_ROPE_LAYERS, "Per layer 1 (RoPE) or 0 (NoPE), Llama 4, SmolLM3: the no_rope_layers array."
    ),
    Param("attn_scale", ATTN_SCALE, "Llama 4's attention temperature: the attn_scales array (NoPE query scale)."),
    Param("floor_scale", FLOOR_SCALE, "Llama 4's temperature step in positions.  [default: 8192]"),
    Param("qk_head_dim", QK_HEAD_DIM, "DeepSeek's q·k width: records its softmax_scale (mscale_all_dim folded in)."),
    Param(
        "xpos_scale_base",
        XPOS_SCALE_BASE,
        "xPos (torchscale, rotary-embedding-torch use_xpos) with this scale_base (512): adds the xpos_scale array.",
    ),
    Param(
        "xpos_center",
        Choice(XPOS_CENTERS),
        "xPos: whose centring of the rows (odd --seq-len: torchscale ceil(n/2), rotary-embedding-torch floor(n/2)).  "
        "[default: torchscale]",
    ),
    Param(
        "runtime",
        Choice(ROPE_RUNTIMES),
        "A serving runtime's own cache: its arrays, names, layout and length, as its code makes them.",
    ),
    Param(
        "gguf_arch",
        Choice(GGUF_ARCHITECTURES),
        "--runtime llama.cpp: the llama.cpp architecture whose converter's keys to write.  [default: the config's "
        "model type's, else llama]",
    ),
    arithmetic("HF transformers' ROPE_INIT_FUNCTIONS and rotary forward; ggml: llama.cpp's CPU rope", "ggml"),
)


DOC = """Write RoPE caches: cos and sin (seq_len, head_dim) and inv_freq (head_dim/2), as HF transformers'
LlamaRotaryEmbedding and ROPE_INIT_FUNCTIONS compute them.

cos[p, j] = a * cos(p * inv_freq[k]), sin[p, j] = a * sin(p * inv_freq[k]) with k = j mod head_dim/2 (half)
or j // 2 (interleaved), inv_freq[k] = theta^(-2k/head_dim) scaled by the --scaling mode, and a the mode's
attention scaling (1 except yarn and longrope; --no-attention-scaling leaves it out). dynamic is evaluated at
--seq-len.

--arithmetic exact (the default): every value is the exact value correctly rounded, the table a model's math
defines. --arithmetic framework: the float32 table transformers itself computes (float32 inv_freq, the angle
as one float32 product, cos and sin of it): within about an ulp of transformers' own on any device, where exact
differs by up to |angle| * 2^-24 (3e-4 at 4k positions). Use framework to match a model's logits or a port
checked against transformers; exact for the true table. --arithmetic ggml: the float32 caches llama.cpp's ggml
computes on the CPU (its running product of powf(theta, -2/d), its YaRN ramp), for none, linear and yarn.

--xpos-scale-base B adds xpos_scale (seq_len, head_dim) in the caches' layout, xPos's per-position scale:
zeta_k ** ((p - c) / B) with zeta_k = (2k + 0.4 d) / (1.4 d) and c the centre row; queries multiply by it,
keys by 1 / xpos_scale (torchscale and rotary-embedding-torch: --layout interleaved).

\b
Examples:
  posenc rope -n 4096 --head-dim 128 -o rope.npz
  posenc rope -n 8192 --head-dim 128 --theta 500000 --scaling llama3 --factor 8 \\
      --original-max-positions 8192 -o llama31_rope.h
  posenc rope -n 4096 --head-dim 64 --scaling yarn --factor 4 --original-max-positions 4096 --part cos -o cos.npy
"""


#: The scaling modes' own parameters, in the order ``rope`` unpacks them.
_MODE_FIELDS = (
    "factor", "original_max_positions", "max_positions", "low_freq_factor", "high_freq_factor", "beta_fast",
    "beta_slow", "truncate", "mscale", "mscale_all_dim", "attention_factor", "short_factor", "long_factor",
)  # fmt: skip

#: What a model class adds beside its cache (:mod:`posenc_cli.kinds._rope_model`), each overridden by a keyword given.
_MODEL = ("no_rope_layers", "attn_scale", "floor_scale", "qk_head_dim", "xpos_scale_base", "xpos_center")

#: The settings a config gives (each overridden by a keyword given): the scaling mode's and these.
_SETTINGS = (
    "head_dim", "theta", "layout", "scaling", "rotary_dim", *_MODE_FIELDS, "mrope_section", "mrope_interleaved",
)  # fmt: skip


def rope(
    seq_len: int | None = None,
    head_dim: int | None = None,
    *,
    config: PathLike | None = None,
    layer_type: str | None = None,
    theta: float | None = None,
    layout: str | None = None,
    scaling: str | None = None,
    attention_scaling: bool = True,
    rotary_dim: int | None = None,
    position_ids: object | None = None,
    mrope_section: Sequence[int] | None = None,
    mrope_interleaved: bool = False,
    longrope_pair: bool = False,
    no_rope_layers: Sequence[int] | None = None,
    attn_scale: float | None = None,
    floor_scale: int | None = None,
    qk_head_dim: int | None = None,
    xpos_scale_base: int | None = None,
    xpos_center: str | None = None,
    runtime: str | None = None,
    gguf_arch: str | None = None,
    arithmetic: str = "exact",
    dtype: str = "float32",
    scale: float | None = None,
    zero_point: int | None = None,
    saturate: bool = False,
    lazy: bool = False,
    factor: float | None = None,
    original_max_positions: int | None = None,
    max_positions: int | None = None,
    low_freq_factor: float | None = None,
    high_freq_factor: float | None = None,
    beta_fast: float | None = None,
    beta_slow: float | None = None,
    truncate: bool | None = None,
    mscale: float | None = None,
    mscale_all_dim: float | None = None,
    attention_factor: float | None = None,
    short_factor: Sequence[float] | None = None,
    long_factor: Sequence[float] | None = None,
) -> Table:
    """RoPE caches as HF transformers computes them: a :class:`Table` of kind ``"rope"`` with arrays ``cos`` and
    ``sin`` (seq_len, rotary_dim) and ``inv_freq`` (rotary_dim/2,).

    ``scaling`` is ``none``, ``linear``, ``dynamic``, ``yarn``, ``llama3`` or ``longrope`` with its parameters named
    as in HF's ``rope_parameters`` (``factor``, ``original_max_positions``, ``max_positions``, ``low_freq_factor``,
    ``high_freq_factor``, ``beta_fast``, ``beta_slow``, ``truncate``, ``mscale``, ``mscale_all_dim``,
    ``attention_factor``, ``short_factor``, ``long_factor``); :mod:`posenc_cli.encodings.rope` defines each. HF
    multiplies cos and sin by the mode's attention scaling (YaRN, LongRoPE); ``attention_scaling=False`` leaves it
    out (the parameters record its value either way). ``layout`` ``half`` is HF/GPT-NeoX ``rotate_half``,
    ``interleaved`` GPT-J/llama.cpp's adjacent pairs, ``half-width`` each frequency once (ONNX ``RotaryEmbedding``).
    Every value is correctly rounded (``arithmetic="exact"``).

    - ``arithmetic="framework"``: the float32 tables transformers computes, operation for operation
      (:mod:`posenc_cli.encodings.rope_framework`): ``inv_freq`` in float32 as ``ROPE_INIT_FUNCTIONS`` makes it,
      the angle as one float32 product, its cos and sin correctly rounded, the attention scaling as one float32
      product. Recorded as ``arithmetic``.
    - ``rotary_dim``: the rotated dimensions of a partial rotary model (GPT-NeoX ``rotary_pct``, Phi's
      ``partial_rotary_factor``): the caches and every frequency are over ``rotary_dim``, as HF's ``dim``.
    - ``position_ids`` (integers, ``(seq,)``): the caches' rows at those positions instead of ``0 .. seq_len - 1``
      (``seq_len`` is then their count); dynamic and LongRoPE are evaluated at ``max(position_ids) + 1``, as HF's
      ``dynamic_rope_update`` does. With ``mrope_section`` (Qwen2-VL: ``[16, 24, 24]``) the ids are ``(3, seq)``
      (temporal, height, width) and each frequency takes its section's row, as HF's
      ``apply_multimodal_rotary_pos_emb`` recomposes them (``mrope_interleaved``: Qwen3-VL's interleaved sections).
    - ``xpos_scale_base``: xPos's scale (:mod:`posenc_cli.encodings.xpos`), the array ``xpos_scale`` (float32,
      ``(seq_len, rotary_dim)`` in the caches' ``layout``; ``half-width``: one column per frequency), centred as
      ``xpos_center`` says (``torchscale``, the default, or ``rotary-embedding-torch``). Queries are multiplied by
      it and keys by its reciprocal; both sources use the ``interleaved`` layout. Not with ``position_ids``.
    - ``longrope_pair``: both LongRoPE caches, ``cos_short``/``sin_short``/``inv_freq_short`` and the ``_long``
      ones, whatever ``seq_len`` is (ONNX Runtime GenAI bakes both).

    - ``dtype`` a fixed-point type or int8: values the type cannot hold are refused with their count
      (:mod:`posenc_cli.saturation`), before anything is made in it: YaRN's and LongRoPE's attention scaling folded
      into cos and sin (1.1386 for Qwen2.5's factor 4) takes them beyond q15's [-1, 1]. The ways out are
      ``attention_scaling=False`` (cos and sin in [-1, 1], the scaling recorded as ``attention_scaling``, the
      scalar llama.cpp and TensorRT-LLM take), a type with integer bits (``fixed16.14``), or ``saturate=True``,
      which clips them to the type's ends and is recorded. An ``inv_freq`` entry that rounds to 0 in the type is
      not clipping (every entry is as near its exact value as the type allows) and is not refused; a
      :class:`~posenc_cli.errors.PosencWarning` names how many, since a kernel that computes its angles from
      ``inv_freq`` would leave those dimensions unrotated.

    - ``config``: a model's ``config.json`` (or its folder), read as transformers reads its RoPE
      (:mod:`posenc_cli.kinds.rope_config`): every parameter above comes from it, ``seq_len`` defaults to its
      ``max_position_embeddings``, ``layer_type`` picks Gemma's ``full_attention`` or ``sliding_attention``, and
      any keyword given overrides the config (a ``scaling`` other than the config's drops its scaling fields). The
      table records the config fields it read (``config_fields``) and every value, so it regenerates without the
      file.

    Examples
    --------
    >>> t = rope(8, 64, scaling="yarn", factor=4.0, original_max_positions=4096)
    >>> t.arrays["cos"].shape, t.arrays["inv_freq"].shape, round(t.params["attention_scaling"], 6)
    ((8, 64), (32,), 1.138629)
    >>> [round(float(v), 4) for v in rope(head_dim=8, position_ids=[5, 0, 5]).arrays["cos"][:, 0]]
    [0.2837, 1.0, 0.2837]
    """
    given = dict(locals())  # every keyword as given: each checked by its parameter, and merged over a config's
    check(KIND.inputs, **{p.name: given[p.name] for p in KIND.inputs})
    modes = next(p.type for p in PARAMS if p.name == "arithmetic")
    assert isinstance(modes, Choice)
    if arithmetic not in modes.choices:  # a record or an API call: the command line's Choice never lets one through
        raise SpecError(f"arithmetic must be {modes.expected}, got {arithmetic!r}", param="arithmetic")
    from ._rope_caches import caches

    element = ElementType.of(dtype, scale=scale, zero_point=zero_point)
    settings = {name: given[name] for name in _SETTINGS}  # what a config may give, and a keyword override
    settings["mrope_interleaved"] = mrope_interleaved or None
    from_config: RopeConfig | None = None
    configured: set[str] = set()  # the settings the config gave, or that follow from what it gave (yarn's factor)
    if config is not None:
        from .rope_config import rope_settings

        from_config = rope_settings(config, typed_as={p.name: p.type for p in PARAMS}, layer_type=layer_type)
        merged = dict(from_config.settings)
        if scaling is not None and scaling != merged["scaling"]:  # another mode: the config's own fields go
            merged = {k: v for k, v in merged.items() if k not in _MODE_FIELDS}
        configured = {k for k, v in settings.items() if v is None}
        merged.update({k: v for k, v in settings.items() if v is not None})
        if seq_len is None and position_ids is None and from_config.seq_len is not None:
            seq_len = from_config.seq_len
            configured.add("seq_len")
        settings = {name: merged.get(name) for name in settings}
    elif layer_type is not None:
        raise SpecError("layer_type picks a layer type of a config: give the config (--config)", param="layer_type")
    settings["mrope_interleaved"] = bool(settings["mrope_interleaved"])
    model = {name: given[name] for name in _MODEL}  # what a model class adds (:mod:`._rope_model`)
    model["no_rope_layers"] = read_as(KIND.inputs, "no_rope_layers", no_rope_layers)
    model_fields: tuple[str, ...] = ()
    if config is not None:
        from ._rope_model import model_settings

        from_model = model_settings(config, typed_as={p.name: p.type for p in PARAMS})
        taken = [f for k, each in from_model.fields.items() if model[k] is None for f in each]
        model_fields = tuple(dict.fromkeys(taken))
        model.update({k: v for k, v in from_model.settings.items() if model[k] is None})
    if runtime is not None:  # a runtime's own arrays, names and length (:mod:`posenc_cli.kinds.runtimes`)
        from .runtimes import Request, runtime_table

        request = Request(
            runtime=runtime, seq_len=seq_len, settings=settings, attention_scaling=attention_scaling,
            element=element, arithmetic=arithmetic, saturate=saturate, lazy=lazy, from_config=from_config,
            layer_type=layer_type, work_per_value=KIND.work_per_value,
            seq_len_given=seq_len is not None and "seq_len" not in configured,
            others={k: given[k] for k in ("position_ids", "mrope_section", "longrope_pair", *_MODEL, "gguf_arch")},
        )  # fmt: skip
        with _named_config(config, configured):
            return runtime_table(request)
    if gguf_arch is not None:
        raise SpecError("gguf_arch applies to --runtime llama.cpp", param="gguf_arch")
    settings["layout"] = settings["layout"] or "half"  # a keyword, else the config's model type's, else half
    with _named_config(config, configured):
        table = caches(
            seq_len, attention_scaling=attention_scaling, position_ids=position_ids,
            longrope_pair=longrope_pair, element=element, lazy=lazy, from_config=from_config, layer_type=layer_type,
            saturate=saturate, arithmetic=arithmetic, work_per_value=KIND.work_per_value, **settings,
        )  # fmt: skip
    if not any(v is not None for v in model.values()):
        return table
    from ._rope_model import with_model_arrays

    return with_model_arrays(table, positions=position_ids, arithmetic=arithmetic, fields=model_fields, **model)


@contextlib.contextmanager
def _named_config(config: PathLike | None, configured: set[str]) -> Iterator[None]:
    """A :class:`SpecError` about a value the config gave (not one typed) names the config (``--config``): the
    value is wrong there, and the option it would blame was never given."""
    try:
        yield
    except SpecError as exc:
        if config is not None and exc.param in configured:
            raise SpecError(f"{exc} (a value from the config {os.fspath(config)!r})", param="config") from None
        raise


def _rope_from_record(p: Mapping[str, Any]) -> dict[str, Any]:
    """Every input is recorded by its own name except ``attention_scaling`` (fold the scaling into cos and sin),
    recorded as ``attention_scaling_folded``: the recorded ``attention_scaling`` is the scaling's value."""
    if "position_ids_sha256" in p:
        raise SpecError(
            "the caches were made at given position ids (--position-ids), which the file does not hold: they cannot "
            "be made again from its parameters",
            param="position_ids",
        )
    inputs = {param.name for param in PARAMS} | set(ELEMENT_KEYS)
    skip = {"attention_scaling", "config", "layer_type"}  # a config's values are all recorded in their own names
    args = {key: value for key, value in p.items() if key in inputs and key not in skip}
    if "attention_scaling_folded" in p:
        args["attention_scaling"] = p["attention_scaling_folded"]
    return args


# fmt: off
RECORDED: dict[str, ValueType] = {
    "seq_len": SEQ_LEN, "head_dim": HEAD_DIM, "theta": THETA, "layout": TEXT, "scaling": TEXT,
    **QUANTISATION, "attention_scaling": NUMBER, "attention_scaling_folded": BOOLEAN, "dynamic_base": NUMBER,
    "factor": FACTOR, "original_max_positions": POSITIONS, "max_positions": POSITIONS,
    "low_freq_factor": FREQ_FACTOR, "high_freq_factor": FREQ_FACTOR, "beta_fast": BETA,
    "beta_slow": BETA, "truncate": BOOLEAN, "mscale": MSCALE, "mscale_all_dim": MSCALE,
    "attention_factor": ATTENTION_FACTOR, "short_factor": LONGROPE_FACTORS,
    "long_factor": LONGROPE_FACTORS, "rotary_dim": ROTARY_DIM, "position_ids_sha256": TEXT,
    "positions_reach": INTEGER, "mrope_section": MROPE_SECTION, "mrope_interleaved": BOOLEAN,
    "longrope_pair": BOOLEAN, "config_fields": TEXT, "layer_type": TEXT, "arithmetic": TEXT,
    "no_rope_layers": NO_ROPE_LAYERS, "attn_scale": ATTN_SCALE, "floor_scale": FLOOR_SCALE,
    "qk_head_dim": QK_HEAD_DIM, "softmax_scale": NUMBER, "xpos_scale_base": XPOS_SCALE_BASE, "xpos_center": TEXT,
    "runtime": TEXT, "gguf_arch": TEXT, "gguf_context_length": INTEGER, "gguf_rope_dimension_count": INTEGER,
    "gguf_rope_freq_base": NUMBER, "gguf_rope_scaling_type": TEXT, "gguf_rope_scaling_factor": NUMBER,
    "gguf_rope_scaling_original_context_length": INTEGER, "gguf_rope_scaling_attn_factor": NUMBER,
    "gguf_rope_scaling_yarn_beta_fast": NUMBER, "gguf_rope_scaling_yarn_beta_slow": NUMBER,
}

# fmt: on

KIND = Kind(
    command="rope",
    table="rope",
    short_help="Write RoPE cos/sin caches and inv_freq.",
    doc=DOC,
    params=PARAMS,
    make=rope,
    lazy=True,
    recorded=RECORDED,
    recorded_as={
        "attention_scaling": ("attention_scaling_folded",),
        "position_ids": ("position_ids_sha256",),
        "config": ("config_fields",),
    },
    from_record=_rope_from_record,
    work_per_value=64,  # caches built whole (position ids): bfloat16 peaks at 57 bytes a value, float32 at 6
    files=("position_ids", "config"),
    identify=(1, "_rope:rope_hypotheses"),
)
