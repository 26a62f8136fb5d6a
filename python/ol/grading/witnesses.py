"""A witness for every survivor: the one call on which it and a right implementation differ.

    witnesses = find_witnesses(session, [mutant, ...])
    witnesses["apply_rope:3f2a1b9c04"]
    # Witness(function="apply_rope", call="apply_rope(x=Tensor float32[1, 2] [[1., 0.]], ...)",
    #         expected="out[0, 1] = 0.84147", got="...", where="...")   or None: possibly equivalent

A surviving mutant is shown to a student as its witness, never as its diff:
the diff is a line of the reference, which stays secret wherever students
are graded.  A witness is found among the calls the course tests make to
the module's public contract, smallest first (ol.grading.witness_replay, inside
one run of the course tests on the reference with every call recorded,
ol.grading.pytest_call_recorder), then among their neighbours (one number of a
call changed: ol.grading.witness_replay).  A mutant on which no such call differs
has no witness: it is possibly equivalent, said so, and still counted.

Mutants, the reference and the course tests are the course's own, trusted
code: they run unconfined, in one pytest process.  In a student kit the
calls are recorded on the student's own code and the mutants are of it: the
student's code, run on the student's machine as `./ol tests` runs it.
Witnesses are cached per mutant set (the session's fingerprint, which holds
the code they are mutants of), beside the mutants' cache, so each mutant's
is found once.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ol.core.files import write_whole
from ol.grading.mutants import _default_cache_dir

SEARCH_SECONDS = 900   # the whole search: the course tests recorded once, every mutant replayed on their calls
WITNESS_FIELDS = ("function", "call", "expected", "got", "where", "feature", "test")


@dataclass(frozen=True)
class Witness:
    function: str    # the public function (Class.method for a method) the call reaches
    call: str        # the call, its arguments named, small arrays in full
    expected: str    # what a right implementation gives (at `where`)
    got: str         # what the broken one gives instead
    where: str       # the first place they differ: "out[0, 1]", "out[1]'s dtype and shape";
                     # "" when one of them raises (expected and got then say "raises ...", "returns ...")
    feature: str = ""   # the catalog's feature whose calls this is (ol.core.catalog.Feature), "" for none
    test: str = ""      # the course test that makes the call (its node id): where its elided arrays are

    def sentence(self) -> str:
        """The witness as a student can turn it into a test:
        `apply_rope(...)`: a right implementation gives out[0, 1] = 0.84147, a broken one -0.84147
        (a call of the course test course/tests/L7.3/test_rope.py::test_hand_example)."""
        source = f" (a call of the course test {self.test})" if self.test else ""
        if self.where:
            return (f"{self.call}: a right implementation gives {self.where} = {self.expected}, "
                    f"a broken one {self.got}{source}")
        return f"{self.call}: a right implementation {self.expected}, a broken one {self.got}{source}"


def find_witnesses(session, mutants: list) -> dict[str, Witness | None]:
    """{mutant id: its Witness, or None when no course-test call tells it from the reference}.
    `mutants`: anything with .id and .source (ol.grading.mutants.Mutant)."""
    cache = cache_file(session)
    known = _read(cache)
    missing = [m for m in mutants if m.id not in known]
    if missing:
        known.update(_search(session, missing))
        try:
            cache.parent.mkdir(parents=True, exist_ok=True)
            write_whole(cache, json.dumps(known))
        except OSError:
            pass   # a read-only home only costs time
    return {m.id: _witness(known.get(m.id)) for m in mutants}


def cache_every_witness(session) -> Path:
    """Every counted mutant's witness found and cached, once for many checks
    (a class, a Gradescope image): the cache file each check then reads."""
    find_witnesses(session, list(session.mutants.counted))
    return cache_file(session)


def _witness(entry: dict | None) -> Witness | None:
    if not entry or "none" in entry:
        return None
    return Witness(**{name: str(entry.get(name, "")) for name in WITNESS_FIELDS})


def cache_file(session) -> Path:
    """Keyed by everything that shapes a witness: the session's fingerprint (the reference, the course
    tests, the grader's code, the replay's among it)."""
    key = hashlib.sha256(session.fingerprint().encode()).hexdigest()[:24]
    return _default_cache_dir() / f"witnesses-{session.module.id}-{key}.json"


def _read(cache: Path) -> dict:
    try:
        data = json.loads(cache.read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _search(session, mutants: list) -> dict[str, dict]:
    """Run the course tests once on the session's correct implementation (the reference, or in a
    kit the student's own code), recording, and search each mutant's witness."""
    from ol.core.overlay import Source
    from ol.core.runner import run_tests
    from ol.grading.session import GradingFault

    module = session.module
    with tempfile.TemporaryDirectory(prefix="ol-witnesses-") as scratch:
        settings, out = Path(scratch) / "settings.json", Path(scratch) / "results.json"
        settings.write_text(json.dumps({
            "target": session.target, "out": str(out), "limit": 20000, "base": session.reference.source,
            "variants": [{"id": m.id, "source": m.source} for m in mutants],
            "features": [feature.as_setting() for feature in session.grading.features],
        }), encoding="utf-8")
        # every module as the check's own runs have it: the library, and the code the mutants are of
        sources = {name: Source.from_json(name, entry) for name, entry in session.library.items()}
        sources[session.target] = Source.from_text(session.reference.source, session.reference.origin)
        try:
            run = run_tests(session.root, module, [session.root / module.course_tests], sources=sources,
                            implementation=session.witnesses_recorded_on,
                            pytest_args=["-p", "ol.grading.pytest_call_recorder", "--ol-record", str(settings), "-q"],
                            capture=True, catalog=session.catalog, timeout=SEARCH_SECONDS)
        except subprocess.TimeoutExpired:
            raise GradingFault(f"the witnesses of {module.id}'s mutants could not be searched within "
                               f"{SEARCH_SECONDS} s (the course tests recorded, then every mutant on their "
                               "calls)") from None
        if not out.is_file():
            raise GradingFault(f"the witnesses of {module.id}'s mutants could not be searched: the course tests "
                               f"on the correct implementation gave pytest exit {run.exit_code}\n{run.output[-3000:]}")
        results = json.loads(out.read_text(encoding="utf-8"))
    if "error" in results:
        raise GradingFault(f"searching the witnesses of {module.id}'s mutants failed:\n{results['error']}")
    return results["witnesses"]
