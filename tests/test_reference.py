"""``docs/commands.md`` is generated from the registry and the click commands: the committed page must be what
the code writes now (regenerate with ``python -m posenc_cli.cli.reference > docs/commands.md``)."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from posenc_cli.cli import cli
from posenc_cli.cli.reference import render
from posenc_cli.kinds import KINDS

PAGE = Path(__file__).resolve().parents[1] / "docs" / "commands.md"


def test_the_committed_reference_is_what_the_code_writes():
    from importlib.metadata import version

    made_with = (PAGE.parents[1] / "tests" / "goldens" / "help" / "CLICK_VERSION").read_text().strip()
    if version("click") != made_with:  # the floors run of .ci/run: another click spells usage lines otherwise
        pytest.skip(f"docs/commands.md is click {made_with}'s formatting; this is click {version('click')}")
    assert PAGE.read_text() == render(cli), (
        "docs/commands.md is stale: python -m posenc_cli.cli.reference > docs/commands.md"
    )


def test_the_reference_names_every_command_option_key_and_keyword():
    page = render(cli)
    for name, command in cli.commands.items():
        assert f"## posenc {name}" in page
        for param in command.params:
            for flag in getattr(param, "opts", []):
                if flag.startswith("--"):
                    assert f"`{flag}`" in page, flag
    for kind in KINDS.values():
        for param in kind.keys:
            assert f"`{param.name}`" in page and f"({param.name}=)`" in page, param.name


def test_a_changed_help_text_makes_the_page_stale(monkeypatch):
    option = next(p for p in cli.commands["generate"].params if p.name == "seq_len")
    monkeypatch.setattr(option, "help", "something else")
    assert render(cli) != PAGE.read_text()


def test_rendering_the_page_leaves_every_command_its_help_options():
    """click builds a command's help option once, from the first context it sees: the page's contexts must carry
    the group's ``-h`` (a bare context left ``--help`` alone, and every later ``--help`` in the process showed it)."""
    from click.testing import CliRunner

    render(cli)
    for name in ("alibi", "build", "identify"):
        result = CliRunner().invoke(cli, [name, "--help"])
        assert result.exit_code == 0 and "-h, --help" in result.output, name


def test_the_page_is_the_same_on_every_python():
    """Python 3.13 dedents docstrings as it compiles them: the page takes each description through cleandoc, so a
    description reads the same from every interpreter (no line keeps the docstring's indentation)."""
    page = render(cli)
    for block in page.split("```text\n")[1:]:
        text = block.split("\n```", 1)[0]
        assert "\x08" not in text
        assert inspect.cleandoc(text) == text, text[:200]  # no indentation left common to the lines
