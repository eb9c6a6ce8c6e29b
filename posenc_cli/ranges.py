"""The range of every numeric parameter posenc takes, each with the reason for it: one declaration per parameter.

Each range is a :class:`Range` on the parameter's value type (:meth:`posenc_cli.params.ValueType.within`), so that
every surface applies the same check and says the same thing:

- the click option of ``posenc <command>`` and its ``--help`` (:mod:`posenc_cli.cli.options`), and the reference
  ``docs/commands.md`` with the reasons below (:mod:`posenc_cli.cli.reference`);
- the manifest key of ``posenc build`` (:meth:`~posenc_cli.params.ValueType.from_toml`);
- the parameters ``posenc verify`` and ``inspect`` read back from a file
  (:meth:`~posenc_cli.params.ValueType.from_value`, through :attr:`posenc_cli.kinds.Kind.recorded`);
- the API keyword (:func:`check`, called by the makers of :mod:`posenc_cli.make`);
- a model's ``config.json`` (:mod:`posenc_cli.model_config`), whose fields are checked by the keyword they become.

The kinds' parameters (:mod:`posenc_cli.kinds`) take these types; :data:`BY_NAME` holds them by API keyword (one
name everywhere), and ``tests/test_ranges.py`` holds the two together.

How a range is chosen: what real models use, with a wide margin, and no further than the arithmetic stays finite
and exact (positions below ``2**32``, frequency multipliers within ``[2**-64, 2**32]``, every float64 step finite).
A value outside is refused, whatever the mode or command would have made of it: the table posenc would write is
either the one at the bound or not a positional encoding any model uses.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from fractions import Fraction

from .errors import SpecError
from .params import GRID, INTEGER, INTEGERS, NUMBER, NUMBERS, ROW, ValueType, spell

__all__ = ["BY_NAME", "CONFIG", "Range", "check"]

_BOUND = r"-?(?:2\*\*-?[0-9]+|[0-9]+(?:\.[0-9]+)?(?:e[+-]?[0-9]+)?)"
_RANGE = re.compile(rf"(?P<lo>{_BOUND}) (?P<lo_op><=?) x (?P<hi_op><=?) (?P<hi>{_BOUND})(?P<nonzero> and x != 0)?")


def _bound(text: str) -> Fraction:
    """A bound as a range spells it (``4096``, ``1e-6``, ``2**-32``, ``-2**32``), exactly."""
    sign = -1 if text.startswith("-") else 1
    body = text.lstrip("-")
    if body.startswith("2**"):
        return sign * Fraction(2) ** int(body[3:])
    return sign * Fraction(body)


@dataclass(frozen=True)
class Range:
    """A finite interval of numbers, declared as a person reads it, and the reason for it.

    ``text`` is ``"LO < x <= HI"`` (``<`` excludes a bound, ``<=`` includes it), optionally followed by ``" and x !=
    0"``; a bound is an integer, a decimal (``1e12``, ``0.5``) or a power of two (``2**32``, ``-2**32``, ``2**-32``),
    taken exactly. A value is in the range when it is a real number (not a boolean, not NaN) within it; the
    comparison is exact, so ``2**32 + 1`` is outside ``x <= 2**32`` and ``1e-320`` inside ``0 < x``.

    Examples
    --------
    >>> r = Range("1 < x <= 1e12", "why")
    >>> 1e12 in r, 1.0 in r, float("nan") in r, float("inf") in r, 10**400 in r
    (True, False, False, False, False)
    >>> 0.0 in Range("-2**32 < x < 2**32 and x != 0", "why"), -0.0 in Range("0 <= x <= 1", "why")
    (False, True)
    """

    text: str
    why: str
    lo: Fraction = field(init=False, repr=False, compare=False)
    hi: Fraction = field(init=False, repr=False, compare=False)
    lo_open: bool = field(init=False, repr=False, compare=False)
    hi_open: bool = field(init=False, repr=False, compare=False)
    nonzero: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        parsed = _RANGE.fullmatch(self.text)
        if parsed is None:
            raise ValueError(f"a range is 'LO <[=] x <[=] HI [and x != 0]', got {self.text!r}")
        lo, hi = _bound(parsed["lo"]), _bound(parsed["hi"])
        if not lo < hi:
            raise ValueError(f"an empty range: {self.text!r}")
        object.__setattr__(self, "lo", lo)
        object.__setattr__(self, "hi", hi)
        object.__setattr__(self, "lo_open", parsed["lo_op"] == "<")
        object.__setattr__(self, "hi_open", parsed["hi_op"] == "<")
        object.__setattr__(self, "nonzero", parsed["nonzero"] is not None)

    def __contains__(self, value: object) -> bool:
        import numpy as np

        real = (int, float, Fraction, np.integer, np.floating)
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, real):
            return False
        number: int | float | Fraction = int(value) if isinstance(value, (int, np.integer)) else value  # type: ignore[assignment]
        if isinstance(number, (float, np.floating)):
            number = float(number)
            if math.isnan(number):
                return False
        above = number > self.lo if self.lo_open else number >= self.lo
        below = number < self.hi if self.hi_open else number <= self.hi
        return above and below and not (self.nonzero and number == 0)


# ------------------------------------------------------------------------------------------------ positions
_POSITIONS = Range(
    "1 <= x <= 2**32",
    "positions 0 .. 2**32 - 1: a row times a 21-bit piece of a frequency stays exact in float64, which every value's "
    "correct rounding rests on; 4 billion tokens is far past any model's context",
)
SEQ_LEN = INTEGER.within(_POSITIONS)
#: RoPE's pre-training length and max_position_embeddings: 2k to 128k in real configs.
POSITIONS = INTEGER.within(_POSITIONS)
_PADDING = Range("0 <= x < 2**32", "a row of a table of at most 2**32 rows")
PADDING_IDX = ROW.within(
    _PADDING,
    expected=f'a row index (an integer with {_PADDING.text}) or "none"',
    typed=f"a row index (an integer with {_PADDING.text}) or none",
)
PADDING_ROW = INTEGER.within(_PADDING)  # as a table records it
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

# -------------------------------------------------------------------------------------------------- widths
D_MODEL = INTEGER.within(
    Range("1 <= x <= 2**20", "columns: the widest models have 2**14; each column's constants take microseconds")
)
_HEAD_DIM = Range(
    "2 <= x <= 2**16",
    "RoPE rotates pairs; heads are 64 to 512 wide (DeepSeek's rotary part 64, Gemma 4's global heads 512)",
)
HEAD_DIM = INTEGER.within(_HEAD_DIM)
ROTARY_DIM = INTEGER.within(_HEAD_DIM)
MROPE_SECTION = INTEGERS.within(
    Range("0 <= x <= 2**15", "frequencies per M-RoPE section (Qwen2-VL: 16, 24, 24), adding up to rotary_dim / 2")
)
PARTIAL_ROTARY_FACTOR = NUMBER.within(
    Range("0 < x <= 1", "the share of head_dim rotated (GPT-NeoX rotary_pct 0.25, Phi-2 0.4, ChatGLM 0.5)")
)

# ---------------------------------------------------------------------------------------------------- bases
_BASE = Range(
    "1 < x <= 1e12",
    "wavelengths grow with the base: 1 or less spreads none (10000 in most models, 500000 Llama 3, 1e6 Qwen2 and "
    "Gemma 3, up to about 5e10 in long-context fine-tunes); past 1e12 the slowest column turns less than "
    "2**32 / 1e12 < 0.005 rad over every position posenc makes",
)
BASE = NUMBER.within(_BASE)
THETA = NUMBER.within(_BASE)
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

# ---------------------------------------------------------------------------------------------- RoPE scaling
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

# ---------------------------------------------------------------------------------------------- other kinds
HEADS = INTEGER.within(Range("1 <= x <= 2**16", "attention heads (BLOOM-176B has 112)"))
_GRID_SIDE = Range("1 <= x <= 2**16", "patches per side (ViT: 14 to 64)")
GRID_SIDES = GRID.within(_GRID_SIDE)
GRID_SIDE = INTEGER.within(_GRID_SIDE)  # as a table records it
_WINDOW_SIDE = Range(
    "1 <= x <= 256", "Swin 7 or 12, SwinV2 up to 24, BEiT 14 to 24; the index of a 256 x 256 window holds 2**32 entries"
)
WINDOW_SIDES = GRID.within(_WINDOW_SIDE)
WINDOW_SIDE = INTEGER.within(_WINDOW_SIDE)  # as a table records it
_PRETRAINED_SIDE = Range("0 <= x <= 256", "as the window's; 0x0 is timm's default: no pretrained window")
PRETRAINED_SIDES = GRID.within(_PRETRAINED_SIDE)
PRETRAINED_SIDE = INTEGER.within(_PRETRAINED_SIDE)  # as a table records it
_LENGTH = Range(
    "1 <= x <= 2**22", "query and key positions: past any model's context, and a (Q, K) index is the caller's to afford"
)
LENGTH = INTEGER.within(_LENGTH)
OFFSET = INTEGER.within(Range("0 <= x <= 2**22", "tokens already cached before the first query"))
BUCKETS = INTEGER.within(
    Range("2 <= x <= 2**10", "T5 32, DeBERTa-v3 256 (at least 4, and 2 for T5's decoder: checked by scheme)")
)
MAX_DISTANCE = INTEGER.within(Range("1 <= x <= 2**20", "T5 128, DeBERTa-v3 512, Shaw 16 to 64"))

# ------------------------------------------------------------------------------------------- element, output
SCALE = NUMBER.within(
    Range(
        "2**-126 <= x <= 2**127",
        "the real value of one int8 step (about 1/127): TFLite and ONNX store it as a float32, whose normal numbers "
        "these are",
    )
)
ZERO_POINT = INTEGER.within(Range("-128 <= x <= 127", "an int8 code"))
ALIGN = INTEGER.within(Range("1 <= x <= 4096", "bytes, a power of two (checked): 4096 is a page"))

#: Every API keyword that takes a number, and its type with its range: the same name is the option, the manifest
#: key and the recorded parameter (``tests/test_ranges.py`` checks that every kind's parameter is this type).
BY_NAME: dict[str, ValueType] = {
    "seq_len": SEQ_LEN, "original_max_positions": POSITIONS, "max_positions": POSITIONS,
    "padding_idx": PADDING_IDX, "start": START, "step": STEP, "d_model": D_MODEL, "head_dim": HEAD_DIM,
    "rotary_dim": ROTARY_DIM, "mrope_section": MROPE_SECTION, "base": BASE, "theta": THETA,
    "freq_shift": FREQ_SHIFT, "min_timescale": MIN_TIMESCALE, "amplitude": AMPLITUDE, "factor": FACTOR,
    "low_freq_factor": FREQ_FACTOR, "high_freq_factor": FREQ_FACTOR, "beta_fast": BETA, "beta_slow": BETA,
    "mscale": MSCALE, "mscale_all_dim": MSCALE, "attention_factor": ATTENTION_FACTOR,
    "short_factor": LONGROPE_FACTORS, "long_factor": LONGROPE_FACTORS, "heads": HEADS, "grid": GRID_SIDES,
    "window": WINDOW_SIDES, "pretrained_window": PRETRAINED_SIDES, "query_length": LENGTH, "key_length": LENGTH,
    "offset": OFFSET, "buckets": BUCKETS, "max_distance": MAX_DISTANCE, "scale": SCALE, "zero_point": ZERO_POINT,
    "align": ALIGN,
}  # fmt: skip
#: Fields of a model's config.json that are no parameter of posenc's but take a range of their own.
CONFIG: dict[str, ValueType] = {"partial_rotary_factor": PARTIAL_ROTARY_FACTOR, "rotary_pct": PARTIAL_ROTARY_FACTOR}


def check(**values: object) -> None:
    """The API's check of its keywords: :class:`~posenc_cli.errors.SpecError` naming the first whose value is a
    number (or holds numbers) outside its range (:data:`BY_NAME`). ``None`` (not given) passes, and so does a
    value of another type: the maker's own check says what is wrong with it.

    Examples
    --------
    >>> check(theta=500000.0, seq_len=None)
    >>> check(beta_fast=1e308)
    Traceback (most recent call last):
    posenc_cli.errors.SpecError: beta_fast must be a number with 1e-6 <= x <= 1e6, got 1e+308
    """
    for name, value in values.items():
        kind = BY_NAME[name]
        if value is not None and not kind.holds(value):
            raise SpecError(f"{name} must be {kind.expected}, got {spell(value)}", param=name)
