"""Exit codes of every `ol` command, defined once.

    OK            0    done: tests pass, the check passed, verify is sound
    NOT_PASSED    1    the work is not there yet: tests fail, the check did not
                       pass, verify found problems, diff refused before passing
    ERROR         2    the command could not do its job: a usage error, an
                       unknown or unstarted module, or an internal fault of
                       the grader (never a score)
    INTERRUPTED   130  stopped by SIGINT (Ctrl-C); nothing left behind
    TERMINATED    143  stopped by SIGTERM; nothing left behind
    BROKEN_PIPE   141  whoever read the output stopped reading (`ol list | head -3`),
                       as a shell reports a command that SIGPIPE ended
"""

OK, NOT_PASSED, ERROR = 0, 1, 2
INTERRUPTED, BROKEN_PIPE, TERMINATED = 130, 141, 143
