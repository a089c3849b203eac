"""Black-box privacy audit: a lower confidence bound on the ε a mechanism achieves, from samples.

Only samplers of the mechanism's outputs on two neighbouring datasets D, D' are used,
``sample(size, rng) -> array`` of shape ``(size,)`` (a point; NaN = "refused") or
``(size, k)`` (a vector).  With P = law of M(D), Q = law of M(D') and any event S,
(ε, δ)-DP requires ``P(S) <= e^ε Q(S) + δ`` and the same with P, Q swapped, so

    ε(δ) >= log((P(S) − δ) / Q(S)),        H_{e^ε}(P‖Q) = sup_S P(S) − e^ε Q(S) >= P(S) − e^ε Q(S),

where ε(δ) is the smallest ε for which the pair satisfies (ε, δ) and H is the hockey-stick
divergence, which must be <= δ at the claimed ε.  Method of one audit:

1. Draw ``samples`` outputs from each side and split each in halves: a *selection* half and
   an independent *bounding* half.
2. On the selection half, candidate events per feature (each coordinate, and their sum
   for vectors): the refusal event {x is NaN} and the half-lines {x <= t}, {x > t} at the
   thresholds t = pooled empirical quantiles (i + ½)/G, i < G (G = ``grid`` = 200); when the
   pooled half has at most G distinct values (a discrete mechanism) every value is a
   threshold and the atoms {x = t} are candidates too.
3. Per direction (P/Q and Q/P) the event with the largest *predicted* bound is chosen: the
   bound of step 4 computed on the selection half (ties and all-undefined cases are broken by
   the pseudo-count ratio log((c_P + ½) / (c_Q + ½))).  This balances a large ratio against
   enough mass to bound it; a raw ratio picks tail events holding a handful of outputs.  For
   δ > 0 a second event per direction maximises the predicted P_L − e^ε Q_U.
4. On the bounding half (n outputs per side, k_P and k_Q of them in S), exact one-sided
   Clopper–Pearson bounds at level α each, rounded outward by 1e-12 relative:

       P_L = Beta⁻¹(α; k_P, n − k_P + 1)   (0 if k_P = 0),
       Q_U = Beta⁻¹(1 − α; k_Q + 1, n − k_Q)   (1 if k_Q = n),
       ε_lower = max(0, log((P_L − δ) / Q_U))  (0 if P_L <= δ),
       δ_lower = max(0, P_L − e^ε Q_U).

   Reported: the largest ε_lower and δ_lower over the tested events; *violated* iff some
   tested event has P_L − e^ε Q_U > δ (equivalently ε_lower > ε on it).
5. Family-wise level ``alpha_total`` (default 1e-9) by Bonferroni over every one-sided bound
   of the call: α = alpha_total / (tests · 2 bounds · 2 directions · (1 if δ = 0 else 2)).
   Conditionally on the selection half, the chosen events are fixed and the bounding counts
   are binomial, so with probability >= 1 − alpha_total every reported bound is valid
   (ε_lower <= ε(δ), δ_lower <= H) and a correct mechanism is not flagged.
   :func:`audit_pairs` splits alpha_total over the pairs it is given.

What was taken from which tool (ideas only; no code was copied):

* DP-Sniper — B. Bichsel, S. Steffen, I. Bogunovic, M. Vechev, "DP-Sniper: Black-Box
  Discovery of Differential Privacy Violations using Classifiers" (IEEE S&P 2021): the
  attack (a threshold event) is built on one set of samples and its probabilities are
  estimated on fresh samples; ε lower bound log(P_L / Q_U) from exact Clopper–Pearson
  (beta-quantile) bounds, union-bounded over the two; keeping the event's mass away from 0
  (their target probability c; here by scoring with the bound).  Not taken: the classifier.
* StatDP — Z. Ding, Y. Wang, G. Wang, D. Zhang, D. Kifer, "Detecting Violations of
  Differential Privacy" (ACM CCS 2018): event selection on a separate run from the final
  test; events as half-lines/points of the output; both directions tested; tiny events
  discarded.  Not taken: their p-value (a Fisher-type test on e^{−ε}-thinned counts).
* DP-Auditorium — W. Kong, A. Muñoz Medina, M. Ribero, U. Syed, "DP-Auditorium: a Large
  Scale Library for Auditing Differential Privacy" (IEEE S&P 2024): for (ε, δ) claims, a lower
  confidence bound on the hockey-stick divergence H_{e^ε}, rejecting when it exceeds δ, with
  a train/test split.  Not taken: the Hoeffding bound on a classifier's accuracy.
* Exact bounds: C. J. Clopper, E. S. Pearson, "The use of confidence or fiducial limits
  illustrated in the case of the binomial" (Biometrika 1934).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np
from scipy import special

Sampler = Callable[[int, np.random.Generator], np.ndarray]
"""``sample(size, rng)``: ``size`` independent outputs of the mechanism on one dataset."""
Kind = Literal["le", "gt", "eq", "nan"]

DEFAULT_SAMPLES = 1_000_000
"""Outputs per side (half select, half bound): ~0.1 s for a point output; see the benchmark."""
DEFAULT_GRID = 200
MIN_SAMPLES = 200
_OUTWARD = 1e-12  # relative outward rounding of the Clopper–Pearson bounds (float error)
_OPS = {"le": "<=", "gt": ">", "eq": "=="}


def clopper_pearson_lower(k: np.ndarray | int, n: int, alpha: float) -> np.ndarray:
    """Exact one-sided lower bound: the p with P(Bin(n, p) >= k) = α, Beta⁻¹(α; k, n − k + 1)."""
    k = np.atleast_1d(np.asarray(k, dtype=float))
    out = np.zeros_like(k)
    pos = k > 0
    out[pos] = special.betaincinv(k[pos], n - k[pos] + 1, alpha)
    return out * (1.0 - _OUTWARD)


def clopper_pearson_upper(k: np.ndarray | int, n: int, alpha: float) -> np.ndarray:
    """Exact one-sided upper bound: the p with P(Bin(n, p) <= k) = α, Beta⁻¹(1−α; k+1, n−k)."""
    k = np.atleast_1d(np.asarray(k, dtype=float))
    out = np.ones_like(k)
    below = k < n
    out[below] = special.betainccinv(k[below] + 1, n - k[below], alpha)
    return np.minimum(out * (1.0 + _OUTWARD), 1.0)


@dataclass(frozen=True)
class Event:
    """A set of outputs: ``feature kind threshold`` on column ``column`` of the features."""

    column: int
    name: str
    kind: Kind
    threshold: float | None = None  # None for the refusal event

    def count(self, features: np.ndarray) -> int:
        """How many rows of ``features`` fall in the event."""
        x = features[:, self.column]
        if self.kind == "nan":
            return int(np.isnan(x).sum())
        t = float("nan") if self.threshold is None else self.threshold
        hit = x <= t if self.kind == "le" else x > t if self.kind == "gt" else x == t
        return int(np.count_nonzero(hit))

    def __str__(self) -> str:
        if self.kind == "nan":
            return f"{self.name} is NaN (refused)"
        return f"{self.name} {_OPS[self.kind]} {self.threshold:.6g}"


@dataclass(frozen=True)
class Witness:
    """One tested event on the bounding half; ``direction`` "P/Q" tests P(S) <= e^ε Q(S) + δ."""

    event: Event
    direction: str
    criterion: str  # "epsilon" or "delta": what the event was chosen to maximise
    count_num: int  # outputs in the event, numerator side, of n
    count_den: int  # the same, denominator side
    n: int
    p_lower: float
    q_upper: float
    epsilon_lower: float
    delta_lower: float


@dataclass(frozen=True)
class PairAudit:
    """The audit of one pair of neighbouring datasets (see the module docstring)."""

    epsilon: float
    delta: float
    samples: int
    alpha_total: float
    tests: int
    alpha: float  # level of each one-sided Clopper–Pearson bound
    epsilon_lower: float
    delta_lower: float
    violated: bool
    witnesses: tuple[Witness, ...]

    @property
    def witness(self) -> Witness:
        """The tested event with the largest ``epsilon_lower`` (it violates iff any does)."""
        return max(self.witnesses, key=lambda w: w.epsilon_lower)

    @property
    def event(self) -> str:
        """Description of :attr:`witness`'s event and direction."""
        return f"{self.witness.event} [{self.witness.direction}]"

    @property
    def verdict(self) -> str:
        claim = f"(ε={self.epsilon:g}, δ={self.delta:g})"
        return f"violates {claim}" if self.violated else f"consistent with {claim}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready record: every field, the witnesses, the event and the verdict."""
        record = asdict(self)
        for row, witness in zip(record["witnesses"], self.witnesses, strict=True):
            row["event"]["description"] = str(witness.event)
        return {**record, "event": self.event, "verdict": self.verdict}


@dataclass(frozen=True)
class AuditReport:
    """:func:`audit_pairs`: one :class:`PairAudit` per pair at a shared family-wise level."""

    pairs: tuple[PairAudit, ...]
    alpha_total: float

    @property
    def epsilon_lower(self) -> float:
        return max(p.epsilon_lower for p in self.pairs)

    @property
    def delta_lower(self) -> float:
        return max(p.delta_lower for p in self.pairs)

    @property
    def violated(self) -> bool:
        return any(p.violated for p in self.pairs)

    def to_dict(self) -> dict[str, Any]:
        summary = {k: getattr(self, k) for k in ("alpha_total", "epsilon_lower", "delta_lower")}
        return {**summary, "violated": self.violated, "pairs": [p.to_dict() for p in self.pairs]}


def _bounds_per_pair(delta: float) -> int:
    """One-sided bounds one pair spends: 2 (P_L, Q_U) × 2 directions × criteria (1, or 2 if δ>0)."""
    return 4 if delta == 0 else 8


def _per_bound_alpha(alpha_total: float, tests: int, delta: float) -> float:
    """Bonferroni: the level of each one-sided bound so the whole family is at alpha_total."""
    return alpha_total / (tests * _bounds_per_pair(delta))


def _halves(n: int) -> tuple[slice, slice]:
    """Selection half and (disjoint) bounding half of ``n`` outputs."""
    return slice(0, n // 2), slice(n // 2, n)


def _features(raw: object, size: int, who: str) -> tuple[np.ndarray, list[str]]:
    """Outputs as a (size, columns) float array (vectors get their sum as a last column)."""
    out = np.asarray(raw)
    if out.dtype.kind not in "biuf":
        raise ValueError(f"{who} must return real numbers, got dtype {out.dtype}")
    if out.ndim == 1 and out.shape[0] == size:
        return out.astype(float)[:, None], ["x"]
    if out.ndim == 2 and out.shape[0] == size and out.shape[1] >= 1:
        out, names = out.astype(float), [f"x[{j}]" for j in range(out.shape[1])]
        if out.shape[1] == 1:
            return out, names
        with np.errstate(invalid="ignore"):  # inf + (−inf) is NaN: counted as refused
            return np.column_stack([out, out.sum(axis=1)]), [*names, "sum(x)"]
    raise ValueError(f"{who} returned shape {out.shape}; expected ({size},) or ({size}, k)")


def _candidates(
    fp: np.ndarray, fq: np.ndarray, names: list[str], grid: int
) -> tuple[list[Event], np.ndarray, np.ndarray]:
    """Candidate events (step 2) with their counts among ``fp`` and ``fq``."""
    events: list[Event] = []
    cp: list[np.ndarray] = []
    cq: list[np.ndarray] = []
    for j, name in enumerate(names):
        sp, sq = (np.sort(f[:, j][~np.isnan(f[:, j])]) for f in (fp, fq))
        events.append(Event(j, name, "nan"))
        cp.append(np.array([fp.shape[0] - sp.size]))
        cq.append(np.array([fq.shape[0] - sq.size]))
        pooled = np.concatenate([sp, sq])
        if pooled.size == 0:
            continue
        distinct = np.unique(pooled)
        atoms = distinct.size <= grid
        levels = (np.arange(grid) + 0.5) / grid
        thresholds = (
            distinct if atoms else np.unique(np.quantile(pooled, levels, method="inverted_cdf"))
        )
        kinds: tuple[Kind, ...] = ("le", "gt", "eq") if atoms else ("le", "gt")
        counts = {}
        for side, s in (("p", sp), ("q", sq)):
            le = np.searchsorted(s, thresholds, side="right")
            lt = np.searchsorted(s, thresholds, side="left")
            counts[side] = {"le": le, "gt": s.size - le, "eq": le - lt}
        for kind in kinds:
            events.extend(Event(j, name, kind, float(t)) for t in thresholds)
            cp.append(counts["p"][kind])
            cq.append(counts["q"][kind])
    return events, np.concatenate(cp), np.concatenate(cq)


def _bounds(
    k_num: np.ndarray, k_den: np.ndarray, n: int, alpha: float, epsilon: float, delta: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """P_L, Q_U, ε_lower (−inf where undefined, before clamping) and P_L − e^ε Q_U."""
    p_lo = clopper_pearson_lower(k_num, n, alpha)
    q_up = clopper_pearson_upper(k_den, n, alpha)
    with np.errstate(divide="ignore"):
        eps = np.where(p_lo > delta, np.log(np.maximum(p_lo - delta, 0.0) / q_up), -np.inf)
    return p_lo, q_up, eps, p_lo - math.exp(epsilon) * q_up


def _choose(
    k_num: np.ndarray, k_den: np.ndarray, n: int, alpha: float, epsilon: float, delta: float
) -> dict[str, int]:
    """Step 3: index of the event to test for each criterion (on selection-half counts)."""
    _, _, eps, excess = _bounds(k_num, k_den, n, alpha, epsilon, delta)
    smoothed = np.log((k_num + 0.5) / (k_den + 0.5))
    # lexsort: last key is primary; the smoothed ratio breaks ties and all-undefined cases
    chosen = {"epsilon": int(np.lexsort((smoothed, eps))[-1])}
    if delta > 0:
        chosen["delta"] = int(np.lexsort((smoothed, excess))[-1])
    return chosen


def _check_claim(epsilon: float, delta: float, alpha_total: float, tests: int) -> None:
    """ValueError naming the first argument out of its range."""
    if not (isinstance(epsilon, numbers.Real) and math.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"epsilon must be a finite number > 0, got {epsilon!r}")
    if not (isinstance(delta, numbers.Real) and 0 <= delta < 1):
        raise ValueError(f"delta must be in [0, 1), got {delta!r}")
    if not (isinstance(alpha_total, numbers.Real) and 0 < alpha_total < 1):
        raise ValueError(f"alpha_total must be in (0, 1), got {alpha_total!r}")
    _check_int("tests", tests, 1)


def _check_int(name: str, value: object, least: int) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < least:
        raise ValueError(f"{name} must be an integer >= {least}, got {value!r}")


def audit_pair(
    sample_p: Sampler,
    sample_q: Sampler,
    *,
    epsilon: float,
    delta: float = 0.0,
    samples: int = DEFAULT_SAMPLES,
    rng: np.random.Generator | int,
    alpha_total: float = 1e-9,
    tests: int = 1,
    grid: int = DEFAULT_GRID,
) -> PairAudit:
    """Audit the claim (ε, δ) on one pair of neighbouring datasets from output samples.

    ``sample_p`` / ``sample_q`` draw outputs of the mechanism on the two datasets;
    ``samples`` outputs are drawn from each (half select the events, half bound them);
    ``tests`` is the number of such audits sharing the family-wise level ``alpha_total``
    (each gets alpha_total / tests); ``grid`` the number of quantile thresholds per feature.
    ``rng`` (a Generator or a seed) is passed to the samplers.
    """
    _check_claim(epsilon, delta, alpha_total, tests)
    _check_int("samples", samples, MIN_SAMPLES)
    _check_int("grid", grid, 1)
    samples, grid, gen = int(samples), int(grid), np.random.default_rng(rng)
    fp, names = _features(sample_p(samples, gen), samples, "sample_p")
    fq, names_q = _features(sample_q(samples, gen), samples, "sample_q")
    if names != names_q:
        raise ValueError(f"sample_p and sample_q outputs differ in shape: {names} vs {names_q}")
    alpha = _per_bound_alpha(alpha_total, tests, delta)
    select, bound = _halves(samples)
    events, cp, cq = _candidates(fp[select], fq[select], names, grid)
    n_sel = fp[select].shape[0]

    def witness(event: Event, num: np.ndarray, den: np.ndarray, labels: tuple[str, str]) -> Witness:
        """Step 4: bound ``event`` on the bounding half, ``num`` the numerator side."""
        k_num, k_den, n = event.count(num[bound]), event.count(den[bound]), num[bound].shape[0]
        p_lo, q_up, eps, excess = _bounds(
            np.array(k_num), np.array(k_den), n, alpha, epsilon, delta
        )
        return Witness(
            event, *labels, k_num, k_den, n, float(p_lo[0]), float(q_up[0]),
            max(0.0, float(eps[0])), max(0.0, float(excess[0])),
        )  # fmt: skip

    witnesses = [
        witness(events[index], num, den, (direction, criterion))
        for direction, num, den, c_num, c_den in (("P/Q", fp, fq, cp, cq), ("Q/P", fq, fp, cq, cp))
        for criterion, index in _choose(c_num, c_den, n_sel, alpha, epsilon, delta).items()
    ]
    return PairAudit(
        epsilon=float(epsilon),
        delta=float(delta),
        samples=samples,
        alpha_total=float(alpha_total),
        tests=int(tests),
        alpha=alpha,
        epsilon_lower=max(w.epsilon_lower for w in witnesses),
        delta_lower=max(w.delta_lower for w in witnesses),
        violated=any(w.delta_lower > delta for w in witnesses),
        witnesses=tuple(witnesses),
    )


def audit_pairs(
    pairs: Sequence[tuple[Sampler, Sampler]],
    *,
    epsilon: float,
    delta: float = 0.0,
    samples: int = DEFAULT_SAMPLES,
    rng: np.random.Generator | int,
    alpha_total: float = 1e-9,
    tests: int = 1,
    grid: int = DEFAULT_GRID,
) -> AuditReport:
    """:func:`audit_pair` on every pair, the family-wise level split evenly over the pairs."""
    if len(pairs) == 0:
        raise ValueError("pairs must hold at least one (sample_p, sample_q) pair")
    _check_claim(epsilon, delta, alpha_total, tests)
    gen = np.random.default_rng(rng)
    audits = [
        audit_pair(
            p, q, epsilon=epsilon, delta=delta, samples=samples, rng=gen,
            alpha_total=alpha_total, tests=tests * len(pairs), grid=grid,
        )
        for p, q in pairs
    ]  # fmt: skip
    return AuditReport(pairs=tuple(audits), alpha_total=float(alpha_total))
