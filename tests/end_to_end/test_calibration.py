"""Calibration of the mutation grader, for each graded module.

tests/calibration/<module>-suite-{a,b,c}/ are three honest student suites per
graded module, each written from the module's chapter (its interface,
graded-tests and pitfalls sections) and the contract alone, without looking at
the model answer, the mutants or the reference source:

  a  a careful student: parametrized fixed cases; bad input from the
     chapter's whole table of bad inputs
  b  a student who leans on hypothesis: properties and random inputs against
     an oracle; bad input from the graded-tests section's list
  c  a minimalist: one compact test per bullet of the graded-tests section

Each must pass `ol check` (score >= 0.80 and every pitfall caught).  A change
to the mutant set, the equivalent list, the pitfalls or the reference that
fails an honest suite shows up here, with the survivors to look at.

L7.3.  Status when written: a passes (183/223); b (169/223) and c (164/223)
fail.  Section 13 never asked for tests of RopeSpec, yet 45 of the 223 counted
mutants live in RopeSpec, so a suite that followed section 13's list could
reach at most 178/223 = 0.798.  Status after section 13 asked for RopeSpec
driving apply_rope, bad cases wrong in one way only, and the easy-to-forget
behaviour (dtype, default layout, position 0, a single pair), with each suite
updated to those asks only: a 223/223, b 219/223, c 217/223, every pitfall
caught by all three.

Status after issue 13 (the reference refuses what float32 cannot carry, 45
more counted mutants): unchanged, the suites scored a 241/268, b 238/268,
c 236/268, passing; after sections 6, 11 and 13 asked for float32's limits
and RopeSpec's own copy of inv_freq, with each suite updated from those asks
only: a 267/268, b 262/268, c 256/268, every pitfall caught by all three.

L7.4 (written after its section 13 listed every rule, edge and config shape
the mutants probe): a 474/474, b 472/474 (it never asks for a single pair, so
two mutants of the rotary-dim check survive), c 474/474; every pitfall caught
by all three.

L7.4 after issue 19 (a None field counts as absent; dynamic with a single
pair raises ValueError): 500 counted mutants (474 before; 33 message-only
and the same 5 equivalent set aside).  Unchanged, the suites score a 498/500,
b 492/500, c 498/500 (before: 474, 468 and 474 of 474), every pitfall caught:
each misses dynamic's new `r < 4` boundary (`r <= 4`, `r < 5`), which section
13 now asks for (two pairs are valid).  They pass, so they were not changed.

L7.5 (written from its chapter's sections 11, 13 and 14): a 206/206, b 205/206,
c 205/206, every pitfall caught by all three.  A weak suite beside them
(tests/grading_suites/l7-5-weak: multi-head attention only, positions from 0,
no cache) scores 174/206 = 0.84 and still fails: it misses pitfalls a04 and
a05, which only grouped heads and offset positions can show.  Unchanged once
the pitfalls were graded as chaffs around the reference (course/mutants/L7.5/
chaffs/): a 206/206, b 205/206, c 205/206, weak 174/206 missing a04 and a05.

After issue 19 gave each public function of the contract a floor (at least
half of its own counted mutants caught; course/catalog.toml's `floors`),
nothing changed for the honest suites: every one of them, and every model
answer, catches all of each public function's mutants (L7.3 rope_cos_sin
13/13, apply_rope 71/71, RopeSpec 58/58; L7.4 rope_parameters 54/54,
rope_spec 73/73; L7.5 attention 122/122, causal_mask 14/14), with the same
scores (L7.3 a 267, b 262, c 256 of 268; L7.4 a 498, b 492, c 498 of 500;
L7.5 a 206, b 205, c 205 of 206; each model answer all of them).  A suite of
rope_parameters oracle comparisons alone (tests/grading_suites/
l7-4-oracle-only: suite b without its rope_spec tests) scored 411/500 = 0.82
with every pitfall caught and passed; it now fails on rope_spec: 0 of 73
caught (at least 37 needed) (tests/grading/test_floors.py).  The weak L7.5 suite
catches 107/122 of attention and 12/14 of causal_mask: above its floors, it
still fails on a04 and a05 alone.

L7.4 after issue 31 (rope_spec reads one rope_parameters block per layer
type, Gemma 3's): 515 counted mutants (500 before).  Unchanged, graded in the
isolated mode, the suites score a 509/515, b 502/515, c 506/515 (before: 498,
492 and 498 of 500), every pitfall caught, rope_spec 79/79 (a) and 78/79 (b,
c): what they miss are the new mutants that break the detection of a nested
block, which only a config with one block per layer type can show; section 13
now asks for one.

L7.7 (written from its chapter's sections 11, 13 and 14): a 219/219, b 216/219,
c 215/219, every pitfall caught by all three, every public function at all of
its mutants (sliding_attention 118/118, window_mask 20/20, layer_settings
13/13).  A weak suite beside them (tests/grading_suites/l7-7-weak: its windows
are never smaller than what a call sees) scores 167/219 = 0.76 and misses
pitfalls w01 and w05, the window's edge and the cache that keeps and lets in
what the window no longer sees: it fails.
"""

from __future__ import annotations

import pytest

from helpers.classes import CALIBRATION as SUITES
from helpers.classes import SUITE_PREFIX
from helpers.kit import ROOT
from ol.grading.check import CheckRequest, check_module


@pytest.fixture(scope="module", params=[(m, s) for m in SUITE_PREFIX for s in "abc"], ids=lambda p: f"{p[0]}-{p[1]}")
def graded(request):
    module, suite = request.param
    folder = SUITES / f"{SUITE_PREFIX[module]}{suite}"
    return f"{module} {suite}", check_module(ROOT, module, CheckRequest(tests=folder, course_tests=False, fresh=True))


def test_every_graded_module_has_three_honest_suites():
    from ol.core.catalog import load_catalog

    graded_modules = [m.id for m in load_catalog(ROOT).modules if m.grading]
    assert sorted(SUITE_PREFIX) == sorted(graded_modules)
    for prefix in SUITE_PREFIX.values():
        assert all((SUITES / f"{prefix}{suite}").is_dir() for suite in "abc"), prefix


def explain(name, r) -> str:
    lines = [f"honest suite {name} fails ol check"]
    if r.reason:
        lines.append(f"stopped early: {r.reason}")
        lines += [f"  {p}" for p in r.problems]
    else:
        lines.append(f"score {r.score:.4f} = {r.killed}/{r.counted} (threshold {r.threshold}); excluded {r.excluded}")
    missed = [f"{p.id} ({p.misconception})" for p in r.pitfalls if not p.killed]
    lines.append(f"surviving pitfalls: {missed or 'none'}")
    below = [f"{f['function']}: {f['caught']} of {f['counted']} caught (at least {f['needed']} needed)"
             for f in r.floors if not f["met"]]
    lines.append(f"public functions below their floor: {below or 'none'}")
    lines.append(f"{len(r.survivors)} surviving mutants:")
    for s in r.survivors:
        lines.append(f"--- {s.id} in {s.function}")
        lines.append(s.diff.rstrip())
    return "\n".join(lines)


@pytest.mark.needs_confinement
def test_honest_student_passes_ol_check(graded):
    name, r = graded
    passed = r.passed is True
    assert passed, explain(name, r)


# A weak suite of a module, and the pitfalls it cannot see: it must fail on exactly those.
WEAK = {"attention-misses-a04-a05": ("L7.5", "l7-5-weak", ["a04", "a05"]),
        "window-never-hides-a-key": ("L7.7", "l7-7-weak", ["w01", "w05"])}


@pytest.mark.needs_confinement
@pytest.mark.parametrize("weak", WEAK)
def test_a_weak_suite_fails_on_exactly_the_pitfalls_it_cannot_see(weak):
    module, folder, blind_to = WEAK[weak]
    r = check_module(ROOT, module, CheckRequest(tests=ROOT / "tests" / "grading_suites" / folder,
                                                course_tests=False, fresh=True))
    missed = sorted(p.id for p in r.pitfalls if not p.killed)
    assert r.reason is None and r.passed is False and missed == blind_to, (
        f"the weak suite must fail on exactly {' and '.join(blind_to)}; got passed={r.passed}, missed {missed}, "
        f"score {r.killed}/{r.counted}, reason {r.reason}")
