"""A class of synthetic submissions for `ol grade`: where the model answer
and the reference live, the paths a submission holds its tests and code at,
and the small writers that build submissions (folders, renamed copies, file
times, zip and tar archives, a bomb of a million members)."""

from __future__ import annotations

import ast
import gzip
import io
import os
import tarfile
import tokenize
import zipfile
from datetime import datetime
from pathlib import Path

from helpers.kit import ROOT
from ol.core.catalog import load_catalog

REFERENCE_ROPE = ROOT / "course/reference/python/tinyllm/modern/rope.py"
MODEL_ANSWER = ROOT / "course/reference/python/tests/l7-3-rope"
CALIBRATION = ROOT / "tests/calibration"
# module -> the folder prefix of its honest suites under CALIBRATION
SUITE_PREFIX = {"L7.3": "l7-3-suite-", "L7.4": "l7-4-suite-", "L7.5": "l7-5-suite-", "L7.7": "l7-7-suite-"}
SUITES = ROOT / "tests/grading_suites"
TESTS = "python/tests/l7-3-rope"
ROPE = "python/tinyllm/modern/rope.py"
TIME_LIMIT = "8"   # seconds of processor time: every run that meets the hanging test before a correct run
                   # has shown it hangs pays this (a dozen of them); load stretches only the clock (3x this)
MODULE = load_catalog(ROOT).get("L7.3")
# The class is graded against every 5th generated mutant and every pitfall (kit.sampled_home): these
# tests follow submissions through ol grade, not each mutant; the calibration suites meet every one.
CLASS_SAMPLE = 5


def class_env(home: Path) -> dict[str, str]:
    """The environment every grading of the class runs in: UTC, and a home whose mutant cache is the sample."""
    env = dict(os.environ, TZ="UTC", HOME=str(home))
    env.pop("XDG_CACHE_HOME", None)
    return env


def suite_files(folder: Path, prefix: str = TESTS) -> dict[str, bytes]:
    return {f"{prefix}/{p.relative_to(folder).as_posix()}": p.read_bytes() for p in folder.rglob("*.py")}


def write_folder(dest: Path, files: dict[str, bytes]) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        (dest / name).write_bytes(data)


def renamed(source: str) -> str:
    """`source` with its own names renamed (functions, their parameters, local
    variables), as a student hiding a copy would: names that are also keyword
    arguments, attributes or imports keep theirs, so the code still runs."""
    tree = ast.parse(source)
    own = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    own |= {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    own |= {a.arg for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) for a in n.args.args}
    fixed = {k.arg for n in ast.walk(tree) if isinstance(n, ast.Call) for k in n.keywords if k.arg}
    fixed |= {a.asname or a.name for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
              for a in n.names}
    fixed |= {part.strip() for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
              for part in n.value.split(",")}                       # pytest.mark.parametrize("make", ...)
    fixed |= set(dir(__builtins__)) | {"self", "cls"}
    builtin_fixtures = {"tmp_path", "monkeypatch", "request", "capsys"}
    mapping = {name: f"v{index}_{name[::-1]}" for index, name in enumerate(sorted(own - fixed - builtin_fixtures))
               if not name.startswith("test_")}
    tests = sorted(name for name in own if name.startswith("test_"))
    mapping |= {name: f"test_renamed_{index}" for index, name in enumerate(tests)}
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    out = []
    for index, token in enumerate(tokens):
        after_dot = index and tokens[index - 1].string == "."
        if token.type == tokenize.NAME and token.string in mapping and not after_dot:
            token = token._replace(string=mapping[token.string])
        out.append(token)
    return tokenize.untokenize(out)


def set_time(entry: Path, when: str) -> None:
    seconds = datetime.fromisoformat(when).timestamp()
    for path in [entry, *entry.rglob("*")] if entry.is_dir() else [entry]:
        os.utime(path, (seconds, seconds))


def write_zip(dest: Path, files: dict[str, bytes], top: str = "") -> None:
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(top + name, data)


def write_tar(dest: Path, files: dict[str, bytes]) -> None:
    with tarfile.open(dest, "w" if dest.suffix == ".tar" else "w:gz") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))


def write_bomb(dest: Path, members: int = 1_000_000) -> None:
    """A .tar.gz of `members` empty files (names repeating every 2048): one
    compressed gzip member of 2048 headers, repeated (gzip reads concatenated
    members as one stream), so it is made in milliseconds."""
    headers = []
    for number in range(2048):
        info = tarfile.TarInfo(f"f{number:07d}")
        info.size = 0
        headers.append(info.tobuf(format=tarfile.USTAR_FORMAT))
    chunk = gzip.compress(b"".join(headers), compresslevel=9)
    dest.write_bytes(chunk * (members // 2048 + 1) + gzip.compress(b"\0" * 1024))
