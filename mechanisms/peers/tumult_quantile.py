"""Tumult Core's DP quantile (``NoisyQuantile``) as a mechanism.

What the library computes (Tumult Core 0.20, PyPI ``tmlt.core``;
``tmlt.core.measurements.pandas_measurements.series.NoisyQuantile``, the measurement
that ``tmlt.core.measurements.aggregations.create_quantile_measurement`` runs on each
group of a Spark DataFrame).  Its docstrings (``NoisyQuantile``,
``_select_quantile_interval``, ``_get_intervals_with_ranks``): the ``n`` values are
sorted and cut into the intervals between ``lower``, the distinct values strictly
inside ``(lower, upper)`` and ``upper``, each interval ``(l, u)`` with the ``rank`` of
its interior (the number of values below it); the interval with the largest noisy score

    log(u - l) - |rank - q·n|·ε / (2·max(q, 1 - q)) + G,    G ~ Gumbel(0, 1) i.i.d.,

is chosen and the output is uniform on it.  That is the exponential mechanism with
density ``∝ exp(-ε·|i - q·n| / (2·max(q, 1 - q)))`` on gap ``i`` ("The Exponential
Mechanism for Medians", eq. 2.2, with the add/remove sensitivity ``max(q, 1 - q)`` of
its Theorem 3): exactly :mod:`mechanisms.median.quantile_em` with
``neighbours="add_remove"``.  Empty gaps (ties, points at the bounds) are never
intervals, which is the mass 0 the piecewise-uniform law gives them.  The library does
it in exact interval arithmetic (python-flint ``arb`` balls): ``q`` and the bounds are
the exact binary values of their floats, the Gumbel noise is refined 15 bits at a time
until one score is certainly the largest, and the uniform draw is an inverse-cdf sample
at the precision it needs.  So the output law is the EM's exactly, with the library's
float ``ε`` (``ExactNumber(ε).to_float(round_up=False)``, the float itself for a float
``ε``) and the exact binary ``q``.

Output distribution (:meth:`TumultRelease.cdf`): that EM's exact cdf,
:class:`mechanisms.sampling.piecewise.PiecewiseUniformRelease` with scores
``-ε·|i - q·n| / (2·max(q, 1 - q))`` computed from the exact split ``q·n = whole + f``
(:func:`tumult_em`), checked against the library's draws in
``tests/mechanisms/peers/test_tumult_quantile.py``.  For a ``q`` with a finite decimal
the binary and decimal ``q·n`` differ by ``n·2**-54`` at most, so the cdf and
``quantile_em``'s agree to float rounding (exactly for dyadic ``q``, the median).

Privacy (its documentation: ``NoisyQuantile.__init__`` sets ``input_metric =
SymmetricDifference()``, "the number of elements that are in only one of two sets",
i.e. add/remove one record at distance 1, and ``privacy_function(d_in) = ε·d_in`` for
``output_measure = PureDP()``; ``ρ = (ε·d_in)²/8`` for ``RhoZCDP``, citing Cesar &
Rogers 2021).  The adapter builds the measurement with ``PureDP`` and the exact
``ε`` (``Fraction`` of the float: the library refuses floats other than ±inf as
inexact), checks that ``privacy_function(1)`` is the stated ε at every release, and
states ε-DP for add/remove neighbours.  A replacement is two changes
(``SymmetricDifference`` 2), for which the library certifies 2ε.

Sampling: one call of the measurement per draw.  Its randomness is Tumult's own
``tmlt.core.random.rng.prng()`` (numpy ``Generator`` over RDRAND, or over
``os.urandom`` without it), which cannot be seeded: the ``rng`` given to
:meth:`TumultRelease.sample` is checked but unused, and the draws are not
reproducible.  Each call re-sorts the data and builds and scores every interval in
Python ``arb`` arithmetic, with no per-dataset work the library lets a caller reuse:
13-27 µs per data point per draw (measured: 0.013 s at n = 10³, 1.6 s at 10⁵, 16 s at
10⁶, 270 s and 6 GB of memory at 10⁷).  Importing it takes about 4 s (pyspark, sympy,
scipy.stats).

A library problem at huge ε: ``_select_quantile_interval`` computes ``q·n`` and
``max(q, 1 - q)`` once, at 53-bit precision, so for a ``q`` whose ``q·n`` needs more bits
(0.3, 0.1: not the median) every score carries an error ball of radius about
``ε·n·2**-53`` that the later refinement never shrinks.  When the two best noisy scores
differ by less than that, its loop refines the Gumbel noise forever: seen at ε = 1e20
with ``alpha = 0.3`` on 5 points (a draw that takes 0.1 ms at ε = 1e12 did not finish in
40 s).  By this estimate a draw hangs with probability of order ``ε·n·1e-16``:
negligible at ordinary ε, certain near ties at ε ≳ 1e16/n.  Dyadic ``q`` (the median,
0.25) are exact and unaffected.  The adapter does not guard it (the risk depends on
``n``, which errors must not: :mod:`mechanisms.core.interface`).

Installation: Tumult Core 0.20 declares ``numpy<2``, ``pandas<2`` and
``pyspark[sql]<3.6`` on Python 3.11 (``pyspark.sql`` is imported by its metrics
module), which conflicts with duff-bench's ``pandas>=2.1``: no extra of duff-bench can
install it, and :data:`INSTALL` installs it beside them without its pins (what these
tests run on; the quantile touches neither Spark nor the JVM).
"""

from __future__ import annotations

from fractions import Fraction
from importlib.util import find_spec
from types import ModuleType
from typing import Any

import numpy as np

from mechanisms.core.guarantee import Neighbouring
from mechanisms.core.interface import Release
from mechanisms.core.quantiles import check_alpha, quantile_value
from mechanisms.core.registration import register
from mechanisms.core.validation import check_rng, check_size
from mechanisms.peers import PeerMechanism
from mechanisms.sampling.piecewise import PiecewiseUniformRelease, score_epsilon

MODULE = "tmlt.core.measurements.pandas_measurements.series"
"""Where ``NoisyQuantile`` lives."""
INSTALL = (
    'pip install --no-deps "tmlt.core>=0.20,<0.21" "pyspark>=3.4,<3.6" && '
    'pip install "python-flint>=0.9,<0.10" "randomgen>=1.26,<=2.3.0" "sympy>=1.8,<1.13" '
    '"typeguard>=4,<5" "py4j>=0.10.9.7,<0.10.9.10"'
)
"""Tumult Core 0.20 beside numpy 2 and pandas >= 2.1 (its own pins would downgrade both)."""


def missing_tumult(detail: str = "") -> str:
    """The message for ``tumult_quantile`` when Tumult Core cannot be imported."""
    message = (
        "mechanism 'tumult_quantile' needs the optional package 'tmlt.core' (Tumult Core "
        "0.20), which no extra of duff-bench installs: on Python 3.11 it pins numpy<2 and "
        "pandas<2, against duff-bench's pandas>=2.1; install it without its pins: " + INSTALL
    )
    return f"{message}: {detail}" if detail else message


def tumult_modules() -> tuple[ModuleType, ModuleType, ModuleType, ModuleType]:
    """Tumult Core's quantile, pandas and numpy domains, and measures, imported (seconds:
    it imports pyspark and sympy), or an ``ImportError`` saying how to install them."""
    from importlib import import_module

    try:
        return (
            import_module(MODULE),
            import_module("tmlt.core.domains.pandas_domains"),
            import_module("tmlt.core.domains.numpy_domains"),
            import_module("tmlt.core.measures"),
        )
    except ImportError as err:
        raise ImportError(missing_tumult(str(err))) from err


def _distance_change(
    whole: int, rest: int, denominator: int, gaps: np.ndarray, reference: int
) -> np.ndarray:
    """``|i - q·n| - |reference - q·n|`` with ``q·n = whole + rest/denominator`` exactly,
    each correct to an ulp or two of itself (the method of
    :func:`mechanisms.core.quantiles.rank_distance_change`, for the binary ``q``)."""
    g = Fraction(2 * rest - denominator, denominator)  # f - (1 - f)
    g_hi = float(g)
    g_lo = float(g - Fraction(g_hi))
    i = np.asarray(gaps, dtype=np.int64)
    right = i > whole
    integer = np.where(right, i - (whole + 1), whole - i)
    reference_right = reference > whole
    integer -= reference - (whole + 1) if reference_right else whole - reference
    side = np.subtract(reference_right, right, dtype=np.float64)
    change = integer.astype(np.float64)
    change += side * g_hi
    change += side * g_lo
    return change


def tumult_em(
    sorted_x: np.ndarray, lower: float, upper: float, alpha: float, library_epsilon: float
) -> PiecewiseUniformRelease:
    """The exact law of ``NoisyQuantile`` on sorted data inside ``[lower, upper]``: the EM with
    gap scores ``-ε·|i - q·n| / (2·max(q, 1 - q))``, ``q`` the binary value of ``alpha``."""
    n = int(sorted_x.size)
    q = Fraction(alpha)  # arb(q): the float's exact binary value
    whole, rest = divmod(q.numerator * n, q.denominator)
    fraction = rest / q.denominator
    scale = score_epsilon(library_epsilon, n) / (2.0 * max(alpha, 1.0 - alpha))

    def log_score(gaps: np.ndarray) -> np.ndarray:
        distance = np.subtract(gaps, whole, dtype=np.float64)  # exact: integers below 2**53
        distance -= fraction
        np.abs(distance, out=distance)
        distance *= -scale
        return distance

    def relative_score(gaps: np.ndarray, reference: int) -> np.ndarray:
        change = _distance_change(whole, rest, q.denominator, gaps, reference)
        change *= -scale
        return change

    return PiecewiseUniformRelease(
        sorted_x,
        lower,
        upper,
        log_score,
        mode=whole + (fraction > 0.5),
        true_value=quantile_value(sorted_x, alpha, lower),
        relative_score=relative_score,
    )


class TumultRelease(Release):
    """Tumult's quantile on one dataset: library draws (unseedable), exact EM cdf."""

    def __init__(
        self, sorted_x: np.ndarray, lower: float, upper: float, *, alpha: float, epsilon: float
    ) -> None:
        self.lower, self.upper, self.n = float(lower), float(upper), int(sorted_x.size)
        self.alpha, self.epsilon = alpha, epsilon
        series, pandas_domains, numpy_domains, measures = tumult_modules()
        domain = pandas_domains.PandasSeriesDomain(numpy_domains.NumpyFloatDomain())
        self._measurement: Any = series.NoisyQuantile(
            input_domain=domain,
            output_measure=measures.PureDP(),
            quantile=alpha,
            lower=self.lower,
            upper=self.upper,
            epsilon=Fraction(epsilon),
        )
        certified = self._measurement.privacy_function(1).to_float(round_up=True)
        if certified > epsilon * (1 + 1e-12):
            raise RuntimeError(
                f"Tumult certifies epsilon {certified!r} for d_in = 1, above the stated {epsilon!r}"
            )
        # the float ε the library samples with (NoisyQuantile.__call__)
        self.library_epsilon = float(self._measurement.epsilon.to_float(round_up=False))
        if not 0.0 < self.library_epsilon <= epsilon:
            raise ValueError(
                f"epsilon: Tumult rounds epsilon={epsilon!r} to {self.library_epsilon!r}"
            )
        self._x = sorted_x
        self._exact = tumult_em(sorted_x, self.lower, self.upper, alpha, self.library_epsilon)
        self.true_value = self._exact.true_value
        self._series: Any = None

    @property
    def measurement(self) -> Any:
        """Tumult's ``NoisyQuantile`` this release calls (certified at construction)."""
        return self._measurement

    @property
    def series(self) -> Any:
        """The data as the pandas Series the measurement takes (built on first use)."""
        if self._series is None:
            import pandas as pd  # a dependency of duff-bench; imported when first needed

            self._series = pd.Series(self._x, copy=False)
        return self._series

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        """``size`` calls of the measurement (Tumult's own RNG; ``rng`` is checked, unused)."""
        size = check_size(size)
        check_rng(rng)
        measurement, series = self._measurement, self.series
        return np.array([measurement(series) for _ in range(size)], dtype=np.float64)

    def cdf(self, x: np.ndarray | float) -> np.ndarray:
        """Exact cdf of the EM the library samples (see the module docstring)."""
        return self._exact.cdf(x)


@register
class TumultQuantile(PeerMechanism):
    """Tumult Core's exponential-mechanism quantile; ε-DP, add/remove neighbours.

    Options: ``alpha`` (the quantile; 0.5 = median).  The neighbouring relation is the
    library's (``SymmetricDifference``, d_in = 1).
    """

    name = "tumult_quantile"
    statistics = frozenset({"median", "quantile"})
    library = "tmlt.core"
    neighbouring = Neighbouring.ADD_REMOVE

    @classmethod
    def installed(cls) -> bool:
        """Whether ``tmlt.core`` is found (``tmlt`` is a namespace package: a blocked or
        broken ``tmlt`` raises where a missing top-level package gives None)."""
        try:
            return find_spec(cls.library) is not None
        except (ImportError, ValueError):
            return False

    @classmethod
    def check_installed(cls) -> None:
        """Raise ``ImportError`` saying how to install Tumult Core unless it is installed."""
        if not cls.installed():
            raise ImportError(missing_tumult())

    def __init__(
        self,
        *,
        epsilon: float,
        delta: float | None = None,
        bounding: str = "clip",
        alpha: float = 0.5,
    ) -> None:
        super().__init__(epsilon=epsilon, delta=delta, bounding=bounding)
        tumult_modules()
        self.alpha = check_alpha(alpha)

    def source(self) -> str:
        return (
            "Tumult Core 0.20 NoisyQuantile: exponential mechanism over the intervals between "
            "the sorted points, score -|rank - q n| eps / (2 max(q, 1 - q)); input metric "
            "SymmetricDifference (add/remove one record), PureDP privacy_function(d_in) = "
            "eps d_in"
        )

    def _release(self, sorted_x: np.ndarray, lower: float, upper: float) -> Release:
        return TumultRelease(sorted_x, lower, upper, alpha=self.alpha, epsilon=self.epsilon)

    def __repr__(self) -> str:
        return f"TumultQuantile(epsilon={self.epsilon:g}, alpha={self.alpha:g})"
