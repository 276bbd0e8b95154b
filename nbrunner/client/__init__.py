"""client layer."""
