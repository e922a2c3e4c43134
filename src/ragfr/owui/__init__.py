"""owui."""
