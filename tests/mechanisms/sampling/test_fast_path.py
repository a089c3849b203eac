"""The fast release path of Duff and the quantile EM gives the numbers of the code it replaced,
bit for bit: samples (same generator state, same floats), cdf, log masses and true value.

:class:`OldRelease` below is the release as :mod:`mechanisms.sampling.piecewise` computed it before
the small-n path (:mod:`mechanisms.sampling.gaps`), with the scores as
:mod:`mechanisms.median.duff` and
:mod:`mechanisms.median.quantile_em` computed them, ranks in ``fractions.Fraction``: reads
through :class:`mechanisms.core.selection.OrderStatistics` one at a time, three calls of the
score function, masked ``log``/``exp``, ``np.cumsum``, two draws of ``size`` uniforms.
Floats are compared as bits, so ``-0.0`` and ``0.0`` differ.  The planted bugs at the end
show that the comparison fails when the arithmetic moves.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

import mechanisms
import mechanisms.core.quantiles
import mechanisms.median.quantile_em
import mechanisms.sampling.gaps
import mechanisms.sampling.piecewise
from mechanisms.core.guarantee import Neighbouring
from mechanisms.core.quantiles import sensitivity
from mechanisms.core.selection import MIN_SAMPLED, OrderStatistics
from mechanisms.median.duff_utility import Multiples, QuantileDistance
from mechanisms.sampling.gaps import SelectedGaps, SortedGaps
from mechanisms.sampling.piecewise import score_epsilon
from mechanisms.sampling.racing import RacingSampler

ADD_REMOVE, REPLACE_ONE = Neighbouring.ADD_REMOVE, Neighbouring.REPLACE_ONE
MARGIN = -math.log(np.finfo(np.float64).tiny)
GUESS = math.log(2.0**20)
BOUNDS = (-3.0, 3.0)


# ------------------------------------------------------------- the old code


def old_scores(name: str, n: int, epsilon: float, alpha: float, neighbouring: Neighbouring):
    """``(log_score, mode, true_rank)`` of the old Duff / quantile EM, ranks from ``Fraction``."""
    exact = Fraction(repr(float(alpha)))
    rank = math.ceil(exact * n)
    if name == "quantile_em":
        whole = math.floor(exact * n)
        fraction = float(exact * n - whole)
        scale = score_epsilon(epsilon, n) / (2.0 * sensitivity(alpha, neighbouring))

        def quantile_score(gaps: np.ndarray) -> np.ndarray:
            distance = np.subtract(gaps, whole, dtype=np.float64)
            distance -= fraction
            distance = np.abs(distance, out=distance)
            distance *= -scale
            return distance

        return quantile_score, whole + (fraction > 0.5), rank if n else 0
    half_epsilon = 0.5 * score_epsilon(epsilon, n)
    lower_half = exact <= Fraction(1, 2)
    ratio = exact / (1 - exact) if lower_half else 1 / exact
    distance = QuantileDistance(
        n, alpha, neighbouring, rank, lower_half, Multiples.of(ratio, n + 1)
    )

    def duff_score(gaps: np.ndarray) -> np.ndarray:
        if alpha == 0.5 and neighbouring is ADD_REMOVE:  # the paper's step function
            u = np.multiply(gaps, 2.0, dtype=np.float64)
            u -= n - 0.5
            np.abs(u, out=u)
            u += 0.5
            u = np.negative(u, out=u)
        else:
            u = distance.gap_utility(gaps)
        u *= half_epsilon
        return u

    mode = rank if neighbouring is REPLACE_ONE else math.ceil(exact * (n + 1)) - 1
    return duff_score, mode, rank if n else 0


class OldRelease:
    """The old :class:`mechanisms.sampling.piecewise.PiecewiseUniformRelease`, its arithmetic
    verbatim."""

    def __init__(self, data, bounds, name, epsilon, alpha, neighbouring, sampler) -> None:
        lower, upper = bounds
        order = OrderStatistics(np.clip(np.asarray(data, dtype=np.float64), lower, upper))
        n = order.size
        log_score, mode, true_rank = old_scores(name, n, epsilon, alpha, neighbouring)
        self.lower, self.upper, self.n, self.x, self.log_score = lower, upper, n, order, log_score
        order.select(lambda: self.likely_positions(mode))
        self.true_value = float(lower) if true_rank == 0 else float(order[true_rank - 1])
        start, stop = self.window(mode)
        edges = self.edges(start, stop + 1)
        gaps = np.arange(start, stop, dtype=np.int64)
        log_masses = self.log_masses_of(gaps, np.diff(edges))
        self.peak = log_masses.max()
        log_masses -= self.peak
        keep = log_masses > -MARGIN
        weights = np.exp(log_masses, out=np.zeros(log_masses.size), where=keep)
        kept = np.flatnonzero(keep)
        self.racer = None
        if sampler == "racing":
            scores = log_score(gaps[kept])
            self.racer = RacingSampler.on_intervals(edges[kept], edges[kept + 1], scores)
        self.log_sum = math.log(weights.sum())
        self.cumulative = np.cumsum(weights)
        self.cumulative /= self.cumulative[-1]
        self.window_edges = edges

    def edge(self, j: int) -> float:
        if j == 0:
            return self.lower
        return self.upper if j == self.n + 1 else float(self.x[j - 1])

    def edges(self, start: int, stop: int) -> np.ndarray:
        out = np.empty(stop - start, dtype=np.float64)
        first, last = max(start, 1), min(stop, self.n + 1)
        if last > first:
            out[first - start : last - start] = self.x[first - 1 : last - 1]
        if start == 0:
            out[0] = self.lower
        if stop == self.n + 2:
            out[-1] = self.upper
        return out

    def log_masses_of(self, gaps: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        out = np.log(lengths, out=np.full(gaps.size, -np.inf), where=lengths > 0)
        out += np.asarray(self.log_score(gaps), dtype=np.float64)
        return out

    def window(self, mode: int) -> tuple[int, int]:
        value = self.edge(mode)
        candidates = {mode, self.x.searchsorted(value, "left"), self.x.searchsorted(value, "right")}
        near = [g for g in sorted(candidates) if g <= self.n and self.edge(g + 1) > self.edge(g)]
        scores = self.log_score(np.asarray(near, dtype=np.int64))
        floor = max(
            float(score) + math.log(self.edge(g + 1) - self.edge(g))
            for g, score in zip(near, scores, strict=True)
        )
        return self.probe(mode, floor)

    def probe(self, mode: int, floor: float) -> tuple[int, int]:
        steps = 1 << np.arange(max(self.n, 1).bit_length() + 1, dtype=np.int64)
        left = mode - steps[steps <= mode]
        right = mode + steps[steps <= self.n - mode]
        scores = self.log_score(np.concatenate([left, right]))
        below_cut = scores < floor - MARGIN - math.log(self.upper - self.lower)
        left_out, right_out = below_cut[: left.size], below_cut[left.size :]
        start = int(left[left_out.argmax()]) + 1 if left_out.any() else 0
        stop = int(right[right_out.argmax()]) if right_out.any() else self.n + 1
        return start, stop

    def likely_positions(self, mode: int) -> tuple[int, int]:
        spacing = math.log((self.upper - self.lower) / (self.n + 1)) - GUESS
        floor = float(self.log_score(np.array([mode], dtype=np.int64))[0]) + spacing
        start, stop = self.probe(mode, floor)
        return start - 1, stop + 1

    def log_masses(self) -> np.ndarray:
        lengths = np.diff(self.edges(0, self.n + 2))
        out = self.log_masses_of(np.arange(self.n + 1, dtype=np.int64), lengths)
        out -= self.peak
        out -= self.log_sum
        return out

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        if self.racer is not None:
            return self.racer.sample(size, rng)
        gap = np.searchsorted(self.cumulative, rng.random(size), side="right")
        left, right = self.window_edges[gap], self.window_edges[gap + 1]
        out = left + (right - left) * rng.random(size)
        return np.minimum(out, right, out=out)

    def cdf(self, x: np.ndarray) -> np.ndarray:
        edges = self.window_edges
        q = np.asarray(x, dtype=np.float64)
        out = np.where(q >= edges[-1], 1.0, 0.0)
        inside = (q >= edges[0]) & (q < edges[-1])
        gap = np.searchsorted(edges, q[inside], side="right") - 1
        fraction = (q[inside] - edges[gap]) / (edges[gap + 1] - edges[gap])
        before = np.where(gap > 0, self.cumulative[np.maximum(gap - 1, 0)], 0.0)
        out[inside] = before + (self.cumulative[gap] - before) * fraction
        return out


# ------------------------------------------------------------ the comparison


def bits(values) -> np.ndarray:
    return np.atleast_1d(np.asarray(values, dtype=np.float64)).view(np.uint64)


def datasets(n: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(n)
    uniform = np.sort(rng.uniform(-2.0, 2.0, size=n))
    return {
        "normal": rng.normal(size=n),
        "ties": np.round(rng.normal(size=n), 1),
        "two_values": rng.choice([-0.5, 0.5], size=n),
        "sorted": uniform,
        "reversed": uniform[::-1].copy(),
        "clipped": rng.choice([-1.0, 1.0], size=n) * rng.uniform(4.0, 9.0, size=n),
        "signed_zeros": rng.choice([-0.0, 0.0, 1.0], size=n),
        "subnormal": rng.normal(size=n) * 1e-310,
    }


def mismatches(x, name, epsilon, alpha, neighbours, sampler="inverse_cdf") -> list[str]:
    """What differs between the release and :class:`OldRelease` (empty: bit for bit)."""
    options = {"alpha": alpha, "neighbours": neighbours, "sampler": sampler}
    new = mechanisms.make(name, epsilon=epsilon, **options).release(x, BOUNDS)
    old = OldRelease(x, BOUNDS, name, epsilon, alpha, Neighbouring(neighbours), sampler)
    points = np.concatenate([np.linspace(-3.5, 3.5, 141), np.asarray(x, dtype=float)[:60]])
    found = []
    for what, a, b in [
        ("true value", new.true_value, old.true_value),
        ("log masses", new.log_masses, old.log_masses()),
        ("cdf", new.cdf(points), old.cdf(points)),
    ]:
        if not np.array_equal(bits(a), bits(b)):
            found.append(what)
    for generator in (np.random.PCG64, np.random.MT19937):
        new_rng, old_rng = np.random.Generator(generator(7)), np.random.Generator(generator(7))
        for size in (0, 1, 5, 64):
            if not np.array_equal(bits(new.sample(size, new_rng)), bits(old.sample(size, old_rng))):
                found.append(f"sample({size}) {generator.__name__}")
        if new_rng.random() != old_rng.random():
            found.append(f"generator state {generator.__name__}")
    return found


SMALL = (0, 1, 2, 3, 7, 64, 1000)
AROUND = (MIN_SAMPLED - 1, MIN_SAMPLED, MIN_SAMPLED + 1)  # sorted whole / selection


@pytest.mark.parametrize("neighbours", ["add_remove", "replace_one"])
@pytest.mark.parametrize("name", ["duff", "quantile_em"])
@pytest.mark.parametrize("n", SMALL)
def test_small_releases_are_the_old_ones(n, name, neighbours) -> None:
    epsilons = (1e-3, 0.1, 1.0, 50.0, 1e300)  # 1e300: scores at score_epsilon's limit
    grid = itertools.product(datasets(n).items(), epsilons, (0.05, 0.1, 0.5, 0.9))
    for (data, x), epsilon, alpha in grid:
        assert mismatches(x, name, epsilon, alpha, neighbours) == [], (data, epsilon, alpha)


@pytest.mark.parametrize("neighbours", ["add_remove", "replace_one"])
@pytest.mark.parametrize("name", ["duff", "quantile_em"])
@pytest.mark.parametrize("n", AROUND)
def test_releases_around_the_selection_threshold_are_the_old_ones(n, name, neighbours) -> None:
    grid = itertools.product(datasets(n).items(), (1e-3, 1.0, 50.0), (0.1, 0.5, 0.9))
    for (data, x), epsilon, alpha in grid:
        assert mismatches(x, name, epsilon, alpha, neighbours) == [], (data, epsilon, alpha)


@pytest.mark.parametrize("name", ["duff", "quantile_em"])
@pytest.mark.parametrize("n", (0, 1, 3, 64, 1000, MIN_SAMPLED + 1))
def test_racing_releases_are_the_old_ones(n, name) -> None:
    for (data, x), epsilon in itertools.product(datasets(n).items(), (0.1, 1.0, 50.0)):
        for alpha, neighbours in [(0.5, "add_remove"), (0.3, "replace_one"), (0.9, "add_remove")]:
            found = mismatches(x, name, epsilon, alpha, neighbours, sampler="racing")
            assert found == [], (data, epsilon, alpha, neighbours)


def test_sorted_gaps_read_what_selected_gaps_read() -> None:
    x = np.sort(np.concatenate([np.round(np.random.default_rng(1).normal(size=300), 1), [-3.0]]))
    n = x.size
    score = lambda gaps: -np.abs(gaps - n / 3.0)  # noqa: E731
    whole = SortedGaps(x, -3.0, 3.0, score)
    read = SelectedGaps(OrderStatistics.of_sorted(x), -3.0, 3.0, score)
    for j in range(n + 1):
        value = whole.edge(j)
        expected = (int(np.searchsorted(x, value, "left")), int(np.searchsorted(x, value, "right")))
        assert whole.run(j) == read.run(j) == expected
        assert bits(whole.edge(j)) == bits(read.edge(j))
    assert np.array_equal(bits(whole.edges(0, n + 2)), bits(read.edges(0, n + 2)))
    assert np.array_equal(bits(whole.window_scores(5, 90)), bits(read.window_scores(5, 90)))


# ------------------------------------------------------------- planted bugs


def float_split(n: int, alpha: float) -> tuple[int, float]:
    """α·n in floats, as numpy would: 0.55·100 = 55.00000000000001."""
    product = alpha * n
    return math.floor(product), product - math.floor(product)


def swapped_uniforms(self, size: int, rng: np.random.Generator) -> np.ndarray:
    """Inversion with the two halves of ``rng.random(2·size)`` swapped."""
    uniforms = rng.random(2 * size)
    gap = self._cumulative.searchsorted(uniforms[size:], side="right")
    out = self._lengths[gap] * uniforms[:size] + self._window_edges[gap]
    return np.minimum(out, self._right_edges[gap], out=out)


def shifted_scores(self, start: int, stop: int) -> np.ndarray:
    """The window's scores read one gap off the array of every gap's."""
    return np.roll(self._scores, 1)[start:stop]


PLANTED = {  # [(module, attribute, value)], then the release that shows the bug
    "alpha*n in floats": (
        [
            (mechanisms.median.quantile_em, "split_alpha_n", float_split),
            (mechanisms.core.quantiles, "split_alpha_n", float_split),
        ],
        ("quantile_em", 100, "normal", 0.55),
    ),
    "uniforms swapped": (
        [(mechanisms.sampling.piecewise.PiecewiseUniformRelease, "sample", swapped_uniforms)],
        ("duff", 100, "normal", 0.5),
    ),
    "no mask below 2**-1022": (  # at ε = 1, 4000 points the window has such weights
        [(mechanisms.sampling.piecewise, "UNDERFLOW_MARGIN", math.inf)],
        ("duff", 4000, "normal", 0.5),
    ),
    "window scores one gap off": (
        [(SortedGaps, "window_scores", shifted_scores)],
        ("duff", 100, "normal", 0.5),
    ),
    "sorted whole above the threshold": (  # sort and selection order -0.0, 0.0 differently
        [(mechanisms.sampling.gaps, "MIN_SAMPLED", 1 << 14)],
        ("duff", 3 * MIN_SAMPLED, "ties", 0.5),
    ),
}


@pytest.mark.parametrize("bug", sorted(PLANTED))
def test_the_comparison_catches_planted_bugs(bug, monkeypatch) -> None:
    patches, (name, n, data, alpha) = PLANTED[bug]
    x = datasets(n)[data]
    assert mismatches(x, name, 1.0, alpha, "add_remove") == []
    for target, attribute, value in patches:
        monkeypatch.setattr(target, attribute, value)
    assert mismatches(x, name, 1.0, alpha, "add_remove")
