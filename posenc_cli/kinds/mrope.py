"""``posenc mrope``: the M-RoPE position ids transformers' ``get_rope_index`` gives a prompt of text, images and
videos (Qwen2-VL, Qwen2.5-VL, Qwen3-VL, GLM-4.1V; :mod:`posenc_cli.encodings.mrope_ids`): parameters, maker,
record, help."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..dtypes import INDEX_DTYPES
from ..encodings.names import MROPE_MODELS
from ..errors import SpecError
from ..params import INTEGER, NUMBER, TEXT, Choice, Param, ValueType
from ..ranges import Range
from ..system.capacity import check_memory
from ..table import Table
from ._shared import SPATIAL_MERGE_SIZE, Kind, check, same_names

__all__ = ["KIND", "PARAMS", "mrope"]

TOKENS_PER_SECOND = INTEGER.within(
    Range("1 <= x <= 1000", "Qwen2.5-VL's temporal ids per second of video: 2 in its published configs, 25 in Omni")
)
SECOND_PER_GRID_TS = NUMBER.within(
    Range(
        "0 <= x <= 1000",
        "seconds one temporal patch spans (temporal_patch_size / fps: 1.0 at 2 fps); every id stays below 2**32",
    )
)

PARAMS: tuple[Param, ...] = (
    Param("model", Choice(MROPE_MODELS), "Whose get_rope_index (transformers 5.25).", required=True, short="-m"),
    Param(
        "prompt",
        TEXT,
        "The prompt's items in order: text:N (N text tokens), image:TxHxW, video:TxHxW (grid_thw in patches, before "
        "the merge), comma-separated.",
        required=True,
    ),
    Param("spatial_merge_size", SPATIAL_MERGE_SIZE, "The vision config's spatial_merge_size.", default=2),
    Param(
        "tokens_per_second",
        TOKENS_PER_SECOND,
        "qwen2.5-vl: the vision config's tokens_per_second.  [required for a video]",
    ),
    Param(
        "second_per_grid_ts",
        SECOND_PER_GRID_TS,
        "qwen2.5-vl: seconds per temporal patch of every video (the processor's second_per_grid_ts).  [default: 1.0]",
    ),
)

#: The ids' element type: int64 as transformers makes them, or a narrower integer that holds them.
ELEMENT: tuple[Param, ...] = (
    Param(
        "dtype",
        Choice(INDEX_DTYPES),
        "Ids element type (int64 as in transformers).",
        default="int64",
        always_recorded=True,
    ),
)

DOC = """Write the M-RoPE position ids transformers' get_rope_index gives a prompt (Qwen2-VL, Qwen2.5-VL, Qwen3-VL,
GLM-4.1V), ready for posenc rope --position-ids.

ids is (3, seq): the temporal, height and width ids of each token. Text tokens count on from where the last item
left off; an image or video's tokens take its merged grid's (t, h, w) from there; Qwen2.5-VL spaces a video's
temporal ids by tokens_per_second * second_per_grid_ts. Qwen3-VL and GLM-4.1V give each video frame its own item
after its timestamp text: write each frame as video:1xHxW with the text between. The record keeps rope_deltas,
max(ids) + 1 - seq, get_rope_index's second output. docs/tables.md gives every rule.

\b
Examples:
  posenc mrope -m qwen2-vl --prompt text:4,image:1x8x12,text:8 -o ids.npy
  posenc mrope -m qwen2.5-vl --prompt text:4,image:1x8x12,text:4,video:2x8x12,text:8 --tokens-per-second 2 -o ids.npz
  posenc rope --config config.json --position-ids ids.npy -o rope.npz
"""


def mrope(
    model: str,
    prompt: str,
    *,
    spatial_merge_size: int = 2,
    tokens_per_second: int | None = None,
    second_per_grid_ts: float | None = None,
    dtype: str = "int64",
) -> Table:
    """The M-RoPE position ids of ``prompt`` as ``model``'s ``get_rope_index`` gives them, a :class:`Table` of kind
    ``"mrope_ids"``.

    ``prompt`` is ``text:N,image:TxHxW,video:TxHxW,...`` (grids in patches before the merge, as ``image_grid_thw``
    holds them). Array: ``ids`` ``(3, seq)`` (temporal, height, width). Parameters recorded beside the inputs:
    ``seq_len`` and ``rope_deltas`` (``max(ids) + 1 - seq_len``). ``tokens_per_second`` and ``second_per_grid_ts``
    are Qwen2.5-VL's, and refused for the other models. :mod:`posenc_cli.encodings.mrope_ids` gives every rule.

    Examples
    --------
    >>> t = mrope("qwen2-vl", "text:2,image:1x4x4,text:1")
    >>> t.arrays["ids"].tolist(), t.params["rope_deltas"]
    ([[0, 1, 2, 2, 2, 2, 4], [0, 1, 2, 2, 3, 3, 4], [0, 1, 2, 3, 2, 3, 4]], -2)
    """
    from ..encodings import mrope_ids

    check(KIND.inputs, spatial_merge_size=spatial_merge_size, tokens_per_second=tokens_per_second)
    check(KIND.inputs, second_per_grid_ts=second_per_grid_ts)
    if model not in mrope_ids.MODELS:
        raise SpecError(f"model must be one of {', '.join(mrope_ids.MODELS)}, got {model!r}", param="model")
    if dtype not in INDEX_DTYPES:
        raise SpecError(f"dtype must be one of {', '.join(INDEX_DTYPES)}, got {dtype!r}", param="dtype")
    items = mrope_ids.parse_prompt(prompt)
    for name, value in (("tokens_per_second", tokens_per_second), ("second_per_grid_ts", second_per_grid_ts)):
        if value is not None and model != "qwen2.5-vl":
            raise SpecError(f"{name} spaces Qwen2.5-VL's video ids; {model} does not take it", param=name)
    if model == "qwen2.5-vl" and tokens_per_second is None and any(item.kind == "video" for item in items):
        raise SpecError(
            "qwen2.5-vl's video ids need tokens_per_second (2 in Qwen2.5-VL's published configs)",
            param="tokens_per_second",
        )
    length = mrope_ids.check_prompt(items, model, spatial_merge_size)
    check_memory(3 * length * KIND.work_per_value, f"the position ids (3 x {length})")
    ids, delta = mrope_ids.position_ids(items, model, spatial_merge_size, tokens_per_second, second_per_grid_ts)
    if int(ids.max()) > np.iinfo(dtype).max:
        raise SpecError(f"the ids reach {int(ids.max())}, more than {dtype} holds", param="dtype")
    params: dict[str, Any] = {
        "model": model,
        "prompt": ",".join(map(str, items)),
        "spatial_merge_size": spatial_merge_size,
    }
    if tokens_per_second is not None:
        params["tokens_per_second"] = tokens_per_second
    if second_per_grid_ts is not None:
        params["second_per_grid_ts"] = float(second_per_grid_ts)
    params.update(seq_len=length, rope_deltas=delta, dtype=dtype)
    return Table("mrope_ids", {"ids": ids.astype(dtype)}, params, {"ids": ("axis", "token")})


_INPUTS = ("model", "prompt", "spatial_merge_size", "tokens_per_second", "second_per_grid_ts", "dtype")


def _mrope_work(p: Mapping[str, Any]) -> int:
    from ..encodings import mrope_ids

    merge = int(p.get("spatial_merge_size", 2))
    length = sum(mrope_ids.tokens(item, merge) for item in mrope_ids.parse_prompt(str(p["prompt"])))
    return 3 * length * KIND.work_per_value


# fmt: off
RECORDED: dict[str, ValueType] = {
    "model": TEXT, "prompt": TEXT, "spatial_merge_size": SPATIAL_MERGE_SIZE, "tokens_per_second": TOKENS_PER_SECOND,
    "second_per_grid_ts": SECOND_PER_GRID_TS, "seq_len": INTEGER, "rope_deltas": INTEGER, "dtype": TEXT,
}
# fmt: on

KIND = Kind(
    command="mrope",
    table="mrope_ids",
    short_help="Write M-RoPE position ids for a prompt (Qwen-VL, GLM-4.1V).",
    doc=DOC,
    params=PARAMS,
    make=mrope,
    lazy=False,
    recorded=RECORDED,
    from_record=same_names(_INPUTS),
    work_per_value=32,
    work=_mrope_work,
    element=ELEMENT,
)
