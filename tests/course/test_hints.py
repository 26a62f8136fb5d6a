"""The chapters' claims about tests are executed (issues 19 and 30), for every graded module.

Each graded module of the catalog has its chapter's claims as data in
tests/hints/ (a module without them fails here), and each is checked:

- its words are in the section it names (13, "your graded tests", unless
  it is the pitfall table's or another section's), so a claim reworded or
  dropped shows up here;
- every sentence of section 13's **Hints.** paragraph holds the words of a
  claim, or is listed as advice that claims nothing a test could run;
- the mistake is one the grader counts: a mutant mutmut generates from the
  reference (written as its one-line edit, which must give exactly that
  mutant's source, neither message-only nor reviewed as equivalent), or a
  pitfall or misconception of course/mutants/<module>/;
- the suggested input, run on that mistake and on the reference, gives
  different results (a different value at the chapter's tolerance, a
  different dtype, or a different exception, or one raises and one returns);
- where the claim says an input cannot see the mistake ("cannot see",
  "invisible", "looks fine", "checks miss it"), or the hint adds a twist to a
  plainer input, that input does not tell them apart;
- the oracle section 13 recommends, at the tolerance it recommends, accepts
  the reference and every alternate on the course tests' golden cases.

The pitfall table's "caught by" column is held to pitfalls.toml by
tests/course/test_chapters.py, and `ol verify` runs pitfalls.toml's caught_by.

The reference, its mutants and the oracles run in a subprocess with
PYTHONPATH set to the reference tree, so this file never imports (or is
confused by) the student's `tinyllm`.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from hints import hints_file
from ol.core.catalog import load_catalog
from ol.grading.mutants import build_mutant_set

REPO = Path(__file__).resolve().parents[2]
REFERENCE_TREE = REPO / "course" / "reference" / "python"
CATALOG = load_catalog(REPO)
GRADED = [m for m in CATALOG.modules if m.grading is not None]
HINTS = [hint for module in GRADED if hints_file(module.id) for hint in hints_file(module.id).HINTS]


# Runs in a subprocess with PYTHONPATH=course/reference/python.  stdin: {"target", "variants": {label:
# source}, "calls": [[label, expression, {"atol", "rtol"}], ...]}.  stdout: for each call, whether its
# outcome differs from the reference's on the same expression (at that tolerance), and both outcomes.
_RUNNER = r"""
import json, math, sys, types, warnings
import numpy as np
from tinyllm.autograd.tensor import Tensor

job = json.load(sys.stdin)


def load(label, source):
    module = types.ModuleType(f"hint_{label}")
    module.__file__ = job["target"]
    sys.modules[module.__name__] = module  # dataclasses look their module up
    exec(compile(source, f"{job['target']} ({label})", "exec"), module.__dict__)
    return module


def gradient(f, x, g):
    x = Tensor(x.data, requires_grad=True)
    f(x).backward(g)
    return x.grad


def outcome(module, expression):
    names = {name: getattr(module, name) for name in dir(module) if not name.startswith("_")}
    names.update(np=np, math=math, Tensor=Tensor, gradient=gradient)
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return ("value", eval(expression, names))
    except Exception as error:
        return ("raised", type(error).__name__)


def leaves(value):
    if hasattr(value, "inv_freq") and hasattr(value, "layout"):  # a RopeSpec: its four fields
        return [np.asarray(value.inv_freq), value.attention_scaling, value.layout, value.rotary_dim]
    if isinstance(value, Tensor):
        return [value.data]
    if isinstance(value, (tuple, list)):
        return [leaf for item in value for leaf in leaves(item)]
    return [value]


def differ(a, b, tolerance):
    if a[0] != b[0] or a[0] == "raised":
        return a != b
    left, right = leaves(a[1]), leaves(b[1])
    if len(left) != len(right):
        return True
    for x, y in zip(left, right):
        if isinstance(x, (str, type(None))) or isinstance(y, (str, type(None))):
            if x != y:
                return True
            continue
        x, y = np.asarray(x), np.asarray(y)
        if x.shape != y.shape or x.dtype != y.dtype:
            return True
        with np.errstate(all="ignore"):
            close = np.isclose(x.astype(np.float64), y.astype(np.float64), rtol=tolerance["rtol"], atol=tolerance["atol"],
                               equal_nan=True)
        if not close.all():
            return True
    return False


def said(result):
    return f"raised {result[1]}" if result[0] == "raised" else f"returned {result[1]!r}"[:300]


modules = {label: load(label, source) for label, source in job["variants"].items()}
report = []
for label, expression, tolerance in job["calls"]:
    mine, reference = outcome(modules[label], expression), outcome(modules["reference"], expression)
    report.append({"differ": differ(mine, reference, tolerance), "mistake": said(mine), "reference": said(reference)})
json.dump(report, sys.stdout)
"""



def graded(module_id: str):
    module = CATALOG.get(module_id)
    return module, REFERENCE_TREE / module.grading.target


def section(module_id: str, number: int) -> str:
    text = (REPO / CATALOG.get(module_id).chapter).read_text(encoding="utf-8")
    parts = re.split(r"^## (\d+)\. .*$", text, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2]))[str(number)]


def flat(text: str) -> str:
    return " ".join(text.split())


def hints_paragraph(module_id: str) -> list[str]:
    """The sentences of section 13's paragraph that starts with **Hints.**"""
    found = [p for p in section(module_id, 13).split("\n\n") if p.startswith("**Hints.**")]
    assert len(found) == 1, f"{module_id}'s section 13 has {len(found)} paragraphs starting with **Hints.**"
    return re.split(r"(?<=[.!?])\s+(?=[A-Z$`*])", flat(found[0].removeprefix("**Hints.**")))


def planted_mistakes(module_id: str, reference: str) -> dict[str, str]:
    """The pitfalls and misconceptions of a module: id -> the reference with its edits."""
    found = {}
    for kind, name in (("pitfall", "pitfalls.toml"), ("misconception", "misconceptions.toml")):
        path = REPO / "course" / "mutants" / module_id / name
        for entry in tomllib.loads(path.read_text(encoding="utf-8")).get(kind, []) if path.exists() else []:
            source = reference
            for edit in entry["edit"]:
                assert reference.count(edit["old"]) == 1, f"{entry['id']}: an edit no longer applies"
                source = source.replace(edit["old"], edit["new"])
            found[entry["id"]] = source
    return found


def mistake_source(hint, reference: str, mistakes: dict[str, str]) -> str:
    if " => " not in hint.mistake:
        assert hint.mistake in mistakes, f"{hint.mistake} is no pitfall or misconception of {hint.module}"
        return mistakes[hint.mistake]
    old, new = hint.mistake.split(" => ")
    new = old[: len(old) - len(old.lstrip())] + new.lstrip()  # the changed text keeps its indentation
    assert reference.count(old) == 1, f"the reference no longer holds {old!r} once: update the hint's mutant"
    return reference.replace(old, new)


def reference_env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(REFERENCE_TREE), str(REPO / "course" / "tests")]))


@pytest.fixture(scope="module")
def outcomes() -> dict[str, list[dict]]:
    """For each hint, the subprocess's verdict on its call (and its plain input, if any)."""
    results = {}
    for module in GRADED:
        hints = [hint for hint in HINTS if hint.module == module.id]
        if not hints:
            continue
        _, target = graded(module.id)
        reference = target.read_text(encoding="utf-8")
        mistakes = planted_mistakes(module.id, reference)
        tolerance = hints_file(module.id).TOLERANCE
        variants = {"reference": reference}
        calls = []
        for number, hint in enumerate(hints):
            variants[f"h{number}"] = mistake_source(hint, reference, mistakes)
            calls.append([f"h{number}", hint.call, tolerance])
            if hint.plain:
                calls.append([f"h{number}", hint.plain, hint.plain_tolerance or tolerance])
        job = {"target": str(target), "variants": variants, "calls": calls}
        done = subprocess.run([sys.executable, "-c", _RUNNER], input=json.dumps(job), capture_output=True, text=True,
                              cwd=REPO, env=reference_env(), timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        report = iter(json.loads(done.stdout))
        for hint in hints:
            results[hint.id] = [next(report)] + ([next(report)] if hint.plain else [])
    return results


@pytest.mark.parametrize("module", GRADED, ids=lambda m: m.id)
def test_every_graded_module_has_its_claims_and_each_hint_sentence_is_one(module):
    found = hints_file(module.id)
    assert found is not None, (f"{module.id} is graded but tests/hints/ has no "
                               f"{module.id.lower().replace('.', '_')}.py with its chapter's claims")
    assert found.HINTS and all(hint.module == module.id for hint in found.HINTS)
    unclaimed = [sentence for sentence in hints_paragraph(module.id)
                 if sentence not in found.ADVICE and not any(flat(hint.says) in sentence for hint in found.HINTS)]
    assert unclaimed == [], (f"{module.id}'s **Hints.** sentences that no claim in tests/hints/ runs and that ADVICE "
                             f"does not list: {unclaimed}")
    stale = [advice for advice in found.ADVICE if advice not in hints_paragraph(module.id)]
    assert stale == [], f"ADVICE lists sentences {module.id}'s **Hints.** paragraph no longer holds: {stale}"


@pytest.mark.parametrize("hint", HINTS, ids=lambda hint: hint.id)
def test_the_hint_is_in_its_chapter(hint):
    assert flat(hint.says) in flat(section(hint.module, hint.section)), (
        f"{hint.module}'s section {hint.section} no longer says {hint.says!r}: update the claim's words in tests/hints/")


@pytest.mark.parametrize("hint", [hint for hint in HINTS if " => " in hint.mistake], ids=lambda hint: hint.id)
def test_the_hint_is_for_a_counted_mutant(hint):
    module, target = graded(hint.module)
    grading = module.grading
    mutants = build_mutant_set(target, REPO / grading.pitfalls, REPO / grading.equivalent)
    source = mistake_source(hint, target.read_text(encoding="utf-8"), {})
    assert source in {mutant.source for mutant in mutants.counted}, (
        f"{hint.mistake!r} is not a mutant the grader counts (mutmut does not generate it, or it is "
        "message-only or listed as equivalent)")


@pytest.mark.parametrize("hint", HINTS, ids=lambda hint: hint.id)
def test_the_input_tells_the_mistake_from_the_reference(hint, outcomes):
    call = outcomes[hint.id][0]
    assert call["differ"], (
        f"the hint {hint.says!r} suggests {hint.call}, but on the mistake it is for ({hint.mistake}) it gives "
        f"what the reference gives: {call['mistake']} vs {call['reference']}")
    if hint.plain:
        plain = outcomes[hint.id][1]
        assert not plain["differ"], (
            f"{hint.plain} catches {hint.mistake} ({plain['mistake']} vs {plain['reference']}), but the chapter says "
            f"(\"{hint.says}\") that it does not, or that the hint's twist is what catches it")


# Runs in a subprocess with the reference tree and course/tests on sys.path.  stdin: {"check": source
# defining check(implementation), "target", "variants": {label: source}}.  stdout: {label: [problems]}.
_ORACLE_RUNNER = r"""
import copy, importlib.util, json, math, sys, types, warnings
import numpy as np
from golden import load_fixture
from tinyllm.autograd.tensor import Tensor
from tinyllm.modern.rope import RopeSpec

job = json.load(sys.stdin)


def fixture(path):
    return load_fixture(path)


def model_answer(module_id):
    import tomllib
    with open("course/catalog.toml", "rb") as file:
        entry = next(m for m in tomllib.load(file)["module"] if m["id"] == module_id)
    folder = entry["grading"]["model_answer"]
    import pathlib
    (path,) = sorted(pathlib.Path(folder).glob("test_*.py"))
    spec = importlib.util.spec_from_file_location(f"model_answer_{module_id.replace('.', '_')}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load(label, source):
    module = types.ModuleType(f"oracle_{label}")
    module.__file__ = job["target"]
    sys.modules[module.__name__] = module
    exec(compile(source, f"{job['target']} ({label})", "exec"), module.__dict__)
    return module


namespace = dict(np=np, math=math, copy=copy, Tensor=Tensor, RopeSpec=RopeSpec, fixture=fixture,
                 model_answer=model_answer)
exec(compile(job["check"], "the chapter's oracle", "exec"), namespace)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    found = {label: namespace["check"](load(label, source)) for label, source in job["variants"].items()}
json.dump(found, sys.stdout)
"""


@pytest.mark.parametrize("module", GRADED, ids=lambda m: m.id)
def test_the_recommended_oracle_accepts_every_correct_implementation(module):
    oracle = hints_file(module.id).ORACLE
    for words in oracle.says:
        assert flat(words) in flat(section(module.id, 13)), f"{module.id}'s section 13 no longer says {words!r}"
    problems = {label: found for label, found in oracle_verdicts(module.id, oracle.check).items() if found}
    assert problems == {}, f"{module.id}'s recommended oracle, at its tolerance, rejects a correct implementation: {problems}"


def oracle_verdicts(module_id: str, check: str) -> dict[str, list[str]]:
    """{implementation: problems} of `check` (as Oracle.check) on the reference and the module's alternates."""
    module, target = graded(module_id)
    variants = {"reference": target.read_text(encoding="utf-8")}
    variants.update({path: (REPO / path).read_text(encoding="utf-8") for path in module.grading.alternates})
    job = {"check": check, "target": str(target), "variants": variants}
    done = subprocess.run([sys.executable, "-c", _ORACLE_RUNNER], input=json.dumps(job), capture_output=True,
                          text=True, cwd=REPO, env=reference_env(), timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def test_what_issue_30_found_false_in_l75_is_caught():
    """The two sentences L7.5's section 13 had, as claims, fail the checks above: "a test at positions
    0...S-1 with no cache cannot see pitfall a05" (the returned K sees it), and an oracle with its own
    float64 cos and sin of float32 angles, compared at atol 2e-6 (it rejects a correct implementation)."""
    from hints.l7_5 import ORACLE, call

    old_claim = [f"{call()}[1][0]", {"atol": 1e-9, "rtol": 0.0}]   # K at positions 0..4, no cache
    _, target = graded("L7.5")
    reference = target.read_text(encoding="utf-8")
    job = {"target": str(target), "variants": {"reference": reference,
                                              "a05": planted_mistakes("L7.5", reference)["a05"]},
           "calls": [["a05", *old_claim]]}
    done = subprocess.run([sys.executable, "-c", _RUNNER], input=json.dumps(job), capture_output=True, text=True,
                          cwd=REPO, env=reference_env(), timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout)[0]["differ"], "a test at positions 0..S-1 with no cache does see a05, in K"

    old_advice = ORACLE.check + '''
def check(implementation):
    problems = []
    for name, x, weights, spec, positions, n_kv, prefill in cases():
        if prefill is None:
            out, _ = implementation.attention(Tensor(x), *[Tensor(w) for w in weights], spec, positions, 4, n_kv)
            want = oracle(x, *weights, spec, positions, 4, n_kv, tables=own_tables(spec, positions))[0]
            if not np.abs(out.data - want).max() <= 2e-6:
                problems.append(name)
    return problems
'''
    rejected = oracle_verdicts("L7.5", old_advice)
    assert all(rejected.values()), f"the old advice should reject every correct implementation somewhere: {rejected}"
