"""The benchmark harness: datasets, work plan, parallel run and results files.

Knows mechanisms only through :func:`mechanisms.make` and the ``Release``
interface.  Entry point: ``python -m experiments.run`` (see :mod:`experiments.run`).
"""

from experiments.harness.config import register_resolvers

register_resolvers()  # the configs' ${duff_run_id:} resolves wherever they are composed
