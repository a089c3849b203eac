"""Privacy audits: exact (from a release's cdf) and black-box (from samples)."""
