"""embmigrate."""
