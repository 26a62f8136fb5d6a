"""The grader's processes and their confinement: where a run of untrusted
code happens and what holds it (the process model: ../README.md).

Inside a sandbox, trusted code that forks and watches the runs:

    warm.py               the warm process: its setup, the loop that starts each run (beside it, or below a guard)
    roles.py              what a run does by role: the tests' side (a suite) and the implementation's (a variant)
    reporter.py           the warm process's parent: reaps, stops and reports the runs cloned beside it
    clone.py              clone3 straight into namespaces, the C library's thread block kept right
    collector.py          the shared check's collect-once loop, inside a confined run

What holds a run:

    confine.py            bubblewrap, namespaces, the run's user and limits; the three modes; forking a confined run
    syscalls.py           the seccomp filter every run gets; its fresh session keyring
    landlock.py           what a run confined by uid may read and write
    access_times.py       no read leaves a mark: what a run may read, read once or set ahead; mounts
    memory.py             the memory bound per run: a cgroup, or processes x address space

The observer's side of each sandbox:

    warm_link.py          one warm process's sandbox, seen from the observer: started, set up, asked for runs
    collector_link.py     the observer's half of the collect-once protocol: the collected suite, seen from here

Nothing here decides a grade: what a run's notes and end mean is
ol.grading.protocol's and ol.grading.grader's.
"""
