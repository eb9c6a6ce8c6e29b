"""Every list a person reads is the registry's: the front doors (``posenc --help``, pyproject's description, the
README's first paragraph), help texts, docstrings and docs/ that name formats, kinds, choices or short options.

A list is either made from the registry (the help of ``posenc``, ``inspect``, ``convert``, ``identify``) or checked
here against it, so that a format, a kind or a choice added to the registry fails here until every place that
lists them says it. Each check is shown to fail on a list that drifted (the ``_drifted`` tests).
"""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from posenc_cli import api
from posenc_cli.cli import cli, command_names
from posenc_cli.encodings.names import ROPE_SCALINGS
from posenc_cli.encodings.rope import USES
from posenc_cli.formats import FORMATS
from posenc_cli.kinds import KINDS, RUN
from posenc_cli.kinds.rope_config import KNOWN_TYPES

if sys.version_info >= (3, 11):
    import tomllib
else:  # posenc's own dependency there
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted((ROOT / "docs").glob("*.md"))
README = ROOT / "README.md"

#: The format families a front door names, each with the formats it covers and the words that name it. Every
#: format of the registry is in exactly one (checked below): a new format needs its family named everywhere.
FAMILIES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "NumPy": (("npy", "npz"), ("NumPy", ".npy", ".npz")),
    "safetensors": (("safetensors",), ("safetensors", ".safetensors")),
    "HDF5": (("h5",), ("HDF5", ".h5")),
    "CSV": (("csv",), ("CSV", ".csv")),
    "C": (("h", "c", "bin"), ("C", "C/C++", ".h", ".c")),
    "Rust": (("rs",), ("Rust", ".rs")),
    "ROM images": (("mem", "coe", "mif"), ("ROM", ".mem", ".coe", ".mif")),
    "ONNX": (("onnx",), ("ONNX", ".onnx")),
    "GGUF": (("gguf",), ("GGUF", ".gguf")),
}


def names(text: str, word: str) -> bool:
    """Whether ``text`` has ``word`` as a word of its own (``C`` in ``C, Rust`` but not in ``CSV``)."""
    return re.search(rf"(?<![\w.]){re.escape(word)}(?![\w])", text) is not None


def missing_families(text: str, readable_only: bool = False) -> list[str]:
    """The families ``text`` does not name (only those with a format posenc reads back, with ``readable_only``)."""
    wanted = [
        family
        for family, (formats, _) in FAMILIES.items()
        if not readable_only or any(FORMATS[f].load is not None for f in formats)
    ]
    return [family for family in wanted if not any(names(text, word) for word in FAMILIES[family][1])]


def paragraph(path: Path, marker: str) -> str:
    """The paragraph (or list item) of ``path`` that holds ``marker``, its lines joined."""
    text = path.read_text(encoding="utf-8")
    assert marker in text, f"{path.name} no longer says {marker!r}: find the list that moved and check it here"
    start = text.rfind("\n\n", 0, text.index(marker))
    item = text.rfind("\n- ", 0, text.index(marker))
    start = max(start, item) + 1
    ends = [i for i in (text.find("\n\n", start), text.find("\n- ", text.index(marker))) if i != -1]
    return " ".join(text[start : min(ends) if ends else len(text)].split())


def test_every_format_has_one_family():
    covered = [f for formats, _ in FAMILIES.values() for f in formats]
    assert sorted(covered) == sorted(FORMATS) and len(covered) == len(set(covered))


def test_the_check_of_families_fails_on_the_old_front_door():
    assert missing_families("exported to .npy, .h5, .csv and C") == [
        "safetensors", "Rust", "ROM images", "ONNX", "GGUF"]  # fmt: skip
    assert missing_families("a CSV or C table", readable_only=True) == ["NumPy", "safetensors", "HDF5", "ROM images"]


# ----------------------------------------------------------------------------------------------- front doors
def test_posenc_help_names_every_format():
    help_text = CliRunner().invoke(cli, ["--help"]).stdout
    description = " ".join(help_text.split("Example:")[0].split())
    assert all(f" {fmt.suffixes[0]}" in description for fmt in FORMATS.values()), description
    assert "{formats}" not in description


def test_pyprojects_description_names_every_format_family():
    """pyproject.toml cannot be generated: it is read here."""
    description = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["description"]
    assert missing_families(description) == [], description


def test_the_readmes_first_paragraph_names_every_format_family():
    """The README is the front page: its first paragraph (under the title) names every family of formats."""
    text = README.read_text(encoding="utf-8").split("\n\n")
    first = " ".join(next(block for block in text if not block.startswith("#")).split())
    assert missing_families(first) == [], first


def test_the_api_names_every_kinds_maker():
    doc = api.__doc__ or ""
    for kind in KINDS.values():
        assert f":func:`{kind.make.__name__}`" in doc, kind.maker


def test_the_package_docstring_and_save_point_at_the_registry():
    """The package's first line and ``save(format=)`` name the registry instead of a list of formats (the old ones
    named 4 and 5 of the 14)."""
    import posenc_cli

    first = (posenc_cli.__doc__ or "").split("\n\n")[0]
    assert "FORMATS" in first and not [f for f in FORMATS.values() if names(first, f.suffixes[0])], first
    doc = api.save.__doc__ or ""
    described = doc[doc.index("    format : ") : doc.index("    name : ")]
    assert "FORMATS" in described and not [name for name in FORMATS if f"``{name}``" in described], described


# ------------------------------------------------------------------------------------ what posenc reads back
@pytest.mark.parametrize(
    ("page", "marker"),
    [
        ("security.md", "Not trusted: every file posenc reads"),
        ("guarantees.md", "Hostile files are only data"),
        ("inspect.md", "It reads every file posenc reads"),
        ("identify.md", "**FILE**: any file posenc reads"),
    ],
)
def test_every_list_of_the_files_posenc_reads_names_them_all(page, marker):
    text = paragraph(ROOT / "docs" / page, marker)
    assert missing_families(text, readable_only=True) == [], text


@pytest.mark.parametrize("command", ["inspect", "convert", "identify"])
def test_the_help_of_the_reading_commands_lists_every_readable_format(command):
    help_text = " ".join((cli.commands[command].help or "").split())
    for fmt in FORMATS.values():  # inspect also names those it cannot read, as such
        assert names(help_text, fmt.suffixes[0]) == (fmt.load is not None or command == "inspect"), (command, fmt)


def test_every_format_is_a_row_of_formats_md():
    """docs/formats.md's table: a row per format, with every suffix and alias, "Write only." exactly for the formats
    posenc does not read back."""
    rows = [line for line in (ROOT / "docs" / "formats.md").read_text().splitlines() if line.startswith("| `")]
    for fmt in FORMATS.values():
        row = next((r for r in rows if f"`{fmt.name}`" in r.split("|")[1]), None)
        assert row is not None, fmt.name
        cells = row.split("|")
        assert all(f"`{suffix}`" in cells[2] for suffix in fmt.suffixes), (fmt.name, cells[2])
        assert all(f"`--format {alias}`" in cells[1] for alias in fmt.aliases), fmt.name
        if len(cells[1].split(",")) == 1:  # a row of its own (the ROM images share one)
            assert ("Write only." in row) == (fmt.load is None), fmt.name


def test_the_files_written_beside_an_output_are_named_where_they_are_listed():
    """``--force``'s help and save's docstring name each companion: the .json of a .npy, the .h of a .c or .bin."""
    force = next(p for p in RUN if p.name == "force").help
    for text in (force, " ".join((api.save.__doc__ or "").replace("`", "").split())):
        for fmt in FORMATS.values():
            if fmt.companion is not None:
                said = re.search(rf"the \{fmt.companion.suffix} of an? [^)]*\.{fmt.name}\b", text)
                assert said, (fmt.name, text)


# --------------------------------------------------------------------------------------------- kinds, modes
def kinds_missing(text: str) -> list[str]:
    return [command for command in KINDS if f"posenc {command}" not in text and f"`{command}`" not in text]


@pytest.mark.parametrize(
    ("page", "marker"),
    [
        ("tables.md", "This page covers the table posenc computes"),
        ("README.md", "[tables.md](tables.md)"),
        ("toolchains.md", "every table kind"),
    ],
)
def test_every_list_of_the_kinds_names_them_all(page, marker):
    text = paragraph(ROOT / "docs" / page, marker)
    assert kinds_missing(text) == [], text


def test_the_manifests_example_names_every_table_command():
    from posenc_cli.manifest import reader as manifest

    line = next(line for line in (manifest.__doc__ or "").splitlines() if 'command = "generate"' in line)
    comment = line.split("#", 1)[1]
    assert [k.command for k in KINDS.values() if not names(comment, k.command)] == [], line


def test_the_out_of_memory_advice_names_the_streaming_kinds():
    """The advice "ask for ... a streaming one (generate, rope)" names the kinds made as they are written."""
    from posenc_cli.errors import PosencError
    from posenc_cli.system import capacity

    with pytest.raises(PosencError) as caught:
        capacity.check_memory(1 << 80, "the table")
    said = re.search(r"a streaming one \(([^)]*)\)", str(caught.value))
    assert said is not None and said.group(1).split(", ") == [k.command for k in KINDS.values() if k.lazy]


def test_the_check_of_kinds_fails_on_a_drifted_list():
    assert kinds_missing("RoPE caches (`posenc rope`), ALiBi (`posenc alibi`)") == [
        "generate", "mrope", "axial", "sincos2d", "detr", "relative", "window"]  # fmt: skip


def test_every_rope_option_names_the_scalings_that_use_it():
    """An option whose help names scalings (``Scaling factor (linear, ...)``) names exactly those that take it
    (:data:`posenc_cli.encodings.rope.USES`)."""
    for param in KINDS["rope"].params:
        said = {s for s in ROPE_SCALINGS if re.search(rf"(?<![\w-]){re.escape(s)}(?![\w-])", param.help)}
        using = {mode for mode, keys in USES.items() if param.name in keys}
        if said and using:
            assert said == using, (param.name, sorted(said), sorted(using))


def test_the_rope_types_tables_md_says_posenc_makes_are_the_config_readers():
    text = paragraph(ROOT / "docs" / "tables.md", "a rope type posenc does not make")
    said = text.split("it makes", 1)[1].split(", not ")[0]
    assert set(re.findall(r"`([a-z0-9]+)`", said)) == set(KNOWN_TYPES)


# ----------------------------------------------------------------------------- choices and short options
def choices_of_every_flag() -> dict[str, list[set[str]]]:
    """Each long option of every command with a closed list of values, and the lists it has (``--layout`` has
    generate's and rope's); a format list may leave out the aliases (``hdf5``)."""
    aliases = {alias for fmt in FORMATS.values() for alias in fmt.aliases}
    found: dict[str, list[set[str]]] = {}
    for name in command_names():
        for param in cli.commands[name].params:
            kind = param.type
            if isinstance(kind, click.Choice):
                values = {str(c) for c in kind.choices}
            elif kind.name.startswith("["):
                values = set(kind.name.strip("[]").split("|"))
            else:
                continue
            for flag in (o for o in param.opts if o.startswith("--")):
                found.setdefault(flag, []).extend([values, values - aliases])
    return found


CHOICE_LIST = re.compile(r"(--[a-z][a-z0-9-]*)(?:/-[A-Za-z])?[ =]([\w.+-]+(?:\|[\w.+-]+)+)")


def drifted_choice_lists(text: str) -> list[str]:
    known = choices_of_every_flag()
    return [
        f"{flag} {values}"
        for flag, values in CHOICE_LIST.findall(text)
        if flag in known and set(values.split("|")) not in known[flag]
    ]


@pytest.mark.parametrize("page", [*DOCS, README], ids=lambda p: str(p.relative_to(ROOT)))
def test_every_list_of_choices_in_the_docs_is_the_options(page):
    """``--scaling none|linear|...``: the values an option takes, all of them (in any order)."""
    assert drifted_choice_lists(page.read_text(encoding="utf-8")) == []


def test_the_check_of_choices_fails_on_a_drifted_list():
    assert drifted_choice_lists("[--scaling none|linear|dynamic|yarn|llama3|longrope]") == [
        "--scaling none|linear|dynamic|yarn|llama3|longrope"]  # fmt: skip
    assert drifted_choice_lists("[--format npy|h5|csv|h|c] [--part cos|sin]") == ["--format npy|h5|csv|h|c"]


def short_of_every_long() -> dict[str, set[str]]:
    shorts: dict[str, set[str]] = {}
    for name in command_names():
        for param in cli.commands[name].params:
            longs = [o for o in param.opts if o.startswith("--")]
            for short in (o for o in param.opts if not o.startswith("--")):
                for flag in longs:
                    shorts.setdefault(flag, set()).add(short)
    return shorts


#: ``--seq-len/-n`` and ``-q``/``--quiet``: a long option and its short form, either way round.
PAIRS = (
    re.compile(r"(--[a-z][a-z0-9-]*)`?/`?(-[A-Za-z])(?![\w-])"),
    re.compile(r"(?<![\w-])(-[A-Za-z])`?/`?(--[a-z][a-z0-9-]*)"),
)


def wrong_pairs(text: str) -> list[str]:
    shorts = short_of_every_long()
    found = [(flag, short) for flag, short in PAIRS[0].findall(text)]
    found += [(flag, short) for short, flag in PAIRS[1].findall(text)]
    return [f"{flag}/{short}" for flag, short in found if flag in shorts and short not in shorts[flag]]


def wrong_shorts_in_examples(text: str) -> list[str]:
    """Short options in ``posenc <command> ...`` examples (code lines and inline code) that the command lacks."""
    commands = {name: cli.commands[name] for name in command_names()}
    spans = re.findall(r"`(posenc [^`]+)`", text) + re.findall(r"^\s*(posenc [^\n#]+)", text, re.M)
    wrong = []
    for span in spans:
        span = re.split(r" (?:\||\|\||&&|;) ", span)[0]  # posenc's own words, not the next command's
        try:
            words = shlex.split(span.replace("\\", " "))
        except ValueError:
            continue
        if len(words) < 2 or words[1] not in commands:
            continue
        taken = {o for p in commands[words[1]].params for o in [*p.opts, *p.secondary_opts]} | {"-h"}
        wrong += [f"{span}: {w}" for w in words[2:] if re.fullmatch(r"-[A-Za-z]", w) and w not in taken]
        # the query length moved to -Q: `relative -q N` is refused (FORMER_SHORTS)
        wrong += [f"{span}: -q {words[i + 1]}" for i, w in enumerate(words[2:-1], 2)
                  if words[1] == "relative" and w == "-q" and not words[i + 1].startswith("-")]  # fmt: skip
    return wrong


@pytest.mark.parametrize("page", [*DOCS, README], ids=lambda p: str(p.relative_to(ROOT)))
def test_every_short_option_in_the_docs_is_the_commands(page):
    text = page.read_text(encoding="utf-8")
    assert wrong_pairs(text) == []
    assert wrong_shorts_in_examples(text) == []


def test_the_checks_of_short_options_fail_on_drifted_docs():
    assert wrong_pairs("posenc relative --query-length/-q Q, `-q`/`--quiet`") == ["--query-length/-q"]
    assert wrong_shorts_in_examples("```\nposenc relative --scheme t5 -q 512 -o t5.h\nposenc rope -d 8\n```") == [
        "posenc relative --scheme t5 -q 512 -o t5.h: -q 512", "posenc rope -d 8: -d"]  # fmt: skip
