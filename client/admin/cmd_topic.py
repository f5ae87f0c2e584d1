"""topic commands."""
