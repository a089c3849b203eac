"""Mechanisms that need no bounds: Durfee's AboveThreshold quantile
(:mod:`mechanisms.unbounded.quantile`) and a private range finder before Duff
(:mod:`mechanisms.unbounded.range_finder`)."""
