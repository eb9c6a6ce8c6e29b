"""RoPE caches (posenc rope, posenc_cli.rope): against HF transformers' goldens (tests/goldens/rope_*.npz, made by
calling LlamaRotaryEmbedding and ROPE_INIT_FUNCTIONS) and entry by entry against HF's formulas written out here in
mpmath (the scaled inv_freq recomputed from the HF source's definitions, independently of posenc's code).

Agreement with goldens: HF computes inv_freq and the angles in float32, so cos/sin agree within
2**-22 * (1 + |angle|) * attention_scaling (tests/goldens/README.md) and inv_freq within 2**-21 relative (HF's
float32 pow, reciprocal and, for llama3, the smoothing: measured up to 2.6e-7 = 1.1 * 2**-22); the attention
scaling HF computes in Python float64 is equal to posenc's bit for bit.
"""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import h5py
import mpmath
import numpy as np
import pytest
from click.testing import CliRunner

import posenc_cli
from posenc_cli.cli import cli
from posenc_cli.encodings.rope import cache_rows, inv_freq, resolve
from posenc_cli.errors import SpecError

from .conftest import require_tool
from .test_encodings import _bits, rounded

GOLDENS = Path(__file__).resolve().parent / "goldens"
ROPE = {n: g for n, g in json.loads((GOLDENS / "manifest.json").read_text())["goldens"].items() if g["group"] == "rope"}
HF_NAMES = {"original_max_position_embeddings": "original_max_positions"}
mpmath.mp.dps = 60


def golden(name: str) -> dict[str, np.ndarray]:
    with np.load(GOLDENS / ROPE[name]["file"], allow_pickle=False) as data:
        return {key: data[key] for key in data.files}


def _kwargs(entry: dict) -> dict:
    """posenc's parameters for a golden's HF config."""
    p, rp = entry["params"], entry["params"]["rope_parameters"]
    kw = {"seq_len": p["seq_len"], "head_dim": p["head_dim"], "theta": rp["rope_theta"]}
    kw["scaling"] = "none" if rp["rope_type"] == "default" else rp["rope_type"]
    for key, value in rp.items():
        if key not in ("rope_theta", "rope_type"):
            kw[HF_NAMES.get(key, key)] = value
    if kw["scaling"] in ("dynamic", "longrope"):
        kw["max_positions"] = p["max_position_embeddings"]
    return kw


@pytest.mark.parametrize("name", [n for n in ROPE if "gptj" not in n])
def test_caches_match_hf_goldens(name):
    entry, data = ROPE[name], golden(name)
    kw = _kwargs(entry)
    table = posenc_cli.rope(**kw)
    assert table.params["attention_scaling"] == data["attention_scaling"].item()  # HF's float64, bit for bit
    inv = table.arrays["inv_freq"].astype(np.float64)
    assert np.all(np.abs(inv - data["inv_freq"]) <= 2.0**-21 * data["inv_freq"])
    angle = np.outer(np.arange(kw["seq_len"]), np.concatenate([inv, inv]))
    for part in ("cos", "sin"):
        bound = 2.0**-22 * (1 + angle) * data["attention_scaling"].item()
        assert np.all(np.abs(table.arrays[part] - data[part]) <= bound), part
    if "cos_unscaled" in data:  # the flag that leaves HF's attention scaling out
        unscaled = posenc_cli.rope(**kw, attention_scaling=False)
        for part in ("cos", "sin"):
            assert np.all(np.abs(unscaled.arrays[part] - data[f"{part}_unscaled"]) <= 2.0**-22 * (1 + angle)), part
        assert unscaled.params["attention_scaling_folded"] is False


def test_interleaved_layout_matches_gptj():
    """GPT-J's table is [sin | cos]; its caches repeat each frequency twice side by side (repeat_interleave)."""
    entry = ROPE["rope_gptj_interleaved_hd32_n64"]
    data, dim, n = golden("rope_gptj_interleaved_hd32_n64")["table"], entry["params"]["dim"], entry["params"]["num_pos"]
    table = posenc_cli.rope(n, dim, layout="interleaved")
    inv = table.arrays["inv_freq"].astype(np.float64)
    angle = np.repeat(np.outer(np.arange(n), inv), 2, axis=1)
    for part, half in (("sin", data[:, : dim // 2]), ("cos", data[:, dim // 2 :])):
        assert np.all(np.abs(table.arrays[part] - np.repeat(half, 2, axis=1)) <= 2.0**-22 * (1 + angle)), part


# --------------------------------------------------------------------------------- HF's formulas, in mpmath
def hf_inv_freq(kw: dict) -> list:
    """inv_freq as modeling_rope_utils defines it, in exact arithmetic (HF's float64 scalars taken as HF makes
    them: math.log, floor/ceil)."""
    dim, theta, scaling = kw["head_dim"], mpmath.mpf(kw.get("theta", 10000.0)), kw.get("scaling", "none")
    ks = range(dim // 2)
    if scaling == "dynamic":
        length = max(kw["seq_len"], kw["max_positions"])
        f = kw["factor"]
        theta = mpmath.mpf(
            float(kw.get("theta", 10000.0)) * ((f * length / kw["max_positions"]) - (f - 1)) ** (dim / (dim - 2))
        )
    base = [theta ** (-mpmath.mpf(2 * k) / dim) for k in ks]
    if scaling in ("none", "dynamic"):
        return base
    if scaling == "linear":
        return [b / mpmath.mpf(kw["factor"]) for b in base]
    if scaling == "longrope":
        ext = kw["long_factor"] if kw["seq_len"] > kw["original_max_positions"] else kw["short_factor"]
        return [b / mpmath.mpf(e) for b, e in zip(base, ext, strict=True)]
    if scaling == "llama3":
        factor, original = mpmath.mpf(kw["factor"]), mpmath.mpf(kw["original_max_positions"])
        low, high = mpmath.mpf(kw.get("low_freq_factor", 1.0)), mpmath.mpf(kw.get("high_freq_factor", 4.0))
        out = []
        for b in base:
            wavelen = 2 * mpmath.pi / b
            if wavelen < original / high:
                out.append(b)
            elif wavelen > original / low:
                out.append(b / factor)
            else:
                s = (original / wavelen - low) / (high - low)
                out.append((1 - s) * b / factor + s * b)
        return out
    assert scaling == "yarn"
    factor, original = kw["factor"], kw["original_max_positions"]

    def corr(rot):
        return (dim * math.log(original / (rot * 2 * math.pi))) / (2 * math.log(kw.get("theta", 10000.0)))

    low, high = corr(kw.get("beta_fast", 32)), corr(kw.get("beta_slow", 1))
    if kw.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    high = high + 0.001 if low == high else high
    out = []
    for k, b in zip(ks, base, strict=True):
        ramp = min(max((mpmath.mpf(k) - low) / (mpmath.mpf(high) - low), 0), 1)
        extrapolation = 1 - ramp
        out.append(b / factor * (1 - extrapolation) + b * extrapolation)
    return out


CASES = [
    {"seq_len": 40, "head_dim": 16},
    {"seq_len": 40, "head_dim": 16, "theta": 1e6, "layout": "interleaved"},
    {"seq_len": 40, "head_dim": 16, "scaling": "linear", "factor": 3.0},
    {"seq_len": 300, "head_dim": 16, "scaling": "dynamic", "factor": 2.0, "max_positions": 128},
    {"seq_len": 40, "head_dim": 64, "theta": 500000.0, "scaling": "llama3", "factor": 8.0,
     "original_max_positions": 8192},
    {"seq_len": 40, "head_dim": 32, "theta": 10000.0, "scaling": "llama3", "factor": 4.0,
     "original_max_positions": 64, "low_freq_factor": 2.0, "high_freq_factor": 8.0},
    # Llama 4: low_freq_factor == high_freq_factor, no band between (as transformers computes it)
    {"seq_len": 40, "head_dim": 32, "theta": 500000.0, "scaling": "llama3", "factor": 16.0,
     "original_max_positions": 64, "low_freq_factor": 4.0, "high_freq_factor": 4.0},
    {"seq_len": 40, "head_dim": 32, "scaling": "yarn", "factor": 4.0, "original_max_positions": 4096},
    {"seq_len": 40, "head_dim": 32, "theta": 150000.0, "scaling": "yarn", "factor": 32.0,
     "original_max_positions": 4096, "truncate": False, "beta_fast": 16.0, "beta_slow": 2.0},
    {"seq_len": 40, "head_dim": 8, "scaling": "longrope", "original_max_positions": 16, "factor": 4.0,
     "short_factor": [1.0, 1.5, 3.0, 1.25], "long_factor": [1.0, 2.0, 7.0, 9.5]},
    {"seq_len": 10, "head_dim": 8, "scaling": "longrope", "original_max_positions": 16, "factor": 4.0,
     "short_factor": [1.0, 1.5, 3.0, 1.25], "long_factor": [1.0, 2.0, 7.0, 9.5]},
]  # fmt: skip


@pytest.mark.parametrize("kw", CASES, ids=lambda kw: f"{kw.get('scaling', 'none')}-{kw['head_dim']}-{kw['seq_len']}")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_every_value_is_hfs_formula_correctly_rounded(kw, dtype):
    name = np.dtype(dtype).name
    spec = resolve(**kw)
    freqs = hf_inv_freq(kw)
    got = inv_freq(spec, name)
    assert [_bits(x) for x in got] == [_bits(rounded(f, dtype)) for f in freqs]
    a = spec.attention_scaling
    h = kw["head_dim"] // 2
    k_of = [j % h if spec.layout == "half" else j // 2 for j in range(kw["head_dim"])]
    rows = sorted({0, 1, 2, kw["seq_len"] // 2, kw["seq_len"] - 1})
    for part, trig in (("cos", mpmath.cos), ("sin", mpmath.sin)):
        table = np.vstack([cache_rows(spec, part, r, r + 1, name) for r in rows])
        for i, r in enumerate(rows):
            want = [rounded(mpmath.mpf(a) * trig(r * freqs[k]), dtype) for k in k_of]
            assert [_bits(x) for x in table[i]] == [_bits(w) for w in want], (part, r)


def test_attention_scaling_formulas():
    assert resolve(seq_len=4, head_dim=8, scaling="yarn", factor=4.0, original_max_positions=64).attention_scaling == (
        0.1 * math.log(4.0) + 1.0
    )
    deepseek = resolve(
        seq_len=4, head_dim=8, scaling="yarn", factor=40.0, original_max_positions=64, mscale=1.0, mscale_all_dim=0.707
    )
    assert deepseek.attention_scaling == (0.1 * math.log(40.0) + 1.0) / (0.1 * 0.707 * math.log(40.0) + 1.0)
    longrope = dict(scaling="longrope", original_max_positions=16, short_factor=[1.0] * 4, long_factor=[2.0] * 4)
    derived = resolve(seq_len=4, head_dim=8, max_positions=64, **longrope)  # factor = 64 / 16
    assert derived.attention_scaling == math.sqrt(1 + math.log(4.0) / math.log(16))
    given = resolve(seq_len=4, head_dim=8, factor=4.0, attention_factor=1.5, **longrope)
    assert given.attention_scaling == 1.5
    assert resolve(seq_len=4, head_dim=8, attention_factor=None).attention_scaling == 1.0


@pytest.mark.parametrize(
    ("kw", "param"),
    [
        ({"head_dim": 7}, "head_dim"),
        ({"head_dim": 0}, "head_dim"),
        ({"seq_len": 0}, "seq_len"),
        ({"theta": 1.0}, "theta"),
        ({"layout": "neox"}, "layout"),
        ({"scaling": "ntk"}, "scaling"),
        ({"scaling": "linear"}, "factor"),
        ({"scaling": "linear", "factor": 0.5}, "factor"),
        ({"factor": 2.0}, "factor"),  # scaling none reads no factor: refused rather than ignored
        ({"scaling": "yarn", "factor": 2.0, "beta_fast": 8.0}, "original_max_positions"),
        ({"scaling": "yarn", "original_max_positions": 64}, "factor"),
        ({"scaling": "llama3", "factor": 8.0, "original_max_positions": 64, "beta_fast": 3.0}, "beta_fast"),
        ({"scaling": "llama3", "factor": 8.0, "original_max_positions": 64, "low_freq_factor": 5.0},
         "high_freq_factor"),
        ({"scaling": "dynamic", "factor": 2.0}, "max_positions"),
        ({"scaling": "dynamic", "factor": 2.0, "max_positions": 8, "head_dim": 2}, "head_dim"),
        ({"scaling": "longrope", "original_max_positions": 8, "short_factor": [1.0], "long_factor": [1.0] * 4},
         "short_factor"),
        ({"scaling": "longrope", "original_max_positions": 8, "short_factor": [0.0] * 4, "long_factor": [1.0] * 4},
         "short_factor"),
    ],
)  # fmt: skip
def test_bad_parameters_name_their_parameter(kw, param):
    args = {"seq_len": 4, "head_dim": 8, **kw}
    with pytest.raises(SpecError) as err:
        resolve(**args)
    assert err.value.param == param, str(err.value)


def test_cli_writes_every_array(tmp_path):
    out = tmp_path / "rope.h5"
    args = ["rope", "-n", "12", "--head-dim", "16", "--scaling", "yarn", "--factor", "4", "--original-max-positions"]
    result = CliRunner().invoke(cli, [*args, "4096", "--name", "llama", "-o", str(out)])
    assert result.exit_code == 0, result.output
    want = posenc_cli.rope(12, 16, scaling="yarn", factor=4.0, original_max_positions=4096)
    with h5py.File(out, "r") as f:
        assert sorted(f["llama"]) == ["cos", "inv_freq", "sin"]
        for key in ("cos", "sin", "inv_freq"):
            assert f["llama"][key][()].tobytes() == want.arrays[key].tobytes()
    cos = tmp_path / "cos.npy"
    result = CliRunner().invoke(cli, [*args, "4096", "--part", "cos", "--no-attention-scaling", "-o", str(cos)])
    assert result.exit_code == 0, result.output
    unscaled = posenc_cli.rope(12, 16, scaling="yarn", factor=4.0, original_max_positions=4096, attention_scaling=False)
    assert np.load(cos).tobytes() == unscaled.arrays["cos"].tobytes()
    factors = ["--short-factor", "1,2", "--long-factor", "1,1,1,1"]
    longrope = ["rope", "-n", "4", "--head-dim", "8", "--scaling", "longrope", "--original-max-positions", "2"]
    for bad, option in [
        (["rope", "-n", "4", "--head-dim", "8", "--beta-fast", "3"], "--beta-fast"),
        (["rope", "-n", "4", "--head-dim", "9"], "--head-dim"),
        ([*longrope, *factors, "--factor", "2"], "--short-factor"),
        (["rope", "-n", "4", "--head-dim", "8", "--short-factor", "1,x"], "--short-factor"),
    ]:
        result = CliRunner().invoke(cli, [*bad, "-o", str(tmp_path / "bad.npz")])
        assert result.exit_code == 2 and option in result.output and len(result.output.strip().splitlines()) == 1
        assert not (tmp_path / "bad.npz").exists()


C_PROGRAM = """#include <stdio.h>
#include "rope.h"
static void dump(const void *p, unsigned long n) {
    const unsigned char *q = (const unsigned char *)p;
    unsigned long k;
    for (k = 0; k < n; k++) printf("%02x", q[k]);
    printf("\\n");
}
int main(void) {
    dump(rope_cos, (unsigned long)sizeof(rope_cos));
    dump(rope_sin, (unsigned long)sizeof(rope_sin));
    dump(rope_inv_freq, (unsigned long)sizeof(rope_inv_freq));
    printf("%d %d %d\\n", ROPE_SEQ_LEN, ROPE_HEAD_DIM, ROPE_FREQS);
    return 0;
}
"""


@pytest.mark.client
@pytest.mark.parametrize(("compiler", "std"), [("gcc", "c89"), ("clang", "c11"), ("g++", "c++11")])
def test_c_header_holds_every_cache_and_compiles(tmp_path, compiler, std):
    """The real compilers read the three arrays back byte for byte (llama3 scaling, interleaved layout)."""
    args = ["rope", "-n", "9", "--head-dim", "12", "--theta", "500000", "--scaling", "llama3", "--factor", "8"]
    args += ["--original-max-positions", "64", "--layout", "interleaved"]
    result = CliRunner().invoke(cli, [*args, "-o", str(tmp_path / "rope.h")])
    assert result.exit_code == 0, result.output
    (tmp_path / "main.c").write_text(C_PROGRAM)
    exe = tmp_path / "prog"
    lang = "c++" if compiler == "g++" else "c"
    flags = ["-Wall", "-Wextra", "-Wpedantic", "-Werror"]
    cmd = [require_tool(compiler), "-x", lang, f"-std={std}", *flags, "-I", str(tmp_path), str(tmp_path / "main.c")]
    build = subprocess.run([*cmd, "-o", str(exe)], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    cos, sin, inv, dims = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.splitlines()
    table = posenc_cli.rope(9, 12, theta=500000.0, scaling="llama3", factor=8.0, original_max_positions=64,
                            layout="interleaved")  # fmt: skip
    assert [cos, sin, inv] == [table.arrays[k].astype("<f4").tobytes().hex() for k in ("cos", "sin", "inv_freq")]
    assert dims == "9 12 6"


# --------------------------------------------------------------------------- values past the float64 arithmetic
YARN = {"seq_len": 4, "head_dim": 8, "scaling": "yarn", "factor": 4.0, "original_max_positions": 4096}
E = 2.718281828459045  # ln(E) rounds to 1.0: mscale -10 makes YaRN's get_mscale exactly 0


@pytest.mark.parametrize(
    ("given", "param", "fragment"),
    [
        ({**YARN, "beta_fast": 1e308}, "beta_fast", "got 1e+308"),  # beta * 2 pi overflows: the log of 0
        ({**YARN, "beta_slow": 1e-320}, "beta_slow", "got 1e-320"),  # the quotient overflows: the log of inf
        ({**YARN, "factor": E, "mscale": 1.0, "mscale_all_dim": -10.0}, "mscale_all_dim", "divisor"),
        ({**YARN, "factor": E, "mscale": -10.0, "mscale_all_dim": 1.0}, "mscale", "zero"),
        ({"seq_len": 4, "head_dim": 8, "scaling": "dynamic", "factor": 1e308, "max_positions": 2}, "factor", "1e+308"),
        ({"seq_len": 8, "head_dim": 4, "scaling": "dynamic", "factor": 1e200, "max_positions": 2}, "factor", "float64"),
        ({"seq_len": 4, "head_dim": 8, "scaling": "linear", "factor": 10**400}, "factor", "an integer of 401 digits"),
        ({"seq_len": 4, "head_dim": 8, "theta": 10**400}, "theta", "an integer of 401 digits"),
        ({"seq_len": 10**5000, "head_dim": 8}, "seq_len", "an integer of 5001 digits"),
        ({**YARN, "scaling": "llama3", "low_freq_factor": 1e308}, "high_freq_factor", "got 4.0 and 1e+308"),
    ],
)
def test_the_encoding_refuses_what_its_float64_arithmetic_cannot_hold(given, param, fragment):
    """HF's own float64 steps (YaRN's correction range, dynamic's rescaled base, get_mscale's quotient) overflow,
    divide by zero or take the log of 0 for these: each is a SpecError naming the parameter, never an
    OverflowError or ZeroDivisionError, and no number in the message is a fraction of a hundred digits."""
    with pytest.raises(SpecError) as info:
        resolve(**given)
    assert info.value.param == param and fragment in str(info.value), str(info.value)
    assert len(str(info.value)) < 300
