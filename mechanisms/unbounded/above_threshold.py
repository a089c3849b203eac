"""AboveThreshold on nondecreasing counting queries: its stopping index, sampled and exactly.

AboveThreshold (Dwork, Naor, Reingold, Rothblum & Vadhan, "On the complexity of
differentially private data release", STOC 2009; Dwork & Roth, "The Algorithmic Foundations
of Differential Privacy", Algorithm 1): with a noisy threshold ``τ = T + ρ``, ``ρ ~ Lap(b)``,
and independent ``ν_i ~ Lap(b)``, it stops at the first ``i`` with ``q_i + ν_i >= τ``.  Here
``q_i`` is a count, nondecreasing in ``i``, given as *runs*: run ``r`` covers the indices
``[s_r, s_{r+1})`` and has count ``v_r``; the indices end at ``K``, which is returned when
no index ``i < K`` stops (the terminal value of :class:`mechanisms.unbounded.grid.GeometricGrid`).

Law.  With ``F`` the cdf of ``Lap(b)``, ``F̄ = 1 - F`` and ``φ`` its density,

    P(stop at k) = ∫ φ(τ - T) · Π_{i<k} F(τ - q_i) · F̄(τ - q_k) dτ      (k < K),
    P(index >= k) = S_k = ∫ φ(τ - T) · Π_{i<k} F(τ - q_i) dτ,
    P(index <= k) = ∫ φ(τ - T) · (1 - Π_{i<=k} F(τ - q_i)) dτ,

each computed in log space (:meth:`AboveThreshold.log_pmf`, :meth:`log_survival`, :meth:`cdf`)
by Gauss-Legendre quadrature of order :data:`ORDER` on pieces of ``τ`` no longer than
:data:`PIECE`·b whose ends include every kink of the integrand (the counts and ``T``:
between kinks it is analytic).  The pieces cover ``[min kink - 40b, max kink + b(log(K+2)
+ 40)]``; beyond it the integrand is log-concave and falls at rate ``>= (1 - e^-40)/b``, so
the tails are below ``e^-38`` of the integral.  Accuracy: the tests compare every
integral on small data with SciPy's adaptive Gauss-Kronrod (``quad``, split at the kinks,
relative tolerance ``1e-12``) and find agreement to a relative ``1e-9``
(``tests/mechanisms/unbounded/test_above_threshold.py``).

Sampling is the algorithm itself, run by runs: given ``τ``, the number of indices passed in
a run of count ``v`` is geometric, ``P(pass m) = F(τ - v)^m``, drawn as
``floor(E / -log F(τ - v))`` with ``E ~ Exp(1)``; cost ``O(runs)`` per draw.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import logsumexp

ORDER = 12
"""Gauss-Legendre nodes per piece."""
PIECE = 0.25
"""The longest piece, in noise scales ``b``."""
MARGIN = 40.0
"""Noise scales of ``τ`` beyond the kinks covered by the quadrature."""
LOG_HALF = math.log(0.5)


def laplace_log_cdf(u: np.ndarray, scale: float) -> np.ndarray:
    """``log P(Lap(scale) < u)``, accurate at both tails."""
    z = np.asarray(u, dtype=np.float64) / scale
    with np.errstate(over="ignore"):
        return np.where(z < 0, z + LOG_HALF, np.log1p(-0.5 * np.exp(-np.abs(z))))


def laplace_log_sf(u: np.ndarray, scale: float) -> np.ndarray:
    """``log P(Lap(scale) >= u)``."""
    return laplace_log_cdf(-np.asarray(u, dtype=np.float64), scale)


def log1mexp(x: np.ndarray) -> np.ndarray:
    """``log(1 - e^x)`` for ``x <= 0``, accurate everywhere (``-inf`` at 0)."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(divide="ignore"):
        return np.where(x > -math.log(2.0), np.log(-np.expm1(x)), np.log1p(-np.exp(x)))


class AboveThreshold:
    """The stopping index of AboveThreshold on runs of counts (module docstring).

    ``starts`` (int64, ``starts[0] = 0``, increasing, below ``end`` unless ``end = 0``)
    and ``counts`` (nondecreasing) describe the runs; ``end`` is ``K``; ``threshold`` is
    ``T``; ``scale`` is ``b`` of both noises.
    """

    def __init__(
        self, starts: np.ndarray, counts: np.ndarray, end: int, threshold: float, scale: float
    ) -> None:
        self.starts = np.asarray(starts, dtype=np.int64)
        self.counts = np.asarray(counts, dtype=np.float64)
        self.end = int(end)
        self.threshold = float(threshold)
        self.scale = float(scale)
        self.lengths = np.diff(np.append(self.starts, self.end))
        self._nodes: tuple[np.ndarray, np.ndarray] | None = None

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        """``size`` stopping indices (int64), by running the algorithm."""
        b = self.scale
        tau = self.threshold + rng.laplace(0.0, b, size)
        out = np.full(size, self.end, dtype=np.int64)
        active = np.arange(size)
        for start, length, count in zip(self.starts, self.lengths, self.counts, strict=True):
            if not active.size:
                break
            rate = -laplace_log_cdf(tau[active] - count, b)
            with np.errstate(divide="ignore"):
                passed = np.floor(rng.standard_exponential(active.size) / rate)
            stop = passed < length
            out[active[stop]] = start + passed[stop].astype(np.int64)
            active = active[~stop]
        return out

    def nodes(self) -> tuple[np.ndarray, np.ndarray]:
        """Quadrature nodes of ``τ`` and the logs of their weights (module docstring)."""
        if self._nodes is None:
            b = self.scale
            kinks = np.unique(np.append(self.counts, self.threshold))
            lo = kinks[0] - MARGIN * b
            hi = kinks[-1] + b * (math.log(self.end + 2.0) + MARGIN)
            pieces = math.ceil((hi - lo) / (PIECE * b))
            edges = np.unique(np.concatenate([np.linspace(lo, hi, pieces + 1), kinks]))
            x, w = np.polynomial.legendre.leggauss(ORDER)
            half = np.diff(edges)[:, None] / 2.0
            mid = (edges[:-1, None] + edges[1:, None]) / 2.0
            self._nodes = (
                (mid + half * x).ravel(),
                np.log(half * w).ravel(),
            )
        return self._nodes

    def _integrals(self, index: np.ndarray, kind: str) -> np.ndarray:
        """``log`` of the integral of ``kind`` (``"pmf"``, ``"survival"``, ``"cdf"``) for each
        index (int64, in ``[0, K]``), by one pass over the runs."""
        tau, log_w = self.nodes()
        b = self.scale
        base = log_w + (-np.abs(tau - self.threshold) / b - math.log(2.0 * b))
        index = np.asarray(index, dtype=np.int64)
        out = np.empty(index.shape, dtype=np.float64)
        # the product's factors up to index k: k for pmf/survival, k + 1 for the cdf
        upto = index + 1 if kind == "cdf" else index
        order = np.argsort(upto, kind="stable")
        log_a = np.zeros_like(tau)  # Σ over the runs before the current one
        run = 0
        for position in order:
            k = int(upto[position])
            while run + 1 < self.starts.size and self.starts[run + 1] <= k:
                log_a = log_a + self.lengths[run] * laplace_log_cdf(tau - self.counts[run], b)
                run += 1
            inside = min(k, self.end) - int(self.starts[run])
            log_f = laplace_log_cdf(tau - self.counts[run], b)
            log_product = log_a + inside * log_f
            if kind == "cdf":
                terms = base + log1mexp(log_product)
            elif kind == "pmf" and k < self.end:
                terms = base + log_product + laplace_log_sf(tau - self.counts[run], b)
            else:
                terms = base + log_product
            out[position] = logsumexp(terms)
        return out

    def log_pmf(self, index: np.ndarray) -> np.ndarray:
        """``log P(stop at k)`` for each ``k`` in ``[0, K]`` (``k = K``: nothing stopped)."""
        return self._integrals(index, "pmf")

    def log_survival(self, index: np.ndarray) -> np.ndarray:
        """``log P(index >= k)`` for each ``k`` in ``[0, K]``."""
        return self._integrals(index, "survival")

    def cdf(self, index: np.ndarray) -> np.ndarray:
        """``P(index <= k)`` for each ``k`` in ``[0, K)``."""
        return np.minimum(np.exp(self._integrals(index, "cdf")), 1.0)
