"""A milestone's run, started: the child Python (ol.student.milestone.child, or
ol.student.milestone.gemma3_child) that sees tinyllm through the plan's overlay.

    ok = run_child(ctx, milestone, plan, "ol.student.milestone.child", request, folder)

The child writes what it computed into `folder`; the caller judges it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def run_child(ctx, milestone, plan, child_module: str, request: dict, folder: Path) -> bool:
    """Run `python -m child_module REQUEST OUT` in `folder`, with the plan's overlay; its output
    goes to ctx.out.  False (said why) when it stopped with an error: the student's code raised."""
    (folder / "overlay.json").write_text(json.dumps({n: s.to_json() for n, s in plan.overlay.items()}),
                                         encoding="utf-8")
    (folder / "request.json").write_text(json.dumps(request), encoding="utf-8")
    from ol.core.runner import child_env

    env = child_env(ctx.root, OL_OVERLAY=str(folder / "overlay.json"))
    ctx.out.flush()
    done = subprocess.run([sys.executable, "-m", child_module, str(folder / "request.json"), str(folder)],
                          cwd=ctx.root, env=env, stdout=ctx.out if ctx.out is sys.stdout else subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    if done.stdout:
        ctx.out.write(done.stdout)
    if done.returncode != 0:
        ctx.say("", f"{milestone.id}: the run stopped with an error (its traceback is above): the model could "
                "not be run to the end. Fix the module it names (./ol tests MODULE shows more), then run again.")
        advice = _stub_advice(ctx, milestone, folder / "stub.json")
        if advice:
            ctx.say(advice.replace("./ol ", ctx.ol + " "))
    return done.returncode == 0


def _stub_advice(ctx, milestone, written: Path) -> str | None:
    """What to do about a NotImplementedError, when the child wrote where it was raised."""
    from ol.student.milestone import stub_advice

    if not written.is_file():
        return None
    return stub_advice(ctx.root, ctx.catalog, milestone, json.loads(written.read_text(encoding="utf-8"))["file"])
