"""Grading a class: `ol grade` (a folder of submissions, on this machine or on
a Ray cluster) and `ol gradescope` (an autograder bundle).  Every grade is
`ol check MODULE --ref-deps`, isolated and confined, in a private copy of the
kit (python/ol/grading/README.md: the process and threat model).

    submissions.py   reading submissions safely: only the files the catalog names
    kit.py           the kit's files, and private copies of it
    one.py           grading one submission
    class_report.py  grades.csv, <student>.json, summary.md
    cluster.py       one submission as a Ray task
    cli.py           `ol grade`
    gradescope.py    `ol gradescope` and the autograder's run
"""
