"""offset commands."""
