"""A student suite with one blind spot, for the grader's kit tests.

It is the instructor's model answer with every angle made exact in float16
(frequencies are powers of two, positions are small), so angles computed in
half precision (pitfall s04) go unnoticed while every other fault is still
caught.  Derived from the model answer, so the two cannot drift apart; an
edit of the model answer that removes one of these lines fails loudly here.
"""

from __future__ import annotations

from pathlib import Path

MODEL_ANSWER = Path(__file__).resolve().parents[2] / "course/reference/python/tests/l7-3-rope/test_rope_oracle.py"

# (a line or lines of the model answer, what they become)
FLOAT16_EXACT = [
    ('LADDER = (1.0 / 10000 ** (np.arange(0, 8, 2) / 8)).astype(np.float32)  # r = 8\n',
     'LADDER = np.array([1.0, 0.5, 0.25, 0.125], np.float32)  # r = 8, exact in float16\n'),
    ('    positions = np.array([0, 1, 17, 4097, 65535])\n',
     '    positions = np.array([0, 1, 17, 40, 63])\n'),
    ('    positions = np.array([[0, 5, 9, 2], [65535, 3, 1000, 7]])  # [B, S]\n',
     '    positions = np.array([[0, 5, 9, 2], [63, 3, 48, 7]])  # [B, S]\n'),
    ('    positions = np.array(data.draw(st.lists(st.integers(0, 70000), min_size=seq, max_size=seq)))\n',
     '    positions = np.array(data.draw(st.lists(st.integers(0, 64), min_size=seq, max_size=seq)))\n'),
    ('    cos, sin = rope_cos_sin(1, [1.0, 0.01])\n',
     '    cos, sin = rope_cos_sin(1, [1.0, 0.5])\n'),
    ('    close(apply_rope(x, cos, sin).data, [0.540302, -0.010000, 0.841471, 0.999950], atol=1e-6)\n    close(apply_rope(x, cos, sin, "interleaved").data, [0.540302, 0.841471, -0.010000, 0.999950], atol=1e-6)\n',
     '    c1, s1, c2, s2 = np.cos(1.0), np.sin(1.0), np.cos(0.5), np.sin(0.5)\n    close(apply_rope(x, cos, sin).data, [c1, -s2, s1, c2], atol=1e-6)\n    close(apply_rope(x, cos, sin, "interleaved").data, [c1, s1, -s2, c2], atol=1e-6)\n'),
    ('    positions = np.array([0, 1, 2047, 2049, 40000, 65535])\n    freqs64 = 1.0 / 10000 ** (np.arange(0, 64, 2) / 64)  # float64 on purpose\n',
     '    positions = np.array([0, 1, 20, 33, 48, 64])\n    freqs64 = 2.0 ** -np.arange(8.0)  # float64 on purpose\n'),
    ('    assert cos.shape == (6, 32)\n',
     '    assert cos.shape == (6, 8)\n'),
    ('    positions, freqs = np.array([0, 3, 1000]), LADDER\n',
     '    positions, freqs = np.array([0, 3, 60]), LADDER\n'),
    ('        out = rope(x, [1, 9, 300, 65535], LADDER, layout).data\n',
     '        out = rope(x, [1, 9, 30, 64], LADDER, layout).data\n'),
    ('    freqs = (1.0 / 10000 ** (np.arange(0, 64, 2) / 64)).astype(np.float32)\n    q, k = rng.standard_normal(64), rng.standard_normal(64)\n',
     '    freqs = (2.0 ** -np.arange(8.0)).astype(np.float32)\n    q, k = rng.standard_normal(16), rng.standard_normal(16)\n'),
    ('        shifted = rope(q, 3007, freqs, layout).data @ rope(k, 3003, freqs, layout).data\n',
     '        shifted = rope(q, 57, freqs, layout).data @ rope(k, 53, freqs, layout).data\n'),
    ('    positions = np.array([1, 50, 65535])\n',
     '    positions = np.array([1, 50, 63])\n'),
    ('    cos, sin = rope_cos_sin([2, 40, 900], LADDER[:2])\n',
     '    cos, sin = rope_cos_sin([2, 40, 60], LADDER[:2])\n'),
    ('    positions = np.array([0, 12, 65535])\n',
     '    positions = np.array([0, 12, 63])\n'),
    ('    positions = np.array([0, 1, LAST_POSITION])\n    for freqs, scaling in [(LADDER, 1.0), ([FREQ_LIMIT, -FREQ_LIMIT, 1.0], 1.0),\n',
     '    positions = np.array([0, 1, 63])\n    for freqs, scaling in [(LADDER, 1.0), ([1024.0, -1024.0, 1.0], 1.0),\n'),
]


def write_float16_blind_suite(folder: Path) -> Path:
    """Write the suite into `folder` (created) and return the folder."""
    text = MODEL_ANSWER.read_text()
    for old, new in FLOAT16_EXACT:
        assert text.count(old) == 1, f"the model answer no longer holds exactly one {old!r}: update {__file__}"
        text = text.replace(old, new)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "test_rope_exact.py").write_text(text)
    return folder
