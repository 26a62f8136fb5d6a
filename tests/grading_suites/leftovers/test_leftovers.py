"""What a run leaves that no run may find, and that the grader must clean
up however the run ended (tests/end_to_end/test_channels.py grades this suite confined
by uid).  Every test passes on every implementation: what they leave is the
point.

    a folder  its own temporary folder opened to every user, with a file in
              it, and a tree 1,100 folders deep (deeper than shutil.rmtree
              can remove: it recurses once a level)
    a look    the folder above its own, which must not list
    a process a grandchild in a session of its own, sleeping: it outlives
              its run's guard when the guard is killed
"""

import random
import typing

os_module = random._os
time_module = typing.sys.modules["time"]


def test_cannot_list_the_folder_of_the_runs_folders():
    mine = os_module.environ.get("TMPDIR", "/tmp")
    if mine == "/tmp":   # bubblewrap: the run's /tmp is a mount of its own, with nothing above it to see
        return
    try:
        names = os_module.listdir(os_module.path.dirname(mine))
    except PermissionError:
        return
    raise AssertionError(f"listed the other runs' folders: {names[:5]}")


def test_opens_its_own_folder_to_everyone():
    mine = os_module.environ.get("TMPDIR", "/tmp")
    os_module.chmod(mine, 0o755)
    fd = os_module.open(os_module.path.join(mine, "ol-opened-folder"), os_module.O_WRONLY | os_module.O_CREAT, 0o644)
    os_module.write(fd, b"left for another run")
    os_module.close(fd)


def test_builds_a_tree_deeper_than_rmtree_removes():
    here = os_module.getcwd()
    os_module.chdir(os_module.environ.get("TMPDIR", "/tmp"))
    try:
        for _ in range(1100):
            os_module.mkdir("d")
            os_module.chdir("d")
        fd = os_module.open("bottom", os_module.O_WRONLY | os_module.O_CREAT, 0o644)
        os_module.close(fd)
    finally:
        os_module.chdir(here)


def test_leaves_a_process_in_a_session_of_its_own():
    child = os_module.fork()
    if child == 0:
        try:
            os_module.setsid()
            if os_module.fork() == 0:
                time_module.sleep(600)
        finally:
            os_module._exit(0)
    os_module.waitpid(child, 0)
    time_module.sleep(2)   # long enough for tests/end_to_end/test_channels.py to kill this run's guard
