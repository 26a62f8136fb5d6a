"""Grading a class: `ol grade` (a folder of submissions, on this machine or on
a Ray cluster) and `ol gradescope` (an autograder bundle).  Every grade is
`ol check MODULE --ref-deps`, isolated and confined, in a private copy of the
checkout (python/ol/grading/README.md: the process and threat model).  A
submission is read and screened as `ol submit` reads it (ol.core.submissions).

    checkout.py      the instructor's checkout: its files, private copies of it, its pitfall list
    processes.py     the checks a grading runs, all ended on an interrupt
    one.py           grading one submission; GradeRecord, the check's result and what a grade adds
    outcome.py       a record as the reports read it: status, reason, points (by attribute, never JSON keys)
    points.py        the points rule and the one rounding
    feedback.py      <student>.md, <student>.html, the --feedback levels
    class_report.py  grades.csv, <student>.json, summary.md
    gradebook.py     the manifest, deadlines, exports for Canvas and Moodle
    copies.py        submissions to look at (winnowed fingerprints)
    cluster.py       one submission as a Ray task
    grade_cli.py     `ol grade`
    pins.py          the exact versions an autograder installs
    gradescope.py    `ol gradescope` and the autograder's run
"""
