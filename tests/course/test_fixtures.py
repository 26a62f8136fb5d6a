"""The golden fixture fixtures/L7.3/rope_hf.npz: its oracle reproduces it,
and the loader turns every kind of damage into a FixtureError that says how
to regenerate it.

Needs the oracle extra (torch, transformers); CI installs it, so nothing here skips.
"""

import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "fixtures" / "L7.3" / "rope_hf.npz"
ORACLE = REPO / "oracle" / "L7.3" / "rope_hf.py"
REGENERATE = "python oracle/L7.3/rope_hf.py"
MAX_BYTES = 5_000_000

sys.path.insert(0, str(REPO / "course" / "tests"))
from helpers.fixture_checks import provenance_of, raw_arrays  # noqa: E402
from golden import FixtureError, load_fixture  # noqa: E402


# ---- the oracle reproduces the committed fixture ---------------------------


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory) -> Path:
    """Run the real oracle script into a temporary folder (about 5 s)."""
    out = tmp_path_factory.mktemp("oracle")
    result = subprocess.run(
        [sys.executable, str(ORACLE), "--out", str(out)], capture_output=True, text=True, cwd=out
    )
    assert result.returncode == 0, f"{REGENERATE} --out {out} failed:\n{result.stdout}\n{result.stderr}"
    return out / FIXTURE.name


@pytest.mark.slow
def test_oracle_regenerates_the_committed_arrays_exactly(regenerated):
    committed, fresh = raw_arrays(FIXTURE), raw_arrays(regenerated)
    assert sorted(fresh) == sorted(committed), "the oracle now writes a different set of keys"
    changed = [
        key for key in committed
        if key != "__provenance__"
        and not (fresh[key].dtype == committed[key].dtype and np.array_equal(fresh[key], committed[key]))
    ]
    env = provenance_of(fresh)["environment"], provenance_of(committed)["environment"]
    assert not changed, (
        f"regenerating gives different values for {changed}; this machine's environment {env[0]} "
        f"vs the committed fixture's {env[1]}. If the change is intended, run {REGENERATE} and commit."
    )


@pytest.mark.slow
def test_oracle_regenerates_the_committed_provenance(regenerated):
    # "environment" (python, numpy, CPU) is recorded but not part of the fixture's identity;
    # the arrays' sha256 are, so this also catches a changed value.
    fresh, committed = provenance_of(raw_arrays(regenerated)), provenance_of(raw_arrays(FIXTURE))
    fresh.pop("environment")
    committed.pop("environment")
    assert fresh == committed


def test_fixture_is_under_5_mb():
    assert FIXTURE.stat().st_size < MAX_BYTES, f"{FIXTURE} is {FIXTURE.stat().st_size} bytes"


def test_provenance_names_the_pinned_versions():
    versions = load_fixture(FIXTURE).provenance["versions"]
    assert versions["transformers"] == "5.19.0"
    assert versions["torch"].split("+")[0] == "2.13.0"


def test_committed_fixture_loads_with_every_documented_key():
    fx = load_fixture(FIXTURE)
    assert fx["llama/cos"].shape == (len(fx["llama/positions"]), 32)
    assert fx["llama/positions"][-1] == 65535
    assert fx["qwen3/q"].shape[1] >= 2 and fx["qwen3/k"].shape[1] == 1
    docstring = ORACLE.read_text()
    undocumented = [key for key in fx if key not in docstring]
    assert not undocumented, f"keys missing from the docstring of {ORACLE.name}: {undocumented}"


# ---- the loader: damage becomes a FixtureError that names the fix ------------


def write_copy(tmp_path: Path, arrays: dict[str, np.ndarray]) -> Path:
    """Save arrays as tmp/fixtures/L7.3/rope_hf.npz, mirroring the repository layout."""
    path = tmp_path / "fixtures" / "L7.3" / FIXTURE.name
    path.parent.mkdir(parents=True)
    np.savez_compressed(path, **arrays)
    return path


def drop_key(arrays):
    del arrays["apply/q_out"]


def add_key(arrays):
    arrays["llama/extra"] = np.zeros(3, dtype=np.float32)


def change_shape(arrays):
    arrays["llama/cos"] = arrays["llama/cos"][:-1]


def change_dtype(arrays):
    arrays["llama/cos"] = arrays["llama/cos"].astype(np.float64)


def flip_a_byte(arrays):  # the provenance is left alone, so only the sha256 can tell
    raw = bytearray(arrays["meta/out"].tobytes())
    raw[100] ^= 0x01
    arrays["meta/out"] = np.frombuffer(bytes(raw), dtype=np.float32).reshape(arrays["meta/out"].shape)


def drop_provenance(arrays):
    del arrays["__provenance__"]


def garble_provenance(arrays):
    arrays["__provenance__"] = np.array("{not json")


@pytest.mark.parametrize(
    "damage, names",
    [
        (drop_key, ["'apply/q_out'", "missing"]),
        (add_key, ["'llama/extra'", "extra"]),
        (change_shape, ["'llama/cos'", "(4107, 32)", "(4108, 32)"]),
        (change_dtype, ["'llama/cos'", "float64", "float32"]),
        (flip_a_byte, ["'meta/out'", "sha256"]),
        (drop_provenance, ["__provenance__"]),
        (garble_provenance, ["__provenance__", "JSON"]),
    ],
)
def test_damaged_copy_raises_fixture_error(tmp_path, damage, names):
    arrays = raw_arrays(FIXTURE)
    damage(arrays)
    path = write_copy(tmp_path, arrays)
    with pytest.raises(FixtureError) as caught:
        load_fixture(path)
    message = str(caught.value)
    for expected in [str(path), REGENERATE, *names]:
        assert expected in message, f"{expected!r} not in the message:\n{message}"


@pytest.mark.parametrize(
    "content",
    [
        pytest.param(b"this is not a zip archive\n", id="not-a-zip"),
        pytest.param(FIXTURE.read_bytes()[:100_000], id="truncated"),
    ],
)
def test_unreadable_file_raises_fixture_error(tmp_path, content):
    path = tmp_path / "fixtures" / "L7.3" / FIXTURE.name
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    with pytest.raises(FixtureError) as caught:
        load_fixture(path)
    assert str(path) in str(caught.value) and REGENERATE in str(caught.value)


def test_corrupt_member_of_the_zip_raises_fixture_error(tmp_path):
    """A flipped byte inside a compressed member: zip's CRC or zlib catches it."""
    data = bytearray(FIXTURE.read_bytes())
    with zipfile.ZipFile(FIXTURE) as z:
        info = z.getinfo("llama/cos.npy")
    data[info.header_offset + 200] ^= 0xFF  # inside the member's compressed data
    path = tmp_path / "fixtures" / "L7.3" / FIXTURE.name
    path.parent.mkdir(parents=True)
    path.write_bytes(bytes(data))
    with pytest.raises(FixtureError) as caught:
        load_fixture(path)
    assert str(path) in str(caught.value) and REGENERATE in str(caught.value)


def test_missing_file_raises_fixture_error(tmp_path):
    path = tmp_path / "fixtures" / "L7.3" / FIXTURE.name
    with pytest.raises(FixtureError) as caught:
        load_fixture(path)
    assert "not found" in str(caught.value) and REGENERATE in str(caught.value)


def test_undamaged_copy_loads(tmp_path):
    """The round trip the damage tests rely on: an untouched copy passes."""
    path = write_copy(tmp_path, raw_arrays(FIXTURE))
    assert sorted(load_fixture(path)) == sorted(load_fixture(FIXTURE))
