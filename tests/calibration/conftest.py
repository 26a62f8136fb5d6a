# Honest student suites (L7.3, L7.4) that tests/end_to_end/test_calibration.py grades with
# ol check; they are data for the grader, not kit tests.  The pattern matches
# the suite folders only, not the files inside them ("l7-?-suite-*" would match
# those too), so `pytest tests/calibration/l7-3-suite-a` still runs a suite.
collect_ignore_glob = ["l7-?-suite-?"]
