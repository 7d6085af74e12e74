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
    cli_main()


if __name__ == "__main__":
    main()
