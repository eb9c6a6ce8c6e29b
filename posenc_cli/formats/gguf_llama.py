"""llama.cpp's own names in a GGUF file: the architectures, RoPE metadata keys and RoPE tensors that
:mod:`posenc_cli.formats.gguf` writes for a table of ``posenc rope --runtime llama.cpp`` (``runtime`` recorded as
``"llama.cpp"``).

Such a table records each key's value as a parameter named ``gguf_`` and the key's path after the architecture
(:data:`KEYS`, dots as underscores: ``{arch}.rope.scaling.factor`` is ``gguf_rope_scaling_factor``), and the
architecture as ``gguf_arch``. Every key written comes from this fixed mapping, named as gguf-py's ``Keys`` names
them (``gguf/constants.py``: ``Keys.LLM.CONTEXT_LENGTH``, ``Keys.Rope.*``) and typed as its ``GGUFWriter.add_*``
methods type them (``add_context_length``, ``add_rope_dimension_count``, ``add_rope_scaling_orig_ctx_len``:
uint32; ``add_rope_freq_base``, ``add_rope_scaling_factor``, ``add_rope_scaling_attn_factors``,
``add_rope_scaling_yarn_beta_fast``/``_slow``: float32; ``add_rope_scaling_type``: string); the architecture must
be one of :data:`ARCHITECTURES`. Nothing a file says can name another key: a parameter of another name is only
posenc's own ``posenc.params.<name>``, and a value that its key's type cannot hold (an integer past uint32, a float
past float32's range or not finite, a scaling type llama.cpp does not know) is refused with
:class:`~posenc_cli.errors.FormatError`, never changed.

Tensors (:data:`TENSORS`): the runtime's 1-D arrays under llama.cpp's names (gguf-py's ``MODEL_TENSOR.ROPE_FREQS``,
``ROPE_FACTORS_LONG``, ``ROPE_FACTORS_SHORT``): ``rope_freqs.weight`` (Llama 3's per-frequency divisors),
``rope_factors_long.weight`` and ``rope_factors_short.weight`` (Phi-3's LongRoPE factors).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from ..errors import FormatError
from ..table import Param

__all__ = ["ARCHITECTURES", "KEYS", "RUNTIME", "SCALING_TYPES", "TENSORS", "architecture", "keys", "tensor_name"]

#: The ``runtime`` parameter of the tables these names are for.
RUNTIME = "llama.cpp"
#: llama.cpp's architecture names posenc writes keys for (gguf-py's ``MODEL_ARCH_NAMES`` of ``LLAMA``, ``QWEN2``,
#: ``QWEN3``, ``PHI3``): ``general.architecture`` and the first segment of each key.
ARCHITECTURES = ("llama", "qwen2", "qwen3", "phi3")
#: ``{arch}.rope.scaling.type``'s values (gguf-py's ``RopeScalingType``).
SCALING_TYPES = ("none", "linear", "yarn", "longrope")
#: parameter name -> (the key after ``{arch}.``, its GGUF value type).
KEYS: dict[str, tuple[str, str]] = {
    "gguf_context_length": ("context_length", "uint32"),
    "gguf_rope_dimension_count": ("rope.dimension_count", "uint32"),
    "gguf_rope_freq_base": ("rope.freq_base", "float32"),
    "gguf_rope_scaling_type": ("rope.scaling.type", "string"),
    "gguf_rope_scaling_factor": ("rope.scaling.factor", "float32"),
    "gguf_rope_scaling_original_context_length": ("rope.scaling.original_context_length", "uint32"),
    "gguf_rope_scaling_attn_factor": ("rope.scaling.attn_factor", "float32"),
    "gguf_rope_scaling_yarn_beta_fast": ("rope.scaling.yarn_beta_fast", "float32"),
    "gguf_rope_scaling_yarn_beta_slow": ("rope.scaling.yarn_beta_slow", "float32"),
}
#: array key -> llama.cpp's tensor name (1-D arrays of a runtime table).
TENSORS = {
    "rope_freqs": "rope_freqs.weight",
    "rope_factors_long": "rope_factors_long.weight",
    "rope_factors_short": "rope_factors_short.weight",
}
_FLOAT32_MAX = 3.4028234663852886e38


def architecture(params: Mapping[str, Param]) -> str | None:
    """The architecture of a runtime table's file, ``None`` for any other table; ``FormatError`` for a runtime
    table whose ``gguf_arch`` is missing or none of :data:`ARCHITECTURES`."""
    if params.get("runtime") != RUNTIME:
        return None
    arch = params.get("gguf_arch")
    if not isinstance(arch, str) or arch not in ARCHITECTURES:
        raise FormatError(
            f"a --runtime llama.cpp table records gguf_arch, one of {', '.join(ARCHITECTURES)}; this one records "
            f"{arch!r}"
        )
    return arch


def tensor_name(params: Mapping[str, Param], key: str, ndim: int) -> str | None:
    """llama.cpp's name of array ``key`` of a runtime table (1-D), ``None`` otherwise."""
    if params.get("runtime") == RUNTIME and ndim == 1:
        return TENSORS.get(key)
    return None


def keys(params: Mapping[str, Param]) -> dict[str, tuple[str, Param]]:
    """The llama.cpp keys of a runtime table's parameters: full key -> (GGUF value type, value), checked (module
    docstring); empty for any other table.

    Examples
    --------
    >>> keys({"runtime": "llama.cpp", "gguf_arch": "llama", "gguf_rope_freq_base": 500000.0})
    {'llama.rope.freq_base': ('float32', 500000.0)}
    """
    arch = architecture(params)
    if arch is None:
        return {}
    out: dict[str, tuple[str, Param]] = {}
    for name, (suffix, kind) in KEYS.items():
        if name not in params:
            continue
        value = params[name]
        key = f"{arch}.{suffix}"
        if kind == "uint32":
            ok = isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 32
            expected = "an integer from 0 to 2**32 - 1"
        elif kind == "float32":
            ok = (
                isinstance(value, (int, float))
                and not isinstance(value, bool)
                and math.isfinite(value)
                and abs(value) <= _FLOAT32_MAX
            )
            expected = "a finite number within float32's range"
        else:
            ok = value in SCALING_TYPES
            expected = f"one of {', '.join(SCALING_TYPES)}"
        if not ok:
            raise FormatError(f"parameter {name} ({key}, {kind} in llama.cpp's GGUF) must be {expected}, got {value!r}")
        out[key] = (kind, value)
    return out
