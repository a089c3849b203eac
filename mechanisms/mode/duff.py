"""Duff for the mode: the exponential mechanism with ``u(y, S) = n_y - n_max``.

Gillenwater & Muñoz Medina, "Duff: A Dataset-Distance-Based Utility Function
Family for the Exponential Mechanism", section 4.1 ("Modes"): for data with values
in a finite set ``Y``, with ``n_y`` the count of ``y`` and ``n_max`` the largest
count, Duff reduces to

    u_d(y, S) = n_y - n_max.

This is ``-min{d(S, S') : y is a most frequent value of S'}`` with ``d`` the
add/remove distance: ``n_max - n_y`` additions of ``y`` make it a most frequent
value, and no shorter edit does (one edit changes ``n_max - n_y`` by at most 1).
For the empty dataset every value has count 0, so ``u = 0`` everywhere and the
output is uniform on ``Y``.  (The harness's true mode is the *smallest* most
frequent value, ``a`` for ∅ (:mod:`mechanisms.core.domain`); the metrics count
every most frequent value as a hit, consistent with this utility.)

Sensitivity 1 (Lemma 1): adding a point ``z`` raises ``n_z`` by 1 and ``n_max`` by
0 or 1, so ``u(y)`` changes by ``-1``, 0 or ``+1``.  The mechanism samples
``P(y) ∝ exp(ε·u(y, S)/2)`` (Definition 7) and is ε-DP for add/remove neighbours.

Sampling, exactly, by levels (eq. 5): level ``k`` is the set of values with
``n_y = n_max - k``; every unseen value is in the lowest level, of size
``|Y| - #distinct``.  The level is drawn by inversion of its cumulative log-space
weights (default: ``O(log L)`` per draw for ``L <= sqrt(2n) + 2`` levels) or by the
paper's racing sampler (Algorithm 1, ``sampler="racing"``, ``O(L)`` per draw; the
same distribution, :func:`mechanisms.mode.release.exponential_mechanism`), then a
uniform value of it.  Inversion is the default, as for the median
(:mod:`mechanisms.sampling.piecewise`): it is cheaper per draw (10⁵ draws over the 150 levels of
10⁵ Zipf(1.3) points: 26 ms by inversion, 860 ms by the race).

``P(y) ∝ exp(ε·n_y/2)·exp(-ε·n_max/2)``: the same distribution as the count
exponential mechanism with factor ``ε/2`` (:class:`mechanisms.mode.count_em.CountEM`
with ``monotone=False``), since ``n_max`` does not depend on ``y``.  By the
monotone-count argument of :mod:`mechanisms.mode.count_em` that mechanism is in fact
``ε/2``-DP for add/remove neighbours, and the bound is reached (one point versus
none on a large domain; ``tests/test_mode_privacy.py``): Duff for the mode spends
half of its budget.  The guarantee states the paper's ε.
"""

from __future__ import annotations

import numpy as np

from mechanisms.core.domain import count_of, domain_counts
from mechanisms.core.registration import register
from mechanisms.core.validation import check_choice
from mechanisms.mode.release import SAMPLERS, ModeMechanism, ModeRelease, exponential_mechanism
from mechanisms.sampling.piecewise import score_epsilon


def utility(sorted_x: np.ndarray, y: np.ndarray | float) -> np.ndarray:
    """``u(y, S) = n_y - n_max`` at integer points ``y`` of ``Y`` (module docstring)."""
    counts = domain_counts(sorted_x)[1]
    n_max = int(counts.max()) if counts.size else 0
    return (count_of(sorted_x, np.asarray(y, dtype=np.float64)) - n_max).astype(np.float64)


@register
class DuffMode(ModeMechanism):
    """Duff for the mode: ``P(y) ∝ exp(ε·(n_y - n_max)/2)`` over ``Y``; ε-DP (add/remove).

    Option ``sampler``: ``"inverse_cdf"`` (default) or ``"racing"`` (the Duff paper's
    Algorithm 1); the same distribution (module docstring).
    """

    name = "duff_mode"
    family = "duff"
    display_name = "Duff (mode)"

    def __init__(
        self,
        *,
        epsilon: float,
        delta: float | None = None,
        bounding: str = "clip",
        sampler: str = "inverse_cdf",
    ) -> None:
        super().__init__(epsilon=epsilon, delta=delta, bounding=bounding)
        self.sampler = check_choice(sampler, SAMPLERS, "sampler")

    def source(self) -> str:
        return (
            "Duff paper, section 4.1: exponential mechanism (Def. 7) with "
            "u = n_y - n_max, sensitivity 1 (Lemma 1)"
        )

    def _release(self, sorted_x: np.ndarray, lower: float, upper: float) -> ModeRelease:
        scale = 0.5 * score_epsilon(self.epsilon, sorted_x.size)
        return exponential_mechanism(sorted_x, lower, upper, scale, self.sampler)
