"""broker commands."""
