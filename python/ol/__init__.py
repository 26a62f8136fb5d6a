"""ol: the tinyllm course runner.

The CLI (`./ol`, cli.py) is thin: it parses arguments and prints. The work
is done by plain functions that tests and the grader call directly.

The package is built in wings, by who uses them.  A wing imports from
core/ and from itself; student/ and instructor/ also call the grader.
Each wing's __init__.py is its own map, as this one is the package's (a
kit test, tests/test_package_map.py, holds every map against its folder,
both ways):

    cli.py          the command line: the parser, the one table of verbs, the dispatch
    core/           what every command shares: the catalog, the overlay, files, errors
    student/        what students run: start, tests, watch, shell, submit, milestones
    instructor/     what instructors run: verify, release, grade a class
    grading/        `ol check`: a student's tests graded by mutation; its own map: grading/README.md

The words the code uses, one meaning each (caught, kill, variant, outcome,
...): GLOSSARY.md here, held by tests/test_glossary.py.
"""
