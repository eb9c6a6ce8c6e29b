"""Every number posenc takes has one declared range (beside its parameter, :mod:`posenc_cli.kinds`), held on every
surface (#25).

The sweep carries out the attack of issue #25 on every numeric parameter of every command: 1e308, -1e308, 1e-320,
0, -0.0, NaN, infinities, 2**63 and integers of hundreds of digits, typed as an option, written in a manifest,
passed to the API, recorded in a table's parameters (what ``posenc verify`` and ``inspect`` read back) and given
in a model's config.json. Each must either make a table or be refused with one line, exit 2 (API: ``SpecError``)
naming where it came from; a value outside the declared range must be refused; nothing may be an internal error.

Whether a value is outside is decided here from the declared bounds with exact rational arithmetic (the test's
own comparison, not the Range's), so a reader that forgets the range fails.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from posenc_cli import verify
from posenc_cli.api import convert as api_convert
from posenc_cli.api import save as api_save
from posenc_cli.cli import cli
from posenc_cli.errors import PosencError, SpecError
from posenc_cli.kinds import CONVERT, KINDS, OUTPUT, Kind
from posenc_cli.kinds.rope_config import CONFIG
from posenc_cli.params import BOOLEAN, Param, ValueType, toml_value

#: The values of issue #25, as Python numbers (the API, a manifest's TOML, a config's JSON) ...
VALUES: list[Any] = [1e308, -1e308, 1e-320, 0, -0.0, math.nan, math.inf, -math.inf, 2**63, -(2**63), 10**30, 10**400]
#: ... and as typed on a command line.
TYPED = ["1e308", "-1e308", "1e-320", "0", "-0.0", "nan", "inf", "-inf", str(2**63), str(-(2**63)), "1" + "0" * 30,
         "1" + "0" * 400, "1" * 5000]  # fmt: skip

#: A small table of each kind, to which a swept parameter is added.
BASE: dict[str, dict[str, Any]] = {
    "generate": {"seq_len": 4, "d_model": 8},
    "rope": {"seq_len": 4, "head_dim": 8},
    "alibi": {"heads": 4, "seq_len": 4},
    "sincos2d": {"grid": (2, 2), "d_model": 8},
    "relative": {"scheme": "t5", "query_length": 4},
    "window": {"scheme": "swinv2", "window": (2, 2)},
    "mrope": {
        "model": "qwen2.5-vl",
        "prompt": "text:2,video:2x2x2,text:1",
        "tokens_per_second": 2,
        "second_per_grid_ts": 1.0,
    },
    "axial": {"model": "qwen2.5-vl", "grid": (2, 2), "head_dim": 8},
    "detr": {"grid": (2, 2), "d_model": 8},
}
_YARN = {"scaling": "yarn", "factor": 4.0, "original_max_positions": 4096}
#: What makes a parameter apply (a scaling mode's parameter needs its mode).
CONTEXT: dict[str, dict[str, Any]] = {
    "factor": {"scaling": "yarn", "original_max_positions": 4096},
    "original_max_positions": {"scaling": "yarn", "factor": 4.0},
    "max_positions": {"scaling": "dynamic", "factor": 2.0},
    "low_freq_factor": {"scaling": "llama3", "factor": 8.0, "original_max_positions": 4096},
    "high_freq_factor": {"scaling": "llama3", "factor": 8.0, "original_max_positions": 4096},
    "beta_fast": _YARN, "beta_slow": _YARN, "attention_factor": _YARN,
    "mscale": {**_YARN, "mscale_all_dim": 1.0}, "mscale_all_dim": {**_YARN, "mscale": 1.0},
    "short_factor": {"scaling": "longrope", "original_max_positions": 2, "long_factor": (1.0,) * 4},
    "long_factor": {"scaling": "longrope", "original_max_positions": 2, "short_factor": (1.0,) * 4},
    "mrope_section": {},
    "scale": {"dtype": "int8"},
    "zero_point": {"dtype": "int8", "scale": 0.01},
}  # fmt: skip
#: How many numbers a list parameter holds here (head_dim 8: four frequencies; M-RoPE and FLUX: three sections).
LENGTH = {"short_factor": 4, "long_factor": 4, "mrope_section": 3, "no_rope_layers": 2, "axes_dim": 3}


def numeric(kind: ValueType) -> bool:
    return kind.metavar in ("INTEGER", "FLOAT", "X,Y,...", "N,N,...", "H[xW]", "ROW|none")


def swept() -> list[tuple[str, Param]]:
    """Every numeric parameter of every table command (its own, the element type's, the output's ``align``)."""
    out = []
    for command, kind in KINDS.items():
        for param in [*kind.inputs, *OUTPUT]:
            if numeric(param.type):
                out.append((command, param))
    return out


SWEPT = swept()
#: The makers' keywords (``align`` is :func:`posenc_cli.api.save`'s: :func:`test_save_holds_align_to_its_range`).
MADE = [(command, param) for command, param in SWEPT if param.name != "align"]


def outside(value: Any, kind: ValueType) -> bool:
    """Whether ``value`` (one number) lies outside ``kind``'s declared range, by exact arithmetic."""
    assert kind.range is not None
    if isinstance(value, float) and not math.isfinite(value):
        return True
    x = Fraction(value)
    r = kind.range
    below = x <= r.lo if r.lo_open else x < r.lo
    above = x >= r.hi if r.hi_open else x > r.hi
    return below or above or (r.nonzero and x == 0)


def as_given(param: Param, value: Any) -> Any:
    """The swept number as the parameter takes it: every item of a list, both sides of a grid."""
    if param.name in LENGTH:
        return [value] * LENGTH[param.name]
    if param.type.metavar == "H[xW]":
        return [value, value]
    return value


def values_of(command: str, param: Param, value: Any) -> dict[str, Any]:
    """The small table of ``command`` with what makes ``param`` apply, and ``param`` at ``value``."""
    applies = command == "rope" or param.name in ("scale", "zero_point")
    return {**BASE[command], **(CONTEXT.get(param.name, {}) if applies else {}), param.name: value}


def number_of(typed: str) -> int | float:
    """The number a person typed (an integer of 5000 digits, which int() refuses, as a stand-in past any range)."""
    if typed.lstrip("-").isdigit():
        return int(typed) if len(typed) < 4000 else 10**4000
    return float(typed)


def argv(kind: Kind, given: dict[str, Any], swept_name: str, typed: str, output: str) -> list[str]:
    """The command line of ``given``, the swept parameter spelled ``typed`` (as a list: ``typed`` for each item)."""
    words = [kind.command]
    for param in [*kind.inputs, *OUTPUT]:
        if param.name not in given:
            continue
        value = given[param.name]
        if param.name == swept_name:
            count = LENGTH.get(param.name, 1)
            text = ",".join([typed] * count) if param.name in LENGTH else typed
            words += [param.flag, text]
        elif param.type is BOOLEAN:
            words.append(param.flag if value else param.negative)
        else:
            words += [param.flag, param.type.spell(tuple(value) if isinstance(value, (list, tuple)) else value)]
    return [*words, "-o", output]


def one_line(result: Any) -> str:
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    assert "internal error" not in lines[0] and "Traceback" not in result.stderr
    return lines[0]


#: Each parameter's type, by its name (the option, the manifest key and the API keyword): the first kind's that takes
#: it (every other kind that takes the name takes the same declaration: the test below).
BY_NAME: dict[str, ValueType] = {}
for _kind in KINDS.values():
    for _param in (*_kind.inputs, *OUTPUT):
        BY_NAME.setdefault(_param.name, _param.type)


# ------------------------------------------------------------------------------------------------ declarations
def test_every_number_a_command_takes_has_a_range():
    every = [p for _, p in SWEPT] + [p for p in CONVERT if numeric(p.type)]
    assert every and all(p.type.range is not None for p in every), [p.name for p in every if p.type.range is None]
    assert all(p.type.range.why for p in every)  # type: ignore[union-attr]


@pytest.mark.parametrize(("command", "param"), SWEPT, ids=[f"{c}-{p.name}" for c, p in SWEPT])
def test_a_parameter_and_its_api_keyword_share_one_declaration(command, param):
    """A parameter name is one declaration on every kind that takes it (the API checks its keyword with that
    parameter's own type), and its table records the value under a type with the same range (the
    recorded-parameter reader)."""
    assert BY_NAME[param.name] is param.type
    kind = KINDS[command]
    for name in (kind.recorded_as or {}).get(param.name, (param.name,)):
        if name in kind.recorded and param.name != "align":
            assert kind.recorded[name].range == param.type.range, name


# --------------------------------------------------------------------------------------------- command line
@pytest.mark.parametrize(("command", "param"), SWEPT, ids=[f"{c}-{p.name}" for c, p in SWEPT])
def test_the_command_line_refuses_every_number_outside_the_range(command, param, tmp_path):
    kind = KINDS[command]
    output = str(tmp_path / ("t.h" if param.name == "align" else "t.npz"))
    for typed in TYPED:
        given = values_of(command, param, typed)
        result = CliRunner().invoke(cli, argv(kind, given, param.name, typed, output))
        assert result.exit_code in (0, 2), (typed, result.exit_code, result.stderr)
        if result.exit_code == 2:  # outside: named; inside, another rule may refuse it (a relation, a type)
            line = one_line(result)
            assert not outside(number_of(typed), param.type) or param.flag in line, (typed, line)
        else:
            assert not outside(number_of(typed), param.type), (typed, "was taken")


# ------------------------------------------------------------------------------------------------- manifest
@pytest.mark.parametrize(("command", "param"), SWEPT, ids=[f"{c}-{p.name}" for c, p in SWEPT])
def test_a_manifest_refuses_every_number_outside_the_range(command, param, tmp_path):
    suffix = ".h" if param.name == "align" else ".npz"
    for number, value in enumerate(VALUES):
        given = values_of(command, param, as_given(param, value))
        keys = "".join(f"{k} = {toml_value(tuple(v) if isinstance(v, list) else v)}\n" for k, v in given.items())
        manifest = tmp_path / f"m{number}.toml"
        manifest.write_text(f'[[table]]\ncommand = "{command}"\noutput = "t{number}{suffix}"\n{keys}')
        result = CliRunner().invoke(cli, ["build", str(manifest), "-q"])
        assert result.exit_code in (0, 2), (value, result.exit_code, result.stderr)
        if result.exit_code == 2:
            line = one_line(result)
            assert "table #1" in line, line
            assert not outside(value, param.type) or f": {param.name} must be" in line, (value, line)
        else:
            assert not outside(value, param.type), (value, "was taken")


# ------------------------------------------------------------------------------------------------------ API
@pytest.mark.parametrize(("command", "param"), MADE, ids=[f"{c}-{p.name}" for c, p in MADE])
def test_the_api_refuses_every_number_outside_the_range(command, param):
    kind = KINDS[command]
    for value in VALUES:
        given = values_of(command, param, as_given(param, value))
        given = {k: tuple(v) if isinstance(v, list) else v for k, v in given.items()}
        try:
            kind.make(**given)
        except SpecError as exc:
            if outside(value, param.type):
                assert exc.param == param.name, (value, exc.param, str(exc))
            assert "\n" not in str(exc) and len(str(exc)) < 400, str(exc)
        else:
            assert not outside(value, param.type), (value, "was taken")


@pytest.mark.parametrize(("command", "param"), MADE, ids=[f"{c}-{p.name}" for c, p in MADE])
def test_the_api_holds_the_declared_bounds_exactly(command, param):
    """Just past each declared bound, the API refuses the keyword: the makers hold the same range as the option,
    however each is written."""
    r = param.type.range
    integer = param.type.metavar in ("INTEGER", "N,N,...", "H[xW]", "ROW|none")
    past = []
    for bound, step, open_ in ((r.lo, -1, r.lo_open), (r.hi, 1, r.hi_open)):
        if open_:
            past.append(int(bound) if integer else float(bound))
        elif integer:
            past.append(int(bound) + step)
        else:
            past.append(float(np.nextafter(float(bound), step * math.inf)))
    for value in past:
        assert outside(value, param.type)
        given = values_of(command, param, as_given(param, value))
        given = {k: tuple(v) if isinstance(v, list) else v for k, v in given.items()}
        with pytest.raises(SpecError) as info:
            KINDS[command].make(**given)
        assert info.value.param == param.name, (value, str(info.value))


def test_save_holds_align_to_its_range(tmp_path):
    table = KINDS["generate"].make(4, 8)
    for number, value in enumerate([*VALUES, 4097, 8192]):
        try:
            api_save(table, tmp_path / f"t{number}.h", align=value)
        except SpecError as exc:
            assert exc.param == "align" or not outside(value, BY_NAME["align"]), (value, str(exc))
        else:
            assert not outside(value, BY_NAME["align"]), (value, "was taken")


def test_convert_holds_the_element_type_to_the_same_ranges():
    table = KINDS["generate"].make(4, 8)
    for value in VALUES:
        for name, given in (("scale", {"scale": value}), ("zero_point", {"scale": 0.01, "zero_point": value})):
            try:
                api_convert(table, dtype="int8", **given)
            except SpecError as exc:
                if outside(value, BY_NAME[name]):
                    assert exc.param == name, (name, value, str(exc))
            else:
                assert not outside(value, BY_NAME[name]), (name, value)


# ---------------------------------------------------------------------------------------- recorded parameters
RECORDED = [(c, name) for c, k in KINDS.items() for name, t in k.recorded.items() if t.range is not None]


@pytest.mark.parametrize(("command", "name"), RECORDED, ids=[f"{c}-{n}" for c, n in RECORDED])
def test_a_recorded_parameter_outside_its_range_is_refused_naming_it(command, name):
    """A file's parameters are untrusted: ``posenc verify``/``inspect`` read each back within its range, before
    any table is claimed in memory or computed."""
    kind = KINDS[command]
    table = kind.build(dict(BASE[command]))
    for value in VALUES:
        params = {**table.params, name: value}
        if name in ("short_factor", "long_factor", "mrope_section"):
            params[name] = ",".join([repr(value) if isinstance(value, float) else str(value)] * 4)
        try:
            verify.regenerate(kind.table, params)
        except SpecError as exc:
            if outside(value, kind.recorded[name]):
                assert exc.param == name, (value, exc.param, str(exc))
        except PosencError:
            assert not outside(value, kind.recorded[name]), value  # a memory claim: only for values in range
        else:
            assert not outside(value, kind.recorded[name]), (value, "was taken")


# ---------------------------------------------------------------------------------------------- config.json
LLAMA = {
    "model_type": "llama",
    "hidden_size": 512,
    "num_attention_heads": 8,
    "max_position_embeddings": 16,
    "rope_theta": 500000.0,
    "rope_scaling": {
        "rope_type": "llama3",
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8,
    },
}
YARN_CONFIG = {
    "model_type": "deepseek_v3",
    "qk_rope_head_dim": 64,
    "max_position_embeddings": 16,
    "rope_theta": 10000.0,
    "rope_scaling": {
        "type": "yarn",
        "factor": 40,
        "beta_fast": 32,
        "beta_slow": 1,
        "mscale": 1.0,
        "mscale_all_dim": 1.0,
        "attention_factor": 1.0,
        "original_max_position_embeddings": 4,
    },
}
PHI3 = {
    "model_type": "phi3",
    "hidden_size": 64,
    "num_attention_heads": 8,
    "max_position_embeddings": 16,
    "original_max_position_embeddings": 4,
    "rope_theta": 10000.0,
    "rope_scaling": {"type": "longrope", "short_factor": [1.0] * 4, "long_factor": [2.0] * 4},
}
QWEN2VL = {
    "model_type": "qwen2_vl",
    "hidden_size": 64,
    "num_attention_heads": 4,
    "max_position_embeddings": 16,
    "rope_theta": 1e6,
    "rope_scaling": {"type": "mrope", "mrope_section": [2, 3, 3]},
}
GPTNEOX = {
    "model_type": "gpt_neox",
    "hidden_size": 64,
    "num_attention_heads": 4,
    "rotary_pct": 0.25,
    "rotary_emb_base": 10000,
    "max_position_embeddings": 16,
}
#: (config, dotted field, the parameter whose range applies; None: a field of its own, checked by its own rule)
FIELDS = [
    (LLAMA, "rope_theta", "theta"), (LLAMA, "rope_scaling.factor", "factor"),
    (LLAMA, "rope_scaling.low_freq_factor", "low_freq_factor"),
    (LLAMA, "rope_scaling.high_freq_factor", "high_freq_factor"),
    (LLAMA, "rope_scaling.original_max_position_embeddings", "original_max_positions"),
    (LLAMA, "max_position_embeddings", "seq_len"), (LLAMA, "partial_rotary_factor", "partial_rotary_factor"),
    (LLAMA, "hidden_size", None), (LLAMA, "num_attention_heads", None), (LLAMA, "head_dim", "head_dim"),
    (YARN_CONFIG, "qk_rope_head_dim", "head_dim"), (YARN_CONFIG, "rope_scaling.beta_fast", "beta_fast"),
    (YARN_CONFIG, "rope_scaling.beta_slow", "beta_slow"), (YARN_CONFIG, "rope_scaling.mscale", "mscale"),
    (YARN_CONFIG, "rope_scaling.mscale_all_dim", "mscale_all_dim"),
    (YARN_CONFIG, "rope_scaling.attention_factor", "attention_factor"), (YARN_CONFIG, "rope_scaling.factor", "factor"),
    (PHI3, "rope_scaling.short_factor", "short_factor"), (PHI3, "rope_scaling.long_factor", "long_factor"),
    (PHI3, "original_max_position_embeddings", "original_max_positions"),
    (QWEN2VL, "rope_scaling.mrope_section", "mrope_section"), (GPTNEOX, "rotary_pct", "rotary_pct"),
    (GPTNEOX, "rotary_emb_base", "theta"),
]  # fmt: skip
JSON_VALUES = [v for v in VALUES if not (isinstance(v, float) and not math.isfinite(v))]  # JSON has no NaN


def range_of(name: str | None) -> ValueType | None:
    if name is None:
        return None
    return CONFIG.get(name) or BY_NAME[name]


@pytest.mark.parametrize(("doc", "field", "name"), FIELDS, ids=[f"{d['model_type']}-{f}" for d, f, _ in FIELDS])
def test_a_config_field_outside_its_range_is_refused_naming_it(doc, field, name, tmp_path):
    kind = range_of(name)
    for number, value in enumerate(JSON_VALUES):
        config = json.loads(json.dumps(doc))
        where = config
        *parents, last = field.split(".")
        for parent in parents:
            where = where[parent]
        where[last] = [value] * len(where[last]) if isinstance(where.get(last), list) else value
        path = tmp_path / f"c{number}.json"
        path.write_text(json.dumps(config))
        result = CliRunner().invoke(cli, ["rope", "--config", str(path), "-o", str(tmp_path / f"r{number}.npz")])
        assert result.exit_code in (0, 2), (value, result.exit_code, result.stderr)
        if result.exit_code == 2:
            line = one_line(result)
            assert "--config" in line, line
            if kind is not None and outside(value, kind):
                assert f"the config's {field} must be" in line, (value, line)
        else:
            assert kind is None or not outside(value, kind), (value, "was taken")


# --------------------------------------------------------------------------------------------------- step 0
@pytest.mark.parametrize("step", ["0", "-0.0", "0e5"])
def test_step_0_is_refused_everywhere(step, tmp_path):
    """Every row at one position is no positional encoding (#25): refused as an option, a manifest key and a
    keyword; a negative step (positions running down, Transformer-XL) stays what it was."""
    result = CliRunner().invoke(cli, ["generate", "-n", "4", "-d", "8", "--step", step, "-o", str(tmp_path / "x.npy")])
    assert result.exit_code == 2 and "--step" in one_line(result) and "x != 0" in result.stderr
    manifest = tmp_path / "posenc.toml"
    manifest.write_text(f'[[table]]\ncommand = "generate"\noutput = "x.npy"\nseq_len = 4\nd_model = 8\nstep = {step}\n')
    result = CliRunner().invoke(cli, ["build", str(manifest)])
    assert result.exit_code == 2 and "step" in one_line(result) and not (tmp_path / "x.npy").exists()
    with pytest.raises(SpecError) as info:
        KINDS["generate"].make(4, 8, step=float(step))
    assert info.value.param == "step"
    down = KINDS["generate"].make(4, 8, start=3.0, step=-1.0, dtype="float64").array
    up = KINDS["generate"].make(4, 8, dtype="float64").array
    assert (np.asarray(down)[::-1] == np.asarray(up)).all()  # row r at 3 - r: the rows of 0 .. 3 reversed


def test_verify_settings_of_any_length_are_refused_in_one_short_line(tmp_path):
    """``posenc verify -s seq_len=<5000 digits>`` was an internal error (int() refuses past 4300 digits)."""
    table = tmp_path / "pe.npy"
    assert CliRunner().invoke(cli, ["generate", "-n", "4", "-d", "8", "-o", str(table)]).exit_code == 0
    for setting in ("seq_len=" + "1" * 5000, "base=1e308", "step=0", "base=" + "9" * 400, "d_model=-0"):
        result = CliRunner().invoke(cli, ["verify", str(table), "-s", setting])
        line = one_line(result)
        assert result.exit_code == 2 and setting.partition("=")[0] in line and len(line) < 400, line
