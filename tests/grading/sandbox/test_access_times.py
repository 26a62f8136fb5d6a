"""Kit tests of ol.grading.sandbox.access_times: what a run confined by uid may read
of the installation, and what each warm process primes before its first run."""

from __future__ import annotations

import os
import sysconfig

from ol.grading.sandbox.access_times import PACKAGE_FOLDERS, _walk, readable_system


def package_folders() -> set[str]:
    """Every folder of installed packages of this Python, and its base's."""
    found = set()
    for key in ("purelib", "platlib"):
        for base in {sysconfig.get_config_var("base"), sysconfig.get_config_var("installed_base")} - {None}:
            found.add(os.path.realpath(sysconfig.get_path(key, vars={"base": base, "platbase": base})))
    return {folder for folder in found if os.path.basename(folder) in PACKAGE_FOLDERS and os.path.isdir(folder)}


def test_no_readable_path_holds_a_folder_of_installed_packages():
    """The standard library holds site-packages in pyenv's and python.org's
    builds; granting it whole let a run read every package installed, and
    made each warm process prime all of them (102,000 entries here, 2.3 s).
    A run reads the packages this process imported, each on its own."""
    readable = readable_system()
    assert package_folders(), "this Python has a folder of installed packages"
    for folder in package_folders():
        holding = [path for path in readable if path == folder or folder.startswith(path + os.sep)]
        assert not holding, f"{holding} holds {folder}: a run could read every installed package"
    for module in (os, sysconfig):
        file = os.path.realpath(module.__file__)
        assert any(file == path or file.startswith(path + os.sep) for path in readable), \
            f"{file}: the standard library is still readable"
    assert any(path.endswith(os.sep + "pytest") for path in readable), "an imported package is readable"


def test_the_prime_enters_a_folder_of_packages_only_through_an_imported_package():
    readable = readable_system()
    walked = {path for root in readable for path in _walk(root)}
    for folder in package_folders():
        entered = {path[len(folder) + 1:].split(os.sep)[0] for path in walked if path.startswith(folder + os.sep)}
        strangers = sorted(top for top in entered if os.path.join(folder, top) not in readable)
        assert not strangers, f"primed beneath {folder}, never imported here: {strangers[:10]}"
