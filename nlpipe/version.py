"""The package version, importable from every layer (model directories record it)."""
__version__ = "0.1.0"
