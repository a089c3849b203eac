r"""Propose-test-release for the lower median: (ε, δ)-DP, add/remove neighbours, may answer ⊥.

Propose-test-release (PTR) was introduced by Dwork & Lei, "Differential
privacy and robust statistics" (STOC 2009); this is the textbook form with a
proposed bound on the local sensitivity (Dwork & Roth, "The Algorithmic
Foundations of Differential Privacy", 2014, chapter 7, "Propose-test-release"),
applied to the lower median ``T`` (``T(∅) = a``):

1. **Propose** a public bound ``p`` on the local sensitivity ``LS(x)``.
2. **Test**: ``γ(x)`` = the distance to instability, the least number of
   additions/removals turning ``x`` into a dataset ``z`` with ``LS(z) > p``
   (``∞`` if there is none, i.e. ``p >= b - a``, the global sensitivity).  If
   ``γ(x) + Lap(1/ε_t) <= τ``, answer ⊥ ("no result").
3. **Release** ``T(x) + Lap(p/ε_r)``, clipped to ``[a, b]`` (option
   ``clip_output``, default True, as :class:`mechanisms.noise.additive.AdditiveNoiseRelease`;
   post-processing).

Distance to instability of the median (derived from
:mod:`mechanisms.smooth.sensitivity`, where ``A(k) = max{LS(z) : d(x, z) <= k}
= x_{floor((n+k)/2)+1} - x_{floor((n-k)/2)}`` under add/remove, padding
``x_i = a`` for ``i <= 0`` and ``b`` for ``i >= n + 1``, exact and
brute-force checked): ``γ(x) = min{k : A(k) > p}``.  ``A`` is non-decreasing
and ``A(n) = b - a``, so a binary search over ``0..n`` finds it (``∞`` when
``b - a <= p``).  ``tests/test_ptr.py`` checks it against a search over
add/remove edits on small datasets.

Privacy (derived here; the tests check the (ε, δ) condition exactly on
neighbour pairs).  ``γ`` has sensitivity 1 (triangle inequality), so the test
is ε_t-DP.  If ``γ(x) >= 1`` or ``γ(x') >= 1`` for neighbours ``x, x'``, then
``|T(x) - T(x')| <= min(LS(x), LS(x')) <= p`` and the release is ε_r-DP for
this pair: every event has ratio at most ``e^{ε_t + ε_r}``.  If
``γ(x) = γ(x') = 0`` both answer ⊥ with the same probability and answer at
all with probability ``P(Lap(1/ε_t) > τ) = e^{-ε_t τ}/2``.  So PTR is
``(ε_t + ε_r, e^{-ε_t τ}/2)``-DP.  Here ``ε_t = ε_r = ε/2`` and
``τ = max(0, log(1/(2δ)))/ε_t``: **(ε, δ)-DP** for add/remove neighbours.
(The textbook uses ``ε_t = ε_r = ε`` and ``τ = log(1/δ)/ε``: (2ε, δ/2).)

Refusal probability (exact): ``P(⊥) = F_Lap(ε_t(τ - γ))``, ``F_Lap`` the cdf
of ``Lap(1)``; 0 when ``γ = ∞``.

The proposal (the knob that trades refusals for noise; the Duff paper, section
6, reports PTR losing to Duff "even when allowed a high failure rate (e.g.
50%)"): option ``proposal``, the bound ``p`` as a fraction of ``b - a`` in
``(0, 1]``; or, by default, ``p`` chosen on public reference data, the
``reference_size`` evenly spaced points of :mod:`mechanisms.smooth.tuning` (default
1000, the Duff paper's ``|S|``) stretched over ``[a, b]``, as the smallest
bound whose refusal probability there is at most ``refusal_target`` (default
0.5): the least integer ``D`` with ``F_Lap(ε_t(τ - D)) <= refusal_target``, then
``p = A_ref(D - 1)``.  The proposal never depends on the data, not even on
their size, which is private under add/remove: with ``reference_size`` set to
the size of each dataset, the privacy audit
(:mod:`experiments.audit.exact`) finds violations of 100δ and more between
datasets of sizes ``n`` and ``n + 1`` that get different proposals.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import ClassVar

import numpy as np

from mechanisms.core.data import lower_median
from mechanisms.core.guarantee import Neighbouring
from mechanisms.core.interface import Mechanism, Release
from mechanisms.core.presentation import FigureStyle
from mechanisms.core.registration import register
from mechanisms.core.sorted_data import order_statistics
from mechanisms.core.validation import (
    check_flag,
    check_integer,
    check_open_unit,
    check_real,
    check_rng,
    check_size,
)
from mechanisms.noise.additive import AdditiveNoiseRelease, Scale
from mechanisms.noise.laws import StandardLaplace
from mechanisms.smooth.tuning import EvenlySpaced

DEFAULT_REFUSAL_TARGET = 0.5
DEFAULT_REFERENCE_SIZE = 1000
MAX_REFERENCE_SIZE = 2**52
"""Largest ``reference_size`` (a ``ValueError`` above it): the reference data's points
``(i + 1/2)/n`` have exact numerators in float64 and their ranks stay in int64 (beyond
2^63 they overflowed: an ``OverflowError``, or a wrong proposal)."""


def instability_gaps(sorted_x: np.ndarray, lower: float, upper: float, k: np.ndarray) -> np.ndarray:
    """``A(k) = x_{floor((n+k)/2)+1} - x_{floor((n-k)/2)}``: the largest local sensitivity of
    the lower median within ``k`` additions/removals (padded order statistics)."""
    n = sorted_x.size
    k = np.asarray(k, dtype=np.int64)
    high = order_statistics(sorted_x, (n + k) // 2 + 1, lower, upper)
    return high - order_statistics(sorted_x, (n - k) // 2, lower, upper)


def instability_distance(
    sorted_x: np.ndarray, lower: float, upper: float, proposal: float
) -> float:
    """``γ = min{k : A(k) > proposal}`` (an integer as a float), ``inf`` if ``A(n) <= proposal``."""
    n = sorted_x.size

    def unstable(k: int) -> bool:
        return bool(instability_gaps(sorted_x, lower, upper, np.array([k]))[0] > proposal)

    if not unstable(n):
        return math.inf
    low, high = 0, n  # A is non-decreasing: the first unstable k lies in [low, high]
    while low < high:
        mid = (low + high) // 2
        if unstable(mid):
            high = mid
        else:
            low = mid + 1
    return float(low)


def laplace_cdf(u: float) -> float:
    """``P(Lap(1) <= u)``."""
    return 0.5 * math.exp(u) if u < 0 else 1.0 - 0.5 * math.exp(-u)


def scaled_threshold(delta: float) -> float:
    """``ε_t τ = max(0, log(1/(2δ)))``: an unstable dataset passes with probability <= δ."""
    return max(0.0, -math.log(2.0 * delta))


def reference_proposal(n: int, scaled_tau: float, epsilon_test: float, target: float) -> float:
    """The proposal (fraction of ``b - a``) refused with probability <= ``target`` on the
    reference data of size ``n`` (module docstring)."""
    inverse = math.log(2.0 * target) if target < 0.5 else -math.log(2.0 * (1.0 - target))
    ratio = (scaled_tau - inverse) / epsilon_test  # +inf for a tiny ε: no proposal passes
    needed = n + 1 if ratio >= n + 1 else 0 if ratio <= 0 else math.ceil(ratio)
    needed = min(needed, n + 1)  # A_ref(k) = 1 (the whole width) from k = n on
    reference = EvenlySpaced(n)
    gap = instability_gaps(reference, 0.0, 1.0, np.array([max(needed, 1) - 1]))  # type: ignore[arg-type]
    return float(gap[0])


class PTRRelease(Release):
    """⊥ (NaN) with probability ``refusal_probability``, else the answer release."""

    def __init__(
        self,
        answer: AdditiveNoiseRelease,
        *,
        distance: float,
        epsilon_test: float,
        scaled_tau: float,
        parameters: Mapping[str, float],
    ) -> None:
        self.answer = answer
        self.lower, self.upper, self.n = answer.lower, answer.upper, answer.n
        self.clip = answer.clip  # whether answers are clipped to [a, b] (read by the harness)
        self.true_value = answer.true_value
        self.distance = distance
        self._u = -math.inf if distance == math.inf else scaled_tau - epsilon_test * distance
        self.refusal_probability = laplace_cdf(self._u)
        self.parameters = MappingProxyType({**answer.parameters, **parameters})

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        """Draws the test noise, then the answers; ⊥ where ``Lap(1) <= ε_t(τ - γ)``."""
        size, rng = check_size(size), check_rng(rng)
        refused = rng.laplace(0.0, 1.0, size) <= self._u
        values = self.answer.sample(size, rng)
        values[refused] = np.nan
        return values

    def cdf(self, x: np.ndarray | float) -> np.ndarray:
        """``P(answered and M(x) <= x) = (1 - P(⊥))·F_answer(x)``."""
        return (1.0 - self.refusal_probability) * self.answer.cdf(x)


@register
class PTRMedian(Mechanism[Release]):
    """Propose-test-release for the lower median: (ε, δ)-DP (add/remove), ⊥ is NaN.

    Options: ``proposal`` (the proposed local-sensitivity bound as a fraction of
    ``b - a``, in (0, 1]; default: chosen on the public reference data),
    ``refusal_target`` (in (0, 1), default 0.5: the refusal probability on the
    reference data, used when ``proposal`` is not given), ``reference_size``
    (default 1000) and ``clip_output`` (module docstring).
    """

    name = "ptr_median"
    display_name = "PTR"
    figure = FigureStyle("#d95f02", "X", 5)
    requires_delta = True
    may_refuse: ClassVar[bool] = True
    neighbouring = Neighbouring.ADD_REMOVE

    def __init__(
        self,
        *,
        epsilon: float,
        delta: float | None = None,
        bounding: str = "clip",
        proposal: float | None = None,
        refusal_target: float = DEFAULT_REFUSAL_TARGET,
        reference_size: int = DEFAULT_REFERENCE_SIZE,
        clip_output: bool = True,
    ) -> None:
        super().__init__(epsilon=epsilon, delta=delta, bounding=bounding)
        self.proposal = proposal
        if proposal is not None:
            self.proposal = check_real(
                proposal, "proposal", minimum=0.0, maximum=1.0, open_maximum=False
            )
        self.refusal_target = check_open_unit(refusal_target, "refusal_target")
        self.reference_size = check_integer(
            reference_size, "reference_size", minimum=1, maximum=MAX_REFERENCE_SIZE
        )
        self.clip_output = check_flag(clip_output, "clip_output")
        self.epsilon_test = self.epsilon_release = 0.5 * self.epsilon
        if self.epsilon_test == 0.0:
            raise ValueError(f"epsilon: epsilon/2 underflows float64, got epsilon={epsilon!r}")
        self.scaled_tau = scaled_threshold(self.required_delta)

    guarantee_source = (
        "propose-test-release (Dwork & Lei 2009; Dwork & Roth 2014 ch. 7) for the "
        "lower median: eps/2 test of the distance to instability, eps/2 Laplace release"
    )

    @property
    def proposal_fraction(self) -> float:
        """``p/(b - a)``: the option ``proposal``, or chosen on the reference data."""
        if self.proposal is not None:
            return self.proposal
        return reference_proposal(
            self.reference_size, self.scaled_tau, self.epsilon_test, self.refusal_target
        )

    def _release(self, sorted_x: np.ndarray, lower: float, upper: float) -> Release:
        proposal = self.proposal_fraction * (upper - lower)
        answer = AdditiveNoiseRelease(
            true_value=lower_median(sorted_x, lower),
            scale=Scale.ratio(proposal, self.epsilon_release),
            noise=StandardLaplace(),
            lower=lower,
            upper=upper,
            n=sorted_x.size,
            clip=self.clip_output,
        )
        distance = instability_distance(sorted_x, lower, upper, proposal)
        return PTRRelease(
            answer,
            distance=distance,
            epsilon_test=self.epsilon_test,
            scaled_tau=self.scaled_tau,
            parameters={"proposal": proposal, "distance": distance},
        )
