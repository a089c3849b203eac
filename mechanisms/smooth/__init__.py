"""Smooth sensitivity (quantiles, median envelope, trimmed mean) and the tuning of its
parameters."""
