"""serving layer."""
