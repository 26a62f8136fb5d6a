"""`ol reset MODULE [--remove]`: a fresh stub in place of the student's
files, after a backup; with --remove, the module back to not started."""

from __future__ import annotations

from ol.core.arguments import module_arg
from ol.core.command import Context
from ol.core.exits import OK
from ol.core.runner import NotReady
from ol.core.state import STARTED
from ol.student.workspace import BACKUP_DIR, remove_module, reset_module

DESCRIPTION = (
    f"Copies the module's files to {BACKUP_DIR}/MODULE/TIMESTAMP/ (printed; never overwritten),\n"
    "then writes fresh stubs in their place.  With --remove it deletes them instead: the module\n"
    "is not started again, and --ref-deps and --ref-unstarted serve the reference's in its place.\n"
    "Your own test folder is not touched."
)


def configure(parser) -> None:
    module_arg(parser)
    parser.add_argument("--remove", action="store_true",
                        help="take the module back to not started: save your files (as reset does), then "
                             "delete them, so that --ref-deps and --ref-unstarted serve the reference's")


def run(args, ctx: Context) -> int:
    module = ctx.module(args.module)
    if not ctx.store.status(module).at_least(STARTED):
        raise NotReady(f"nothing to reset: {module.id} is not started. ./ol start {module.id} writes its stubs.")
    if args.remove:
        result = remove_module(ctx.root, module)
        ctx.store.forget(module)
    else:
        result = reset_module(ctx.root, module)
        ctx.store.record(module, STARTED)
    if result.backup_dir:
        ctx.say("Saved your files before " + ("deleting" if args.remove else "replacing") + " them:")
        for rel in result.backed_up:
            ctx.say(f"  {ctx.show(rel)}  ->  {ctx.show(result.backup_dir + '/' + rel)}")
        ctx.say(f"backup: {ctx.show(result.backup_dir)}")
    for rel in result.written:
        ctx.say(f"Wrote a fresh stub: {ctx.show(rel)}")
    for rel in result.unchanged:
        ctx.say(f"Already a fresh stub (left as it is): {ctx.show(rel)}")
    for rel in result.removed:
        ctx.say(f"Deleted: {ctx.show(rel)}" + ("" if rel in result.backed_up else "  (a fresh stub: nothing of yours)"))
    if args.remove:
        ctx.say(f"{module.id} is not started now: --ref-deps and --ref-unstarted take it from the reference; "
                f"{ctx.ol} start {module.id} writes fresh stubs again.")
    ctx.say(f"Your own tests in {ctx.show(module.student_tests + '/')} are left as they are.")
    if result.backup_dir:
        first = result.backed_up[0]
        ctx.say(f"To undo: cp {ctx.show(result.backup_dir + '/' + first)} {ctx.show(first)}")
    return OK
