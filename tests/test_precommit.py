"""The posenc-check hook of .pre-commit-hooks.yaml with the real pre-commit, in a temporary git repository: a commit
whose generated tables are stale is refused, and goes through once ``posenc build`` has rebuilt them.

The hook repository is this checkout as it would be committed now (its tracked and untracked, not ignored files,
copied into a temporary repository and committed there: this checkout's git state is only read), so the hook and the
package pre-commit installs are the working tree's. pre-commit builds the hook's environment once (pip installs
posenc and its dependencies from the package index) in a PRE_COMMIT_HOME of the test's own; every commit after
that reuses it. Git runs without the user's configuration.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import posenc_cli

from .conftest import require_tool

pytestmark = pytest.mark.client  # every test here runs a real client

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

MANIFEST = '[[table]]\ncommand = "generate"\noutput = "tables/pe.h"\nseq_len = {n}\nd_model = 8\n'


def _git_env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    empty = tmp_path / "gitconfig"
    empty.touch()
    env.update(
        GIT_CONFIG_GLOBAL=str(empty),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_AUTHOR_NAME="posenc test",
        GIT_AUTHOR_EMAIL="test@posenc.invalid",
        GIT_COMMITTER_NAME="posenc test",
        GIT_COMMITTER_EMAIL="test@posenc.invalid",
        PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"),
    )
    env["PATH"] = os.pathsep.join([str(BIN), env.get("PATH", "")])  # pre-commit and posenc of the test environment
    env.pop("PYTHONPATH", None)
    return env


def _run(command: list[str], cwd: Path, env: dict[str, str], check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    if check:
        assert result.returncode == 0, f"{command}:\n{result.stdout}{result.stderr}"
    return result


def _hook_repository(tmp_path: Path, git: str, env: dict[str, str]) -> tuple[Path, str]:
    """A git repository holding this checkout's files as they are now, committed; (path, commit)."""
    head = subprocess.run([git, "-C", str(REPO), "rev-parse", "--verify", "HEAD"], capture_output=True, text=True)
    if head.returncode != 0:
        pytest.fail(f"{REPO} is not a git repository with a commit ({head.stderr.strip()}): the pre-commit hook is "
                    "tested from the checkout's files as git sees them")  # fmt: skip
    listed = _run([git, "ls-files", "-z", "--cached", "--others", "--exclude-standard"], REPO, env).stdout
    hooks = tmp_path / "hooks"
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file():  # a tracked file deleted in the working tree is left out, as a commit would
            (hooks / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, hooks / name)
    assert (hooks / ".pre-commit-hooks.yaml").is_file()
    _run([git, "init", "-q"], hooks, env)
    _run([git, "add", "-A"], hooks, env)
    _run([git, "commit", "-q", "-m", "posenc as in the checkout"], hooks, env)
    return hooks, _run([git, "rev-parse", "HEAD"], hooks, env).stdout.strip()


def test_the_hook_refuses_a_commit_with_stale_tables_and_passes_once_they_are_built(tmp_path):
    git = require_tool("git")
    pre_commit = BIN / "pre-commit"
    assert pre_commit.exists(), f"pre-commit is not installed beside {sys.executable}: pip install pre-commit"
    posenc = BIN / "posenc"
    env = _git_env(tmp_path)
    hooks, commit = _hook_repository(tmp_path, git, env)

    project = tmp_path / "project"
    project.mkdir()
    _run([git, "init", "-q"], project, env)
    (project / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {hooks}\n    rev: {commit}\n    hooks:\n      - id: posenc-check\n"
    )
    (project / "posenc.toml").write_text(MANIFEST.format(n=16))
    (project / "tables").mkdir()
    _run([str(pre_commit), "install"], project, env)

    def commit_all(message: str) -> subprocess.CompletedProcess[str]:
        _run([git, "add", "-A"], project, env)
        return _run([git, "commit", "-m", message], project, env, check=False)

    def commits() -> int:
        listed = _run([git, "rev-list", "--all", "--count"], project, env)
        return int(listed.stdout)

    # The table was never built: the commit is refused, naming it (the hook's environment is created here).
    refused = commit_all("manifest only")
    assert refused.returncode != 0, refused.stdout + refused.stderr
    output = refused.stdout + refused.stderr
    assert "posenc tables are up to date" in output and "Failed" in output, output
    assert "would create" in output and "tables/pe.h" in output, output
    assert commits() == 0

    # Built with the same posenc: the commit goes through.
    _run([str(posenc), "build"], project, env)
    passed = commit_all("tables built")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "posenc tables are up to date" in passed.stdout + passed.stderr and commits() == 1

    # The manifest changes and the table is not rebuilt: refused, it would be rewritten; rebuilt: accepted.
    (project / "posenc.toml").write_text(MANIFEST.format(n=24))
    refused = commit_all("longer table, not rebuilt")
    assert refused.returncode != 0 and "would rewrite" in refused.stdout + refused.stderr, refused.stdout
    assert commits() == 1
    _run([str(posenc), "build"], project, env)
    passed = commit_all("longer table")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert commits() == 2
    shown = _run([git, "show", "HEAD:tables/pe.h"], project, env).stdout
    assert "#define PE_SEQ_LEN 24" in shown and f"posenc {posenc_cli.__version__}" in shown
