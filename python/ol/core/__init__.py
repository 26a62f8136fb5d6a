"""What every command shares (the package's map: ol/__init__.py).

    command.py               what every verb gets (Context) and how a command ends on SIGTERM (Terminated)
    arguments.py             argument types and flags that more than one command takes
    catalog.py               the course catalog (course/catalog.toml): modules, needs, paths
    student_kit.py           is this checkout a student kit, and what does it hold back
    deps.py                  where a run's other modules come from: --ref-deps and --ref-unstarted
    overlay.py               the import hook that picks each module's source
    pytest_overlay.py        pytest plugin: installs the overlay from $OL_OVERLAY
    pytest_results.py        pytest plugin: writes per-test outcomes to $OL_RESULTS
    pytest_hypothesis.py     pytest plugin: Hypothesis without its slow explain phase, for ol test's runs
    state.py                 progress per module (.ol/state.json) for `ol list`
    progress.py              a progress bar: one line on a terminal, redrawn in place
    files.py                 writing a file whole or not at all
    test_folder.py           a test folder as every reader takes it: its files, its test files (pytest's rule),
                             and its Snapshot, read once for a whole check
    runner.py                a module's course tests, or the student's own, in a pytest subprocess
    native_build.py          a module's C files compiled into a shared library for a test run
    archives.py              one entry of a class (folder, zip, tarball) read into memory within its limits
    submissions.py           the submissions of a class, or one student's: unique names, the files the catalog names
    screening.py             what can be said of a submission before it is graded (a missing or unparsable file)
    removal.py               removing a folder tree that a run may have shaped
    errors.py                the one exception type a command turns into a message and an exit code
    exits.py                 the exit codes of every command
"""
