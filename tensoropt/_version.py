"""The package version, in a module of its own so that any stage can read it."""

__all__ = ["__version__"]

__version__ = "0.1.0"
