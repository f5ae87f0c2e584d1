"""Request processors of the broker, one module per family; each owns its status -> code table."""
