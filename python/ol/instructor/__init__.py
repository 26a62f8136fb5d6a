"""What instructors run (the package's map: ol/__init__.py).

    verify.py                `ol verify`: is a module sound
    release.py               `ol release`: the student kit, without the answers
    answer_scan.py           the scan of a kit for the functions of the answers
    kit_readme.py            the README of a student kit
    class_grading/           `ol grade` and `ol gradescope`: a class's submissions, graded
"""
