"""The exact audit of mechanisms that release m quantiles at once (vector outputs).

Two exact checks, chosen by what the release knows of its own law
(:func:`audit_exact`, which ``duff-audit`` calls for every mechanism):

* **Joint gap cells** (a release with ``gap_tuple_log_probabilities``: JointExp of
  Gillenwater, Joseph & Kulesza, "Differentially Private Quantiles", ICML 2021).  On small
  neighbouring pairs (at most :data:`JOINT_MAX_SIZE` points before an edit, the tiny ones of
  :func:`experiments.audit.pairs.neighbour_pairs` first), the common partition of ``[a, b]``
  at the points of both datasets has cells ``r`` of lengths ``l_r > 0``, each inside one gap
  ``g(r)`` (length ``L_g``) of either dataset.  The probability that the sorted output falls in
  the product of cells ``s = (s_1 <= ... <= s_m)`` is, from the law of the mechanism's gap
  tuples ``t = g(s)`` (the sampler's own exact law, so a mechanism that mis-scales its
  utility is audited as it runs) and the ``k_g`` sorted uniforms it places in each gap
  (:func:`refined_log_probabilities`)::

      P(s) = P(t) Π_g k_g! Π_{r ⊂ g} (l_r / L_g)^{c_r} / c_r!,    c_r = #{j : s_j = r},

  the multinomial chance that ``k_g`` uniforms of gap g put ``c_r`` in each cell ``r``; equal to
  ``exp(ε u / (2Δ)) Π_r l_r^{c_r} / c_r! / Z``, the mechanism's density times the volume
  ``L^k / k!`` of the sorted k-tuples of an interval.  The JointExp utility ``u`` counts the
  data below each output, so the density is constant on every product of cells and the ratio
  ``P_S(s) / P_S'(s)`` is the density ratio there: ``max_s |log P_S(s) / P_S'(s)|`` is the
  *whole* privacy loss of the pair (over every event of the output, not only these).
  Reported: that maximum over pairs divided by ε (``joint loss/eps``; ``joint HS/delta``,
  ``Σ_s max(0, P_S(s) − e^ε P_S'(s)) / δ``, for a δ > 0 claim); above ``1 + TOLERANCE``
  is a violation.  Pairs too large to enumerate (:data:`JOINT_LIMIT`) are skipped; if all
  are, the mechanism is ``no cdf: skipped`` (and audited from samples).
* **Marginals** (a release with an exact ``marginal_cdf``: the per-level methods
  ``ind_exp``, ``ind_duff``, ``app_ind_exp``, ``smooth_laplace_per_level``): the exact audit of
  :mod:`experiments.audit.exact` applied to each level's marginal, on the same adversarial
  pairs and partition (:func:`experiments.audit.exact.pair_statistic`), the largest over the
  levels reported (``marginal loss/eps``, ``marginal HS/delta``).  A marginal is a
  post-processing of the vector, so a mechanism that is (ε, δ)-DP has (ε, δ)-DP marginals:
  the check is *necessary only*; a leak visible only in the joint law of the levels passes it.

A release with neither (``approximate_quantiles``, ``tree_quantiles``,
``tree_quantiles_gaussian``) is ``no cdf: skipped`` here and audited from samples of whole
rows (:mod:`experiments.audit.sampled`; events: half-lines of each coordinate and of the
row's sum, :mod:`experiments.audit.black_box`).
"""

from __future__ import annotations

import itertools
import math
import time
from collections import Counter
from typing import Any

import numpy as np

from experiments.audit.exact import (
    NO_CDF,
    TOLERANCE,
    AuditResult,
    Factory,
    audit,
    error_status,
    release_of,
)
from experiments.audit.pairs import LOWER, UPPER, Pair, neighbour_pairs
from mechanisms.core.guarantee import Guarantee
from mechanisms.core.interface import Mechanism, OutputDistribution

JOINT_MAX_SIZE = 8
"""Largest dataset of the joint audit's pairs (the gap tuples are enumerated)."""
JOINT_LIMIT = 50_000
"""Most products of cells, or gap tuples of either dataset, one pair's joint audit
enumerates (larger pairs are skipped)."""
JointLaw = dict[tuple[int, ...], float]


def has_joint_law(release: OutputDistribution) -> bool:
    """Whether a release gives the exact law of its gap tuples (JointExp's)."""
    return callable(getattr(release, "gap_tuple_log_probabilities", None))


def common_edges(pair: Pair) -> np.ndarray:
    """``a``, the distinct points of both datasets inside ``(a, b)``, ``b``: the edges of the
    common partition (every cell of positive length)."""
    inner = np.concatenate([pair.first, pair.second])
    inner = inner[(inner > LOWER) & (inner < UPPER)]
    return np.unique(np.concatenate([[LOWER, UPPER], inner]))


def refined_log_probabilities(gap_law: JointLaw, data: np.ndarray, edges: np.ndarray) -> JointLaw:
    """``log P(s)`` for every non-decreasing m-tuple ``s`` of the cells between ``edges``, from
    the law ``gap_law`` of the gap tuples of ``data`` (the formula of the module docstring)."""
    data_edges = np.concatenate([[LOWER], np.sort(data), [UPPER]])
    # the data gap of each cell: the last data edge at or below the cell's left end (not its
    # midpoint, which rounds onto an end when the cell is one float wide)
    gap = np.searchsorted(data_edges, edges[:-1], side="right") - 1
    log_cell = np.log(np.diff(edges))
    log_gap = np.log(data_edges[gap + 1] - data_edges[gap])
    m = len(next(iter(gap_law)))
    law: JointLaw = {}
    for cells in itertools.combinations_with_replacement(range(edges.size - 1), m):
        log_p = gap_law[tuple(int(gap[r]) for r in cells)]
        log_p += sum(math.lgamma(k + 1) for k in Counter(int(gap[r]) for r in cells).values())
        for r, c in Counter(cells).items():
            log_p += c * (log_cell[r] - log_gap[r]) - math.lgamma(c + 1)
        law[cells] = log_p
    return law


def joint_statistic(first: JointLaw, second: JointLaw, guarantee: Guarantee) -> float:
    """``max_s |log P(s) − log Q(s)| / ε`` (pure DP) or the larger hockey-stick divergence
    ``Σ_s max(0, P(s) − e^ε Q(s)) / δ`` of the two directions (δ > 0)."""
    p = np.array([first[s] for s in first])
    q = np.array([second[s] for s in first])
    if guarantee.delta == 0:
        with np.errstate(invalid="ignore"):  # -inf − (-inf): an impossible cell on both sides
            gaps = np.abs(p - q)
        return float(np.max(np.where(np.isnan(gaps), 0.0, gaps))) / guarantee.epsilon
    scale = math.exp(guarantee.epsilon)
    divergence = max(
        float(np.sum(np.maximum(0.0, np.exp(a) - scale * np.exp(b)))) for a, b in ((p, q), (q, p))
    )
    return divergence / guarantee.delta


def audit_joint(mechanism: Mechanism, *, pairs: int, seed: int, result: AuditResult) -> AuditResult:
    """The joint gap-cell audit (module docstring) of a configured mechanism on ``pairs``
    neighbouring pairs of at most :data:`JOINT_MAX_SIZE` points, into ``result``."""
    guarantee = mechanism.guarantee
    if not result.claims(guarantee, ("joint loss/eps", "joint HS/delta")):
        return result
    rng = np.random.default_rng(seed)
    m = len(mechanism.alphas)  # type: ignore[attr-defined]
    for pair in neighbour_pairs(rng, guarantee.neighbouring, pairs, JOINT_MAX_SIZE):
        edges = common_edges(pair)
        cells = math.comb(edges.size - 2 + m, m)
        gap_tuples = math.comb(max(pair.first.size, pair.second.size) + m, m)
        if max(cells, gap_tuples) > JOINT_LIMIT:
            continue
        first, second = (
            refined_log_probabilities(
                release_of(mechanism, data).gap_tuple_log_probabilities(),  # type: ignore[attr-defined]
                data,
                edges,
            )
            for data in (pair.first, pair.second)
        )
        value = joint_statistic(first, second, guarantee)
        result.pairs += 1
        result.cells = max(result.cells, cells)
        if value > result.statistic:
            result.statistic, result.worst = value, pair.label
    if result.pairs == 0:
        result.status = NO_CDF
    elif result.statistic > 1 + TOLERANCE:
        result.status = "VIOLATION"
    return result


def _probe(factory: Factory) -> tuple[Mechanism | None, str]:
    """The configured mechanism and the exact check its releases allow: ``"joint"``,
    ``"marginal"`` (a vector release) or ``""`` (a point or an interval: the exact audit
    as it is); ``(None, "")`` if it cannot be built or released (the exact audit then
    reports the error)."""
    try:
        mechanism = factory()
        if "quantiles" not in getattr(mechanism, "statistics", ()):
            return mechanism, ""
        release = release_of(mechanism, np.array([LOWER, UPPER]))
    except Exception:
        return None, ""
    return mechanism, "joint" if has_joint_law(release) else "marginal"


def audit_exact(label: str, factory: Factory, **options: Any) -> AuditResult:
    """The exact audit of one configured mechanism: the joint gap-cell audit for a release
    with a gap-tuple law, each level's marginal for another vector release, else
    :func:`experiments.audit.exact.audit` unchanged (``options``: its keyword arguments)."""
    mechanism, kind = _probe(factory)
    if mechanism is None or kind == "":
        return audit(label, factory, **options)
    if kind == "marginal":
        result = audit(label, factory, **options)
        result.statistic_name = f"marginal {result.statistic_name}".strip()
        return result
    result = AuditResult(label)
    start = time.perf_counter()
    try:
        audit_joint(mechanism, pairs=options["pairs"], seed=options["seed"], result=result)
    except Exception as error:  # report and carry on with the next mechanism
        result.status = error_status(error)
    result.seconds = time.perf_counter() - start
    return result
