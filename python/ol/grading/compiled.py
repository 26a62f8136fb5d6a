"""The course's variants compiled once and kept, so that an implementation's
run loads a code object instead of compiling the module's text: compiling
L7.3's rope.py and importing it through the overlay cost a run about 3.5 ms
of processor time, loading its code object about 1 ms, and a check makes
some 270 such runs.

    code_of(text, origin) -> {"code": base64 of marshal.dumps(code), "magic": ...}

Kept in memory for the life of the process (ol grade compiles each variant
once for the whole class) and on disk beside the mutants' cache, one file
per digest of this Python's magic number, the origin and the text.  Only
the course's own variants are compiled here: a student's text is compiled
in its confined run, never in the observer.  The loader (ol.core.overlay)
compiles the text itself when the magic number is not its own's: the cache
saves time and decides nothing.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import marshal
from pathlib import Path

from ol.core.files import write_whole

MAGIC = importlib.util.MAGIC_NUMBER.hex()
_kept: dict[str, dict] = {}


def code_of(text: str, origin: str, cache_dir: Path | None = None) -> dict:
    """The compiled form of one variant's module text, as a request carries it."""
    digest = hashlib.sha256(f"{MAGIC}\n{origin}\n{text}".encode()).hexdigest()[:32]
    if digest in _kept:
        return _kept[digest]
    path = (cache_dir or _default_cache_dir()) / f"{digest}.code"
    try:
        data = path.read_bytes()
    except OSError:
        try:
            data = marshal.dumps(compile(text, origin, "exec", dont_inherit=True))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return {}   # the run compiles it, and says what is wrong
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_whole(path, data)
        except OSError:
            pass   # a read-only cache: compiled again next time
    _kept[digest] = {"code": base64.b64encode(data).decode("ascii"), "magic": MAGIC}
    return _kept[digest]


def loaded(entry: dict):
    """The code object of a request's compiled form, or None (another Python's, or malformed)."""
    if not isinstance(entry, dict) or entry.get("magic") != MAGIC or not isinstance(entry.get("code"), str):
        return None
    try:
        return marshal.loads(base64.b64decode(entry["code"]))
    except (ValueError, EOFError, TypeError):
        return None


def _default_cache_dir() -> Path:
    from ol.grading.mutants import _default_cache_dir as mutants_cache

    return mutants_cache() / "code"
