"""The accuracy regression gate: baseline, verdicts."""
