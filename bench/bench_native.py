"""Benchmark: tl_rope_f32 (the C of L9.6) beside numpy, torch and a memory copy.

    python bench/bench_native.py [--rounds 9] [--shape 1 32 4096 128]

RoPE on x [1, 32, 4096, 128] float32 (64 MiB), half layout, tables [4096, 64]
from rope_cos_sin.  Contenders, alternated in one process (each round runs
every one once, in a rotated order; ratios are taken within each round and
the median over rounds is reported):

    memcpy                 np.copyto of x into a preallocated array: the bandwidth limit
    tl_rope_f32 out=buf    the C, writing into a preallocated array
    tl_rope_f32 in place   the C with out=x
    tl_rope_f32 out=None   the C, allocating its result (as numpy does)
    tl_rope_f32 interl.    the C, interleaved layout, preallocated out
    numpy apply_rope       the Python reference of L7.3 on Tensor(x)
    numpy rotate-half      x * cos + rotate_half(x) * sin, HF's formula in numpy
    torch HF apply_rotary  transformers' apply_rotary_pos_emb(q, k, ...) with k = q (both rotated)

GB/s counts the bytes of x-sized arrays read and written (2 x 64 MiB per
rotated tensor, 4 x for torch's q and k); the 2 MiB of tables, which stay in
cache, are not counted.  The machine is shared and noisy: absolute times mean
little, the ratios measured side by side do.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("THP_MEM_ALLOC_ENABLE", "1")  # let torch's allocator use huge pages, as numpy does

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "course" / "reference" / "python"))  # the reference tinyllm, not the student's

import numpy as np  # noqa: E402

from tinyllm.autograd.tensor import Tensor  # noqa: E402
from tinyllm.modern.rope import apply_rope, rope_cos_sin  # noqa: E402
from tinyllm.native import LIBRARY_PATH, tl_rope_f32  # noqa: E402

TARGET_OF_MEMCPY = 0.5  # the C must reach half the bandwidth of a plain copy
TARGET_OVER_NUMPY = 3.0  # and be 3x the numpy rope


def numpy_rotate_half(x, cos2, sin2):
    """HF's formula in numpy: x * cos + rotate_half(x) * sin, tables [S, D]."""
    half = x.shape[-1] // 2
    rotated = np.concatenate([-x[..., half:], x[..., :half]], axis=-1)
    return x * cos2 + rotated * sin2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--shape", type=int, nargs=4, default=[1, 32, 4096, 128], metavar=("B", "H", "S", "D"))
    args = parser.parse_args()
    B, H, S, D = args.shape

    rng = np.random.default_rng(0)
    x = rng.standard_normal((B, H, S, D)).astype(np.float32)
    inv_freq = (1.0 / 10000.0 ** (np.arange(0, D, 2, dtype=np.float32) / np.float32(D))).astype(np.float32)
    cos, sin = rope_cos_sin(np.arange(S), inv_freq)  # [S, D/2]
    cos2, sin2 = np.concatenate([cos, cos], -1), np.concatenate([sin, sin], -1)  # [S, D], HF's tables
    dst, out, out_inter, y = np.empty_like(x), np.empty_like(x), np.empty_like(x), x.copy()
    nbytes = x.nbytes

    contenders = {  # name: (function, bytes read + written)
        "memcpy (np.copyto)": (lambda: np.copyto(dst, x), 2 * nbytes),
        "tl_rope_f32 out=buf": (lambda: tl_rope_f32(x, cos, sin, out=out), 2 * nbytes),
        "tl_rope_f32 in place": (lambda: tl_rope_f32(y, cos, sin, out=y), 2 * nbytes),
        "tl_rope_f32 out=None": (lambda: tl_rope_f32(x, cos, sin), 2 * nbytes),
        "tl_rope_f32 interleaved": (lambda: tl_rope_f32(x, cos, sin, layout="interleaved", out=out_inter), 2 * nbytes),
        "numpy apply_rope (ref)": (lambda: apply_rope(Tensor(x), cos, sin).data, 2 * nbytes),
        "numpy rotate-half": (lambda: numpy_rotate_half(x, cos2, sin2), 2 * nbytes),
    }

    # the same numbers from every contender
    expected = tl_rope_f32(x, cos, sin)
    def same_bits(a):
        return np.array_equal(a.view(np.uint32), expected.view(np.uint32))

    agree = {
        "numpy apply_rope (ref)": same_bits(apply_rope(Tensor(x), cos, sin).data),
        "numpy rotate-half": same_bits(numpy_rotate_half(x, cos2, sin2)),
    }

    torch_note = ""
    try:
        import torch
        from transformers.models.llama.modeling_llama import apply_rotary_pos_emb
    except ImportError as error:
        torch_note = f"torch HF apply_rotary_pos_emb: skipped ({error}); pip install -e '.[oracle]'"
    else:
        q = torch.from_numpy(x)
        cos_t, sin_t = torch.from_numpy(cos2)[None], torch.from_numpy(sin2)[None]  # [1, S, D], unsqueezed to heads
        contenders["torch HF apply_rotary (q,k)"] = (lambda: apply_rotary_pos_emb(q, q, cos_t, sin_t), 4 * nbytes)
        q_embed, _ = apply_rotary_pos_emb(q, q, cos_t, sin_t)
        agree["torch HF apply_rotary (q,k)"] = same_bits(q_embed.numpy())
        torch_note = (
            f"torch {torch.__version__}, {torch.get_num_threads()} threads, "
            f"THP_MEM_ALLOC_ENABLE={os.environ.get('THP_MEM_ALLOC_ENABLE')}"
        )

    names = list(contenders)
    times = {name: [] for name in names}
    for name in names:  # warm up: page in every buffer, load every code path
        contenders[name][0]()
    for round_ in range(args.rounds):
        order = names[round_ % len(names) :] + names[: round_ % len(names)]
        for name in order:
            start = time.perf_counter()
            contenders[name][0]()
            times[name].append(time.perf_counter() - start)

    def per_byte_speed(name, other, k):  # how many times faster `name` moves its bytes than `other`, in round k
        return (contenders[name][1] / times[name][k]) / (contenders[other][1] / times[other][k])

    def side_by_side(name, other):  # the median over rounds of the ratio within each round
        return statistics.median(per_byte_speed(name, other, k) for k in range(args.rounds))

    memcpy = "memcpy (np.copyto)"
    print(f"tl_rope_f32 benchmark: x {[B, H, S, D]} float32 ({nbytes / 2**20:.1f} MiB), half layout, "
          f"tables {list(cos.shape)}")  # fmt: skip
    print(f"library {LIBRARY_PATH}")
    print(f"numpy {np.__version__}; {torch_note}")
    print(f"{args.rounds} rounds, contenders alternated; GB/s = bytes of x-sized arrays read + written / median time;")
    print("vs memcpy = median over rounds of (GB/s / memcpy's GB/s in the same round)")
    print()
    print(f"{'contender':30s} {'median ms':>10s} {'GB/s':>7s} {'vs memcpy':>10s}  same bits as the C")
    for name in names:
        median = statistics.median(times[name])
        same = {True: "yes", False: "NO"}.get(agree.get(name), "")
        print(f"{name:30s} {median * 1e3:10.2f} {contenders[name][1] / median / 1e9:7.2f} "
              f"{side_by_side(name, memcpy):10.2f}  {same}")  # fmt: skip

    # Each comparison under the same conditions: preallocated output against preallocated,
    # allocating against allocating.  (C contender, other contender, target, unit)
    checks = [
        ("tl_rope_f32 out=buf", memcpy, TARGET_OF_MEMCPY, "of the copy bandwidth"),
        ("tl_rope_f32 out=None", "numpy apply_rope (ref)", TARGET_OVER_NUMPY, "x as fast"),
        ("tl_rope_f32 out=None", "numpy rotate-half", TARGET_OVER_NUMPY, "x as fast"),
    ]
    if "torch HF apply_rotary (q,k)" in contenders:
        checks.append(("tl_rope_f32 out=None", "torch HF apply_rotary (q,k)", None, "x as fast, per byte"))
    print()
    for name, other, target, unit in checks:
        ratio = side_by_side(name, other)
        verdict = "" if target is None else f"target >= {target}: {'met' if ratio >= target else 'NOT MET'}"
        print(f"  {name + ' / ' + other:52s} {ratio:6.2f} {unit:22s} {verdict}")


if __name__ == "__main__":
    main()
