"""The Duff paper's Figures 2 and 3 (Vertebral Column): ``duff-plot figure2``."""
