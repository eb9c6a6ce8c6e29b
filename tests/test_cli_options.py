"""What a user types: one meaning per short option on every command, the hint for an option typed as another
command spells it (``near``), the one line for a short option that changed meaning (``FORMER_SHORTS``), and "did
you mean" for a name from a closed list (:func:`posenc_cli.errors.did_you_mean`, :class:`ClickChoice`)."""

from __future__ import annotations

from collections import defaultdict

import click
import numpy as np
import pytest
from click.testing import CliRunner

from posenc_cli import api
from posenc_cli.cli import cli, command_names
from posenc_cli.cli.options import ClickChoice
from posenc_cli.errors import close_matches, did_you_mean
from posenc_cli.kinds import KINDS

#: Short options that another option of the same command had in the last release (each kind's ``formerly``).
FORMER_SHORTS = {(k.command, p.formerly): p.name for k in KINDS.values() for p in k.params if p.formerly}


def run(*args: object):
    return CliRunner().invoke(cli, [str(a) for a in args])


def one_line(result, code: int, *fragments: str) -> str:
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


def short_meanings(group: click.Group, names: list[str]) -> dict[str, set[str]]:
    """Every short option (``-q``) of the group and of each command in ``names``, with the names of the parameters
    it stands for (one parameter name is one meaning: ``-n`` is ``seq_len`` wherever it is taken)."""
    meanings: dict[str, set[str]] = defaultdict(set)
    ctx = click.Context(group, info_name="posenc", **group.context_settings)
    commands = [(group, ctx), *((group.commands[name], click.Context(group.commands[name], parent=ctx)) for name in
                                names)]  # fmt: skip
    for command, context in commands:
        for param in command.get_params(context):  # with the help option, -h
            for flag in [*param.opts, *param.secondary_opts]:
                if flag.startswith("-") and not flag.startswith("--"):
                    meanings[flag].add(param.name or "")
    return meanings


def test_every_short_option_has_one_meaning_on_every_command():
    """Walks every command the group registers (:func:`~posenc_cli.cli.command_names`), the table commands made
    from the registry of kinds among them: ``-q`` is ``--quiet`` everywhere, never ``posenc relative``'s query
    length."""
    assert command_names() == sorted(cli.commands)
    meanings = short_meanings(cli, command_names())
    clashes = {flag: names for flag, names in meanings.items() if len(names) > 1}
    assert not clashes, clashes
    assert meanings["-q"] == {"quiet"} and meanings["-Q"] == {"query_length"} and len(meanings["-h"]) == 1


def test_the_walk_finds_a_short_option_with_two_meanings():
    """The walk can fail: a command that gives ``-q`` another meaning is caught."""
    group = click.Group("posenc", context_settings={"help_option_names": ["-h", "--help"]})
    group.add_command(click.Command("a", params=[click.Option(["-q", "--quiet"], is_flag=True)]))
    group.add_command(click.Command("b", params=[click.Option(["-q", "--query-length"], type=int)]))
    assert short_meanings(group, ["a", "b"])["-q"] == {"quiet", "query_length"}


# ------------------------------------------------------------------------------- a short option that moved
def test_relative_q_with_a_value_is_refused_with_the_new_spelling(tmp_path):
    out = tmp_path / "t5.npy"
    for words in (["-q", "8"], ["-q8"]):
        line = one_line(run("relative", "--scheme", "t5", *words, "-o", out), 2, "-q is --quiet now",
                        "-Q/--query-length", "posenc relative -Q 8")  # fmt: skip
        assert "Missing" not in line and "unexpected" not in line
    # with the query length given too, -q 8 is still the old spelling, not a stray argument
    one_line(run("relative", "--scheme", "t5", "-Q", "8", "-q", "8", "-o", out), 2, "-q is --quiet now")
    assert not out.exists()


def test_relative_q_is_quiet_and_capital_q_the_query_length(tmp_path):
    out = tmp_path / "t5.npy"
    result = run("relative", "--scheme", "t5", "-Q", "6", "-k", "9", "-q", "-o", out)
    assert result.exit_code == 0 and result.stderr == "", result.stderr
    assert (np.load(out) == api.relative("t5", 6, 9).arrays["index"]).all()
    assert run("relative", "--scheme", "t5", "--query-length", "6", "-k", "9", "-o", out).exit_code == 0


@pytest.mark.parametrize(("command", "short"), sorted(FORMER_SHORTS))
def test_every_former_short_is_an_option_of_its_command_now(command, short):
    """The hint names the option that has the short now and the one that had it: both must exist."""
    params = cli.commands[command].params
    assert any(short in p.opts for p in params), short
    former = next(p for p in params if p.name == FORMER_SHORTS[(command, short)])
    assert short not in former.opts


# ------------------------------------------------------------------------------- options of other commands
@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["rope", "-n", "8", "-d", "128"], ["No such option '-d'", "posenc rope takes --head-dim",
                                            "(dimension per head (even))"]),
        (["sincos2d", "-n", "8", "-d", "16"], ["No such option '-n'", "posenc sincos2d takes -g/--grid",
                                               "(patches per side: H (square) or HxW)"]),
        (["relative", "--scheme", "t5", "-n", "8"], ["No such option '-n'", "takes -Q/--query-length",
                                                     "(query positions (rows))"]),
    ],
)  # fmt: skip
def test_an_option_of_another_command_names_the_one_meant(tmp_path, args, fragments):
    one_line(run(*args, "-o", tmp_path / "x.npy"), 2, *fragments)
    assert not (tmp_path / "x.npy").exists()


def test_an_unknown_option_is_one_line_in_posencs_words_whatever_clicks_version(tmp_path):
    """click 8.2.0 words it ``No such option: --seqlen``, later ones ``No such option '--seqlen'.``: posenc's line is
    its own, and offers the command's own long options that are close."""
    one_line(run("generate", "-n", "8", "--seqlen", "8", "-o", tmp_path / "x.npy"), 2,
             "No such option '--seqlen'; did you mean '--seq-len'")  # fmt: skip
    assert not (tmp_path / "x.npy").exists()


@pytest.mark.parametrize("command", KINDS)
def test_every_near_flag_can_be_reached(command):
    """A ``near`` flag that is an option of the command itself would never be an unknown option: its hint dead."""
    flags = {flag for p in cli.commands[command].params for flag in [*p.opts, *p.secondary_opts]}
    for param in KINDS[command].inputs:
        assert not set(param.near) & flags, (param.name, param.near)


# ------------------------------------------------------------------------------------------ did you mean
@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["generate", "-n", "8", "-d", "8", "-p", "fairsq"], ["'fairsq' is not one of", "Did you mean 'fairseq'?"]),
        (["generate", "-n", "8", "-d", "8", "-f", "npx"], ["--format", "Did you mean 'npz' or 'npy'?"]),
        (["generate", "-n", "8", "-d", "8", "--layout", "sincos"], ["Did you mean 'sin-cos'?"]),
        (["generate", "-n", "8", "-d", "8", "--dtype", "bfloat61"], ["got 'bfloat61'", "did you mean 'bfloat16'"]),
        (["rope", "-n", "8", "--head-dim", "8", "--scaling", "lama3"], ["Did you mean 'llama3'?"]),
        (["relative", "--scheme", "deberat", "-Q", "4"], ["Did you mean 'deberta'?"]),
        (["plot", "-n", "8", "-d", "8", "-p", "Fairseq"], ["Did you mean 'fairseq'?"]),
    ],
)
def test_a_typo_in_a_name_gets_the_names_it_is_close_to(tmp_path, args, fragments):
    one_line(run(*args, "-o", tmp_path / ("x.png" if args[0] == "plot" else "x.npy")), 2, *fragments)


def test_verify_kind_typo_gets_a_suggestion(tmp_path):
    out = tmp_path / "pe.npy"
    assert run("generate", "-n", "4", "-d", "4", "-o", out).exit_code == 0
    one_line(run("verify", out, "--kind", "sinusoidl"), 2, "Did you mean 'sinusoidal'?")


def test_a_name_like_no_choice_gets_no_suggestion(tmp_path):
    line = one_line(run("generate", "-n", "8", "-d", "8", "-p", "zzzz", "-o", tmp_path / "x.npy"), 2, "'zzzz'")
    assert "mean" not in line


def test_a_manifest_typo_gets_a_suggestion(tmp_path):
    manifest = tmp_path / "posenc.toml"
    manifest.write_text('[[table]]\ncommand = "generate"\noutput = "pe.h"\nseq_len = 4\nd_model = 4\n'
                        'preset = "fairsq"\ndtype = "flaot32"\n')  # fmt: skip
    one_line(run("build", manifest), 2, "preset", 'did you mean "fairseq"?', '"fairsq"')
    manifest.write_text('[[table]]\ncommand = "generate"\noutput = "pe.h"\nseq_len = 4\nd_model = 4\n'
                        'dtype = "flaot32"\n')  # fmt: skip
    one_line(run("build", manifest), 2, "dtype", 'did you mean "float32"?')
    assert sorted(p.name for p in tmp_path.iterdir()) == ["posenc.toml"]


def test_every_choice_of_every_command_says_did_you_mean():
    """Every closed list of names a command takes is a :class:`ClickChoice`: none was left a plain click.Choice."""
    plain = [
        f"posenc {name} {param.opts[0]}"
        for name in command_names()
        for param in cli.commands[name].params
        if isinstance(param.type, click.Choice) and not isinstance(param.type, ClickChoice)
    ]
    assert not plain, plain


def test_close_matches_by_difflibs_rule():
    """difflib's ratio (2 * matches / total length) of at least 0.6, case ignored, closest first, at most three."""
    assert close_matches("fairsq", ["vaswani", "fairseq", "marian"]) == ["fairseq"]
    assert close_matches("FAIRSEQ", ["fairseq"]) == ["fairseq"]
    assert close_matches("t6", ["t5", "deberta", "shaw"]) == []  # ratio 0.5: a guess, not a typo
    assert close_matches("float33", ["float32", "float64", "float16", "bfloat16", "int8"]) == [
        "float32", "float64", "float16"]  # fmt: skip
    assert did_you_mean("zzz", ["a"]) == ""
    assert did_you_mean("npx", ["npy", "npz"], quote=str) in ("did you mean npy or npz?", "did you mean npz or npy?")
