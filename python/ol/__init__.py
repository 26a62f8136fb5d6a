"""ol: the tinyllm course runner.

The CLI (`./ol`, cli.py) is thin: it parses arguments and prints. The work
is done by plain functions that tests and the grader call directly.

Every module and folder of the package, by who uses it (a kit test,
tests/test_package_map.py, holds this map against the folder, both ways):

What students run
    workspace.py             the student's tree: stubs and starter tests written, backups, the diff
    stubs.py                 a contract (.pyi) turned into the stub (.py) that `ol start` writes
    c_stubs.py               a C header turned into the stub .c that `ol start` writes
    code_only.py             source without docstrings and comments (`ol diff --code-only`)
    runner.py                a module's course tests, or the student's own, in a pytest subprocess
    watch.py                 `ol watch`: the tests again on every save
    shell.py                 `ol shell`: Python with tinyllm as the module's tests see it
    native_build.py          a module's C files compiled into a shared library for a test run
    submit.py                `ol submit`: the archive a student hands in, checked as the grader takes it
    milestone/               a whole model on the student's library, against a golden run

What instructors run
    verify.py                `ol verify`: is a module sound
    release.py               `ol release`: the student kit, without the answers
    answer_scan.py           the scan of a kit for the functions of the answers
    kit_readme.py            the README of a student kit
    class_grading/           `ol grade` and `ol gradescope`: a class's submissions, graded

The grader (`ol check`, and the instructor's side through it)
    grading/                 a student's tests graded by mutation; its own map: grading/README.md
    witness_replay.py        for each broken version of a module, the one call that tells it from the right one
    pytest_call_recorder.py  pytest plugin: the course tests' calls, recorded and replayed on two versions
    call_recording.py        those calls: recorded from a module's public names, replayed and compared

What every command shares
    cli.py                   the command line: the parser, the verbs, the dispatch
    arguments.py             argument types and flags that more than one command takes
    catalog.py               the course catalog (course/catalog.toml): modules, needs, paths
    student_kit.py           is this checkout a student kit, and what does it hold back
    deps.py                  where a run's other modules come from: --ref-deps and --ref-unstarted
    overlay.py               the import hook that picks each module's source
    pytest_overlay.py        pytest plugin: installs the overlay from $OL_OVERLAY
    pytest_results.py        pytest plugin: writes per-test outcomes to $OL_RESULTS
    state.py                 progress per module (.ol/state.json) for `ol list`
    progress.py              a progress bar: one line on a terminal, redrawn in place
    files.py                 writing a file whole or not at all
    removal.py               removing a folder tree that a run may have shaped
    errors.py                the one exception type a command turns into a message and an exit code
    exits.py                 the exit codes of every command
"""
