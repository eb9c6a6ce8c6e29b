"""``posenc build``: a manifest's tables, byte for byte those of the single commands; checked before anything is
written; unchanged outputs untouched; ``--check``; depfiles that make, Ninja and CMake read."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

import posenc_cli
from posenc_cli import manifest as building
from posenc_cli.cli import cli

from .conftest import require_tool, touch_later

REPO = Path(__file__).resolve().parents[1]

# Each entry of a manifest that uses every command, with the single command that writes the same files.
ENTRIES = [
    ('command = "generate"\noutput = "pe.h"\nseq_len = 16\nd_model = 8', "generate -n 16 -d 8 -o pe.h"),
    (
        'command = "generate"\noutput = "m2m.npy"\nseq_len = 10\nd_model = 6\npreset = "fairseq"\ndtype = "float16"',
        "generate -n 10 -d 6 -p fairseq --dtype float16 -o m2m.npy",
    ),
    (
        'command = "generate"\noutput = "pe_q.c"\nseq_len = 12\nd_model = 6\nbase = 500\ndtype = "q15"\n'
        'name = "pe_q15"\nalign = 16',
        "generate -n 12 -d 6 --base 500 --dtype q15 --name pe_q15 --align 16 -o pe_q.c",
    ),
    (
        'command = "generate"\noutput = "nopad.csv"\nseq_len = 5\nd_model = 4\npreset = "fairseq"\n'
        'padding_idx = "none"\nheader = false',
        "generate -n 5 -d 4 -p fairseq --padding-idx none --no-header -o nopad.csv",
    ),
    (
        'command = "generate"\noutput = "bf.npy"\nseq_len = 4\nd_model = 4\ndtype = "bfloat16"',  # + bf.json
        "generate -n 4 -d 4 --dtype bfloat16 -o bf.npy",
    ),
    (
        'command = "generate"\noutput = "table.dat"\nformat = "npy"\nseq_len = 3\nd_model = 4\nstep = 0.5',
        "generate -n 3 -d 4 --step 0.5 -f npy -o table.dat",
    ),
    (
        'command = "generate"\noutput = "half.h"\nseq_len = 4\nd_model = 4\ndtype = "float16"\n'
        'c_half_type = "_Float16"\nprogmem = true',
        "generate -n 4 -d 4 --dtype float16 --progmem --c-half-type _Float16 -o half.h",
    ),
    (
        'command = "rope"\noutput = "llama31.npz"\nhead_dim = 8\ntheta = 500000\nscaling = "llama3"\nfactor = 8\n'
        "original_max_positions = 8\nlow_freq_factor = 1\nhigh_freq_factor = 4",
        "rope -n 16 --head-dim 8 --theta 500000 --scaling llama3 --factor 8 --original-max-positions 8 "
        "--low-freq-factor 1 --high-freq-factor 4 -o llama31.npz",
    ),
    (
        'command = "rope"\noutput = "yarn_cos.npy"\nseq_len = 12\nhead_dim = 8\nlayout = "interleaved"\n'
        'scaling = "yarn"\nfactor = 4.0\noriginal_max_positions = 8\nattention_scaling = false\npart = "cos"',
        "rope -n 12 --head-dim 8 --layout interleaved --scaling yarn --factor 4 --original-max-positions 8 "
        "--no-attention-scaling --part cos -o yarn_cos.npy",
    ),
    (
        'command = "rope"\noutput = "rope_cpp.h"\nhead_dim = 4\nlang = "c++"\nnamespace = "tables"\n'
        'float_literal = "hex"',
        "rope -n 16 --head-dim 4 --lang c++ --namespace tables --float-literal hex -o rope_cpp.h",
    ),
    (
        'command = "rope"\noutput = "longrope.h"\nseq_len = 8\nhead_dim = 4\nscaling = "longrope"\nfactor = 4\n'
        "original_max_positions = 4\nshort_factor = [1, 1.5]\nlong_factor = [2, 3]",
        "rope -n 8 --head-dim 4 --scaling longrope --factor 4 --original-max-positions 4 --short-factor 1,1.5 "
        "--long-factor 2,3 -o longrope.h",
    ),
    (
        'command = "rope"\noutput = "yarn.h"\nseq_len = 8\nhead_dim = 4\nscaling = "yarn"\nfactor = 4\n'
        "original_max_positions = 4\ntruncate = false",
        "rope -n 8 --head-dim 4 --scaling yarn --factor 4 --original-max-positions 4 --no-truncate -o yarn.h",
    ),
    ('command = "alibi"\noutput = "alibi.h5"\nheads = 6\nseq_len = 5', "alibi -H 6 -n 5 -o alibi.h5"),
    ('command = "alibi"\noutput = "slopes.h"\nheads = 12', "alibi -H 12 -o slopes.h"),
    (
        'command = "sincos2d"\noutput = "vit.safetensors"\ngrid = [3, 2]\nd_model = 8\ncls_token = true',
        "sincos2d -g 3x2 -d 8 --cls-token -o vit.safetensors",
    ),
    (
        'command = "sincos2d"\noutput = "pos2d.bin"\ngrid = "4"\nd_model = 12\nbase = 100\ndtype = "float64"',
        "sincos2d -g 4 -d 12 --base 100 --dtype float64 -o pos2d.bin",
    ),
    ('command = "sincos2d"\noutput = "grid.c"\ngrid = 2\nd_model = 4', "sincos2d -g 2 -d 4 -o grid.c"),
]
# [defaults] reaches every entry; [defaults.rope] only the rope entries (seq_len 16 where they give none).
MANIFEST = '[defaults]\ndtype = "float32"\n\n[defaults.rope]\nseq_len = 16\n\n' + "\n\n".join(
    f"[[table]]\n{entry}" for entry, _ in ENTRIES
)
VALID = '[[table]]\ncommand = "generate"\noutput = "ok.h"\nseq_len = 4\nd_model = 4\n'


def run(*args: str):
    return CliRunner().invoke(cli, list(args))


def assert_one_line_error(result, code: int, *fragments: str) -> None:
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and "Traceback" not in result.stderr, result.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


def write(directory: Path, text: str, name: str = "posenc.toml") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(textwrap.dedent(text))
    return path


def snapshot(directory: Path) -> dict[str, tuple[bytes, int, int]]:
    """Every file of ``directory``: bytes, mtime and inode (a rewritten file gets a new inode)."""
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns, p.stat().st_ino) for p in sorted(directory.iterdir())}


# ------------------------------------------------------------------------------------------ the same bytes
def test_every_output_has_the_bytes_of_its_single_command(tmp_path):
    manifest = write(tmp_path / "build", MANIFEST)
    result = run("build", str(manifest))
    assert result.exit_code == 0 and result.stdout == "" and result.stderr == "", result.output
    single = tmp_path / "single"
    single.mkdir()
    for _, command in ENTRIES:
        args = shlex.split(command)
        args[-1] = str(single / args[-1])
        assert run(*args).exit_code == 0, command
    built = {p.name: p.read_bytes() for p in manifest.parent.iterdir() if p != manifest}
    assert built == {p.name: p.read_bytes() for p in single.iterdir()}
    assert {"pe_q.h", "bf.json", "pos2d.h", "grid.h"} <= set(built)  # companions too
    assert (
        b"--short-factor 1.0,1.5 --long-factor 2.0,3.0" in built["longrope.h"] and b"--no-truncate" in built["yarn.h"]
    )
    assert (
        b"command: posenc generate --seq-len 12 --d-model 6 --base 500.0 --dtype q15 --name pe_q15" in built["pe_q.c"]
    )


def test_non_c_outputs_are_what_api_save_writes(tmp_path):
    manifest = write(tmp_path / "build", MANIFEST)
    building.build(manifest)
    want = tmp_path / "api" / "llama31.npz"
    want.parent.mkdir()
    rope = posenc_cli.rope(16, 8, theta=500000.0, scaling="llama3", factor=8.0, original_max_positions=8,
                           low_freq_factor=1.0, high_freq_factor=4.0)  # fmt: skip
    posenc_cli.save(rope, want)
    assert (manifest.parent / "llama31.npz").read_bytes() == want.read_bytes()
    posenc_cli.save(posenc_cli.sincos2d(3, 2, 8, cls_token=True), want.with_name("vit.safetensors"))
    assert (manifest.parent / "vit.safetensors").read_bytes() == want.with_name("vit.safetensors").read_bytes()


def test_keys_are_the_cli_options_in_their_order():
    """The manifest's vocabulary and the recorded command's order follow the CLI: a new option needs a key."""
    for command, keys in building.KEYS.items():
        options = [p.name for p in cli.commands[command].params]  # type: ignore[union-attr]
        options = [o for o in options if o not in ("output", "verbose", "quiet", "check", "json", "force")]
        assert list(keys) == options, command


def test_half_type_is_still_read_as_c_half_type_with_a_note(tmp_path):
    """The key's first spelling (published in 0.1's manifest docs) keeps working; both spellings is an error."""
    entry = '[[table]]\ncommand = "generate"\noutput = "half.h"\nseq_len = 4\nd_model = 4\ndtype = "float16"\n'
    old, new = (
        write(tmp_path / "old", entry + 'half_type = "_Float16"'),
        write(tmp_path / "new", entry + 'c_half_type = "_Float16"'),
    )
    with pytest.warns(posenc_cli.errors.PosencWarning, match="half_type is spelled c_half_type"):
        building.build(old)
    building.build(new)
    assert (old.parent / "half.h").read_bytes() == (new.parent / "half.h").read_bytes()
    both = write(tmp_path / "both", entry + 'half_type = "_Float16"\nc_half_type = "_Float16"')
    result = CliRunner().invoke(cli, ["build", str(both)])
    assert result.exit_code == 2 and "give it once" in result.stderr


def test_command_line_spells_every_option_so_that_the_cli_reads_it_back(tmp_path):
    manifest = building.load_manifest(write(tmp_path, MANIFEST))
    for entry, (_, command) in zip(manifest.entries, ENTRIES, strict=True):
        line = shlex.split(entry.command_line)
        assert line[:2] == ["posenc", entry.command] and line[-2:] == ["-o", Path(command.split()[-1]).name]
        context = cli.commands[entry.command].make_context(entry.command, line[2:], help_option_names=["-h", "--help"])  # type: ignore[union-attr]
        assert context.params["output"] == entry.path.name


# --------------------------------------------------------------------------- unchanged outputs, --check, --json
def test_a_second_run_reports_everything_unchanged_and_touches_nothing(tmp_path):
    manifest = write(tmp_path, MANIFEST)
    first = building.build(manifest)
    assert {f.status for f in first.files} == {"written"} and len(first.files) == len(os.listdir(tmp_path)) - 1
    before = snapshot(tmp_path)
    second = building.build(manifest)
    assert {f.status for f in second.files} == {"unchanged"} and not second.changed
    assert snapshot(tmp_path) == before
    # One entry changed: only its file is rewritten.
    manifest.write_text(MANIFEST.replace("seq_len = 16\nd_model = 8", "seq_len = 17\nd_model = 8"))
    third = building.build(manifest)
    assert [str(f.path.name) for f in third.changed] == ["pe.h"]
    after = snapshot(tmp_path)
    assert {k for k in after if after[k] != before[k]} == {"pe.h", "posenc.toml"}


def test_check_exits_1_when_an_output_would_change_and_writes_nothing(tmp_path):
    manifest = write(tmp_path, VALID + '\n[[table]]\ncommand = "alibi"\noutput = "a.npz"\nheads = 4\n')
    missing = run("build", str(manifest), "--check", "--depfile", str(tmp_path / "t.d"))
    assert missing.exit_code == 1 and missing.stdout == ""
    assert missing.stderr.splitlines() == [f"would create {tmp_path / 'ok.h'}", f"would create {tmp_path / 'a.npz'}"]
    assert os.listdir(tmp_path) == ["posenc.toml"]  # not even the depfile
    assert run("build", str(manifest)).exit_code == 0
    before = snapshot(tmp_path)
    up_to_date = run("build", str(manifest), "--check")
    assert up_to_date.exit_code == 0 and up_to_date.stdout == "" and up_to_date.stderr == ""
    manifest.write_text(manifest.read_text().replace("heads = 4", "heads = 5"))
    changed = run("build", str(manifest), "--check")
    assert changed.exit_code == 1 and changed.stderr == f"would rewrite {tmp_path / 'a.npz'}\n"
    assert run("build", str(manifest), "--check", "-q").stderr == ""
    after = snapshot(tmp_path)
    assert {k: v for k, v in after.items() if k != "posenc.toml"} == {
        k: v for k, v in before.items() if k != "posenc.toml"
    }


def test_json_report_names_every_output_with_its_status_and_sha256(tmp_path):
    manifest = write(tmp_path, VALID + '\n[[table]]\ncommand = "rope"\noutput = "r.c"\nseq_len = 3\nhead_dim = 4\n')
    result = run("build", str(manifest), "--json")
    assert result.exit_code == 0 and result.stderr == ""
    doc = json.loads(result.stdout)
    assert doc["up_to_date"] is False and doc["check"] is False and doc["manifest"] == str(manifest)
    first, second = doc["tables"]
    assert first["command"] == "generate" and first["format"] == "h" and first["name"] == "ok"
    assert first["arrays"] == {"pe": {"shape": [4, 4], "dtype": "float32"}}
    assert second["arrays"]["inv_freq"] == {"shape": [2], "dtype": "float32"}
    assert [o["path"] for o in second["outputs"]] == [str(tmp_path / "r.c"), str(tmp_path / "r.h")]
    for output in first["outputs"] + second["outputs"]:
        data = Path(output["path"]).read_bytes()
        assert output["status"] == "written" and output["bytes"] == len(data)
        assert output["sha256"] == hashlib.sha256(data).hexdigest()
    assert second["command_line"] == "posenc rope --seq-len 3 --head-dim 4 --dtype float32 --name r -o r.c"
    again = json.loads(run("build", str(manifest), "--json", "--check").stdout)
    assert again["up_to_date"] is True and {o["status"] for t in again["tables"] for o in t["outputs"]} == {"unchanged"}


def test_verbose_says_what_was_written_and_what_was_unchanged(tmp_path):
    manifest = write(tmp_path, VALID)
    first = run("build", str(manifest), "-v")
    assert first.exit_code == 0 and f"wrote {tmp_path / 'ok.h'} (h, 4 x 4 float32," in first.stderr
    assert f"unchanged: {tmp_path / 'ok.h'}" in run("build", str(manifest), "-v").stderr


def test_only_builds_the_named_outputs(tmp_path):
    manifest = write(tmp_path, VALID + '\n[[table]]\ncommand = "alibi"\noutput = "sub/../a.npz"\nheads = 4\n')
    result = run("build", str(manifest), "--only", "a.npz")
    assert result.exit_code == 0 and sorted(os.listdir(tmp_path)) == ["a.npz", "posenc.toml"]
    assert_one_line_error(run("build", str(manifest), "--only", "b.npz"), 2, "--only", "'b.npz'", "'ok.h'")


def test_default_manifest_and_output_dir(tmp_path, monkeypatch):
    write(tmp_path / "src", VALID)
    (tmp_path / "out").mkdir()
    monkeypatch.chdir(tmp_path / "src")
    assert run("build", "--output-dir", str(tmp_path / "out")).exit_code == 0
    assert os.listdir(tmp_path / "out") == ["ok.h"] and os.listdir(tmp_path / "src") == ["posenc.toml"]
    monkeypatch.chdir(tmp_path)
    assert_one_line_error(run("build"), 2, "no manifest 'posenc.toml'")


def test_defaults_reach_the_commands_that_take_them(tmp_path):
    text = """\
        [defaults]
        d_model = 8
        dtype = "float64"
        [defaults.alibi]
        dtype = "float16"
        [[table]]
        command = "generate"
        output = "g.npy"
        seq_len = 2
        [[table]]
        command = "rope"
        output = "r.npz"
        seq_len = 2
        head_dim = 4
        [[table]]
        command = "alibi"
        output = "a.npy"
        heads = 4
        dtype = "float32"
        [[table]]
        command = "alibi"
        output = "b.npy"
        heads = 4
        """
    report = building.build(write(tmp_path, text))
    shapes = {t.entry.output: t.arrays for t in report.tables}
    assert shapes["g.npy"] == {"pe": ((2, 8), "float64")}
    assert shapes["r.npz"]["cos"] == ((2, 4), "float64")  # d_model is not a rope key: not applied
    assert shapes["a.npy"] == {"slopes": ((4,), "float32")} and shapes["b.npy"] == {"slopes": ((4,), "float16")}


# ----------------------------------------------------------------------------------------- bad manifests
BAD = [
    pytest.param(
        '[[table]]\ncommand = "rope"\noutput = "r.npz"\nseq_len = 4\nhead_dims = 8',
        ["table #2 (output 'r.npz')", "unknown key 'head_dims'", "did you mean 'head_dim'", "rope takes seq_len"],
        id="unknown-key",
    ),
    pytest.param(
        '[[table]]\ncommand = "generate"\noutput = "g.h"\nseq-len = 4\nd_model = 4',
        ["table #2 (output 'g.h')", "unknown key 'seq-len'", "did you mean 'seq_len'"],
        id="dashes",
    ),
    pytest.param(
        '[[table]]\ncommand = "generate"\noutput = "g.h"\nseq_len = "4"\nd_model = 4',
        ["table #2 (output 'g.h')", 'seq_len must be an integer with 1 <= x <= 2**32, got "4" (a string)'],
        id="wrong-type",
    ),
    pytest.param(
        '[[table]]\ncommand = "generate"\noutput = "g.h"\nseq_len = 4\nd_model = 4\nprogmem = 1',
        ["table #2", "progmem must be true or false, got 1 (an integer)"],
        id="wrong-type-flag",
    ),
    pytest.param(
        '[[table]]\ncommand = "generate"\noutput = "g.h"\nseq_len = 4\nd_model = 4\ndtype = "float8"',
        ["table #2", 'dtype must be one of "float32", "float64"', 'got "float8"'],
        id="wrong-choice",
    ),
    pytest.param(
        '[[table]]\ncommand = "gen"\noutput = "g.h"',
        [
            "table #2 (output 'g.h')",
            'command must be one of "generate", "rope", "mrope", "axial", "alibi", "sincos2d", "detr"',
            '"gen"',
        ],
        id="unknown-command",
    ),
    pytest.param('[[table]]\noutput = "g.h"', ["table #2 (output 'g.h')", "missing key 'command'"], id="no-command"),
    pytest.param('[[table]]\ncommand = "alibi"\nheads = 4', ["table #2:", "missing key 'output'"], id="missing-output"),
    pytest.param(
        '[[table]]\ncommand = "sincos2d"\noutput = "s.npy"\nd_model = 8',
        ["table #2 (output 's.npy')", "missing key 'grid'", "sincos2d needs grid and d_model"],
        id="missing-required",
    ),
    pytest.param(
        '[[table]]\ncommand = "alibi"\noutput = "ok.h"\nheads = 4',
        ["table #2 (output 'ok.h')", "is also written by table #1 (output 'ok.h')"],
        id="duplicate-output",
    ),
    pytest.param(
        '[[table]]\ncommand = "alibi"\noutput = "./sub/../ok.c"\nheads = 4',
        ["table #2 (output './sub/../ok.c')", "ok.h' is also written by table #1"],
        id="companion-collides",
    ),
    pytest.param('[[table]\ncommand = "alibi"', ["posenc.toml: invalid TOML", "line 7"], id="invalid-toml"),
    pytest.param(
        '[[table]]\ncommand = "generate"\noutput = "g.h"\nseq_len = 0\nd_model = 4',
        ["table #2 (output 'g.h')", "seq_len must be an integer with 1 <= x <= 2**32, got 0 (an integer)"],
        id="out-of-range",
    ),
    pytest.param(
        '[[table]]\ncommand = "rope"\noutput = "r.h"\nseq_len = 4\nhead_dim = 4\nfactor = 2.0',
        ["table #2 (output 'r.h')", "factor applies to scaling linear"],
        id="key-not-for-this-scaling",
    ),
    pytest.param(
        '[[table]]\ncommand = "rope"\noutput = "r.npy"\nseq_len = 4\nhead_dim = 4',
        ["table #2 (output 'r.npy')", "part", "holds 3 arrays"],
        id="several-arrays-in-npy",
    ),
    pytest.param(
        '[[table]]\ncommand = "rope"\noutput = "r.npy"\nseq_len = 4\nhead_dim = 4\npart = "tan"',
        ["table #2", "no part 'tan'", "cos, sin, inv_freq"],
        id="unknown-part",
    ),
    pytest.param(
        '[[table]]\ncommand = "generate"\noutput = "g.txt"\nseq_len = 4\nd_model = 4',
        ["table #2 (output 'g.txt')", "cannot tell the format", "'.txt'"],
        id="unknown-suffix",
    ),
    pytest.param(
        '[[table]]\ncommand = "generate"\noutput = "g.h"\nseq_len = 4\nd_model = 4\nnamespace = "ns"',
        ["table #2", "--namespace puts the table in a C++ namespace and needs --lang c++"],
        id="c-options",
    ),
    pytest.param(
        '[defaults]\nd_model = -4\n[[table]]\ncommand = "alibi"\noutput = "a.h"\nheads = 2\n'
        '[[table]]\ncommand = "generate"\noutput = "g.h"\nseq_len = 4',
        ["table #2 (output 'g.h')", "d_model (from [defaults]) must be an integer with 1 <= x <= 2**20, got -4"],
        id="bad-default",
    ),
    pytest.param(
        "[defaults]\nd_modle = 4", ["posenc.toml, [defaults]: unknown key 'd_modle'", "'d_model'"], id="default-key"
    ),
    pytest.param(
        "[defaults.rope]\nheads = 4", ["[defaults.rope]: unknown key 'heads'", "options of rope"], id="command-default"
    ),
    pytest.param('[defaults]\noutput = "x.h"', ["[defaults]: output belongs in each [[table]]"], id="output-default"),
    pytest.param("[tables]\nx = 1", ["unknown top-level key 'tables'", "did you mean 'table'"], id="top-level"),
    pytest.param(
        '[[table]]\ncommand = "generate"\noutput = "posenc.toml"\nformat = "csv"\nseq_len = 4\nd_model = 4',
        ["table #2 (output 'posenc.toml')", "overwrite the manifest"],
        id="overwrites-manifest",
    ),
]


@pytest.mark.parametrize(("second", "fragments"), BAD)
def test_a_bad_manifest_exits_2_naming_entry_and_key_and_writes_nothing(tmp_path, second, fragments):
    # The bad entry comes after a valid one (or [defaults] before it): not even the valid one is written.
    text = f"{second}\n{VALID}" if second.startswith(("[defaults", "[tables")) else f"{VALID}\n{second}\n"
    manifest = write(tmp_path, text)
    result = run("build", str(manifest), "--depfile", str(tmp_path / "t.d"))
    assert_one_line_error(result, 2, *fragments)
    assert os.listdir(tmp_path) == ["posenc.toml"]


def test_an_unwritable_output_exits_1_and_writes_nothing(tmp_path):
    manifest = write(tmp_path, f'{VALID}\n[[table]]\ncommand = "alibi"\noutput = "nodir/a.npz"\nheads = 4\n')
    result = run("build", str(manifest))
    assert_one_line_error(result, 1, "table #2 (output 'nodir/a.npz')", "does not exist")
    assert os.listdir(tmp_path) == ["posenc.toml"]


def test_the_library_raises_spec_errors_naming_the_manifest():
    with pytest.raises(posenc_cli.SpecError, match="no manifest") as info:
        building.load_manifest("/nonexistent/posenc.toml")
    assert info.value.param == "manifest"


# ------------------------------------------------------------------------------------------------ depfiles
def test_depfile_lists_every_output_then_the_manifest_escaped(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    entries = "".join(
        f'[[table]]\ncommand = "alibi"\nheads = 2\noutput = "{name}"\n'
        for name in ("tables/my table.c", "tables/a+b,c@d!{e}~f.npz", "tables/ünï.npz")
    )
    (tmp_path / "tables").mkdir()
    manifest = write(tmp_path / "cfg dir", entries, "pos enc.toml")
    text = building.depfile_text(building.load_manifest(manifest, output_dir=tmp_path))
    targets = "tables/my\\ table.c tables/my\\ table.h tables/a+b,c@d!{e}~f.npz tables/ünï.npz"
    assert text == f"{targets}: cfg\\ dir/pos\\ enc.toml\n"
    # Outside the current directory: absolute (as CMake names files outside its build tree).
    inside = tmp_path / "cfg dir"
    monkeypatch.chdir(inside)
    report = building.build(manifest, output_dir=tmp_path)
    assert building.depfile_text(report).startswith(f"{tmp_path}/tables/my\\ table.c ")
    assert building.depfile_text(report).endswith(": pos\\ enc.toml\n")


@pytest.mark.parametrize("name", ["a:b.h", "a%b.h", "a*b.h", "a?b.h", "lib(x).h", "a[1].h", "a;b.h", "a=b.h",
                                  "a\\b.h", "a\tb.h", "a|b.h", "a'b.h", "~a.h", "a$b.h", "a#b.h",
                                  "a<b>.h"])  # fmt: skip
def test_depfile_refuses_names_make_and_ninja_read_differently(tmp_path, monkeypatch, name):
    """tests/test_build_names.py walks names through every reader; here, the library's error and the command's."""
    monkeypatch.chdir(tmp_path)
    manifest = write(tmp_path, f'[[table]]\ncommand = "alibi"\nheads = 2\noutput = {json.dumps(name)}\n')
    with pytest.raises(posenc_cli.SpecError, match="cannot give .* to a build tool") as info:
        building.depfile_text(building.load_manifest(manifest))
    assert info.value.param == "manifest"
    # The command checks before it writes anything.
    assert_one_line_error(run("build", "--depfile", "t.d"), 2, "table #1", repr(name), "rename the file")
    assert os.listdir(tmp_path) == ["posenc.toml"]


def test_a_command_line_folder_no_depfile_can_name_is_refused_before_anything_is_written(tmp_path, monkeypatch):
    """The manifest's names are fine; the --output-dir, spelled in the depfile, is not: --depfile and --list-outputs
    (run from the same folder) refuse it alike, naming it."""
    monkeypatch.chdir(tmp_path)
    write(tmp_path, VALID)
    (tmp_path / "out(1)").mkdir()
    for args, option in ((["--depfile", "out(1)/t.d"], "'--depfile'"), (["--list-outputs"], "Invalid value: ")):
        result = run("build", "--output-dir", "out(1)", *args)
        assert_one_line_error(result, 2, option, "cannot name 'out(1)/ok.h' in a depfile", "'('", "rename the folder")
    assert sorted(os.listdir(tmp_path)) == ["out(1)", "posenc.toml"] and os.listdir(tmp_path / "out(1)") == []


def test_an_unwritable_depfile_exits_1_before_any_table_is_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, VALID)
    assert_one_line_error(run("build", "--depfile", "nodir/t.d"), 1, "nodir/t.d", "does not exist")
    assert os.listdir(tmp_path) == ["posenc.toml"]


def test_depfile_is_written_atomically_and_left_alone_when_unchanged(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, VALID)
    assert run("build", "--depfile", "posenc.d").exit_code == 0
    assert (tmp_path / "posenc.d").read_text() == "ok.h: posenc.toml\n"
    before = snapshot(tmp_path)
    assert run("build", "--depfile", "posenc.d").exit_code == 0
    assert snapshot(tmp_path) == before


# ---------------------------------------------------------------------------------- real build systems
def _python_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


def _run(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=_python_env(), timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def _later(path: Path, root: Path) -> None:
    """Touch ``path`` (now, never in the future) so that it is newer than every file under ``root``, whatever the
    file system's time stamp resolution."""
    newest = max(p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file() and p != path)
    while True:
        os.utime(path)
        if path.stat().st_mtime_ns > newest:
            return
        time.sleep(0.01)


TWO_TABLES = f'{VALID}\n[[table]]\ncommand = "rope"\noutput = "rope 1.npz"\nseq_len = 8\nhead_dim = 4\n'


def documented_makefile() -> str:
    """The Makefile docs/build.md shows (its one ``make`` block)."""
    text = (REPO / "docs" / "build.md").read_text()
    (block,) = [part.split("```", 1)[0] for part in text.split("```make\n")[1:]]
    return block


STAMPED = (
    '[[table]]\ncommand = "generate"\noutput = "tables/pe.h"\nseq_len = 4\nd_model = 4\n'
    '[[table]]\ncommand = "rope"\noutput = "tables/rope.npz"\nseq_len = 8\nhead_dim = 4\n'
)


@pytest.mark.client
def test_the_documented_makefile_reruns_posenc_once_and_rebuilds_only_what_changed(tmp_path):
    """make compares time stamps only, and posenc leaves unchanged outputs untouched: the stamp of docs/build.md
    (posenc build --stamp, the depfile naming it) makes a touched manifest rerun posenc once, then nothing; a real
    change rebuilds what depends on the changed table; a deleted table comes back."""
    make = require_tool("make")
    require_tool("cc")
    makefile = documented_makefile()
    assert "posenc build posenc.toml" in makefile and "--stamp $@" in makefile
    posenc = f"{shlex.quote(sys.executable)} -m posenc_cli"
    (tmp_path / "Makefile").write_text(makefile.replace("posenc build", f"{posenc} build"))
    write(tmp_path, STAMPED)
    (tmp_path / "main.c").write_text('#include <stdio.h>\n#include "tables/pe.h"\n'
                                     'int main(void) { printf("%d\\n", PE_D_MODEL); return 0; }\n')  # fmt: skip
    tables = [tmp_path / "tables" / "pe.h", tmp_path / "tables" / "rope.npz"]

    def make_run() -> str:
        return _run([make], tmp_path).stdout

    def printed() -> str:
        return subprocess.run([str(tmp_path / "app")], capture_output=True, text=True, check=True).stdout

    ran = make_run()
    assert "posenc_cli build" in ran and " -o app " in ran, ran
    assert printed() == "4\n"
    assert (tmp_path / "posenc.d").read_text() == "posenc.stamp: posenc.toml\n"
    assert (tmp_path / "posenc.stamp").read_bytes() == building.STAMP_TEXT
    ran = make_run()
    assert "posenc_cli" not in ran and "'app' is up to date" in ran, ran
    # Touched, same content: posenc runs once, leaves the tables untouched, nothing is recompiled.
    stamps = {p: p.stat().st_mtime_ns for p in [*tables, tmp_path / "app"]}
    touch_later(tmp_path / "posenc.toml", tmp_path)
    ran = make_run()
    assert "posenc_cli build" in ran and " -o app " not in ran, ran
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps
    ran = make_run()
    assert "posenc_cli" not in ran and "'app' is up to date" in ran, ran
    # A real change: the table changes and the program is rebuilt, once.
    (tmp_path / "posenc.toml").write_text(STAMPED.replace("d_model = 4", "d_model = 6"))
    touch_later(tmp_path / "posenc.toml", tmp_path)
    ran = make_run()
    assert "posenc_cli build" in ran and " -o app " in ran, ran
    assert printed() == "6\n" and (tmp_path / "tables" / "rope.npz").stat().st_mtime_ns == stamps[tables[1]]
    assert "'app' is up to date" in make_run()
    # A table deleted since the last build is made again, and only what depends on a changed table is rebuilt.
    tables[1].unlink()
    ran = make_run()
    assert "posenc_cli build" in ran and " -o app " not in ran and tables[1].is_file(), ran
    assert "'app' is up to date" in make_run()


@pytest.mark.client
def test_ninja_reruns_posenc_when_the_manifest_changes_and_restats_its_outputs(tmp_path):
    ninja = require_tool("ninja")
    write(tmp_path, TWO_TABLES)
    (tmp_path / "use.txt").write_text("")
    (tmp_path / "build.ninja").write_text(
        f"rule posenc\n  command = {shlex.quote(sys.executable)} -m posenc_cli build posenc.toml --depfile posenc.d\n"
        "  depfile = posenc.d\n  restat = 1\n"
        "rule cat\n  command = cat ok.h > $out\n"
        "build ok.h rope$ 1.npz: posenc\n"  # the manifest is not named: the depfile brings it
        "build copy.txt: cat ok.h\n"  # downstream of a table: rebuilt only when the table changes
    )
    assert "posenc_cli build" in _run([ninja, "-v"], tmp_path).stdout
    assert (tmp_path / "posenc.d").read_text() == "ok.h rope\\ 1.npz: posenc.toml\n"
    assert "no work to do" in _run([ninja, "-n"], tmp_path).stdout
    # Touched, same content: posenc runs once, leaves the outputs alone, Ninja restats: nothing downstream.
    before = snapshot(tmp_path)
    _later(tmp_path / "posenc.toml", tmp_path)
    ran = _run([ninja, "-v"], tmp_path).stdout
    assert "posenc_cli build" in ran and "cat ok.h" not in ran, ran
    assert {k: v for k, v in snapshot(tmp_path).items() if k in ("ok.h", "rope 1.npz", "copy.txt")} == {
        k: v for k, v in before.items() if k in ("ok.h", "rope 1.npz", "copy.txt")
    }
    assert "no work to do" in _run([ninja, "-n"], tmp_path).stdout
    # A real change regenerates the table and what uses it.
    (tmp_path / "posenc.toml").write_text(TWO_TABLES.replace("d_model = 4", "d_model = 6"))
    _later(tmp_path / "posenc.toml", tmp_path)
    ran = _run([ninja, "-v"], tmp_path).stdout
    assert "posenc_cli build" in ran and "cat ok.h" in ran, ran
    assert "OK_D_MODEL 6" in (tmp_path / "copy.txt").read_text()
    assert "no work to do" in _run([ninja, "-n"], tmp_path).stdout


@pytest.mark.client
def test_cmake_custom_command_with_depfile(tmp_path):
    cmake = require_tool("cmake")
    require_tool("ninja")
    gcc = require_tool("gcc")
    source, binary = tmp_path / "src", tmp_path / "build"
    write(source, TWO_TABLES.replace('output = "ok.h"', 'output = "ok.c"'))
    (source / "main.c").write_text(
        '#include <stdio.h>\n#include "ok.h"\nint main(void) { printf("%d\\n", OK_D_MODEL); return 0; }\n'
    )
    posenc = f'"{sys.executable}" -m posenc_cli'
    (source / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.20)\nproject(tables C)\n"
        "set(out ${CMAKE_CURRENT_BINARY_DIR})\n"
        "add_custom_command(\n"
        '  OUTPUT ${out}/ok.c ${out}/ok.h "${out}/rope 1.npz"\n'
        f"  COMMAND {posenc} build ${{CMAKE_CURRENT_SOURCE_DIR}}/posenc.toml --output-dir ${{out}}\n"
        "          --depfile ${out}/tables.d\n"
        "  DEPFILE ${out}/tables.d\n  VERBATIM)\n"  # the manifest is not in DEPENDS: the depfile brings it
        "add_executable(app main.c ${out}/ok.c)\ntarget_include_directories(app PRIVATE ${out})\n"
    )
    env = _python_env()
    configure = [cmake, "-S", str(source), "-B", str(binary), "-G", "Ninja", f"-DCMAKE_C_COMPILER={gcc}"]
    subprocess.run(configure, check=True, capture_output=True, env=env, timeout=120)

    def cmake_build() -> str:
        return _run([cmake, "--build", str(binary), "--verbose"], tmp_path).stdout

    assert "posenc_cli build" in cmake_build()
    assert subprocess.run([str(binary / "app")], capture_output=True, text=True).stdout == "4\n"
    assert "no work to do" in cmake_build()
    _later(source / "posenc.toml", tmp_path)  # same content: posenc reruns, nothing is recompiled
    output = cmake_build()
    assert "posenc_cli build" in output and "ok.c.o" not in output, output
    assert "no work to do" in cmake_build()
    (source / "posenc.toml").write_text((source / "posenc.toml").read_text().replace("d_model = 4", "d_model = 6"))
    _later(source / "posenc.toml", tmp_path)
    output = cmake_build()
    assert "posenc_cli build" in output and "main.c.o" in output, output
    assert subprocess.run([str(binary / "app")], capture_output=True, text=True).stdout == "6\n"


@pytest.mark.parametrize(
    "key, value",
    [
        ("progmem", "true"),
        ("align", "16"),
        ("float_literal", '"hex"'),
        ("c_half_type", '"_Float16"'),
        ("header", "false"),
    ],
)
def test_a_manifest_option_the_format_does_not_take_is_refused_before_anything_is_written(tmp_path, key, value):
    manifest = write(
        tmp_path,
        f"""\
        [[table]]
        command = "generate"
        output = "first.npy"
        seq_len = 4
        d_model = 4

        [[table]]
        command = "generate"
        output = "pe.npy"
        seq_len = 4
        d_model = 4
        {key} = {value}
        """,
    )
    result = CliRunner().invoke(cli, ["build", str(manifest)])
    assert_one_line_error(result, 2, "table #2", "npy")
    assert sorted(os.listdir(tmp_path)) == ["posenc.toml"]


# ------------------------------------------------------------- posenc build --list-outputs / --make-dirs (CMake's)
def _manifest(folder: Path, *outputs: str, extra: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    text = "".join(
        f'[[table]]\ncommand = "generate"\noutput = "{o}"\nseq_len = 4\nd_model = 4\n{extra}' for o in outputs
    )
    (folder / "posenc.toml").write_text(text)
    return folder / "posenc.toml"


def test_list_outputs_prints_every_file_a_build_writes_and_writes_nothing(tmp_path):
    manifest = _manifest(tmp_path / "m", "one.h", "two.c", "pe_f32.npy", "sub/pe.csv")
    manifest.write_text(manifest.read_text() + '[[table]]\ncommand = "generate"\noutput = "bf.npy"\nseq_len = 4\n'
                        'd_model = 4\ndtype = "bfloat16"\n')  # fmt: skip
    (tmp_path / "m" / "sub").mkdir()
    before = sorted(p.name for p in (tmp_path / "m").rglob("*"))
    result = CliRunner().invoke(cli, ["build", str(manifest), "--list-outputs"])
    assert result.exit_code == 0, result.output
    folder = (tmp_path / "m").resolve()
    # A .c brings its .h; the bfloat16 .npy its .json sidecar; the float32 .npy needs none.
    names = ["one.h", "two.c", "two.h", "pe_f32.npy", "sub/pe.csv", "bf.npy", "bf.json"]
    assert result.stdout.splitlines() == [str(folder / n) for n in names]
    assert sorted(p.name for p in (tmp_path / "m").rglob("*")) == before  # nothing written


def test_list_outputs_is_a_build_dry_run_exactly(tmp_path):
    """The listed files are the ones `posenc build` then writes, under --output-dir."""
    manifest = _manifest(tmp_path / "m", "a.c", "b.npy", extra='dtype = "q15"\n')
    out = tmp_path / "out"
    out.mkdir()
    result = CliRunner().invoke(cli, ["build", str(manifest), "--output-dir", str(out), "--list-outputs"])
    assert result.exit_code == 0, result.output
    assert list(out.iterdir()) == []
    assert CliRunner().invoke(cli, ["build", str(manifest), "--output-dir", str(out)]).exit_code == 0
    assert sorted(result.stdout.splitlines()) == sorted(str(p.resolve()) for p in out.iterdir())


def test_make_dirs_creates_the_output_folders_only_inside_the_output_root(tmp_path):
    manifest = _manifest(tmp_path / "m", "deep/er/pe.h", "../escape/pe.h")
    out = tmp_path / "build" / "gen"
    (tmp_path / "build").mkdir()
    result = CliRunner().invoke(cli, ["build", str(manifest), "--output-dir", str(out), "--make-dirs"])
    # The escaping entry is refused (an output outside its root) before any folder is made: its neighbour's neither.
    assert result.exit_code == 2 and "../escape/pe.h" in result.output and result.stdout == ""
    assert list((tmp_path / "build").iterdir()) == []
    # A link inside the root that leads out of it is not followed to create folders there.
    target = tmp_path / "elsewhere"
    target.mkdir()
    manifest = _manifest(tmp_path / "m2", "link/new/pe.h")
    (tmp_path / "m2" / "link").symlink_to(target)
    CliRunner().invoke(cli, ["build", str(manifest), "--make-dirs"])
    assert list(target.iterdir()) == []
    # Without --make-dirs a missing folder is an error, as ever; with it, the build works in a fresh tree.
    manifest = _manifest(tmp_path / "m3", "tables/pe.h")
    fresh = tmp_path / "fresh"
    result = CliRunner().invoke(cli, ["build", str(manifest), "--output-dir", str(fresh)])
    assert result.exit_code == 1 and "does not exist" in result.output
    result = CliRunner().invoke(cli, ["build", str(manifest), "--output-dir", str(fresh), "--make-dirs"])
    assert result.exit_code == 0 and (fresh / "tables" / "pe.h").is_file()


@pytest.mark.parametrize("flag", ["--check", "--json", "--depfile=x.d"])
def test_list_outputs_takes_no_option_that_writes_or_reports(tmp_path, flag):
    manifest = _manifest(tmp_path / "m", "pe.h")
    result = CliRunner().invoke(cli, ["build", str(manifest), "--list-outputs", flag])
    assert result.exit_code == 2
    assert f"--list-outputs writes nothing and prints paths: it does not take {flag.split('=')[0]}" in result.output


@pytest.mark.parametrize("name", ["a;b.h", "new\\nline.h", "[x].h"])
def test_list_outputs_refuses_names_a_build_system_would_misread(tmp_path, name):
    """One path a line, for CMake lists: a newline, ';' or brackets in a name are refused, as a depfile refuses them."""
    manifest = _manifest(tmp_path / "m", name)
    result = CliRunner().invoke(cli, ["build", str(manifest), "--list-outputs"])
    assert result.exit_code == 2 and "to a build tool" in result.output and result.stdout == ""


def test_a_run_that_writes_nothing_creates_no_folder_and_says_would_create(tmp_path):
    """--list-outputs and --check write nothing, not even the folders --make-dirs makes for a build; --check says
    "would create" for an output whose folder is missing, as for one whose folder exists (exit 1)."""
    manifest = _manifest(tmp_path / "m", "top.h", "new/deeper/pe.c")
    before = sorted(p.name for p in (tmp_path / "m").rglob("*"))
    listed = CliRunner().invoke(cli, ["build", str(manifest), "--list-outputs", "--make-dirs"])
    assert listed.exit_code == 0, listed.output
    folder = (tmp_path / "m").resolve()
    assert listed.stdout.splitlines() == [str(folder / n) for n in ("top.h", "new/deeper/pe.c", "new/deeper/pe.h")]
    for flags in ([], ["--make-dirs"], ["--depfile", "t.d", "--stamp", "t.stamp"]):
        checked = CliRunner().invoke(cli, ["build", str(manifest), "--check", *flags])
        assert checked.exit_code == 1 and checked.stdout == "", checked.output
        paths = [tmp_path / "m" / n for n in ("top.h", "new/deeper/pe.c", "new/deeper/pe.h")]
        assert checked.stderr.splitlines() == [f"would create {p}" for p in paths]
    assert sorted(p.name for p in (tmp_path / "m").rglob("*")) == before
    report = building.build(manifest, check=True)  # the library: the same report
    assert [(f.path.name, f.status) for f in report.files] == [("top.h", "missing"), ("pe.c", "missing"),
                                                                ("pe.h", "missing")]  # fmt: skip
    # A build without --make-dirs still refuses the missing folder, before the first table is written.
    assert_one_line_error(run("build", str(manifest)), 1, "table #2", "does not exist")
    assert sorted(p.name for p in (tmp_path / "m").rglob("*")) == before


# ------------------------------------------------------------------------------------------ --stamp (make)
def test_the_stamp_is_written_once_then_only_its_time_changes_and_the_depfile_names_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, VALID)
    assert run("build", "--stamp", "s.stamp", "--depfile", "t.d").exit_code == 0
    stamp = tmp_path / "s.stamp"
    assert stamp.read_bytes() == building.STAMP_TEXT and (tmp_path / "t.d").read_text() == "s.stamp: posenc.toml\n"
    inode, table = stamp.stat().st_ino, snapshot(tmp_path)["ok.h"]
    os.utime(stamp, ns=(0, 0))  # as old as can be: a run must set it to now
    assert run("build", "--stamp", "s.stamp").exit_code == 0
    assert stamp.stat().st_mtime_ns >= (tmp_path / "posenc.toml").stat().st_mtime_ns
    assert stamp.stat().st_ino == inode and stamp.read_bytes() == building.STAMP_TEXT  # touched, not rewritten
    assert snapshot(tmp_path)["ok.h"] == table  # the unchanged table is left alone
    # --check writes nothing: neither the stamp nor its time.
    os.utime(stamp, ns=(0, 0))
    assert run("build", "--stamp", "s.stamp", "--check").exit_code == 0 and stamp.stat().st_mtime_ns == 0


def test_a_stamp_that_is_another_file_is_refused_before_anything_is_written(tmp_path, monkeypatch):
    """--stamp main.c by mistake: posenc never touches a file it did not write, and writes nothing else either."""
    monkeypatch.chdir(tmp_path)
    write(tmp_path, VALID)
    (tmp_path / "main.c").write_text("int main(void) { return 0; }\n")
    os.utime(tmp_path / "main.c", ns=(0, 0))
    before = snapshot(tmp_path)
    assert_one_line_error(run("build", "--stamp", "main.c", "--depfile", "t.d"), 1, "'main.c'", "posenc did not write")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--stamp", "s", "--only", "ok.h"], "--stamp says that every output is built: it does not take --only"),
        (["--stamp", "s", "--list-outputs"], "--list-outputs writes nothing and prints paths: it does not take --st"),
        (["--stamp", "posenc.toml"], "the stamp 'posenc.toml' is the manifest itself"),
        (["--stamp", "ok.h"], "the stamp 'ok.h' is an output of the manifest"),
        (["--stamp", "../s.stamp"], "outside"),
        (["--stamp", "s.d", "--depfile", "s.d"], "the depfile and the stamp are one file"),
        (["--stamp", " "], "the stamp must be a file name"),
    ],
)
def test_a_stamp_that_cannot_be_one_is_a_usage_error(tmp_path, monkeypatch, args, fragment):
    folder = tmp_path / "m"
    monkeypatch.chdir(write(folder, VALID).parent)
    assert_one_line_error(run("build", *args), 2, fragment)
    assert os.listdir(folder) == ["posenc.toml"] and os.listdir(tmp_path) == ["m"]


def test_a_failed_build_leaves_the_stamp_as_it_was(tmp_path, monkeypatch):
    """A stamp says that the whole build succeeded: a build stopped by a foreign file beside an output (exit 1)
    leaves it untouched, so make runs posenc again."""
    monkeypatch.chdir(tmp_path)
    write(tmp_path, VALID.replace('"ok.h"', '"ok.c"'))
    assert run("build", "--stamp", "s.stamp").exit_code == 0
    (tmp_path / "ok.h").write_text("/* mine */\n")  # a header posenc did not write, beside ok.c
    os.utime(tmp_path / "s.stamp", ns=(0, 0))
    assert_one_line_error(run("build", "--stamp", "s.stamp"), 1, "posenc did not write")
    assert (tmp_path / "s.stamp").stat().st_mtime_ns == 0


def test_the_old_package_name_still_imports_and_warns_at_the_import():
    """posenc_cli.build, the manifest package's name until issue #26, re-exports posenc_cli.manifest for one
    release: the same objects, and a DeprecationWarning that names the line importing it (Python's default filters
    then show it to a script that does)."""
    sys.modules.pop("posenc_cli.build", None)
    try:
        with pytest.warns(DeprecationWarning, match=r"posenc_cli\.build is deprecated.*posenc_cli\.manifest") as seen:
            import posenc_cli.build as old
        assert [w.filename for w in seen] == [__file__]
        assert old.__all__ == building.__all__ and {"build", "load_manifest", "depfile_text"} <= set(old.__all__)
        assert [name for name in building.__all__ if getattr(old, name) is not getattr(building, name)] == []
    finally:
        sys.modules.pop("posenc_cli.build", None)
        vars(posenc_cli).pop("build", None)
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONWARNINGS": ""}
    script = [sys.executable, "-c", "import posenc_cli.build; print(posenc_cli.build.build.__module__)"]
    done = subprocess.run(script, capture_output=True, text=True, check=True, env=env)
    assert done.stdout == "posenc_cli.manifest.run\n"
    assert done.stderr.startswith("<string>:1: DeprecationWarning: posenc_cli.build is deprecated"), done.stderr
