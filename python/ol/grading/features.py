"""A floor per feature of the chapter: a suite that leaves something the
chapter teaches untested does not pass, whatever its overall score.

The catalog's [[module.grading.features]] (ol.core.catalog.Feature) say what a
module teaches as the calls that exercise it.  A counted mutant belongs to
the feature its witness's call is (ol.grading.witnesses: the smallest call
of the course tests on which it and the reference differ), so a mutant only
a call with a cache can show belongs to the cache, wherever in the code it
sits.  A mutant with no witness, or whose witness is no feature's, belongs
to none (it counts in the score like any other).

    needed = ceil(floor x counted)      met = caught >= needed

    features = feature_floors(grading.features, result.mutants)
    [feature_line(f) for f in features if not f["met"]]
    # ["the key/value cache (attention called with past): 7 of 22 caught (at least 11 needed)"]
"""

from __future__ import annotations

import math


def feature_floors(features, mutants) -> list[dict]:
    """One entry per feature, in catalog order: {"id", "title", "share", "caught", "counted", "needed",
    "met"}.  mutants: MutantLine-likes with .feature and .killed."""
    entries = []
    for feature in features:
        mine = [m for m in mutants if m.feature == feature.id]
        caught = sum(bool(m.killed) for m in mine)
        needed = math.ceil(feature.floor * len(mine) - 1e-9)
        entries.append({"id": feature.id, "title": feature.title, "share": feature.floor, "caught": caught,
                        "counted": len(mine), "needed": needed, "met": caught >= needed})
    return entries


def feature_line(entry: dict) -> str:
    """A feature as every report says it."""
    return f"{entry['title']}: {entry['caught']} of {entry['counted']} caught (at least {entry['needed']} needed)"
