"""Make tests/goldens/mrope_ids/goldens.json: the M-RoPE position ids transformers' own get_rope_index gives.

Not part of posenc and not a test: run by hand in a throwaway venv with torch (CPU) and transformers (README.md).
It holds no framework logic: for each case it builds the token-type row of the prompt (0 text, 1 image, 2 video, one
entry per token: T * (H/m) * (W/m) for a grid), the grids as LongTensors and Qwen2.5-VL's second_per_grid_ts as the
float32 tensor the processor returns, and calls the model class's own get_rope_index unbound, on a stand-in `self`
that holds the model's real config class (with the case's vision settings) and the class's own
get_vision_position_ids. Qwen3-VL and GLM-4.1V get each video's whole grid (T, H, W), which get_rope_index itself
splits into frames; the prompt writes each frame as its own item, with its timestamp text between.

    python tests/goldens/mrope_ids/make_mrope_ids_goldens.py          # writes goldens.json beside this file
    python tests/goldens/mrope_ids/make_mrope_ids_goldens.py --check  # exit 1 if it would change
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
import transformers
from transformers import Glm4vConfig, Qwen2_5_VLConfig, Qwen2VLConfig, Qwen3VLConfig
from transformers.models.glm4v.modeling_glm4v import Glm4vModel
from transformers.models.qwen2_5_vl.modeling_qwen2_5_vl import Qwen2_5_VLModel
from transformers.models.qwen2_vl.modeling_qwen2_vl import Qwen2VLModel
from transformers.models.qwen3_vl.modeling_qwen3_vl import Qwen3VLModel

HERE = Path(__file__).parent
MODELS = {
    "qwen2-vl": (Qwen2VLModel, Qwen2VLConfig),
    "qwen2.5-vl": (Qwen2_5_VLModel, Qwen2_5_VLConfig),
    "qwen3-vl": (Qwen3VLModel, Qwen3VLConfig),
    "glm-4.1v": (Glm4vModel, Glm4vConfig),
}

#: (name, model, prompt, vision settings, second_per_grid_ts or None, videos as get_rope_index takes them or None:
#: the prompt's video items' grids unless given, for Qwen3-VL and GLM-4.1V the whole video before the frame split).
CASES = [
    ("qwen2-vl_text", "qwen2-vl", "text:7", {}, None, None),
    ("qwen2-vl_image", "qwen2-vl", "text:4,image:1x8x12,text:8", {}, None, None),
    ("qwen2-vl_image_video", "qwen2-vl", "text:4,image:1x8x12,text:4,video:2x8x12,text:8", {}, None, None),
    ("qwen2-vl_two_images", "qwen2-vl", "text:3,image:1x4x6,text:2,image:1x10x4,text:1", {}, None, None),
    ("qwen2-vl_long_video", "qwen2-vl", "text:1,video:9x4x6,text:2", {}, None, None),
    ("qwen2-vl_merge1", "qwen2-vl", "image:1x3x5,text:2,video:2x2x3", {"spatial_merge_size": 1}, None, None),
    ("qwen2.5-vl_text", "qwen2.5-vl", "text:5", {"tokens_per_second": 2}, None, None),
    ("qwen2.5-vl-7b_image", "qwen2.5-vl", "text:4,image:1x8x12,text:8", {"tokens_per_second": 2}, None, None),
    (
        "qwen2.5-vl-7b_image_video", "qwen2.5-vl", "text:4,image:1x8x12,text:4,video:2x8x12,text:8",
        {"tokens_per_second": 2}, 1.0, None,
    ),
    (
        "qwen2.5-vl_two_images_video", "qwen2.5-vl", "text:3,image:1x4x6,text:2,image:1x10x4,text:1,video:6x4x4,text:2",
        {"tokens_per_second": 2}, 0.5, None,
    ),
    ("qwen2.5-vl_video_0.7s", "qwen2.5-vl", "text:2,video:12x4x4,text:3", {"tokens_per_second": 2}, 0.7, None),
    ("qwen2.5-vl_video_third", "qwen2.5-vl", "text:2,video:16x2x4,text:3", {"tokens_per_second": 25}, 1 / 3, None),
    ("qwen2.5-vl_video_default_s", "qwen2.5-vl", "video:3x4x4,text:2", {"tokens_per_second": 4}, None, None),
    ("qwen3-vl_text", "qwen3-vl", "text:6", {}, None, None),
    ("qwen3-vl_image", "qwen3-vl", "text:4,image:1x8x12,text:8", {}, None, None),
    (
        "qwen3-vl_image_video", "qwen3-vl", "text:4,image:1x8x12,text:5,video:1x8x12,text:6,video:1x8x12,text:3",
        {}, None, [[2, 8, 12]],
    ),
    ("qwen3-vl_two_images", "qwen3-vl", "text:3,image:1x4x6,text:2,image:1x10x4,text:1", {}, None, None),
    (
        "qwen3-vl_two_videos", "qwen3-vl",
        "text:1,video:1x4x4,text:3,video:1x4x4,text:3,video:1x4x4,text:2,video:1x6x2,text:3,video:1x6x2,text:1",
        {}, None, [[3, 4, 4], [2, 6, 2]],
    ),
    ("glm-4.1v_text", "glm-4.1v", "text:6", {}, None, None),
    ("glm-4.1v_image", "glm-4.1v", "text:4,image:1x8x12,text:8", {}, None, None),
    (
        "glm-4.1v_image_video", "glm-4.1v", "text:4,image:1x8x12,text:5,video:1x8x12,text:6,video:1x8x12,text:3",
        {}, None, [[2, 8, 12]],
    ),
    ("glm-4.1v_two_images", "glm-4.1v", "text:3,image:1x4x6,text:2,image:1x10x4,text:1", {}, None, None),
]  # fmt: skip


def items(prompt: str) -> list[tuple[str, list[int]]]:
    return [(kind, [int(n) for n in grid.split("x")]) for kind, grid in (w.split(":") for w in prompt.split(","))]


def golden(model: str, prompt: str, vision: dict, second_per_grid_ts: float | None, videos: list | None) -> dict:
    cls, config_cls = MODELS[model]
    config = config_cls(vision_config=dict(vision))
    merge = config.vision_config.spatial_merge_size
    types, images, video_items = [], [], []
    for kind, grid in items(prompt):
        if kind == "text":
            types += [0] * grid[0]
            continue
        types += [1 if kind == "image" else 2] * (grid[0] * (grid[1] // merge) * (grid[2] // merge))
        (images if kind == "image" else video_items).append(grid)
    videos = video_items if videos is None else videos
    stand_in = type(
        "StandIn", (), {"config": config, "get_vision_position_ids": cls.get_vision_position_ids}
    )()  # the model's own methods on its own config, without building its weights
    kwargs = {}
    if second_per_grid_ts is not None:
        kwargs["second_per_grid_ts"] = torch.tensor([second_per_grid_ts] * len(videos), dtype=torch.float32)
    mm = torch.tensor([types])
    ids, deltas = cls.get_rope_index(
        stand_in,
        input_ids=torch.zeros_like(mm),
        mm_token_type_ids=mm,
        image_grid_thw=torch.tensor(images, dtype=torch.long) if images else None,
        video_grid_thw=torch.tensor(videos, dtype=torch.long) if videos else None,
        **kwargs,
    )
    return {
        "model": model,
        "prompt": prompt,
        "vision_config": {"spatial_merge_size": merge, **vision},
        "second_per_grid_ts": second_per_grid_ts,
        "video_grid_thw": videos,
        "position_ids": ids[:, 0].tolist(),
        "rope_deltas": int(deltas.reshape(-1)[0]),
    }


def main() -> int:
    out = {
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__},
        "call": "Model.get_rope_index(stand_in, input_ids, mm_token_type_ids, image_grid_thw, video_grid_thw"
        "[, second_per_grid_ts])",
        "goldens": {name: golden(*case) for name, *case in CASES},
    }
    text = json.dumps(out, indent=1, sort_keys=True) + "\n"
    path = HERE / "goldens.json"
    if "--check" in sys.argv:
        same = path.exists() and path.read_text() == text
        print("up to date" if same else "would change")
        return 0 if same else 1
    path.write_text(text)
    print(f"wrote {path} ({len(CASES)} goldens)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
