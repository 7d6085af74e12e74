"""``python -m assay`` and the ``assay`` console script.

The command-line module pulls in NumPy, SciPy and pandas; importing it inside this
function lets a Ctrl-C during those imports end quietly instead of with a traceback.
"""

from __future__ import annotations

import sys


def main() -> None:
    from assay.execute.interrupts import install

    install()  # SIGTERM and SIGHUP end assay as Ctrl-C does: every finally-block runs
    try:
        from assay.cli import main as cli_main
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        sys.exit(130)
    try:
        cli_main()
    finally:
        # CPython (3.11) takes a KeyboardInterrupt that ends a string eval() (how
        # namedtuple makes its classes, e.g. while pandas is imported mid-study) for one
        # that ended the program, and then makes ``python -m`` die by SIGINT instead of
        # exiting with our status; the mark is reset by the next string eval
        eval("None")


if __name__ == "__main__":
    main()
