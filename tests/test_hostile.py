"""Hostile and broken input through every command that reads files (inspect, verify, convert, show, plot): one
line that names the file and the problem, exit 1, no traceback, no output file, bounded memory.

The readers' own checks are tested format by format in test_formats.py, test_safetensors.py and test_c_read.py, and
manifests in test_build.py; here the whole command path is exercised with the same kinds of files a user may point
posenc at by mistake (or on purpose).
"""

from __future__ import annotations

import io
import json
import resource
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import h5py
import numpy as np
import pytest
from click.testing import CliRunner

from posenc_cli.cli import cli


def _npy_header(shape: str, descr: str = "<f4", magic: bytes = b"\x93NUMPY\x01\x00") -> bytes:
    text = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}".encode()
    text += b" " * (-(len(magic) + 2 + len(text) + 1) % 64) + b"\n"
    return magic + struct.pack("<H", len(text)) + text


def _object_npy() -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    return buffer.getvalue()


def _good_npy() -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.ones((4, 4), np.float32))
    return buffer.getvalue()


def _h5(path: Path, make) -> None:
    with h5py.File(path, "w") as f:
        make(f)


def _safetensors_claiming(length: int) -> bytes:
    return struct.pack("<Q", length) + b'{"pe":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}'


def _npz_with(member: str, data: bytes) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(member, data)
    return buffer.getvalue()


HOSTILE: dict[str, object] = {
    "truncated.npy": _good_npy()[:90],
    "magic.npy": b"NOTNUMPY" + _good_npy()[8:],
    "objects.npy": _object_npy(),
    "huge-shape.npy": _npy_header("(4294967296, 4294967296)") + b"\0" * 64,  # claims 2**66 bytes
    "huge-header.npy": b"\x93NUMPY\x02\x00" + struct.pack("<I", 2**31) + b"{",
    "empty.npy": b"",
    "ragged.csv": "1.0,2.0\n3.0\n",
    "text.csv": "d0,d1\nhello,world\n",
    "nan.csv": "1.0,nan\n",
    "empty.csv": "",
    "header-only.csv": "d0,d1\n",
    "foreign.h": "#ifndef X_H\n#define X_H\nstatic const float x[2] = {1.0f, 2.0f};\n#endif\n",
    "truncated.h": None,  # made from a real posenc header below
    "garbage.c": "\x00\x01\x02 not C at all",
    "huge-header.safetensors": _safetensors_claiming(2**60),
    "short.safetensors": _safetensors_claiming(40)[:20],
    "pickle.npz": _npz_with("pe.npy", _object_npy()),
    "not-a-zip.npz": b"PK\x03\x04 truncated",
    "group-only.h5": lambda f: f.create_group("nothing"),
    "strings.h5": lambda f: f.create_dataset("s", data=np.array([b"abc", b"def"])),
    "not-hdf5.h5": b"\x89HDF\r\n\x1a\n truncated",
}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> Path:
    where = tmp_path_factory.mktemp("hostile")
    for name, content in HOSTILE.items():
        path = where / name
        if callable(content):
            _h5(path, content)
        elif isinstance(content, bytes):
            path.write_bytes(content)
        elif isinstance(content, str):
            path.write_text(content)
    good = where / "good.h"
    assert CliRunner().invoke(cli, ["generate", "-n", "8", "-d", "8", "-o", str(good)]).exit_code == 0
    text = good.read_text()
    (where / "truncated.h").write_text(text[: len(text) * 2 // 3])
    good.unlink()
    return where


COMMANDS = {
    "inspect": lambda f, out: ["inspect", str(f)],
    "verify": lambda f, out: ["verify", str(f), "-s", "seq_len=4", "-s", "d_model=4"],
    "convert": lambda f, out: ["convert", str(f), str(out)],
    "show": lambda f, out: ["show", str(f)],
    "plot": lambda f, out: ["plot", str(f), "-o", str(out.with_suffix(".png"))],
}


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_files_get_one_line_naming_the_file(hostile, tmp_path, command, name):
    out = tmp_path / "out.npy"
    result = CliRunner().invoke(cli, COMMANDS[command](hostile / name, out))
    assert result.exit_code == 1, (result.exit_code, result.output)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    assert name in lines[0] and "Traceback" not in result.output and "internal error" not in lines[0], lines[0]
    assert list(tmp_path.iterdir()) == []  # no output, no temporary file


@pytest.mark.parametrize("name", ["huge-shape.npy", "huge-header.npy", "huge-header.safetensors"])
def test_lying_lengths_cost_no_memory(hostile, name):
    """A header that claims exabytes is refused from the file's real size, in a process allowed 1 GiB."""

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, resource.RLIM_INFINITY))

    result = subprocess.run(
        [sys.executable, "-m", "posenc_cli", "inspect", str(hostile / name), "--json"],
        capture_output=True, text=True, preexec_fn=cap, timeout=120,
    )  # fmt: skip
    assert result.returncode == 1 and result.stdout == "", result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and name in result.stderr
    assert "Traceback" not in result.stderr and "memory" not in result.stderr.lower()


def test_a_bad_manifest_writes_nothing(tmp_path):
    (tmp_path / "posenc.toml").write_text('[[table]]\ncommand = "generate"\noutput = "pe.h"\nseq_len = "many"\n')
    result = CliRunner().invoke(cli, ["build", str(tmp_path / "posenc.toml")])
    assert result.exit_code == 2 and "seq_len" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["posenc.toml"]
    doc = json.dumps({"ok": True})  # the manifest reader never evaluates anything: TOML is data
    (tmp_path / "posenc.toml").write_text(f'[[table]]\ncommand = "__import__(\'os\')"\noutput = "x.h"\n# {doc}\n')
    result = CliRunner().invoke(cli, ["build", str(tmp_path / "posenc.toml")])
    assert result.exit_code == 2 and "command" in result.stderr
