"""Fuzzing the ``posenc`` command line: every command, hundreds of argument vectors, valid and not.

The commands are read from ``posenc_cli.cli.cli.commands`` when the tests are collected, so a command added later
is fuzzed too: the ones this file knows (the writers, ``presets``, ``convert``, ``show``, ``plot``, ``build``,
``inspect``, ``verify``) get argument vectors built from their documented rules, any other one vectors built from
its click parameters. Each command gets :data:`RUNS` vectors from a seeded generator, a mix of

- valid vectors (small tables: ``seq_len``, ``d_model`` <= 64), and the same with the options shuffled;
- valid vectors with one or two mutations: a value replaced by a bad one (negative, zero, ``10**30``, nan, inf,
  words, empty, unicode, ``²``...), an option dropped (a required one too), an unknown option, an option without its
  value, a repeated option, a stray argument, an output that is a directory, in a missing directory, too long...;
- nonsense: tokens drawn from every command's options and the bad values.

Every run happens in a fresh directory of its own, which is the working directory. Whatever the vector:

- the run ends with ``SystemExit`` or returns (never another exception), with exit code 0, 1 or 2;
- no output holds ``Traceback`` and no error is an "internal error" (an exception posenc did not expect);
- a failure is one line on stderr, ``Error: ...``;
- a failure leaves the directory as it was, and no run leaves a ``*.posenc-tmp`` file behind; ``--check`` never
  changes the directory;
- for the commands whose rules this file knows: a valid vector exits 0 (``--check``: 0 or 1) and writes its output,
  and a vector with a bad parameter exits 2 (or 0 when the mutation happened to be valid), never 1.

A sweep adds, for every command, each value-taking option with each of :data:`SWEEP`'s bad values, and
:data:`KNOWN` holds the vectors that once broke posenc, with the exit codes that are right for them.

Failures are collected per command and grouped by what went wrong; the assertion message lists each group with the
first argument vector that shows it, shell-quoted (the writers run in an empty directory holding ``sub/``, the
other commands in a copy of the inputs :func:`_template` makes).

A smaller number of vectors (:data:`SUBPROCESS_RUNS`) goes through a real ``python -m posenc_cli`` process, to be
sure that no traceback reaches stderr outside click's test runner either (marked ``slow``).
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from posenc_cli import api
from posenc_cli.cli import cli
from posenc_cli.dtypes import DTYPES
from posenc_cli.encodings.presets import LAYOUTS, PRESETS
from posenc_cli.formats import FORMATS

RUNS = 500  # argument vectors per command through CliRunner
SUBPROCESS_RUNS = 30  # argument vectors through a real process, spread over the commands
SEED = 7  # issue #7
HANG_SECONDS = 30  # a single small run taking this long is a hang, reported as a failure
COMMANDS = sorted(cli.commands)
#: Scratch space: a RAM disk where there is one (every posenc write is fsynced), the default temporary dir otherwise.
SCRATCH = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK | os.X_OK) else None

# ------------------------------------------------------------------------------------------------ values
#: Bad values for any option: out of range, not numbers, not finite, empty, unicode, shell-ish.
NASTY = [
    "-1", "0", "-0", "1", "2", "-7", "1e30", "1" + "0" * 30, "-1" + "0" * 30, str(2**63), str(2**64), "4294967297",
    "nan", "NaN", "-nan", "inf", "-inf", "Infinity", "1e309", "-1e309", "1e-320", "4.9e-324", "", " ", "  3  ",
    "abc", "1.5", "-0.5", "0.1", "0x10", "1_000", "1,2", "1,,2", ",", "1,nan", "²", "١٢", "½", "🙂", "é", "Ω",
    "\u200b", "none", "None", "null", "true", "3x", "x", "0x0", "4x0", "65537x1", "x4", "-4x4", "2**8", "--",
    "-", "-h", "\udcff", "a" * 300,
]  # fmt: skip
#: Outputs that are not plain new files in an existing directory.
BAD_OUTPUTS = [
    ".", "sub", "sub/", "missing/x.npy", "missing/deeper/x.h", "x", "x.txt", "x.", ".npy", "x.NPY", "x.npy/",
    "sub/x.h5", "a" * 300 + ".npy", "\udcff.npy", "é.h", " .csv", "-", "x.c.h", "x.h.c", "in.npy",
    "/nonexistent-posenc/x.npy", "", "/dev/null", "/dev/stdout", "/dev/fd/1", "/proc/self/fd/2",
]  # fmt: skip
#: Inputs that are not posenc tables.
BAD_INPUTS = ["sub", "missing.npy", "junk.npy", "empty.npz", "bad.csv", "junk.h5", "notes.txt", "", "-", "\udcff.npy"]
BAD_INPUTS += ["/dev/null", "/dev/zero", "zero.npy"]  # not regular files: refused before reading
UNKNOWN_OPTIONS = [("--bogus",), ("--bogus", "1"), ("-Z",), ("--seq_len", "4"), ("--seq-lenn", "4"), ("---",), ("-",)]
WORDS = ["pe", "cos", "sin", "inv_freq", "bias", "slopes", "table", "x.npy", "out.h", "posenc.toml", "generate"]
STEMS = ["pe", "table", "rope_cache", "pos-enc.v2", "2048x512", "ü", "int", "my table", "x"]
NAMES = ["pe_table", "PE", "t2", "rope", "alibi_bias"]


def _pick(rng: random.Random, *choices):
    return rng.choice(choices)


@dataclass
class Vector:
    """An argument vector (without ``posenc``) as items of one or two tokens, and what its run may do."""

    command: str
    items: list[tuple[str, ...]]
    kind: str  # "valid": exit 0; "usage": 0 or 2; "any": 0, 1 or 2
    output: str | None = None  # a valid vector's output file
    how: str = "valid"

    @property
    def argv(self) -> list[str]:
        return [self.command, *(token for item in self.items for token in item)]


def show_argv(argv: list[str]) -> str:
    text = "posenc " + " ".join(shlex.quote(a) for a in argv)
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


# ------------------------------------------------------------------------------------------------ valid vectors
def _element(rng: random.Random) -> list[tuple[str, ...]]:
    dtype = rng.choice(["float32"] * 4 + list(DTYPES))
    items: list[tuple[str, ...]] = [] if dtype == "float32" and rng.random() < 0.5 else [("--dtype", dtype)]
    if dtype == "int8":
        items.append(("--scale", _pick(rng, "0.0078125", "0.01", "0.5", "3")))
        if rng.random() < 0.5:
            items.append(("--zero-point", str(rng.randint(-128, 127))))
    if dtype in ("q31", "q15", "q7", "int8"):  # values past the type are refused without it: a valid vector asks
        items.append(("--saturate",))
    return items


def _output(rng: random.Random, arrays: dict[str, int], dtype: str) -> tuple[list[tuple[str, ...]], str]:
    """Output options that fit a table of ``arrays`` (name: ndim) and ``dtype``: a format, a part where one is
    needed, C options the C writers accept for it (only for C formats: the others refuse them)."""
    two_d = [k for k, ndim in arrays.items() if ndim == 2]
    formats = [f for f in FORMATS if f != "csv" or two_d]
    fmt = FORMATS[rng.choice(formats)]
    items: list[tuple[str, ...]] = []
    fits = two_d if fmt.name == "csv" else list(arrays)
    if fmt.single and len(arrays) > 1 or fmt.name == "csv" and len(fits) < len(arrays) or rng.random() < 0.1:
        items.append(("--part", rng.choice(fits)))
    stem = rng.choice(STEMS)
    if rng.random() < 0.15:
        name = f"{stem}.dat"
        items.append(("-f", fmt.name) if rng.random() < 0.5 else ("--format", fmt.name))
    else:
        name = stem + rng.choice(fmt.suffixes)
    if rng.random() < 0.15:
        name = "sub/" + name
    items.append(("-o", name) if rng.random() < 0.5 else ("--output", name))  # relative to the run's directory
    in_c = fmt.name in ("h", "c", "bin")
    # C options only where they take effect: elsewhere posenc refuses them (exit 2), unless left at their default.
    lang = _pick(rng, None, None, "c", "c++") if fmt.name == "h" else _pick(rng, None, "c")
    if lang:
        items.append(("--lang", lang))
    if lang == "c++" and rng.random() < 0.4:
        items.append(("--namespace", _pick(rng, "pe", "tables::pos")))
    cxx = lang == "c++" or (lang is None and name.lower().endswith((".hpp", ".hh", ".hxx", ".cpp", ".cc", ".cxx")))
    if in_c and not cxx and rng.random() < 0.1 and dtype != "float64":  # AVR flash is C: a C++ suffix implies C++
        items.append(("--progmem",))
    options = [("--name", NAMES)] + [("--align", ("1", "4", "16", "64", "4096"))] * in_c
    if in_c and dtype in ("float32", "float64"):
        options.append(("--float-literal", ("decimal", "hex", "bits")))
    elif not in_c:
        options.append(("--float-literal", ("decimal",)))
    if in_c and dtype == "float16":
        options.append(("--c-half-type", ("_Float16", "__fp16")))
    for option, values in options:
        if rng.random() < 0.15:
            items.append((option, rng.choice(values)))
    flags = ("--header", "-v", "--verbose", "-q", "--quiet", "--json") + ("--no-header",) * (fmt.name == "csv")
    for flag in flags:
        if rng.random() < 0.06:
            items.append((flag,))
    if rng.random() < 0.04:
        items.append(("--check",))
    return items, name


def _dtype_of(items: list[tuple[str, ...]]) -> str:
    return next((item[1] for item in items if item[0] == "--dtype"), "float32")


def valid_generate(rng: random.Random) -> Vector:
    n = rng.randint(1, 64)
    preset = _pick(rng, None, None, *PRESETS)
    values = PRESETS[preset or "vaswani"].values
    form = _pick(rng, "preset", "preset", "shift", "timescales")
    shift = values.get("freq_shift") if form == "preset" and values["freq"] == "shift" else None
    d = rng.randint(2 * int(shift) + 2 if shift is not None else 1, 64)
    items: list[tuple[str, ...]] = [("-n", str(n)), ("-d", str(d))]
    if preset:
        items.append(("-p", preset))
    if rng.random() < 0.3:
        items.append(("--base", _pick(rng, "10000", "2.5", "500000", "1e12", "10000.0")))  # 1e12: the range's top
    if form == "shift":
        items.append(("--freq-shift", rng.choice([s for s in ("0", "1", "0.5", "-1") if d // 2 - float(s) > 0])))
    elif form == "timescales":
        items.append(("--min-timescale", _pick(rng, "1", "0.5", "2", "1e-3")))
    if rng.random() < 0.3:
        items.append(("--layout", rng.choice(LAYOUTS)))
    odd = _pick(rng, None, None, "natural", "zero", "error")
    if d % 2 and (odd or values["odd"]) == "error":
        odd = _pick(rng, "natural", "zero")
    if odd:
        items.append(("--odd", odd))
    for option, choices in (
        ("--start", ("0", "1", "-3", "0.5", "1e-3", "-1000.25")),
        ("--step", ("1", "0.5", "-1", "-0.25", "2", "1e-3")),  # 0 (every row at one position) is refused: #25
        ("--padding-idx", ("none", "0", str(min(1, n - 1)), str(n - 1))),  # past the last row is refused (KNOWN)
        ("--amplitude", ("1", "-1", "0.5", "-2.5", "1000", "1e-3")),
    ):
        if rng.random() < 0.25:
            items.append((option, rng.choice(choices)))
    items += _element(rng)
    out, name = _output(rng, {"pe": 2}, _dtype_of(items))
    return Vector("generate", items + out, "valid", name)


def valid_rope(rng: random.Random) -> Vector:
    scaling = _pick(rng, "none", "linear", "dynamic", "yarn", "llama3", "longrope")
    head_dim = 2 * rng.randint(2 if scaling == "dynamic" else 1, 32)
    h = head_dim // 2
    items: list[tuple[str, ...]] = [("-n", str(rng.randint(1, 64))), ("--head-dim", str(head_dim))]
    if scaling != "none" or rng.random() < 0.3:
        items.append(("--scaling", scaling))
    if rng.random() < 0.3:
        items.append(("--theta", _pick(rng, "10000", "500000", "2", "1e6")))
    if rng.random() < 0.3:
        items.append(("--layout", _pick(rng, "half", "interleaved")))
    factor = _pick(rng, "1", "2", "4", "8", "32", "1.5")
    if scaling in ("linear", "dynamic", "llama3"):
        items.append(("--factor", factor))
    if scaling == "dynamic":
        items.append(("--max-positions", str(rng.randint(1, 64))))
    if scaling == "llama3":
        items.append(("--original-max-positions", _pick(rng, "8192", "64", "16", "1")))
        if rng.random() < 0.5:
            items += [("--low-freq-factor", _pick(rng, "1", "2")), ("--high-freq-factor", _pick(rng, "4", "8"))]
    if scaling == "yarn":
        items.append(("--original-max-positions", _pick(rng, "4096", "64", "16", "1")))
        items.append(("--factor", factor) if rng.random() < 0.7 else ("--max-positions", "8192"))
        for option, choices in (("--beta-fast", ("32", "16")), ("--beta-slow", ("1", "2")), ("--mscale", ("1",))):
            if rng.random() < 0.3:
                items.append((option, rng.choice(choices)))
        if ("--mscale", "1") in items:
            items.append(("--mscale-all-dim", _pick(rng, "0.707", "1")))
        if rng.random() < 0.3:
            items.append((_pick(rng, "--truncate", "--no-truncate"),))
        if rng.random() < 0.2:
            items.append(("--attention-factor", _pick(rng, "1.2", "0.5")))
    if scaling == "longrope":
        original = rng.randint(2, 64)
        items.append(("--original-max-positions", str(original)))
        for option in ("--short-factor", "--long-factor"):
            items.append((option, ",".join(rng.choice(["1", "1.5", "2.0", "0.5", "64"]) for _ in range(h))))
        how = _pick(rng, "--factor", "--max-positions", "--attention-factor")
        items.append((how, {"--factor": factor, "--max-positions": "4096", "--attention-factor": "1.2"}[how]))
    if rng.random() < 0.2:
        items.append(("--no-attention-scaling",))
    items += _element(rng)
    out, name = _output(rng, {"cos": 2, "sin": 2, "inv_freq": 1}, _dtype_of(items))
    return Vector("rope", items + out, "valid", name)


def valid_alibi(rng: random.Random) -> Vector:
    items: list[tuple[str, ...]] = [("-H", str(rng.randint(1, 64)))]
    arrays = {"slopes": 1}
    if rng.random() < 0.7:
        items.append(("-n", str(rng.randint(1, 64))))
        arrays["bias"] = 2
    items += _element(rng)
    out, name = _output(rng, arrays, _dtype_of(items))
    return Vector("alibi", items + out, "valid", name)


def valid_sincos2d(rng: random.Random) -> Vector:
    grid = (
        str(rng.randint(1, 8))
        if rng.random() < 0.5
        else f"{rng.randint(1, 8)}{_pick(rng, 'x', 'X')}{rng.randint(1, 8)}"
    )
    items: list[tuple[str, ...]] = [("-g", grid), ("-d", str(4 * rng.randint(1, 16)))]
    if rng.random() < 0.3:
        items.append(("--cls-token",))
    if rng.random() < 0.3:
        items.append(("--base", _pick(rng, "10000", "2", "1e6")))
    items += _element(rng)
    out, name = _output(rng, {"pe": 2}, _dtype_of(items))
    return Vector("sincos2d", items + out, "valid", name)


def valid_presets(rng: random.Random) -> Vector:
    return Vector("presets", [("--json",)] if rng.random() < 0.5 else [], "valid")


#: The inputs every run of a command that reads files finds in its directory (see :func:`_template`), with their
#: arrays (name: ndim).
INPUTS = {
    "in.npy": {"pe": 2},
    "in.npz": {"cos": 2, "sin": 2, "inv_freq": 1},
    "in.h5": {"in": 2},
    "in.csv": {"pe": 2},
    "in.safetensors": {"slopes": 1, "bias": 2},
    "hdr.h": {"pe": 2},
    "src.c": {"pe": 2},
    "raw.bin": {"pe": 2},
}


def _input(rng: random.Random) -> tuple[str, dict[str, int]]:
    name = rng.choice(list(INPUTS))
    return name, INPUTS[name]


def valid_convert(rng: random.Random) -> Vector:
    source, arrays = _input(rng)
    items: list[tuple[str, ...]] = [(source,)]
    if len(arrays) > 1 and rng.random() < 0.7:
        key = rng.choice([k for k, ndim in arrays.items() if ndim == 2])
        items.append(("--key", key))
        arrays = {key: arrays[key]}
    if rng.random() < 0.3:
        items += _element(rng)
    out, name = _output(rng, arrays, _dtype_of(items))
    if rng.random() < 0.5:  # OUT as the second argument instead of -o
        flat = [item for item in out if item[0] not in ("-o", "--output")]
        out = [*flat, (next(item[1] for item in out if item[0] in ("-o", "--output")),)]
    return Vector("convert", items + out, "valid", name)


def _table_source(rng: random.Random) -> list[tuple[str, ...]]:
    if rng.random() < 0.5:
        source, arrays = _input(rng)
        items: list[tuple[str, ...]] = [(source,)]
        if len(arrays) > 1:
            items.append(("--part", rng.choice([k for k, ndim in arrays.items() if ndim == 2])))
        return items
    items = [("-n", str(rng.randint(1, 64))), ("-d", str(rng.randint(4, 64)))]
    if rng.random() < 0.3:
        items.append(("-p", _pick(rng, "vaswani", "marian", "fairseq", "openai-diffusion")))
    if rng.random() < 0.3:
        items.append(("--base", _pick(rng, "10000", "2.5")))
    return items


def valid_show(rng: random.Random) -> Vector:
    items = _table_source(rng)
    for option, lo, hi in (("--width", 20, 120), ("--height", 3, 40)):
        if rng.random() < 0.4:
            items.append((option, str(rng.randint(lo, hi))))
    return Vector("show", items, "valid")


def valid_plot(rng: random.Random) -> Vector:
    items = _table_source(rng)
    name = _pick(rng, "pe.png", "sub/pe.png", "plot.PNG")
    items += [("-o", name), ("--dpi", str(rng.randint(20, 30)))]
    if rng.random() < 0.3:
        items.append(("--dims", _pick(rng, "0", "0,1", "0,1,3")))
    if rng.random() < 0.3:
        items.append(("--title", _pick(rng, "pe", "ü table", "")))
    return Vector("plot", items, "valid", name)


def valid_build(rng: random.Random) -> Vector:
    items: list[tuple[str, ...]] = []
    if rng.random() < 0.6:
        items.append(("posenc.toml",))
    if rng.random() < 0.3:
        items.append(("--output-dir", _pick(rng, "sub", "newdir")))
    if rng.random() < 0.2:
        items.append(("--only", "m_pe.h"))
    if rng.random() < 0.2:
        items.append(("--depfile", "tables.d"))
    for flag in ("--json", "-q", "-v", "--check"):
        if rng.random() < 0.1:
            items.append((flag,))
    return Vector("build", items, "valid")


def valid_inspect(rng: random.Random) -> Vector:
    items: list[tuple[str, ...]] = [(_input(rng)[0],)]
    if rng.random() < 0.4:
        items.append(("--json",))
    return Vector("inspect", items, "valid")


def valid_verify(rng: random.Random) -> Vector:
    source, _ = _input(rng)
    items: list[tuple[str, ...]] = [(source,)]
    if source in ("in.npy", "in.csv"):  # no parameters recorded: say what the table is
        items += [("--kind", "sinusoidal"), ("-s", "seq_len=8"), ("--set", "d_model=8")]
    if rng.random() < 0.4:
        items.append(("--json",))
    return Vector("verify", items, "valid")


BUILDERS: dict[str, Callable[[random.Random], Vector]] = {
    "generate": valid_generate,
    "rope": valid_rope,
    "alibi": valid_alibi,
    "sincos2d": valid_sincos2d,
    "presets": valid_presets,
    "convert": valid_convert,
    "show": valid_show,
    "plot": valid_plot,
    "build": valid_build,
    "inspect": valid_inspect,
    "verify": valid_verify,
}
#: Commands whose exit codes this file holds to the rules: valid -> 0, a bad parameter -> 2.
STRICT = {"generate", "rope", "alibi", "sincos2d", "presets"}
#: Shares of plainly valid and of mutated vectors per command (the rest is nonsense). plot draws a PNG with
#: matplotlib, about 0.3 s a run, so its vectors lean towards the ones that fail early.
MIX = {"plot": (0.02, 0.15)}
DEFAULT_MIX = (0.25, 0.5)
#: The bad values every value-taking option of every command is tried with (free text: :data:`SWEEP_TEXT`).
SWEEP = [
    "-1", "0", "-0", "2", "1e30", "1" + "0" * 30, "4294967297", "nan", "inf", "-inf", "1e-320", "", "abc", "1.5",
    "0x10", "1,2", "²", "١٢", "🙂", "\udcff", "none", "-", "--", "x", "a" * 300,
]  # fmt: skip
SWEEP_TEXT = ["", "🙂", "\udcff", "-", "a" * 300]


def _generic_value(param: click.Parameter, rng: random.Random) -> str:
    """A plausible value for a parameter of a command this file does not know."""
    kind = param.type
    if isinstance(kind, click.Choice):
        return str(rng.choice(list(kind.choices)))
    if isinstance(kind, (click.IntRange, click.FloatRange)):
        lo = kind.min if kind.min is not None else 1
        return str(rng.randint(int(lo), int(lo) + 8))
    if isinstance(kind, click.types.IntParamType):
        return str(rng.randint(1, 16))
    if isinstance(kind, click.types.FloatParamType):
        return _pick(rng, "1.5", "2", "10000")
    if isinstance(kind, (click.Path, click.File)) or param.name in ("file", "input", "input_", "manifest"):
        return rng.choice([*INPUTS, "posenc.toml", "out.npy", "sub"])
    if param.name and "output" in param.name:
        return rng.choice(STEMS) + rng.choice([s for f in FORMATS.values() for s in f.suffixes])
    return rng.choice(WORDS)


def valid_generic(command: str, rng: random.Random) -> Vector:
    items: list[tuple[str, ...]] = []
    for param in cli.commands[command].params:
        if not (param.required or rng.random() < 0.2):
            continue
        if isinstance(param, click.Argument):
            items.append((_generic_value(param, rng),))
        elif isinstance(param, click.Option) and param.opts:
            if param.is_flag:
                items.append((rng.choice(param.opts + param.secondary_opts),))
            else:
                items.append((rng.choice(param.opts), _generic_value(param, rng)))
    return Vector(command, items, "any", how="plausible")


def valid_vector(command: str, rng: random.Random) -> Vector:
    builder = BUILDERS.get(command)
    vector = builder(rng) if builder is not None else valid_generic(command, rng)
    if command not in STRICT:
        vector.kind = "any"
    return vector


# ------------------------------------------------------------------------------------------------ mutations
OUTPUT_OPTIONS = ("-o", "--output", "--depfile", "--output-dir")


def _options_with_values(command: str) -> list[str]:
    return [
        opt
        for p in cli.commands[command].params
        if isinstance(p, click.Option) and not p.is_flag and not p.count
        for opt in p.opts
    ]


def _worse(kind: str, new: str) -> str:
    order = {"valid": 0, "usage": 1, "any": 2}
    return new if order[new] > order[kind] else kind


def mutate(vector: Vector, rng: random.Random) -> Vector:
    """``vector`` with one random mutation, and the weakest promise it still carries."""
    items = list(vector.items)
    positional = [i for i, item in enumerate(items) if len(item) == 1 and not item[0].startswith("-")]
    valued = [i for i, item in enumerate(items) if len(item) == 2]
    how = rng.choice(
        ["value", "value", "value", "drop", "unknown", "no_value", "repeat", "stray", "shuffle", "path", "path"]
    )
    kind = "usage"
    if how == "value" and valued:
        i = rng.choice(valued)
        option = items[i][0]
        items[i] = (option, rng.choice(NASTY + WORDS))
        if option in OUTPUT_OPTIONS:
            kind = "any"
    elif how == "drop" and items:
        del items[rng.randrange(len(items))]
    elif how == "unknown":
        items.insert(rng.randint(0, len(items)), rng.choice(UNKNOWN_OPTIONS))
    elif how == "no_value" and _options_with_values(vector.command):
        items.append((rng.choice(_options_with_values(vector.command)),))
    elif how == "repeat" and valued:
        option, _ = items[rng.choice(valued)]
        items.insert(rng.randint(0, len(items)), (option, rng.choice(NASTY + WORDS)))
        kind = "any" if option in OUTPUT_OPTIONS else "usage"
    elif how == "stray":
        items.insert(rng.randint(0, len(items)), (rng.choice(WORDS),))
    elif how == "shuffle":
        moved = [item for i, item in enumerate(items) if i not in positional]
        rng.shuffle(moved)
        slots = iter(moved)
        items = [item if i in positional else next(slots) for i, item in enumerate(items)]
        kind = "valid"
    elif how == "path":
        outputs = [i for i in valued if items[i][0] in OUTPUT_OPTIONS]
        if positional and (not outputs or rng.random() < 0.5):
            i = rng.choice(positional)
            items[i] = (rng.choice(BAD_INPUTS + BAD_OUTPUTS),)
        elif outputs:
            i = rng.choice(outputs)
            items[i] = (items[i][0], rng.choice(BAD_OUTPUTS))
        else:
            items.append(("-o", rng.choice(BAD_OUTPUTS)))
        kind = "any"
    else:
        items.append(rng.choice(UNKNOWN_OPTIONS))
    kind = _worse(vector.kind, kind) if vector.kind != "valid" else kind
    return Vector(vector.command, items, kind, vector.output if kind == "valid" else None, f"{vector.how}+{how}")


def nonsense(command: str, rng: random.Random) -> Vector:
    pool = [opt for c in cli.commands.values() for p in c.params for opt in getattr(p, "opts", [])]
    pool = [o for o in pool if o.startswith("-")] + NASTY + WORDS + BAD_OUTPUTS + [o for o, *_ in UNKNOWN_OPTIONS]
    pool += [str(rng.randint(0, 64)) for _ in range(20)] + ["--help", "-h", "--version"]
    tokens = [(rng.choice(pool),) for _ in range(rng.randint(0, 8))]
    return Vector(command, tokens, "any", how="nonsense")


def vectors(command: str, count: int, seed: object) -> list[Vector]:
    """``count`` seeded vectors for ``command``: valid, shuffled, mutated once or twice, nonsense."""
    rng = random.Random(f"{SEED}-{command}-{seed}")
    valid_share, mutated_share = MIX.get(command, DEFAULT_MIX)
    out = []
    for _ in range(count):
        roll = rng.random()
        if roll < valid_share:
            vector = valid_vector(command, rng)
        elif roll < valid_share + mutated_share:
            vector = mutate(valid_vector(command, rng), rng)
            if rng.random() < 0.3:
                vector = mutate(vector, rng)
        else:
            vector = nonsense(command, rng)
        out.append(vector)
    return out


def sweep(command: str) -> list[Vector]:
    """Every value-taking option of ``command`` with every value of :data:`SWEEP`, on one valid vector (replacing
    the option's value, or added to the vector): the rare pairs that random vectors seldom draw."""
    base = valid_vector(command, random.Random(f"{SEED}-{command}-sweep"))
    out = []
    for param in cli.commands[command].params:
        if not isinstance(param, click.Option) or param.is_flag or param.count or not param.opts:
            continue
        option = max(param.opts, key=len)
        text = param.type is click.STRING and not (param.name and "output" in param.name) and param.name != "part"
        for value in SWEEP_TEXT if text else SWEEP:
            items = [item for item in base.items if item[0] not in param.opts]
            items.append((option, value))
            kind = "any" if option in OUTPUT_OPTIONS or base.kind == "any" else "usage"
            out.append(Vector(command, items, kind, how="sweep"))
    return out


# ------------------------------------------------------------------------------------------------ the runs
def _template(root: Path) -> Path:
    """A directory with one file of every readable kind, a manifest and some junk: what input-reading commands find."""
    template = root / "template"
    template.mkdir()
    small = api.generate(8, 8)
    api.save(small, template / "in.npy")
    api.save(api.rope(4, 4), template / "in.npz")
    api.save(small, template / "in.h5")
    api.save(small, template / "in.csv")
    api.save(api.alibi(4, 8), template / "in.safetensors")
    api.save(small, template / "hdr.h")
    api.save(small, template / "src.c")
    api.save(small, template / "raw.bin")
    (template / "posenc.toml").write_text(
        '[[table]]\ncommand = "generate"\noutput = "m_pe.h"\nseq_len = 8\nd_model = 8\n\n'
        '[[table]]\ncommand = "rope"\noutput = "m_rope.npz"\nseq_len = 8\nhead_dim = 8\n'
    )
    (template / "junk.npy").write_bytes(b"\x93NUMPY\x01\x00garbage")
    (template / "empty.npz").write_bytes(b"")
    (template / "bad.csv").write_text("d0,d1\n1.0,x\n")
    (template / "junk.h5").write_bytes(b"not hdf5")
    (template / "notes.txt").write_text("hello\n")
    (template / "sub").mkdir()
    (template / "zero.npy").symlink_to("/dev/zero")  # endless: refused before reading (test_hostile_cli: FIFOs)
    return template


def _snapshot(directory: Path) -> dict[str, tuple[bool, int, int]]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(directory):
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            st = path.lstat()
            # A directory's own mtime changes when a temporary file comes and goes: only its existence counts.
            is_dir = path.is_dir() and not path.is_symlink()
            out[os.fsdecode(path.relative_to(directory))] = (
                (True, 0, 0) if is_dir else (False, st.st_size, st.st_mtime_ns)
            )
    return out


def _leftovers(directory: Path) -> list[str]:
    return sorted(name for name in _snapshot(directory) if name.endswith(".posenc-tmp"))


@contextlib.contextmanager
def _working_directory(path: Path) -> Iterator[None]:
    previous = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(previous)


class _Hang(BaseException):
    """Raised by SIGALRM in a run that takes too long (a BaseException: posenc's ``except Exception`` lets it by)."""


@contextlib.contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    def alarm(signum: int, frame: object) -> None:
        raise _Hang()

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _normalise(line: str) -> str:
    """An error line with its particulars taken out, to group failures that are the same bug."""
    line = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", line)
    return re.sub(r"-?\d+(\.\d+)?(e[-+]?\d+)?", "N", line)[:160]


def problems(vector: Vector, code: int, stdout: str, stderr: str, before: dict, after: dict, leftovers) -> list[str]:
    """What is wrong with a run's outcome (empty when nothing is)."""
    found = []
    # --check and identify answer a question with exit 1 ("stale", "no match") and a report, not an error line
    checking = "--check" in vector.argv or vector.argv[:1] == ["identify"]
    allowed = {"valid": {0}, "usage": {0, 2}, "any": {0, 1, 2}}[vector.kind]
    if checking:
        allowed = allowed | {1}
    lines = [line for line in stderr.splitlines() if line.strip()]
    first = lines[0] if lines else ""
    if code not in (0, 1, 2):
        found.append(f"exit code {code} (expected 0, 1 or 2)")
    elif code not in allowed:
        found.append(f"exit code {code} for a {vector.kind} vector (expected {sorted(allowed)}): {_normalise(first)}")
    if "Traceback" in stdout or "Traceback" in stderr:
        found.append("a traceback in the output")
    if "internal error" in stderr:
        found.append(f"an internal error: {_normalise(first)}")
    if code != 0 and not (checking and code == 1 and not first.startswith("Error:")):
        if len(lines) != 1 or not first.startswith("Error: "):
            found.append(f"the error is not one 'Error: ...' line but {len(lines)} lines: {_normalise(first)[:80]}")
    if (code != 0 or checking) and after != before:
        changed = sorted(set(after.items()) ^ set(before.items()))
        found.append(f"a failed or --check run changed its directory: {sorted({name for name, _ in changed})[:4]}")
    if leftovers:
        found.append(f"temporary files left behind: {leftovers[:2]}")
    if not found and vector.kind == "valid" and code == 0 and vector.output and not checking:
        if vector.output not in after:
            found.append(f"a valid run exited 0 but wrote no {vector.output!r}")
    return found


def _run_in_process(runner: CliRunner, vector: Vector, directory: Path) -> tuple[list[str], int | None]:
    """Run ``vector`` in ``directory`` through click's test runner: what is wrong with the run, and its exit code."""
    before = _snapshot(directory)
    with _working_directory(directory):
        try:
            with _deadline(HANG_SECONDS):
                result = runner.invoke(cli, vector.argv, catch_exceptions=True)
        except _Hang:
            return [f"no answer within {HANG_SECONDS} s (a hang)"], None
    found = []
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        found.append(f"raised {type(result.exception).__name__} instead of exiting: {result.exception}")
    after = _snapshot(directory)
    found += problems(vector, result.exit_code, result.stdout, result.stderr, before, after, _leftovers(directory))
    return found, result.exit_code


def _report(command: str, failures: dict[str, list[str]], runs: int) -> str:
    lines = [f"posenc {command}: {len(failures)} kinds of failure in {runs} runs (first vector of each):"]
    for problem, argvs in sorted(failures.items()):
        lines.append(f"- {problem}  [{len(argvs)}x]\n    {argvs[0]}")
    return "\n".join(lines)


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="posenc-fuzz-", dir=SCRATCH))
    try:
        _template(root)
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _fresh(scratch: Path, command: str, i: int) -> Path:
    directory = scratch / f"{command}-{i}"
    reads = command not in STRICT
    if reads:
        shutil.copytree(scratch / "template", directory, symlinks=True)
    else:
        directory.mkdir()
        (directory / "sub").mkdir()
    return directory


def test_commands_are_discovered():
    """The fuzz covers what ``posenc --help`` lists, and at least the writers this file knows."""
    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0
    listed = re.findall(r"^  ([a-z0-9-]+)\s", result.stdout.split("Commands:")[1], re.MULTILINE)
    assert sorted(listed) == COMMANDS
    assert STRICT <= set(COMMANDS)


@pytest.mark.parametrize("command", COMMANDS)
def test_fuzz_command(command: str, scratch: Path) -> None:
    runner = CliRunner()
    failures: dict[str, list[str]] = {}
    for i, vector in enumerate(vectors(command, RUNS, "inprocess") + sweep(command)):
        directory = _fresh(scratch, command, i)
        for problem in _run_in_process(runner, vector, directory)[0]:
            failures.setdefault(problem, []).append(f"{show_argv(vector.argv)}    ({vector.how})")
        shutil.rmtree(directory, ignore_errors=True)
    assert not failures, _report(command, failures, i + 1)


def test_bare_and_unknown_commands(scratch: Path) -> None:
    """Without a known command: usage errors, one line each."""
    runner = CliRunner()
    failures: dict[str, list[str]] = {}
    cases = [[], ["--bogus"], ["generat"], ["🙂"], [""], ["-"], ["--"], ["--version", "x"], ["help"], ["\udcff"]]
    for i, argv in enumerate(cases):
        directory = scratch / f"top-{i}"
        directory.mkdir()
        before = _snapshot(directory)
        with _working_directory(directory):
            result = runner.invoke(cli, argv, catch_exceptions=True)
        assert result.exception is None or isinstance(result.exception, SystemExit), (argv, result.exception)
        vector = Vector("", [], "usage")
        for problem in problems(
            vector, result.exit_code, result.stdout, result.stderr, before, _snapshot(directory), []
        ):
            failures.setdefault(problem, []).append(show_argv(argv))
    assert not failures, _report("(no command)", failures, len(cases))


#: Vectors that once broke posenc (found by this file and by tests/test_properties.py), with the exit codes that are
#: right for them. Each runs in a fresh directory holding the fuzz inputs, under the same checks as the fuzz.
KNOWN = [
    (["generate", "-n", "4", "-d", "4", "--padding-idx", "²", "-o", "x.npy"], {2}),
    (["generate", "-n", "4", "-d", "4", "--padding-idx", "4", "-o", "x.npy"], {2}),  # past the last row: no effect
    (["generate", "-n", "4", "-d", "4", "-p", "fairseq", "--padding-idx", "9", "-o", "x.npy"], {2}),
    (["generate", "-n", "١٢", "-d", "4", "-o", "x.npy"], {2}),  # Unicode digits were read as 12
    (["generate", "-n", "4", "-d", "4", "-f", "npy", "-o", "/dev/null"], {1}),
    (["generate", "-n", "4", "-d", "4", "-f", "csv", "-o", "/dev/stdout"], {1}),
    (["inspect", "in.npy", "--max-memory", "16"], {1}),
    (["inspect", "zero.npy"], {1}),
    (["verify", "zero.npy", "-s", "seq_len=4", "-s", "d_model=4"], {1}),
    (["build", "posenc.toml", "--depfile", "posenc.toml"], {2}),
    (["sincos2d", "-g", "²x2", "-d", "4", "-o", "x.npy"], {2}),
    (["plot", "-n", "4", "-d", "4", "--dims", "²", "-o", "x.png"], {2}),
    (["plot", "-n", "4", "-d", "4", "--title", "\udcff", "-o", "x.png", "--dpi", "20"], {0, 2}),
    (["generate", "-n", "4", "-d", "4", "-o", "ü.c"], {0}),
    (["generate", "-n", "4", "-d", "4", "-o", "ü.bin"], {0}),
    (["generate", "-n", "4", "-d", "4", "-o", "a" * 300 + ".npy"], {1}),
    (["generate", "-n", "2", "-d", "1", "-p", "tensor2tensor", "-o", "x.npy"], {0}),
    (["generate", "-n", "2", "-d", "1", "--odd", "zero", "--min-timescale", "2", "-o", "x.npy"], {0}),
    (["generate", "-n", "2", "-d", "1", "--odd", "zero", "-o", "x.npy"], {0}),
    (["rope", "-n", "4", "--head-dim", "4", "--part", "inv_freq", "-o", "x.csv"], {2}),
    (["alibi", "-H", "4", "-o", "x.csv"], {2}),
    (["build", "posenc.toml", "--depfile", "", "-v"], {1, 2}),
    (["convert", "in.npy", "--output", ""], {2}),
    (["generate", "-n", "2", "-d", "2", "-f", "npy", "-o", "."], {1, 2}),
    (["convert", "in.npy", "-f", "c", "."], {1, 2}),
    (["generate", "-n", "2", "-d", "2", "-o", "x.npy/"], {1, 2}),  # a trailing slash names a directory
    (["alibi", "-H", "1", "-n", "2", "--dtype", "q7", "-o", "x.npz"], {0}),
    (["sincos2d", "-g", "2", "-d", "1" + "0" * 30, "-o", "x.npy"], {2}),
    (
        ["rope", "-n", "4", "--head-dim", "4", "--scaling", "longrope", "--original-max-positions", "1"]
        + ["--factor", "2", "--short-factor", "1,1", "--long-factor", "1,1", "-o", "x.npz"],
        {2},
    ),
]


@pytest.mark.parametrize(("argv", "codes"), KNOWN, ids=[show_argv(argv)[7:60] for argv, _ in KNOWN])
def test_known_vectors(argv: list[str], codes: set[int], scratch: Path) -> None:
    directory = Path(tempfile.mkdtemp(dir=scratch))
    shutil.rmtree(directory)
    shutil.copytree(scratch / "template", directory, symlinks=True)
    vector = Vector(argv[0], [(token,) for token in argv[1:]], "any")
    found, code = _run_in_process(CliRunner(), vector, directory)
    assert not found and code in codes, f"{show_argv(argv)}: exit {code} (expected {sorted(codes)}); {found}"


# ------------------------------------------------------------------------------------------------ real processes
def _run_process(vector: Vector, directory: Path) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != "POSENC_DEBUG"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).resolve().parents[1]), env.get("PYTHONPATH")]))
    before = _snapshot(directory)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "posenc_cli", *vector.argv],
            cwd=directory,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=120,
        )
    except subprocess.TimeoutExpired:
        return ["no answer within 120 s (a hang)"]
    stdout = proc.stdout.decode("utf-8", "replace")
    stderr = proc.stderr.decode("utf-8", "replace")
    return problems(vector, proc.returncode, stdout, stderr, before, _snapshot(directory), _leftovers(directory))


@pytest.mark.slow
def test_fuzz_real_processes(scratch: Path) -> None:
    """A few vectors of every command through ``python -m posenc_cli``: no traceback reaches a real stderr."""
    per_command = max(1, -(-SUBPROCESS_RUNS // len(COMMANDS)))
    jobs = []
    for command in COMMANDS:
        for i, vector in enumerate(vectors(command, per_command, "subprocess")):
            jobs.append((vector, _fresh(scratch, command, f"proc-{i}")))
    with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
        outcomes = list(pool.map(lambda job: _run_process(*job), jobs))
    failures: dict[str, list[str]] = {}
    for (vector, _), found in zip(jobs, outcomes, strict=True):
        for problem in found:
            failures.setdefault(problem, []).append(f"{show_argv(vector.argv)}    ({vector.how})")
    assert not failures, _report("(subprocess)", failures, len(jobs))
