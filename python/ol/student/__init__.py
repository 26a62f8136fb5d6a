"""What students run (the package's map: ol/__init__.py).

    start_cli.py             `ol start`: a module's stubs and test folder written, and what to do next
    tests_cli.py             `ol tests`: the course tests or the student's own, summed up and recorded
    diff_cli.py              `ol diff`: once the course tests pass, the student's code against the reference
    list_cli.py              `ol list`: every module and the student's state in it
    reset_cli.py             `ol reset`: a fresh stub after a backup; --remove: back to not started
    needs.py                 a module's needs as those verbs speak of them: unfinished, and where each comes from
    workspace.py             the student's tree: stubs and starter tests written, backups, the diff
    stubs.py                 a contract (.pyi) turned into the stub (.py) that `ol start` writes
    c_stubs.py               a C header turned into the stub .c that `ol start` writes
    code_only.py             source without docstrings and comments (`ol diff --code-only`)
    watch.py                 `ol watch`: the tests again on every save
    shell.py                 `ol shell`: Python with tinyllm as the module's tests see it
    submit.py                `ol submit`: the archive a student hands in, checked as the grader takes it
    milestone/               `ol milestone`: a whole model on the student's library, against a golden run
"""
