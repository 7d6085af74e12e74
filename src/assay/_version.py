"""Assay's version, in a module of its own: the package's modules read it without
importing the package (whose public API imports them in turn)."""

__version__ = "0.1.0"
