"""frontier package."""
