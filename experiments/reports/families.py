"""The built-in mechanism families: what the figures and tables call each mechanism.

A :class:`Family` is one registry name narrowed by some option values (``laplace_ln``
with ``target: approx_dp`` is "LaplaceLN, (ε, δ)-matched"), with the name, colour and
marker every figure gives it; :data:`FAMILIES` lists them in drawing order (the Duff
paper, section 6, names the baselines SmoothSens_ε, SmoothSens_ε,δ and LaplaceLN).
:mod:`experiments.reports.style` picks a mechanism's family from ``run.json`` and
derives its look.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Family:
    """Mechanisms drawn alike: one registry name, narrowed by some option values."""

    key: str
    registry_name: str
    name: str
    colour: str
    marker: str
    options: Mapping[str, object] = field(default_factory=dict)
    """Option values that define the family (all must be recorded in run.json)."""
    tuned: bool = False
    """Has a private ("public") and a non-private ("oracle") tuning of its parameters."""
    smooth: bool = False
    """Noise scaled to a smooth sensitivity (replace-one neighbours: NRS07's)."""
    fixed_neighbouring: bool = False
    """Defined for one neighbouring relation only (the confidence intervals of
    :mod:`mechanisms.intervals`): never drawn or named as a replace-one variant."""


FAMILIES: tuple[Family, ...] = (
    Family("duff", "duff", "Duff (EM)", "#1f77b4", "o"),
    Family("quantile_em", "quantile_em", "Quantile EM", "#17becf", "D"),
    Family("smooth_cauchy", "smooth_cauchy", "SmoothSens_ε (Cauchy)", "#ff7f0e", "s", smooth=True),
    Family(
        "smooth_laplace",
        "smooth_laplace",
        "SmoothSens_ε,δ (Laplace)",
        "#2ca02c",
        "^",
        tuned=True,
        smooth=True,
    ),
    Family("laplace_ln", "laplace_ln", "LaplaceLN", "#d62728", "v", tuned=True, smooth=True),
    Family("ptr_median", "ptr_median", "PTR", "#d95f02", "X"),
    Family("count_em", "count_em", "EM (counts)", "#17becf", "D"),
    Family(
        "count_em_halved",
        "count_em",
        "EM (counts), ε/2 as Duff",
        "#6a3d9a",
        "d",
        options={"monotone": False},
    ),
    Family("permute_and_flip", "permute_and_flip", "Permute-and-flip", "#ff7f0e", "s"),
    Family("report_noisy_max", "report_noisy_max", "Report noisy max", "#2ca02c", "^"),
    Family("stability_histogram", "stability_histogram", "Stability histogram", "#d62728", "v"),
    Family("laplace_mean", "laplace_mean", "Laplace mean", "#2ca02c", "^"),
    Family("gaussian_mean", "gaussian_mean", "Gaussian mean (analytic)", "#a6761d", "P"),
    Family(
        "trimmed_mean_laplace_ln",
        "trimmed_mean_laplace_ln",
        "Trimmed mean + LaplaceLN",
        "#d62728",
        "v",
        tuned=True,
    ),
    Family(
        "trimmed_mean_student_t",
        "trimmed_mean_student_t",
        "Trimmed mean + Student's t",
        "#ff7f0e",
        "s",
    ),
    Family(
        "laplace_ln_matched",
        "laplace_ln",
        "LaplaceLN, (ε, δ)-matched",
        "#7b0d1e",
        "d",
        options={"target": "approx_dp"},
        tuned=True,
        smooth=True,
    ),
    Family(
        "nonprivate_order_statistic",
        "nonprivate_order_statistic",
        "Non-private order statistics",
        "#333333",
        "o",
        fixed_neighbouring=True,
    ),
    Family(
        "dp_order_statistic",
        "dp_order_statistic",
        "DP order statistics (union bound)",
        "#1b9e77",
        "s",
        fixed_neighbouring=True,
    ),
    Family(
        "drechsler_expmech",
        "drechsler_expmech",
        "ExpMech (Drechsler et al.)",
        "#e7298a",
        "^",
        fixed_neighbouring=True,
    ),
    Family(
        "subsample_aggregate",
        "subsample_aggregate",
        "Subsample and aggregate",
        "#7570b3",
        "D",
        fixed_neighbouring=True,
    ),
)
"""The built-in families, in drawing order."""


def family(key: str) -> Family:
    """The built-in family with :attr:`Family.key` ``key``."""
    for candidate in FAMILIES:
        if candidate.key == key:
            return candidate
    raise ValueError(f"family: no built-in family {key!r}")
