"""The one loader for golden fixtures (fixtures/<module>/<name>.npz).

Each fixture is written by its oracle script, oracle/<module>/<name>.py, and
carries a `__provenance__` entry: a 0-d string holding JSON whose "arrays"
field lists every other key with its shape, dtype and sha256. load_fixture
checks the file against that list, so a stale, truncated or hand-edited
fixture fails with a FixtureError that names the file, what is wrong and the
command that regenerates it, never with a bare numpy traceback.

    fx = load_fixture("fixtures/L7.3/rope_hf.npz")
    fx["llama/cos"]          # numpy array
    fx.provenance["versions"]
"""

from __future__ import annotations

import hashlib
import json
import zipfile
import zlib
from pathlib import Path

import numpy as np

PROVENANCE_KEY = "__provenance__"


class FixtureError(Exception):
    """A golden fixture is missing, unreadable, or disagrees with its provenance."""


class Fixture(dict):
    """The fixture's arrays by key (provenance excluded), plus where they came from.

    .path: the .npz file; .provenance: the decoded provenance JSON (a dict).
    """

    def __init__(self, arrays: dict[str, np.ndarray], path: Path, provenance: dict):
        super().__init__(arrays)
        self.path = path
        self.provenance = provenance


def regenerate_command(path: str | Path, provenance: dict | None = None) -> str:
    """The command that rebuilds a fixture: fixtures/X/name.npz <-> python oracle/X/name.py,
    run from the repository root (the folder that holds fixtures/). For a copy outside
    any fixtures/ folder, the command its provenance records, if it could be read."""
    path = Path(path).resolve()
    parts = path.parts
    if "fixtures" in parts[:-1]:
        i = len(parts) - 1 - parts[::-1].index("fixtures")  # the innermost fixtures/ folder
        oracle = Path("oracle", *parts[i + 1 : -1], path.stem + ".py")
        return f"python {oracle.as_posix()}  (from {Path(*parts[:i])})"
    if provenance and isinstance(provenance.get("command"), str):
        return f"{provenance['command']}  (from the repository root)"
    return f"python oracle/{path.parent.name}/{path.stem}.py  (from the repository root)"


def load_fixture(path: str | Path) -> Fixture:
    """Load a golden .npz fixture and check it against its own provenance.

    Returns a Fixture: a dict of key -> numpy array with every key that the
    provenance lists (and no other), each of the recorded shape, dtype and sha256.
    Raises FixtureError naming the file, what differs (key, expected, got) and
    the command that regenerates it.
    """
    path = Path(path)
    provenance = None  # once read, fail() can fall back on the command it records

    def fail(problem: str) -> FixtureError:
        return FixtureError(
            f"golden fixture {path}: {problem}\n"
            f"Regenerate it with: {regenerate_command(path, provenance)}\n"
            f"(needs the oracle extra: python -m pip install -e '.[oracle]')"
        )

    if not path.is_file():
        raise fail("file not found")
    try:
        with np.load(path, allow_pickle=False) as npz:
            arrays = {key: npz[key] for key in npz.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error) as e:  # not a zip, truncated, bad CRC
        raise fail(f"cannot be read as an .npz archive ({type(e).__name__}: {e})") from e

    if PROVENANCE_KEY not in arrays:
        raise fail(f"has no {PROVENANCE_KEY!r} entry, so its contents cannot be checked")
    try:
        provenance = json.loads(str(arrays.pop(PROVENANCE_KEY)[()]))
        expected = {  # key -> (shape, dtype, sha256)
            key: (tuple(entry["shape"]), np.dtype(entry["dtype"]), str(entry["sha256"]))
            for key, entry in provenance["arrays"].items()
        }
    except (ValueError, TypeError, KeyError, IndexError, AttributeError) as e:
        raise fail(
            f"its {PROVENANCE_KEY!r} entry is not JSON with an 'arrays' table of shape, dtype and sha256 ({e!r})"
        ) from e

    missing = sorted(set(expected) - set(arrays))
    extra = sorted(set(arrays) - set(expected))
    if missing or extra:
        problems = []
        if missing:
            problems.append(f"missing keys {missing} (listed in its provenance, absent from the file)")
        if extra:
            problems.append(f"extra keys {extra} (in the file, not listed in its provenance)")
        raise fail("; ".join(problems))

    for key, (want_shape, want_dtype, want_sha256) in expected.items():
        array = arrays[key]
        if array.shape != want_shape:
            raise fail(f"key {key!r} has shape {array.shape}, its provenance expects {want_shape}")
        if array.dtype != want_dtype:
            raise fail(f"key {key!r} has dtype {array.dtype}, its provenance expects {want_dtype}")
        digest = hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()
        if digest != want_sha256:
            raise fail(
                f"key {key!r} has sha256 {digest[:16]}..., its provenance expects {want_sha256[:16]}...: "
                "the values differ from what the oracle wrote"
            )
    return Fixture(arrays, path, provenance)
