"""group commands."""
