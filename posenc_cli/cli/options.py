"""click options built from the registry (:mod:`posenc_cli.kinds`, :mod:`posenc_cli.params`): the one place a
:class:`~posenc_cli.params.Param` becomes an option, so that the flag, the type, the default and the help of every
command come from its record."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import click

from .._cli_types import FLOAT, INT, SIZE
from ..errors import did_you_mean
from ..kinds import OUTPUT, RUN
from ..params import INTEGER, NUMBER, TEXT, Choice, Param, ValueType, Wrong

__all__ = [
    "ClickChoice", "ParamOption", "click_type", "format_lists", "listed", "max_memory", "option", "options",
    "with_format_lists", "write_options",
]  # fmt: skip

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


class _Typed(click.ParamType):  # type: ignore[type-arg]
    """A registry value type read from what was typed (:meth:`~posenc_cli.params.ValueType.from_text`)."""

    def __init__(self, kind: ValueType) -> None:
        self.kind = kind
        self.name = kind.metavar

    def get_metavar(self, *args: Any, **kwargs: Any) -> str | None:
        """A list of names (``[float32|...|fixedT.F]``) as it is spelled, as click shows a Choice; any other
        metavar as click shows it (upper case)."""
        return self.kind.metavar if self.kind.metavar.startswith("[") else None

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if not isinstance(value, str):
            return value  # a default, already typed
        try:
            return self.kind.from_text(value)
        except Wrong:
            names = [name for name in self.kind.metavar.strip("[]").split("|") if "." not in name]  # not fixedT.F
            hint = did_you_mean(value, names) if self.kind.metavar.startswith("[") else ""
            self.fail(f"expected {self.kind.typed or self.kind.expected}, got {value!r}{'; ' + hint if hint else ''}",
                      param, ctx)  # fmt: skip


class ClickChoice(click.Choice):  # type: ignore[type-arg]
    """click's choice of names, whose error also says which names the value is probably a typo of (``-p fairsq``:
    "Did you mean 'fairseq'?", :func:`~posenc_cli.errors.did_you_mean`): every closed list of names a command
    takes is one of these."""

    def get_invalid_choice_message(self, value: Any, ctx: click.Context | None) -> str:
        hint = did_you_mean(value, [str(choice) for choice in self.choices])
        said = super().get_invalid_choice_message(value, ctx)
        return f"{said} {hint[0].upper()}{hint[1:]}" if hint else said


class _Ranged(click.ParamType):  # type: ignore[type-arg]
    """An integer or a number read as click's ASCII ``INT`` or ``FLOAT`` reads it, then held to the registry type's
    range (:class:`~posenc_cli.ranges.Range`); a value outside is refused as it was typed."""

    def __init__(self, number: Any, kind: ValueType) -> None:
        self.number, self.kind = number, kind
        self.name = number.name

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if not isinstance(value, str):
            return value  # a default, already typed
        read = self.number.convert(value, param, ctx)
        if not self.kind.holds(read):
            self.fail(f"expected {self.kind.expected}, got {value!r}", param, ctx)
        return read


def click_type(kind: ValueType) -> Any:
    """The click type of a registry value type (ASCII numbers: :mod:`posenc_cli._cli_types`; a range checked)."""
    for plain, number in ((INTEGER, INT), (NUMBER, FLOAT)):
        if kind is plain:
            return number
        if kind.range is not None and type(kind) is type(plain):
            return _Ranged(number, kind)
    if kind is TEXT:
        return click.STRING
    if isinstance(kind, Choice):
        return ClickChoice(kind.choices)
    return _Typed(kind)


class ParamOption(click.Option):
    """A click option made from a :class:`~posenc_cli.params.Param`, which it keeps (``record``)."""

    def __init__(self, *args: Any, record: Param, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.record = record
        self.near = record.near


def option(param: Param, **overrides: Any) -> Decorator:
    """The click option of ``param``: ``-s, --long NAME`` (``--x/--no-x`` for a pair), its type, default, help."""
    flags = [param.short] if param.short else []
    flags.append(f"{param.flag}/{param.negative}" if param.pair else param.flag)
    settings: dict[str, Any] = {"help": param.full_help, "cls": ParamOption, "record": param}
    if param.is_flag:
        settings.update(is_flag=True, default=False)
    elif param.pair:
        settings.update(default=param.default)
    else:
        settings.update(type=click_type(param.type), required=param.required)
        if param.default is not None:  # click 8.3+: an explicit None default would count as given
            settings["default"] = param.default
    settings.update(overrides)
    return click.option(*flags, param.name, **settings)


def options(params: Sequence[Param], **overrides: dict[str, Any]) -> Decorator:
    """Every option of ``params``, in their order; ``overrides`` maps a param's name to click settings."""

    def decorate(f: Callable[..., Any]) -> Callable[..., Any]:
        for param in reversed(params):
            f = option(param, **overrides.get(param.name, {}))(f)
        return f

    return decorate


def write_options(*, required: bool = True) -> Decorator:
    """Where and how to write (:data:`~posenc_cli.kinds.OUTPUT`) and the switches (:data:`~posenc_cli.kinds.RUN`),
    ``-o`` first: the same options, with the same short forms, in the same order, on every command that writes a
    table (a short option has one meaning on every command: ``tests/test_cli.py`` walks them)."""
    output, *switches = RUN
    return options([output, *OUTPUT, *switches], output={"required": required})


def listed(words: Sequence[str], last: str = "or") -> str:
    """``a, b or c`` (``last`` the word before the last one): a list as a help sentence spells it."""
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} {last} {words[-1]}"


def format_lists() -> dict[str, str]:
    """The lists of formats help texts name, from the registry (:data:`~posenc_cli.formats.FORMATS`): ``formats``,
    the first suffix of every format; ``readable``, of those posenc reads back (:func:`posenc_cli.api.load`);
    ``write_only``, of the others."""
    from ..formats import FORMATS  # the registry, and numpy behind it: only for the help that names them

    def suffixes(readable: bool | None, last: str = "or") -> str:
        chosen = [f.suffixes[0] for f in FORMATS.values() if readable is None or (f.load is not None) == readable]
        return listed(chosen, last)

    return {"formats": suffixes(None), "readable": suffixes(True), "write_only": suffixes(False, "and")}


def with_format_lists(command: click.Command) -> click.Command:
    """``command`` with ``{formats}``, ``{readable}`` and ``{write_only}`` in its help replaced by
    :func:`format_lists`: a help that names the formats names all of them, as the registry has them."""
    command.help = (command.help or "").format(**format_lists())
    return command


def max_memory(f: Callable[..., Any]) -> Callable[..., Any]:
    """--max-memory: how much a hostile or huge input may make posenc allocate (formats/limits.py)."""
    return click.option(
        "--max-memory",
        "max_memory",
        type=SIZE,
        help="The most memory reading FILE may take, e.g. 512M or 8G.  [default: half the available memory]",
    )(f)
