"""The foundation of the experiments: identity-keyed seeds and atomic file writes."""
