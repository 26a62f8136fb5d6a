"""L7.5's chapter, sections 7, 13 and 14: what its hints and pitfall table say about tests.

The calls feed float64 inputs, as section 13 says to, so the chapter's
tolerance (atol 1e-9) is the one at which results differ.
"""

from hints import Hint, Oracle


def layer(kv: int, seed: int = 7) -> str:
    """A random layer of hidden size 8 with 4 query heads of 4 on `kv` key/value heads: wq, wk, wv, wo."""
    shapes = ((16, 8), (4 * kv, 8), (4 * kv, 8), (8, 16))
    return f"*[Tensor(np.random.default_rng({seed}).standard_normal(s)) for s in {shapes}]"


X = "Tensor(np.random.default_rng(8).standard_normal((2, 5, 8)))"
SPEC = "RopeSpec(np.array([1.0, 0.1], np.float32))"


def call(positions: str = "np.arange(5)", kv: int = 2) -> str:
    """attention on X at `positions`, no cache: (out, (K, V))."""
    return f"attention({X}, {layer(kv)}, {SPEC}, {positions}, 4, {kv})"


# the output of a second call on tokens 3, 4 at positions 3, 4 after a first on tokens 0, 1, 2 whose (K, V) it is given
CACHED = (f"(lambda first: attention(Tensor({X}.data[:, 3:]), {layer(2)}, {SPEC}, np.arange(3, 5), 4, 2, first[1])[0])"
          f"(attention(Tensor({X}.data[:, :3]), {layer(2)}, {SPEC}, np.arange(3), 4, 2))")

TOLERANCE = {"atol": 1e-9, "rtol": 0.0}   # section 13: float64 inputs, compared at atol 1e-9

ADVICE = ("Write one oracle and parametrize it over head counts, caches and the spec's fields.",)

HINTS = [
    # ---- section 13's hints --------------------------------------------------------------------
    Hint("L7.5", "pitfall a05 leaves the output right and only the returned $K$ shows it", f"{call()}[1][0]",
         "a05", plain=f"{call()}[0]"),
    Hint("L7.5", "at positions that do not start at 0 the output shows it too", f"{call('np.arange(7, 12)')}[0]",
         "a05", plain=f"{call()}[0]"),
    Hint("L7.5", "A test with $KV = 1$ or $KV = H$ cannot see a04; $KV = 2$ with $H = 4$ does", f"{call(kv=2)}[0]",
         "a04", plain=f"{call(kv=1)}[0]"),
    Hint("L7.5", "A test with $KV = 1$ or $KV = H$ cannot see a04; $KV = 2$ with $H = 4$ does", f"{call(kv=2)}[0]",
         "a04", plain=f"{call(kv=4)}[0]"),
    Hint("L7.5", "Pitfall a03 leaves the output at the last position right, the one generation reads: compare every "
                 "position", f"{call()}[0]", "a03", plain=f"{call()}[0].data[:, -1]"),
    # ---- section 7 and the pitfall table (section 14) say the same of a05, a04 and a03 ---------
    Hint("L7.5", "gives the right numbers whenever positions run $0, 1, 2, \\dots$ with no gap", f"{call('np.arange(7, 12)')}[0]",
         "a05", plain=CACHED, section=7),
    Hint("L7.5", "right when positions count from 0 without a gap; wrong at an offset, and the cache holds unrotated "
                 "keys", f"{call()}[1][0]", "a05", plain=f"{call()}[0]", section=14),
    Hint("L7.5", "invisible with $KV = 1$ or $KV = H$", f"{call(kv=2)}[0]", "a04", plain=f"{call(kv=4)}[0]",
         section=14),
    Hint("L7.5", "generation, which reads only the last position, looks fine", f"{call()}[0]", "a03",
         plain=f"{call()}[0].data[:, -1]", section=14),
]

ORACLE = Oracle(
    says=("**Your oracle: sections 3 to 7, written out plainly in numpy float64.**",
          "times $\\cos + \\mathrm{i} \\sin$ from the spec's own tables, `cos, sin = spec.cos_sin(positions)`, "
          "widened to float64",
          "on outputs of size 100 the difference grows past $10^{-5}$",
          "they agree to better than $10^{-11}$ even on outputs of size 100, and you can compare at `atol` $10^{-9}$"),
    check='''
def rotate(x, cos, sin, spec):
    """RoPE on x [..., S, D] float64 by complex multiplication with the tables cos, sin [S, r/2]."""
    r = spec.rotary_dim
    a = np.arange(r // 2) if spec.layout == "half" else np.arange(0, r, 2)
    b = a + r // 2 if spec.layout == "half" else a + 1
    turned = (x[..., a] + 1j * x[..., b]) * (np.asarray(cos, np.float64) + 1j * np.asarray(sin, np.float64))
    out = x.copy()
    out[..., a], out[..., b] = turned.real, turned.imag
    return out


def oracle(x, wq, wk, wv, wo, spec, positions, n_heads, n_kv, past=None, tables=None):
    """Chapter section 13's oracle: (out, K, V) in float64, a head and a query at a time, with the spec's
    tables (or `tables`, for the oracle the chapter warns against)."""
    batch, seq, _ = x.shape
    dim = wq.shape[0] // n_heads
    cos, sin = spec.cos_sin(positions) if tables is None else tables

    def heads(w, n):
        return (x @ w.T).reshape(batch, seq, n, dim).transpose(0, 2, 1, 3)

    q, k, v = rotate(heads(wq, n_heads), cos, sin, spec), rotate(heads(wk, n_kv), cos, sin, spec), heads(wv, n_kv)
    if past is not None:
        k, v = np.concatenate([past[0], k], axis=2), np.concatenate([past[1], v], axis=2)
    n_past = k.shape[2] - seq
    out = np.zeros((batch, seq, n_heads * dim))
    for row in range(batch):
        for h in range(n_heads):
            g = h // (n_heads // n_kv)
            for i in range(seq):
                scores = k[row, g, :n_past + i + 1] @ q[row, h, i] / math.sqrt(dim)
                weights = np.exp(scores - scores.max())
                out[row, i, h * dim:(h + 1) * dim] = weights / weights.sum() @ v[row, g, :n_past + i + 1]
    return out @ wo.T, k, v


def own_tables(spec, positions):
    """What the chapter warns against: cos and sin computed in float64 of the float32 angles, times the scaling."""
    angle = (np.asarray(positions, np.float32)[:, None] * spec.inv_freq).astype(np.float64)
    return np.cos(angle) * spec.attention_scaling, np.sin(angle) * spec.attention_scaling


def cases():
    """(name, x, weights, spec, positions, n_kv, past inputs or None): the course tests' golden cases in
    float64, and issue 30's layer (weights of size 1, scaling 1.3: outputs of size 100) in both layouts."""
    fx = fixture("fixtures/L7.5/attention_hf.npz")
    for case in ("gqa", "offset", "mqa", "mha", "yarn", "cache"):
        weights = [fx[f"{case}/{n}"].astype(np.float64) for n in ("wq", "wk", "wv", "wo")]
        spec = RopeSpec(fx[f"{case}/inv_freq"], float(fx[f"{case}/attention_scaling"]))
        prefill = (fx["cache/prefill_x"].astype(np.float64), fx["cache/prefill_positions"]) if case == "cache" else None
        yield case, fx[f"{case}/x"].astype(np.float64), weights, spec, fx[f"{case}/positions"], weights[1].shape[0] // 8, prefill
    rng = np.random.default_rng(0)
    weights = [rng.standard_normal(shape) for shape in ((32, 32), (16, 32), (16, 32), (32, 32))]
    x = rng.standard_normal((2, 6, 32))
    ladder = (1.0 / 10000 ** (np.arange(0, 8, 2) / 8)).astype(np.float32)
    for layout in ("half", "interleaved"):
        yield f"issue 30's layer, {layout}", x, weights, RopeSpec(ladder, 1.3, layout), np.arange(50, 56), 2, None
    yield "a rotary_dim below D", x, weights, RopeSpec(ladder[:2], 1.3), np.arange(50, 56), 2, None


def check(implementation):
    problems = []
    for name, x, weights, spec, positions, n_kv, prefill in cases():
        tensors = [Tensor(w) for w in weights]
        past = want_past = None
        if prefill is not None:
            _, past = implementation.attention(Tensor(prefill[0]), *tensors, spec, prefill[1], 4, n_kv)
            want_past = oracle(prefill[0], *weights, spec, prefill[1], 4, n_kv)[1:]
        out, (k, v) = implementation.attention(Tensor(x), *tensors, spec, positions, 4, n_kv, past)
        want = oracle(x, *weights, spec, positions, 4, n_kv, want_past)
        for what, got, expected in zip(("out", "K", "V"), (out.data, k.data, v.data), want):
            error = np.abs(got - expected).max()
            if not error <= 1e-9:
                problems.append(f"{name}: {what} is {error:.2e} from the oracle, more than atol 1e-9")
        if name.startswith("issue 30"):
            size, error = np.abs(want[0]).max(), np.abs(out.data - want[0]).max()
            if not (size > 50 and error < 1e-11):
                problems.append(f"{name}: outputs of size {size:.0f} agree to {error:.1e}, not better than 1e-11")
            own = oracle(x, *weights, spec, positions, 4, n_kv, tables=own_tables(spec, positions))[0]
            if not np.abs(out.data - own).max() > 1e-5:
                problems.append(f"{name}: an oracle with its own tables is only {np.abs(out.data - own).max():.1e} "
                                "away, not past 1e-5 as the chapter says")
    return problems
''')
