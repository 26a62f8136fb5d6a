"""pytest plugin: Hypothesis without its explain phase, for the runs of ol.core.runner.

When a property fails, Hypothesis shrinks the failing example, then in its
explain phase reruns the test on variations of it to say which of its parts
matter.  On a fresh stub every property fails, and the explain phase costs
3 to 7 s a test: L7.3x's 83 course tests on its stubs took 73 to 90 s, 11 s
without it.  What a student reads, the shrunk example, stays.

A test's own settings(phases=...) and pytest's --hypothesis-profile or
--hypothesis-explain still win.  ol check never loads this plugin: its runs
have a profile of their own (grading/pytest_driver.py's hypothesis_profile).
"""

from __future__ import annotations

PROFILE = "ol-runner"


def pytest_configure(config) -> None:
    if config.getoption("hypothesis_profile", None) or config.getoption("hypothesis_explain", False):
        return
    try:
        from hypothesis import Phase, settings
    except ImportError:   # a run with no Hypothesis test
        return
    settings.register_profile(PROFILE, phases=tuple(p for p in settings.default.phases if p is not Phase.explain))
    settings.load_profile(PROFILE)
