"""What ``posenc rope --runtime`` was asked for (:class:`Request`), the value every runtime module's ``table`` takes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...dtypes import ElementType
from ...errors import SpecError
from ...table import Table

if TYPE_CHECKING:
    from ..rope_config import RopeConfig

__all__ = ["Request"]


@dataclass(frozen=True)
class Request:
    """What ``posenc rope`` was asked for, the config merged: ``settings`` holds the RoPE settings (``head_dim``,
    ``theta``, ``layout`` (``None`` when neither given nor the config's), ``scaling``, ``rotary_dim``, the scaling
    mode's fields, ``mrope_section``, ``mrope_interleaved``), each ``None`` where not given; ``seq_len`` as given or
    the config's ``max_position_embeddings`` (``None``: the runtime's own length); ``others`` the rope keywords that
    no runtime layout takes unless its module says so (``position_ids``, ``mrope_section``, ``longrope_pair``, the
    model arrays' ``no_rope_layers`` and the rest), ``None`` or ``False`` where not given."""

    runtime: str
    seq_len: int | None
    settings: dict[str, Any]
    attention_scaling: bool
    element: ElementType
    arithmetic: str
    saturate: bool
    lazy: bool
    from_config: RopeConfig | None
    layer_type: str | None
    work_per_value: int
    others: dict[str, Any] = field(default_factory=dict)
    #: Whether ``seq_len`` was given (a keyword, ``-n``, a record), not taken from the config's
    #: ``max_position_embeddings``: a runtime whose own length differs from that field tells them apart by it.
    seq_len_given: bool = False

    def refuse_others(self, allowed: tuple[str, ...] = ()) -> None:
        """A :class:`SpecError` naming the first keyword given that this runtime's layout does not take."""
        for name, value in self.others.items():
            if name not in allowed and value not in (None, False):
                raise SpecError(
                    f"{name} does not apply to --runtime {self.runtime}: its cache holds positions 0 .. n-1 of one "
                    "RoPE; leave it out, or write posenc's own arrays without --runtime",
                    param=name,
                )

    def caches(self, **overrides: Any) -> Table:
        """posenc's own RoPE table (:func:`posenc_cli.kinds._rope_caches.caches`) for these settings with
        ``overrides`` (``layout="half-width"``, ``seq_len=...``, ``attention_scaling=False``, ``element=...``,
        ``arithmetic=...``, a scaling mode's field): the caches a runtime layout repacks."""
        from .._rope_caches import caches

        settings = dict(self.settings)
        settings["layout"] = settings["layout"] or "half"
        settings["mrope_interleaved"] = bool(settings.get("mrope_interleaved"))
        args: dict[str, Any] = dict(
            attention_scaling=self.attention_scaling, position_ids=None, longrope_pair=False, element=self.element,
            lazy=False, from_config=self.from_config, layer_type=self.layer_type, saturate=self.saturate,
            arithmetic=self.arithmetic, work_per_value=self.work_per_value,
        )  # fmt: skip
        seq_len = overrides.pop("seq_len", self.seq_len)
        for key, value in overrides.items():
            (settings if key in settings else args)[key] = value
        return caches(seq_len, **args, **settings)
