"""The single source of posenc's version (read by pyproject.toml and written into every output)."""

__version__ = "0.1.0"
