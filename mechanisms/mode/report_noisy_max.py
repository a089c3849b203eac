"""Report noisy max for the mode, and the noisy-max release it shares with permute-and-flip.

Report noisy max (Dwork & Roth, "The Algorithmic Foundations of Differential
Privacy", Claim 3.9): add independent ``Lap(1/ε)`` noise to every
count ``n_y`` and output the value of largest noisy count.  Claim 3.9 is stated for
counting queries under add/remove neighbours (its proof takes ``D = D' ∪ {a}``) and
uses that adding a point raises no count by more than 1 and lowers none; a histogram
has both properties, so ``Lap(1/ε)`` gives ε-DP (not stated for replace-one
neighbours, which move two counts in opposite directions).  Ties have probability 0;
in floating point ``argmax`` takes the first maximal level, the larger count.

Values of ``Y`` with equal count are exchangeable, so one draw needs only, per level
(:mod:`mechanisms.mode.release`) of ``m`` values with count ``c``, the largest of its
``m`` noisy counts: ``c + F^{-1}(V^{1/m})`` with ``F`` the noise cdf and ``V``
uniform (``P(max <= x) = F(x)^m``), computed as ``V = e^{-E}``, ``E ~ Exp(1)``, so
that ``1 - V^{1/m} = -expm1(-E/m)`` keeps its precision for ``m = 10¹²`` unseen
values; then the winning level, then a uniform value of it.  Cost ``O(L)`` per draw
for ``L`` levels (at most ``sqrt(2n) + 2``), never ``O(|Y|)``.

Exact probabilities: :mod:`mechanisms.mode.noisy_max_integral` integrates, per level, the
density of its winning value (the method and its accuracy are stated there).  The
noise laws and the clamping of ε are in :mod:`mechanisms.noise.noisy_max`.
"""

from __future__ import annotations

import math

import numpy as np

from mechanisms.core.domain import mode_value
from mechanisms.core.presentation import FigureStyle
from mechanisms.core.registration import register
from mechanisms.mode.noisy_max_integral import level_log_probabilities
from mechanisms.mode.release import DomainLevels, LevelDraw, ModeMechanism, ModeRelease
from mechanisms.noise.noisy_max import Noise, noise_scale

__all__ = [
    "Noise",
    "ReportNoisyMax",
    "level_log_probabilities",
    "noise_scale",
    "noisy_max_draw",
    "noisy_max_release",
]

TILE = 1 << 16
"""Entries (draws × levels) of the noisy-max draw processed at once."""


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
    figure = FigureStyle("#2ca02c", "^", 9)

    def source(self) -> str:
        return (
            "report noisy max with Lap(1/ε) on counts (Dwork & Roth, 'The Algorithmic "
            "Foundations of Differential Privacy', Claim 3.9)"
        )

    def _release(self, sorted_x: np.ndarray, lower: float, upper: float) -> ModeRelease:
        noise = Noise("laplace", noise_scale(self.epsilon, sorted_x.size))
        return noisy_max_release(sorted_x, lower, upper, noise)
