"""L7.3x Shared RoPE tables: built once per model, then sliced or rebuilt.

Every attention block of a model turns its queries and keys with the same
cos/sin tables.  A *table provider* owns them: it builds them once and hands
every block the part it needs, so a 32-block model holds one copy, not 32.
Nothing here rotates anything; apply the tables with
tinyllm.modern.rope.apply_rope.

    rope_inv_freq(rotary_dim, theta)            the frequency ladder, as HF computes it
    RopeTables(inv_freq, max_seq_len)           1D provider: positions 0 .. max_seq_len - 1
    multi_axis_rope_cos_sin(positions, sections, theta, frequencies=...)
                                                one position per axis (time, row, column, ...),
                                                the pairs split into one section per axis
    axial_rope_cos_sin(grid_shape, head_dim, theta)
                                                a 2D grid (h, w): physicsnemo's axial RoPE
    AxialRopeTables(head_dim, grid_shape, theta)
                                                2D provider; rebuilds for a new grid size

Every table is float32 with one column per pair (r/2 columns), like
rope_cos_sin's.  A provider's tables are read-only: every block shares the same
array, so a block that wrote into it would change the others.
"""

from __future__ import annotations

import numbers

import numpy as np

from tinyllm.modern.rope import rope_cos_sin

FREQUENCIES = ("per_axis", "shared")


def rope_inv_freq(rotary_dim: int, theta: float = 10000.0) -> np.ndarray:
    """The frequencies theta ** (-2i / rotary_dim), i = 0 .. rotary_dim/2 - 1:
    float32, shape [rotary_dim / 2].

    Rounded as transformers 5.19.0 rounds them: the exponent 2i/r in float32,
    the power rounded once to float32, then 1 / power in float32.  This gives
    HF's Llama inv_freq (r 64, theta 1e4) bit for bit and Qwen3's (r 128,
    theta 1e6) in 63 of 64 entries; the 64th is 1 ulp away, because torch's
    vectorised powf is itself 1 ulp off there.
    """
    r = _positive_even("rope_inv_freq", "rotary_dim", rotary_dim)
    theta = _theta("rope_inv_freq", theta)
    exponent = np.arange(0, r, 2, dtype=np.float32) / np.float32(r)  # [r/2]: 2i/r, float32 as HF
    power = (np.float64(theta) ** exponent.astype(np.float64)).astype(np.float32)  # theta^(2i/r)
    return np.float32(1.0) / power  # [r/2], float32


class RopeTables:
    """The 1D table provider: cos and sin for positions 0 .. max_seq_len - 1,
    computed once at construction and shared by every block.

    RopeTables(inv_freq, max_seq_len, attention_scaling=1.0)
        inv_freq: [r/2] frequencies (rope_inv_freq, or a scaled set such as YaRN's).
        max_seq_len: int >= 1, the number of positions the tables hold.
        attention_scaling: multiplies both tables, as in rope_cos_sin.

    tables() -> (cos, sin), the whole tables, [max_seq_len, r/2] float32.
    tables(seq_len) -> (cos[:seq_len], sin[:seq_len]): the leading positions, a
        view of the same memory (no copy, no recomputation).

    Attributes: inv_freq (float32), max_seq_len, attention_scaling, cos, sin.
    All arrays are read-only.
    """

    def __init__(self, inv_freq, max_seq_len: int, attention_scaling: float = 1.0):
        if not _is_int(max_seq_len) or max_seq_len < 1:
            raise _int_error("RopeTables", "max_seq_len", max_seq_len, "an int >= 1 (positions 0 .. max_seq_len - 1)")
        positions = np.arange(max_seq_len)  # [max_seq_len]
        cos, sin = rope_cos_sin(positions, inv_freq, attention_scaling)  # each [max_seq_len, r/2]
        self.inv_freq = _read_only(np.array(inv_freq, dtype=np.float32))  # a copy: the caller's stays writable
        self.max_seq_len = int(max_seq_len)
        self.attention_scaling = float(attention_scaling)
        self.cos, self.sin = _read_only(cos), _read_only(sin)

    def __call__(self, seq_len: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        if seq_len is None:
            return self.cos, self.sin
        if not _is_int(seq_len) or seq_len < 0:
            raise _int_error("RopeTables", "seq_len", seq_len, f"an int in 0..max_seq_len={self.max_seq_len}, or None")
        if seq_len > self.max_seq_len:
            raise ValueError(
                f"RopeTables: seq_len={seq_len} is past max_seq_len={self.max_seq_len}: the tables hold "
                f"positions 0..{self.max_seq_len - 1} only. Build the provider once with "
                f"max_seq_len >= {seq_len} (the longest sequence the model will see)."
            )
        return self.cos[:seq_len], self.sin[:seq_len]  # views: leading rows of the shared tables

    def __repr__(self) -> str:
        return (f"RopeTables(pairs={self.inv_freq.size}, max_seq_len={self.max_seq_len}, "
                f"attention_scaling={self.attention_scaling})")


def multi_axis_rope_cos_sin(positions, sections, theta: float = 10000.0, *, frequencies: str = "per_axis"):
    """cos and sin for tokens that have one position per axis (M-RoPE).

    positions: integers >= 0 of shape [A, ...]: positions[a] holds every
        token's coordinate along axis a (time, row, column, ...).  Qwen2-VL
        passes [3, B, S]; a grid (h, w) is [2, h, w].
    sections: A ints >= 1, pairs per axis, in order: pairs 0 .. sections[0]-1
        turn with axis 0, the next sections[1] pairs with axis 1, and so on.
        The rotary dimension is r = 2 * sum(sections).
    theta: the base of the frequency ladder.
    frequencies: how the pairs get their frequencies (keyword only):
        "per_axis"  (the default) each axis has its own ladder over its own pairs:
                    rope_inv_freq(2 * sections[a], theta).  physicsnemo's
                    axial 2D RoPE is this with two equal sections.
        "shared"    one ladder rope_inv_freq(r, theta) over all pairs, cut
                    into the sections: Qwen2-VL's M-RoPE (sections 16, 24, 24).

    Returns (cos, sin), float32, shape positions.shape[1:] + (r/2,):
        pair k of section a: cos(float32(positions[a]) * freq_k), one float32 product.
    With one axis, both modes give rope_cos_sin(positions[0], rope_inv_freq(r, theta)).
    Apply them with apply_rope; the layout decides which entries form pair k.
    """
    sections = _sections(sections)
    if frequencies not in FREQUENCIES:
        raise ValueError(
            f"multi_axis_rope_cos_sin: frequencies must be 'per_axis' (each axis its own ladder, "
            f"physicsnemo's axial RoPE) or 'shared' (one ladder cut into sections, Qwen2-VL's M-RoPE), "
            f"got {frequencies!r}"
        )
    positions = np.asarray(positions)
    if positions.ndim < 1 or positions.shape[0] != len(sections):
        raise ValueError(
            f"multi_axis_rope_cos_sin: positions must have one leading entry per axis, [A, ...] with "
            f"A = len(sections) = {len(sections)}; got shape {positions.shape}. For a grid (h, w) stack the "
            "row and column indices: np.stack(np.meshgrid(np.arange(h), np.arange(w), indexing='ij'))"
        )
    if frequencies == "per_axis":
        ladders = [rope_inv_freq(2 * n, theta) for n in sections]  # axis a: [sections[a]]
    else:
        ladder = rope_inv_freq(2 * sum(sections), theta)  # [r/2]
        ladders = np.split(ladder, np.cumsum(sections)[:-1])  # consecutive pieces of one ladder
    tables = [rope_cos_sin(positions[a], ladders[a]) for a in range(len(sections))]  # each [..., sections[a]]
    cos = np.concatenate([c for c, _ in tables], axis=-1)  # [..., r/2]
    sin = np.concatenate([s for _, s in tables], axis=-1)
    return cos, sin


def axial_rope_cos_sin(grid_shape, head_dim: int, theta: float = 10000.0) -> tuple[np.ndarray, np.ndarray]:
    """Axial 2D RoPE tables for an h x w grid of tokens, as NVIDIA physicsnemo
    builds them (build_axial_rope_cos_sin_2d).

    grid_shape: (h, w), ints >= 1.
    head_dim: divisible by 4: the first head_dim/4 pairs turn with the row
        index, the last head_dim/4 with the column index, each half with the
        ladder theta ** (-2k / (head_dim/2)), k = 0 .. head_dim/4 - 1.

    Returns (cos, sin), float32, shape (h, w, head_dim/2):
        cos[i, j, k] = cos(i * freq_k) for k < head_dim/4, cos(j * freq_(k - head_dim/4)) after.
    apply_rope(x, cos, sin, layout="interleaved") then equals physicsnemo's
    apply_rotary_pos_emb, which pairs adjacent channels (2k, 2k+1).
    Raises ValueError if head_dim is not a positive multiple of 4.
    """
    h, w = _grid("axial_rope_cos_sin", grid_shape)
    pairs_per_axis = _axial_pairs("axial_rope_cos_sin", head_dim)
    rows, cols = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")  # each [h, w]
    return multi_axis_rope_cos_sin(
        np.stack([rows, cols]), (pairs_per_axis, pairs_per_axis), theta, frequencies="per_axis"
    )  # each [h, w, head_dim/2]


class AxialRopeTables:
    """The 2D table provider: axial RoPE tables for an h x w token grid, built
    once and shared by every block.

    AxialRopeTables(head_dim, grid_shape, theta=10000.0)
        head_dim: divisible by 4 (ValueError otherwise).
        grid_shape: (h, w).

    tables() -> (cos, sin) for the current grid, each (h, w, head_dim/2), read-only.
    tables(grid_shape) -> the same for that grid: if it differs from the
        current one, the tables are rebuilt and kept (variable resolution at
        inference); the same grid returns the same arrays, with no work.

    Attributes: head_dim, theta, grid_shape (a tuple), cos, sin.
    """

    def __init__(self, head_dim: int, grid_shape, theta: float = 10000.0):
        _axial_pairs("AxialRopeTables", head_dim)  # fail here, not at the first call
        self.head_dim = int(head_dim)
        self.theta = float(_theta("AxialRopeTables", theta))
        self._build(grid_shape)

    def __call__(self, grid_shape=None) -> tuple[np.ndarray, np.ndarray]:
        if grid_shape is not None and _grid("AxialRopeTables", grid_shape) != self.grid_shape:
            self._build(grid_shape)
        return self.cos, self.sin

    def _build(self, grid_shape) -> None:
        cos, sin = axial_rope_cos_sin(grid_shape, self.head_dim, self.theta)  # each (h, w, head_dim/2)
        self.grid_shape = _grid("AxialRopeTables", grid_shape)
        self.cos, self.sin = _read_only(cos), _read_only(sin)

    def __repr__(self) -> str:
        return f"AxialRopeTables(head_dim={self.head_dim}, grid_shape={self.grid_shape}, theta={self.theta})"


# ---- validation: each helper names the argument and says what was expected ----


def _is_int(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def _int_error(where: str, name: str, value, expected: str) -> Exception:
    kind = TypeError if not _is_int(value) else ValueError
    return kind(f"{where}: {name} must be {expected}, got {value!r}")


def _positive_even(where: str, name: str, value) -> int:
    if not _is_int(value) or value < 2 or value % 2:
        raise _int_error(where, name, value, "an even int >= 2 (two entries per pair)")
    return int(value)


def _theta(where: str, theta) -> float:
    if not isinstance(theta, numbers.Real) or isinstance(theta, (bool, np.bool_)):
        raise TypeError(f"{where}: theta must be a number (the RoPE base, e.g. 10000.0), got {type(theta).__name__}")
    if not (np.isfinite(theta) and theta > 0):
        raise ValueError(f"{where}: theta must be a finite number > 0 (the RoPE base, e.g. 10000.0), got {theta}")
    return float(theta)


def _grid(where: str, grid_shape) -> tuple[int, int]:
    try:
        h, w = grid_shape
    except (TypeError, ValueError):
        raise ValueError(f"{where}: grid_shape must be (h, w), two ints >= 1, got {grid_shape!r}") from None
    if not (_is_int(h) and _is_int(w) and h >= 1 and w >= 1):
        raise ValueError(f"{where}: grid_shape must be (h, w), two ints >= 1, got {grid_shape!r}")
    return int(h), int(w)


def _axial_pairs(where: str, head_dim) -> int:
    if not _is_int(head_dim):
        raise TypeError(f"{where}: head_dim must be an int, got {type(head_dim).__name__}")
    if head_dim < 4 or head_dim % 4:
        raise ValueError(
            f"{where}: head_dim={head_dim} must be a positive multiple of 4 for axial 2D RoPE: half the "
            "channels turn with the row and half with the column, and each half is made of pairs "
            "(head_dim/4 pairs per axis). Choose a head_dim such as 16, 32 or 64."
        )
    return head_dim // 4


def _sections(sections) -> tuple[int, ...]:
    try:
        sections = tuple(sections)
    except TypeError:
        raise TypeError(f"multi_axis_rope_cos_sin: sections must be a sequence of ints, got {sections!r}") from None
    if not sections or not all(_is_int(n) and n >= 1 for n in sections):
        raise ValueError(
            f"multi_axis_rope_cos_sin: sections must be one int >= 1 per axis (pairs per axis), got {sections!r}"
        )
    return tuple(int(n) for n in sections)


def _read_only(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array
