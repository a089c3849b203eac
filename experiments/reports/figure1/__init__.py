"""The Duff paper's Figure 1: ``duff-plot figure1``."""
