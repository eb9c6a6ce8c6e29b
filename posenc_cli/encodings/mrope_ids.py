"""M-RoPE position ids: the ``(3, seq)`` temporal, height and width ids that transformers' ``get_rope_index`` gives
a prompt of text, images and videos (Qwen2-VL, Qwen2.5-VL, Qwen3-VL, GLM-4.1V; transformers 5.25).

A prompt is a sequence of items, written ``text:N,image:TxHxW,video:TxHxW,...`` (:func:`parse_prompt`): ``N`` text
tokens (the vision start and end markers and a video frame's timestamp are text too), or one image or video whose
grid is ``(T, H, W)`` patches before the merge, as ``image_grid_thw`` and ``video_grid_thw`` hold it. With the
spatial merge size ``m`` (2 in every published model) an image or video is ``T * (H/m) * (W/m)`` tokens, in the
order ``t``, then ``h``, then ``w``.

The ids, with ``p`` the position the item starts at (0 for the first):

- text: ``p, p + 1, ..., p + N - 1`` on all three rows; the next item starts at ``p + N``.
- image or video: row 1 (height) is ``p + h``, row 2 (width) ``p + w`` over the merged grid, row 0 (temporal)
  ``p + floor(t * s)`` with ``s`` the time interval: 1 for an image and for every video of Qwen2-VL; for a
  Qwen2.5-VL video ``s = tokens_per_second * second_per_grid_t``, as float32 (``float32(tokens_per_second) *
  float32(second_per_grid_t)``, rounded), and ``t * s`` a float32 product truncated toward zero, as torch computes
  ``(arange(t) * s).long()``. The next item starts at ``p + max(H, W) // m``: the temporal ids do not move it.
- Qwen3-VL and GLM-4.1V split a video of ``T`` frames into ``T`` videos of one frame, each after its timestamp
  text: a prompt writes each frame as its own ``video:1xHxW`` item, with the text between them.

``rope_deltas`` is ``max(ids) + 1 - seq``: what generation adds to the positions of the tokens after the prompt.
transformers reads a run of tokens of one modality as one image or video, so two images (or two videos) with no text
between them are refused, as transformers cannot give them ids either.

Examples
--------
>>> items = parse_prompt("text:2,image:1x4x4,text:1")
>>> ids, delta = position_ids(items, "qwen2-vl", 2)
>>> ids.tolist(), delta
([[0, 1, 2, 2, 2, 2, 4], [0, 1, 2, 2, 3, 3, 4], [0, 1, 2, 3, 2, 3, 4]], -2)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from posenc_cli.encodings.names import MROPE_MODELS
from posenc_cli.errors import SpecError

__all__ = ["MAX_SIDE", "MAX_TOKENS", "MODELS", "Item", "parse_prompt", "position_ids", "tokens"]

MODELS = MROPE_MODELS
#: The most tokens a prompt may hold: 2**20, eight times the longest context of these models (128k for Qwen2.5-VL);
#: the ids are three int64 rows of this length.
MAX_TOKENS = 1 << 20
#: The largest side of a grid, in patches: Qwen2.5-VL's largest image (16384 px over 14 px patches) is 1171
#: patches wide; video frames are far fewer. With Qwen2.5-VL's largest interval (1000 * 1000) an id stays below
#: ``2**20 + 4095 * 10**6 < 2**32``, the positions ``posenc rope --position-ids`` takes.
MAX_SIDE = 4096
#: The models that give each frame of a video its own item after its timestamp text.
PER_FRAME = ("qwen3-vl", "glm-4.1v")

_ITEM = re.compile(r"(?P<kind>text|image|video):(?:(?P<n>[0-9]+)|(?P<t>[0-9]+)x(?P<h>[0-9]+)x(?P<w>[0-9]+))")


@dataclass(frozen=True)
class Item:
    """One item of a prompt: ``kind`` ``"text"`` (``grid`` ``(N,)``), ``"image"`` or ``"video"`` (``grid``
    ``(T, H, W)`` patches before the merge)."""

    kind: str
    grid: tuple[int, ...]

    def __str__(self) -> str:
        return f"{self.kind}:{'x'.join(map(str, self.grid))}"


def parse_prompt(spec: str) -> tuple[Item, ...]:
    """The items of a prompt written ``text:N,image:TxHxW,video:TxHxW,...`` (spaces around items allowed);
    ``SpecError`` naming the first item that is not one, or a number out of its range.

    Examples
    --------
    >>> [str(item) for item in parse_prompt("text:3, image:1x8x12")]
    ['text:3', 'image:1x8x12']
    >>> parse_prompt("text:3,picture:1x8x12")
    Traceback (most recent call last):
    posenc_cli.errors.SpecError: prompt item 2 'picture:1x8x12' must be text:N, image:TxHxW or video:TxHxW
    """
    if not isinstance(spec, str) or not spec.strip():
        raise SpecError("prompt must be items such as text:5,image:1x8x12,video:2x8x12, got nothing", param="prompt")
    items = []
    for number, word in enumerate(spec.split(","), 1):
        text = word.strip()
        match = _ITEM.fullmatch(text)
        wants_n = match is not None and (match["kind"] == "text") != (match["n"] is not None)
        if match is None or wants_n:
            shape = "text:N, image:TxHxW or video:TxHxW"
            raise SpecError(f"prompt item {number} {text[:40]!r} must be {shape}", param="prompt")
        if match["kind"] == "text":
            grid: tuple[int, ...] = (int(match["n"]),)
            if not 1 <= grid[0] <= MAX_TOKENS:
                raise SpecError(f"prompt item {number} {text!r}: text must be 1 to {MAX_TOKENS} tokens", param="prompt")
        else:
            grid = (int(match["t"]), int(match["h"]), int(match["w"]))
            if not all(1 <= side <= MAX_SIDE for side in grid):
                raise SpecError(
                    f"prompt item {number} {text!r}: each of T, H, W must be 1 to {MAX_SIDE} patches", param="prompt"
                )
        items.append(Item(match["kind"], grid))
    return tuple(items)


def tokens(item: Item, merge: int) -> int:
    """How many tokens ``item`` is in the sequence with spatial merge size ``merge``."""
    if item.kind == "text":
        return item.grid[0]
    t, h, w = item.grid
    return t * (h // merge) * (w // merge)


def check_prompt(items: tuple[Item, ...], model: str, merge: int) -> int:
    """The sequence length of ``items`` for ``model``; ``SpecError`` saying why transformers cannot read them."""
    if model not in MODELS:
        raise SpecError(f"model must be one of {', '.join(MODELS)}, got {model!r}", param="model")
    previous = None
    for number, item in enumerate(items, 1):
        if item.kind != "text":
            _, h, w = item.grid
            if h % merge or w % merge:
                raise SpecError(
                    f"prompt item {number} {item}: H and W must be multiples of the spatial merge size {merge}",
                    param="prompt",
                )
            if model in PER_FRAME and item.kind == "video" and item.grid[0] != 1:
                raise SpecError(
                    f"prompt item {number} {item}: {model} gives each frame its own item after its timestamp text; "
                    f"write the video as {item.grid[0]} video:1x{h}x{w} items with text between them",
                    param="prompt",
                )
            if previous is not None and previous.kind == item.kind:
                raise SpecError(
                    f"prompt items {number - 1} and {number} are {item.kind}s with no text between: transformers "
                    f"reads them as one {item.kind}; put text (the vision end and start markers) between them",
                    param="prompt",
                )
        previous = item
    length = sum(tokens(item, merge) for item in items)
    if length > MAX_TOKENS:
        raise SpecError(f"the prompt is {length} tokens, more than {MAX_TOKENS}", param="prompt")
    return length


def _vision(item: Item, start: int, merge: int, interval: np.float32 | None) -> np.ndarray:
    t, h, w = item.grid[0], item.grid[1] // merge, item.grid[2] // merge
    steps = np.arange(t, dtype=np.int64)
    if interval is not None:  # torch: (arange(t) * float32 interval).long(), a float32 product truncated
        steps = (steps.astype(np.float32) * interval).astype(np.int64)
    ids = np.empty((3, t, h, w), np.int64)
    ids[0] = (start + steps)[:, None, None]
    ids[1] = (start + np.arange(h, dtype=np.int64))[None, :, None]
    ids[2] = (start + np.arange(w, dtype=np.int64))[None, None, :]
    return ids.reshape(3, -1)


def position_ids(
    items: tuple[Item, ...],
    model: str,
    merge: int,
    tokens_per_second: int | None = None,
    second_per_grid_t: float | None = None,
) -> tuple[np.ndarray, int]:
    """The ``(3, seq)`` int64 ids and ``rope_deltas`` that ``model``'s ``get_rope_index`` gives ``items`` (the
    module's docstring says how); ``tokens_per_second`` and ``second_per_grid_t`` are Qwen2.5-VL's (its videos'
    time interval; ``second_per_grid_t`` 1 when not given, as transformers takes it)."""
    length = check_prompt(items, model, merge)
    interval = None
    if model == "qwen2.5-vl":
        per_grid = 1.0 if second_per_grid_t is None else second_per_grid_t
        interval = np.float32(tokens_per_second) * np.float32(per_grid)
    ids = np.empty((3, length), np.int64)
    start = at = 0
    for item in items:
        size = tokens(item, merge)
        if item.kind == "text":
            ids[:, at : at + size] = np.arange(start, start + size, dtype=np.int64)
            start += size
        else:
            ids[:, at : at + size] = _vision(item, start, merge, interval if item.kind == "video" else None)
            start += max(item.grid[1], item.grid[2]) // merge
        at += size
    return ids, int(ids.max()) + 1 - length
