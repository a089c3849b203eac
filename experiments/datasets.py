"""Datasets for plug-ins: a facade over :mod:`experiments.data.datasets`, where the
interface is defined and documented, so dataset plug-ins written against earlier
versions keep running (``from experiments.datasets import Dataset``)."""

from experiments.data.datasets import Dataset, DatasetError, FixedDataset, SyntheticDataset

__all__ = ["Dataset", "DatasetError", "FixedDataset", "SyntheticDataset"]
