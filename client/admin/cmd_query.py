"""query commands."""
