// A small C test driver for tl_rope_f32, meant to run under AddressSanitizer
// and UndefinedBehaviorSanitizer (tests/course/test_native.py builds and runs it):
//
//   cc -std=c99 -g -fsanitize=address,undefined -fno-omit-frame-pointer -ffp-contract=off
//      -I course/contracts/c course/reference/python/tinyllm/native/tl_rope.c
//      tests/native/test_tl_rope.c -lm -o test_tl_rope && ./test_tl_rope
//
// Every buffer is malloc'ed at its exact size, so a read or write one float
// past the end of x, out, cos or sin is a sanitizer report. The values are
// checked too: bitwise against the formula written out here in float, and
// within a tolerance against complex multiplication in double.
// Prints "OK ..." and exits 0, or prints the first failures and exits 1.

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tl_rope.h"

static int failures = 0;
static long checks = 0;

#define CHECK(cond, ...)                                       \
    do {                                                       \
        checks++;                                              \
        if (!(cond)) {                                         \
            if (failures++ < 10) {                             \
                fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
                fprintf(stderr, __VA_ARGS__);                  \
                fprintf(stderr, "\n");                         \
            }                                                  \
        }                                                      \
    } while (0)

// ---- small helpers ----

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static float uniform(void) {  // xorshift64*, in [-1, 1)
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    uint64_t r = rng_state * 0x2545F4914F6CDD1Dull;
    return (float)((double)(r >> 40) / (double)(1ull << 23) - 1.0);
}

static float *alloc_floats(int64_t n) {  // exactly n floats (at least 1 byte, so malloc(0) is never asked)
    float *p = malloc(n > 0 ? (size_t)n * sizeof(float) : 1);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    return p;
}

static int same_bits(float a, float b) {
    uint32_t ua, ub;
    memcpy(&ua, &a, sizeof ua);
    memcpy(&ub, &b, sizeof ub);
    return ua == ub;
}

// The table row of row i, written out independently of the kernel: an odometer
// over row_shape.
static void table_rows(int64_t *t_of_row, int64_t n, int ndim, const int64_t *row_shape,
                       const int64_t *table_stride) {
    int64_t index[8] = {0};
    for (int64_t i = 0; i < n; i++) {
        int64_t t = 0;
        for (int d = 0; d < ndim; d++) t += index[d] * table_stride[d];
        t_of_row[i] = t;
        for (int d = ndim - 1; d >= 0; d--) {
            if (++index[d] < row_shape[d]) break;
            index[d] = 0;
        }
    }
}

// ---- one case: random x and tables, every layout and direction, in and out of place ----

static void check_case(int64_t head_dim, int64_t rotary_dim, int ndim, const int64_t *row_shape,
                       const int64_t *table_stride, int64_t table_rows_count) {
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= row_shape[d];
    const int64_t h = rotary_dim / 2;
    float *x = alloc_floats(n * head_dim);
    float *out = alloc_floats(n * head_dim);
    float *back = alloc_floats(n * head_dim);
    float *inplace = alloc_floats(n * head_dim);
    float *cos_t = alloc_floats(table_rows_count * h);
    float *sin_t = alloc_floats(table_rows_count * h);
    int64_t *t_of_row = malloc((size_t)(n > 0 ? n : 1) * sizeof(int64_t));
    if (!t_of_row) exit(2);
    for (int64_t j = 0; j < n * head_dim; j++) x[j] = 4.0f * uniform();
    for (int64_t j = 0; j < table_rows_count * h; j++) {
        double angle = 3.14159265358979 * (double)uniform() * 8.0;
        cos_t[j] = (float)cos(angle);
        sin_t[j] = (float)sin(angle);
    }
    table_rows(t_of_row, n, ndim, row_shape, table_stride);

    for (int layout = 0; layout <= 1; layout++) {
        for (int inverse = 0; inverse <= 1; inverse++) {
            int rc = tl_rope_f32(out, x, cos_t, sin_t, ndim, row_shape, table_stride, head_dim, rotary_dim,
                                 layout, inverse);
            CHECK(rc == TL_ROPE_OK, "return code %d for head_dim %lld rotary_dim %lld", rc, (long long)head_dim,
                  (long long)rotary_dim);
            for (int64_t i = 0; i < n; i++) {
                const float *xr = x + i * head_dim, *orow = out + i * head_dim;
                const float *c = cos_t + t_of_row[i] * h, *s = sin_t + t_of_row[i] * h;
                for (int64_t k = 0; k < h; k++) {
                    int64_t ia = layout == TL_ROPE_HALF ? k : 2 * k;
                    int64_t ib = layout == TL_ROPE_HALF ? k + h : 2 * k + 1;
                    float a = xr[ia], b = xr[ib], sk = inverse ? -s[k] : s[k];
                    float want_a = a * c[k] - b * sk, want_b = a * sk + b * c[k];
                    CHECK(same_bits(orow[ia], want_a) && same_bits(orow[ib], want_b),
                          "row %lld pair %lld layout %d inverse %d: got (%.9g, %.9g), want (%.9g, %.9g)",
                          (long long)i, (long long)k, layout, inverse, orow[ia], orow[ib], want_a, want_b);
                    // independent oracle: (a + ib) * (c +- i s) in double
                    double re = (double)a * c[k] - (double)b * sk, im = (double)a * sk + (double)b * c[k];
                    double tol = 1e-6 * (fabs(a) + fabs(b) + 1.0);
                    CHECK(fabs(orow[ia] - re) <= tol && fabs(orow[ib] - im) <= tol,
                          "row %lld pair %lld: far from the complex product", (long long)i, (long long)k);
                }
                for (int64_t j = rotary_dim; j < head_dim; j++)
                    CHECK(same_bits(orow[j], xr[j]), "row %lld: tail entry %lld not copied", (long long)i,
                          (long long)j);
            }
            // in place gives the same bits as out of place
            memcpy(inplace, x, (size_t)(n * head_dim) * sizeof(float));
            rc = tl_rope_f32(inplace, inplace, cos_t, sin_t, ndim, row_shape, table_stride, head_dim, rotary_dim,
                             layout, inverse);
            CHECK(rc == TL_ROPE_OK, "in place: return code %d", rc);
            CHECK(memcmp(inplace, out, (size_t)(n * head_dim) * sizeof(float)) == 0,
                  "in place differs from out of place (head_dim %lld, layout %d)", (long long)head_dim, layout);
            // rotating back recovers x
            rc = tl_rope_f32(back, out, cos_t, sin_t, ndim, row_shape, table_stride, head_dim, rotary_dim, layout,
                             !inverse);
            CHECK(rc == TL_ROPE_OK, "back: return code %d", rc);
            for (int64_t j = 0; j < n * head_dim; j++)
                CHECK(fabsf(back[j] - x[j]) <= 1e-5f * (fabsf(x[j]) + 1.0f), "entry %lld not recovered: %g vs %g",
                      (long long)j, back[j], x[j]);
        }
    }
    free(x);
    free(out);
    free(back);
    free(inplace);
    free(cos_t);
    free(sin_t);
    free(t_of_row);
}

// ---- the worked example of the L7.3 chapter, section 3 ----

static void check_hand_example(void) {
    // head_dim = r = 4, inv_freq = (1, 0.01), position 1, x = (1, 0, 0, 1)
    const float x[4] = {1, 0, 0, 1};
    const float c[2] = {(float)cos(1.0), (float)cos(0.01)}, s[2] = {(float)sin(1.0), (float)sin(0.01)};
    const float want_half[4] = {0.540302f, -0.010000f, 0.841471f, 0.999950f};
    const float want_inter[4] = {0.540302f, 0.841471f, -0.010000f, 0.999950f};
    float out[4];
    CHECK(tl_rope_f32(out, x, c, s, 0, NULL, NULL, 4, 4, TL_ROPE_HALF, 0) == TL_ROPE_OK, "hand example, half");
    for (int j = 0; j < 4; j++) CHECK(fabsf(out[j] - want_half[j]) < 1e-6f, "half [%d]: %f", j, out[j]);
    CHECK(tl_rope_f32(out, x, c, s, 0, NULL, NULL, 4, 4, TL_ROPE_INTERLEAVED, 0) == TL_ROPE_OK, "hand, inter");
    for (int j = 0; j < 4; j++) CHECK(fabsf(out[j] - want_inter[j]) < 1e-6f, "interleaved [%d]: %f", j, out[j]);
}

// ---- bad arguments: the right code, and nothing written ----

static void check_errors(void) {
    float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, out[8], c[2] = {1, 1}, s[2] = {0, 0};
    const int64_t shape[1] = {2}, stride[1] = {0}, negative[1] = {-1};
    struct {
        int want;
        float *out;
        const float *x, *c, *s;
        int ndim;
        const int64_t *shape, *stride;
        int64_t head_dim, rotary_dim;
        int layout;
    } cases[] = {
        {TL_ROPE_ERR_NULL, NULL, x, c, s, 1, shape, stride, 4, 4, 0},
        {TL_ROPE_ERR_NULL, out, NULL, c, s, 1, shape, stride, 4, 4, 0},
        {TL_ROPE_ERR_NULL, out, x, NULL, s, 1, shape, stride, 4, 4, 0},
        {TL_ROPE_ERR_NULL, out, x, c, NULL, 1, shape, stride, 4, 4, 0},
        {TL_ROPE_ERR_NULL, out, x, c, s, 1, NULL, stride, 4, 4, 0},
        {TL_ROPE_ERR_NULL, out, x, c, s, 1, shape, NULL, 4, 4, 0},
        {TL_ROPE_ERR_DIM, out, x, c, s, 1, shape, stride, 4, 3, 0},
        {TL_ROPE_ERR_DIM, out, x, c, s, 1, shape, stride, 4, 0, 0},
        {TL_ROPE_ERR_DIM, out, x, c, s, 1, shape, stride, 4, 6, 0},
        {TL_ROPE_ERR_DIM, out, x, c, s, 1, shape, stride, 1, 2, 0},
        {TL_ROPE_ERR_LAYOUT, out, x, c, s, 1, shape, stride, 4, 4, 2},
        {TL_ROPE_ERR_LAYOUT, out, x, c, s, 1, shape, stride, 4, 4, -1},
        {TL_ROPE_ERR_ROWS, out, x, c, s, -1, shape, stride, 4, 4, 0},
        {TL_ROPE_ERR_ROWS, out, x, c, s, 1, negative, stride, 4, 4, 0},
        {TL_ROPE_ERR_ROWS, out, x, c, s, 1, shape, negative, 4, 4, 0},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        for (int j = 0; j < 8; j++) out[j] = -99.0f;
        int rc = tl_rope_f32(cases[k].out, cases[k].x, cases[k].c, cases[k].s, cases[k].ndim, cases[k].shape,
                             cases[k].stride, cases[k].head_dim, cases[k].rotary_dim, cases[k].layout, 0);
        CHECK(rc == cases[k].want, "error case %zu: got %d, want %d", k, rc, cases[k].want);
        for (int j = 0; j < 8; j++) CHECK(out[j] == -99.0f, "error case %zu wrote out[%d]", k, j);
    }
    // zero rows is fine and touches nothing
    const int64_t empty[2] = {3, 0}, strides2[2] = {0, 1};
    for (int j = 0; j < 8; j++) out[j] = -99.0f;
    CHECK(tl_rope_f32(out, x, c, s, 2, empty, strides2, 4, 4, 0, 0) == TL_ROPE_OK, "zero rows");
    for (int j = 0; j < 8; j++) CHECK(out[j] == -99.0f, "zero rows wrote out[%d]", j);
}

int main(void) {
    check_hand_example();
    check_errors();

    // head_dim and rotary_dim: small, odd tails, and the common 64 and 128
    const int64_t dims[][2] = {{2, 2}, {3, 2}, {4, 2}, {4, 4}, {6, 4}, {8, 8}, {16, 8}, {17, 16},
                               {30, 10}, {64, 64}, {65, 64}, {128, 128}, {128, 32}, {130, 128}};
    for (size_t k = 0; k < sizeof dims / sizeof dims[0]; k++) {
        const int64_t hd = dims[k][0], r = dims[k][1];
        // one row, tables (1, r/2)
        check_case(hd, r, 0, NULL, NULL, 1);
        // per-row tables (n, r/2)
        const int64_t per_row[1] = {7}, per_row_stride[1] = {1};
        check_case(hd, r, 1, per_row, per_row_stride, 7);
        // x (B*H, S, hd), tables (S, r/2)
        const int64_t shared[2] = {6, 5}, shared_stride[2] = {0, 1};
        check_case(hd, r, 2, shared, shared_stride, 5);
        // x (B, H, S, hd), tables (B, 1, S, r/2)
        const int64_t bhs[3] = {2, 3, 4}, bhs_stride[3] = {4, 0, 1};
        check_case(hd, r, 3, bhs, bhs_stride, 8);
        // x (S, H, hd), tables (S, 1, r/2): each token's row shared by its heads
        const int64_t sh[2] = {5, 3}, sh_stride[2] = {1, 0};
        check_case(hd, r, 2, sh, sh_stride, 5);
    }
    if (failures) {
        fprintf(stderr, "%d of %ld checks failed\n", failures, checks);
        return 1;
    }
    printf("OK: %ld checks passed\n", checks);
    return 0;
}
