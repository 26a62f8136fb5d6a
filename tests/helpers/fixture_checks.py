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


# How far a regenerated array may move on another processor model, relative to
# the largest magnitude in the array.  Measured: SmolLM2's logits 1.9e-6, an
# attention output 2.1e-7 (kernels that sum in another order); every course
# test's tolerance is at least 2e-6 absolute on values of order 1 and more.
ANOTHER_CPU = 1e-5


def assert_regenerates_exactly(committed_path: Path, fresh_path: Path, command: str,
                               another_cpu_atol: float | None = None) -> None:
    """The fresh file holds the committed keys, every array equal in dtype and
    value, and the same provenance apart from "environment" (the machine's
    python, numpy and CPU are recorded, not part of the fixture's identity).

    Bit for bit on the processor model the fixture was made on (its
    environment's "cpu"); on another model (or a fixture that does not record
    one) float arrays may differ by ANOTHER_CPU of their largest magnitude, or
    by another_cpu_atol where the caller gives one, and every other array must
    still be equal."""
    committed, fresh = raw_arrays(committed_path), raw_arrays(fresh_path)
    assert sorted(fresh) == sorted(committed), "the oracle now writes a different set of keys"
    environments = provenance_of(fresh)["environment"], provenance_of(committed)["environment"]
    same_cpu = environments[0].get("cpu") is not None and environments[0].get("cpu") == environments[1].get("cpu")
    changed = [key for key in committed if key != "__provenance__"
               and not (fresh[key].dtype == committed[key].dtype and np.array_equal(fresh[key], committed[key]))]
    if not same_cpu:
        changed = [key for key in changed if not _close_on_another_cpu(fresh[key], committed[key], another_cpu_atol)]
    allowance = f"{ANOTHER_CPU:g} of their scale" if another_cpu_atol is None else f"{another_cpu_atol:g}"
    assert not changed, (
        f"regenerating {committed_path.name} changes {changed}"
        + ("" if same_cpu else f" by more than {allowance}") +
        f"; this machine {environments[0]} vs the committed {environments[1]}. "
        f"If the change is intended, run {command} and commit."
    )
    fresh_provenance, committed_provenance = provenance_of(fresh), provenance_of(committed)
    fresh_provenance.pop("environment")
    committed_provenance.pop("environment")
    if not same_cpu:   # the arrays' sha256 follow their values
        for provenance in (fresh_provenance, committed_provenance):
            provenance.pop("arrays", None)
    assert fresh_provenance == committed_provenance


def _close_on_another_cpu(fresh: np.ndarray, committed: np.ndarray, atol: float | None) -> bool:
    if fresh.dtype != committed.dtype or fresh.shape != committed.shape or fresh.dtype.kind not in "fc":
        return False
    fresh64, committed64 = fresh.astype(np.float64), committed.astype(np.float64)
    if not np.array_equal(np.isfinite(fresh64), np.isfinite(committed64)):
        return False
    finite = np.isfinite(committed64)
    scale = float(np.abs(committed64[finite]).max()) if finite.any() else 0.0
    allowed = ANOTHER_CPU * scale if atol is None else atol
    return bool(np.all(np.abs(fresh64[finite] - committed64[finite]) <= allowed))
