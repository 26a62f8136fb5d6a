"""The course's variants reach the implementation's runs compiled (ol.grading.compiled):
the same code object the run would have compiled, never for a student's text."""

from __future__ import annotations

import marshal

from ol.core.overlay import Source, install_overlay, remove_overlay
from ol.grading.compiled import MAGIC, code_of, loaded
from ol.grading.variants import Variant

TEXT = "def twice(x):\n    return 2 * x\n\nLIMIT = 7\n"
ORIGIN = "python/tinyllm/modern/twice.py"


def test_the_kept_code_is_the_code_the_run_would_compile(tmp_path):
    entry = code_of(TEXT, ORIGIN, cache_dir=tmp_path)
    assert marshal.dumps(loaded(entry)) == marshal.dumps(compile(TEXT, ORIGIN, "exec", dont_inherit=True))
    assert len(list(tmp_path.iterdir())) == 1
    assert loaded(code_of(TEXT, ORIGIN, cache_dir=tmp_path)) is not None   # read back from memory or disk


def test_code_of_another_python_is_compiled_again():
    entry = dict(code_of(TEXT, ORIGIN), magic="0000" if MAGIC != "0000" else "ffff")
    assert loaded(entry) is None
    assert loaded({"code": "not base64 !", "magic": MAGIC}) is None
    assert loaded({}) is None


def test_only_the_courses_variants_are_compiled_by_the_observer():
    assert "code" in Variant("m1", TEXT, ORIGIN).request().source
    assert "code" not in Variant("student", TEXT, ORIGIN).request().source
    assert "code" not in Variant("m1", TEXT, ORIGIN, trusted=False).request().source


def test_a_module_loaded_from_its_code_shows_its_own_text():
    code = loaded(code_of(TEXT, ORIGIN))
    finder = install_overlay({"ol_compiled_probe": Source.from_text(TEXT, ORIGIN, code)})
    try:
        import ol_compiled_probe

        assert ol_compiled_probe.twice(4) == 8 and ol_compiled_probe.__file__ == ORIGIN
        import inspect

        assert inspect.getsource(ol_compiled_probe.twice).startswith("def twice(x):")
    finally:
        remove_overlay(finder)
