"""The benchmark harness: datasets, work plan, parallel run and results files.

Knows mechanisms only through :func:`mechanisms.make` and the ``Release``
interface.  Entry point: ``python -m experiments.run`` (see :mod:`experiments.run`).
"""
