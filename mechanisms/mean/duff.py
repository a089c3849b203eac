"""Duff for the mean: the exponential mechanism with the dataset-distance utility of the mean.

Gillenwater & Muñoz Medina, "Duff: A Dataset-Distance-Based Utility Function
Family for the Exponential Mechanism": the EM (Definition 7) on ``[a, b]`` with
the Lebesgue base measure and ``u(x, S) = -min{d(S, S') : mean(S') = x}``
(Definition 8), whose sensitivity is 1 (Lemma 1), so the density is
``∝ exp(ε·u(x, S)/2)`` and the release is ε-DP.  The utility is a step function
with at most ``n + 1`` levels, the nested intervals ``I_k = [L_k, U_k]`` of
:mod:`mechanisms.mean.distance` (section 4.1, "Means", in closed form):
``u = -k`` on ``I_k`` minus ``I_{k-1}``, two intervals per level.

Sampling is by inversion over the pieces (default), or the paper's Algorithm 1
(section 5, Proposition 5; ``sampler="racing"``): a race over the levels,
``P(K = k) ∝ exp(-ε·k/2)·λ(I_k minus I_{k-1})``, then a uniform point of
level ``K`` (:class:`mechanisms.sampling.racing.RacingSampler`).  The release is a
:class:`mechanisms.sampling.piecewise.PiecewiseUniformRelease` over the sorted end points
``[L_{K-1}, ..., L_1, U_1, ..., U_{K-1}]`` with the level of each piece as its
score, which gives the race (``sampler="racing"``, pieces grouped into levels by
score), inversion (``sampler="inverse_cdf"``) and the exact cdf.  Like every
release of that class it keeps the pieces whose weight relative to the largest
is above ``2**-1022`` (together, the others have probability below
``(2n + 1)·2**-1022``): about ``1416/ε`` levels around the mean, at most ``n + 1``.

Option ``neighbours="replace_one"``: ``d`` the Hamming distance between datasets
of the same size, i.e. the inverse sensitivity mechanism of Asi & Duchi,
"Instance-optimality in differential privacy via approximate inverse
sensitivity mechanisms" (sensitivity 1 for replace-one neighbours, ε-DP for
them), with ``max(n, 1)`` levels.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from mechanisms.core.data import mean_value
from mechanisms.core.guarantee import Neighbouring, check_neighbours
from mechanisms.core.interface import Mechanism, Release
from mechanisms.core.registration import register
from mechanisms.core.validation import check_choice
from mechanisms.mean.distance import MeanLevels, mean_levels
from mechanisms.sampling.piecewise import SAMPLERS, PiecewiseUniformRelease, score_epsilon


class DuffMeanRelease(Release):
    """The EM density ``∝ exp(ε·u/2)`` with ``u = -level`` on the pieces of ``levels``.

    ``distribution`` is the :class:`~mechanisms.sampling.piecewise.PiecewiseUniformRelease`
    over ``levels.edges()`` that samples and computes the cdf (its ``log_masses``
    are the normalised log probabilities of the pieces, its ``n`` the number of
    end points); ``n`` and ``true_value`` here are those of the data.
    """

    def __init__(
        self,
        sorted_x: np.ndarray,
        lower: float,
        upper: float,
        *,
        epsilon: float,
        levels: MeanLevels,
        sampler: str,
    ) -> None:
        self.lower, self.upper = float(lower), float(upper)
        self.n = int(sorted_x.size)
        self.true_value = mean_value(sorted_x, lower)
        self.levels = levels
        middle = levels.count - 1  # the piece [L_1, U_1]
        half_epsilon = 0.5 * score_epsilon(epsilon, self.n)

        def log_score(pieces: np.ndarray) -> np.ndarray:
            u = np.abs(pieces - middle).astype(np.float64)
            u += 1.0
            u *= -half_epsilon
            return u

        def relative_score(pieces: np.ndarray, reference: int) -> np.ndarray:
            # integer levels: the change of level is exact (huge ε)
            u = (np.abs(pieces - middle) - abs(reference - middle)).astype(np.float64)
            u *= -half_epsilon
            return u

        self.distribution = PiecewiseUniformRelease(
            levels.edges(),
            lower,
            upper,
            log_score,
            mode=middle,
            true_value=self.true_value,
            sampler=sampler,
            relative_score=relative_score,
        )

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        """``size`` draws: a piece by ``sampler`` (inversion or Algorithm 1), then uniform in it."""
        return self.distribution.sample(size, rng)

    def cdf(self, x: np.ndarray | float) -> np.ndarray:
        """``P(M(S) <= x)``, from the pieces' probabilities (no atoms)."""
        return self.distribution.cdf(x)


@register
class DuffMean(Mechanism[Release]):
    """EM with the dataset-distance utility of the mean; ε-DP for the chosen neighbouring.

    Options: ``neighbours`` (``"add_remove"``, default: Duff; ``"replace_one"``: the
    inverse sensitivity mechanism) and ``sampler`` (``"inverse_cdf"``, default, as for
    :class:`mechanisms.median.duff.Duff`; ``"racing"``: the paper's Algorithm 1, the same
    distribution, about 500 times slower per draw at ε = 1).
    """

    name = "duff_mean"
    family = "duff"
    statistics: ClassVar[frozenset[str]] = frozenset({"mean"})

    def __init__(
        self,
        *,
        epsilon: float,
        delta: float | None = None,
        bounding: str = "clip",
        neighbours: str = "add_remove",
        sampler: str = "inverse_cdf",
    ) -> None:
        super().__init__(epsilon=epsilon, delta=delta, bounding=bounding)
        self.neighbouring = check_neighbours(neighbours)
        self.sampler = check_choice(sampler, SAMPLERS, "sampler")

    def source(self) -> str:
        if self.neighbouring is Neighbouring.REPLACE_ONE:
            return (
                "inverse sensitivity mechanism for the mean (Asi & Duchi): exponential "
                "mechanism with u = -(Hamming distance to a dataset with mean x), sensitivity 1"
            )
        return (
            "Duff paper: exponential mechanism (Def. 7) with the mean's u_d (Def. 8, "
            "section 4.1), sensitivity 1 (Lemma 1)"
        )

    def _release(self, sorted_x: np.ndarray, lower: float, upper: float) -> Release:
        return DuffMeanRelease(
            sorted_x,
            lower,
            upper,
            epsilon=self.epsilon,
            levels=mean_levels(sorted_x, lower, upper, self.neighbouring),
            sampler=self.sampler,
        )

    def __repr__(self) -> str:
        options = ""
        if self.neighbouring is Neighbouring.REPLACE_ONE:
            options += f", neighbours={self.neighbouring.value!r}"
        if self.sampler != "inverse_cdf":
            options += f", sampler={self.sampler!r}"
        return f"DuffMean(epsilon={self.epsilon:g}{options})"
