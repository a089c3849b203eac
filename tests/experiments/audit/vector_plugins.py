"""Planted privacy bugs in m-quantiles mechanisms, for ``duff-audit --target`` (one per path
of :mod:`experiments.audit.vector` and the black-box audit of vector outputs).

* :class:`HalfSensitivityJointExp`: JointExp whose release runs with the utility's
  sensitivity Δ halved (the density ``exp(ε u / (2 (Δ/2)))``, i.e. the sampler at 2ε): 2ε-DP
  while claiming ε; caught by the joint gap-cell audit.
* :class:`FullEpsilonIndExp`: IndExp with every level at ε instead of ε/m (no composition):
  mε-DP while claiming ε; caught by the marginal audit (the largest coordinate's cdf is the
  product of the levels').
* :class:`HalfNoiseTree`: the Laplace quantile tree with half the noise scale: 2ε-DP while
  claiming ε; caught by the black-box audit.
"""

from __future__ import annotations

import numpy as np

from mechanisms.multi.independent import IndExp
from mechanisms.multi.joint_exp import JointExp, JointExpRelease
from mechanisms.multi.release import QuantilesRelease
from mechanisms.multi.tree import TreeQuantiles


class HalfSensitivityJointExp(JointExp):
    name = "test_joint_exp_half_sensitivity"

    def _release(self, sorted_x: np.ndarray, lower: float, upper: float) -> QuantilesRelease:
        # c = ε / (2Δ) with Δ halved is the sampler's c at 2ε
        return JointExpRelease(
            sorted_x, lower, upper, self.alphas, 2 * self.epsilon, self.neighbouring.value
        )


class FullEpsilonIndExp(IndExp):
    name = "test_ind_exp_full_epsilon"

    def level_privacy(self) -> tuple[float, float | None]:
        return self.epsilon, None


class HalfNoiseTree(TreeQuantiles):
    name = "test_tree_half_noise"

    def scale(self) -> float:
        return super().scale() / 2
