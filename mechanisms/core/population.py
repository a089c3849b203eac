"""Population parameters of a law, for data clipped to ``[a, b]``.

A dataset drawn i.i.d. from a known law has a *population* counterpart θ of each
statistic T(S): the value T tends to as n grows.  The harness bounds the data by clipping
them to ``[a, b]`` before computing T(S) (:mod:`mechanisms.core.data`), so θ is the
parameter of the clipped variable ``Y = clip(X, a, b)``:

* the α-quantile: ``clip(F⁻¹(α), a, b)`` with ``F⁻¹(α) = inf{x : F(x) >= α}`` the law's
  ``ppf`` (clipping is monotone, so it maps a quantile of ``X`` to the same quantile of
  ``Y``; the median is α = 1/2, the limit of the lower median ``x_(ceil(n/2))``);
* the mean: ``E[Y] = E[X] + E[(a − X)⁺] − E[(X − b)⁺]`` when ``E[X]`` is finite, else
  ``a F(a) + b (1 − F(b)) + ∫_a^b x dF(x)`` (a Cauchy law on finite bounds);
* the mode of a *discrete* law on the integers: the smallest integer ``y`` of ``[a, b]``
  maximising ``P(Y = y)`` (the clipped ends carry the mass beyond them); a continuous law
  has none here (the mode statistic rounds the data to integers, and the rounded law's
  mode is not computed).

``law`` is a frozen ``scipy.stats`` distribution (``ppf``, ``cdf``, ``sf``, ``mean``,
``expect``, ``support`` and, when discrete, ``pmf``); see e.g. Serfling, "Approximation
Theorems of Mathematical Statistics" (1980), §2.3, for the sample quantile's convergence
to ``F⁻¹(α)``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

MAX_MODE_SUPPORT = 10**7
"""Most integers :func:`law_mode` scans (past it the mode is left unknown: None)."""


def _clip(value: float, lower: float, upper: float) -> float:
    return min(max(value, lower), upper)


def law_quantile(law: Any, alpha: float, lower: float, upper: float) -> float:
    """``clip(F⁻¹(alpha), lower, upper)`` (module docstring)."""
    return _clip(float(law.ppf(alpha)), lower, upper)


def clipped_mean(law: Any, lower: float, upper: float) -> float:
    """``E[clip(X, lower, upper)]`` for ``X ~ law`` (module docstring)."""
    low, high = (float(v) for v in law.support())
    mean = float(law.mean())
    if math.isfinite(mean):
        below = float(law.expect(lambda x: lower - x, ub=lower)) if lower > low else 0.0
        above = float(law.expect(lambda x: x - upper, lb=upper)) if upper < high else 0.0
        return mean + below - above
    inside = float(law.expect(lambda x: x, lb=lower, ub=upper))
    return lower * float(law.cdf(lower)) + upper * float(law.sf(upper)) + inside


def law_mode(law: Any, lower: float, upper: float) -> float | None:
    """The smallest most probable integer of ``clip(X, lower, upper)`` for a discrete ``law``
    on the integers; None for a continuous law or a range wider than
    :data:`MAX_MODE_SUPPORT`."""
    if not hasattr(law, "pmf"):
        return None
    low, high = (float(v) for v in law.support())
    first, last = max(math.ceil(lower), low), min(math.floor(upper), high)
    if not (math.isfinite(first) and math.isfinite(last)) or last - first >= MAX_MODE_SUPPORT:
        return None
    points = np.arange(first, last + 1)
    mass = law.pmf(points)
    mass[0] += float(law.cdf(first - 1)) if first > low else 0.0  # the mass clipped up to a
    mass[-1] += float(law.sf(last)) if last < high else 0.0  # and down to b
    return float(points[int(np.argmax(mass))])
