"""What students run (the package's map: ol/__init__.py).

    workspace.py             the student's tree: stubs and starter tests written, backups, the diff
    stubs.py                 a contract (.pyi) turned into the stub (.py) that `ol start` writes
    c_stubs.py               a C header turned into the stub .c that `ol start` writes
    code_only.py             source without docstrings and comments (`ol diff --code-only`)
    runner.py                a module's course tests, or the student's own, in a pytest subprocess
    watch.py                 `ol watch`: the tests again on every save
    shell.py                 `ol shell`: Python with tinyllm as the module's tests see it
    native_build.py          a module's C files compiled into a shared library for a test run
    submit.py                `ol submit`: the archive a student hands in, checked as the grader takes it
    milestone/               `ol milestone`: a whole model on the student's library, against a golden run
"""
