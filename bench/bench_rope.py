"""apply_rope (the reference, on the autograd Tensor) beside a plain numpy
rotate-half, on x [1, 32, 4096, 128] float32, tables precomputed.

    python bench/bench_rope.py [--rounds 9]

  forward           apply_rope(Tensor(x), cos, sin)        vs  x*cos2 + rotate_half(x)*sin2
  forward+backward  the same with requires_grad and
                    .backward(g)                           vs  the numpy forward, then the
                                                               numpy inverse rotation of g
Each round times every contender once, in turn (reversing the order every
other round, so drift hits both sides alike); the ratio of each round is taken
within that round and the median over rounds is printed (the machine is shared
and noisy: absolute times mean little, a ratio measured side by side does).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "course" / "reference" / "python"))
from tinyllm.autograd.tensor import Tensor  # noqa: E402
from tinyllm.modern.rope import apply_rope, rope_cos_sin  # noqa: E402

SHAPE = (1, 32, 4096, 128)


def numpy_rotate_half(x, cos2, sin2):
    """HF's form: x * cos + rotate_half(x) * sin, tables [S, D] (two halves equal)."""
    half = x.shape[-1] // 2
    return x * cos2 + np.concatenate([-x[..., half:], x[..., :half]], axis=-1) * sin2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    x = rng.standard_normal(SHAPE, dtype=np.float32)
    g = rng.standard_normal(SHAPE, dtype=np.float32)
    inv_freq = (1.0 / 10000 ** (np.arange(0, 128, 2) / 128)).astype(np.float32)
    cos, sin = rope_cos_sin(np.arange(SHAPE[2]), inv_freq)             # [S, 64]
    cos2, sin2 = np.concatenate([cos, cos], -1), np.concatenate([sin, sin], -1)  # [S, 128]

    def ours_forward():
        return apply_rope(Tensor(x), cos, sin)

    def numpy_forward():
        return numpy_rotate_half(x, cos2, sin2)

    def ours_forward_backward():
        xt = Tensor(x, requires_grad=True)
        apply_rope(xt, cos, sin).backward(g)
        return xt.grad

    def numpy_forward_backward():
        numpy_rotate_half(x, cos2, sin2)
        return numpy_rotate_half(g, cos2, -sin2)  # the backward of a rotation: rotate back

    assert np.array_equal(ours_forward().data, numpy_forward()), "the contenders must compute the same thing"
    np.testing.assert_allclose(ours_forward_backward(), numpy_forward_backward(), atol=1e-6)

    contenders = {"apply_rope forward": ours_forward, "numpy rotate-half forward": numpy_forward,
                  "apply_rope forward+backward": ours_forward_backward,
                  "numpy forward+backward": numpy_forward_backward}
    times = {name: [] for name in contenders}
    for number in range(args.rounds):
        order = list(contenders.items())
        for name, fn in (order if number % 2 == 0 else order[::-1]):
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    for name, ts in times.items():
        print(f"{name:30s} median {statistics.median(ts) * 1e3:8.1f} ms")
    for ours, theirs in (("apply_rope forward", "numpy rotate-half forward"),
                         ("apply_rope forward+backward", "numpy forward+backward")):
        ratio = statistics.median(a / b for a, b in zip(times[ours], times[theirs]))
        print(f"{ours} / {theirs}: {ratio:.2f}x" + ("   (target <= 2.0)" if "backward" not in ours else ""))


if __name__ == "__main__":
    main()
