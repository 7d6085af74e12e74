"""``python -m assay`` and the ``assay`` console script.

The command-line module pulls in NumPy, SciPy and pandas; importing it inside this
function lets a Ctrl-C during those imports end quietly instead of with a traceback.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import NoReturn


def main() -> None:
    from assay.execute.interrupts import install

    install()  # SIGTERM and SIGHUP end assay as Ctrl-C does: every finally-block runs
    try:
        from assay.cli import main as cli_main
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        sys.exit(130)
    code: str | int | None = 0
    try:
        cli_main()
    except SystemExit as exc:
        code = exc.code
    finally:
        # CPython (3.11) takes a KeyboardInterrupt that ends a string eval() (how
        # namedtuple makes its classes, e.g. while pandas is imported mid-study) for one
        # that ended the program, and then makes ``python -m`` die by SIGINT instead of
        # exiting with our status; the mark is reset by the next string eval
        eval("None")
    exit_now(code)


def exit_now(code: str | int | None) -> NoReturn:
    """End the process with ``code`` (as ``sys.exit`` takes it) as a normal exit does,
    less the interpreter's tear-down: the exit handlers run (the store's, the session
    cgroup's, Dask's, temporary folders'), standard output and error are flushed, and
    the process ends without freeing every module and object one by one, which took
    ~60 ms with NumPy and pydantic loaded (issue #17: a fifth of a short study's own
    time). Where a thread other than the main one must be waited for, the normal exit.
    """
    main_thread = threading.main_thread()
    if any(t is not main_thread and not t.daemon and t.is_alive() for t in threading.enumerate()):
        sys.exit(code)
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:  # a message, as sys.exit prints it
        print(code, file=sys.stderr)
        status = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (| head), a closed stream
            if status == 0:
                status = 120  # as the interpreter's exit reports an unflushable stdout
    os._exit(status & 0xFF)


if __name__ == "__main__":
    main()
