# Student-style suites that the kit's tests grade with ol check
# (tests/test_grading.py); they are data, not kit tests.
collect_ignore_glob = ["*/*.py"]
