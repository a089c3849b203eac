"""The test suite, a package so that ``tests.<folder>.<module>`` names one test module in any
process: pytest's importlib mode gives each test file that name (its folders need no
``__init__.py``), test files import shared ones by it (``tests.mechanisms.median.test_duff``),
and a sweep's worker processes import by it a mechanism class that a test file defines.  A
package, not a namespace: ``tests`` must not be found elsewhere first (diffprivlib installs
a top-level ``tests`` package).  The folders below mirror ``mechanisms/``, ``experiments/``
and ``scripts/``; the shared helpers (``harness_mechanisms``, ``hostile_plugins``,
``results_helpers``, ``recorded_values``) are imported by their own names, ``tests/`` being on
the path (``pythonpath`` in pyproject.toml).
"""
