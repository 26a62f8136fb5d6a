"""What the grader's processes say to each other: defined here once, and read
here by functions that never raise on what a run wrote.

    observer ──run request + descriptors──> warm process ──fork──> guard ──> run
    observer <──────────────────── notes (a pipe of the observer's) ──────── run
    observer <──end──> guard        (a socket of the observer's: the run's end; a stop)
    observer <──frames──> collector (the shared check's collected suite)

Four kinds of message:

    run request     what the observer asks a warm process to run (RunRequest):
                    trusted, built by the observer, carried by ol.grading.wire.
                    Every run of the student's suite gets the same one
    notes           JSON lines a run writes to its notes descriptor: what it
                    collected, which test it is running, which passed or
                    failed, pytest's own report.  UNTRUSTED: the run is the
                    student's code.  parse_notes() keeps the lines that match
                    NOTE_FIELDS and drops the rest.  They go straight to the
                    observer: no process that forks later runs ever holds them
    ends            what a run's guard (trusted) says on its end socket: one
                    end_line (exit status, processor time, stopped or not),
                    after any fault_line; read by parse_end
    frames          between the observer and the collector (ol.grading.sandbox.collector),
                    little-endian, fixed layouts (FRAME_* below).  Frames from the
                    collector are UNTRUSTED (it is the suite's own process):
                    FrameReader takes any bytes and yields frames or says it is
                    broken, never more

Bounds: a run's notes hold at most MAX_NOTES_BYTES; a note line at most
MAX_LINE_BRACKETS brackets outside its strings (every field is flat: a
string, a number, a list of strings or a dict of strings), so json.loads
never recurses deeply; a frame's body at most MAX_FRAME_BYTES.  Whatever a
run writes can lose that run's notes, never stop the process that
reads them.
"""

from __future__ import annotations

import json
import math
import re
import struct
from dataclasses import dataclass, field, fields

MAX_NOTES_BYTES = 1 << 20        # per run: the notes kept; the rest is dropped
MAX_LINE_BYTES = 256 << 10       # one note line (pytest's report, the collected test ids: far less)
MAX_LINE_BRACKETS = 8             # [ and { outside strings, per line
MAX_TEXT = 64 << 10               # characters of one text field (pytest's report: 60000)
MAX_LIST = 100_000                # items of a list or dict field (test ids)
MAX_FRAME_BYTES = 16 << 20        # body of a C or P frame

# ---- a run's exit status: what each one means, in one table ------------------------------------
#
# A run's exit status is the only thing it ends with; what the grader reads into it comes from
# here.  Any of them can come from the suite's own code too (os._exit(70) in a test): a run's
# status is the suite's behaviour, never a message from the grader's code inside it.

EXIT_PASSED, EXIT_FAILED, EXIT_COLLECT, EXIT_EMPTY, EXIT_THREADS = 0, 1, 3, 4, 5
RUN_FAULT = 70   # os.EX_SOFTWARE: the grader's own code failed in the run (or the suite exited with 70)
RUN_EXITS = {
    EXIT_PASSED: "every test passed",
    EXIT_FAILED: "a test failed",
    EXIT_COLLECT: "the suite does not collect",
    EXIT_EMPTY: "the suite holds no test",
    EXIT_THREADS: "the suite left threads running while it was collected",
    RUN_FAULT: "the run could not be set up, or the grader's code failed in it",
}


def exit_meaning(code: int | None) -> str:
    """How a run ended, in words: its exit status and what it means, or the
    signal (128 + N) that ended it."""
    if code is None:
        return "still running"
    if code < 0:
        return f"signal {-code}"
    if code > 128:
        return f"signal {code - 128}"
    return f"exit status {code}" + (f": {RUN_EXITS[code]}" if code in RUN_EXITS else "")


# ---- a test's share of its run's processor time ---------------------------------------------
#
# A run's processor-time limit is the same in every run of a check; each test may use a quarter of
# it, counted on the tests' side (ITIMER_PROF, ol.grading.pytest_driver.run_items) and, in an
# isolated run, apart on the implementation's side for the calls that test made (ol.grading.serve).

TEST_SHARE = 4   # a test may use 1/TEST_SHARE of its run's processor time on each side


def per_test_seconds(run_seconds: float) -> float:
    """The processor time one test may use: its share of the run's."""
    return run_seconds / TEST_SHARE


class OverTime(BaseException):
    """Raised in a test that used its share of the run's processor time, on
    either side.  A BaseException, so that a test's own `except Exception`
    does not swallow it; pytest records it as that test's failure.  `raised`
    counts them in this process: run_items tells a test that met its share by
    the count going up."""

    raised = 0

    def __init__(self, *args):
        super().__init__(*args)
        OverTime.raised += 1


# ---- run requests (observer -> warm process; trusted) ----------------------------------------

BASE_MODULE = "correct"   # the module a chaff wraps, in RunRequest.modules (ol.grading.chaffs)


@dataclass
class RunRequest:
    """One run, as the observer asks a warm process for it.

    The tests' side gets the same request for every graded run of the
    student's suite, whatever it is graded against and whatever came before
    (README.md: no channel the grader opens itself): every test, in the
    order its code alone fixes (pytest_driver.running_order), to the end;
    the observer stops a run it has heard enough from.  The implementation's side gets the variant (source,
    modules)."""

    # the tests' side
    suite: str = ""                   # "student" or "course": which suite of the sandbox's files
    task: str = "grade"               # "grade" (every test, each one's outcome in the notes), "pytest"
                                      # (pytest's own report), "collect" (the shared check's collector)
    pytest_args: list[str] = field(default_factory=list)
    # the implementation's side
    source: dict | None = None        # {"source": text, "origin": path} of the module under test
    modules: dict = field(default_factory=dict)      # other modules' sources (the student's own)
    tracebacks: bool = False          # send tracebacks of exceptions to the tests' side
    trusted: bool = False             # a variant of the course's own (not confined)
    # both sides
    cpu_seconds: int = 0              # processor time each process of the run may use (0: the role's);
                                      # the same for every run of a check: a run can read its own limits
    user: int = 0                     # the run's own user (drawn afresh from the check's UidBlock)

    def header(self, fds: int) -> dict:
        """The wire message for this request (no run number: nothing that
        tells one run from another reaches the warm process)."""
        message = {f.name: getattr(self, f.name) for f in fields(self)}
        return dict(message, op="run", fds=fds)

    @classmethod
    def from_header(cls, header: dict) -> RunRequest:
        """The request in a "run" message (from the observer: fields it does
        not know are ignored, a field of the wrong type is its default)."""
        request = cls()
        for f in fields(cls):
            value = header.get(f.name)
            expected = dict if f.name == "source" else type(getattr(request, f.name))
            if isinstance(value, expected):
                setattr(request, f.name, value)
        return request


# ---- ends (guard -> observer; trusted) --------------------------------------------------


@dataclass(frozen=True)
class RunEnd:
    """How a run ended, as its guard told the observer."""

    exit: int | None = None      # None: the guard said nothing (it or its sandbox died)
    cpu: float = 0.0             # processor seconds of the run and all it waited for
    stopped: bool = False        # ended on the observer's request
    faults: tuple[str, ...] = () # what the confinement could not do


def end_line(code: int, cpu: float, stopped: bool) -> bytes:
    return (json.dumps({"exit": int(code), "cpu": round(float(cpu), 4), "stopped": bool(stopped)}) + "\n").encode()


def fault_line(text: str) -> bytes:
    return (json.dumps({"fault": str(text)[-MAX_TEXT:]}) + "\n").encode()


def parse_end(data: bytes | bytearray) -> RunEnd:
    """A guard's lines, read back (never raises)."""
    exit, cpu, stopped, faults = None, 0.0, False, []
    for raw in bytes(data[:MAX_NOTES_BYTES]).split(b"\n"):
        try:
            line = json.loads(raw) if raw.strip() else None
        except (ValueError, RecursionError):
            continue
        if not isinstance(line, dict):
            continue
        if isinstance(line.get("fault"), str):
            faults.append(line["fault"])
        if isinstance(line.get("exit"), int) and not isinstance(line.get("exit"), bool):
            exit = line["exit"]
            cpu = float(line["cpu"]) if isinstance(line.get("cpu"), (int, float)) else 0.0
            stopped = line.get("stopped") is True
    return RunEnd(exit, cpu, stopped, tuple(faults))


# ---- notes (run -> observer; untrusted) --------------------------------------------------

TEXT, NUMBER, TEXTS, TEXT_MAP = "text", "number", "texts", "text map"
NOTE_FIELDS = {
    "collected": TEXTS,      # the suite's test ids, in the order every run runs them (pytest_driver.running_order)
    "filed": TEXTS,          # the same ids in the suite's file order
    "running": TEXT,         # the test the run is starting
    "at": NUMBER,            # when it started it (time.monotonic)
    "passed": TEXT,          # a test that passed
    "failed": TEXT,          # a test that failed
    "overtime": TEXT,        # a test stopped at its share of the run's processor time (noted before its "failed")
    "ended": NUMBER,         # when the run's last test ended
    "problem": TEXT,         # "collect", "empty" or "isolate": the suite could not be run
    "detail": TEXT,          # what the problem was
    "outcomes": TEXT_MAP,    # pytest's own run: test id -> passed, failed, error, skipped
    "failures": TEXT_MAP,    # pytest's own run: test id -> its first failure, as the short summary says it
    "output": TEXT,          # pytest's own terminal report
    "internal": TEXT,        # an exception of the grader's own code in the run
    "imported": NUMBER,      # an implementation run: the code under test imported (when, time.monotonic)
}
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)


def loads_bounded(data: bytes | bytearray, max_depth: int):
    """json.loads of untrusted bytes that refuses, with ValueError, what
    nests deeper than max_depth (json.loads itself would recurse until a
    RecursionError, which no caller expects)."""
    data = bytes(data)
    if data.count(b"[") + data.count(b"{") <= max_depth:   # no deeper than its opening brackets: json.loads is safe
        return json.loads(data)
    depth = deepest = 0
    for bracket in re.findall(rb"[\[\]{}]", _STRING.sub(b"", data)):
        depth += 1 if bracket in b"[{" else -1
        deepest = max(deepest, depth)
        if deepest > max_depth:
            raise ValueError(f"JSON nested deeper than {max_depth}")
    try:
        return json.loads(data)
    except RecursionError:
        raise ValueError(f"JSON nested deeper than {max_depth}") from None


def note_line(**message) -> bytes:
    """A note line as a run writes it."""
    return (json.dumps(message) + "\n").encode()


def parse_notes(data: bytes | bytearray) -> list[dict]:
    """The notes in `data` that match NOTE_FIELDS, each as a dict
    of its known fields.  Never raises: a line that is not UTF-8 JSON, holds
    a field of the wrong type or nests deeper than a flat line can is
    dropped, and bytes past MAX_NOTES_BYTES are not read."""
    lines = []
    for raw in bytes(data[:MAX_NOTES_BYTES]).split(b"\n"):
        line = parse_note_line(raw)
        if line is not None:
            lines.append(line)
    return lines



class NotesStream:
    """A run's notes as they arrive, parsed line by line (the observer reads
    them while the run goes on, to stop it once it has heard enough).

        stream.feed(chunk) -> the lines this chunk completed, parsed
        stream.finish()    -> the last line, if it had no newline
        stream.lines       every line so far

    What is not a note costs nothing but itself: a line that does not parse
    (parse_note_line) is dropped, a line longer than MAX_LINE_BYTES is
    dropped as it comes, and only the notes kept count toward
    MAX_NOTES_BYTES, past which notes are dropped too.  So a run that
    writes garbage into its notes loses no note it wrote whole."""

    def __init__(self):
        self.pending = bytearray()
        self.lines: list[dict] = []
        self.kept = 0            # bytes of the notes kept
        self.overlong = False    # dropping the rest of a line too long to keep

    def feed(self, chunk: bytes) -> list[dict]:
        new = []
        while chunk:
            end = chunk.find(b"\n")
            piece, chunk = (chunk, b"") if end < 0 else (chunk[:end], chunk[end + 1:])
            if not self.overlong:
                self.pending += piece[:MAX_LINE_BYTES + 1 - len(self.pending)]
                self.overlong = len(self.pending) > MAX_LINE_BYTES
            if end < 0:
                break
            if not self.overlong:
                new += self._take(bytes(self.pending))
            self.pending.clear()
            self.overlong = False
        return new

    def finish(self) -> list[dict]:
        last = [] if self.overlong else self._take(bytes(self.pending))
        self.pending.clear()
        return last

    def _take(self, raw: bytes) -> list[dict]:
        if self.kept + len(raw) > MAX_NOTES_BYTES:
            return []
        line = parse_note_line(raw)
        if line is None:
            return []
        self.kept += len(raw)
        self.lines.append(line)
        return [line]


def merged_notes(notes: list[dict]) -> dict:
    """A run's parsed notes as one dict (later keys win)."""
    merged: dict = {}
    for line in notes:
        if isinstance(line, dict):
            merged.update(line)
    return merged

def parse_note_line(raw: bytes) -> dict | None:
    """One note line as a dict of its known fields, or None."""
    raw = raw.strip()
    if not raw.startswith(b"{") or len(raw) > MAX_NOTES_BYTES:
        return None
    if raw.count(b"[") + raw.count(b"{") > MAX_LINE_BRACKETS:   # some may be inside strings: look closer
        outside = _STRING.sub(b"", raw)
        if outside.count(b"[") + outside.count(b"{") > MAX_LINE_BRACKETS:
            return None   # no field nests: json.loads must not recurse on what a run wrote
    try:
        value = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict):
        return None
    line = {}
    for key, item in value.items():
        kind = NOTE_FIELDS.get(key)
        if kind is None:
            continue
        checked = _checked(kind, item)
        if checked is None:
            return None
        line[key] = checked
    return line or None


def _checked(kind: str, value):
    """value if it is of this kind (texts cut to MAX_TEXT and made writable), else None."""
    if kind == TEXT:
        return writable(value[-MAX_TEXT:]) if isinstance(value, str) else None
    if kind == NUMBER:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        return float(value) if ok else None
    if kind == TEXTS:
        ok = isinstance(value, list) and len(value) <= MAX_LIST and all(isinstance(v, str) for v in value)
        return [writable(v[:MAX_TEXT]) for v in value] if ok else None
    if kind == TEXT_MAP:
        ok = (isinstance(value, dict) and len(value) <= MAX_LIST
              and all(isinstance(v, str) for v in value.values()))
        return {writable(k[:MAX_TEXT]): writable(v[:64]) for k, v in value.items()} if ok else None
    return None


def writable(text: str) -> str:
    """text with each lone surrogate (JSON's \\udXXX escapes carry them; no UTF-8 file, terminal
    or CSV can hold one) as U+FFFD: every writer of what a run said can then write it."""
    return text if text.isascii() else _SURROGATE.sub("\ufffd", text)   # isascii: one flag, not a scan


_SURROGATE = re.compile("[\ud800-\udfff]")


# ---- frames (observer <-> collector) ---------------------------------------------------------
#
#   observer -> collector   b"R" u32 run id, u8 descriptors; with SCM_RIGHTS the descriptors:
#                           channel, notes, and the run's memory group's join file where there is
#                           one.  The same for every run: every test, in one order (pytest_driver.running_order)
#                           b"K" u32 run id                                   kill that run
#   collector -> observer   b"C" u32 n, then n bytes: the test ids in running order, an empty line,
#                           the same in file order, one a line (collected_ids)
#                           b"P" u32 n, then n bytes: kind, newline, detail   it cannot be run
#                           b"D" u32 run id, i32 exit status, u32 processor milliseconds

FRAME_RUN, FRAME_KILL, FRAME_COLLECTED, FRAME_PROBLEM, FRAME_DONE = b"R", b"K", b"C", b"P", b"D"
RUN_HEAD = struct.Struct("<cIB")          # kind, run id, descriptors
KILL = struct.Struct("<cI")
DONE = struct.Struct("<cIiI")             # kind, run id, exit status, cpu milliseconds
SIZED_HEAD = struct.Struct("<cI")         # C and P: kind, body size


def run_frame(run_id: int, descriptors: int) -> bytes:
    return RUN_HEAD.pack(FRAME_RUN, run_id, descriptors)


def kill_frame(run_id: int) -> bytes:
    return KILL.pack(FRAME_KILL, run_id)


def sized_frame(kind: bytes, body: bytes) -> bytes:
    return SIZED_HEAD.pack(kind, len(body)) + body


def done_frame(run_id: int, exit_status: int, cpu_ms: int) -> bytes:
    return DONE.pack(FRAME_DONE, run_id, exit_status, cpu_ms)


@dataclass(frozen=True)
class Frame:
    kind: bytes                  # FRAME_COLLECTED, FRAME_PROBLEM or FRAME_DONE
    body: bytes = b""            # C and P
    run_id: int = 0              # D
    exit: int = 0                # D
    cpu_ms: int = 0              # D


class FrameReader:
    """Frames from the collector, from whatever bytes arrive.

        reader.feed(chunk) -> [Frame, ...]
        reader.broken      None, or why the stream stopped being frames

    Once broken it stays broken and yields nothing more."""

    def __init__(self):
        self.buffer = bytearray()
        self.broken: str | None = None

    def feed(self, chunk: bytes) -> list[Frame]:
        if self.broken is not None:
            return []
        self.buffer += chunk
        frames = []
        while self.buffer:
            kind = bytes(self.buffer[:1])
            if kind == FRAME_DONE:
                if len(self.buffer) < DONE.size:
                    break
                _, run_id, code, cpu_ms = DONE.unpack_from(self.buffer)
                del self.buffer[:DONE.size]
                frames.append(Frame(kind, run_id=run_id, exit=code, cpu_ms=cpu_ms))
            elif kind in (FRAME_COLLECTED, FRAME_PROBLEM):
                if len(self.buffer) < SIZED_HEAD.size:
                    break
                size = SIZED_HEAD.unpack_from(self.buffer)[1]
                if size > MAX_FRAME_BYTES:
                    self._break(f"a frame of {size} bytes (at most {MAX_FRAME_BYTES})")
                    break
                if len(self.buffer) < SIZED_HEAD.size + size:
                    break
                body = bytes(self.buffer[SIZED_HEAD.size:SIZED_HEAD.size + size])
                del self.buffer[:SIZED_HEAD.size + size]
                frames.append(Frame(kind, body=body))
            else:
                self._break(f"bytes that are not a frame ({bytes(self.buffer[:16])!r}...)")
        return frames

    def _break(self, why: str) -> None:
        self.broken = why
        self.buffer.clear()


def collected_ids(frame: Frame) -> tuple[list[str], list[str]]:
    """A C frame's test ids: (in running order, in file order).  The body is
    the two lists, one id a line, with an empty line between (pytest writes
    an id's control characters escaped, and no id is empty)."""
    text = frame.body.decode("utf-8", errors="replace")
    running, _, filed = text.partition("\n\n")
    return (running.split("\n") if running else []), (filed.split("\n") if filed else [])


def problem(frame: Frame) -> tuple[str, str]:
    """A P frame's (kind, detail)."""
    kind, _, detail = frame.body.decode("utf-8", errors="replace").partition("\n")
    return kind, detail[-MAX_TEXT:]
