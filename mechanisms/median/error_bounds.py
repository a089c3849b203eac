r"""High-probability error bounds of the median mechanisms, evaluated on one dataset.

Each function returns a :class:`Bound`: a level ``value`` such that, with
probability at least ``1 - η`` over the mechanism's randomness on *this*
dataset, the bounded ``quantity`` of the release is at most ``value``; and
``abs_error``, the same event expressed as ``|M(S) − T(S)| <= abs_error`` in
data units (so it can be drawn beside Figure 1).  ``T(S)`` is the release's
``true_value`` (lower median / ``x_(ceil(αn))`` of the *bounded* data, as in
:mod:`mechanisms.core.interface`).  Everything is computed from the sorted bounded data,
the public bounds ``[a, b]`` and the mechanism's parameters.

Duff — Duff paper, Theorem 1 and Corollary 1 (appendix A.4)
------------------------------------------------------------
With ``H_t = {x : u_d(x, S) >= -t}`` and ``β*`` the inverse of ``β ↦ SS_β/β``,
Theorem 1 reads ``P(|x − T(S)| > t) <= 2(b − a)·exp(−εγ/2) / λ(H_γ)`` for
``γ = 1/(2β*(t/(e − 1)))``.  Corollary 1 assumes ``λ(H_t) >= C·t`` and gives,
with ``W`` the principal branch of Lambert's function and
``β_exp = ε / (4 W(ε(b − a)/(Cη)))``,

    |x − T(S)| < 4(e − 1)·SS_{β_exp}/ε · W(ε(b − a)/(Cη)) = (e − 1)·SS_{β_exp}/β_exp   (eq. 3)

with probability at least ``1 − η``.  A bound on the absolute error in data
units; ``SS`` is the add/remove smooth sensitivity of the lower median (Duff's
neighbouring, Δu = 1).  The constant ``C`` (:func:`duff_bound`):

* The assumption cannot hold for all ``t > 0``: ``λ(H_t) = 0`` for ``t < 1``
  (``u_d <= −1`` off the data points) and ``λ(H_t) <= b − a``.  The proof uses
  it at one level only, ``t = γ = 2W/ε``, so ``C`` is taken from the data as
  the *largest* constant for which it holds there.  Since the right-hand side
  of Theorem 1 is non-increasing in ``γ``, that ``C`` is
  ``C* = 2(b − a)e^{−εγ*/2}/(γ*η)`` with ``γ*`` the smallest ``γ`` at which
  Theorem 1's right-hand side is ``<= η``; then ``W(ε(b − a)/(C*η)) = εγ*/2``
  and any smaller ``C`` gives a looser bound.
* The paper's example value ``C = 2(b − a)/n`` (evenly spaced points) is
  available as :func:`duff_bound_paper_c`.  It is twice too large: ``u_d``
  drops by 2 per gap (section 4.1), so for evenly spaced points
  ``λ(H_t) ≈ t(b − a)/(n + 1)``, i.e. ``C ≈ (b − a)/n``; and it ignores how
  concentrated real data are (N(0, 1) on [−10, 10] has gaps ~25× narrower near
  the median than ``(b − a)/n``).  ``details["assumption_holds"]`` says whether
  ``λ(H_γ) >= Cγ`` at the level used.
* Slack in the printed proof (not errors): the factor 2 of Theorem 1 is not
  needed (with ``β = β*(t/(e − 1))`` the two events of eq. 6 coincide and the
  first is empty), ``λ(H_t^c) <= b − a`` is used for the bad set, and the
  distance-to-error step ``|x − T| <= K(e − 1)SS_β`` is a worst case along a
  path of ``K`` edits.

SmoothSens_ε (Cauchy) — Duff paper, Proposition 7 (appendix A.5)
----------------------------------------------------------------
``x = T(S) + s·Z``, ``Z`` standard Cauchy, ``s = SS_{ε/6}/(ε/6) = 6·SS_{ε/6}/ε``
(Proposition 3 with γ = 2): ``P(|x − T| > t) = 1 − (2/π)·arctan(t/s)``, so
``t = s·tan(π(1 − η)/2) = s·cot(πη/2)`` (eq. 4) is the *exact* ``(1 − η)``
quantile of the unclipped error.  Clipping the output to ``[a, b]`` (which
contains ``T``) can only shrink ``|x − T|``, so the bound stays valid (coverage
``>= 1 − η``, and 1 once ``t >= max(T − a, b − T)``).  ``SS`` uses the
mechanism's own neighbouring relation.  (The paper writes the density as
``1/(1 + |z|²)`` unnormalised and uses γ both for the noise exponent and, in
Proposition 7, for the scale; the formula is unaffected.)

Quantile EM — G. Brown, "Exponential Mechanism and Inverse Sensitivity" (lecture 7
notes), section 1.2, "Attempt 3"
-------------------------------------------------
A bound on the **rank error**, not on the absolute error.  Brown's notes run the EM
with ``u(y) = −n·|1/2 − F̂(y)|``, ``F̂(y) = #{x_i <= y}/n`` and Δ = 1, and shows
``P(|1/2 − F̂(ỹ)| > α) <= (R/W_{x,α/2})·exp(−εαn/4)``, the ratio of the bad
set's probability to that of ``{|1/2 − F̂| <= α/2}`` (of measure
``W_{x,α/2}``).  In rank units ``e(y) = |#{x_i <= y} − αq·n|`` (``αq`` the
quantile, 1/2 for the median; the notes write α for the rank slack), the
quantile EM here has density ``∝ exp(−κ·e(y))`` on the interior of every gap,
``κ = ε/(2Δu)``, with ``Δu = max(αq, 1 − αq)`` (= 1/2) for add/remove and 1 for
replace-one neighbours (:mod:`mechanisms.median.quantile_em`).  The same two-set
argument gives, for every ``k >= 0``,

    P(e(ỹ) > k) <= (b − a)·exp(−κk/2) / λ({y : e(y) <= k/2}),

which is the notes' bound for ``κ = ε/2`` (replace-one).  Under add/remove our
EM is the notes' at ``2ε``.  ``value`` is the smallest ``k`` at which the
right-hand side is ``<= η``, with ``λ`` the exact measure from the data (seed
004's ``W_{x,α/2}`` with its rounding made exact).  Conversion to data units
(exact, using the data's gaps): ``e(y) <= k`` iff ``x_(lo) <= y < x_(hi)`` with
``lo = ceil(αq·n − k)``, ``hi = floor(αq·n + k) + 1`` (``x_(0) = a``,
``x_(n+1) = b``), so ``|y − T| <= max(|T − x_(lo)|, |x_(hi) − T|)``.  The notes'
Claim 1.1 (``u(Ỹ) >= OPT − (2Δ/ε)(t + log|Y|)`` w.p. ``1 − e^{−t}``) needs a
finite output set and does not apply to outputs in ``[a, b]``; attempt 3 is its
continuous version.  (The notes' attempt 2 has a sign slip, ``exp(−ε/2·u)`` for
``exp(ε/2·u)``, and its sample-size conclusion drops the factor 4.)

Both EM bounds come from the same inequality (Duff paper, Proposition 4):
:func:`em_level` finds the smallest level at which ``factor·(b − a)·exp(−rate·h)
<= η·λ({level <= h})``.

A mechanism class declares its bounds by overriding
:meth:`mechanisms.core.interface.Mechanism.error_bounds` (``Duff``, ``QuantileEM`` and
``SmoothCauchy`` call the functions here; a plug-in may return its own
:class:`Bound`); :func:`mechanism_bounds` asks the class, and
:func:`exact_coverage` checks a bound against the release's exact cdf.

(Over 400 lines because the derivations above are part of it: the code is
about 400 lines, one section per theorem.)
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from mechanisms.core.bound_checks import order_statistic, rank_window
from mechanisms.core.bounds import ABS_ERROR, DEFAULT_ETA, RANK_ERROR, Bound, check_eta
from mechanisms.core.guarantee import Neighbouring
from mechanisms.core.quantiles import quantile_value, rank_distance, sensitivity, split_alpha_n
from mechanisms.core.validation import check_real
from mechanisms.median.duff_utility import gap_utility
from mechanisms.smooth.sensitivity import QuantileSmoothSensitivity

BOUND_NAMES = {
    "corollary1": "Duff paper, Corollary 1, C from the data",
    "corollary1_paper_c": "Duff paper, Corollary 1, C = 2(b − a)/n",
    "proposition7": "Duff paper, Proposition 7",
    "attempt3": "Brown's lecture notes, attempt 3 (rank error)",
}
"""Short names of the bounds and their sources, for tables."""
_EXP_OVERFLOW = 700.0  # exp() of anything larger is close to float64's limit


# ------------------------------------------------------------------------ checks


def _positive(value: float, name: str) -> float:
    return check_real(value, name, minimum=0.0)


# ------------------------------------------------------------------ shared tools


def lambert_w_exp(log_z: float) -> float:
    """``W(e^{log_z})``, principal branch, for any real ``log_z`` (no overflow).

    ``scipy.special.lambertw`` below ``e^700``; above it, Newton's method on
    ``w + log w = log_z`` (the same identity ``w·e^w = z`` in log form).
    """
    if log_z <= _EXP_OVERFLOW:
        return float(special.lambertw(math.exp(log_z)).real)
    w = log_z - math.log(log_z)
    for _ in range(50):
        step = (w + math.log(w) - log_z) / (1.0 + 1.0 / w)
        w -= step
        if abs(step) <= 4e-16 * w:
            break
    return w


def gap_lengths(sorted_x: np.ndarray, lower: float, upper: float) -> np.ndarray:
    """Lengths of gaps ``0..n``: ``x_(i+1) − x_(i)`` with ``x_(0) = a``, ``x_(n+1) = b``."""
    return np.diff(np.concatenate(([lower], sorted_x, [upper])))


def level_measure(levels: np.ndarray, lengths: np.ndarray, h: float) -> float:
    """``λ({y : level(y) <= h})`` for a level constant on each gap (points have measure 0)."""
    return float(lengths[levels <= h].sum())


def em_level(
    levels: np.ndarray, lengths: np.ndarray, *, rate: float, span: float, eta: float, factor: float
) -> float:
    """Smallest ``h >= 0`` with ``factor·span·exp(−rate·h) <= η·λ({level <= h})``.

    ``levels[i]`` is the utility loss on gap ``i`` (``−u_d`` for Duff, the rank
    error for the quantile EM) and ``lengths[i]`` its length.  The left side
    decreases and ``λ`` is a non-decreasing step function of ``h``, so the set
    of valid ``h`` is ``[h*, ∞)``; on the step ``[v_j, v_{j+1})`` where
    ``λ = L_j`` the condition reads ``h >= log(factor·span/(η·L_j))/rate``.
    """
    positive = lengths > 0
    values, inverse = np.unique(levels[positive], return_inverse=True)
    measure = np.cumsum(np.bincount(inverse, weights=lengths[positive]))
    needed = (math.log(factor * span / eta) - np.log(measure)) / rate
    candidate = np.maximum(values, needed)
    following = np.append(values[1:], np.inf)
    return float(candidate[np.argmax(candidate < following)])


# ------------------------------------------------------------------------ Duff


def duff_levels(n: int) -> np.ndarray:
    """``−u_d`` on the interior of gaps ``0..n`` (Duff paper, section 4.1)."""
    return -gap_utility(n, np.arange(n + 1))


def corollary1(
    ss: QuantileSmoothSensitivity, *, epsilon: float, span: float, c: float, eta: float
) -> dict[str, float]:
    """Duff paper, Corollary 1 (eq. 3) for a given constant ``C``.

    Returns ``W = W(ε(b − a)/(Cη))`` (scipy's Lambert W), ``beta = ε/(4W)``,
    ``gamma = 2W/ε`` (the level where ``λ(H_γ) >= Cγ`` is needed), ``ss =
    SS_beta`` and ``bound = 4(e − 1)·SS_beta·W/ε``.
    """
    log_z = math.log(epsilon * span) - math.log(c) - math.log(eta)
    w = lambert_w_exp(log_z)
    beta = epsilon / (4.0 * w)
    ss_beta = math.exp(ss.log(beta))
    return {
        "W": w,
        "beta": beta,
        "gamma": 2.0 * w / epsilon,
        "ss": ss_beta,
        "bound": 4.0 * (math.e - 1.0) * ss_beta * w / epsilon,
    }


def _duff(
    sorted_x: np.ndarray,
    lower: float,
    upper: float,
    epsilon: float,
    eta: float,
    c: float,
    gamma: float | None = None,
) -> tuple[dict[str, float], float]:
    """Corollary 1 with constant ``c``, and ``λ(H_γ)`` at ``gamma`` (default: its ``2W/ε``).

    ``gamma`` is passed when known exactly: ``2W/ε`` after the Lambert W round
    trip can fall an ulp below a step of ``λ(H_·)``.
    """
    ss = QuantileSmoothSensitivity(sorted_x, lower, upper, Neighbouring.ADD_REMOVE)
    result = corollary1(ss, epsilon=epsilon, span=upper - lower, c=c, eta=eta)
    if gamma is not None:
        result["gamma"] = gamma
    measure = level_measure(
        duff_levels(sorted_x.size), gap_lengths(sorted_x, lower, upper), result["gamma"]
    )
    return result, measure


def duff_bound(
    sorted_x: np.ndarray, lower: float, upper: float, *, epsilon: float, eta: float = DEFAULT_ETA
) -> Bound:
    """Corollary 1 with ``C = C*`` from the data (module docstring): ``|M − T| <= t``.

    ``C*`` is the largest constant for which the corollary's assumption
    ``λ(H_γ) >= Cγ`` holds at the level ``γ = 2W/ε`` its proof uses.
    """
    epsilon, eta = _positive(epsilon, "epsilon"), check_eta(eta)
    span = upper - lower
    levels = duff_levels(sorted_x.size)
    gamma = em_level(
        levels, gap_lengths(sorted_x, lower, upper), rate=epsilon / 2, span=span, eta=eta, factor=2
    )
    log_c = math.log(2.0 * span / eta) - epsilon * gamma / 2.0 - math.log(gamma)
    result, measure = _duff(sorted_x, lower, upper, epsilon, eta, math.exp(log_c), gamma)
    return Bound(
        mechanism="duff",
        name="corollary1",
        source="Duff paper, Corollary 1 (eq. 3), C from the data",
        eta=eta,
        quantity=ABS_ERROR,
        value=result["bound"],
        abs_error=result["bound"],
        details={**result, "C": math.exp(log_c), "level_measure": measure},
    )


def duff_bound_paper_c(
    sorted_x: np.ndarray, lower: float, upper: float, *, epsilon: float, eta: float = DEFAULT_ETA
) -> Bound:
    """Corollary 1 with the paper's evenly-spaced constant ``C = 2(b − a)/n``.

    ``details["assumption_holds"]`` is whether ``λ(H_γ) >= Cγ`` at ``γ = 2W/ε``;
    when it is False, the corollary does not apply to this dataset.
    """
    epsilon, eta = _positive(epsilon, "epsilon"), check_eta(eta)
    n = max(sorted_x.size, 1)
    c = 2.0 * (upper - lower) / n
    result, measure = _duff(sorted_x, lower, upper, epsilon, eta, c)
    return Bound(
        mechanism="duff",
        name="corollary1_paper_c",
        source="Duff paper, Corollary 1 (eq. 3), C = 2(b - a)/n (section 4.2 example)",
        eta=eta,
        quantity=ABS_ERROR,
        value=result["bound"],
        abs_error=result["bound"],
        details={
            **result,
            "C": c,
            "level_measure": measure,
            "assumption_holds": measure >= c * result["gamma"],
        },
    )


# --------------------------------------------------------------- smooth Cauchy


def smooth_cauchy_bound(
    sorted_x: np.ndarray,
    lower: float,
    upper: float,
    *,
    epsilon: float,
    eta: float = DEFAULT_ETA,
    neighbouring: Neighbouring = Neighbouring.ADD_REMOVE,
    alpha: float = 0.5,
) -> Bound:
    """Proposition 7: ``|M − T| <= (6·SS_{ε/6}/ε)·tan(π(1 − η)/2)`` w.p. ``>= 1 − η``.

    The argument only uses the Cauchy noise's quantile, so it holds for the
    α-quantile with its own smooth sensitivity (:mod:`mechanisms.smooth.sensitivity`).
    """
    epsilon, eta = _positive(epsilon, "epsilon"), check_eta(eta)
    beta = epsilon / 6.0
    ss = QuantileSmoothSensitivity(sorted_x, lower, upper, Neighbouring(neighbouring), alpha=alpha)
    scale = math.exp(ss.log(beta) - math.log(beta))
    quantile = 1.0 / math.tan(math.pi * eta / 2.0)  # tan(π(1 − η)/2), accurate for small η
    bound = scale * quantile
    return Bound(
        mechanism="smooth_cauchy",
        name="proposition7",
        source="Duff paper, Proposition 7 (eq. 4)",
        eta=eta,
        quantity=ABS_ERROR,
        value=bound,
        abs_error=bound,
        details={"beta": beta, "scale": scale, "cauchy_quantile": quantile},
    )


# ----------------------------------------------------------------- quantile EM


def rank_error(sorted_x: np.ndarray, estimates: np.ndarray, alpha: float = 0.5) -> np.ndarray:
    """``|#{x_i <= y} − α·n|`` for each estimate ``y`` (Brown's notes: ``n·|1/2 − F̂(y)|``)."""
    whole, fraction = split_alpha_n(sorted_x.size, alpha)
    counts = np.searchsorted(sorted_x, np.asarray(estimates, dtype=np.float64), side="right")
    return np.abs((counts - whole) - fraction)


def quantile_em_bound(
    sorted_x: np.ndarray,
    lower: float,
    upper: float,
    *,
    epsilon: float,
    eta: float = DEFAULT_ETA,
    alpha: float = 0.5,
    neighbouring: Neighbouring = Neighbouring.ADD_REMOVE,
) -> Bound:
    """Brown's lecture notes, attempt 3: rank error ``<= k`` w.p. ``>= 1 − η`` (module docstring).

    ``abs_error`` converts ``k`` to data units through the data's order statistics.
    """
    epsilon, eta = _positive(epsilon, "epsilon"), check_eta(eta)
    n = sorted_x.size
    delta_u = sensitivity(alpha, Neighbouring(neighbouring))
    rate = epsilon / (2.0 * delta_u)
    levels = rank_distance(n, alpha, np.arange(n + 1))
    half = em_level(
        levels,
        gap_lengths(sorted_x, lower, upper),
        rate=rate,
        span=upper - lower,
        eta=eta,
        factor=1,
    )
    k = 2.0 * half
    lo, hi = rank_window(n, alpha, k)
    true_value = quantile_value(sorted_x, alpha, lower)
    ends = (
        order_statistic(sorted_x, lo, lower, upper),
        order_statistic(sorted_x, hi, lower, upper),
    )
    abs_error = max(abs(true_value - ends[0]), abs(ends[1] - true_value))
    return Bound(
        mechanism="quantile_em",
        name="attempt3",
        source="Brown, Exponential Mechanism and Inverse Sensitivity, §1.2, attempt 3",
        eta=eta,
        quantity=RANK_ERROR,
        value=k,
        abs_error=abs_error,
        details={
            "rate": rate,
            "sensitivity": delta_u,
            "alpha": alpha,
            "good_set_measure": level_measure(levels, gap_lengths(sorted_x, lower, upper), half),
            "window": (lo, hi),
        },
    )


# --------------------------------------------------------------------- dispatch


# ------------------------------------------------------------ exact coverage
