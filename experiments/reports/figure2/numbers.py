"""The numbers of Figures 2 and 3: each class's error, and how often the classes come out in order.

Per (measurement, mechanism), :func:`table_rows` gives each class's true median,
the mean absolute error ``mean |M − T(S)|`` of the stored estimates of each
class, the probability that one estimate per class, drawn independently, comes
out in the true order of the two medians, computed exactly over all pairs of
stored estimates (ties count one half),

    P(X > Y) + P(X = Y)/2 = (2·#{(i, j): x_i > y_j} + #{(i, j): x_i = y_j}) / (2·|x|·|y|)

with ``x`` the estimates of the class whose true median is larger, and each
mechanism's MAE divided by LaplaceLN's (so the Duff row reads "Duff MAE /
LaplaceLN MAE").
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from experiments.reports.figure2.data import BASELINE, Cell, Figure2Data


def order_probability(x: np.ndarray, y: np.ndarray) -> float:
    """``P(X > Y) + P(X = Y)/2`` for independent ``X ~ x``, ``Y ~ y`` (empirical laws).

    Exact over all ``|x|·|y|`` pairs: integer pair counts, one final division.
    """
    xs, ys = np.asarray(x, dtype=np.float64), np.sort(np.asarray(y, dtype=np.float64))
    if xs.size == 0 or ys.size == 0:
        raise ValueError("x and y must be non-empty")
    below = np.searchsorted(ys, xs, side="left")
    not_above = np.searchsorted(ys, xs, side="right")
    greater = int(below.sum())
    ties = int((not_above - below).sum())
    return (2 * greater + ties) / (2 * xs.size * ys.size)


def true_order_probability(ab: Cell, no: Cell) -> float:
    """Probability that one estimate per class comes out in the true medians' order.

    NaN when the two true medians are equal (no order to recover).
    """
    if ab.true_value > no.true_value:
        return order_probability(ab.estimates, no.estimates)
    if ab.true_value < no.true_value:
        return order_probability(no.estimates, ab.estimates)
    return math.nan


def mean_abs_error(cell: Cell) -> float:
    """``mean |M − T(S)|`` over the stored estimates (the summary's ``mean_abs_error``)."""
    return float(np.mean(np.abs(cell.estimates - cell.true_value)))


def lower_median(values: np.ndarray) -> float:
    """The element of rank ``ceil(n/2)`` of ``values`` (the true median of the results)."""
    return float(np.sort(values)[(values.size - 1) // 2])


def measurement_title(measurement: str) -> str:
    """``"pelvic_incidence"`` -> ``"pelvic incidence"``."""
    return measurement.replace("_", " ")


def table_rows(data: Figure2Data) -> pd.DataFrame:
    """One row per (measurement, mechanism) with both classes: medians, MAEs, order, ratios."""
    records = []
    for measurement in data.measurements:
        for mechanism in data.mechanisms:
            ab = data.cells.get((measurement, "AB", mechanism))
            no = data.cells.get((measurement, "NO", mechanism))
            if ab is None or no is None:
                continue
            records.append(
                {
                    "measurement": measurement,
                    "mechanism": mechanism,
                    "median_AB": ab.true_value,
                    "median_NO": no.true_value,
                    "mae_AB": mean_abs_error(ab),
                    "mae_NO": mean_abs_error(no),
                    "p_true_order": true_order_probability(ab, no),
                }
            )
    columns = ["measurement", "mechanism", "median_AB", "median_NO", "mae_AB", "mae_NO"]
    table = pd.DataFrame.from_records(records, columns=[*columns, "p_true_order"])
    reference = table["mechanism"] == data.first(BASELINE)
    baseline = table.loc[reference, ["measurement", "mae_AB", "mae_NO"]]
    baseline = baseline.rename(columns={"mae_AB": "base_AB", "mae_NO": "base_NO"})
    table = table.merge(baseline, on="measurement", how="left")
    table["ratio_AB"] = table["mae_AB"] / table["base_AB"]
    table["ratio_NO"] = table["mae_NO"] / table["base_NO"]
    return table.drop(columns=["base_AB", "base_NO"])
