"""message commands."""
