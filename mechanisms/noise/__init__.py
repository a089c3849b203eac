"""Noise laws (one hierarchy of standardised laws with exact cdfs), additive-noise releases,
scales, the Gaussian calibration and zero-concentrated DP."""
