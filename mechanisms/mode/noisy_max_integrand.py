"""The integrand of the noisy-max probabilities, and its pieces integrated in one call.

For level ``k`` (count ``c_k``, ``m_k`` values) the density of "a given value of level
``k`` has the largest noisy count, at ``t``" is ``h_k(t) = f(t - c_k)·G(t)/F(t - c_k)``,
``G(t) = Π_j F(t - c_j)^{m_j}`` (:mod:`mechanisms.mode.noisy_max_integral`, which integrates
it).  :class:`Integrand` evaluates ``log h_k = Σ_j m_j log F(t - c_j) - log F(t - c_k) +
log f(t - c_k)`` and its derivative ``Σ_j m_j f/F(t - c_j) - f/F(t - c_k) + (log
f)'(t - c_k)`` at many points at once, ``t = base + x`` with a base per point (``x``
small next to a count of 10⁶ keeps its precision); :func:`runs_log_integrals` applies
20-point Gauss-Legendre panels to many runs of panels in one evaluation.

Every value is computed by the same floating-point operations, in the same order, as
one point or one run at a time would be (numpy's sums: along a row of levels, and
over the nodes of one run; the tests compare with a run-at-a-time reference bit for
bit), so batching changes no float.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from mechanisms.noise.noisy_max import Noise

NODES, WEIGHTS = np.polynomial.legendre.leggauss(20)
LINEAR_TAIL = 40.0
"""Beyond ``b·(log(1 + K) + 40)`` the corrections to a linear ``log h_k`` are ``e^{-40}``."""


class Integrand:
    """``log h_k`` and its left derivative for levels at ``offsets`` (decreasing, the
    counts minus the largest) of ``sizes`` values (float64).  Call under
    ``np.errstate(all="ignore")`` (:meth:`Noise.log_terms`)."""

    def __init__(self, offsets: np.ndarray, sizes: np.ndarray, noise: Noise) -> None:
        self.offsets, self.sizes, self.noise = offsets, sizes, noise
        self.log_sizes = np.log(sizes)

    def origin(self, base: np.ndarray | float) -> np.ndarray:
        """``base_i - c_k``: the gaps at ``x = 0``, one row per base."""
        return np.asarray(base)[..., None] - self.offsets

    def _leave_one_out(self, terms: np.ndarray, infinite: float) -> np.ndarray:
        """``Σ_j m_j a_j - a_k`` for every column ``k`` of each row of ``terms``, where
        entries may be ``infinite`` (``±inf``): the result is ``infinite`` when one
        remains.  Laplace terms are always finite."""
        if self.noise.laplace or np.isfinite(terms).all():
            return np.add.reduce(terms * self.sizes, axis=1)[:, None] - terms
        finite = np.isfinite(terms)
        values = np.where(finite, terms, 0.0)
        out = np.add.reduce(values * self.sizes, axis=1)[:, None] - values
        remaining = np.add.reduce(~finite * self.sizes, axis=1)[:, None] - ~finite
        return np.where(remaining > 0.5, infinite, out)

    def log_values(self, gap: np.ndarray) -> np.ndarray:
        """``log h_k`` at gaps ``t - c_k`` (rows of ``gap``: ``origin + x``)."""
        log_cdf, log_pdf = self.noise.log_terms(gap)
        return self._leave_one_out(log_cdf, -np.inf) + log_pdf

    def slopes(self, gap: np.ndarray) -> np.ndarray:
        """``(log h_k)'`` (from the left) at the rows of ``gap``."""
        hazard, log_pdf_slope = self.noise.slope_terms(gap)
        return self._leave_one_out(hazard, np.inf) + log_pdf_slope

    def linear_from(self, base: float) -> float:
        """``x* = b·(log(1 + K) + LINEAR_TAIL)`` above ``base``: ``K = Σ m_j e^{-(base - c_j)/b}``
        weighs the corrections of the counts ``c_j <= base``; ``log K`` is summed as
        ``scipy.special.logsumexp`` sums finite terms (largest terms apart), step by step
        (the terms are finite: ``(base - c_j)/b < 2**40`` by the clamping of ε)."""
        b = self.noise.scale
        gap = base - self.offsets
        below = gap >= 0
        log_k = -np.inf
        if below.any():
            terms = self.log_sizes[below] - gap[below] / b
            peak = terms.max()
            top = terms == peak
            count = top.sum(dtype=np.float64)
            rest = np.exp(np.where(top, -np.inf, terms) - peak).sum()
            if rest != 0:
                rest = rest / count
            log_k = np.log1p(rest) + np.log(count) + peak
        return b * (float(np.logaddexp(0.0, log_k)) + LINEAR_TAIL)


def log_integral_exp(slope: np.ndarray, width: float) -> np.ndarray:
    """``log ∫_0^width e^{slope·x} dx`` per slope (``width`` may be ``inf`` for slopes < 0)."""
    out = np.full(slope.shape, math.log(width) if width > 0 else -np.inf)
    up, down = slope > 0, slope < 0
    s = slope[up]
    out[up] = s * width + np.log(-np.expm1(-s * width)) - np.log(s)
    s = slope[down]
    out[down] = np.log(-np.expm1(s * width)) - np.log(-s)
    return out


def runs_log_integrals(
    f: Integrand, bases: list[float], lefts: list[float], halves: list[float], counts: list[int]
) -> tuple[np.ndarray, np.ndarray]:
    """For runs of ``counts[r]`` equal panels of half-width ``halves[r]`` from
    ``bases[r] + lefts[r]`` upwards: ``log ∫ h_k`` over each run by 20-point
    Gauss-Legendre panels (``log Σ_nodes w·h_k``, from the largest term) and ``log h_k``
    at each left end, shape ``(runs, L)`` each.  One evaluation of ``log h_k``, the runs
    laid out by panel count, then one log-sum-exp per count over a block runs × nodes ×
    levels (which numpy sums over the nodes as it sums one run's nodes alone)."""
    order = sorted(range(len(counts)), key=counts.__getitem__)
    count = [counts[r] for r in order]
    left = np.array([lefts[r] for r in order])
    half = np.repeat([halves[r] for r in order], count)
    odd = np.array([2 * k + 1 for c in count for k in range(c)], dtype=np.float64)
    middles = np.repeat(left, count) + half * odd
    x = np.concatenate(((middles[:, None] + half[:, None] * NODES).ravel(), left))
    if len(set(bases)) == 1:
        origin = f.origin(bases[0])
    else:
        base = [bases[r] for r in order]
        origin = f.origin(np.concatenate((np.repeat(base, NODES.size * np.array(count)), base)))
    values = f.log_values(origin + x[:, None])
    size = NODES.size * half.size
    nodes = values[:size]
    nodes += np.log((half[:, None] * WEIGHTS).ravel())[:, None]
    out, start, levels = np.empty_like(values[size:]), 0, values.shape[1]
    for panels, group in itertools.groupby(order, key=counts.__getitem__):
        members = list(group)
        end = start + len(members) * NODES.size * panels
        block = nodes[start:end].reshape(len(members), -1, levels)
        peak = np.maximum.reduce(block, axis=1)
        finite = np.where(np.isfinite(peak), peak, 0.0)
        out[members] = finite + np.log(np.add.reduce(np.exp(block - finite[:, None, :]), axis=1))
        start = end
    rows = np.empty_like(out)
    rows[order] = values[size:]
    return out, rows
