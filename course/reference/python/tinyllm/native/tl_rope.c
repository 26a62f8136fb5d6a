// L9.6 reference: rotary position embeddings in C. The contract, with the
// shapes, layouts and return codes, is course/contracts/c/tl_rope.h.
//
// Pair (a, b) is rotated by the angle whose cosine and sine are (c, s):
//     (a, b) -> (a*c - b*s, a*s + b*c)
// and the inverse rotates by minus the angle, which is the same formula with
// s replaced by -s (negating a float is exact, so this costs no accuracy).

#include <string.h>

#include "tl_rope.h"

// half layout: pair i is (x[i], x[i + h])
static void rotate_half(float *out, const float *x, const float *cos, const float *sin,
                        int64_t h, float sign) {
    // out and x are (2h,) here, the rotated part of one row; cos and sin are (h,)
    for (int64_t i = 0; i < h; i++) {
        const float a = x[i], b = x[i + h];
        const float c = cos[i], s = sign * sin[i];
        out[i] = a * c - b * s;
        out[i + h] = a * s + b * c;
    }
}

// interleaved layout: pair i is (x[2i], x[2i + 1])
static void rotate_interleaved(float *out, const float *x, const float *cos, const float *sin,
                               int64_t h, float sign) {
    for (int64_t i = 0; i < h; i++) {
        const float a = x[2 * i], b = x[2 * i + 1];
        const float c = cos[i], s = sign * sin[i];
        out[2 * i] = a * c - b * s;
        out[2 * i + 1] = a * s + b * c;
    }
}

// The table row of row i of x: i written as a row-major index into row_shape,
// dotted with table_stride.
static int64_t table_row(int64_t i, int ndim, const int64_t *row_shape, const int64_t *table_stride) {
    int64_t t = 0;
    for (int d = ndim - 1; d >= 0; d--) {
        t += (i % row_shape[d]) * table_stride[d];
        i /= row_shape[d];
    }
    return t;
}

int tl_rope_f32(float *out, const float *x, const float *cos, const float *sin,
                int ndim, const int64_t *row_shape, const int64_t *table_stride,
                int64_t head_dim, int64_t rotary_dim, int layout, int inverse) {
    // out and x are (n, head_dim); cos and sin are (T, h); row i of x uses table row t(i)
    if (!out || !x || !cos || !sin) return TL_ROPE_ERR_NULL;
    if (ndim > 0 && (!row_shape || !table_stride)) return TL_ROPE_ERR_NULL;
    if (head_dim < 2 || rotary_dim < 2 || rotary_dim > head_dim || rotary_dim % 2 != 0) return TL_ROPE_ERR_DIM;
    if (layout != TL_ROPE_HALF && layout != TL_ROPE_INTERLEAVED) return TL_ROPE_ERR_LAYOUT;
    if (ndim < 0) return TL_ROPE_ERR_ROWS;
    int64_t n = 1;  // rows of x
    for (int d = 0; d < ndim; d++) {
        if (row_shape[d] < 0 || table_stride[d] < 0) return TL_ROPE_ERR_ROWS;
        n *= row_shape[d];
    }

    const int64_t h = rotary_dim / 2;  // pairs per row
    const float sign = inverse ? -1.0f : 1.0f;
    for (int64_t i = 0; i < n; i++) {
        const int64_t t = table_row(i, ndim, row_shape, table_stride);
        const float *x_row = x + i * head_dim;
        float *out_row = out + i * head_dim;
        if (layout == TL_ROPE_HALF) {
            rotate_half(out_row, x_row, cos + t * h, sin + t * h, h, sign);
        } else {
            rotate_interleaved(out_row, x_row, cos + t * h, sin + t * h, h, sign);
        }
        // partial rotary: the tail passes through (memmove: out_row may be x_row)
        memmove(out_row + rotary_dim, x_row + rotary_dim, (size_t)(head_dim - rotary_dim) * sizeof(float));
    }
    return TL_ROPE_OK;
}
