"""``docs/commands.md``: every command, option, default, manifest key and API keyword, written from the registry.

The page is generated, never edited by hand: ``python -m posenc_cli.cli.reference > docs/commands.md``.
``tests/test_reference.py`` fails when the committed page differs from what this module writes, so the reference
cannot drift from the code. Each option's row comes from the click command (flags, type, default, help, the range),
and the manifest key and API keyword columns from :mod:`posenc_cli.kinds` (the registry every surface is made from);
the closing table of ranges and their reasons from the parameters' types (:mod:`posenc_cli.kinds`).
"""

from __future__ import annotations

import inspect
import re

import click

from ..kinds import CONVERT, KINDS, OUTPUT, RUN
from ..kinds.rope_config import CONFIG
from .options import ParamOption

__all__ = ["render"]

_SWITCHES = {p.name for p in RUN}
_OUTPUT = {p.name for p in OUTPUT}


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _flags(param: click.Parameter) -> str:
    if isinstance(param, click.Argument):
        return f"`{param.human_readable_name}` (argument)"
    words = [*param.opts, *param.secondary_opts]
    return ", ".join(f"`{w}`" for w in words)


def _type(param: click.Parameter) -> str:
    if isinstance(param, click.Option) and param.is_flag:
        return "flag"
    kind = param.type
    if isinstance(kind, click.Choice):
        return " \\| ".join(f"`{c}`" for c in kind.choices)
    if kind.name.startswith("["):  # a list of names and a pattern (--dtype): as the help spells it
        return " \\| ".join(f"`{c}`" for c in kind.name.strip("[]").split("|"))
    return f"`{kind.name.upper()}`"


def _default(param: click.Parameter, ctx: click.Context) -> str:
    if param.required:
        return "required"
    default = param.record.default if isinstance(param, ParamOption) else param.get_default(ctx, call=False)
    if isinstance(param, click.Option) and param.is_flag and not default:
        return "off"
    if default is None or callable(default) or type(default).__name__ == "Sentinel":  # click 8.3's UNSET
        return ""
    if isinstance(param, click.Option) and param.secondary_opts and isinstance(default, bool):
        return "on" if default else "off"
    return f"`{default}`"


def _where(command: str, param: click.Parameter) -> tuple[str, str]:
    """The manifest key and the API keyword of a table command's option (empty where there is none)."""
    if not isinstance(param, ParamOption):
        return "", ""
    name = param.record.name
    if name in _SWITCHES:
        if name == "output":
            return "`output`", "`save(path)`"
        return f"(`posenc build {param.opts[-1]}`)", ""
    if name in _OUTPUT:
        return f"`{name}`", f"`save({name}=)`"
    if command == "convert":
        return "", f"`convert({name}=)`"
    return f"`{name}`", f"`{KINDS[command].make.__name__}({name}=)`"


def _command(name: str, command: click.Command, group: click.Group) -> list[str]:
    # the group's settings (its -h): a bare context would make click build, and keep on the command, a help
    # option without -h, which every later --help would then show
    root = click.Context(group, info_name="posenc", **group.context_settings)
    ctx = click.Context(command, info_name=name, parent=root)
    lines = [
        f"## posenc {name}",
        "",
        _cell(command.short_help or ""),
        "",
        "```",
        f"{command.get_usage(ctx)}",
        "```",
        "",
    ]
    # click's \b lines (no rewrapping) go, indentation and all; then cleandoc, as Python 3.13 dedents docstrings
    # as it compiles them and older ones leave that to the reader: one page from every Python
    doc = inspect.cleandoc(re.sub(r"^[ \t]*\x08\n", "", command.help or "", flags=re.MULTILINE))
    lines += ["<details><summary>Description</summary>", "", "```text", doc, "```", "", "</details>", ""]
    params = [p for p in command.params if p.name != "help"]
    table_like = name in KINDS or name == "convert"
    if table_like:
        lines += ["| option | values | default | manifest key | API keyword | meaning |", "|---|---|---|---|---|---|"]
    else:
        lines += ["| option | values | default | meaning |", "|---|---|---|---|"]
    for param in params:
        help_text = _cell(getattr(param, "help", None) or "")
        row = [_flags(param), _type(param), _default(param, ctx)]
        if table_like:
            key, keyword = _where(name, param)
            row += [key, keyword]
        lines.append("| " + " | ".join([*row, help_text]) + " |")
    lines.append("")
    if name in KINDS:
        kind = KINDS[name]
        recorded = ", ".join(f"`{key}`" for key in kind.recorded)
        lines += [
            f"The tables record `kind = {kind.table}` and the parameters {recorded} (those that apply); "
            f"`posenc verify` regenerates them from these. Python: `posenc_cli.{kind.make.__name__}(...)`.",
            "",
        ]
    return lines


def _ranges() -> list[str]:
    """Every range a number is held to, once per parameter, with the commands that take it and why it is what it
    is; then the config.json fields that are no parameter but have a range of their own."""
    taken: dict[str, list[str]] = {}
    types = {}
    for command, params in [*((k.command, k.inputs) for k in KINDS.values()), ("convert", CONVERT)]:
        for param in [*params, *OUTPUT]:
            if param.type.range is not None:
                taken.setdefault(param.name, [])
                if command not in taken[param.name]:
                    taken[param.name].append(command)
                types[param.name] = param.type
    lines = [
        "## Parameter ranges",
        "",
        "Every number posenc takes is held to one range: as an option, a manifest key, a Python keyword, a",
        "parameter a table records (read back by `posenc verify` and `inspect`) and a field of a model's",
        "config.json (the range of the parameter it becomes). A value outside is refused with one line naming",
        "the option, key or field (exit 2). Each range is what real models use, with a wide margin, and no",
        "further than the arithmetic stays exact and finite:",
        "",
        "| parameter | commands | range | why |",
        "|---|---|---|---|",
    ]
    for name, commands in taken.items():
        kind = types[name]
        assert kind.range is not None
        each = kind.each.strip()
        said = f"{each}: `{kind.range.text}`" if each else f"`{kind.range.text}`"
        lines.append(f"| `{name}` | {', '.join(commands)} | {_cell(said)} | {_cell(kind.range.why)} |")
    for field, kind in CONFIG.items():
        assert kind.range is not None
        lines.append(f"| config.json `{field}` | rope | `{_cell(kind.range.text)}` | {_cell(kind.range.why)} |")
    return [*lines, ""]


def render(cli: click.Group) -> str:
    """The whole page for the ``posenc`` group ``cli``, as committed in ``docs/commands.md``."""
    lines = [
        "# posenc commands",
        "",
        "Every command, option, default, manifest key and API keyword. Generated from the code by",
        "`python -m posenc_cli.cli.reference > docs/commands.md`; a test fails when this page is stale.",
        "",
        "One name everywhere: a manifest key is the long option with underscores (`--c-half-type` is",
        "`c_half_type`), and the Python keyword is the same word. A `--x/--no-x` pair is the key `x = true|false`.",
        "The command line's own switches (`-v`, `-q`, `--check`, `--json`) are not manifest keys: they are options",
        "of `posenc build` itself. Bad input exits 2 with one line naming the option; other failures exit 1.",
        "",
        "Commands: " + ", ".join(f"[{n}](#posenc-{n})" for n in sorted(cli.commands)) + ". The ranges of every "
        "number and the reasons for them: [Parameter ranges](#parameter-ranges).",
        "",
    ]
    for name in sorted(cli.commands):
        lines += _command(name, cli.commands[name], cli)
    lines += _ranges()
    return "\n".join(lines).rstrip() + "\n"


if __name__ == "__main__":  # run as a script: the group is the package's, as the console script's
    import sys

    from posenc_cli.cli import cli as group

    sys.stdout.write(render(group))
