"""Cross-run channels: the writers' and the readers' side of a suite that
judges nothing by itself (tests/end_to_end/test_channels.py plays it against the grader,
with a module's calls beside it as test_channel.py).

It digests what the module under test returns to the calls of answers.py
(the model answer's tests, with their checks ignored), and tries to
learn the correct digest from something the grader carries from one run to
another.  It writes its own digest into the quantities a run controls, and
reads the quantities a run can see:

    writers   probes that sleep longer by a bit (durations), a probe that
              burns processor time by a bit, probes that print a lot by a
              bit (output size), a session that ends late by a bit (exit
              timing), files it reads by a bit (access times)
    readers   the order of this run's tests (pytest's session items), the
              tests left out of this run, the access times of files it may
              read (a memo the first run leaves: a sentinel file, then each
              bit and its complement, so that a pattern it did not write
              reads as nothing)

The judge fails exactly when its own digest differs from a correct one it
learnt; a run that learns nothing passes.  So with no channel the judge
catches nothing, which is what tests/end_to_end/test_channels.py checks.
"""

import random
import typing

import numpy as np

sys_module = typing.sys
os_module = random._os
time_module = sys_module.modules["time"]
attribute, assign = getattr, setattr          # by other names: nothing here is hidden from a careful reader

TARGET = ["tinyllm.modern.rope"]   # the module under test: test_channel.py sets it
BITS = 6               # of the digest: a mutant shares the correct one once in 64
STEP = 0.15            # seconds a probe sleeps more for a 1 (a marker sleeps half that more): the audit's
_state = {}


# ---- the digest --------------------------------------------------------------------------------


def summary(value):
    """What a call returned, as a few numbers rounded to three figures:
    shared by two correct implementations, moved by nearly any fault."""
    data = getattr(value, "data", None)
    if isinstance(data, np.ndarray) and not isinstance(value, np.ndarray):
        return ("tensor", summary(data), summary(getattr(value, "grad", None)))
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "fiub" or value.size == 0:
            return ("array", value.shape, value.dtype.name)
        x = np.nan_to_num(value.astype(np.float64), nan=7.0, posinf=9.0, neginf=-9.0).ravel()
        weights = 1.0 + (np.arange(x.size) % 7)
        return ("array", value.shape, value.dtype.name, f"{float(((x + 0.5) ** 2 * weights).sum()):.3g}",
                f"{float(np.abs(x).max()):.3g}")
    if isinstance(value, (tuple, list)):
        return tuple(summary(v) for v in value)
    if isinstance(value, float):
        return f"{value:.3g}"
    if value is None or isinstance(value, (bool, int, str)):
        return repr(value)
    fields = ("inv_freq", "attention_scaling", "layout", "rotary_dim")
    if all(attribute(value, name, None) is not None or name == "rotary_dim" for name in fields):
        return ("spec", *(summary(attribute(value, name, None)) for name in fields))
    return type(value).__name__


def digest() -> int:
    """This run's digest of the module: BITS bits of what it answers to every
    call of answers.py (the model answer's tests, run here with each of their
    checks ignored: the suite holds no expected value)."""
    if "digest" not in _state:
        text = repr(_answers()).encode()
        value = 2166136261
        for byte in text:                # FNV-1a: the same in every run, whatever the hash seed
            value = ((value ^ byte) * 16777619) & 0xFFFFFFFF
        _state["digest"] = value & ((1 << BITS) - 1)
    return _state["digest"]


def _answers() -> list:
    """Every answer of the module under test to the calls of answers.py's tests,
    summarized: each result, each kind of error, and what each check was shown."""
    import itertools

    answers: list = []
    module = sys_module.modules["importlib"].import_module(TARGET[0])
    originals = {name: attribute(module, name) for name in dir(module) if not name.startswith("_")
                 and callable(attribute(module, name))}

    def recording(function):
        def call(*args, **kwargs):
            try:
                result = function(*args, **kwargs)
            except Exception as error:
                answers.append(type(error).__name__)
                raise
            answers.append(summary(result))
            return result
        return call

    def shown(*args, **kwargs):   # a check of the answers' own: what it was given, never its verdict
        answers.append(summary([a for a in args if not isinstance(a, (str, bool))]))

    testing = np.testing
    checks = {name: attribute(testing, name) for name in ("assert_allclose", "assert_array_equal", "assert_equal")}
    for name, function in originals.items():
        assign(module, name, recording(function))
    for name in checks:
        assign(testing, name, shown)
    try:
        answers_module = sys_module.modules["importlib"].import_module("answers")
        for name in sorted(n for n in dir(answers_module) if n.startswith("test_")):
            test = attribute(answers_module, name)
            marks = [m for m in attribute(test, "pytestmark", []) if m.name == "parametrize"]
            grids = []
            for mark in marks:
                names = [n.strip() for n in (mark.args[0].split(",") if isinstance(mark.args[0], str)
                                             else mark.args[0])]
                values = [v.values if type(v).__name__ == "ParameterSet" else (v if len(names) > 1 else (v,))
                          for v in mark.args[1]]
                grids.append([dict(zip(names, v)) for v in values])
            for combination in itertools.product(*grids):
                arguments = {k: v for part in combination for k, v in part.items()}
                try:
                    test(**arguments)
                except (KeyboardInterrupt, SystemExit):
                    raise
                except BaseException:   # a failed check of the answers' own: not a verdict here
                    pass
    finally:
        for name, function in originals.items():
            assign(module, name, function)
        for name, function in checks.items():
            assign(testing, name, function)
    return answers


def bit(index: int) -> int:
    return (digest() >> index) & 1


# ---- writers --------------------------------------------------------------------------------------


def probe(index: int) -> None:
    """A duration: longer by STEP for a 1."""
    time_module.sleep(STEP * (1 + bit(index)))


def marker() -> None:
    time_module.sleep(STEP * 1.5)


def burn() -> None:
    """Processor time: about 1.5 s more for a 1 in bit 0."""
    end = time_module.process_time() + 0.1 + 1.5 * bit(0)
    while time_module.process_time() < end:
        pass


def say(index: int) -> None:
    """An output size: 256 KiB printed for a 1."""
    if bit(index):
        print("x" * (256 << 10))


def late_exit() -> None:
    """Exit timing: the session ends STEP later for a 1 in bit 1."""
    time_module.sleep(STEP * bit(1))


# ---- readers ---------------------------------------------------------------------------------------


def learnt_from_order(session_items, file_order: list[str]):
    """The digest the order of this run's probes carries (probes that took
    longer on an earlier run placed after the marker), or None when the
    tests run in their file order."""
    names = [item.name for item in session_items]
    probes = [name for name in names if name.startswith("test_probe_") or name == "test_probe_marker"]
    if probes == [name for name in file_order if name in probes] or "test_probe_marker" not in probes:
        return None
    after = probes[probes.index("test_probe_marker") + 1:]
    return sum(1 << int(name.rsplit("_", 1)[1]) for name in after if name != "test_probe_marker")


def learnt_from_left_out(session_items, file_order: list[str]):
    """The digest the tests missing from this run carry (one per bit that
    failed on an earlier run), or None when every test is here."""
    here = {item.name for item in session_items}
    missing = [name for name in file_order if name not in here and name.startswith("test_fails_")]
    if not missing:
        return None
    return sum(1 << int(name.rsplit("_", 1)[1]) for name in missing)


def memo_files() -> list[str]:
    """Files this run may read and that no run reads by itself: the last
    files of the `ol` package it is given and of the standard library's
    test folder, in a fixed order (1 + 2 BITS of them)."""
    found: list[str] = []
    standard = [p for p in sys_module.path if p.rstrip("/").endswith(("python3.11", "python3.12", "python3.13"))]
    for folder in (os_module.path.join(sys_module.path[0], "ol", "class_grading"),
                   *(os_module.path.join(p, "test") for p in standard[:1])):
        try:
            names = sorted(name for name in os_module.listdir(folder) if name.endswith(".py"))
        except OSError:
            continue
        found += [os_module.path.join(folder, name) for name in names]
    return found[-(1 + 2 * BITS):] if len(found) > 2 * BITS else []


def was_read(path: str, since: float) -> bool:
    """Read since it last changed and since `since` (the check began), and
    not an access time set ahead."""
    info = os_module.stat(path)
    return max(info.st_mtime, info.st_ctime, since) < info.st_atime <= time_module.time() + 60


def touch(path: str) -> None:
    fd = os_module.open(path, os_module.O_RDONLY)
    os_module.read(fd, 1)
    os_module.close(fd)


def memo(began: float):
    """The digest an earlier run left in access times since `began` (when
    this run's files were written: the check's start), or None (this run
    then leaves its own: it may be the first)."""
    files = memo_files()
    if not files:
        return None
    sentinel, ones, zeros = files[0], files[1:1 + BITS], files[1 + BITS:]
    try:
        if was_read(sentinel, began):
            marks = [(was_read(one, began), was_read(zero, began)) for one, zero in zip(ones, zeros)]
            if all(one != zero for one, zero in marks):
                return sum(1 << index for index, (one, _) in enumerate(marks) if one)
            return None
        for index in range(BITS):
            touch(ones[index] if bit(index) else zeros[index])
        touch(sentinel)
    except OSError:
        return None
    return None
