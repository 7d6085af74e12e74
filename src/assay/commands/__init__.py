"""Subcommands of the ``assay`` command line that live in their own module."""
