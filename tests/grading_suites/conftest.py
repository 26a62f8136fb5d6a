# Student-style suites that the kit's tests grade with ol check
# (tests/grading/test_check.py, tests/end_to_end/test_trust.py); they are data, not kit tests.
# Every entry here is ignored, folders included, so that pytest never imports
# a suite's files or its conftest.py into the kit's own process: the cheats
# patch os.waitpid and friends at import, which would corrupt every later
# subprocess's exit code.  Grade one with ./ol check MODULE --ref-deps --tests DIR.
collect_ignore_glob = ["*"]
