"""Helpers shared by the kit's tests: a temporary checkout, and running the
real `./ol` in it as a student would."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def copy_checkout(dest: Path) -> Path:
    """Copy every file git tracks or would track (not ignored) into dest:
    what a fresh clone holds in CI, plus work not yet committed."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, check=True, capture_output=True,
    ).stdout.decode().split("\0")
    for rel in filter(None, listed):
        source = ROOT / rel
        if source.is_file():  # a tracked file deleted in the work tree is skipped
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / rel)
    return dest


def run_ol(checkout: Path, *args: str, cwd: Path, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run <checkout>/ol as an executable (its shebang finds python3 on PATH:
    this interpreter's directory comes first)."""
    env = dict(os.environ if env is None else env)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    return subprocess.run([str(checkout / "ol"), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def explain(result: subprocess.CompletedProcess) -> str:
    return f"exit {result.returncode}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"


def snapshot(root: Path, skip: tuple[str, ...] = (".ol",)) -> dict[str, str]:
    """{relative path: sha256} of every file under root, except the top-level
    folders in `skip` (ol's own state)."""
    digests = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if path.is_file() and rel.parts[0] not in skip and "__pycache__" not in rel.parts:
            digests[str(rel)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return digests
