"""How a golden fixture file is written and described: the plumbing that every
oracle script, oracle/<ID>/<name>.py, shares.

An oracle builds its arrays, describes them in a provenance dict, and writes
both into fixtures/<ID>/<name>.npz.  The provenance travels inside the file as
the entry "__provenance__": a 0-d unicode array holding JSON (so no pickle is
needed to read it), whose "arrays" table lists every other key with its shape,
dtype and sha256.  course/tests/golden.py, the loader, checks a fixture against
that table; this module writes what the loader reads.

The provenance is stored byte for byte, so the order of its fields matters;
each script therefore writes its own provenance dict, in its own order, from
the pieces here:

    import fixture_file

    FIXTURE = fixture_file.FixtureFile("fixtures/L7.3/rope_hf.npz", generator="oracle/L7.3/rope_hf.py")
    SEEDS = fixture_file.Seeds({"apply/q": 7301})

    def build():
        fixture_file.check_versions(FIXTURE, {"torch": torch.__version__})  # against pyproject's oracle pins
        arrays = {"apply/q": SEEDS.normal("apply/q", (2, 3, 5, 64)), ...}
        return fixture_file.with_provenance(arrays, {
            **FIXTURE.header(),                 # fixture, generator, command
            "versions": {...},
            "environment": fixture_file.environment(),
            "random": SEEDS.record(),
            "configs": {...},
        })                                      # then "arrays", appended last

    if __name__ == "__main__":
        fixture_file.main(FIXTURE, build, __doc__)

The oracle scripts run as files (python oracle/<ID>/<name>.py), not as a
package: each puts this folder, oracle/, on sys.path to import this module.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[1]
PROVENANCE_KEY = "__provenance__"  # the key course/tests/golden.py reads
ORACLE_INSTALL = "python -m pip install -e '.[oracle]'"  # installs the pins oracle_pins reads


class FixtureFile:
    """One golden fixture and the oracle script that writes it.

    path: the .npz file, relative to the repository (fixtures/<ID>/<name>.npz).
    generator: the script, relative to the repository (oracle/<ID>/<name>.py).
    command: how to run it from the repository root.
    """

    def __init__(self, path: str, generator: str):
        self.path = Path(path)
        self.generator = Path(generator)
        self.command = f"python {self.generator.as_posix()}"

    def header(self) -> dict[str, str]:
        """The first three fields of the provenance: fixture, generator, command."""
        return {"fixture": self.path.as_posix(), "generator": self.generator.as_posix(), "command": self.command}


class Seeds(dict):
    """Random input key -> its seed.  One seed per random array, so changing
    one input never shifts another."""

    GENERATOR = "numpy.random.default_rng(seed).standard_normal(shape, dtype=float32)"  # what normal() does

    def normal(self, key: str, shape: tuple[int, ...]) -> np.ndarray:
        """Standard normal float32 array for `key`, from its own seed."""
        return np.random.default_rng(self[key]).standard_normal(shape, dtype=np.float32)

    def record(self) -> dict:
        """The provenance's "random" field: how the inputs were drawn, and every seed."""
        return {"generator": self.GENERATOR, "seeds": dict(self)}


def sha256(array: np.ndarray) -> str:
    """Hex sha256 of the array's bytes in C order, as the loader computes it."""
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


def environment() -> dict[str, str]:
    """The provenance's "environment" field: python, numpy, the CPU architecture
    and the vector instructions torch uses on it.  Recorded for the record: the
    kit tests compare every other field of a regenerated provenance, not this one."""
    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "machine": platform.machine(),
        "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "cpu": cpu_model(),
    }


def cpu_model() -> str:
    """The processor's vendor, family, model and stepping as /proc/cpuinfo gives them:
    torch's float32 matmuls and reductions take a kernel per processor model, so
    two models give results a few units in the last place apart."""
    fields = {}
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if not line.strip():
                    break
                key, _, value = line.partition(":")
                fields[key.strip()] = value.strip()
    except OSError:
        return platform.processor() or "unknown"
    return " ".join(fields.get(k, "?") for k in ("vendor_id", "cpu family", "model", "stepping", "model name"))


def with_provenance(arrays: dict[str, np.ndarray], provenance: dict) -> dict[str, np.ndarray]:
    """The arrays plus their "__provenance__" entry, ready for write().

    provenance: the script's own fields, in the order they are to be stored; an
    "arrays" field (key -> shape, dtype and sha256) is appended after them.
    """
    table = {key: {"shape": list(a.shape), "dtype": a.dtype.str, "sha256": sha256(a)} for key, a in arrays.items()}
    described = {**provenance, "arrays": table}
    return {**arrays, PROVENANCE_KEY: np.array(json.dumps(described, indent=1))}  # 0-d unicode: no pickle needed


def write(arrays: dict[str, np.ndarray], path: Path) -> None:
    """savez_compressed into a temporary file, then rename: never a half-written fixture.
    numpy stamps every zip member 1980-01-01, so equal arrays give equal bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "wb") as f:
            np.savez_compressed(f, **arrays)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def oracle_pins(*names: str) -> dict[str, str]:
    """The oracle extra's pins in pyproject.toml for the named packages, in that
    order: oracle_pins("torch") == {"torch": "2.13.0"}."""
    with open(REPO / "pyproject.toml", "rb") as f:
        extra = tomllib.load(f)["project"]["optional-dependencies"]["oracle"]
    pins = dict(req.replace(" ", "").split("==", 1) for req in extra if "==" in req)
    return {name: pins[name] for name in names}


def check_versions(fixture: FixtureFile, installed: dict[str, str], pinned: dict[str, str] | None = None,
                   install: str = ORACLE_INSTALL) -> None:
    """Exit unless every pinned package is installed at its pin: the fixture
    records what the pinned versions compute.

    installed: package -> version, e.g. {"torch": torch.__version__}; a local
    label such as torch's "+cpu" is ignored.  pinned: package -> version; by
    default the oracle extra's pin of each installed package.  The message
    names each wrong package and the `install` command.
    """
    if pinned is None:
        pinned = oracle_pins(*installed)
    installed = {name: version.split("+")[0] for name, version in installed.items()}
    wrong = [f"{name} {installed[name]} (pinned {pin})" for name, pin in pinned.items() if installed[name] != pin]
    if wrong:
        sys.exit(
            f"{fixture.generator}: installed {', '.join(wrong)}. The fixture records what the pinned versions compute; "
            f"install them with: {install}"
        )


def main(fixture: FixtureFile, build: Callable[[], dict[str, np.ndarray]], doc: str,
         argv: list[str] | None = None) -> None:
    """An oracle script's command line: `[--out DIR]`.

    Calls build() for the arrays (with their provenance), writes them to
    DIR/<name>.npz, or by default over the committed fixture, and prints what it
    wrote.  doc: the script's docstring, whose first paragraph is the --help text.
    """
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--out", type=Path, metavar="DIR",
                        help=f"write DIR/{fixture.path.name} (default: rewrite {fixture.path} in the repository)")
    args = parser.parse_args(argv)
    path = (args.out / fixture.path.name) if args.out else REPO / fixture.path
    # One thread.  Measured on torch 2.13 (CPU, AVX512): the first float32 cos a
    # worker thread of torch's pool computes in a process is, in about one process
    # in two, off by up to 1.5e-4 at angles near 30000 rad, so the half of a
    # tensor that thread took differs from the same values in the main thread's
    # half.  A fixture must not depend on how a tensor was split among threads.
    torch.set_num_threads(1)
    arrays = build()
    write(arrays, path)
    size = path.stat().st_size
    shown = f"{size / 1e6:.2f} MB" if size >= 1e6 else f"{size / 1e3:.1f} kB"
    print(f"wrote {path} ({shown}, {len(arrays) - 1} arrays + {PROVENANCE_KEY})")
