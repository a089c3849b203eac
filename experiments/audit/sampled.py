"""The black-box audit of a configured mechanism: its releases' samples on neighbouring pairs.

Used by ``duff-audit`` for a mechanism whose release has no exact cdf (``cdf`` raises
``NotImplementedError``: a peer library's unseedable sampler, subsample and aggregate,
the tree- and recursion-based multi-quantile methods), and on request
(``--black-box always``) for any other, whose black-box bound must then stay below the
exact audit's value.  The pairs are the exact audit's adversarial ones
(:func:`experiments.audit.pairs.neighbour_pairs`: the empty dataset, the extremes, ties)
under the guarantee's neighbouring relation; each pair is audited from samples by
:func:`experiments.audit.black_box.audit_pair`.

Reported statistic, the largest over the pairs: ``eps_lower/eps``, the lower confidence
bound on the ε the pair achieves divided by the claimed ε, for a pure ε-DP claim; and
``HS_lower/delta``, the lower confidence bound on the hockey-stick divergence at the
claimed ε divided by δ, for an (ε, δ) claim.  A value above 1 is a violation.  Every
bound of one ``duff-audit`` run holds with probability at least ``1 − alpha_total``
(default 1e-9): the level is split over every mechanism, ε and pair the run audits from
samples (Bonferroni), so a correct mechanism is never flagged in practice.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from experiments.audit.black_box import (
    DEFAULT_SAMPLES,
    MIN_SAMPLES,
    PairAudit,
    Sampler,
    audit_pair,
)
from experiments.audit.exact import AuditResult, Factory, error_status, release_of
from experiments.audit.pairs import neighbour_pairs
from mechanisms.core.interface import OutputDistribution

BLACK_BOX_PAIRS = 8
"""Pairs per mechanism and ε: the tiny adversarial ones first (the empty dataset, a point
at each bound, ties), then random datasets with every edit in turn."""
SECONDS = 60.0
"""Time budget of one mechanism at one ε: a slow sampler gets fewer samples per pair
(:func:`affordable_samples`); the bounds stay valid, only their power drops."""
PILOT = 1_000
"""Outputs per side drawn (and discarded) to time a sampler."""


def affordable_samples(
    samplers: tuple[Sampler, Sampler], rng: np.random.Generator, samples: int, seconds: float
) -> int:
    """``samples``, or fewer if drawing them from both samplers would take over ``seconds``
    (timed on :data:`PILOT` discarded draws); at least :data:`MIN_SAMPLES`."""
    start = time.perf_counter()
    for sample in samplers:
        sample(PILOT, rng)
    per_output = (time.perf_counter() - start) / (2 * PILOT)
    return int(min(samples, max(MIN_SAMPLES, seconds / (2 * per_output))))


def sampler_of(release: OutputDistribution) -> Sampler:
    """``sample(size, rng)`` of one release."""
    return lambda size, rng: release.sample(size, rng)


def statistic_of(audit: PairAudit) -> float:
    """``eps_lower/eps`` (pure DP) or ``HS_lower/delta`` (δ > 0) of one pair."""
    if audit.delta == 0:
        return audit.epsilon_lower / audit.epsilon
    return audit.delta_lower / audit.delta


def audit_by_samples(
    label: str,
    factory: Factory,
    *,
    pairs: int = BLACK_BOX_PAIRS,
    max_size: int,
    samples: int = DEFAULT_SAMPLES,
    seconds: float = SECONDS,
    seed: int,
    alpha: float,
    audit_pair_fn: Callable[..., PairAudit] = audit_pair,
) -> AuditResult:
    """Audit one configured mechanism from samples on ``pairs`` neighbouring pairs, all its
    bounds at the family-wise level ``alpha``, up to ``samples`` outputs per side of a pair
    within about ``seconds`` in all; errors become the result's status."""
    result = AuditResult(f"{label} [black-box]")
    start = time.perf_counter()
    try:
        mechanism = factory()
        guarantee = mechanism.guarantee
        if not result.claims(guarantee, ("eps_lower/eps", "HS_lower/delta")):
            return result
        rng = np.random.default_rng(seed)
        violated = False
        for pair in neighbour_pairs(rng, guarantee.neighbouring, pairs, max_size):
            releases = (release_of(mechanism, pair.first), release_of(mechanism, pair.second))
            samplers = (sampler_of(releases[0]), sampler_of(releases[1]))
            budget = affordable_samples(samplers, rng, samples, seconds / pairs)
            audit = audit_pair_fn(
                *samplers,
                epsilon=guarantee.epsilon,
                delta=guarantee.delta,
                samples=budget,
                rng=rng,
                alpha_total=alpha,
                tests=pairs,
            )
            result.pairs += 1
            violated |= audit.violated
            value = statistic_of(audit)
            if value > result.statistic:
                result.statistic = value
                result.worst = f"{pair.label}: {audit.event} ({budget} samples)"
        if guarantee.data_dependent_tuning:
            result.status = "no guarantee (oracle tuning)"
        elif violated:
            result.status = "VIOLATION"
    except Exception as error:  # report and carry on with the next mechanism
        result.status = error_status(error)
    result.seconds = time.perf_counter() - start
    return result
