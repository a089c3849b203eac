"""Shared look of every figure and table: mechanism label -> name, colour, line, marker.

This module is the single place that maps a mechanism label (the ``mechanism``
column of ``summary.csv``) to what a reader sees.  Figure scripts import it as
``import figure_style`` (the scripts directory is on ``sys.path`` when a script
runs).

* Known labels have fixed names and colours (Duff paper, section 6, names the
  baselines SmoothSens_ε, SmoothSens_ε,δ and LaplaceLN).
* ``<label>_public`` is the variant of ``<label>`` whose parameters are chosen
  from public information only: same colour and marker, dashed line.
* Any other label gets a colour and marker chosen deterministically from its
  text (CRC-32, not Python's salted ``hash``), so a plug-in mechanism looks the
  same in every figure and every run.

:func:`save_figure` writes every figure the same way: PNG at :data:`DPI` and a
PDF without a creation date, so redrawing the same results gives the same files.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

DPI = 150

PUBLIC_SUFFIX = "_public"

KNOWN_NAMES: dict[str, str] = {
    "duff": "Duff (EM)",
    "quantile_em": "Quantile EM",
    "smooth_cauchy": "SmoothSens_ε (Cauchy)",
    "smooth_laplace": "SmoothSens_ε,δ (Laplace)",
    "laplace_ln": "LaplaceLN",
    "laplace_ln_matched": "LaplaceLN, (ε, δ)-matched",
}
"""Display names of the built-in mechanisms, in the order they are drawn."""

KNOWN_COLOURS: dict[str, str] = {
    "duff": "#1f77b4",
    "quantile_em": "#17becf",
    "smooth_cauchy": "#ff7f0e",
    "smooth_laplace": "#2ca02c",
    "laplace_ln": "#d62728",
    "laplace_ln_matched": "#7b0d1e",
}

KNOWN_MARKERS: dict[str, str] = {
    "duff": "o",
    "quantile_em": "D",
    "smooth_cauchy": "s",
    "smooth_laplace": "^",
    "laplace_ln": "v",
    "laplace_ln_matched": "d",
}

FALLBACK_COLOURS = ("#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#393b79", "#843c39")
"""Colours for unknown labels: none of them is used by a known label."""

FALLBACK_MARKERS = ("P", "X", "*", "h", "<", ">", "p")

DATASET_TITLES: dict[str, str] = {
    "normal": "N(0, 1)",
    "uniform": "U(0, 1)",
    "beta": "Beta(0.5, 0.5)",
}
"""Panel titles of the synthetic datasets (Duff paper, section 6.1)."""


@dataclass(frozen=True)
class Style:
    """How one mechanism label is drawn."""

    label: str
    name: str
    colour: str
    linestyle: str
    marker: str


def _stable_index(text: str, size: int) -> int:
    return zlib.crc32(text.encode("utf-8")) % size


def base_label(label: str) -> str:
    """``label`` without the ``_public`` suffix (``"laplace_ln_public"`` -> ``"laplace_ln"``)."""
    if label.endswith(PUBLIC_SUFFIX) and len(label) > len(PUBLIC_SUFFIX):
        return label[: -len(PUBLIC_SUFFIX)]
    return label


def is_public_variant(label: str) -> bool:
    """True for ``<label>_public``, the publicly tuned variant of ``<label>``."""
    return base_label(label) != label


def style(label: str) -> Style:
    """The display name, colour, line style and marker of mechanism ``label``."""
    if not isinstance(label, str) or not label:
        raise ValueError(f"label: expected a non-empty string, got {label!r}")
    base = base_label(label)
    if base in KNOWN_NAMES:
        name = KNOWN_NAMES[base]
        colour = KNOWN_COLOURS[base]
        marker = KNOWN_MARKERS[base]
    else:
        name = base
        colour = FALLBACK_COLOURS[_stable_index(base, len(FALLBACK_COLOURS))]
        marker = FALLBACK_MARKERS[_stable_index(base, len(FALLBACK_MARKERS))]
    if is_public_variant(label):
        return Style(label, f"{name}, public tuning", colour, "--", marker)
    return Style(label, name, colour, "-", marker)


def display_name(label: str) -> str:
    """The name a reader sees for mechanism ``label`` (e.g. ``"duff"`` -> ``"Duff (EM)"``)."""
    return style(label).name


def sort_key(label: str) -> tuple[int, str, int]:
    """Drawing order: built-ins in :data:`KNOWN_NAMES` order, then unknown labels
    alphabetically; each label just before its public variant."""
    base = base_label(label)
    order = list(KNOWN_NAMES)
    rank = order.index(base) if base in KNOWN_NAMES else len(order)
    return (rank, base, int(is_public_variant(label)))


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
