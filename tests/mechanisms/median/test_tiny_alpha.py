"""Small (and nearly 1) quantile levels α: a release or a ``ValueError`` naming alpha, the
same at every data size (adversarial review, issue 26 "Inputs", finding 3).

``smooth_cauchy``, ``smooth_laplace`` and ``laplace_ln`` raised ``OverflowError: Python int
too large to convert to C long`` for α = 1/7000 at n <= 101 but not at n = 1000: the exact
``floor(p·i/q)`` of the add/remove smooth sensitivity guarded only its numerator, and
``1/7000`` is ``14285714285714287/10**20``, a denominator beyond int64.  Only public
inputs may raise, never depending on the data or its size.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import mechanisms
from mechanisms.core.registration import get
from mechanisms.smooth.quantile_add_remove import _floor_ratio

QUANTILE_MECHANISMS = [
    ("duff", {}),
    ("duff", {"neighbours": "replace_one"}),
    ("quantile_em", {}),
    ("quantile_em", {"neighbours": "replace_one"}),
    ("smooth_cauchy", {}),
    ("smooth_cauchy", {"neighbours": "replace_one"}),
    ("smooth_laplace", {}),
    ("smooth_laplace", {"tuning": "oracle"}),
    ("laplace_ln", {}),
    ("laplace_ln", {"tuning": "oracle"}),
    ("diffprivlib_quantile", {}),
    ("opendp_quantile", {"candidates": 1001}),
]
ALPHAS = [0.5, 0.1, 1e-2, 1 / 7000, 1e-5, 1e-10, 1e-17, 1e-20, 1e-30, 1e-100, 1e-200, 1e-300]
ALPHAS += [0.30000000000000004, 1 - 1e-10, 1 - 1e-15, 0.9999999999999999]
SIZES = (0, 1, 2, 101, 1000)


def test_every_quantile_mechanism_is_swept() -> None:
    swept = {name for name, _ in QUANTILE_MECHANISMS}
    quantiles = {name for name in mechanisms.available() if "quantile" in get(name).statistics}
    assert swept >= quantiles & {
        "duff",
        "quantile_em",
        "smooth_cauchy",
        "smooth_laplace",
        "laplace_ln",
        "diffprivlib_quantile",
        "opendp_quantile",
    }


def outcome(name: str, options: dict, alpha: float, n: int) -> str:
    """``"release"`` after checking the release, or the ``ValueError`` message."""
    cls = get(name)
    delta = 1e-6 if cls.requires_delta else None
    x = np.random.default_rng(n).normal(size=n)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            mechanism = mechanisms.make(name, epsilon=1.0, delta=delta, alpha=alpha, **options)
            release = mechanism.release(x, (-3.0, 3.0))
            draws = release.sample(3, np.random.default_rng(0))
            cdf = release.cdf(np.array([-3.0, -1.0, 0.0, 1.0, 3.0]))
    except ValueError as error:
        assert "alpha" in str(error), str(error)
        return str(error)
    assert np.all(np.isfinite(draws)) and np.all((draws >= -3.0) & (draws <= 3.0))
    assert np.all(np.diff(cdf) >= 0) and cdf[-1] == pytest.approx(1.0)
    return "release"


@pytest.mark.parametrize(("name", "options"), QUANTILE_MECHANISMS)
def test_small_alpha_releases_or_names_alpha_whatever_the_size(name: str, options: dict) -> None:
    for alpha in ALPHAS:
        outcomes = {n: outcome(name, options, alpha, n) for n in SIZES}
        assert len(set(outcomes.values())) == 1, (alpha, outcomes)


def test_floor_ratio_is_exact_for_denominators_beyond_int64() -> None:
    values = np.arange(0, 200, dtype=np.int64)
    for numerator, offset, denominator in [
        (14285714285714287, -1, 10**20 - 14285714285714287),  # α/(1 − α) for α = 1/7000
        (1, -1, 10**300 - 1),  # α = 1e-300
        (10**17 - 3, 0, 10**17),
    ]:
        exact = [(numerator * int(v) + offset) // denominator for v in values]
        assert _floor_ratio(numerator, offset, denominator, values).tolist() == exact
