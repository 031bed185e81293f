"""recitation: audit large language models for memorization of their training data."""

__version__ = "0.1.0"
