"""Helpers shared by the kit's fixture tests: read a golden .npz as it is on
disk, run its oracle script, and check that it regenerates the committed file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np


def raw_arrays(path: Path) -> dict[str, np.ndarray]:
    """Every entry of an .npz, provenance included, without the loader's checks."""
    with np.load(path, allow_pickle=False) as npz:
        return {key: npz[key] for key in npz.files}


def provenance_of(arrays: dict[str, np.ndarray]) -> dict:
    """The decoded "__provenance__" entry."""
    return json.loads(str(arrays["__provenance__"][()]))


def run_oracle(oracle: Path, out: Path, repo: Path) -> None:
    """python <oracle> --out <out>, which must succeed (CI installs what the oracles need: .ci/run)."""
    run = subprocess.run([sys.executable, str(oracle), "--out", str(out)], capture_output=True, text=True, cwd=out)
    assert run.returncode == 0, (
        f"python {oracle.relative_to(repo)} --out {out} failed (CI installs what it needs: .ci/run):\n"
        f"{run.stdout}\n{run.stderr}"
    )


def assert_regenerates_exactly(committed_path: Path, fresh_path: Path, command: str) -> None:
    """The fresh file holds the committed keys, every array equal in dtype and
    value, and the same provenance apart from "environment" (the machine's
    python, numpy and CPU are recorded, not part of the fixture's identity)."""
    committed, fresh = raw_arrays(committed_path), raw_arrays(fresh_path)
    assert sorted(fresh) == sorted(committed), "the oracle now writes a different set of keys"
    changed = [key for key in committed if key != "__provenance__"
               and not (fresh[key].dtype == committed[key].dtype and np.array_equal(fresh[key], committed[key]))]
    environments = provenance_of(fresh)["environment"], provenance_of(committed)["environment"]
    assert not changed, (
        f"regenerating {committed_path.name} changes {changed}; this machine {environments[0]} vs the committed "
        f"{environments[1]}. If the change is intended, run {command} and commit."
    )
    fresh_provenance, committed_provenance = provenance_of(fresh), provenance_of(committed)
    fresh_provenance.pop("environment")
    committed_provenance.pop("environment")
    assert fresh_provenance == committed_provenance
