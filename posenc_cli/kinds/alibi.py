"""``posenc alibi``: ALiBi slopes and bias (:mod:`posenc_cli.encodings.alibi`): parameters, maker, record, help."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..dtypes import ElementType
from ..encodings.names import ALIBI_VARIANTS
from ..errors import SpecError
from ..params import INTEGER, TEXT, Choice, Param
from ..ranges import Range
from ..saturation import check_saturate, may_clip, refuse_clipping
from ..system.capacity import check_memory
from ..table import Param as Value
from ..table import Table
from ._shared import ELEMENT_KEYS, QUANTISATION, SEQ_LEN, Kind, arithmetic, check, same_names

__all__ = ["KIND", "PARAMS", "alibi"]

#: The float64 table of the same parameters: the correctly rounded values a quantised table rounds from.
_FLOAT64 = ElementType.of("float64")

HEADS = INTEGER.within(Range("1 <= x <= 2**16", "attention heads (BLOOM-176B has 112)"))


PARAMS: tuple[Param, ...] = (
    Param("heads", HEADS, "Number of attention heads.", required=True, short="-H", always_recorded=True),
    Param(
        "seq_len",
        SEQ_LEN,
        "Key positions of the bias matrix (omit for slopes only).",
        short="-n",
        always_recorded=True,
    ),
    Param(
        "variant",
        Choice(ALIBI_VARIANTS),
        "bloom: Press et al., HF BLOOM (bias at positions 0 .. n-1); mpt: HF MPT (same slopes, positions 1-n .. 0).",
        default="bloom",
    ),
    arithmetic("HF BLOOM build_alibi_tensor (MPT: build_mpt_alibi_tensor)"),
)


DOC = """Write ALiBi slopes (Press et al.) and, with --seq-len, the bias matrix slope[h] * j.

Slopes 2^(-8(h+1)/p) for the largest power of two p <= heads, then every other slope of 2p heads (HF BLOOM
build_alibi_tensor). --variant mpt is HF MPT's build_mpt_alibi_tensor: the same slopes (its round-up construction
gives BLOOM's), the bias over positions 1-seq_len .. 0. Arrays: slopes (heads), bias (heads, seq_len); every value
correctly rounded, or with --arithmetic framework the float32 values BLOOM's (MPT's) code computes.

\b
Examples:
  posenc alibi -H 12 -o slopes.h
  posenc alibi -H 40 -n 2048 -o alibi.npz
  posenc alibi -H 40 -n 2048 --part bias -o bias.npy
  posenc alibi -H 12 -n 2048 --variant mpt -o mpt_alibi.npz
"""


def alibi(
    heads: int,
    seq_len: int | None = None,
    *,
    variant: str = "bloom",
    dtype: str = "float32",
    scale: float | None = None,
    zero_point: int | None = None,
    saturate: bool = False,
    arithmetic: str = "exact",
) -> Table:
    """ALiBi slopes (and, with ``seq_len``, the bias matrix) as a :class:`Table` of kind ``"alibi"``.

    Arrays ``slopes`` (heads,) and ``bias`` (heads, seq_len) = ``slope[h] * j``, HF BLOOM's ``build_alibi_tensor``
    for an all-ones mask; ``variant="mpt"`` is HF MPT's ``build_mpt_alibi_tensor`` (the same slopes; the bias over
    positions ``1 - seq_len .. 0``). See :mod:`posenc_cli.encodings.alibi` for the slopes' rules and
    the exactness argument. Only the MPT variant is recorded (``variant``), BLOOM's being the default.

    ``arithmetic="framework"`` gives the float32 slopes and bias the variant's code computes (BLOOM rounds its base
    ``2**(-8/p)`` to float32 and raises it to integer powers: :mod:`posenc_cli.encodings.framework`); other element
    types round those float32 values. It is recorded; ``"exact"`` (the default) is not.

    The bias grows with ``seq_len``: in a fixed-point or int8 type that cannot hold it (q15 holds [-1, 1]) the table
    is refused with the count of values that would clip, unless ``saturate=True`` (recorded) asks to clip them.

    Examples
    --------
    >>> t = alibi(6, 4)
    >>> t.arrays["slopes"].tolist(), t.arrays["bias"][0].tolist()
    ([0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125], [0.0, 0.25, 0.5, 0.75])
    """
    from ..encodings import alibi as alibi_encoding

    if arithmetic not in ("exact", "framework"):
        raise SpecError(f"arithmetic must be one of exact, framework, got {arithmetic!r}", param="arithmetic")
    check(KIND.inputs, heads=heads, seq_len=seq_len, scale=scale, zero_point=zero_point)
    heads, seq_len = alibi_encoding.check(heads, seq_len)
    if variant not in alibi_encoding.VARIANTS:
        raise SpecError(
            f"variant must be one of {', '.join(alibi_encoding.VARIANTS)}, got {variant!r}", param="variant"
        )
    if seq_len is not None:
        check_memory(heads * seq_len * KIND.work_per_value, f"the ALiBi bias matrix ({heads} x {seq_len})")
    element = ElementType.of(dtype, scale=scale, zero_point=zero_point)
    saturated = check_saturate(saturate, element)
    steepest = 2.0 ** float(max(alibi_encoding.exponents(heads, variant))) * (1 + 2.0**-40)  # above the slopes
    reach = steepest * max(1, seq_len - 1 if seq_len is not None else 1)  # |slope * position| never exceeds it
    if arithmetic == "framework":
        from ..encodings import framework

        float32 = framework.alibi_arrays(heads, seq_len, variant)
        if not saturated and may_clip(element, -reach, reach):
            refuse_clipping(element, {k: v.astype("float64") for k, v in float32.items()})
        arrays = {k: framework.to_element(v, element) for k, v in float32.items()}
    else:
        if not saturated and may_clip(element, -reach, reach):  # the float64 table first, built and dropped
            refuse_clipping(element, alibi_encoding.slopes_and_bias(heads, seq_len, _FLOAT64, variant))
        arrays = alibi_encoding.slopes_and_bias(heads, seq_len, element, variant)
    params: dict[str, Value] = {"heads": heads, "dtype": element.name}
    if variant != "bloom":
        params["variant"] = variant
    if seq_len is not None:
        params["seq_len"] = seq_len
    if element.scale is not None:
        params.update(scale=element.scale, zero_point=element.zero_point)
    if saturated:
        params["saturate"] = True
    if arithmetic != "exact":
        params["arithmetic"] = arithmetic
    axes = {"slopes": ("heads",), "bias": ("heads", "seq_len")}
    return Table("alibi", arrays, params, {key: axes[key] for key in arrays})


def _alibi_work(p: Mapping[str, Any]) -> int:
    rows = p.get("seq_len")
    return int(p["heads"]) * int(rows) * KIND.work_per_value if isinstance(rows, int) else 0


KIND = Kind(
    command="alibi",
    table="alibi",
    short_help="Write ALiBi slopes and bias.",
    doc=DOC,
    params=PARAMS,
    make=alibi,
    lazy=False,
    recorded={"heads": HEADS, "seq_len": SEQ_LEN, **QUANTISATION, "variant": TEXT, "arithmetic": TEXT},
    from_record=same_names(("heads", "seq_len", "variant", "arithmetic", *ELEMENT_KEYS)),
    work_per_value=128,  # its double-double products
    work=_alibi_work,
    identify=(0, "_others:alibi_hypotheses"),
)
