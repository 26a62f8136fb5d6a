"""Mutation grading of a student's own tests (`ol check`) and the instructor's
checks of a graded module (`ol verify`).

README.md in this folder gives the process model and the threat model (who
is trusted, what is confined, what each confinement guarantees), and in its
"Architecture" section the map of this folder's files, one line each, with
the data path of one `ol check` told file by file.  A kit test holds that
map against the folder (tests/test_grading_architecture.py).
"""
