"""``posenc identify`` (``posenc_cli/identification/``): the formula behind a stored table, checked against tables
the real frameworks made.

The references are independent of the code under test: the checkpoint fixtures of ``tests/goldens/identify/``
(transformers, diffusers, tensor2tensor; their manifest names the posenc command the fixture's maker checked
against each table) read here with the ``safetensors``, numpy and h5py libraries themselves, the framework goldens
of ``tests/goldens/``, and tables numpy computes the way the PyTorch tutorial and DistilBERT do.
"""

from __future__ import annotations

import json
import math
import shlex
from pathlib import Path

import h5py
import numpy as np
import pytest
import safetensors.numpy
from click.testing import CliRunner

from posenc_cli.cli import cli
from posenc_cli.identification import identify, identify_array

FIXTURES = Path(__file__).parent / "goldens" / "identify"
MANIFEST = json.loads((FIXTURES / "manifest.json").read_text())
GOLDENS = Path(__file__).parent / "goldens"
GOLDEN_MANIFEST = json.loads((GOLDENS / "manifest.json").read_text())
ROPE_CONFIG = GOLDENS / "rope_config"
ROPE_CONFIG_MANIFEST = json.loads((ROPE_CONFIG / "manifest.json").read_text())


def _tensors(role: str) -> list[tuple[str, str, dict]]:
    return [
        (name, key, entry)
        for name, file in sorted(MANIFEST["files"].items())
        for key, entry in sorted(file["tensors"].items())
        if entry["role"] == role
    ]


POSITIVE = [t for t in _tensors("positional") if "narrow" not in t[2]]
#: Tables as half-precision checkpoints hold them (bfloat16, float16): the framework's float32 values rounded once more.
NARROW = [t for t in _tensors("positional") if "narrow" in t[2]]


def _bfloat16_tensor(path: Path, key: str) -> np.ndarray | None:
    """A BF16 tensor of a .safetensors file as float32 (numpy has no bfloat16, so safetensors.numpy refuses the
    file): the format's own layout, an 8-byte header length, the JSON header, the data; ``None`` if not BF16."""
    raw = path.read_bytes()
    size = int.from_bytes(raw[:8], "little")
    info = json.loads(raw[8 : 8 + size])[key]
    if info["dtype"] != "BF16":
        return None
    begin, end = info["data_offsets"]
    bits = np.frombuffer(raw[8 + size + begin : 8 + size + end], "<u2").astype(np.uint32) << np.uint32(16)
    return bits.view(np.float32).reshape(info["shape"])


def stored(name: str, key: str) -> np.ndarray:
    """The tensor as the container's own library reads it."""
    path = FIXTURES / name
    if name.endswith(".safetensors"):
        bfloat16 = _bfloat16_tensor(path, key)
        return bfloat16 if bfloat16 is not None else safetensors.numpy.load_file(path)[key]
    if name.endswith(".npz"):
        with np.load(path, allow_pickle=False) as data:
            return data[key]
    with h5py.File(path, "r") as f:
        return f[key][()]


def run(*args: str):
    return CliRunner().invoke(cli, list(args))


def written(command: str, out: Path) -> np.ndarray:
    """Run a reported ``posenc ... -o name`` line with ``-o out`` instead, and read the .npy it writes (a
    ``--dtype bfloat16`` one holds the bit patterns, ``uint16``: widened here to their float32 values)."""
    words = shlex.split(command)
    assert words[0] == "posenc" and words[-2] == "-o"
    result = run(*words[1:-2], "-o", str(out), "-q")
    assert result.exit_code == 0, result.output
    table = np.load(out)
    if "bfloat16" in words:
        assert table.dtype == np.uint16
        return (table.astype(np.uint32) << np.uint32(16)).view(np.float32)
    return table


# ------------------------------------------------------------------------------------ the framework checkpoints
@pytest.mark.parametrize(("name", "key", "entry"), POSITIVE, ids=[f"{n}:{k}" for n, k, _ in POSITIVE])
def test_identifies_every_framework_table(tmp_path, name, key, entry):
    result = identify(FIXTURES / name, key)
    [tensor] = result.tensors
    match = tensor.match
    assert match is not None, [c.to_json() for c in tensor.nearest]
    expected = shlex.split(entry["expected"]["command"])
    assert match.hypothesis.command == expected[1]
    assert match.hypothesis.array == entry["expected"]["array"]
    if "-p" in expected:
        preset = expected[expected.index("-p") + 1]
        assert preset in (match.hypothesis.preset, *match.hypothesis.equivalent)
    # the command it reports writes the framework's table: as close to it as the command the fixture's maker
    # checked against the framework (its measured error), and within the float32 rule of the position range
    golden = stored(name, key).astype(np.float64)
    ours = written(match.command, tmp_path / "ours.npy").astype(np.float64)
    part = f" --part {entry['expected']['array']}" if expected[1] in ("rope", "alibi") else ""
    reference = written(f"{entry['expected']['command']}{part} -o x.npy", tmp_path / "reference.npy")
    reference = reference.astype(np.float64)
    golden = golden.reshape(reference.shape)
    measured = entry["measured"]["max_abs_error"]
    assert np.max(np.abs(ours - golden)) <= measured + 2.0**-22 * np.max(np.abs(golden))
    positions = max(golden.shape[0], 1000)
    assert np.max(np.abs(ours - reference)) <= 2.0**-20 * (1 + positions) * np.max(np.abs(golden))
    assert match.comparison.departures == 0 and match.comparison.max_abs_error <= measured + 1e-6


@pytest.mark.parametrize(("name", "key", "entry"), NARROW, ids=[f"{n}:{k}" for n, k, _ in NARROW])
def test_identifies_tables_stored_in_a_narrow_type(tmp_path, name, key, entry):
    """RoPE caches for bfloat16 activations (Llama 2, Llama 3.1), Marian saved in bfloat16 and Whisper-tiny in
    float16: a bfloat16 table's frequencies are read to only about 2**-8, yet the parameters are found, and the
    command says ``--dtype``. Its table is the one the fixture's maker measured against the framework's (within
    one unit of the narrow type plus the float32 rule, ``measured`` in the manifest): the same table, entry for
    entry, as the expected command's."""
    result = identify(FIXTURES / name, key)
    [tensor] = result.tensors
    match = tensor.match
    assert match is not None, [c.to_json() for c in tensor.nearest]
    narrow = entry["narrow"]
    expected = entry["expected"]
    assert match.hypothesis.command == shlex.split(expected["command"])[1]
    assert match.hypothesis.array == expected["array"]
    assert f"--dtype {narrow}" in match.command and match.comparison.departures == 0
    assert match.comparison.agreement in ("bit-identical", f"within {narrow} rounding")
    golden = stored(name, key).astype(np.float64)
    ours = written(match.command, tmp_path / "ours.npy").astype(np.float64)
    part = f" --part {expected['array']}" if expected["command"].startswith("posenc rope") else ""
    reference = written(f"{expected['command']}{part} -o x.npy", tmp_path / "reference.npy").astype(np.float64)
    assert np.array_equal(ours, reference)
    measured = entry["measured"]
    assert measured["within_rule"]
    assert np.max(np.abs(ours - golden)) == measured["max_abs_error"]
    assert np.count_nonzero(ours != golden) == measured["elements_differing"]


@pytest.mark.parametrize("name", sorted({n for n, _, _ in POSITIVE + NARROW}))
def test_without_a_key_the_positional_table_is_found(name):
    """Every array of the file is tried; the best match is one of the file's positional tables, and the unrelated
    tensors (random embeddings, layer norms, biases) match nothing."""
    result = identify(FIXTURES / name)
    positional = {k.lstrip("/") for n, k, _ in POSITIVE + NARROW if n == name}
    assert result.best is not None and result.best.key in positional and result.match is not None
    for tensor in result.tensors:
        role = MANIFEST["files"][name]["tensors"].get(tensor.key) or MANIFEST["files"][name]["tensors"].get(
            "/" + str(tensor.key)
        )
        assert (tensor.match is not None) == (role["role"] == "positional"), tensor.key


def test_a_learned_table_is_no_match():
    result = run("identify", str(FIXTURES / "learned_negative.safetensors"))
    assert result.exit_code == 1
    assert "no match" in result.output and "learned" in result.output
    doc = json.loads(run("identify", str(FIXTURES / "learned_negative.safetensors"), "--json").output)
    assert doc["match"] is None and doc["key"] == "bert.embeddings.position_embeddings.weight"


def test_one_perturbed_entry_is_no_match_and_is_found():
    [(name, key, entry)] = [t for t in _tensors("negative") if "perturbation" in t[2]]
    where = entry["perturbation"]
    result = identify(FIXTURES / name, key)
    [tensor] = result.tensors
    assert tensor.match is None
    nearest = tensor.nearest[0]
    assert nearest.hypothesis.preset == "vaswani"
    assert nearest.comparison.departures == 1
    assert nearest.comparison.rows == (where["row"],) and nearest.comparison.columns == (where["column"],)
    assert nearest.comparison.worst == (where["row"], where["column"])
    doc = json.loads(run("identify", str(FIXTURES / name), "--key", key, "--json").output)
    assert doc["match"] is None
    assert doc["nearest"][0]["departure_rows"] == [str(where["row"])]


# ------------------------------------------------------------------------------- the goldens of tests/goldens/
def _golden_cases() -> list[tuple[str, str, str, str | None]]:
    """(file, array, kind, preset) of every golden table at evenly spaced positions, four columns or more."""
    cases = []
    goldens = GOLDEN_MANIFEST["goldens"]
    for entry in goldens.values() if isinstance(goldens, dict) else goldens:
        positions = entry.get("positions", {})
        if positions.get("kind") == "list":  # timesteps at arbitrary positions: not a `generate` table
            continue
        group = entry["group"]
        for key, meta in entry["arrays"].items():
            shape = meta["shape"]
            if meta["dtype"] not in ("float32", "float64") or len(shape) != 2 or shape[1] < 4:
                continue
            if group == "rope" and ("mscale" in entry["file"] or "longrope" in entry["file"]):
                continue  # yarn's DeepSeek mscale; LongRoPE over 24-64 rows (its slow factors are not in the table)
            if key.startswith(("builder_raw", "bias_left_padded", "table")) or "forward" in key:
                continue  # not the tables: raw builder output, a padded batch, the framework's forward() batch
            kind = {"sinusoid": "generate", "rope": "rope", "alibi": "alibi", "sincos2d": "sincos2d"}[group]
            cases.append((entry["file"], key, kind, entry.get("preset")))
    return cases


GOLDEN_CASES = _golden_cases()


@pytest.mark.parametrize(
    ("file", "key", "kind", "preset"), GOLDEN_CASES, ids=[f"{f}:{k}" for f, k, _, _ in GOLDEN_CASES]
)
def test_identifies_the_framework_goldens(file, key, kind, preset):
    with np.load(GOLDENS / file, allow_pickle=False) as data:
        table = data[key]
    result = identify_array(table, key=key)
    assert result.match is not None, [c.to_json() for c in result.nearest]
    assert result.match.hypothesis.command == kind
    if preset is not None:
        assert preset in (result.match.hypothesis.preset, *result.match.hypothesis.equivalent)


# ------------------------------------------------------------------------------------------- a full-size table
N, D = 8192, 1024


def torch_tutorial_float32() -> np.ndarray:
    """The PyTorch tutorial's PositionalEncoding, in float32 throughout, computed by numpy."""
    position = np.arange(N, dtype=np.float32)[:, None]
    div = np.exp(np.arange(0, D, 2, dtype=np.float32) * np.float32(-math.log(10000.0) / D))
    pe = np.zeros((N, D), np.float32)
    pe[:, 0::2] = np.sin(position * div)
    pe[:, 1::2] = np.cos(position * div)
    return pe


def distilbert_float64(n: int = N, d: int = D) -> np.ndarray:
    """DistilBERT's create_sinusoidal_embeddings: float64 angles, sin/cos, rounded once to float32."""
    j = np.arange(d)
    angle = np.arange(n)[:, None] / np.power(10000, 2 * (j // 2) / d)
    pe = np.empty((n, d))
    pe[:, 0::2], pe[:, 1::2] = np.sin(angle[:, 0::2]), np.cos(angle[:, 1::2])
    return pe.astype(np.float32)


def test_a_full_size_float32_table():
    result = identify_array(torch_tutorial_float32())
    assert result.match is not None and result.match.hypothesis.preset == "vaswani"
    assert result.match.comparison.agreement == "within float32 rounding"


def test_a_full_size_table_rounded_once_and_one_fine_tuned_entry():
    table = distilbert_float64()
    result = identify_array(table)
    assert result.match is not None and result.match.hypothesis.preset == "vaswani"
    assert result.match.comparison.agreement in ("bit-identical", "rounded once from float64")
    table[4321, 77] = np.nextafter(table[4321, 77], np.float32(2))
    result = identify_array(table)
    assert result.match is None
    assert result.nearest[0].comparison.rows == (4321,) and result.nearest[0].comparison.columns == (77,)


def test_fine_tuned_rows_are_named():
    """A sinusoidal table whose first rows were trained on: the departure is those rows, every column."""
    table = distilbert_float64(512, D)
    table[:3] += np.random.default_rng(7).normal(0, 1e-3, (3, D)).astype(np.float32)
    result = identify_array(table)
    assert result.match is None
    nearest = result.nearest[0]
    assert nearest.hypothesis.preset == "vaswani" and nearest.comparison.rows == (0, 1, 2)
    assert nearest.to_json()["departure_rows"] == ["0-2"]


# --------------------------------------------------------------------------------------- the command and errors
def test_the_report_and_the_manifest_entry_rebuild_the_table(tmp_path):
    name, key = "m2m100.safetensors", "model.encoder.embed_positions.weights"
    result = run("identify", str(FIXTURES / name))
    assert result.exit_code == 0, result.output
    assert "preset: fairseq" in result.output and "regenerate: posenc generate" in result.output
    doc = json.loads(run("identify", str(FIXTURES / name), "--json").output)
    match = doc["match"]
    assert doc["key"] == key and match["preset"] == "fairseq"
    assert set(match) >= {"command", "preset", "params", "max_abs_error", "max_ulp_error", "manifest"}
    (tmp_path / "posenc.toml").write_text(match["manifest"] + "\n")
    built = run("build", str(tmp_path / "posenc.toml"))
    assert built.exit_code == 0, built.output
    table = np.load(tmp_path / "pe.npy").astype(np.float64)
    golden = stored(name, key).astype(np.float64)
    assert np.max(np.abs(table - golden)) <= MANIFEST["files"][name]["tensors"][key]["measured"]["max_abs_error"]


def test_bad_usage_is_one_line_and_exit_2(tmp_path):
    name = str(FIXTURES / "m2m100.safetensors")
    result = run("identify", name, "--key", "nope")
    assert result.exit_code == 2, result.output
    assert "model.shared.weight" in result.output and result.output.count("\n") == 1
    result = run("identify", str(tmp_path / "missing.npy"))  # as inspect and verify: a file that cannot be read
    assert result.exit_code == 1 and "missing.npy" in result.output and result.output.count("\n") == 1
    np.save(tmp_path / "ints.npy", np.arange(12).reshape(3, 4))
    result = run("identify", str(tmp_path / "ints.npy"), "--key", "array")
    assert result.exit_code in (1, 2) and result.output.startswith("Error:") and result.output.count("\n") == 1


def test_hostile_files(tmp_path):
    """Keys are data: a key with terminal escapes is printed escaped; a file that lies about its size is refused
    before anything is allocated; NaN tables and arrays of five axes are passed over."""
    table = distilbert_float64(64, 32)
    np.savez(tmp_path / "evil.npz", **{"\x1b[2J\x1b]0;pwned\x07": table, "nan": np.full((8, 8), np.nan, np.float32)})
    result = run("identify", str(tmp_path / "evil.npz"))
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.output and "\x07" not in result.output
    doc = json.loads(run("identify", str(tmp_path / "evil.npz"), "--json").output)
    assert doc["match"]["command"].startswith("posenc generate") and "\x1b" not in doc["match"]["command"]
    assert "pwned" not in doc["match"]["command"] and "pwned" not in doc["match"]["manifest"]
    nan = next(t for t in doc["tensors"] if t["key"] == "nan")
    assert nan["match"] is None and "NaN" in nan["note"]
    # a .npy header that declares 2**40 float32 values over a few bytes of data
    header = b"{'descr': '<f4', 'fortran_order': False, 'shape': (1048576, 1048576), }"
    header += b" " * (-(10 + len(header) + 1) % 64) + b"\n"
    (tmp_path / "huge.npy").write_bytes(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + b"\0" * 64)
    result = run("identify", str(tmp_path / "huge.npy"))
    assert result.exit_code == 1 and result.output.startswith("Error:") and result.output.count("\n") == 1
    np.save(tmp_path / "five.npy", np.zeros((2, 2, 2, 2, 2), np.float32))
    result = run("identify", str(tmp_path / "five.npy"))
    assert result.exit_code == 1 and "no floating-point array" in result.output


def test_inspect_names_the_formula_of_a_file_posenc_did_not_write(tmp_path):
    name = str(FIXTURES / "whisper.safetensors")
    doc = json.loads(run("inspect", name, "--json").output)
    arrays = doc["arrays"]
    found = arrays["model.encoder.embed_positions.weight"]["identified"]
    assert found["kind"] == "generate" and "whisper" in (found["preset"], *found["equivalent_presets"])
    assert arrays["model.encoder.conv1.bias"]["identified"] is None
    text = run("inspect", name).output
    assert "identified model.encoder.embed_positions.weight: `posenc generate" in text
    assert f"details: posenc identify {name}" in text
    # a file posenc wrote says what it is already: nothing is identified
    assert run("generate", "-n", "16", "-d", "8", "-o", str(tmp_path / "pe.npz"), "-q").exit_code == 0
    mine = json.loads(run("inspect", str(tmp_path / "pe.npz"), "--json").output)
    assert all("identified" not in a for a in mine["arrays"].values())


def test_inspect_names_the_formula_of_a_bfloat16_checkpoint():
    doc = json.loads(run("inspect", str(FIXTURES / "rope_default_bf16.safetensors"), "--json").output)
    arrays = doc["arrays"]
    cos = arrays["model.layers.0.self_attn.rotary_emb.cos_cached"]
    assert cos["dtype"] == "bfloat16" and cos["identified"]["kind"] == "rope"
    assert "--dtype bfloat16 --part cos" in cos["identified"]["command"]
    assert arrays["model.layers.0.self_attn.q_proj.weight"]["identified"] is None


def test_the_api_publishes_identify():
    import posenc_cli
    from posenc_cli import api

    assert posenc_cli.identify is api.identify is identify
    result = posenc_cli.identify(FIXTURES / "marian.npz", "model.decoder.embed_positions.weight")
    assert result.match is not None and result.match.hypothesis.preset == "marian"
    assert result.match.comparison.agreement == "bit-identical"  # Marian computes in float64 and rounds once


def test_a_checkpoint_is_read_one_tensor_at_a_time(monkeypatch):
    """A .safetensors model is never read whole: each tensor is read alone within a cap, and one over it is passed
    over with a note (here the cap is lowered below the word embedding and above the positional table)."""
    from posenc_cli import identification

    monkeypatch.setattr(identification, "MAX_TRIED_BYTES", 512 * 768 * 4)
    name = FIXTURES / "distilbert.safetensors"
    result = identification.identify(name)
    assert result.match is not None and result.best.key == "distilbert.embeddings.position_embeddings.weight"
    monkeypatch.setattr(identification, "MAX_TRIED_BYTES", 4096)
    result = identification.identify(name)
    assert result.match is None
    notes = {t.key: t.note for t in result.tensors}
    assert notes["distilbert.embeddings.position_embeddings.weight"].startswith("not tried:")
    text = run("identify", str(name)).output
    assert "not tried:" in text and "--max-memory" in text


@pytest.mark.parametrize("dtype", ["float16", "float64"])
def test_a_table_stored_in_another_float_type_is_named_with_it(dtype):
    """DistilBERT's table saved as float16 (a half-precision checkpoint) or kept in float64: the command says
    --dtype, and a table rounded once is bit-identical in that type (float16) or within float64 rounding."""
    j = np.arange(32)
    angle = np.arange(64)[:, None] / np.power(10000, 2 * (j // 2) / 32)
    table = np.where(j % 2 == 0, np.sin(angle), np.cos(angle)).astype(dtype)
    match = identify_array(table).match
    assert match is not None and match.hypothesis.preset == "vaswani"
    assert f"--dtype {dtype}" in match.command and f'dtype = "{dtype}"' in match.manifest
    assert match.comparison.agreement in ("bit-identical", "within float64 rounding")


def _bfloat16(values: np.ndarray) -> np.ndarray:
    """float64 values rounded to the nearest bfloat16 (ties to even), as float32: torch's ``.to(torch.bfloat16)``."""
    bits = values.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16
    return rounded.astype(np.uint32).view(np.float32)


def _paper_table(n: int, d: int, base: float) -> np.ndarray:
    j = np.arange(d)
    angle = np.arange(n)[:, None] / np.power(base, 2 * (j // 2) / d)
    return np.where(j % 2 == 0, np.sin(angle), np.cos(angle))


def test_a_bfloat16_table_with_one_entry_moved_two_units_is_no_match():
    """bfloat16 allows half a unit plus the float32 rule, never the narrow type's unit in the angle rule (that
    would allow 2**-5 |angle| and take a neighbouring base, or an edited entry, for the table)."""
    table = _bfloat16(_paper_table(256, 128, 10000.0))
    assert identify_array(table).match is not None
    edited = table.copy()
    edited[100, 20] = np.float32(edited[100, 20] + 2 * 2.0**-8 * (1 if edited[100, 20] < 0.5 else 2))
    result = identify_array(edited)
    assert result.match is None
    [nearest, *_] = result.nearest
    assert nearest.hypothesis.preset == "vaswani" and nearest.comparison.departures == 1
    assert nearest.comparison.rows == (100,) and nearest.comparison.columns == (20,)


@pytest.mark.parametrize("base", [10500.0, 9306.0])
def test_a_bfloat16_table_of_a_nearby_base_is_named_with_it(base):
    match = identify_array(_bfloat16(_paper_table(512, 256, base))).match
    assert match is not None and "--dtype bfloat16" in match.command
    assert match.hypothesis.values.get("base") == base


def _rope_model_cases() -> list[tuple[str, str, str]]:
    """(file, array, HF rope_type) of the real models' RoPE goldens at positions 0..63 (tests/goldens/rope_config:
    Llama 3.1, Mistral, Phi-2, Pythia, Phi-3 LongRoPE, Gemma 3 and 4, DeepSeek-V2 YaRN, Qwen2-VL, Qwen2.5 YaRN)."""
    cases = []
    for entry in ROPE_CONFIG_MANIFEST["goldens"].values():
        if not entry["file"].endswith("_pos0-63.npz") or not entry.get("posenc_reads", True):
            continue  # a config posenc does not read yet: the manifest gives the reason
        rope_type = entry["params"]["rope_type"]
        params = entry["params"]
        if rope_type == "dynamic" and params["seq_len_seen"] <= params["max_position_embeddings"]:
            rope_type = "default"  # below max_position_embeddings dynamic NTK is the plain table: "none" is right
        if entry["config"] == "llama-4-scout":
            continue  # llama3 with low_freq_factor == high_freq_factor (a step, no ramp): not named (docs/identify.md)
        for key in ("cos", "sin", "inv_freq"):
            if entry["file"].startswith("phi-3") and key == "sin":
                continue  # 64 rows of LongRoPE's sin: the slowest factors are not in the table (docs/identify.md)
            if entry["config"] in ("phi-3.5-mini", "phi-4-mini") and (entry["config"], key) != ("phi-4-mini", "cos"):
                continue  # the same limit (docs/identify.md): 64 rows do not show their slowest factors
            # past max_position_embeddings dynamic NTK's inv_freq is a plain one of a larger theta: alone it reads so
            cases.append((entry["file"], key, "default" if (rope_type, key) == ("dynamic", "inv_freq") else rope_type))
    return cases


ROPE_MODELS = _rope_model_cases()


@pytest.mark.parametrize(("file", "key", "rope_type"), ROPE_MODELS, ids=[f"{f}:{k}" for f, k, _ in ROPE_MODELS])
def test_identifies_the_rope_of_real_model_configs(file, key, rope_type):
    """Each model's caches and inv_freq as transformers computed them from its published config.json."""
    with np.load(ROPE_CONFIG / file, allow_pickle=False) as data:
        table = data[key]
    result = identify_array(table, key=key)
    assert result.match is not None, [c.to_json() for c in result.nearest]
    assert result.match.hypothesis.command == "rope"
    assert result.match.hypothesis.values.get("scaling", "none") == {"default": "none"}.get(rope_type, rope_type)
