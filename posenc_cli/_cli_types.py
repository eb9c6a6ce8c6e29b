"""click parameter types that read numbers as people type them in ASCII, and sizes.

Python's ``int()`` and ``float()`` (and so click's ``INT``, ``FLOAT``, ``IntRange``, ``FloatRange``) accept any
Unicode decimal digit: ``-n ١٢`` meant 12, and full-width or other scripts' digits slipped into recorded commands
and manifests. posenc's number options take ASCII only (digits, sign, point, exponent, ``inf``/``nan`` where a
float allows them); anything else is refused with click's usual message.
"""

from __future__ import annotations

from typing import Any

import click

from .errors import SpecError
from .formats.limits import parse_size


def _ascii(value: Any, kind: str, param: click.Parameter | None, ctx: click.Context | None) -> None:
    if isinstance(value, str) and not value.isascii():
        raise click.BadParameter(f"{value!r} is not a valid {kind}: write it with ASCII digits", ctx=ctx, param=param)


class AsciiInt(click.types.IntParamType):
    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        _ascii(value, "integer", param, ctx)
        return super().convert(value, param, ctx)


class AsciiFloat(click.types.FloatParamType):
    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        _ascii(value, "number", param, ctx)
        return super().convert(value, param, ctx)


class IntRange(click.IntRange):
    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        _ascii(value, "integer", param, ctx)
        return super().convert(value, param, ctx)


class FloatRange(click.FloatRange):
    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        _ascii(value, "number", param, ctx)
        return super().convert(value, param, ctx)


class Size(click.ParamType):  # type: ignore[type-arg]
    """A size in bytes: ``1048576``, ``512M``, ``2GiB`` (:func:`~posenc_cli.formats.limits.parse_size`)."""

    name = "SIZE"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        try:
            return parse_size(str(value))
        except SpecError as exc:
            self.fail(str(exc).replace("max_memory must be", "expected"), param, ctx)


INT = AsciiInt()
FLOAT = AsciiFloat()
SIZE = Size()
