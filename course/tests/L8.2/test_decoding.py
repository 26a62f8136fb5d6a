"""L8.2 course tests: the key/value cache and greedy generation, on a
recording stand-in model (what positions does each call get?) and on the tiny
Llama of L7.9 against Hugging Face's generate (fixtures/L7.9/llama_hf.npz).
The six tests are the table of the chapter (course/chapters/L8.2-decoding.md,
section 8).

Comparisons go through the `expect` fixture (course/tests/diagnose.py): a
failing one names the known mistake of course/mutants/L8.2/ that gives your
result, such as positions that restart at 0.
"""

from types import SimpleNamespace

import numpy as np
import pytest
from diagnose import Expectations, Mistakes

from tinyllm.autograd.tensor import Tensor
from tinyllm.modern.decoding import KVCache, greedy_generate, step
from tinyllm.modern.llama import Llama

STUDENT = SimpleNamespace(KVCache=KVCache, step=step, greedy_generate=greedy_generate)
MISTAKES = Mistakes("L8.2", "tinyllm/modern/decoding.py", names=tuple(vars(STUDENT)))


@pytest.fixture
def expect():
    return Expectations(STUDENT, MISTAKES)


class Recorder:
    """A stand-in model: remembers the positions and the past of each forward,
    caches one key per token (K [B, 1, length, 1]), and gives logits whose
    argmax at each position is `script[position]` (or the next id)."""

    def __init__(self, vocab=10, script=None):
        self.vocab, self.script, self.calls = vocab, script or {}, []

    def forward(self, token_ids, positions, past=None):
        token_ids, positions = np.asarray(token_ids), np.asarray(positions)
        self.calls.append((token_ids.tolist(), positions.tolist(), None if past is None else past[0][0].shape[2]))
        batch, seq = token_ids.shape
        logits = np.zeros((batch, seq, self.vocab), np.float32)
        for i, p in enumerate(positions):
            logits[:, i, self.script.get(int(p), (int(token_ids[0, i]) + 1) % self.vocab)] = 1.0
        old = 0 if past is None else past[0][0].shape[2]
        keys = Tensor(np.zeros((batch, 1, old + seq, 1), np.float32))
        return Tensor(logits), [(keys, keys)]


def test_a_new_cache_is_empty(expect):
    expect.equal(lambda dec: (dec.KVCache().layers, dec.KVCache().length), (None, 0), "KVCache(): (layers, length)")


def test_step_positions_continue_from_the_cache(expect):
    # Prefill 3 tokens, then two steps of one: positions 0 1 2, then 3, then 4 (never 0 again).
    def calls(dec):
        model, cache = Recorder(), dec.KVCache()
        lengths = []
        for ids in ([[5, 6, 7]], [[8]], [[9]]):
            dec.step(model, ids, cache)
            lengths.append(cache.length)
        return [positions for _, positions, _ in model.calls], [past for _, _, past in model.calls], lengths

    expect.equal(lambda dec: calls(dec)[0], [[0, 1, 2], [3], [4]],
                 "the positions step gives the model: the prefill, then each new token at cache.length")
    expect.equal(lambda dec: calls(dec)[1], [None, 3, 4],
                 "the cached length the model is handed as past (None for the prefill)")
    expect.equal(lambda dec: calls(dec)[2], [3, 4, 5], "cache.length after each step")


def test_greedy_golden(llama_hf, expect):
    # The tiny Llamas of L7.9 against HF's generate (8 tokens, greedy, no end-of-sequence).
    for model_name in ("tied", "untied"):
        prefix = f"{model_name}/weights/"
        weights = {k[len(prefix):]: llama_hf[k] for k in llama_hf if k.startswith(prefix)}
        model = Llama(llama_hf.provenance["configs"][model_name], weights)
        prompt = llama_hf[f"{model_name}/greedy_prompt"].tolist()
        for use_cache in (True, False):
            expect.equal(lambda dec, u=use_cache: dec.greedy_generate(model, prompt, 8, use_cache=u),
                         llama_hf[f"{model_name}/greedy"].tolist(),
                         f"{model_name}: 8 greedy tokens (use_cache={use_cache}) vs HF's generate")


def test_cache_equals_no_cache(llama_hf, expect):
    # Each step's logits with the cache equal a whole forward's last logits.
    weights = {k[len("tied/weights/"):]: llama_hf[k] for k in llama_hf if k.startswith("tied/weights/")}
    model = Llama(llama_hf.provenance["configs"]["tied"], weights)
    ids = [7, 30, 12, 5, 41, 9]

    def stepped(dec):
        cache = dec.KVCache()
        last = [dec.step(model, [ids[:3]], cache).data[0, -1]]
        for token in ids[3:]:
            last.append(dec.step(model, [[token]], cache).data[0, -1])
        return np.stack(last)

    whole = np.stack([model.forward([ids[:n]], np.arange(n))[0].data[0, -1] for n in range(3, 7)])
    expect.close(stepped, whole, 3e-5, "the last logits after each step (a prefill of 3, then 3 steps) vs a whole "
                 "forward of the same tokens", dtype=np.float32)


def test_argmax_ties_and_end_of_sequence(expect):
    # Position 3 (the first new token) scripted to 4, then 2: eos_token_id=2 stops after it.
    expect.equal(lambda dec: dec.greedy_generate(Recorder(script={2: 4, 3: 2}), [1, 1, 1], 5, eos_token_id=2),
                 [4, 2], "greedy_generate with eos_token_id=2: stops right after generating 2")
    expect.equal(lambda dec: dec.greedy_generate(Recorder(script={2: 4, 3: 2}), [1, 1, 1], 5), [4, 2, 3, 4, 5],
                 "greedy_generate without eos_token_id: never stops early")

    class Flat(Recorder):
        def forward(self, token_ids, positions, past=None):
            logits, present = super().forward(token_ids, positions, past)
            return Tensor(np.ones_like(logits.data)), present

    expect.equal(lambda dec: dec.greedy_generate(Flat(), [3], 2), [0, 0],
                 "greedy_generate on equal logits: the lowest id")
    expect.equal(lambda dec: dec.greedy_generate(Recorder(), [3], 0), [], "max_new_tokens=0: nothing")
    expect.equal(lambda dec: [type(t) for t in dec.greedy_generate(Recorder(), np.array([3]), 2)], [int, int],
                 "the ids come back as Python ints")


@pytest.mark.parametrize("prompt, count", [([], 3), ([1], -1), ([1], True), ([1], 2.0)],
                         ids=["empty prompt", "negative count", "bool count", "float count"])
def test_validation(prompt, count):
    with pytest.raises(ValueError):
        greedy_generate(Recorder(), prompt, count)
