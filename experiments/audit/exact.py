"""Audit a median mechanism for privacy on neighbouring datasets, from its exact cdf.

Confidence intervals whose two ends are independent releases with exact cdfs
(the buffered exponential mechanisms of :mod:`mechanisms.intervals`) are audited
end by end: the loss of the pair is the sum of the ends' (:func:`factor_probabilities`).
Releases of m quantiles at once with exact marginal cdfs are audited level by level
(:func:`marginal_probabilities`; :mod:`experiments.audit.vector` for what that checks).

For one configured mechanism: pairs of neighbouring datasets under the
mechanism's declared relation (``guarantee.neighbouring``;
:func:`experiments.audit.pairs.neighbour_pairs`), both releases cut
into the same partition of the real line (:func:`~experiments.audit.pairs.cdf_points`),
cell probabilities as differences of the cdf.  The empty dataset, which
``Mechanism.release`` rejects as input (it is reached through
``bounding="drop"``), is released through the ``_release`` hook that
``release`` ends in.  Only the generic interface is used (``guarantee``,
``release``, ``Release.cdf``), so any mechanism with an exact ``cdf`` can be
audited; one whose ``cdf`` raises ``NotImplementedError`` is reported as
``no cdf: skipped``.

Reported statistic, maximised over pairs, both directions and cells:

* pure ε-DP (``guarantee.delta == 0``): the privacy loss ``log(P_S(I) / P_S'(I))``
  divided by ε, using the lower bound ``log((P - r) / (Q + r))`` with ``r`` the
  resolution (or the ``cdf_error`` a release declares, if larger: :func:`cell_resolution`),
  an upper bound on the float error of a cell probability (cells
  with ``P <= r`` are skipped).  A value above 1 is a violation.
* approximate (ε, δ)-DP (``delta > 0``, ε the guarantee's epsilon): the
  hockey-stick divergence ``Σ_cells max(0, P_S(cell) - e^ε P_S'(cell))`` divided
  by δ, with ``P - r`` and ``Q + r`` again.  On a partition this is a *lower
  bound* of the true divergence (the best set need not be a union of cells).  A
  value above 1 is a violation.

A mechanism whose guarantee has ``data_dependent_tuning`` ("oracle" tuning) has
no guarantee to check: its numbers are shown and marked ``no guarantee``.  A
mechanism that cannot be imported, configured or run is reported with its
error; the audit goes on.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from experiments.audit.pairs import LOWER, UPPER, cdf_points, neighbour_pairs
from mechanisms import registry
from mechanisms.core.guarantee import Guarantee
from mechanisms.core.interface import Mechanism, OutputDistribution, Release
from mechanisms.intervals.base import IntervalRelease
from mechanisms.multi.release import QuantilesRelease

NO_CDF = "no cdf: skipped"
"""The status of a mechanism whose release has no exact cdf (``duff-audit`` then audits it
from samples: :mod:`experiments.audit.sampled`)."""

TOLERANCE = 1e-6
"""Relative slack before a statistic above 1 counts as a violation (float noise)."""

Factory = Callable[[], Mechanism]
"""Builds the configured mechanism (errors it raises are reported, not fatal)."""


class NoCdfError(Exception):
    """A release's ``cdf`` raised ``NotImplementedError``: its mechanism cannot be audited."""


def cell_probabilities(release: Release, points: np.ndarray) -> np.ndarray:
    """``P(cell)`` for the cells ``(-inf, p_0], (p_0, p_1], ..., (p_last, inf)``."""
    try:
        cdf = np.asarray(release.cdf(points), float)
    except NotImplementedError as error:
        raise NoCdfError(str(error)) from error
    return np.diff(np.concatenate([[0.0], cdf, [1.0]]))


def marginal_probabilities(release: QuantilesRelease, j: int, points: np.ndarray) -> np.ndarray:
    """``P(cell)`` of coordinate ``j`` of an m-quantiles release, from its exact marginal cdf."""
    try:
        cdf = np.asarray(release.marginal_cdf(j, points), float)
    except NotImplementedError as error:
        raise NoCdfError(str(error)) from error
    return np.diff(np.concatenate([[0.0], cdf, [1.0]]))


def factor_probabilities(release: OutputDistribution, points: np.ndarray) -> list[np.ndarray]:
    """The cell probabilities of each independent factor of a release's output: the release
    itself for a point estimate; each end for an interval with independent ends
    (:class:`mechanisms.intervals.base.IndependentEndpoints`: the pair's cells are the
    products of the ends' cells, so its privacy loss is the sum of theirs; sorting the
    ends is post-processing).  An interval without independent ends has no exact
    distribution here (:class:`NoCdfError`)."""
    if isinstance(release, Release):
        return [cell_probabilities(release, points)]
    ends = getattr(release, "ends", None)
    if not isinstance(release, IntervalRelease) or ends is None:
        raise NoCdfError(f"{type(release).__name__} has no exact distribution of its output")
    cdfs = [np.array([end.cdf(float(t)) for t in points]) for end in ends]
    return [np.diff(np.concatenate([[0.0], cdf, [1.0]])) for cdf in cdfs]


def loss_lower_bound(p: np.ndarray, q: np.ndarray, resolution: float) -> float:
    """``max over cells of log((P - r)/(Q + r))`` over cells with ``P > r`` (else -inf)."""
    usable = p > resolution
    if not usable.any():
        return -math.inf
    return float(np.max(np.log(p[usable] - resolution) - np.log(q[usable] + resolution)))


def hockey_stick_lower_bound(
    p: np.ndarray, q: np.ndarray, epsilon: float, resolution: float
) -> float:
    """``Σ_cells max(0, (P - r) - e^ε (Q + r))``: a lower bound of the divergence."""
    return float(np.sum(np.maximum(0.0, (p - resolution) - math.exp(epsilon) * (q + resolution))))


def error_status(error: Exception) -> str:
    """The status of a mechanism that raised ``error``."""
    return f"ERROR {type(error).__name__}: {error}"


@dataclass
class AuditResult:
    """The audit of one configured mechanism at one ε (``statistic``: the maximum)."""

    label: str
    guarantee: str = ""
    epsilon: float = math.nan
    delta: float = 0.0
    neighbouring: str = ""
    statistic_name: str = ""
    statistic: float = -math.inf
    worst: str = ""
    pairs: int = 0
    cells: int = 0
    seconds: float = 0.0
    status: str = "ok"

    def claims(self, guarantee: Guarantee, statistic_names: tuple[str, str]) -> bool:
        """Record ``guarantee`` and the statistic checked against it (the first of
        ``statistic_names`` for pure DP, the second for δ > 0); False, with the status
        said, when it claims no privacy at all (ε = ∞: nothing to audit)."""
        self.guarantee, self.neighbouring = str(guarantee), guarantee.neighbouring.value
        self.epsilon, self.delta = guarantee.epsilon, guarantee.delta
        self.statistic_name = statistic_names[0] if guarantee.delta == 0 else statistic_names[1]
        if not math.isfinite(guarantee.epsilon):
            self.status = "no guarantee (not private)"
            return False
        return True

    @property
    def failed(self) -> bool:
        """A violation or an error (what makes the exit status 1)."""
        return self.status == "VIOLATION" or self.status.startswith("ERROR")


def release_of(mechanism: Mechanism, data: np.ndarray) -> OutputDistribution:
    """The release on sorted ``data`` inside ``[LOWER, UPPER]``, the empty dataset included."""
    if data.size == 0:  # ``release`` rejects empty input; ``_release`` is what it calls
        return mechanism._release(data, LOWER, UPPER)
    return mechanism.release(data, (LOWER, UPPER))


def cell_resolution(releases: tuple[OutputDistribution, ...], resolution: float) -> float:
    """The float error of a cell probability for this pair: ``resolution``, or the larger
    ``cdf_error`` a release declares (a cdf computed by quadrature is accurate to its
    error bound, not to the last bit: a cell probability below it carries no information)."""
    declared = [float(getattr(release, "cdf_error", 0.0)) for release in releases]
    return max([resolution, *declared])


def pair_statistic(
    releases: tuple[OutputDistribution, OutputDistribution],
    points: np.ndarray,
    guarantee: Guarantee,
    resolution: float,
) -> float:
    """loss/ε (pure DP) or HS/δ (δ > 0) of one pair, the larger of both directions; the
    loss of a release with independent factors (an interval's ends) is the sum of theirs;
    for m quantiles at once, the largest over the levels of each marginal's (a necessary
    check only: :mod:`experiments.audit.vector`)."""
    first_release, second_release = releases
    if isinstance(first_release, QuantilesRelease) and isinstance(second_release, QuantilesRelease):
        return max(
            factors_statistic(
                [marginal_probabilities(first_release, j, points)],
                [marginal_probabilities(second_release, j, points)],
                guarantee,
                resolution,
            )
            for j in range(first_release.m)
        )
    first, second = (factor_probabilities(release, points) for release in releases)
    return factors_statistic(first, second, guarantee, resolution)


def factors_statistic(
    first: list[np.ndarray], second: list[np.ndarray], guarantee: Guarantee, resolution: float
) -> float:
    """:func:`pair_statistic` from the cell probabilities of each factor of both releases."""
    if guarantee.delta == 0:
        loss = max(
            sum(loss_lower_bound(p, q, resolution) for p, q in zip(first, second, strict=True)),
            sum(loss_lower_bound(q, p, resolution) for p, q in zip(first, second, strict=True)),
        )
        return loss / guarantee.epsilon
    if len(first) != 1:
        raise NoCdfError("the (eps, delta) audit of a release with several factors is not exact")
    (p,), (q,) = first, second
    divergence = max(
        hockey_stick_lower_bound(p, q, guarantee.epsilon, resolution),
        hockey_stick_lower_bound(q, p, guarantee.epsilon, resolution),
    )
    return divergence / guarantee.delta


def audit(
    label: str,
    factory: Factory,
    *,
    pairs: int,
    max_size: int,
    cells: int,
    seed: int,
    resolution: float,
    large: int = 0,
) -> AuditResult:
    """Run the check for one configured mechanism; errors become the result's status."""
    result = AuditResult(label)
    start = time.perf_counter()
    try:
        mechanism = factory()
        guarantee = mechanism.guarantee
        if not result.claims(guarantee, ("loss/eps", "HS/delta")):
            return result
        rng = np.random.default_rng(seed)
        for pair in neighbour_pairs(rng, guarantee.neighbouring, pairs, max_size, large):
            releases = (release_of(mechanism, pair.first), release_of(mechanism, pair.second))
            points = cdf_points(pair, cells)
            value = pair_statistic(
                releases, points, guarantee, cell_resolution(releases, resolution)
            )
            result.pairs += 1
            result.cells = max(result.cells, points.size + 1)
            if value > result.statistic:
                result.statistic, result.worst = value, pair.label
        if guarantee.data_dependent_tuning:
            result.status = "no guarantee (oracle tuning)"
        elif result.statistic > 1 + TOLERANCE:
            result.status = "VIOLATION"
    except NoCdfError:
        result.status = NO_CDF
    except Exception as error:  # report and carry on with the next mechanism
        result.status = error_status(error)
    result.seconds = time.perf_counter() - start
    return result


def factory_for(name: str, options: dict[str, object], epsilon: float, delta: float) -> Factory:
    """Builds ``name`` with ``options`` at ``epsilon`` (and ``delta`` if it takes one)."""

    def build() -> Mechanism:
        cls = registry.get(name)
        return registry.make(
            name,
            epsilon=epsilon if cls.requires_epsilon else None,  # a non-private reference
            delta=delta if cls.requires_delta else None,
            **options,
        )

    return build


@dataclass
class Audit:
    """Parameters and results of one run of the audit."""

    parameters: dict[str, Any]
    results: list[AuditResult] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> dict[str, dict[str, Any]]:
        """Per mechanism: the largest statistic over ε, and the worst status."""
        summary: dict[str, dict[str, Any]] = {}
        for r in self.results:
            entry = summary.setdefault(
                r.label, {"statistic": r.statistic_name, "max": -math.inf, "status": "ok"}
            )
            entry["statistic"] = entry["statistic"] or r.statistic_name
            entry["max"] = max(entry["max"], r.statistic)
            if r.status != "ok" and (entry["status"] == "ok" or r.failed):
                entry["status"] = r.status
        return summary
