"""`ol shell MODULE [--ref-deps] [-c CODE]`: Python with tinyllm as the module's tests see it.

Opens a Python prompt, or runs CODE, in a child Python whose `import
tinyllm...` finds what `ol tests MODULE` would serve: your files, with the
module's needs from the reference under --ref-deps (ol.runner.serving: the
same overlay, the same PYTHONPATH, a C module compiled first).  Ready in it:
numpy as np, each served module under its last name (rope, tensor, ...),
and Tensor and F (tinyllm.autograd.functional) when they are served.
Exit: Python's own (0 unless CODE raised, or exit(n)); 2 if the module is
not started.
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys

from ol.exits import INTERRUPTED

# The child's first code: install the overlay, bind the ready names, then
# run CODE (sys.argv[1]) if given; `python -i` then opens the prompt.
BOOT = "from ol.shell import boot; boot()"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("module", metavar="MODULE", help="a module id from the catalog, e.g. L7.3")
    parser.add_argument("--ref-deps", action="store_true",
                        help="take the module's needs from the reference, as ./ol tests --ref-deps does")
    parser.add_argument("-c", dest="code", metavar="CODE", default=None,
                        help="run CODE (Python statements) instead of opening a prompt")


def run(args: argparse.Namespace, ctx) -> int:
    from ol.runner import serving

    module = ctx.module(args.module)
    with serving(ctx.root, module, catalog=ctx.catalog, ref_deps=args.ref_deps) as served:
        if served.compiler_says:
            print(served.compiler_says, end="", file=ctx.err, flush=True)
        if args.code is None:
            ctx.say(f"ol shell {module.id}: Python {sys.version.split()[0]}, with tinyllm as the tests of "
                    f"{module.id} see it:")
            for name, source in sorted(served.overlay.items()):
                ctx.say(f"  {name:<30} {_whose(ctx, source.path)}")
            ctx.say("Ctrl-D (or exit()) leaves.")
        command = [sys.executable, *(["-i"] if args.code is None else []), "-c", BOOT,
                   *([args.code] if args.code is not None else [])]
        child = subprocess.Popen(command, env=served.env)
        # Ctrl-C belongs to the prompt (it cancels a line there), not to ol:
        # ignored here while the child runs.  SIGTERM still ends ol, and then the child.
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            code = child.wait()
        finally:
            signal.signal(signal.SIGINT, previous)
            if child.poll() is None:
                child.terminate()
                child.wait()
    if code < 0:  # ended by a signal: the shell's convention, 128 + its number
        return INTERRUPTED if code == -signal.SIGINT else 128 - code
    return code


def _whose(ctx, path: str | None) -> str:
    """Where a served module comes from, as the student should read it."""
    if path is None:
        return "(text held by ol)"
    from pathlib import Path

    from ol.catalog import REFERENCE_TREE

    rel = str(Path(path).resolve().relative_to(ctx.root)) if Path(path).resolve().is_relative_to(ctx.root) else path
    return f"{ctx.show(rel)}  ({'the reference' if rel.startswith(REFERENCE_TREE) else 'yours'})"


# ---- in the child --------------------------------------------------------------------


def boot() -> None:
    """Run first in the child: install the overlay from $OL_OVERLAY, bind the
    ready names in __main__, then run CODE if one was given."""
    import __main__
    import importlib
    import traceback

    from ol.overlay import install_from_env

    finder = install_from_env()
    namespace = __main__.__dict__
    ready = []
    try:
        import numpy as np

        namespace["np"] = np
        ready.append("np")
    except ImportError:
        pass
    for name in sorted(finder.mapping if finder else ()):
        try:
            module = importlib.import_module(name)
        except Exception as error:  # the student's file may not import yet: say so, and go on
            print(f"ol shell: could not import {name}: {type(error).__name__}: {error}", file=sys.stderr)
            continue
        short = name.rsplit(".", 1)[-1]
        namespace.setdefault(short, module)
        ready.append(short)
        if name == "tinyllm.autograd.tensor" and hasattr(module, "Tensor"):
            namespace["Tensor"] = module.Tensor
            ready.append("Tensor")
        elif name == "tinyllm.autograd.functional":
            namespace["F"] = module
            ready.append("F")
    code = sys.argv[1] if len(sys.argv) > 1 else None
    if code is None:
        print(f"ready: {', '.join(ready)}", flush=True)
        return
    try:
        exec(compile(code, "<ol shell -c>", "exec"), namespace)
    except (SystemExit, KeyboardInterrupt):
        raise
    except BaseException as error:
        traceback.print_exception(type(error), error, error.__traceback__.tb_next)  # from CODE's own frame
        sys.exit(1)
