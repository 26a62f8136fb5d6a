# Honest student suites for L7.3 that tests/test_calibration.py grades with
# ol check; they are data for the grader, not kit tests.  The pattern matches
# the suite folders only, not the files inside them ("l7-3-suite-*" would match
# those too), so `pytest tests/calibration/l7-3-suite-a` still runs a suite.
collect_ignore_glob = ["l7-3-suite-?"]
