"""`ol shell MODULE [--ref-deps | --ref-unstarted] [-c CODE]`: Python with tinyllm as the module's tests see it.

Opens a Python prompt, or runs CODE, in a child Python whose `import
tinyllm...` finds what `ol tests MODULE` would serve: your files, and the
modules MODULE needs as --ref-deps or --ref-unstarted say (ol.core.deps; the
same overlay and PYTHONPATH as the tests, a C module compiled first).
Before you start MODULE, it serves the reference's MODULE, so that the
chapter's examples run as printed (not in a student kit, which does not
hold the reference of the modules it assesses).

Ready in it, so that a chapter's example pastes as it is: numpy as np;
every public name of the contracts of MODULE and of what it needs
(rope_cos_sin, RopeSpec, attention, ...: MODULE's own first); F for
tinyllm.autograd.functional; and each served module under its last name
where no such name takes it (rope, tensor, nn, ...; in `ol shell L7.5`,
`attention` is the function).
Exit: Python's own (0 unless CODE raised, or exit(n)); 2 if the module cannot be served.
"""

from __future__ import annotations

import argparse
import ast
import json
import signal
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

from ol.core.exits import INTERRUPTED

# The child's first code: install the overlay, bind the ready names, then
# run CODE (sys.argv[1]) if given; `python -i` then opens the prompt.
BOOT = "from ol.student.shell import boot; boot()"
NAMES_ENV = "OL_SHELL_NAMES"   # a JSON file: [[dotted module, [its contract's public names]], ...]


def configure(parser: argparse.ArgumentParser) -> None:
    from ol.core.arguments import module_args

    module_args(parser)
    parser.add_argument("-c", dest="code", metavar="CODE", default=None,
                        help="run CODE (Python statements) instead of opening a prompt")


def run(args: argparse.Namespace, ctx) -> int:
    from ol.core.deps import policy_of

    module = ctx.module(args.module)
    with shell_environment(ctx.root, ctx.catalog, module, policy_of(args)) as (served, env):
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
        child = subprocess.Popen(command, env=env)
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


@contextmanager
def shell_environment(root, catalog, module, policy, implementation: str = "student"):
    """`with shell_environment(root, catalog, module, policy) as (served, env)`:
    tinyllm served as `ol shell` serves it (ol.core.runner.serving), and the
    environment of a child that runs BOOT.  implementation="reference" serves
    the reference for every module (the kit's chapter tests run so)."""
    from ol.core.runner import serving

    sources = {} if implementation == "reference" else _reference_until_started(root, module)
    with serving(root, module, catalog=catalog, implementation=implementation, ref_deps=policy,
                 sources=sources) as served:
        names = served.folder / "shell-names.json"
        names.write_text(json.dumps(ready_names(root, catalog, module)), encoding="utf-8")
        yield served, dict(served.env, **{NAMES_ENV: str(names)})


def _reference_until_started(root, module) -> dict:
    """The reference's files of `module` as overlay sources while the student
    has not started it (none of its files in python/), outside a student kit
    that withholds it; {} otherwise."""
    from ol.core import student_kit
    from ol.core.catalog import REFERENCE_TREE, STUDENT_TREE, dotted_name
    from ol.core.overlay import Source

    root = Path(root)
    if module.id in student_kit.withheld(root) or any((root / STUDENT_TREE / f).exists() for f in module.files):
        return {}
    return {dotted_name(f): Source.from_path(root / REFERENCE_TREE / f) for f in module.files}


def ready_names(root, catalog, module) -> list[tuple[str, list[str]]]:
    """[(dotted module, [the public names its contract defines])] for `module`
    and then its needs, nearest first: the order in which names are bound."""
    found = []
    for owner in (module, *reversed(catalog.needs_closure(module))):
        for dotted, file in owner.module_names.items():
            contract = owner.contract_for(file)
            path = Path(root) / contract if contract else None
            found.append((dotted, contract_names(path.read_text(encoding="utf-8")) if path and path.exists() else []))
    return found


def contract_names(text: str) -> list[str]:
    """The public names a contract (.pyi) defines at its top level: functions,
    classes, constants; not what it imports."""
    names = []
    for node in ast.parse(text).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names.extend(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.append(node.target.id)
    return [name for name in dict.fromkeys(names) if not name.startswith("_")]


def _whose(ctx, path: str | None) -> str:
    """Where a served module comes from, as the student should read it."""
    if path is None:
        return "(text held by ol)"
    from ol.core.catalog import REFERENCE_TREE

    rel = str(Path(path).resolve().relative_to(ctx.root)) if Path(path).resolve().is_relative_to(ctx.root) else path
    return f"{ctx.show(rel)}  ({'the reference' if rel.startswith(REFERENCE_TREE) else 'yours'})"


# ---- in the child --------------------------------------------------------------------


def boot() -> None:
    """Run first in the child: install the overlay from $OL_OVERLAY, bind the
    ready names in __main__, then run CODE if one was given."""
    import __main__
    import os
    import traceback

    from ol.core.overlay import install_from_env

    finder = install_from_env()
    namespace = __main__.__dict__
    listed = os.environ.get(NAMES_ENV)
    contracts = json.loads(Path(listed).read_text(encoding="utf-8")) if listed else []
    ready = bind_ready_names(namespace, sorted(finder.mapping if finder else ()), contracts)
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


def bind_ready_names(namespace: dict, served: list[str], contracts: list) -> list[str]:
    """Bind np, the contracts' public names (in the order given: the first
    binding of a name wins), F, and each served module by its last name where
    that name is free; return the names bound, in that order."""
    import importlib

    ready = []

    def bind(name, value):
        if name not in namespace:
            namespace[name] = value
            ready.append(name)

    try:
        import numpy as np

        bind("np", np)
    except ImportError:
        pass
    modules = {}
    for name in served:
        try:
            modules[name] = importlib.import_module(name)
        except Exception as error:  # the student's file may not import yet: say so, and go on
            print(f"ol shell: could not import {name}: {type(error).__name__}: {error}", file=sys.stderr)
    for dotted, names in contracts:
        for name in names:
            if dotted in modules and hasattr(modules[dotted], name):
                bind(name, getattr(modules[dotted], name))
    if "tinyllm.autograd.functional" in modules:
        bind("F", modules["tinyllm.autograd.functional"])
    for dotted, module in modules.items():
        bind(dotted.rsplit(".", 1)[-1], module)
    return ready
