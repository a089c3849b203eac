"""Extreme but valid inputs: termination, no float64 accidents, empty data, non-real dtypes.

Every mechanism, for every ε, δ and public bounds, either releases a valid
distribution (finite draws inside ``[a, b]``, a monotone cdf in ``[0, 1]``) or
raises a ``ValueError`` naming epsilon, delta or bounds, and which of the two
happens depends only on those public inputs, never on the data or its size.
Loops that used to run forever run under a deadline, so a regression fails
instead of hanging.
"""

from __future__ import annotations

import math
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
from scipy import integrate

import mechanisms
from mechanisms.median.duff import utility
from mechanisms.noise.additive import Scale
from mechanisms.noise.gaussian import analytic_gaussian_sigma, gaussian_delta
from mechanisms.sampling.piecewise import PiecewiseUniformRelease

CONFIGS = [
    ("duff", {}),
    ("quantile_em", {}),
    ("smooth_cauchy", {}),
    ("laplace_global", {}),
    ("smooth_laplace", {"delta": True, "tuning": "oracle"}),
    ("smooth_laplace", {"delta": True, "tuning": "public"}),
    ("laplace_ln", {"delta": True, "tuning": "oracle"}),
    ("laplace_ln", {"delta": True, "tuning": "public"}),
    ("laplace_ln", {"delta": True, "tuning": "oracle", "target": "approx_dp"}),
    ("laplace_ln", {"delta": True, "tuning": "public", "target": "approx_dp"}),
    ("gaussian_global", {"delta": True}),
    ("gaussian_global", {"delta": True, "calibration": "classical"}),
]
EPSILONS = [5e-324, 1e-300, 1e-12, 1e-3, 1.0, 1e3, 1e100, 1e308]
DELTAS = [5e-324, 1e-300, 1e-6, 0.5]
BOUNDS = [(0.0, 1.0), (-1e307, 1e307), (0.0, 1.7e308), (-1e-300, 1e-300)]
SIZES = [0, 1, 2, 101]
NAMED = ("epsilon", "delta", "bounds")


@contextmanager
def deadline(seconds: int) -> Iterator[None]:
    """Fail with ``TimeoutError`` instead of hanging (SIGALRM interrupts Python loops)."""

    def expire(signum: int, frame: object) -> None:
        raise TimeoutError(f"did not finish within {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def make(name: str, options: dict, epsilon: float, delta: float | None = None, **extra):
    options = dict(options)
    needs_delta = options.pop("delta", False)
    return mechanisms.make(
        name, epsilon=epsilon, delta=delta if needs_delta else None, **options, **extra
    )


def dataset(n: int, lower: float, upper: float) -> np.ndarray:
    """``n`` points in ``[lower, upper]``, with ties at both bounds and at the median."""
    u = np.linspace(0.0, 1.0, n) ** 2
    if n > 20:
        u[:5], u[-3:] = 0.0, 1.0
        u[n // 2 - 5 : n // 2 + 5] = u[n // 2]
    return lower * (1 - u) + upper * u  # no overflow for any finite bounds


def check_release(release, lower: float, upper: float) -> None:
    draws = release.sample(5, np.random.default_rng(0))
    assert np.all(np.isfinite(draws)) and np.all((draws >= lower) & (draws <= upper))
    points = np.array(
        [
            np.nextafter(lower, -np.inf),
            lower,
            np.nextafter(lower, np.inf),
            lower / 2 + upper / 2,
            np.nextafter(upper, -np.inf),
            upper,
            np.nextafter(upper, np.inf),
        ]
    )
    cdf = release.cdf(points)
    assert np.all(np.isfinite(cdf)) and np.all((cdf >= 0) & (cdf <= 1))
    assert np.all(np.diff(cdf) >= 0) and cdf[0] == 0.0 and cdf[-2] == 1.0


def outcome(name: str, options: dict, epsilon: float, delta: float, bounds, n: int) -> str:
    """``"ok"`` after checking the release, or the message of a ValueError naming a parameter."""
    try:
        mechanism = make(name, options, epsilon, delta)
        release = mechanism.release(dataset(n, *bounds), bounds)
    except ValueError as error:
        assert any(word in str(error) for word in NAMED), str(error)
        return str(error)
    check_release(release, *bounds)
    return "ok"


# ------------------------------------------------------------------ termination


def test_gaussian_sigma_beyond_float64_terminates_and_is_right():
    """Used to loop forever: σ = (b - a)·σ(1) overflows float64."""
    epsilon, delta, bounds = 1e-3, 1e-6, (-1e305, 1e305)
    with deadline(30):
        release = mechanisms.make("gaussian_global", epsilon=epsilon, delta=delta).release(
            np.zeros(3), bounds
        )
    check_release(release, *bounds)
    assert release.scale == math.inf  # as a float; exactly significand·2**exponent
    scale = release.exact_scale
    unit = math.ldexp(scale.significand / 2.0, scale.exponent - math.frexp(2e305)[1] + 1)
    unit /= math.frexp(2e305)[0]  # σ/(b - a), rebuilt without overflow
    assert unit == pytest.approx(analytic_gaussian_sigma(epsilon, delta, 1.0), rel=1e-12)
    assert gaussian_delta(unit * (1 + 1e-12), epsilon, 1.0) <= delta
    # the cdf is F((x - T)/σ) with T = 0: Φ(x/σ), computed here in units of b - a
    x = 0.25e305
    assert float(release.cdf(x)) == pytest.approx(0.5 + x / 2e305 / unit / math.sqrt(2 * math.pi))


@pytest.mark.parametrize(
    ("epsilon", "delta", "expected"),
    [
        (5e-324, 1e-6, "ok"),  # (0, δ)-DP in the limit: σ ≈ 0.4·(b - a)/δ
        (1.0, 5e-324, "delta"),  # subnormal δ: float64 cannot evaluate δ(σ) near it
        (1e308, 1e-6, "epsilon"),  # a ≈ b ≈ 1e154 cancel in Φ(a - b)
    ],
)
def test_gaussian_extreme_privacy_parameters_terminate(epsilon, delta, expected):
    """Used to loop forever (σ's starting point overflowed, or the final nudge never ended)."""
    mechanism = mechanisms.make("gaussian_global", epsilon=epsilon, delta=delta)
    with deadline(30):
        if expected == "ok":
            release = mechanism.release([0.5], (0, 1))
            check_release(release, 0.0, 1.0)
            assert gaussian_delta(release.scale, epsilon, 1.0) <= delta
            assert gaussian_delta(release.scale * (1 - 1e-9), epsilon, 1.0) > delta
        else:
            with pytest.raises(ValueError, match=expected):
                mechanism.release([0.5], (0, 1))


@pytest.mark.parametrize("tuning", ["oracle", "public"])
@pytest.mark.parametrize("epsilon", [1e100, 1e308])
def test_smooth_laplace_huge_epsilon(epsilon, tuning):
    """Was ``RuntimeError: Failed to converge`` (β_max bracketed on [0, ε])."""
    with deadline(30):
        release = mechanisms.make(
            "smooth_laplace", epsilon=epsilon, delta=1e-6, tuning=tuning
        ).release(np.linspace(0, 1, 101), (0, 1))
    beta, alpha = release.parameters["beta"], release.parameters["alpha"]
    assert beta > 0 and alpha > 0
    # (P2) holds: ε >= α + (e^β - 1)·log(1/δ) - β
    assert alpha + math.expm1(beta) * math.log(1e6) - beta <= epsilon * (1 + 1e-12)
    check_release(release, 0.0, 1.0)


@pytest.mark.parametrize("name", ["smooth_laplace", "laplace_ln"])
@pytest.mark.parametrize("epsilon", [1e-300, 5e-324])
def test_tiny_epsilon_is_the_global_laplace_limit(name, epsilon):
    """Was ``need 0 < lo < hi``: the tuned β (or t) is 0 and the scale is (b - a)/ε."""
    with deadline(30):
        release = mechanisms.make(name, epsilon=epsilon, delta=1e-6, tuning="oracle").release(
            [0.2, 0.4, 0.9], (0.0, 1.0)
        )
    assert release.parameters["beta"] == 0.0
    assert release.exact_scale == Scale.ratio(1.0, epsilon)
    check_release(release, 0.0, 1.0)


@pytest.mark.parametrize("epsilon", [1e-200, 1e-280])
def test_tuning_search_with_tiny_beta_terminates(epsilon):
    """β near 1e-200: β_i·β_j underflows, the search still splits inside each cell."""
    with deadline(30):
        for name in ("smooth_laplace", "laplace_ln"):
            release = mechanisms.make(name, epsilon=epsilon, delta=1e-6, tuning="oracle").release(
                np.random.default_rng(0).uniform(size=101), (0, 1)
            )
            assert 0 < release.parameters["beta"] < epsilon


# -------------------------------------------------------- float64 edge cases


def test_laplace_scale_beyond_float64_has_the_exact_cdf():
    """Was ``scale must be finite``: (b - a)/ε = 2e319 is kept as significand·2**exponent."""
    epsilon, bounds = 1e-12, (-1e307, 1e307)
    release = mechanisms.make("laplace_global", epsilon=epsilon).release([0.0], bounds)
    x = np.array([-5e306, 0.0, 5e306])
    z = x / 2e307 * epsilon  # (x - T)/scale with T = 0
    expected = np.where(z < 0, 0.5 * np.exp(z), 1 - 0.5 * np.exp(-z))
    np.testing.assert_allclose(release.cdf(x), expected, rtol=1e-15)
    check_release(release, *bounds)


@pytest.mark.parametrize("name", ["smooth_laplace", "laplace_ln"])
def test_smooth_scale_beyond_float64_is_no_overflow_error(name):
    """Was ``OverflowError: math range error`` from exp(log SS - log α)."""
    release = mechanisms.make(name, epsilon=1e-12, delta=1e-6).release(
        [0.0, 1e306], (-1e307, 1e307)
    )
    assert release.scale == math.inf and release.exact_scale.exponent > 1023
    check_release(release, -1e307, 1e307)


@pytest.mark.parametrize("name", ["smooth_cauchy", "laplace_global"])
def test_unclipped_draws_beyond_float64_are_infinite_not_nan(name):
    release = mechanisms.make(name, epsilon=1e-3, clip_output=False).release([0.0], (0.0, 1.7e308))
    draws = release.sample(1000, np.random.default_rng(1))
    assert not np.isnan(draws).any() and np.isinf(draws).any()
    assert not np.isnan(release.cdf(np.array([-np.inf, -1e308, 0.0, 1e308, np.inf]))).any()


def test_smooth_cauchy_subnormal_alpha_uses_the_exact_epsilon():
    """ε/6 is subnormal (rounded by up to 20%) or 0: the scale is 6(b - a)/ε exactly."""
    for epsilon in (5e-324, 2.5e-323, 1e-310):
        release = mechanisms.make("smooth_cauchy", epsilon=epsilon).release([0.5], (0.0, 1.0))
        assert release.exact_scale == Scale.exp(math.log(6.0) - math.log(epsilon))


def test_bounds_whose_width_overflows_are_refused():
    with pytest.raises(ValueError, match="bounds"):
        mechanisms.make("duff", epsilon=1.0).release([0.0], (-1e308, 1e308))


def test_scale_helpers_keep_ordinary_values_bit_for_bit():
    rng = np.random.default_rng(3)
    for value in rng.uniform(-700, 700, 1000):
        assert Scale.exp(value) == Scale(math.exp(value))
    for top, bottom in rng.uniform(1e-3, 1e3, (1000, 2)):
        assert Scale.ratio(top, bottom) == Scale(top / bottom)


@pytest.mark.parametrize(
    ("name", "options"), CONFIGS, ids=[f"{n}-{'-'.join(map(str, o.values()))}" for n, o in CONFIGS]
)
@pytest.mark.parametrize("epsilon", EPSILONS)
def test_extreme_parameters_release_or_name_the_parameter(name, options, epsilon):
    """The grid: a valid release or a ValueError naming ε, δ or bounds, independent of the data."""
    deltas = DELTAS if options.get("delta") else [None]
    with deadline(60):
        for delta in deltas:
            for bounds in BOUNDS:
                outcomes = {n: outcome(name, options, epsilon, delta, bounds, n) for n in SIZES}
                assert len(set(outcomes.values())) == 1, (delta, bounds, outcomes)


# ------------------------------------------------------------------ empty data

EMPTY_CONFIGS = [
    ("duff", {}),
    ("quantile_em", {}),
    ("quantile_em", {"alpha": 0.3}),
    ("quantile_em", {"neighbours": "replace_one"}),
    ("smooth_cauchy", {}),
    ("smooth_cauchy", {"neighbours": "replace_one"}),
    ("laplace_global", {}),
    ("smooth_laplace", {"delta": True, "tuning": "oracle"}),
    ("smooth_laplace", {"delta": True, "tuning": "public"}),
    ("laplace_ln", {"delta": True, "tuning": "oracle"}),
    ("laplace_ln", {"delta": True, "tuning": "public", "target": "approx_dp"}),
    ("gaussian_global", {"delta": True}),
]


ADD_REMOVE_CONFIGS = [c for c in EMPTY_CONFIGS if c[1].get("neighbours") != "replace_one"]


@pytest.mark.parametrize(("name", "options"), ADD_REMOVE_CONFIGS)
def test_empty_data_releases_like_the_empty_dataset_after_drop(name, options):
    """Was ``data is empty`` while its neighbour [0.5] released: emptiness leaked."""
    mechanism = make(name, options, 1.0, 1e-3)
    empty = mechanism.release([], (0.0, 1.0))
    dropped = make(name, options, 1.0, 1e-3, bounding="drop").release([3.0, -1.0], (0.0, 1.0))
    assert empty.n == dropped.n == 0 and empty.true_value == dropped.true_value == 0.0
    points = np.linspace(-0.5, 1.5, 41)
    np.testing.assert_array_equal(empty.cdf(points), dropped.cdf(points))
    check_release(empty, 0.0, 1.0)
    check_release(mechanism.release([0.5], (0.0, 1.0)), 0.0, 1.0)


@pytest.mark.parametrize("name", ["duff", "quantile_em", "smooth_cauchy", "laplace_mean"])
def test_drop_bounding_is_refused_under_replace_one_neighbours(name):
    """Dropping changes n, so a replace-one guarantee would not cover the bounded data:
    refused from the public options, whatever the data."""
    mechanism = make(name, {"neighbours": "replace_one"}, 1.0, 1e-3, bounding="drop")
    for data in ([], [0.5], [3.0, -1.0]):
        with pytest.raises(ValueError, match=r"bounding: .* needs bounding='clip'"):
            mechanism.release(data, (0.0, 1.0))


@pytest.mark.parametrize(
    ("name", "scale"),
    [
        ("laplace_global", 1.0),  # (b - a)/ε
        ("smooth_cauchy", 6.0),  # 6·SS_{ε/6}(∅)/ε, SS(∅) = b - a
    ],
)
def test_empty_data_noise_release_is_centred_at_a_with_the_global_scale(name, scale):
    epsilon, lower, upper = 0.5, 2.0, 6.0
    release = mechanisms.make(name, epsilon=epsilon, clip_output=False).release([], (lower, upper))
    assert release.true_value == lower
    assert release.scale == pytest.approx(scale * (upper - lower) / epsilon, rel=1e-15)


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 5.0])
@pytest.mark.parametrize(("name", "options"), [("duff", {}), ("quantile_em", {"alpha": 0.3})])
def test_empty_data_em_is_uniform(name, options, epsilon):
    """The EM on ∅ has a constant utility (u_d = -1 a.e.; |g| = 0): uniform on [a, b]."""
    lower, upper = -2.0, 3.0
    release = make(name, options, epsilon).release([], (lower, upper))
    points = np.linspace(lower, upper, 26)
    np.testing.assert_allclose(release.cdf(points), (points - lower) / (upper - lower), atol=1e-15)
    if name == "duff":  # independently: integrate exp(ε·u_d(x, ∅)/2) from the pointwise utility
        density = lambda x: math.exp(epsilon * float(utility(np.array([]), x, lower)) / 2)  # noqa: E731
        total = integrate.quad(density, lower, upper)[0]
        for x in (-1.0, 0.5, 2.9):
            assert float(release.cdf(x)) == pytest.approx(
                integrate.quad(density, lower, x)[0] / total, rel=1e-12
            )


def _log_cells(release: PiecewiseUniformRelease, cuts: np.ndarray) -> np.ndarray:
    """Exact log P(cell) for cells inside single gaps (cuts include every data point)."""
    edges, log_masses = release.edges, release.log_masses
    left, right = cuts[:-1], cuts[1:]
    gap = np.searchsorted(edges, left, side="right") - 1
    return log_masses[gap] + np.log(right - left) - np.log(edges[gap + 1] - edges[gap])


@pytest.mark.parametrize("epsilon", [1e-3, 0.5, 2.0, 50.0])
@pytest.mark.parametrize(
    ("name", "options", "least"),
    [
        ("duff", {}, 0.45),  # gap utilities -1, -2 against -1: loss ε/2
        ("quantile_em", {"alpha": 0.1}, 0.44),  # |g| = 0.1, 0.9 against 0: loss 0.8ε/1.8
        ("quantile_em", {}, 0.0),  # |g| = 1/2 on both gaps of {x}: uniform, as for ∅
    ],
)
def test_empty_versus_one_point_is_epsilon_dp(name, options, least, epsilon):
    """|log P_∅(I) - log P_{x}(I)| <= ε on a fine partition, for x across [a, b]."""
    lower, upper = -5.0, 5.0
    mechanism = make(name, options, epsilon)
    empty = mechanism.release([], (lower, upper))
    worst = 0.0
    for x in (lower, -4.99, -1.0, 0.0, 2.5, 4.999, upper):
        one = mechanism.release([x], (lower, upper))
        cuts = np.union1d(np.linspace(lower, upper, 1001), [x])
        loss = np.max(np.abs(_log_cells(empty, cuts) - _log_cells(one, cuts)))
        assert loss <= epsilon * (1 + 1e-9), (x, loss)
        worst = max(worst, loss)
    assert worst >= least * epsilon  # the check sees the real difference


# ------------------------------------------------------------------ dtypes


@pytest.mark.parametrize(
    "data",
    [
        np.array([1 + 2j, 0.5]),
        np.array([0.5 + 0j]),
        [1 + 0j],
        np.array(["2020-01-01", "2020-01-02"], dtype="datetime64[D]"),
        np.array([1, 2], dtype="timedelta64[s]"),
        ["0.5", "0.7"],
        np.array([b"1", b"2"]),
        np.array([0.5, "a"], dtype=object),
        np.array([0.5, None], dtype=object),
        np.array([0.5, 1 + 2j], dtype=object),
        np.array([True, False]),
        [True, False],
        np.array([0.5, [1.0]], dtype=object),
        [1, 2**2000],
    ],
    ids=lambda data: repr(data)[:40],
)
def test_non_real_data_is_refused_naming_data(data):
    with pytest.raises(ValueError, match="data"):
        mechanisms.make("duff", epsilon=1.0).release(data, (0, 1))


@pytest.mark.parametrize(
    "data",
    [
        [0.25, 0.5],
        [0, 1],
        np.array([0, 1], dtype=np.int8),
        np.array([0, 1], dtype=np.uint64),
        np.array([0.25, 0.5], dtype=np.float32),
        np.array([Fraction(1, 4), Decimal("0.5"), np.int16(1), 2**70], dtype=object),
        [],
    ],
    ids=lambda data: repr(data)[:40],
)
def test_real_data_is_accepted(data):
    release = mechanisms.make("duff", epsilon=1.0).release(data, (0, 1))
    assert release.n == len(data)


def test_tuning_search_near_tiny_beta_finds_the_stationary_point():
    """Near β = 1e-200: β_max's bracket ran out of iterations, the stationary point was
    rounding noise (log form) and the geometric midpoint √(pq) underflowed to 0."""
    from mechanisms.median.smooth_laplace import _penalty, beta_limit
    from mechanisms.smooth.tuning import minimise

    epsilon, log_inv_delta, slope = 1e-199, math.log(1e6), 2.56e200
    hi = beta_limit(epsilon, log_inv_delta) * (1 - 1e-9)
    penalty = _penalty(epsilon, log_inv_delta)
    with deadline(30):
        best = minimise(lambda b: -slope * np.asarray(b), penalty, 1e-12 * hi, hi)
    # φ' = -slope + ψ'(β) with ψ'(β) = (L e^β - 1)/α(β): zero at the stationary point
    stationary = float(penalty.inverse_slope(np.array(slope)))
    assert 1e-12 * hi < stationary < hi
    assert best.beta == pytest.approx(stationary, rel=1e-6)


@pytest.mark.parametrize("epsilon", [1e300, 1e308])
def test_em_with_huge_epsilon_is_uniform_on_the_best_positive_gaps(epsilon):
    """Was an overflow of ε·u/2; the best positive-length gaps sit far from the mode (ties)."""
    from mechanisms.median.duff_utility import gap_utility

    x = np.array([0.1, 0.2] + [0.5] * 7 + [0.8, 0.9])
    release = mechanisms.make("duff", epsilon=epsilon).release(x, (0.0, 1.0))
    edges = np.concatenate(([0.0], x, [1.0]))
    lengths = np.diff(edges)
    utilities = gap_utility(x.size, np.arange(x.size + 1))
    best = (lengths > 0) & (utilities == utilities[lengths > 0].max())
    points = np.linspace(0.0, 1.0, 101)
    inside = np.clip(points[:, None], edges[:-1], edges[1:]) - edges[:-1]
    expected = (inside * best).sum(axis=1) / lengths[best].sum()
    np.testing.assert_allclose(release.cdf(points), expected, atol=1e-15)
    check_release(release, 0.0, 1.0)
