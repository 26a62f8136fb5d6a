// tl_rope.h: the contract of L9.6, rotary position embeddings (RoPE) in C.
//
// One function, tl_rope_f32, rotates float32 head vectors exactly as the
// Python reference tinyllm.modern.rope.apply_rope does (L7.3), bit for bit
// when it is given the same cos and sin tables.
//
// The formula. Pair i of a row, (a, b), is rotated by the angle whose cosine
// and sine are c = cos[i] and s = sin[i]:
//
//     forward:  (a, b) -> (a*c - b*s,  a*s + b*c)      rotate by +angle
//     inverse:  (a, b) -> (a*c + b*s, -a*s + b*c)      rotate by -angle
//
// The inverse is the backward of the forward: a rotation is orthogonal, so
// the gradient is the upstream gradient rotated back. Every product and sum
// is one float32 operation, in the order written, with no fused multiply-add
// (compile with -ffp-contract=off), so the C and numpy round alike.
//
// Which entries form pair i is the layout (r = rotary_dim, h = r/2):
//
//     TL_ROPE_HALF         (a, b) = (x[i], x[i + h])    HF Llama, Qwen, GPT-NeoX
//     TL_ROPE_INTERLEAVED  (a, b) = (x[2i], x[2i + 1])  RoFormer, Meta's Llama
//
// Partial rotary: only the first r entries of a row rotate; entries
// r .. head_dim-1 are copied to out unchanged.
//
// Shapes (row-major, contiguous, float32):
//
//     x, out      (n, head_dim)   n = row_shape[0] * ... * row_shape[ndim-1]
//     cos, sin    (T, h)          T table rows, h = rotary_dim / 2 entries each
//
// Which table row rotates which row of x. Write row i of x as the row-major
// index (i_0, ..., i_{ndim-1}) into row_shape; its table row is
//
//     t(i) = i_0 * table_stride[0] + ... + i_{ndim-1} * table_stride[ndim-1]
//
// A stride of 0 shares one table row along that axis, as numpy broadcasting
// does. Examples, for x of shape (B, H, S, head_dim), so n = B*H*S:
//
//     tables (S, h), one row per position, shared by all B*H heads:
//         ndim = 2, row_shape = {B*H, S},  table_stride = {0, 1}
//     tables (B, 1, S, h), per-sequence positions, shared by the H heads:
//         ndim = 3, row_shape = {B, H, S}, table_stride = {S, 0, 1}
//     tables (n, h), one row per row of x:
//         ndim = 1, row_shape = {n},       table_stride = {1}
//
// Every t(i) must be a row of the tables (0 <= t(i) < T); the caller
// guarantees it, since T is not passed.
//
// Memory. out == x is allowed (in place): read both members of a pair before
// writing either. Otherwise out must not overlap x. out must never overlap
// cos or sin: a table row is read again for every row of x that shares it,
// so writing out first would change the angles of later rows. x, cos and sin
// are only read, and may overlap one another. The function keeps no state
// between calls and rows are independent: a row's result does not depend on
// the other rows.
//
// Values. cos and sin are finite (no nan, no inf), as rope_cos_sin makes
// them and apply_rope requires. x may hold anything: nan, inf, -0.0 and
// subnormals go through the formula as float32 arithmetic takes them, and
// the tail x[r..] is copied bit for bit.
//
// The caller guarantees the memory and value rules above (the Python binding
// tinyllm.native checks them before it calls), as it guarantees t(i) < T:
// the function cannot see them and does not check them.
//
// Returns TL_ROPE_OK, or one of the error codes below, having written nothing.

#ifndef TL_ROPE_H
#define TL_ROPE_H

#include <stdint.h>

// layout
#define TL_ROPE_HALF 0
#define TL_ROPE_INTERLEAVED 1

// return codes
#define TL_ROPE_OK 0
#define TL_ROPE_ERR_NULL 1    // a pointer is NULL (row_shape and table_stride may be NULL when ndim == 0)
#define TL_ROPE_ERR_DIM 2     // head_dim < 2, or rotary_dim is odd, < 2 or > head_dim
#define TL_ROPE_ERR_LAYOUT 3  // layout is neither TL_ROPE_HALF nor TL_ROPE_INTERLEAVED
#define TL_ROPE_ERR_ROWS 4    // ndim < 0, or a row_shape or table_stride entry < 0

int tl_rope_f32(float *out,                // (n, head_dim), may be x itself, never overlaps cos or sin
                const float *x,            // (n, head_dim)
                const float *cos,          // (T, rotary_dim / 2)
                const float *sin,          // (T, rotary_dim / 2)
                int ndim,                  // how many axes row_shape has (0: one row)
                const int64_t *row_shape,  // (ndim,) the leading axes of x; their product is n
                const int64_t *table_stride,  // (ndim,) table rows per step along each axis
                int64_t head_dim,          // entries per row of x
                int64_t rotary_dim,        // r: even, 2 <= r <= head_dim
                int layout,                // TL_ROPE_HALF or TL_ROPE_INTERLEAVED
                int inverse);              // 0: rotate by +angle, 1: by -angle

#endif  // TL_ROPE_H
