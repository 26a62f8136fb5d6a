# Honest student suites for L7.3 that tests/test_calibration.py grades with
# ol check; they are data for the grader, not kit tests.
collect_ignore_glob = ["l7-3-suite-*"]
