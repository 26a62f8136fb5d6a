"""Kit tests of ol.core.student_kit: course/release.toml, written by ol
release, read back as written; a checkout without it withholds nothing; a
module is withheld while released without its solutions; a manifest that
cannot be read, or holds other than lists of ids, is an error that says how
to restore it, never a silent "not a kit"."""

from __future__ import annotations

import pytest

from ol.core.errors import OlError
from ol.core.student_kit import MANIFEST, Kit, read_kit, released, withheld, write_manifest


@pytest.fixture
def kit_root(tmp_path):
    (tmp_path / "course").mkdir()
    return tmp_path


def test_a_manifest_reads_back_as_written_and_says_what_is_withheld(kit_root):
    write_manifest(kit_root, Kit(released=("L7.3", "L7.4"), solutions=("L7.3",)))
    assert read_kit(kit_root) == Kit(("L7.3", "L7.4"), ("L7.3",))
    assert withheld(kit_root) == ("L7.4",)
    assert released(kit_root, "L7.3") and released(kit_root, "L7.4") and not released(kit_root, "L7.5")


def test_a_checkout_without_a_manifest_withholds_nothing(kit_root):
    assert read_kit(kit_root) is None and withheld(kit_root) == () and not released(kit_root, "L7.3")


@pytest.mark.parametrize("text", ['released = "L7.3"\n', "released = [3]\n", "released = [\n"])
def test_a_manifest_that_cannot_be_read_says_how_to_restore_it(kit_root, text):
    (kit_root / MANIFEST).write_text(text)
    with pytest.raises(OlError, match=f"git checkout -- {MANIFEST}"):
        read_kit(kit_root)
