"""What the kit's tests share, apart from the tests themselves (tests/conftest.py
holds the hooks and fixtures):

    kit.py              a temporary checkout, and the real `./ol` run in it as a student would
    reference.py        the reference solutions imported in this process, through ol's overlay, and served to the grader's proxy
    fixture_checks.py   a golden .npz read as it is on disk, its oracle run, its file regenerated
    chapter_blocks.py   a chapter's code blocks, read by the convention test_chapters.py runs them by
    docker_default.py   a script: a command run as a grader runs in Docker's default security settings
    processes.py        what a check's runs leave: processes and files of the runs' users, read from /proc
    cheats.py           the attacks on the grader as test folders: the gallery of cheats, the channel attack
    sessions.py         grading sessions with a sample of the mutants; a warm check held equal to a cold one
    classes.py          a class of synthetic submissions for `ol grade`: paths, writers, renamed copies
    gradebooks.py       what Canvas and Gradescope read from ol's exports, as their importers read it
    forked.py           a function run in a forked child, for what a process cannot undo; its answer
"""
