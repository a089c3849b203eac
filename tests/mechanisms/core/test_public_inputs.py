"""Public inputs of every mechanism (adversarial review, issue 26 "Inputs").

* Bounds are exactly two real, non-boolean numbers (Python or numpy) in a sequence or a
  1-D array; anything else is a ``ValueError`` naming ``bounds`` (``(False, True)`` was
  read as ``(0, 1)``, ``"09"`` as ``(0, 9)``, ``b"\\x00\\x14"`` as ``(0, 20)``).
* A masked array is refused as data (``ValueError`` naming ``data``): numpy reads
  through the mask, so a masked ``1e6`` was released as a data point.
* No public parameter (ε, δ, α, bounds, options) raises anything but a ``ValueError``:
  a table of hostile values, one parameter at a time, then random combinations
  (hypothesis) of extreme but valid values.

The mechanisms are the 24 built-ins of the review (:data:`MECHANISMS`).
"""

from __future__ import annotations

import contextlib
import warnings
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from omegaconf import OmegaConf

import mechanisms
from mechanisms.core.registration import get, options_of
from mechanisms.core.validation import check_bounds, check_data

MECHANISMS = (
    "count_em",
    "diffprivlib_quantile",
    "dp_order_statistic",
    "drechsler_expmech",
    "duff",
    "duff_mean",
    "duff_mode",
    "gaussian_global",
    "gaussian_mean",
    "laplace_global",
    "laplace_ln",
    "laplace_mean",
    "nonprivate_order_statistic",
    "opendp_quantile",
    "permute_and_flip",
    "ptr_median",
    "quantile_em",
    "report_noisy_max",
    "smooth_cauchy",
    "smooth_laplace",
    "stability_histogram",
    "subsample_aggregate",
    "trimmed_mean_laplace_ln",
    "trimmed_mean_student_t",
)


def test_the_mechanisms_of_the_review_are_available() -> None:
    assert set(MECHANISMS) <= set(mechanisms.available())


def base_config(name: str) -> dict[str, Any]:
    """A valid configuration (ε, δ and fast options) of mechanism ``name``."""
    cls = get(name)
    config: dict[str, Any] = {
        "epsilon": 1.0 if cls.requires_epsilon else None,
        "delta": 1e-6 if cls.requires_delta else None,
    }
    if name == "opendp_quantile":
        config["candidates"] = 501
    return config


def dataset(name: str, n: int = 21) -> tuple[np.ndarray, tuple[float, float]]:
    """Data and bounds a release of ``name`` accepts (integer bounds for the mode)."""
    x = np.random.default_rng(n).normal(size=n)
    if "mode" in get(name).statistics:
        return np.round(np.abs(x) * 5) + 1, (1.0, 30.0)
    return x, (-3.0, 3.0)


def exercise(name: str, config: dict[str, Any], data: object, bounds: object) -> None:
    """Configure, release, draw and evaluate the cdf (or coverage): warnings are errors."""
    config = dict(config)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mechanism = mechanisms.make(
            name, epsilon=config.pop("epsilon"), delta=config.pop("delta"), **config
        )
        release = mechanism.release(data, bounds)
        draws = np.asarray(release.sample(2, np.random.default_rng(0)), dtype=np.float64)
        assert draws.shape[0] == 2
        if hasattr(release, "cdf"):
            values = release.cdf(np.array([-1.0, 0.0, 1.0, 2.0]))
            assert np.all(np.abs(values - 0.5) <= 0.5 + 1e-12), values  # rounding aside
        elif type(release).__name__ != "SubsampleRelease":  # the one without exact coverage
            assert 0.0 <= float(release.coverage(0.0)) <= 1.0


def only_value_errors(name: str, config: dict[str, Any], data: object, bounds: object) -> None:
    """:func:`exercise`, where a ``ValueError`` is a valid answer and nothing else is."""
    with contextlib.suppress(ValueError):
        exercise(name, config, data, bounds)


# ------------------------------------------------------------------ 1. bounds

HOSTILE_BOUNDS = [
    (False, True),
    (np.True_, 20),
    (0, np.False_),
    np.array([False, True]),
    ("0", "20"),
    (0, "20"),
    "09",
    b"\x00\x14",
    bytearray(b"\x00\x14"),
    memoryview(b"\x00\x14"),
    {0: "a", 20: "b"},
    {0, 20},
    iter([0, 20]),
    np.ma.array([0.0, 20.0]),
    np.array([[0.0, 20.0]]),
    np.array(["0", "20"]),
    (0, 1j),
    (0, None),
    (0, [20]),
    (0,),
    (0, 10, 20),
    5,
    None,
]


@pytest.mark.parametrize("name", MECHANISMS)
def test_bounds_that_are_not_two_real_numbers_are_refused_naming_bounds(name: str) -> None:
    data, _ = dataset(name)
    for bounds in HOSTILE_BOUNDS:
        with pytest.raises(ValueError, match="bounds"):
            exercise(name, base_config(name), data, bounds)


@pytest.mark.parametrize(
    ("bounds", "expected"),
    [
        ((0, 20), (0.0, 20.0)),
        ([0.5, 20], (0.5, 20.0)),
        (np.array([0.0, 20.0]), (0.0, 20.0)),
        (np.array([0, 20], dtype=object), (0.0, 20.0)),
        ((np.float32(0.5), np.int8(20)), (0.5, 20.0)),
        ((np.uint64(0), np.float64(20)), (0.0, 20.0)),
        ((Fraction(1, 2), Decimal("20")), (0.5, 20.0)),
        (OmegaConf.create({"bounds": [0, 20]}).bounds, (0.0, 20.0)),
    ],
)
def test_pairs_of_real_numbers_are_accepted(bounds: object, expected: tuple) -> None:
    assert check_bounds(bounds) == expected


@pytest.mark.parametrize(
    "bounds", [(0, 2**1100), (Decimal("sNaN"), 1), (0, np.longdouble("1e400"))]
)
def test_numbers_beyond_float64_are_refused_naming_bounds(bounds: object) -> None:
    with pytest.raises(ValueError, match="bounds must be finite"):
        check_bounds(bounds)


# ------------------------------------------------------------------ 2. masked data


@pytest.mark.parametrize(
    "data",
    [np.ma.array([1.0, 1e6, 2.0], mask=[0, 1, 0]), np.ma.array([1.0, 2.0, 3.0])],
)
def test_masked_arrays_are_refused_naming_data(data: np.ma.MaskedArray) -> None:
    with pytest.raises(ValueError, match="data"):
        check_data(data)


@pytest.mark.parametrize("name", MECHANISMS)
def test_no_mechanism_releases_a_masked_value(name: str) -> None:
    _, bounds = dataset(name)
    masked = np.ma.array([1.0, 1e6, 2.0, 3.0, 1.0], mask=[0, 1, 0, 0, 0])
    with pytest.raises(ValueError, match="data"):
        exercise(name, base_config(name), masked, bounds)


# ------------------------------------------------- 4. hostile public parameters

NUMBERS = [
    0,
    -1,
    0.0,
    -0.0,
    5e-324,
    2.2250738585072014e-308,
    1e-300,
    1e-160,
    1e-17,
    0.5,
    1,
    2,
    1e3,
    1e15,
    1e154,
    1e300,
    1e308,
    1.7976931348623157e308,
    float("nan"),
    float("inf"),
    -float("inf"),
    Fraction(10**400),
    Fraction(1, 10**400),
    Decimal("1e400"),
    Decimal("1e-400"),
    Decimal("NaN"),
    Decimal("sNaN"),
    np.float32(1e-45),
    np.float16(6e-8),
    np.longdouble("1e400"),
    np.longdouble("1e-4000"),
    2**1100,
    -(2**1100),
    2**63,
    2**62,
    2**53,
    10**20,
    np.int64(2**62),
    np.uint64(2**64 - 1),
    0.9999999999999999,
    0.30000000000000004,
    1 / 7000,
    7,
    101,
]
OTHERS = [None, True, False, np.True_, "1", "0.5", b"1", 1j, [1.0], (1.0,), {}, object()]
OTHERS += [np.array([1.0]), np.array(1.0), "", "nonexistent"]
STRINGS = {
    "bounding": ["clip", "drop", "Clip"],
    "neighbours": ["add_remove", "replace_one", "add-remove"],
    "sampler": ["inverse_cdf", "racing", "racing "],
    "tuning": ["public", "oracle", "private"],
    "target": ["zcdp", "approx_dp", "rdp"],
    "calibration": ["analytic", "classical", "other"],
    "selection": ["permute_and_flip", "exponential", "gumbel"],
    "estimator": [
        "duff",
        "smooth_cauchy",
        "laplace_ln",
        "ptr_median",
        "subsample_aggregate",
        "trimmed_mean_student_t",
        "duff_mode",
        "mechanisms.median.duff.Duff",
        "os.path",
        "nonexistent.Module",
    ],
}


def parameters(name: str) -> list[str]:
    return ["epsilon", "delta", *sorted(options_of(get(name)))]


@pytest.mark.parametrize("name", MECHANISMS)
def test_hostile_values_of_one_parameter_raise_only_value_errors(name: str) -> None:
    data, bounds = dataset(name)
    for parameter in parameters(name):
        for value in [*NUMBERS, *OTHERS, *STRINGS.get(parameter, [])]:
            config = base_config(name)
            config[parameter] = value
            try:
                exercise(name, config, data, bounds)
            except ValueError:
                pass
            except Exception as error:  # report which value, not just the traceback
                raise AssertionError(f"{name} {parameter}={value!r}: {error!r}") from error


WIDE_BOUNDS = [
    (-3.0, 3.0),
    (0, 1),
    (1, 30),
    (-1e307, 1e307),
    (0.0, 1.7e308),
    (-8e307, 8e307),
    (1e308, 1.7e308),
    (-1e-300, 1e-300),
    (0, 5e-324),
    (-5e-324, 5e-324),
    (-(2**53), 2**53),
    (2**53 - 2, 2**53),
    (0, 1e-5),
    (0, 2**60),
    (Fraction(1, 3), Decimal("2")),
]
TINY_EPSILONS = [5e-324, 1e-310, 1e-300, 1e-160, 1e-12]
HUGE_EPSILONS = [1e100, 1e154, 1e300, 1e307, 1.7976931348623157e308]
GOOD = {
    "epsilon": [*TINY_EPSILONS, 0.1, 1.0, 2.0, 1e3, 1e8, 1e15, *HUGE_EPSILONS],
    "delta": [5e-324, 1e-300, 1e-100, 1e-12, 1e-6, 0.1, 0.5, 0.9999999999999999],
    "alpha": [5e-324, 1e-300, 1e-30, 1 / 7000, 0.05, 0.1, 0.3, 0.5, 0.7, 0.9, 1 - 1e-10],
    "reference_size": [1, 2, 3, 10, 1000, 10**6, 10**7, 2**52],
    "trim": [0, 1, 2, 10, 10**9, 0.0, 0.1, 0.25, 0.4999999999999999],
    "degrees_of_freedom": [1e-300, 0.5, 1, 3, 100, 1e300],
    "candidates": [2, 3, 11, 1001],
    "blocks": [1, 2, 10, 50],
    "granularity": [5e-324, 1e-300, 1e-3, 0.5, 0.9999999999999999],
    "proposal": [0.0, 5e-324, 1e-300, 0.5, 1.0],
    "refusal_target": [5e-324, 1e-300, 0.5, 0.9999999999999999],
    "clip_output": [True, False, np.True_],
    "monotone": [True, False],
    **STRINGS,
}


@st.composite
def configurations(draw: st.DrawFn, name: str) -> tuple[dict[str, Any], np.ndarray, tuple]:
    """A configuration of extreme but valid values (some refused, with a ``ValueError``),
    bounds from very narrow to nearly all of float64, and data with ties and points at
    the bounds."""
    cls = get(name)
    config = base_config(name)
    for parameter in parameters(name):
        needed = {"epsilon": cls.requires_epsilon, "delta": cls.requires_delta}
        if needed.get(parameter, True) and parameter in GOOD and draw(st.booleans()):
            config[parameter] = draw(st.sampled_from(GOOD[parameter]))
    bounds = draw(st.sampled_from(WIDE_BOUNDS))
    n = draw(st.sampled_from([0, 1, 2, 3, 21, 200]))
    u = np.random.default_rng(draw(st.integers(0, 2**16))).random(n)
    kind = draw(st.sampled_from(["spread", "ties", "ends"]))
    if kind == "ties":
        u = np.round(u * 3) / 3
    elif kind == "ends":
        u = np.where(u < 0.5, 0.0, 1.0)
    lower, upper = float(bounds[0]), float(bounds[1])
    data = lower * (1 - u) + upper * u
    if "mode" in cls.statistics:
        data = np.round(np.clip(data, -1e15, 1e15))
    return config, data, bounds


@pytest.mark.parametrize("name", MECHANISMS)
def test_random_extreme_configurations_raise_only_value_errors(name: str) -> None:
    examples = 20 if name in ("subsample_aggregate", "diffprivlib_quantile") else 60

    @settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow],
    )
    @given(configurations(name))
    def check(case: tuple[dict[str, Any], np.ndarray, tuple]) -> None:
        config, data, bounds = case
        only_value_errors(name, config, data, bounds)

    check()
