"""`ol grade --ray ADDRESS`: each submission a task on an existing Ray cluster.

Ray (the `cluster` extra, pinned) does the scheduling; this file only says
what one task is.  The checkout travels in the job's runtime environment: a
clean copy of it (no student's work) and the module's mutant cache as the
working_dir, and the `ol` package as a py_module.  A task runs the very
function the local grader runs (ol.instructor.class_grading.one.grade_one) in a private folder
of the worker, so a grade is the same on Ray as on this machine.  The
workers need the same Python packages as this machine (numpy, pytest,
hypothesis, mutmut) and bubblewrap.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

from ol.core.errors import OlError
from ol.instructor.class_grading.one import GradeRecord
from ol.instructor.class_grading.processes import POLL

CHECKOUT, CACHE = "checkout", "mutant-cache"


class RayUnavailable(OlError):
    """Ray is not installed, or the cluster cannot be reached."""


def grade_task(module_id: str, student: str, files: dict[str, bytes], workers: int, time_limit: float,
               confinement: str) -> GradeRecord:
    """One submission, on a Ray worker whose working directory holds the checkout."""
    from ol.instructor.class_grading.one import grade_one

    here = Path.cwd()
    with tempfile.TemporaryDirectory(prefix="ol-grade-") as scratch:
        record = grade_one(here / CHECKOUT, module_id, files, workdir=Path(scratch) / "work", workers=workers,
                           time_limit=time_limit, mutant_cache=sorted((here / CACHE).glob("*.json")),
                           confinement=confinement)
    record.student = student   # the job's key (ol.instructor.class_grading.grade_cli groups the same files)
    return record


def grade_on_ray(address: str, staging: Path, ol_package: Path, module_id: str, jobs: list[tuple[str, dict]], *,
                 workers: int, time_limit: float, confinement: str,
                 on_done: Callable[[GradeRecord], None]) -> None:
    """Run every (student, files) job as a task; call on_done(record) as each ends.

    staging holds CHECKOUT and CACHE: it becomes the job's working_dir."""
    try:
        import ray
    except ImportError:
        raise RayUnavailable("--ray needs Ray: python -m pip install -e '.[cluster]' (ray==2.60.0)") from None
    try:
        ray.init(address=address, runtime_env={"working_dir": str(staging), "py_modules": [str(ol_package)]},
                 log_to_driver=False, logging_level="ERROR")
    except Exception as error:  # noqa: BLE001 (Ray raises many kinds: connection, auth, version)
        raise RayUnavailable(f"cannot join the Ray cluster at {address!r}: {error}") from None
    try:
        cpus = max(1, workers - 1)   # a check runs one more run than the cores it is given
        largest = max((node["Resources"].get("CPU", 0) for node in ray.nodes() if node.get("Alive")), default=0)
        if largest < cpus:
            raise RayUnavailable(f"each submission needs {cpus} CPUs on one node (--workers {workers}), but the "
                                 f"cluster's largest node has {largest:g}: pass --workers {int(largest) + 1} or fewer")
        task = ray.remote(num_cpus=cpus, max_retries=0)(grade_task)
        pending = {task.remote(module_id, student, files, workers, time_limit, confinement): student
                   for student, files in jobs}
        try:
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1, timeout=POLL)   # awake: see processes.py
                for ref in ready:
                    student = pending.pop(ref)
                    try:
                        record = ray.get(ref)
                    except Exception as error:  # noqa: BLE001 (the task's failure is this student's row)
                        record = GradeRecord(student=student, error=f"the Ray task failed: {type(error).__name__}: "
                                                                    f"{str(error)[-1000:]}")
                    on_done(record)
        except BaseException:             # Ctrl-C, SIGTERM: no task outlives the grading
            for ref in pending:           # a running task gets KeyboardInterrupt: grade_one ends its check
                ray.cancel(ref)
            raise
    finally:
        ray.shutdown()
