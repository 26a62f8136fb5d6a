"""Writing a file whole or not at all: the one way `ol` replaces a file that a
person or a later run reads (the progress state, the verdict and mutant
caches, reports, grades, feedback, the Gradescope bundle and its results).

    write_whole(path, text_or_bytes)            # mode 0o644
    with whole(bundle) as tmp:                  # for a writer that wants a path
        with zipfile.ZipFile(tmp, "w") as z: ...

A temporary file is made beside `path` (the same folder, so the same file
system, where a rename is atomic), written, given `mode`, and renamed over
`path` with os.replace: a reader sees the old file or the new one, never half
of one.  On any error (a full disk, a crash of the writer, an interrupt) the
temporary file is removed and the old file stays as it was.  The folder must
exist: callers make it, as they know whether it may be made.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def whole(path: str | Path, mode: int = 0o644) -> Iterator[Path]:
    """A temporary path beside `path`; when the block ends without an error,
    it becomes `path` (with `mode`), else it is removed."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_whole(path: str | Path, data: str | bytes, mode: int = 0o644) -> None:
    """Replace `path` by `data` (text is written as UTF-8, a lone surrogate as "?":
    what a student's run said must never stop a write), whole or not at all."""
    with whole(path, mode) as tmp:
        tmp.write_bytes(data.encode("utf-8", "replace") if isinstance(data, str) else data)
