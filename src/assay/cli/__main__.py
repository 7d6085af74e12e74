"""``python -m assay.cli``: the same command line as ``assay``."""

from assay.__main__ import main

if __name__ == "__main__":
    main()
