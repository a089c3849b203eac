"""Report noisy max for the mode, and the exact output distribution of noisy-max selections.

Report noisy max (Dwork & Roth, "The Algorithmic Foundations of Differential
Privacy", Claim 3.9): add independent ``Lap(1/ε)`` noise to every
count ``n_y`` and output the value of largest noisy count.  Claim 3.9 is stated for
counting queries under add/remove neighbours (its proof takes ``D = D' ∪ {a}``) and
uses that adding a point raises no count by more than 1 and lowers none; a histogram
has both properties, so ``Lap(1/ε)`` gives ε-DP (not stated for replace-one
neighbours, which move two counts in opposite directions).  Ties have probability 0;
in floating point ``argmax`` takes the first maximal level, the larger count.

Values of ``Y`` with equal count are exchangeable, so one draw needs only, per level
(:mod:`mechanisms.mode_release`) of ``m`` values with count ``c``, the largest of its
``m`` noisy counts: ``c + F^{-1}(V^{1/m})`` with ``F`` the noise cdf and ``V``
uniform (``P(max <= x) = F(x)^m``), computed as ``V = e^{-E}``, ``E ~ Exp(1)``, so
that ``1 - V^{1/m} = -expm1(-E/m)`` keeps its precision for ``m = 10¹²`` unseen
values; then the winning level, then a uniform value of it.  Cost ``O(L)`` per draw
for ``L`` levels (at most ``sqrt(2n) + 2``), never ``O(|Y|)``.

Exact probabilities.  With ``F``/``f`` the noise cdf/density and
``G(t) = Π_j F(t - c_j)^{m_j}`` (the cdf of the largest noisy count), one value of
level ``k`` wins with probability

    P_k = ∫ h_k(t) dt,    h_k(t) = f(t - c_k) · G(t) / F(t - c_k).

``h_k`` is a product of log-concave functions (``f`` and ``F`` of the Laplace and the
exponential laws are log-concave), so ``log h_k`` is concave: smooth between the
counts, with kinks at them.  :func:`level_log_probabilities` integrates it in log
space, from the top count downwards, interval by interval between consecutive counts
(``t`` measured from each interval's lower count, so counts of 10⁶ do not eat the
precision of a noise scale of 10⁻⁶):

* far from the interval's lower count (beyond ``x* = b·(log(1 + K) + 40)``, ``K``
  the weight of the counts below), every factor is an exact exponential up to a
  relative ``e^{-40}``, so ``log h_k`` is linear there and the piece is integrated
  in closed form (this covers the long stretches between distant counts);
* near it, by 20-point Gauss-Legendre panels of width at most ``b`` over which
  ``log h_k`` changes by at most 8 (read off its exact derivative
  ``Σ_j m_j f/F(t - c_j) - f/F(t - c_k) + (log f)'(t - c_k)`` at both panel ends:
  it is monotone there, by concavity), in runs of equal panels;
* a level stops once the rest, which concavity bounds by ``h_k(t)/(log h_k)'(t)``,
  is below ``e^{-50}`` of what it has gathered; below the lowest count the integral
  is exact (every factor is an exponential).

Measured on tiny domains (600 permute-and-flip cases against the literal procedure
enumerated over all orders, 100 report-noisy-max cases against scipy's adaptive
quadrature; ``tests/test_mode_mechanisms.py``), the probabilities agree to ``3e-14``
relative at worst, and on Zipf data over 10¹² values (ε from 10⁻⁶ to 10⁶)
``Σ_k m_k P_k`` is 1 to ``6e-15``.  Cost: ``O(L)`` per node, a few hundred nodes per
interval, about 10 ms per release, spent on the first ``pmf``/``cdf`` only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from mechanisms.categorical import mode_value
from mechanisms.mode_release import DomainLevels, LevelDraw, ModeMechanism, ModeRelease
from mechanisms.registry import register

LN2 = math.log(2.0)
SMALLEST_EPSILON = 1e-300
"""ε below this is raised to it: every count difference (below ``2**54``) is then under
``1e-283`` noise scales: every probability is the ``ε -> 0`` limit to ``1e-283``."""
LOG_RANGE = 2.0**40
"""ε above ``2**40/(n + 1)`` is lowered to it (the mechanism then is more private than
claimed).  Log probabilities stay below ``2**40`` in size, so they are resolved to
``2**-12``, far below the ``e^{-50}`` the integration works to; and for ``n < 2**30`` the
cap exceeds 1024, where every level below the top has probability below
``2**54·e^{-1024}``: 0 in float64 at both ε, so samples are those of the given ε."""
TILE = 1 << 16
"""Entries (draws × levels) of the noisy-max draw processed at once."""
NODES, WEIGHTS = np.polynomial.legendre.leggauss(20)
STEEPNESS = 8.0
"""Largest change of ``log h_k`` over one panel."""
SMOOTHNESS = 1.0
"""Largest panel width, in noise scales (the corrections vary on the noise scale)."""
RUN = 16
"""Largest number of equal panels evaluated at once."""
LINEAR_TAIL = 40.0
"""Beyond ``b·(log(1 + K) + 40)`` the corrections to a linear ``log h_k`` are ``e^{-40}``."""
NEGLIGIBLE = 50.0
"""A level stops when its rest is below ``e^{-50}`` of its integral so far."""
MAX_PANELS = 1_000_000  # a guard: never reached in the tests


def noise_scale(epsilon: float, n: int, factor: float = 1.0) -> float:
    """``factor/ε`` for data of size ``n``, ε clamped to ``[1e-300, 2**40/(n + 1)]``
    (:data:`SMALLEST_EPSILON`, :data:`LOG_RANGE`)."""
    return factor / min(max(epsilon, SMALLEST_EPSILON), LOG_RANGE / (n + 1))


@dataclass(frozen=True)
class Noise:
    """The law of the noise added to each count: ``kind`` ``"laplace"`` or ``"exponential"``.

    Laplace: density ``e^{-|x|/b}/(2b)``; exponential: ``e^{-x/b}/b`` on ``x >= 0`` (``b``
    the ``scale``).
    All functions are vectorised and evaluated without warnings; ``log_pdf_slope``
    is the left derivative (at a kink the integration looks left).
    """

    kind: str
    scale: float

    @property
    def laplace(self) -> bool:
        return self.kind == "laplace"

    def log_cdf(self, x: np.ndarray) -> np.ndarray:
        """``log F(x)``."""
        b, out = self.scale, np.full(x.shape, -np.inf)
        if not self.laplace:  # log(1 - e^{-y}), accurate for small and for large y
            y = x / b
            small, large = (x > 0) & (y < LN2), y >= LN2
            with np.errstate(divide="ignore"):  # y underflowing to 0 gives -inf
                out[small] = np.log(-np.expm1(-y[small]))
            out[large] = np.log1p(-np.exp(-y[large]))
            return out
        upper = x >= 0
        out[upper] = np.log1p(-0.5 * np.exp(-x[upper] / b))
        out[~upper] = x[~upper] / b - LN2
        return out

    def log_pdf(self, x: np.ndarray) -> np.ndarray:
        """``log f(x)``."""
        b = self.scale
        if self.laplace:
            return -np.abs(x) / b - math.log(2.0 * b)
        out = np.full(x.shape, -np.inf)
        out[x >= 0] = -x[x >= 0] / b - math.log(b)
        return out

    def hazard(self, x: np.ndarray) -> np.ndarray:
        """``f/F(x) = (log F)'(x)`` (``+inf`` where ``F = 0``)."""
        b = self.scale
        if self.laplace:
            tail = np.exp(-np.maximum(x, 0.0) / b)
            return tail / (b * (2.0 - tail))
        out = np.full(x.shape, np.inf)
        positive = x > 0
        out[positive] = np.exp(-x[positive] / b) / (-b * np.expm1(-x[positive] / b))
        return out

    def log_pdf_slope(self, x: np.ndarray) -> np.ndarray:
        """``(log f)'(x)`` from the left."""
        b = self.scale
        if self.laplace:
            return np.where(x <= 0, 1.0 / b, -1.0 / b)
        return np.full(x.shape, -1.0 / b)

    def largest(self, log_u: np.ndarray) -> np.ndarray:
        """``F^{-1}(e^{log_u})``: with ``log_u = log(V)/m`` the largest of ``m`` noises."""
        b = self.scale
        with np.errstate(divide="ignore"):  # log_u = 0 (E = 0) gives +inf: that level wins
            tail = np.log(-np.expm1(log_u))  # log(1 - u)
        if not self.laplace:
            return -b * tail
        return np.where(log_u < -LN2, b * (log_u + LN2), -b * (LN2 + tail))


def _log_sum_exp(values: np.ndarray) -> np.ndarray:
    """``log Σ_i exp(values[i])`` along the first axis (``-inf`` for columns of ``-inf``)."""
    peak = values.max(axis=0)
    finite = np.where(np.isfinite(peak), peak, 0.0)
    with np.errstate(divide="ignore"):
        return finite + np.log(np.exp(values - finite).sum(axis=0))


def _leave_one_out(terms: np.ndarray, sizes: np.ndarray, infinite: float) -> np.ndarray:
    """``Σ_j m_j a_j - a_k`` for every column ``k`` of each row of ``terms``, where entries
    may be ``infinite`` (``±inf``): the result is ``infinite`` when one remains."""
    finite = np.isfinite(terms)
    values = np.where(finite, terms, 0.0)
    out = (values * sizes).sum(axis=1)[:, None] - values
    remaining = (~finite * sizes).sum(axis=1)[:, None] - ~finite
    return np.where(remaining > 0.5, infinite, out)


class _Integrand:
    """``log h_k`` and its left derivative at ``t = base + x`` (module docstring)."""

    def __init__(self, offsets: np.ndarray, sizes: np.ndarray, noise: Noise) -> None:
        self.offsets, self.sizes, self.noise = offsets, sizes, noise

    def log_values(self, base: float, x: np.ndarray) -> np.ndarray:
        """``log h_k(base + x_i)``, shape ``(x.size, L)``."""
        gap = (base - self.offsets)[None, :] + x[:, None]
        log_cdf = self.noise.log_cdf(gap)
        return _leave_one_out(log_cdf, self.sizes, -np.inf) + self.noise.log_pdf(gap)

    def slopes(self, base: float, x: float) -> np.ndarray:
        """``(log h_k)'`` (from the left) at ``base + x``, per level."""
        gap = (base - self.offsets) + x
        hazard = self.noise.hazard(gap)[None, :]
        return _leave_one_out(hazard, self.sizes, np.inf)[0] + self.noise.log_pdf_slope(gap)

    def edge(self, base: float, x: float) -> tuple[np.ndarray, np.ndarray]:
        """``log h_k`` and ``(log h_k)'`` (from the left) at ``base + x``, per level."""
        return self.log_values(base, np.array([x]))[0], self.slopes(base, x)


def _log_integral_exp(slope: np.ndarray, width: float) -> np.ndarray:
    """``log ∫_0^width e^{slope·x} dx`` per slope (``width`` may be ``inf`` for slopes < 0)."""
    out = np.full(slope.shape, math.log(width) if width > 0 else -np.inf)
    with np.errstate(over="ignore", invalid="ignore"):
        up, down = slope > 0, slope < 0
        s = slope[up]
        out[up] = s * width + np.log(-np.expm1(-s * width)) - np.log(s)
        s = slope[down]
        out[down] = np.log(-np.expm1(s * width)) - np.log(-s)
    return out


class _March:
    """The integral of each level, gathered from the top count downwards."""

    def __init__(self, integrand: _Integrand) -> None:
        self.f = integrand
        size = integrand.offsets.size
        self.log_p = np.full(size, -np.inf)
        self.active = np.ones(size, dtype=bool)
        self.panels = 0

    def add(self, contribution: np.ndarray) -> None:
        self.log_p[self.active] = np.logaddexp(self.log_p[self.active], contribution[self.active])

    def settle(self, row: np.ndarray, slope: np.ndarray) -> None:
        """Stop the levels whose whole rest to the left, at most ``h_k/(log h_k)'`` by
        concavity, is below ``e^{-NEGLIGIBLE}`` of their integral so far."""
        with np.errstate(divide="ignore", invalid="ignore"):
            rest = row - np.log(slope)
        self.active &= ~((slope > 0) & (rest < self.log_p - NEGLIGIBLE))

    def linear(self, base: float, start: float, width: float) -> None:
        """``[base + start, base + start + width]``, where ``log h_k`` is linear: integrated
        from the end where ``h_k`` is largest (from the other end, ``log h_k`` there plus
        the slope times a long width would cancel to a rounding error of the larger)."""
        row, slope = self.f.edge(base, start)
        peak, rate = row, slope
        if np.isfinite(width):
            row_end, slope_end = self.f.edge(base, start + width)
            rising = slope_end > 0
            peak, rate = np.where(rising, row_end, row), np.where(rising, -slope_end, slope)
        self.add(peak + _log_integral_exp(rate, width))
        self.settle(row, slope)

    def below(self, base: float) -> None:
        """``(-inf, base]``, below every count: ``∫ = h_k(base)/(log h_k)'(base)``."""
        row, slope = self.f.edge(base, 0.0)
        self.add(row - np.log(slope))

    def panels_between(self, base: float, low: float, high: float) -> None:
        """Gauss-Legendre panels over ``[base + low, base + high]``, from the right, in
        runs of up to :data:`RUN` equal panels (one evaluation per run)."""
        right, slope = high, self.f.slopes(base, high)
        while right > low and self.active.any():
            steep_right = np.abs(slope[self.active]).max()
            # first guess: half the steepness allowed if log h_k grew like m·log(t - low)
            # (the exponential law's F(0) = 0; elsewhere about STEEPNESS/(2·slope))
            span, allowed = right - low, 0.5 * STEEPNESS
            width = min(
                SMOOTHNESS * self.f.noise.scale, span * allowed / (steep_right * span + allowed)
            )
            while True:  # |slope| is largest at an end (concavity): check both
                left = max(right - width, low)
                slope_left = self.f.slopes(base, left)
                steep = max(steep_right, np.abs(slope_left[self.active]).max())
                if width * steep <= STEEPNESS:
                    break
                # infinite at the end: F(0) = 0 of exponential noise, slope ~ m/x near it
                width = min(0.5 * width, STEEPNESS / steep) if steep < np.inf else 0.875 * width
            run = RUN
            while run > 1 and left > low:  # a run of panels of this width, if its far end allows
                far = max(right - run * width, low)
                slope_far = self.f.slopes(base, far)
                if width * max(steep_right, np.abs(slope_far[self.active]).max()) <= STEEPNESS:
                    left, slope_left = far, slope_far
                    break
                run //= 4
            count = max(1, math.ceil((right - left) / width * (1 - 1e-12)))
            self.panels += count
            if not left < right or self.panels >= MAX_PANELS:
                raise ArithmeticError("noisy-max integral: panels no longer shrink")
            half = 0.5 * (right - left) / count
            middles = left + half * (2 * np.arange(count) + 1)
            x = np.append((middles[:, None] + half * NODES).ravel(), left)
            values = self.f.log_values(base, x)
            weights = np.log(half * np.tile(WEIGHTS, count))[:, None]
            self.add(_log_sum_exp(values[:-1] + weights))
            right, slope = left, slope_left
            if right > low:
                self.settle(values[-1], slope)


def _linear_from(integrand: _Integrand, base: float) -> float:
    """``x* = b·(log(1 + K) + LINEAR_TAIL)`` for the interval above ``base``: ``K`` weighs
    the corrections ``m_j e^{-(t - c_j)/b}`` of the counts ``c_j <= base``."""
    b = integrand.noise.scale
    gap = base - integrand.offsets
    below = gap >= 0
    log_k = logsumexp(np.log(integrand.sizes[below]) - gap[below] / b) if below.any() else -np.inf
    return b * (float(np.logaddexp(0.0, log_k)) + LINEAR_TAIL)


def level_log_probabilities(
    offsets: np.ndarray, sizes: np.ndarray, noise: Noise, threshold: float | None = None
) -> np.ndarray:
    """``log P(a given value of level k has the largest noisy count [and it is >= threshold])``.

    ``offsets`` are the level counts minus the largest (decreasing, the first 0),
    ``sizes`` the numbers of values per level (float64), ``threshold`` (same origin)
    the release threshold of the stability histogram.  Module docstring for the method.
    """
    march = _March(_Integrand(offsets, sizes, noise))
    if offsets.size == 0:
        return march.log_p
    floor = -np.inf if noise.laplace else 0.0
    if threshold is not None:
        floor = max(floor, threshold)
    cuts = offsets[offsets > floor]
    if np.isfinite(floor):
        cuts = np.append(cuts, floor)
    cuts = np.unique(cuts)  # increasing
    tops = np.append(cuts[1:], np.inf)
    for base, top in zip(cuts[::-1], tops[::-1], strict=True):
        split = _linear_from(march.f, base)
        if split < top - base:
            march.linear(base, split, top - base - split)
        march.panels_between(base, 0.0, min(split, top - base))
        if not march.active.any():
            return march.log_p
    if not np.isfinite(floor):
        march.below(float(cuts[0]))
    return march.log_p


def noisy_max_draw(
    offsets: np.ndarray, sizes: np.ndarray, noise: Noise, threshold: float | None = None
) -> LevelDraw:
    """Levels by the literal procedure: per level the largest of its ``m`` noisy counts
    (module docstring), the largest level wins; ``-1`` (⊥) if it is below ``threshold``."""
    levels = offsets.size

    def draw(size: int, rng: np.random.Generator) -> np.ndarray:
        winners = np.full(size, -1, dtype=np.int64)
        rows = max(1, min(size, TILE // max(levels, 1)))
        for start in range(0, size if levels else 0, rows):
            count = min(rows, size - start)
            scores = noise.largest(-rng.standard_exponential((count, levels)) / sizes) + offsets
            best = scores.argmax(axis=1)
            if threshold is not None:
                best[scores[np.arange(count), best] < threshold] = -1
            winners[start : start + count] = best
        return winners

    return draw


def noisy_max_release(
    sorted_x: np.ndarray,
    lower: float,
    upper: float,
    noise: Noise,
    *,
    threshold: float | None = None,
    unseen: bool = True,
) -> ModeRelease:
    """Noisy max of the counts over ``Y`` (``unseen``) or over the values present only,
    answering ⊥ when the largest noisy count is below ``threshold`` (if given)."""
    levels = DomainLevels(sorted_x, lower, upper, unseen=unseen)
    top = float(levels.level_counts[0]) if levels.level_counts.size else 0.0
    offsets = levels.level_counts - top
    sizes = levels.level_sizes.astype(np.float64)
    shifted = None if threshold is None else threshold - top
    refusal = 0.0
    if shifted is not None:
        refusal = math.exp(float((noise.log_cdf(shifted - offsets) * sizes).sum()))
    return ModeRelease(
        levels,
        n=sorted_x.size,
        true_value=mode_value(sorted_x, lower),
        log_probabilities=lambda: level_log_probabilities(offsets, sizes, noise, shifted),
        draw=noisy_max_draw(offsets, sizes, noise, shifted),
        refusal_probability=refusal,
    )


@register
class ReportNoisyMax(ModeMechanism):
    """Report noisy max: ``argmax_y n_y + Lap(1/ε)`` over ``Y``; ε-DP for add/remove
    neighbours (Dwork & Roth, Claim 3.9; module docstring)."""

    name = "report_noisy_max"
    display_name = "Report noisy max"

    def source(self) -> str:
        return (
            "report noisy max with Lap(1/ε) on counts (Dwork & Roth, 'The Algorithmic "
            "Foundations of Differential Privacy', Claim 3.9)"
        )

    def _release(self, sorted_x: np.ndarray, lower: float, upper: float) -> ModeRelease:
        noise = Noise("laplace", noise_scale(self.epsilon, sorted_x.size))
        return noisy_max_release(sorted_x, lower, upper, noise)
