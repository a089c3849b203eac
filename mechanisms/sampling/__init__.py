"""Exact log-space samplers: the piecewise-uniform exponential mechanism over gaps, racing
(Medina & Gillenwater's Algorithm 1) and the gap arrays of small data."""
