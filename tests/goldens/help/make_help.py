"""Write every command's ``--help`` as posenc prints it, one file per command: the interface as users see it.

Run ``python tests/goldens/help/make_help.py`` after an intended change to an option, a default or a help text;
tests/test_help.py fails while these files differ from what the code prints, so every interface change is a visible
diff (issue #12: the golden is taken before the CLI is rebuilt).
"""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from posenc_cli.cli import cli

HERE = Path(__file__).resolve().parent
#: A fixed width, so the wrapping does not depend on the terminal the file is made in.
WIDTH = 100


def helps() -> dict[str, str]:
    """``{file name: the help text}`` for the group and every command."""
    runner = CliRunner()
    out = {}
    for name in ["posenc", *sorted(cli.commands)]:
        args = ["--help"] if name == "posenc" else [name, "--help"]
        result = runner.invoke(cli, args, prog_name="posenc", terminal_width=WIDTH)
        assert result.exit_code == 0, (name, result.output)
        out[f"{name}.txt"] = result.stdout
    return out


def rendered_by() -> str:
    """The click version whose help formatting the goldens (and docs/commands.md) are: another wraps lines otherwise."""
    from importlib.metadata import version

    return version("click")


def main() -> None:
    for stale in HERE.glob("*.txt"):
        stale.unlink()
    for name, text in helps().items():
        (HERE / name).write_text(text, encoding="utf-8")
    (HERE / "CLICK_VERSION").write_text(rendered_by() + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
