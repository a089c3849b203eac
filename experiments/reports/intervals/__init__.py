"""Coverage and width of the median's confidence intervals: ``duff-plot intervals``."""
