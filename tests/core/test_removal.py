"""Kit tests of ol.core.removal: remove_tree removes a tree however a run
shaped it (deeper than shutil.rmtree can recurse, unlistable folders, links
out of it) without following a link or raising, and says in one sentence
what it could not remove."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from helpers.forked import in_a_child
from ol.core.removal import remove_tree


def deep_tree(top, depth: int):
    """top/d/d/.../d (depth folders), a file at the bottom; made a level at a
    time by descriptor, as a run would (os.makedirs recurses too)."""
    os.mkdir(top)
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            below = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = below
        os.close(os.open("bottom.txt", os.O_WRONLY | os.O_CREAT, dir_fd=fd))
    finally:
        os.close(fd)


def test_a_tree_deeper_than_python_recurses_is_removed(tmp_path):
    depth = sys.getrecursionlimit() + 200
    deep_tree(tmp_path / "copy", depth)
    if sys.version_info < (3, 12, 4):              # shutil.rmtree recursed until CPython 3.12.4 (gh-89727)
        with pytest.raises(RecursionError):      # what the grader did before: the run's tree outlived it
            shutil.rmtree(tmp_path / "copy")
    assert remove_tree(tmp_path / "copy") is None  # (pytest's own clean-up of tmp_path would meet it too)
    deep_tree(tmp_path / "tree", depth)
    assert remove_tree(tmp_path / "tree") is None
    assert not (tmp_path / "tree").exists()


def test_links_are_removed_never_followed_and_unlistable_folders_are_entered(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("the grader's")
    tree = tmp_path / "tree"
    (tree / "locked" / "inner").mkdir(parents=True)
    (tree / "locked" / "inner" / "file.txt").write_text("x")
    (tree / "to-outside").symlink_to(outside)
    (tree / "locked" / "file-link").symlink_to(outside / "keep.txt")
    os.chmod(tree / "locked" / "inner", 0)
    os.chmod(tree / "locked", 0)
    assert remove_tree(tree) is None
    assert not tree.exists() and (outside / "keep.txt").read_text() == "the grader's"


def test_a_missing_path_is_nothing_to_do_and_a_file_is_removed(tmp_path):
    assert remove_tree(tmp_path / "never-was") is None
    (tmp_path / "one.txt").write_text("x")
    assert remove_tree(tmp_path / "one.txt") is None and not (tmp_path / "one.txt").exists()


def test_what_cannot_be_removed_is_said_not_raised():
    """A folder without write permission keeps its entries from its owner
    (root ignores the mode: there the case runs as the user nobody, in a
    folder of /var/tmp that user may reach)."""
    top = Path(tempfile.mkdtemp(prefix="ol-test-removal-", dir="/var/tmp"))
    top.chmod(0o777)

    def body() -> list:
        if os.geteuid() == 0:
            os.setgid(65534)
            os.setuid(65534)
        tree = top / "tree"
        (tree / "held").mkdir(parents=True)
        (tree / "held" / "file.txt").write_text("x")
        os.chmod(tree / "held", 0o500)
        said = remove_tree(tree)
        left = (tree / "held" / "file.txt").exists()
        os.chmod(tree / "held", 0o700)
        return [said, left]

    try:
        said, left = in_a_child(body)
        assert said is not None and "file.txt" in said and left, (said, left)
    finally:
        assert remove_tree(top) is None
