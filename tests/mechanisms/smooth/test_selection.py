"""The smooth-sensitivity mechanisms, bit for bit as before: ``log SS_β`` from one array of
``log A(k)`` (:mod:`mechanisms.smooth.median_envelope`), the tuning search's faster arithmetic, and
releases by selection (:mod:`mechanisms.smooth.selection`).

The reference is the earlier code, kept here: the median's add/remove scan over chunks of
costs (:class:`ReferenceSmoothSensitivity`), the root finders of the tuning penalties and the
search's batches of eight β.  A release of the mechanisms as they are (by selection, from the
raw data) must equal the earlier release on the fully sorted data: the same parameters, the
same scale to the last bit, hence the same cdf and the same draws from the same generator.
Each comparison is shown able to fail by a planted bug.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pytest

import mechanisms
from mechanisms.core.guarantee import Neighbouring
from mechanisms.core.selection import OrderStatistics
from mechanisms.core.sorted_data import order_statistics
from mechanisms.median import laplace_ln, smooth_cauchy, smooth_laplace
from mechanisms.smooth import laplace_ln_tuning, tuning
from mechanisms.smooth import selection as smooth_selection
from mechanisms.smooth.median_envelope import MedianEnvelope
from mechanisms.smooth.sensitivity import QuantileSmoothSensitivity

BOUNDS = (-5.0, 5.0)
GRID = np.linspace(-6.0, 6.0, 241)
TUNED = ("smooth_laplace", "laplace_ln")


# ----------------------------------------------------------------- the earlier code


class ReferenceSmoothSensitivity(QuantileSmoothSensitivity):
    """The median's add/remove ``log SS_β`` as computed before: costs in chunks ending at
    ``min(n + 1, 64·2^j)``, each β stopping after the first chunk whose running maximum
    reaches ``log(b - a) - β·stop``; the ``log A(k)`` cached in doubling chunks."""

    def __init__(self, sorted_x, lower, upper, neighbouring=Neighbouring.ADD_REMOVE, *, alpha=0.5):
        super().__init__(sorted_x, lower, upper, neighbouring, alpha=alpha)
        self._cache = np.empty(0)

    def _gaps(self, costs: np.ndarray) -> np.ndarray:
        n = self._x.size
        at = lambda ranks: order_statistics(self._x, ranks, self._lower, self._upper)  # noqa: E731
        return at((n + costs) // 2 + 1) - at((n - costs) // 2)

    def _log_gaps_below(self, count: int) -> np.ndarray:
        have = self._cache.size
        if have < count:
            size = min(self._x.size + 1, max(count, 2 * have))
            gaps = self._gaps(np.arange(have, size))
            more = np.full(gaps.shape, -np.inf)
            np.log(gaps, out=more, where=gaps > 0)
            self._cache = np.concatenate((self._cache, more))
        return self._cache[:count]

    def _scan(self, betas: np.ndarray) -> np.ndarray:
        n = self._x.size
        best = np.full(betas.size, -np.inf)
        open_ = np.arange(betas.size)
        start, stop = 0, min(n + 1, 64)
        while True:
            costs = np.arange(start, stop)
            part = self._log_gaps_below(stop)[start:][None, :] - np.outer(betas[open_], costs)
            best[open_] = np.maximum(best[open_], part.max(axis=1))
            if stop == n + 1:
                return best
            open_ = open_[self._log_range - betas[open_] * stop > best[open_]]
            if not open_.size:
                return best
            start, stop = stop, min(n + 1, 2 * stop)

    def log(self, beta):
        if self._median is None:
            return super().log(beta)
        betas = np.asarray(beta, dtype=np.float64)
        with np.errstate(over="ignore"):
            result = self._scan(betas.reshape(-1)).reshape(betas.shape)
        return float(result) if result.ndim == 0 else result


def reference_stationary_beta(k, epsilon, log_inv_delta):
    """:func:`mechanisms.median.smooth_laplace._stationary_beta` before: Newton on every slope (a
    placeholder where there is no root), ``beta_limit`` solved on each call."""
    k = np.asarray(k, dtype=np.float64)
    has_root = k > (log_inv_delta - 1.0) / epsilon
    start = smooth_laplace.beta_limit.__wrapped__(epsilon, log_inv_delta)
    if smooth_laplace.ORDINARY_EPSILON[0] <= epsilon <= smooth_laplace.ORDINARY_EPSILON[1]:
        k = np.where(has_root, k, 0.0)
        offset = 1.0 + k * (epsilon + log_inv_delta)
        log_scale = np.log(log_inv_delta * (1.0 + k))
        beta = np.full(k.shape, start)
        for _ in range(100):
            inner = offset + k * beta
            step = np.where(has_root, (log_scale + beta - np.log(inner)) / (1.0 - k / inner), 0.0)
            beta = beta - step
            if np.all(np.abs(step) <= 1e-13 * start):
                break
    else:
        k = np.where(has_root, k, 1.0)
        weight = k / (1.0 + k)
        constant = (log_inv_delta - 1.0) / (1.0 + k) - weight * epsilon
        beta = np.minimum(start, np.log1p(weight * (start + epsilon) / log_inv_delta))
        for _ in range(1000):
            value = log_inv_delta * np.expm1(beta) - weight * beta + constant
            step = np.where(has_root, value / (log_inv_delta * np.exp(beta) - weight), 0.0)
            beta = beta - step
            if np.all(np.abs(step) <= 1e-15 * beta):
                break
    return np.where(has_root, beta, 0.0)


def reference_optimal_sigma(t, epsilon):
    """:func:`mechanisms.smooth.laplace_ln_tuning.optimal_sigma` before (no hoisted products)."""
    t = np.asarray(t, dtype=np.float64)
    sigma = t / epsilon + np.cbrt(t / (5.0 * epsilon))
    for _ in range(100):
        f = 5.0 * epsilon * sigma**3 - 5.0 * t * sigma**2 - t
        step = f / (15.0 * epsilon * sigma**2 - 10.0 * t * sigma)
        sigma = sigma - step
        if np.all(np.abs(step) <= 1e-13 * sigma):
            break
    return sigma


def reference_log_ss_at(log_ss, betas):
    """The search's evaluations before: in batches of eight β."""
    parts = [log_ss(betas[i : i + 8]) for i in range(0, betas.size, 8)]
    return np.concatenate([np.atleast_1d(np.asarray(p, dtype=np.float64)) for p in parts])


@pytest.fixture
def earlier(monkeypatch) -> Callable[..., object]:
    """``earlier(name, x, **options)``: the release of the earlier code, on the sorted data."""

    def release(name: str, x: np.ndarray, bounds=BOUNDS, **options):
        with monkeypatch.context() as patch:
            for module in (smooth_cauchy, smooth_laplace, laplace_ln):
                patch.setattr(module, "QuantileSmoothSensitivity", ReferenceSmoothSensitivity)
            patch.setattr(smooth_laplace, "_stationary_beta", reference_stationary_beta)
            patch.setattr(laplace_ln_tuning, "optimal_sigma", reference_optimal_sigma)
            patch.setattr(tuning, "_log_ss_at", reference_log_ss_at)
            patch.setattr(tuning, "_initial_grid", tuning._initial_grid.__wrapped__)
            patch.setattr(smooth_laplace, "public_parameters", uncached_public(smooth_laplace))
            patch.setattr(laplace_ln, "public_parameters", uncached_public(laplace_ln_tuning))
            for module in (smooth_laplace, laplace_ln):  # SS at the chosen β computed again
                patch.setattr(module, "tuned_parameters", without_log_ss(module.tuned_parameters))
            mechanism = mechanisms.make(name, **options)
            return mechanism._release(np.sort(np.clip(x, *bounds)), *bounds)

    return release


def without_log_ss(tuned):
    """The search's result without the ``log SS_β`` it found (as before: evaluated again)."""
    return lambda *args: (tuned(*args)[0], None)


def uncached_public(module):
    """``public_parameters`` of ``module`` searched on the reference data by the earlier code
    (the mechanisms' own cache may hold the current code's results)."""

    def public(*args):
        key = (module.__name__, *args)
        if key not in EARLIER_PUBLIC:
            *head, n, neighbouring = args
            ss = ReferenceSmoothSensitivity(tuning.EvenlySpaced(n), 0.0, 1.0, neighbouring)
            EARLIER_PUBLIC[key] = module.optimal_parameters(ss, *head)
        return EARLIER_PUBLIC[key]

    return public


EARLIER_PUBLIC: dict[tuple, object] = {}


# ----------------------------------------------------------------------- the data


def datasets(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    """The families of the comparison; bounds are :data:`BOUNDS`."""
    rng = np.random.default_rng(seed + n)
    ascending = np.sort(rng.uniform(-3.0, 3.0, n))
    return {
        "normal": rng.normal(size=n),
        "ties": np.round(rng.normal(size=n) * 2.0) / 2.0,  # 20 values, long runs
        "two_values": rng.choice([-1.0, 2.0], size=n),
        "sorted": ascending,
        "reversed": ascending[::-1].copy(),
        "clipped": rng.choice([-1.0, 1.0], size=n) * rng.uniform(6.0, 9.0, n),  # all outside
        "near_a_bound": np.where(rng.uniform(size=n) < 0.7, -4.999, rng.normal(size=n)),
        "signed_zeros": np.where(rng.uniform(size=n) < 0.4, rng.choice([-0.0, 0.0], n), ascending),
    }


def beta_batches(rng: np.random.Generator) -> Iterator[np.ndarray]:
    """Batches of β as a search asks them: a wide first grid, then narrower ones, singles."""
    yield np.geomspace(1e-4, 2.0, 8)
    yield np.array([0.0, 5e-324, 1e-300, 1e-9])
    for _ in range(6):
        yield rng.permutation(np.geomspace(1e-5, 60.0, 80))[: rng.integers(1, 9)]
    yield np.array([1e300, 1.7e308])


SIZES = (0, 1, 2, 3, 10, 63, 64, 65, 129, 1000, 4097, 200_000)


@pytest.mark.parametrize("n", SIZES)
def test_log_ss_equals_the_earlier_scan(n: int) -> None:
    """Same objects across batches, as in a search: the kept ``log A(k)`` change nothing."""
    rng = np.random.default_rng(n)
    for x in datasets(n).values():
        x = np.sort(np.clip(x, *BOUNDS))
        new = QuantileSmoothSensitivity(x, *BOUNDS)
        old = ReferenceSmoothSensitivity(x, *BOUNDS)
        assert new.local_sensitivity == old.local_sensitivity
        for betas in beta_batches(rng):
            np.testing.assert_array_equal(new.log(betas), old.log(betas))


def mismatches(planted: type[MedianEnvelope], monkeypatch) -> int:
    """How many (dataset, batch) pairs of the comparison above a planted bug changes."""
    monkeypatch.setattr("mechanisms.smooth.sensitivity.MedianEnvelope", planted)
    count = 0
    for n in (65, 1000, 4097, 200_000):
        rng = np.random.default_rng(n)
        for x in datasets(n).values():
            x = np.sort(np.clip(x, *BOUNDS))
            new, old = QuantileSmoothSensitivity(x, *BOUNDS), ReferenceSmoothSensitivity(x, *BOUNDS)
            count += sum(not np.array_equal(new.log(b), old.log(b)) for b in beta_batches(rng))
    return count


class OnlyTheBlockScan(MedianEnvelope):
    """Step 3 for every β: the running maxima of all known blocks (the fallback of step 2)."""

    def _scan(self, betas):
        return self._scan_all(betas, self._log_range - betas[:, None] * self._stops)


def test_the_block_scan_alone_equals_the_earlier_scan(monkeypatch) -> None:
    assert mismatches(OnlyTheBlockScan, monkeypatch) == 0


class SkipsFirstCosts(MedianEnvelope):
    """Planted bug: a block's exact maximum leaves out its first cost (``k = 64b``; for
    ``b = 0`` the local sensitivity, the maximum for large β)."""

    def _block_values(self, betas, blocks):
        return (self._ell[blocks, 1:] - betas[:, None] * self._costs[blocks, 1:]).max(axis=1)


def test_the_log_ss_comparison_catches_a_planted_bug(monkeypatch) -> None:
    assert mismatches(SkipsFirstCosts, monkeypatch) > 0


# ------------------------------------------------------------------- the releases

MECHANISMS = [
    ("smooth_cauchy", {}),
    ("smooth_laplace", {"delta": 1e-6, "tuning": "public"}),
    ("smooth_laplace", {"delta": 1e-6, "tuning": "oracle"}),
    ("laplace_ln", {"delta": 1e-6, "tuning": "public"}),
    ("laplace_ln", {"delta": 1e-6, "tuning": "oracle", "target": "approx_dp"}),
]


def bits(*values) -> bytes:
    """The float64 bits of the values (``-0.0`` and ``0.0`` differ)."""
    return np.concatenate([np.ravel(np.asarray(v, dtype=np.float64)) for v in values]).tobytes()


def assert_same_release(new, old) -> None:
    """The same floats, to the bit: parameters, scale, centre, cdf and draws."""
    assert new.parameters.keys() == old.parameters.keys()
    assert bits(*new.parameters.values()) == bits(*old.parameters.values())
    assert new.exact_scale.exponent == old.exact_scale.exponent
    assert bits(new.exact_scale.significand, new.true_value, new.centre) == bits(
        old.exact_scale.significand, old.true_value, old.centre
    )
    assert bits(new.cdf(GRID)) == bits(old.cdf(GRID))
    draws = [r.sample(100, np.random.default_rng(7)) for r in (new, old)]
    assert bits(draws[0]) == bits(draws[1])


def releases(name: str, options: dict, earlier, sizes, epsilons, families=None) -> Iterator:
    for n in sizes:
        for family, x in datasets(n).items():
            if families is None or family in families:
                for epsilon in epsilons:
                    mechanism = mechanisms.make(name, epsilon=epsilon, **options)
                    yield mechanism.release(x, BOUNDS), earlier(name, x, epsilon=epsilon, **options)


@pytest.mark.parametrize(("name", "options"), MECHANISMS, ids=lambda c: str(c))
@pytest.mark.parametrize("neighbours", ["add_remove", "replace_one"])
@pytest.mark.parametrize("alpha", [0.5, 0.05, 0.1, 0.9])
def test_releases_equal_the_earlier_ones(name, options, neighbours, alpha, earlier) -> None:
    options = {**options, "neighbours": neighbours, "alpha": alpha}
    epsilons = (1e-3, 1.0, 50.0)
    tiny = releases(name, options, earlier, (1, 2, 3), epsilons, ("normal", "clipped"))
    small = releases(name, options, earlier, (10, 200), epsilons)
    large = releases(name, options, earlier, (5000,), (1.0,))
    for new, old in (*tiny, *small, *large):
        assert_same_release(new, old)


@pytest.mark.parametrize(("name", "options"), MECHANISMS, ids=lambda c: str(c))
def test_extreme_epsilons_release_as_before(name, options, earlier) -> None:
    """The β → 0 limits (tiny ε) and huge ε, also selected from 5000 points."""
    for neighbours in ("add_remove", "replace_one"):
        opts = {**options, "neighbours": neighbours}
        cases = releases(name, opts, earlier, (1, 5000), (1e-300, 1e-12, 1e6), ("normal",))
        for new, old in cases:
            assert_same_release(new, old)


@pytest.mark.parametrize(("name", "options"), MECHANISMS, ids=lambda c: str(c))
@pytest.mark.parametrize("neighbours", ["add_remove", "replace_one"])
def test_large_releases_by_selection_equal_the_earlier_ones(name, options, neighbours, earlier):
    options = {**options, "neighbours": neighbours}
    families = ("normal", "ties", "two_values", "clipped")
    for alpha in (0.5,) if options.get("tuning") == "oracle" else (0.5, 0.05):
        cases = releases(name, {**options, "alpha": alpha}, earlier, (200_000,), (1.0,), families)
        for new, old in cases:
            assert_same_release(new, old)


class OffByOneWindow(smooth_selection.SelectedOrder):
    """Planted bug: the window's first position recorded one too low, so every read returns
    the order statistic one rank above the one asked for."""

    def select(self, start: int, stop: int) -> None:
        super().select(start, stop)
        self._start -= 1


@pytest.mark.parametrize(("name", "options"), MECHANISMS, ids=lambda c: str(c))
def test_a_window_off_by_one_rank_is_caught(name, options, earlier, monkeypatch) -> None:
    monkeypatch.setattr(smooth_selection, "SelectedOrder", OffByOneWindow)
    caught = 0
    for x in datasets(200_000).values():
        mechanism = mechanisms.make(name, epsilon=1.0, **options)
        try:
            assert_same_release(
                mechanism.release(x, BOUNDS), earlier(name, x, epsilon=1.0, **options)
            )
        except (AssertionError, IndexError):
            caught += 1
    assert caught >= 3  # normal, sorted, reversed at least: their windows are selected


@pytest.mark.parametrize(("name", "options"), MECHANISMS, ids=lambda c: str(c))
@pytest.mark.parametrize("neighbours", ["add_remove", "replace_one"])
def test_normal_data_are_selected_in_one_pass(name, options, neighbours, monkeypatch) -> None:
    """A window of ranks is sorted, by one selection pass (no speed is asserted)."""
    windows: list[tuple[int, int]] = []
    prepare = OrderStatistics.prepare

    def recording(self, start: int, stop: int) -> None:
        before = self.window
        prepare(self, start, stop)
        if self.window != before:
            windows.append(self.window)

    monkeypatch.setattr(OrderStatistics, "prepare", recording)
    x = datasets(200_000)["normal"]
    mechanism = mechanisms.make(name, epsilon=1.0, neighbours=neighbours, **options)
    mechanism.release(x, BOUNDS)  # the public parameters are searched once, on the first
    windows.clear()
    mechanism.release(x, BOUNDS)
    assert len(windows) == 1 and windows[0][1] - windows[0][0] < x.size // 2


@pytest.mark.parametrize(("name", "options"), MECHANISMS[1::2], ids=lambda c: str(c))
def test_public_parameters_are_searched_once_per_size(name, options, monkeypatch) -> None:
    mechanism = mechanisms.make(name, epsilon=0.7, **options)
    mechanism.release(datasets(3001)["normal"], BOUNDS)

    def no_search(*args, **kwargs):
        raise AssertionError("searched again")

    monkeypatch.setattr(smooth_laplace, "tune", no_search)
    monkeypatch.setattr(laplace_ln_tuning, "tune", no_search)
    for x in datasets(3001).values():
        mechanism.release(x, BOUNDS)


def sigma_one_step_short(t, epsilon):
    """Planted bug: :func:`laplace_ln_tuning.optimal_sigma` returning the iterate before the
    last."""
    t = np.asarray(t, dtype=np.float64)
    sigma = previous = t / epsilon + np.cbrt(t / (5.0 * epsilon))
    for _ in range(100):
        f = 5.0 * epsilon * sigma**3 - 5.0 * t * sigma**2 - t
        step = f / (15.0 * epsilon * sigma**2 - 10.0 * t * sigma)
        previous, sigma = sigma, sigma - step
        if np.all(np.abs(step) <= 1e-13 * sigma):
            break
    return previous


def test_the_release_comparison_catches_a_planted_tuning_bug(earlier, monkeypatch) -> None:
    options = {"delta": 1e-6, "tuning": "oracle"}
    olds = [earlier("laplace_ln", x, epsilon=1.0, **options) for x in datasets(200).values()]
    monkeypatch.setattr(laplace_ln_tuning, "optimal_sigma", sigma_one_step_short)
    caught = 0
    for x, old in zip(datasets(200).values(), olds, strict=True):
        try:
            assert_same_release(
                mechanisms.make("laplace_ln", epsilon=1.0, **options).release(x, BOUNDS), old
            )
        except AssertionError:
            caught += 1
    assert caught
