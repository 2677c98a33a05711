"""tensoropt package."""
