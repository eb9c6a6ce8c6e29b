"""The registry (:mod:`posenc_cli.kinds`) against every surface it defines: the click options, the manifest keys,
the API keywords, the recorded parameters and their regeneration, the recorded command line.

Each test walks :data:`~posenc_cli.kinds.KINDS`, so a kind added to the registry is checked on every surface without
a line here; a surface that drifts from the registry (an option added by hand, a key missing, a recorded parameter
nobody reads back) fails here.
"""

from __future__ import annotations

import inspect
import shlex

import click
import numpy as np
import pytest
from click.testing import CliRunner

from posenc_cli import api, verify
from posenc_cli import manifest as build
from posenc_cli.cli import cli
from posenc_cli.formats import C_OPTIONS
from posenc_cli.kinds import CONVERT, KINDS, OUTPUT, RUN
from posenc_cli.params import BOOLEAN, Param, command_line

#: For each kind, values that reach many of its parameters (and a table that records most of what it can).
SAMPLES = {
    "generate": [
        {"seq_len": 9, "d_model": 6},
        {"seq_len": 9, "d_model": 7, "base": 500.0, "preset": "fairseq", "odd": "zero", "padding_idx": 2,
         "amplitude": 0.5, "dtype": "float64"},
        {"seq_len": 5, "d_model": 8, "layout": "sin-cos", "min_timescale": 2.0, "start": 0.5, "step": 0.25},
        {"seq_len": 5, "d_model": 8, "freq_shift": 1.0, "dtype": "int8", "scale": 0.0078125, "zero_point": 3,
         "saturate": True},  # zero point 3: values above 125/128 clip, as asked
        {"seq_len": 5, "d_model": 8, "preset": "fairseq", "padding_idx": "none", "dtype": "q15"},
    ],
    "rope": [
        {"seq_len": 6, "head_dim": 8},
        {"seq_len": 6, "head_dim": 8, "theta": 500000.0, "scaling": "llama3", "factor": 8.0,
         "original_max_positions": 4, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "layout": "interleaved"},
        {"seq_len": 6, "head_dim": 8, "scaling": "yarn", "factor": 4.0, "original_max_positions": 4,
         "beta_fast": 16.0, "truncate": False, "mscale": 1.0, "mscale_all_dim": 1.0, "attention_scaling": False},
        {"seq_len": 6, "head_dim": 4, "scaling": "longrope", "factor": 2.0, "original_max_positions": 4,
         "max_positions": 8, "short_factor": (1.0, 1.5), "long_factor": (2.0, 3.0), "dtype": "bfloat16"},
        {"seq_len": 6, "head_dim": 8, "scaling": "dynamic", "factor": 2.0, "max_positions": 4},
        {"seq_len": 6, "head_dim": 16, "rotary_dim": 8, "layout": "half-width", "theta": 500.0},
        {"seq_len": 6, "head_dim": 4, "scaling": "longrope", "original_max_positions": 4, "max_positions": 8,
         "short_factor": (1.0, 1.5), "long_factor": (2.0, 3.0), "longrope_pair": True},
        {"seq_len": 5, "head_dim": 16, "scaling": "proportional", "rotary_dim": 8, "factor": 2.0},
    ],
    "alibi": [
        {"heads": 6}, {"heads": 12, "seq_len": 5, "dtype": "float16"}, {"heads": 12, "seq_len": 5, "variant": "mpt"},
    ],
    "sincos2d": [{"grid": (2, 3), "d_model": 8}, {"grid": (4, 4), "d_model": 16, "cls_token": True, "base": 100.0}],
    "relative": [
        {"scheme": "t5", "query_length": 5},
        {"scheme": "t5", "query_length": 3, "key_length": 7, "buckets": 16, "max_distance": 20, "causal": True,
         "offset": 4, "dtype": "int32"},
        {"scheme": "deberta", "query_length": 6, "key_length": 9, "buckets": 8, "max_distance": 10},
        {"scheme": "shaw", "query_length": 3, "key_length": 5, "max_distance": 2, "dtype": "int64"},
    ],
    "window": [
        {"scheme": "swin", "window": (2, 3)},
        {"scheme": "beit", "window": (3, 3), "dtype": "int16"},
        {"scheme": "swinv2", "window": (3, 2), "pretrained_window": (4, 4)},
    ],
    "detr": [
        {"grid": (3, 4), "d_model": 8},
        {"grid": (2, 5), "d_model": 16, "normalize": False, "temperature": 100.0, "variant": "deformable"},
        {"grid": (4, 4), "d_model": 8, "norm_scale": 1.0, "arithmetic": "framework", "dtype": "float64"},
    ],
    "mrope": [
        {"model": "qwen2-vl", "prompt": "text:3,image:1x4x6,text:2"},
        {"model": "qwen2.5-vl", "prompt": "text:2,video:3x4x4,text:1", "spatial_merge_size": 2,
         "tokens_per_second": 2, "second_per_grid_ts": 0.5, "dtype": "int32"},
        {"model": "qwen3-vl", "prompt": "video:1x2x2,text:1,video:1x2x2", "spatial_merge_size": 1, "dtype": "int16"},
    ],
    "axial": [
        {"model": "pixtral", "grid": (3, 4), "head_dim": 8},
        {"model": "qwen2.5-vl", "grid": (4, 6), "head_dim": 16, "frames": 2, "window_size": 56, "patch_size": 14,
         "arithmetic": "framework", "dtype": "float16"},
        {"model": "flux", "grid": (2, 4), "head_dim": 12, "axes_dim": (4, 4, 4), "text_tokens": 3, "theta": 100.0},
        {"model": "timm-pixel", "grid": (3, 5), "head_dim": 8, "max_res": 100, "linear_bands": True,
         "arithmetic": "framework"},
    ],
}  # fmt: skip

#: The command line's own switches are options of ``posenc build`` itself, not keys of its entries.
SWITCHES = {p.name for p in RUN} - {"output"}


def long_options(option: click.Option) -> list[str]:
    return [o for o in option.opts if o.startswith("--")]


def test_every_kind_has_samples():
    assert set(SAMPLES) == set(KINDS)


@pytest.mark.parametrize("command", KINDS)
def test_the_click_options_are_the_registry_in_its_order(command):
    kind, cmd = KINDS[command], cli.commands[command]
    output, *switches = RUN
    records = [*kind.inputs, output, *OUTPUT, *switches]
    options = [p for p in cmd.params if p.name != "help"]
    assert [p.name for p in options] == [r.name for r in records]
    taken = {p.short for p in kind.inputs if p.short}  # a kind's own short flag wins (relative's -q)
    for option, record in zip(options, records, strict=True):
        assert isinstance(option, click.Option)
        assert long_options(option) == [record.flag], record.name
        assert option.secondary_opts == ([record.negative] if record.pair else [])
        own = record in kind.inputs or record.short not in taken
        short = [record.short] if record.short and own else []
        assert [o for o in option.opts if not o.startswith("--")] == short, record.name
        assert option.help == record.full_help and option.required == record.required
        if record.type.range is not None:  # the range the option holds its value to is in its help
            bounds = record.type.range.text.split(" and ")[0].replace(" ", "")  # "1 <= x <= 2**32": 1<=x<=2**32
            assert option.help.startswith(record.help) and bounds in option.help.rpartition("[range: ")[2]
        assert option.is_flag == (record.type is BOOLEAN), record.name
        if record.default is not None or record.is_flag:
            assert option.default == (record.default if not record.is_flag else False), record.name
        if hasattr(record.type, "choices"):
            assert tuple(option.type.choices) == record.type.choices  # type: ignore[attr-defined]
    assert cmd.short_help == kind.short_help


@pytest.mark.parametrize("command", KINDS)
def test_every_long_option_is_a_manifest_key_of_the_same_name(command):
    """The long option with underscores is the key (``--c-half-type``: ``c_half_type``); the switches are build's."""
    keys = build.KEYS[command]
    assert list(keys) == [p.name for p in KINDS[command].keys]
    for option in cli.commands[command].params:
        if not isinstance(option, click.Option) or option.name == "help":
            continue
        word = long_options(option)[0][2:].replace("-", "_")
        if option.name in SWITCHES:
            assert long_options(option)[0] in {o for p in cli.commands["build"].params for o in p.opts}, word
        elif option.name != "output":
            assert word in keys and word == option.name, word


@pytest.mark.parametrize("command", KINDS)
def test_every_parameter_is_an_api_keyword_of_the_same_name(command):
    kind = KINDS[command]
    maker = inspect.signature(kind.make).parameters
    assert getattr(api, command) is kind.make  # the API publishes the maker itself, by its command's name
    for param in kind.inputs:
        assert param.name in maker, (command, param.name)
        given = maker[param.name].default
        if param.default is not None and given is not None:  # None in the maker: "not given", the kind's default
            assert given == param.default, (command, param.name, given, param.default)
    others = set(maker) - {p.name for p in kind.inputs} - {"lazy"}  # keywords that are no option
    assert others <= {"no_padding", "height", "width"}, (command, others)
    save = inspect.signature(api.save).parameters
    for param in OUTPUT:
        assert param.name in save or param.name in C_OPTIONS, param.name
    for param in CONVERT:
        assert param.name in inspect.signature(api.convert).parameters, param.name


@pytest.mark.parametrize("command", KINDS)
def test_what_a_table_records_is_in_the_registry_and_reads_back_to_the_same_table(command):
    kind = KINDS[command]
    for param in kind.inputs:  # every input has a recorded name (its own, or recorded_as)
        for name in (kind.recorded_as or {}).get(param.name, (param.name,)):
            assert name in kind.recorded, (command, name)
    for values in SAMPLES[command]:
        table = kind.build(values)
        assert table.kind == kind.table
        assert set(table.params) <= set(kind.recorded), set(table.params) - set(kind.recorded)
        again = verify.regenerate(kind.table, table.params)
        result = verify.verify(table, again)
        assert result.ok and result.compared == sum(np.asarray(a).size for a in table.arrays.values()), values


@pytest.mark.parametrize("command", KINDS)
def test_the_recorded_command_reads_back_to_the_same_options(command, tmp_path):
    """The line in a C header, parsed by the command itself, gives back every value that was given."""
    kind = KINDS[command]
    for number, values in enumerate(SAMPLES[command]):
        given = [(p, values.get(p.name, p.default)) for p in kind.keys if p.name != "name"]
        words = shlex.split(command_line(command, [], given, f"t{number}.h"))
        context = cli.commands[command].make_context(command, words[2:], help_option_names=["-h", "--help"])
        for param in kind.inputs:
            want = values.get(param.name, param.default)
            assert context.params[param.name] == want, (param.name, words)


def test_a_parameter_without_a_record_fails_the_walk():
    """The walk can fail: a kind whose tables record a parameter its record lacks is caught."""
    kind = KINDS["alibi"]
    table = kind.build({"heads": 4})
    narrower = dict(kind.recorded)
    del narrower["heads"]
    assert not set(table.params) <= set(narrower)


# ------------------------------------------------------------------------------- refusals named in issue #12
def run(*args: str):
    return CliRunner().invoke(cli, list(args))


def one_line(result, code: int, *fragments: str) -> str:
    assert result.exit_code == code, (result.exit_code, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


def test_rope_d_names_the_head_dimension(tmp_path):
    line = one_line(run("rope", "-n", "8", "-d", "128", "-o", str(tmp_path / "r.npz")), 2, "-d", "--head-dim")
    assert not (tmp_path / "r.npz").exists() and "Traceback" not in line


@pytest.mark.parametrize("padding", ["4", "99"])
def test_a_padding_row_past_the_last_row_is_refused(tmp_path, padding):
    out = tmp_path / "pe.npy"
    one_line(run("generate", "-n", "4", "-d", "4", "--padding-idx", padding, "-o", str(out)), 2,
             "--padding-idx", "past the last row")  # fmt: skip
    assert not out.exists()
    assert run("generate", "-n", "4", "-d", "4", "--padding-idx", "3", "-o", str(out)).exit_code == 0


def test_a_padding_row_past_the_last_row_is_refused_in_a_manifest(tmp_path):
    manifest = tmp_path / "posenc.toml"
    manifest.write_text(
        '[[table]]\ncommand = "generate"\noutput = "pe.h"\nseq_len = 4\nd_model = 4\npadding_idx = 99\n'
    )
    one_line(run("build", str(manifest)), 2, "table #1", "padding_idx", "past the last row")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["posenc.toml"]


def test_messages_name_options_as_the_user_typed_them(tmp_path):
    """No internal names: the API's keyword, or a key spelled otherwise than the option."""
    line = one_line(run("generate", "-n", "4", "-d", "4", "--c-half-type", "_Float16", "-o", str(tmp_path / "x.h")),
                    2, "--c-half-type")  # fmt: skip
    assert "half_type" not in line
    line = one_line(run("rope", "-n", "4", "--head-dim", "8", "-o", str(tmp_path / "x.npy")), 2, "--part")
    assert "part=" not in line and "API" not in line


def test_c_half_type_is_a_manifest_key(tmp_path):
    manifest = tmp_path / "posenc.toml"
    manifest.write_text('[[table]]\ncommand = "generate"\noutput = "h.h"\nseq_len = 2\nd_model = 2\n'
                        'dtype = "float16"\nc_half_type = "_Float16"\n')  # fmt: skip
    assert run("build", str(manifest)).exit_code == 0
    direct = tmp_path / "direct"
    direct.mkdir()
    assert run("generate", "-n", "2", "-d", "2", "--dtype", "float16", "--c-half-type", "_Float16",
               "-o", str(direct / "h.h")).exit_code == 0  # fmt: skip
    assert (tmp_path / "h.h").read_bytes() == (direct / "h.h").read_bytes()


def test_the_registry_names_each_kind_module_by_its_command_and_table():
    """``REGISTRY`` is written out, so that a command imports its own kind alone: each line must be its module's
    ``KIND`` (command, module, table), every module of ``kinds/`` that ends with a ``KIND`` must have its line, and
    ``KINDS`` is the registry's kinds in its order."""
    import importlib
    import pkgutil

    from posenc_cli import kinds

    found = {}
    for module in pkgutil.iter_modules(kinds.__path__):
        kind = getattr(importlib.import_module(f"posenc_cli.kinds.{module.name}"), "KIND", None)
        if isinstance(kind, kinds.Kind):
            found[kind.command] = (module.name, kind.table)
    assert found == kinds.REGISTRY
    assert list(KINDS) == list(kinds.REGISTRY) and all(KINDS[c].command == c for c in KINDS)
    assert all(kinds.by_table(table) is KINDS[c] for c, (_, table) in kinds.REGISTRY.items())


def test_unknown_table_kinds_are_refused_by_name():
    from posenc_cli.errors import SpecError
    from posenc_cli.kinds import by_command, by_table

    with pytest.raises(
        SpecError, match="choose one of generate, rope, mrope, axial, alibi, sincos2d, detr, relative, window"
    ):
        by_command("xpos")
    with pytest.raises(
        SpecError,
        match="regenerates sinusoidal, rope, mrope_ids, axial_rope, alibi, sincos2d, detr_sine, relative, window",
    ):
        by_table("t5")


def test_param_flags_are_the_name_with_dashes():
    p = Param("original_max_positions", BOOLEAN, "x", pair=True)
    assert (p.flag, p.negative) == ("--original-max-positions", "--no-original-max-positions")


def test_save_still_takes_half_type_with_a_deprecation_warning(tmp_path):
    table = api.generate(2, 2, dtype="float16")
    (tmp_path / "old").mkdir()
    (tmp_path / "new").mkdir()
    with pytest.warns(DeprecationWarning, match="c_half_type"):
        api.save(table, tmp_path / "old" / "h.h", half_type="_Float16")
    api.save(table, tmp_path / "new" / "h.h", c_half_type="_Float16")
    assert (tmp_path / "old" / "h.h").read_bytes() == (tmp_path / "new" / "h.h").read_bytes()
    assert b"_Float16" in (tmp_path / "new" / "h.h").read_bytes()
