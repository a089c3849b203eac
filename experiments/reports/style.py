"""Shared look of every figure and table: what a mechanism *is* -> name, colour, line, marker.

This module is the single place that decides what a reader sees for a
mechanism, in every figure and table of :mod:`experiments.reports`.  The look
follows from the data of the run, never from the label's spelling:

* the **family**, from the registry name and the options recorded in ``run.json``
  (:data:`experiments.reports.families.FAMILIES`; e.g. ``laplace_ln`` with
  ``target: approx_dp`` is "LaplaceLN, (ε, δ)-matched"), fixes the name, colour and marker; a class
  that declares a ``display_name`` (recorded in ``run.json``) is shown by it.  The Duff
  paper, section 6, names the baselines SmoothSens_ε, SmoothSens_ε,δ and LaplaceLN;
* the ``private`` column of ``summary.csv`` tells a tuned family's two variants
  apart: parameters tuned on the private data (the paper's "oracle" choice,
  ``private`` False) are drawn plain, parameters chosen from public information
  only (``private`` True) dashed, named "…, public tuning"; a mechanism that is not
  private for another reason is named "…, tuned on the data", unless its rows claim
  no guarantee at all (``guarantee_epsilon`` ∞: a non-private reference such as the
  sign-test interval, whose name says so);
* the ``neighbouring`` column: a built-in family run with ``replace_one``
  neighbours (for the smooth-sensitivity mechanisms, the smooth sensitivity of
  Nissim, Raskhodnikova & Smith, "Smooth sensitivity and sampling in private data
  analysis", NRS07) keeps its marker and hue, in a lighter tint, dash-dotted,
  named "…, NRS07 replace-one SS" (not the confidence intervals, each defined for
  one relation only);
* any other mechanism (a plug-in) is named by its class's ``display_name``
  (recorded in ``run.json``; its label when the class gives none) and gets a
  colour and marker chosen from the label's text (CRC-32, not Python's salted
  ``hash``), so it looks the same in every figure and every run.

:func:`palette` builds the :class:`Palette` of a results directory (read by
:func:`experiments.harness.results_reader.load`).  :func:`save_figure` writes every
figure the same way: PNG at :data:`DPI` and a PDF without a creation date, so
redrawing the same results gives the same files.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.colors import to_hex, to_rgb
from matplotlib.figure import Figure

from experiments.harness.results_reader import MechanismInfo, Results
from experiments.reports.families import FAMILIES, Family

DPI = 150
REPLACE_ONE = "replace_one"
TINT = 0.45
"""How far a replace-one variant's colour is moved towards white."""


FALLBACK_COLOURS = ("#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#393b79", "#843c39")
"""Colours for plug-in mechanisms: none of them is used by a built-in family."""

FALLBACK_MARKERS = ("P", "X", "*", "h", "<", ">", "p")

SHARED_LINESTYLES = ("-", "--", ":", "-.")
"""Line styles of labels whose mechanisms share a name (in label order)."""
LINESTYLES = {(False, False): "-", (True, False): "--", (False, True): "-.", (True, True): ":"}
"""Line style by (public tuning, replace-one variant)."""

DATASET_TITLES: dict[str, str] = {
    "normal": "N(0, 1)",
    "uniform": "U(0, 1)",
    "beta": "Beta(0.5, 0.5)",
    "normal_5": "N(0, 5²)",
    "uniform_5": "U(−5, 5)",
}
"""Panel titles of the synthetic datasets (Duff paper, section 6.1; the last two: Gillenwater,
Joseph & Kulesza, "Differentially Private Quantiles", ICML 2021, section 6)."""


@dataclass(frozen=True)
class Style:
    """How one mechanism label is drawn."""

    label: str
    name: str
    colour: str
    linestyle: str
    marker: str


@dataclass(frozen=True)
class Kind:
    """What the mechanism behind a label is, from the run's data."""

    label: str
    family: Family
    private: bool
    """The ``private`` column (False: parameters tuned on the private data)."""
    neighbouring: str
    """The ``neighbouring`` column (``""`` when unknown)."""
    display_name: str = ""
    """The class's own ``display_name`` (run.json); shown instead of the family's name."""
    unguarded: bool = False
    """The rows' ``guarantee_epsilon`` is ∞: a non-private reference (the sign-test
    interval), not private for want of any guarantee rather than by tuning on the data."""

    @property
    def known(self) -> bool:
        """A built-in family (:data:`FAMILIES`), not a plug-in."""
        return self.family in FAMILIES

    @property
    def public_tuning(self) -> bool:
        return self.family.tuned and self.private

    @property
    def replace_one(self) -> bool:
        """A built-in family run with replace-one neighbours (NRS07's sensitivity), as a
        variant of its add/remove version."""
        return (
            self.known and self.neighbouring == REPLACE_ONE and not self.family.fixed_neighbouring
        )

    @property
    def oracle(self) -> bool:
        """Parameters tuned on the private data (the Duff paper's choice), or untuned."""
        return not self.family.tuned or not self.private


def _stable_index(text: str, size: int) -> int:
    return zlib.crc32(text.encode("utf-8")) % size


def family_of(
    registry_name: str, options: Mapping[str, object], label: str, display_name: str = ""
) -> Family:
    """The most specific built-in family of a mechanism; a per-label one for plug-ins,
    named by the class's ``display_name`` (or the label)."""
    matches = [
        f
        for f in FAMILIES
        if f.registry_name == registry_name
        and all(options.get(k) == v for k, v in f.options.items())
    ]
    if matches:
        return max(matches, key=lambda f: len(f.options))
    colour = FALLBACK_COLOURS[_stable_index(label, len(FALLBACK_COLOURS))]
    return Family(
        label,
        registry_name,
        display_name or label,
        colour,
        FALLBACK_MARKERS[_stable_index(label, len(FALLBACK_MARKERS))],
    )


def kind_of(
    info: MechanismInfo, private: bool | None, neighbouring: str | None, unguarded: bool = False
) -> Kind:
    """The :class:`Kind` of a run.json entry, given its rows' ``private`` and
    ``neighbouring`` values (None when it has no ok row: then its options decide) and
    whether they claim no guarantee (ε = ∞)."""
    if private is None:
        private = info.options.get("tuning") != "oracle"
    if neighbouring is None:
        neighbouring = str(info.options.get("neighbours", ""))
    family = family_of(info.name, info.options, info.label, info.display_name)
    return Kind(info.label, family, private, neighbouring, info.display_name, unguarded)


def tint(colour: str, amount: float = TINT) -> str:
    """``colour`` moved ``amount`` of the way towards white."""
    rgb = np.asarray(to_rgb(colour))
    red, green, blue = rgb + (1.0 - rgb) * amount
    return to_hex((red, green, blue))


def style_of(kind: Kind) -> Style:
    """The display name, colour, line style and marker of a mechanism."""
    family = kind.family
    # a built-in variant (defined by option values) is named by its variant; otherwise a
    # class's own display_name wins (a built-in's equals its family's name)
    name = family.name if kind.known and family.options else kind.display_name or family.name
    if kind.public_tuning:
        name += ", public tuning"
    elif not kind.private and not family.tuned and not kind.unguarded:
        name += ", tuned on the data"
    if kind.replace_one:
        name += ", NRS07 replace-one SS" if family.smooth else ", replace-one"
    colour = tint(family.colour) if kind.replace_one else family.colour
    linestyle = LINESTYLES[kind.public_tuning, kind.replace_one]
    return Style(kind.label, name, colour, linestyle, family.marker)


@dataclass(frozen=True)
class Palette:
    """The look of every mechanism label of one run."""

    kinds: Mapping[str, Kind]

    @functools.cached_property
    def twins(self) -> dict[str, list[str]]:
        """The labels of each name :func:`style_of` gives more than one label, sorted
        (computed once: the kinds of a palette do not change)."""
        by_name: dict[str, list[str]] = {}
        for label in sorted(self.kinds):
            by_name.setdefault(style_of(self.kinds[label]).name, []).append(label)
        return {name: labels for name, labels in by_name.items() if len(labels) > 1}

    def kind(self, label: str) -> Kind:
        if label not in self.kinds:
            raise ValueError(f"label: {label!r} is not a mechanism of this run")
        return self.kinds[label]

    def style(self, label: str) -> Style:
        """:func:`style_of` the label's kind; where labels share a name, each gets the label
        appended and, in label order, a lighter tint and another line style."""
        look = style_of(self.kind(label))
        twins = self.twins.get(look.name)
        if twins is None:
            return look
        rank = twins.index(label)
        return dataclasses.replace(
            look,
            name=f"{look.name} [{label}]",
            colour=tint(look.colour, 0.6 * rank / len(twins)),
            linestyle=SHARED_LINESTYLES[rank % len(SHARED_LINESTYLES)],
        )

    def name(self, label: str) -> str:
        """The name a reader sees for ``label`` (e.g. ``"duff"`` -> ``"Duff (EM)"``)."""
        return self.style(label).name

    def sort_key(self, label: str) -> tuple[int, str, bool, bool, str]:
        """Drawing order: built-in families in :data:`FAMILIES` order, then plug-ins by
        label; in a family the oracle/add-remove variant first."""
        kind = self.kind(label)
        rank = FAMILIES.index(kind.family) if kind.known else len(FAMILIES)
        return (rank, kind.family.name, kind.replace_one, kind.public_tuning, label)

    def labels(self, family: str) -> list[str]:
        """The labels of built-in family ``family`` (a :attr:`Family.key`), in drawing order."""
        found = [k.label for k in self.kinds.values() if k.known and k.family.key == family]
        return sorted(found, key=self.sort_key)


def palette(results: Results) -> Palette:
    """The :class:`Palette` of a results directory: each label's kind from its run.json
    entry and the ``private`` / ``neighbouring`` / ``guarantee_epsilon`` values of its ok
    rows."""
    ok = results.summary.loc[results.summary["status"] == "ok"]
    kinds = {}
    for label, info in results.mechanisms.items():
        rows = ok.loc[ok["mechanism"] == label]
        private = bool(rows["private"].all()) if len(rows) else None
        neighbouring = str(rows["neighbouring"].iloc[0]) if len(rows) else None
        unguarded = bool(len(rows)) and bool(np.isinf(rows["guarantee_epsilon"]).all())
        kinds[label] = kind_of(info, private, neighbouring, unguarded)
    return Palette(kinds)


def plot_line(axis: Axes, series: pd.Series, look: Style) -> None:
    """Draw ``series`` (values against its index) on ``axis`` in ``look``, labelled by name."""
    axis.plot(
        series.index,
        series.to_numpy(),
        color=look.colour,
        linestyle=look.linestyle,
        marker=look.marker,
        label=look.name,
    )


def dataset_order(datasets: Iterable[str]) -> list[str]:
    """``datasets`` in natural order: numbers inside a name compare as numbers
    (``zipf_s0.5``, ``zipf_s1``, ``zipf_s1.5``, not ``zipf_s0.5``, ``zipf_s1.5``, ``zipf_s1``)."""

    def key(name: str) -> list[tuple[int, float, str]]:
        parts = re.split(r"(\d+(?:\.\d+)?)", name)
        return [(1, float(p), "") if i % 2 else (0, 0.0, p) for i, p in enumerate(parts)]

    return sorted(set(datasets), key=key)


def dataset_title(dataset: str) -> str:
    """Panel title of ``dataset`` (its own name when it is not a known synthetic source)."""
    return DATASET_TITLES.get(dataset, dataset)


CLASS_COLOURS: dict[str, str] = {"AB": "#e66101", "NO": "#5e3c99"}
"""Colours of the Vertebral Column classes (abnormal, normal), used in every panel of
Figures 2 and 3 (Duff paper, section 6.2): a colour-blind-safe orange/purple pair."""

CLASS_NAMES: dict[str, str] = {"AB": "AB (abnormal)", "NO": "NO (normal)"}


def class_colour(label: str) -> str:
    """The colour of class ``label`` (``"AB"`` or ``"NO"``); a stable fallback otherwise."""
    if not isinstance(label, str) or not label:
        raise ValueError(f"label: expected a non-empty string, got {label!r}")
    if label in CLASS_COLOURS:
        return CLASS_COLOURS[label]
    return FALLBACK_COLOURS[_stable_index(label, len(FALLBACK_COLOURS))]


def class_name(label: str) -> str:
    """The name a reader sees for class ``label`` (e.g. ``"AB"`` -> ``"AB (abnormal)"``)."""
    return CLASS_NAMES.get(label, label)


def save_figure(fig: Figure, out_dir: Path, stem: str) -> list[Path]:
    """Write ``stem.png`` (:data:`DPI` dpi) and ``stem.pdf`` into ``out_dir``; close ``fig``."""
    paths = [out_dir / f"{stem}.png", out_dir / f"{stem}.pdf"]
    fig.savefig(paths[0], dpi=DPI)
    fig.savefig(paths[1], metadata={"CreationDate": None})
    plt.close(fig)
    return paths
