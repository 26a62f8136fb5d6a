"""ol: the tinyllm course runner.

The CLI (`./ol`, ol/cli.py) is thin: it parses arguments and prints. The work
is done by plain functions that tests and the grader call directly:

    catalog.py          the course catalog (course/catalog.toml): modules, needs
    stubs.py            a contract .pyi turned into a stub .py
    workspace.py        the student's tree: start, reset (with backups), diff
    code_only.py        source without docstrings and comments (`ol diff --code-only`)
    state.py            progress per module (.ol/state.json) for `ol list`
    runner.py           runs course or student tests in a pytest subprocess
    watch.py, shell.py  `ol watch` (the tests again on each save), `ol shell` (Python
                        with tinyllm served as for the tests)
    overlay.py          the import hook that picks each module's source
    pytest_overlay.py   pytest plugin: installs the overlay from $OL_OVERLAY
    pytest_results.py   pytest plugin: writes per-test outcomes to $OL_RESULTS
"""
