"""The one exception type every `ol` command turns into a message and an exit code."""

from __future__ import annotations


class OlError(Exception):
    """A problem the user can fix, with a message that says how.

    The CLI prints the message (no traceback) and exits with `exit_code`:
    2 when the command could not run as asked (unknown module, module not
    started, a contract or course test missing), 1 for a refusal such as
    `ol diff` before the course tests pass.
    """

    exit_code = 2
