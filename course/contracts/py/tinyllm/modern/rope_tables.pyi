"""L7.3x Shared RoPE tables: built once per model, then sliced or rebuilt.

Every attention block of a model turns its queries and keys with the same
cos/sin tables.  A *table provider* owns them: it builds them once and hands
every block the part it needs.  Nothing here rotates anything; the tables are
applied with tinyllm.modern.rope.apply_rope.

Every table is float32 with one column per pair (r/2 columns), like
rope_cos_sin's, and is computed with rope_cos_sin (one float32 product per
angle).  A provider's tables are read-only (array.setflags(write=False)):
every block shares the same array.  Chapter:
course/chapters/L7.3x-production-rope.md, sections 7 to 9.
"""

from __future__ import annotations

import numpy as np

from tinyllm.modern.rope import rope_cos_sin

FREQUENCIES = ("per_axis", "shared")


def rope_inv_freq(rotary_dim: int, theta: float = 10000.0) -> np.ndarray:
    """The frequency ladder theta ** (-2i / rotary_dim), i = 0 .. rotary_dim/2 - 1.

    rotary_dim: an even int >= 2 (r).
    theta: the base, a finite number > 0.

    Returns float32 [rotary_dim / 2], rounded as transformers 5.19.0 rounds it:
        exponent = float32(2i) / float32(r)              (float32 division)
        power    = theta ** exponent, computed in float64, rounded once to float32
        inv_freq = float32(1) / power                    (float32 division)
    This equals HF's Llama inv_freq (64, 1e4) bit for bit and Qwen3's (128,
    1e6) in 63 of 64 entries (torch's powf is 1 ulp off in the 64th).

    Raises:
        TypeError: rotary_dim is not an int (bools are not ints here); theta
            is not a real number.
        ValueError: rotary_dim is odd or < 2; theta is not finite or not > 0.
    """
    ...


class RopeTables:
    """The 1D table provider: cos and sin for positions 0 .. max_seq_len - 1,
    computed once, at construction, and shared.

    RopeTables(inv_freq, max_seq_len, attention_scaling=1.0)
        inv_freq: [r/2] frequencies (e.g. rope_inv_freq(r, theta)).  Keep a
            float32 copy in self.inv_freq; never change the caller's array.
        max_seq_len: an int >= 1.
        attention_scaling: multiplies both tables, as in rope_cos_sin.
    The tables are rope_cos_sin(np.arange(max_seq_len), inv_freq,
    attention_scaling), each [max_seq_len, r/2], stored read-only in self.cos
    and self.sin.  Also keep self.max_seq_len and self.attention_scaling.

    Raises (construction):
        TypeError: max_seq_len is not an int; ValueError: it is < 1.
        inv_freq and attention_scaling are checked by rope_cos_sin.
    """

    def __init__(self, inv_freq, max_seq_len: int, attention_scaling: float = 1.0):
        ...

    def __call__(self, seq_len: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(cos, sin): the whole tables for seq_len=None (the very arrays
        self.cos and self.sin); else their first seq_len rows, [seq_len, r/2],
        as views of the same memory (no copy, no recomputation).

        Raises:
            TypeError: seq_len is not an int or None.
            ValueError: seq_len < 0, or seq_len > max_seq_len: the message names
                both numbers and says to build the provider with a larger
                max_seq_len.
        """
        ...


def multi_axis_rope_cos_sin(positions, sections, theta: float = 10000.0, *, frequencies: str = "per_axis"):
    """cos and sin for tokens that have one position per axis (multi-axis
    RoPE; Qwen2-VL calls it M-RoPE).

    positions: integers >= 0 of shape [A, ...]: positions[a] holds every token's
        coordinate along axis a.  Qwen2-VL passes [3, B, S] (time, row,
        column); a grid (h, w) is [2, h, w].
    sections: A ints >= 1, the pairs of each axis, in order: pairs 0 ..
        sections[0]-1 turn with axis 0, the next sections[1] pairs with axis 1,
        and so on.  r = 2 * sum(sections).
    theta: the base of the ladders (rope_inv_freq's theta).
    frequencies (keyword only; default "per_axis"):
        "per_axis"  axis a uses its own ladder rope_inv_freq(2 * sections[a], theta).
        "shared"    one ladder rope_inv_freq(r, theta), cut into consecutive
                    pieces of sections[0], sections[1], ... frequencies.

    Returns (cos, sin), float32, shape positions.shape[1:] + (r/2,): the
    columns of section a are rope_cos_sin(positions[a], that section's
    frequencies), in the order of the sections.

    Raises:
        ValueError: sections is empty or holds an int < 1; positions.shape[0]
            != len(sections); frequencies is not "per_axis" or "shared";
            positions are negative or 2**24 or more (rope_cos_sin's checks).
        TypeError: sections is not a sequence of ints.
    """
    ...


def axial_rope_cos_sin(grid_shape, head_dim: int, theta: float = 10000.0) -> tuple[np.ndarray, np.ndarray]:
    """Axial 2D RoPE tables for an h x w grid of tokens, as NVIDIA physicsnemo
    2.2.2 builds them (build_axial_rope_cos_sin_2d).

    grid_shape: (h, w), two ints >= 1.
    head_dim: a positive multiple of 4.

    Returns (cos, sin), float32, each (h, w, head_dim/2):
        pairs 0 .. head_dim/4 - 1 turn with the row index i,
        pairs head_dim/4 .. head_dim/2 - 1 with the column index j,
        each axis on the ladder rope_inv_freq(head_dim/2, theta).
    This is multi_axis_rope_cos_sin on the stacked (row, column) indices with
    sections (head_dim/4, head_dim/4) and frequencies="per_axis".
    apply_rope(x, cos, sin, layout="interleaved") then equals physicsnemo's
    apply_rotary_pos_emb, for x of shape [..., h, w, head_dim].

    Raises:
        ValueError: head_dim is not a positive multiple of 4 (the message says
            why: half the channels per axis, then pairs within each half);
            grid_shape is not two ints >= 1.
        TypeError: head_dim is not an int.
    """
    ...


class AxialRopeTables:
    """The 2D table provider: axial tables for an h x w grid, built once and shared.

    AxialRopeTables(head_dim, grid_shape, theta=10000.0)
        Checks head_dim as axial_rope_cos_sin does (ValueError unless it is a
        positive multiple of 4) and builds the tables for grid_shape.
        Keeps self.head_dim, self.theta, self.grid_shape (a tuple (h, w)), and
        the read-only tables self.cos and self.sin, each (h, w, head_dim/2).
    """

    def __init__(self, head_dim: int, grid_shape, theta: float = 10000.0):
        ...

    def __call__(self, grid_shape=None) -> tuple[np.ndarray, np.ndarray]:
        """(self.cos, self.sin) for the current grid.  With a grid_shape that
        differs from self.grid_shape, first rebuild the tables for it and keep
        them (self.grid_shape becomes the new grid); the same grid returns
        the same arrays without rebuilding.

        Raises ValueError if grid_shape is not None and not two ints >= 1.
        """
        ...
