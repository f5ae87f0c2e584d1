"""stats commands."""
