"""tinyllm: the library you build in this course, one module at a time.

`./ol start MODULE` writes the files of a module here as stubs; the reference
solutions live in course/reference/python/tinyllm with the same layout.
"""
