"""The attacks on the grader, as test folders: the gallery of cheats
(tests/grading_suites/cheats/, one folder each, its placeholders filled by
materialize) and the channel attack (tests/grading_suites/channels/, built
for a module by channel_suite); and what a cheat must not gain or leave
(assert_stopped, assert_nothing_left)."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

from helpers.kit import ROOT, processes_with
from helpers.processes import memory_groups_of
from helpers.reference import reference_modules
from ol.grading.session import GradingSession

CHEATS = ROOT / "tests" / "grading_suites" / "cheats"
GALLERY = sorted(p.name for p in CHEATS.iterdir() if p.is_dir())


def materialize(name: str, dest: Path, root: Path = ROOT, results: Path | None = None) -> Path:
    """The cheat's folder, its placeholders filled: where the repository (root)
    and the home folder are, the reference's fingerprint, renamed copies of
    the course's implementations, the folder of the autograder's results.json
    (results: where a kit test plays Gradescope; by default the repository,
    where a file the cheat writes is a canary)."""
    rope, alternate = reference_modules("tinyllm.modern.rope")[0], ROOT / "course/reference/alternates/L7.3/rope.py"
    values = {
        "__ROOT__": str(root), "__HOME__": os.path.expanduser("~"), "__RESULTS__": str(results or root),
        "__REFERENCE_FINGERPRINT__": hashlib.sha256(rope.apply_rope.__code__.co_code).hexdigest(),
        "__REFERENCE_COPY__": (ROOT / "course/reference/python/tinyllm/modern/rope.py").read_text()
        .replace("def rope_cos_sin", "def my_cos_sin").replace("def apply_rope", "def my_apply"),
        "__ALTERNATE_COPY__": alternate.read_text().replace("def rope_cos_sin", "def alt_cos_sin"),
    }
    folder = dest / name
    shutil.copytree(CHEATS / name, folder)
    for path in folder.rglob("*.py"):
        text = path.read_text()
        for placeholder, value in values.items():
            text = text.replace(placeholder, value)
        path.write_text(text)
    return folder


# The cheats that reach beyond their run (files, the home folder, keyrings, other processes, the network,
# the results Gradescope reads): what a bundle's own layout could expose.  The Gradescope bundle grades
# each with the engine and confinement ol grade uses, which meets every cheat of the gallery.
REACHING_OUT = ["counter-beside-the-tests", "counter-in-tmp", "counter-in-working-folder", "ctypes-system",
                "fork-bomb", "instructors-rope-through-sys-path", "memory-and-disk", "mutant-cache-in-home", "network",
                "read-the-graders-keyring", "reference-read-at-run-time", "rewrite-the-autograders-results",
                "setsid-escapees", "snoop-other-processes", "vote-through-files", "vote-through-shared-memory",
                "vote-through-the-keyring", "vote-through-the-session-keyring"]
ESCAPEE_MARKERS = ("sleep 31416", "sleep 31417")
CANARIES = ("ol-cheat-was-here", "ol-cheat-ctypes-was-here")


# A suite that only calls the functions (and judges nothing) kills the mutants
# that raise or hang; no cheat may score more than this.
MAX_CHEAT_SCORE = 0.5
STATIC_REASON = "your tests do things graded tests may not (they were not run)"


# Cheats that a reader of source can see; the others read as harmless code and
# must be stopped by the process model and the operating system.
STOPPED_BY_THE_STATIC_CHECK = {
    "compiled-helper": "is a compiled file", "shadow-numpy": "is named like the module numpy",
    "copy-of-the-reference": "your oracle must be your own", "copy-of-the-alternate": "your oracle must be your own",
}


def assert_stopped(cheat: str, mode: str, result) -> None:
    """No pass, no gain; stopped by the static check exactly where a reader
    of source can see the cheat."""
    result = result if isinstance(result, dict) else result.to_json()
    assert not result["passed"], f"{cheat} passed ({mode})"
    if result.get("not_graded"):    # ol grade screened it out before any check (ol.core.screening)
        return
    assert result["reason"] is not None or result["score"] <= MAX_CHEAT_SCORE, (
        f"{cheat} scored {result['score']:.2f} ({result['killed']}/{result['counted']}) in the {mode} check")
    if cheat in STOPPED_BY_THE_STATIC_CHECK:
        assert result["reason"] == STATIC_REASON, (cheat, result["reason"])
        assert any(STOPPED_BY_THE_STATIC_CHECK[cheat] in line for line in result["problems"]), result["problems"]
    else:
        assert result["reason"] != STATIC_REASON, f"{cheat} should get past the static check: {result['problems']}"


def assert_nothing_left(cheat: str) -> None:
    for canary in CANARIES:
        assert not (ROOT / canary).exists(), f"{cheat} wrote into the repository"
    for marker in ESCAPEE_MARKERS:
        assert not processes_with(marker), f"a process of {cheat} outlived the check"
    groups = memory_groups_of(os.getpid())
    assert not groups, f"memory groups of {cheat}'s check were left: {groups}"


CHANNELS = ROOT / "tests" / "grading_suites" / "channels"
TARGETS = {"L7.3": "tinyllm.modern.rope", "L7.4": "tinyllm.modern.rope_scaling", "L7.5": "tinyllm.modern.attention"}


def channel_suite(module: str, readers: list[str], dest: Path, writers: bool = True) -> Path:
    """The channel attack for `module`, listening to `readers`, as a test
    folder; writers=False leaves out the tests that write into durations,
    processor time, output and exit timing (a memo needs none of them)."""
    session_module = GradingSession(ROOT, module).module
    folder = dest / f"channel-{module}"
    folder.mkdir(parents=True)
    shutil.copy(CHANNELS / "channel.py", folder / "channel.py")
    answers = sorted((ROOT / session_module.grading.model_answer).glob("test_*.py"))
    (folder / "answers.py").write_text("\n\n".join(p.read_text() for p in answers))
    text = (CHANNELS / "test_channel.py").read_text()
    (folder / "test_channel.py").write_text(text.replace("__TARGET__", TARGETS[module])
                                            .replace("__READERS__", repr(readers))
                                            .replace("__PROBES__", _probes() if writers else ""))
    return folder


def _probes() -> str:
    """The writers, one test each (written out: a suite may not make tests from globals())."""
    from importlib.util import module_from_spec, spec_from_file_location

    spec = spec_from_file_location("channel_bits", CHANNELS / "channel.py")
    bits = spec.loader.exec_module(module := module_from_spec(spec)) or module.BITS
    tests = [f"def test_probe_{i}():\n    probe({i})\n" for i in range(bits)]
    tests += ["def test_probe_marker():\n    marker()\n", "def test_burn():\n    burn()\n"]
    tests += [f"def test_says_{i}():\n    say({i})\n" for i in range(bits)]
    tests += ["def test_zz_late_exit():\n    late_exit()\n"]
    return "\n\n".join(tests)


# Bytes a run may write where the grader reads its notes: each must read as nothing, never as a fault.
HOSTILE = [
    b"\n" + b"[" * 200000 + b"\n",                         # issue 17: RecursionError in the warm process
    b"{" * 100000 + b"\n",
    b'{"collected": ' + b"[" * 5000 + b"]" * 5000 + b"}\n",
    b"\xff\xfe\xfd not UTF-8 \xc3\x28\n",
    b'{"running": "x", "at": "not a number"}\n{"collected": 7}\n{"outcomes": [1, 2]}\n',
    b'{"at": NaN}\n{"ended": Infinity}\n{"failed": {"a": "dict"}}\n{"output": null}\n',
    b'{"running": "' + b"x" * (2 << 20) + b'"}\n',         # a line past the report's bound
    b'{"output": "cut short',
    b"D\x01\x00\x00\x00\x00\x00\x00\x00" * 100 + b"C\xff\xff\xff\x7f",   # frames where lines belong
    b"\n" * 100000,
]
