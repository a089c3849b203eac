"""Datasets: synthetic laws, the packaged real data and plug-in datasets."""
