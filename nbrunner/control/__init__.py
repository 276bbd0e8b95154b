"""control layer."""
