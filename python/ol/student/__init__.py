"""What students run (the package's map: ol/__init__.py).

    workspace.py             the student's tree: stubs and starter tests written, backups, the diff
    stubs.py                 a contract (.pyi) turned into the stub (.py) that `ol start` writes
    c_stubs.py               a C header turned into the stub .c that `ol start` writes
    code_only.py             source without docstrings and comments (`ol diff --code-only`)
    watch.py                 `ol watch`: the tests again on every save
    shell.py                 `ol shell`: Python with tinyllm as the module's tests see it
    submit.py                `ol submit`: the archive a student hands in, checked as the grader takes it
    milestone/               `ol milestone`: a whole model on the student's library, against a golden run
"""
