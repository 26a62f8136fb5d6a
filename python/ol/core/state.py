"""The student's progress per module, kept in <repo>/.ol/state.json.

`ol list` reads it and runs nothing.  The commands that learn something write
it: `ol start` and `ol reset` ("started"), `ol tests` and `ol diff` ("course
tests passing", or back to "started" when the course tests fail), and
`ol check` ("checked"); `ol reset --remove` drops the record.

    not started            derived, never stored: a file of the module is missing
    started                the files exist; the course tests have not passed (yet)
    course tests passing   the last run of the course tests passed
    checked                `ol check` passed

Each record also keeps whether the needs came from the reference
(`ref_deps`), when it was written, and a digest of the student's files then,
so `ol list` can say "edited since" without running anything.

The file is written atomically (a temporary file, then rename).  A corrupt
file is never lost: it is copied to state.json.bak (or .bak-2, ...), a
warning is printed, and the state starts empty.
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from ol.core.catalog import STUDENT_TREE, Module
from ol.core.files import write_whole

STATE_DIR = ".ol"
STATE_FILE = "state.json"
NOT_STARTED, STARTED, PASSING, CHECKED = "not started", "started", "course tests passing", "checked"
STATES = (NOT_STARTED, STARTED, PASSING, CHECKED)  # in order of progress
FORMAT_VERSION = 1


@dataclass(frozen=True)
class Status:
    """What `ol list` shows for one module."""

    state: str                   # one of STATES
    ref_deps: bool = False       # the recorded run took the needs from the reference
    edited_since: bool = False   # the files changed after the recorded run
    missing: tuple[str, ...] = ()  # files of a started module that are gone

    def at_least(self, state: str) -> bool:
        return STATES.index(self.state) >= STATES.index(state)


class StateStore:
    """Read and write <root>/.ol/state.json.  `warn` receives warning lines."""

    def __init__(self, root: str | Path, warn=None):
        self.root = Path(root)
        self.path = self.root / STATE_DIR / STATE_FILE
        self.warn = warn or (lambda message: print(f"ol: warning: {message}", file=sys.stderr))
        self._warned = False

    # ---- reading -----------------------------------------------------------

    def records(self) -> dict[str, dict]:
        """Every stored record by module id ({} if there is no usable file)."""
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return {}
        except OSError as error:   # a folder in its place, no permission: nothing to keep a copy of
            self._warn_once(f"{self.path} cannot be read ({error}); progress starts empty "
                            "(your code and tests are untouched)")
            return {}
        try:
            data = json.loads(raw.decode("utf-8"))
            modules = data["modules"]
            if not isinstance(modules, dict) or not all(isinstance(r, dict) for r in modules.values()):
                raise ValueError("'modules' is not a table of records")
            return modules
        except (ValueError, KeyError, TypeError) as error:   # UnicodeDecodeError is a ValueError
            backup = self._keep_corrupt_copy()
            self._warn_once(f"{self.path} is not a valid state file ({error}); it was copied to {backup} "
                            "and progress starts empty (your code and tests are untouched)")
            return {}

    def _warn_once(self, message: str) -> None:
        if not self._warned:
            self._warned = True
            self.warn(message)

    def status(self, module: Module) -> Status:
        """The module's state: from the files on disk, then the stored record."""
        present = [f for f in module.files if (self.root / STUDENT_TREE / f).exists()]
        if not present:
            return Status(NOT_STARTED)
        missing = tuple(f for f in module.files if f not in present)
        record = self.records().get(module.id)
        if not record or record.get("state") not in STATES[1:]:
            return Status(STARTED, missing=missing)
        digest = record.get("files_sha256")
        return Status(
            record["state"],
            ref_deps=bool(record.get("ref_deps")),
            edited_since=bool(digest) and digest != files_digest(self.root, module),
            missing=missing,
        )

    # ---- writing -----------------------------------------------------------

    def record(self, module: Module, state: str, *, ref_deps: bool | None = None) -> None:
        """Store `state` for `module` with the current digest of its files."""
        if state not in STATES[1:]:
            raise ValueError(f"cannot store state {state!r}; expected one of {STATES[1:]}")
        records = self.records()
        entry = {
            "state": state,
            "updated": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "files_sha256": files_digest(self.root, module),
        }
        if ref_deps is not None:
            entry["ref_deps"] = bool(ref_deps)
        records[module.id] = entry
        self._write({"version": FORMAT_VERSION, "modules": records})

    def forget(self, module: Module) -> None:
        """Drop the module's record (`ol reset --remove`: its state is derived again, from its files)."""
        records = self.records()
        if records.pop(module.id, None) is not None:
            self._write({"version": FORMAT_VERSION, "modules": records})

    def record_test_result(self, module: Module, passed: bool, *, ref_deps: bool) -> str:
        """After a course-test run: passing lifts the state to "course tests
        passing" (a "checked" module stays checked); failing puts it back to
        "started".  Returns the state stored."""
        current = self.status(module).state
        if passed:
            state = CHECKED if current == CHECKED else PASSING
        else:
            state = STARTED
        self.record(module, state, ref_deps=ref_deps)
        return state

    def _write(self, data: dict) -> None:
        """Write atomically; a failure is a warning (the result was already
        shown), never a lost result or a traceback."""
        try:
            self._write_atomically(data)
        except OSError as error:
            self.warn(f"your progress could not be saved in {self.path} ({error}); "
                      "the result above stands, run the command again once the folder is writable")

    def _write_atomically(self, data: dict) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_whole(self.path, json.dumps(data, indent=2, sort_keys=True) + "\n")

    def _keep_corrupt_copy(self) -> Path:
        backup = self.path.with_name(STATE_FILE + ".bak")
        n = 2
        while backup.exists():
            if backup.read_bytes() == self.path.read_bytes():
                return backup  # this very file was kept already
            backup = self.path.with_name(f"{STATE_FILE}.bak-{n}")
            n += 1
        backup.write_bytes(self.path.read_bytes())
        return backup


def files_digest(root: str | Path, module: Module) -> str:
    """sha256 over the module's student files (path and bytes; a missing file counts as absent)."""
    h = hashlib.sha256()
    for file in module.files:
        path = Path(root) / STUDENT_TREE / file
        h.update(file.encode() + b"\0")
        h.update(path.read_bytes() if path.exists() else b"<absent>")
        h.update(b"\0")
    return h.hexdigest()
