"""The course's GGUF header reader (course/reference/python/tinyllm/checkpoints/
gguf_file.py) against gguf==0.19.0's GGUFReader, the reader transformers
uses, on both real checkpoints the milestones run: the same metadata (keys in
file order, values and their Python types) and the same tensors (names,
types, and the stored bytes each dequantizes from, viewed alike).  A bad
file gets an error that names it."""

from __future__ import annotations

import numpy as np
import pytest

from helpers.reference import reference_modules

gguf, gemma3_gguf, gguf_file = reference_modules(
    "tinyllm.checkpoints.gguf", "tinyllm.checkpoints.gemma3_gguf", "tinyllm.checkpoints.gguf_file")

pytestmark = pytest.mark.slow   # reads both checkpoints with GGUFReader: about 12 s

CHECKPOINTS = {"SmolLM2-135M": gguf.smollm2_path, "Gemma 3 270M": gemma3_gguf.gemma3_270m_path}


@pytest.mark.parametrize("name", CHECKPOINTS)
def test_the_header_reader_reads_what_gguf_reads(name):
    from gguf import GGUFReader

    path = CHECKPOINTS[name]()
    ours, theirs = gguf_file.GGUFFile(path), GGUFReader(path)
    keys = [key for key in theirs.fields if not key.startswith("GGUF.")]   # GGUFReader's own header fields
    assert list(ours.metadata) == keys
    for key in keys:
        expected = theirs.fields[key].contents()
        assert ours.metadata[key] == expected and type(ours.metadata[key]) is type(expected), key
    assert list(ours.tensors) == [t.name for t in theirs.tensors]
    for stored in theirs.tensors:
        mine = ours.tensors[stored.name]
        assert mine.tensor_type == stored.tensor_type, stored.name
        assert mine.shape == tuple(reversed(stored.shape.tolist())), stored.name
        assert mine.data.dtype == stored.data.dtype and mine.data.shape == stored.data.shape, stored.name
        assert np.array_equal(mine.data, stored.data), stored.name
        assert not mine.data.flags.writeable, "the map is read-only: no tensor can change the file"
    ours.release()   # the pages leave this process; a read maps them again, the same bytes
    for stored in theirs.tensors[:: max(1, len(theirs.tensors) // 8)]:
        assert np.array_equal(ours.tensors[stored.name].data, stored.data), f"{stored.name} after release()"


def test_a_file_that_is_not_gguf_is_named(tmp_path):
    bad = tmp_path / "model.gguf"
    bad.write_bytes(b"GGML" + bytes(60))
    with pytest.raises(ValueError, match=r"model\.gguf is not a GGUF file"):
        gguf_file.GGUFFile(bad)
    bad.write_bytes(b"GGUF" + (7).to_bytes(4, "little") + bytes(16))
    with pytest.raises(ValueError, match=r"model\.gguf is GGUF version 7"):
        gguf_file.GGUFFile(bad)
