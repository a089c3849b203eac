"""Exact log-space sampler for the joint exponential mechanism (JointExp) for m quantiles.

Source: J. Gillenwater, M. Joseph, A. Kulesza, "Differentially Private Quantiles", ICML 2021
(utility, swap sensitivity, gap decomposition and dynamic program). Independent
re-implementation; only numpy and the standard library are used.

Utility (the paper's). Data x_(1) <= ... <= x_(n) in [lower, upper], levels
0 < α_1 < ... < α_m < 1, α_0 = 0, α_{m+1} = 1, outputs lower <= o_1 <= ... <= o_m <= upper,
o_0 = -inf, o_{m+1} = +inf::

    u(X, o) = -Σ_{j=1}^{m+1} | #{x in X : o_{j-1} < x <= o_j} - (α_j - α_{j-1}) n |,

and the output density on the sorted region is exp(ε u(X, o) / (2Δ)) / Z(X) (the exponential
mechanism of McSherry & Talwar, "Mechanism Design via Differential Privacy", FOCS 2007).

Sensitivity Δ (:func:`utility_sensitivity`):

* ``replace_one`` (the paper's swap): Δ = 2; one point leaves bin j for bin j' and n
  is unchanged, so two terms move by at most 1 each.
* ``add_remove`` (derived here): Δ = 2 (1 - min_j d_j), d_j = α_j - α_{j-1}, Σ d_j = 1.
  Proof sketch: add one point (removal is symmetric). Its bin j changes by at most
  |1 - d_j| = 1 - d_j; every other bin l keeps its count while its target moves by d_l, so
  they change by at most Σ_{l≠j} d_l = 1 - d_j. Hence |Δu| <= 2 (1 - d_j) <= 2 (1 - min d),
  attained when every bin holds its target exactly and the point joins the smallest-d bin.
  The count form is well defined for every n (each dataset uses its own n), so no separate
  rank-based utility is needed. The authors' public code (google-research,
  dp_multiq/joint_exp.py) uses the same constant.

Gap reduction (as in the paper). With x_(0) = lower and x_(n+1) = upper, gap i = [x_(i), x_(i+1)]
has length L_i, i = 0..n. For o_j inside gap i_j, #{x <= o_j} = i_j, so u depends only on the
gap tuple i_1 <= ... <= i_m (i_0 = 0, i_{m+1} = n)::

    score(i) = -c Σ_{j=1}^{m+1} |i_j - i_{j-1} - d_j n|,   c = ε / (2Δ),

and the mass of a gap tuple is exp(score) Π_{distinct gaps g} L_g^{k_g} / k_g!, where k_g
outputs share gap g (the volume of the sorted k-tuples in an interval of length L is L^k/k!).
Given the gap tuple the outputs are sorted uniform draws inside their gaps.

Dynamic program (0-based outputs s, j = 0..m-1; a "run" is a maximal block of outputs sharing
a gap)::

    E[0, g] = -c |g - T_0|,    T_l = d_{l+1} n,
    E[s, g] = LSE_{g' < g} (A[s-1, g'] - c |g - g' - T_s|)                    (run starts at s)
    A[j, g] = LSE_{s <= j} (E[s, g] - c n (α_j - α_s) + r log L_g - log r!),   r = j - s + 1,
    log Z  = LSE_g (A[m-1, g] - c |n - g - T_m|).

Complexity. The kernel exp(-c |k - T|) is one rising and one falling geometric sequence in k,
so each E[s] costs O(n) with log-space prefix scans and a sliding-window log-sum-exp (van Herk
/ Gil-Werman blocks): O(mn) for all transitions, against O(mn log n) for the paper's FFT,
which also loses every weight below ~1e-16 of the largest. The run term stays O(m^2 n) (run
lengths 1..m for every (j, g)); we found no exact way below it, but keep it cheap: per gap the
open runs are held relative to a log-scale, and output j multiplies them by a gap factor
L_g e^{-c n (α_j - α_{j-1})} and a run factor 1/r, so the m^2 n work is two multiplications and
a sum, with no exp or log. A relative entry that underflows is below 2^-1074 of its column and
can later gain at most 2^m (Π (1 + k/t) <= C(m, k)) on older runs, none on newer ones, so the
loss is below rounding for m <= 900 (enforced). Total: O(m^2 n) time, O(mn) memory, O(mn) per
draw (backward sampling with Gumbel-max). Zero-length gaps get log-length exactly -inf (masked
log, no warnings). The scans carry offsets up to c n, so log-weights are exact to a few ulp of
ε n / Δ (one ulp is 5e-10 at n = 1e5, ε = 50, Δ = 2; tests: <= 3 ulp against direct sums).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

Floats = np.ndarray | Sequence[float]
NEIGHBOURING = ("replace_one", "add_remove")
MAX_LEVELS = 900
_CHUNK = 1 << 21  # elements per temporary (samples × gaps or runs × gaps)


def utility_sensitivity(alphas: Floats, neighbouring: str) -> float:
    """Sensitivity Δ of the JointExp utility (formulas and proof in the module docstring)."""
    if neighbouring == "replace_one":
        return 2.0
    d = np.diff(np.concatenate(([0.0], alphas, [1.0])))
    return 2.0 * (1.0 - float(d.min()))


def _validate(
    sorted_x: Floats, lower: float, upper: float, alphas: Floats, epsilon: float, neighbouring: str
) -> tuple[np.ndarray, float, float, np.ndarray, float]:
    for name, v in (("lower", lower), ("upper", upper), ("epsilon", epsilon)):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise ValueError(f"{name} must be a real number, got {v!r}")
        if not math.isfinite(v):
            raise ValueError(f"{name} must be finite, got {v!r}")
    lower, upper = float(lower), float(upper)
    if not (lower < upper and math.isfinite(upper - lower)):
        raise ValueError(f"lower/upper: need lower < upper with finite width, got {lower}, {upper}")
    x = np.asarray(sorted_x, dtype=np.float64)
    if x.ndim != 1 or not np.all(np.isfinite(x)):
        raise ValueError("sorted_x must be a one-dimensional array of finite numbers (no NaN/inf)")
    if x.size > 1 and np.any(np.diff(x) < 0):
        raise ValueError("sorted_x must be sorted in non-decreasing order")
    if x.size and (x[0] < lower or x[-1] > upper):
        raise ValueError("sorted_x must lie within [lower, upper] (clip it first)")
    a = np.asarray(alphas, dtype=np.float64)
    if a.ndim != 1 or a.size == 0 or not np.all(np.isfinite(a)):
        raise ValueError("alphas must be a non-empty one-dimensional array of finite numbers")
    if np.any(a <= 0.0) or np.any(a >= 1.0):
        raise ValueError("alphas must lie strictly inside (0, 1)")
    if np.any(np.diff(a) <= 0.0):
        raise ValueError("alphas must be strictly increasing")
    if a.size > MAX_LEVELS:
        raise ValueError(f"alphas: at most {MAX_LEVELS} levels (exactness bound, module docstring)")
    if epsilon <= 0:
        raise ValueError(f"epsilon must be > 0, got {epsilon!r}")
    if neighbouring not in NEIGHBOURING:
        raise ValueError(f"neighbouring must be one of {NEIGHBOURING}, got {neighbouring!r}")
    return x, lower, upper, a, float(epsilon)


def _masked_log(v: np.ndarray) -> np.ndarray:
    """log v with log 0 = -inf exactly (masked, so no divide-by-zero warning); v >= 0."""
    out = np.full(np.shape(v), -np.inf)
    np.log(v, out=out, where=v > 0)
    return out


def _run_length_divisor(r: np.ndarray) -> np.ndarray:
    """r: a run's volume L^r / r! is L^(r-1) / (r-1)! times L / r (the 1/k! of the volume)."""
    return np.asarray(r, dtype=np.float64)


def _log_factorial_table(m: int) -> np.ndarray:
    """log r! for r = 0..m, built from the same per-step divisors as the forward pass."""
    return np.concatenate(([0.0], np.cumsum(np.log(_run_length_divisor(np.arange(1, m + 1))))))


def _lse(a: np.ndarray, axis: int = -1) -> np.ndarray:
    """log Σ exp along ``axis``; all -inf gives -inf, without warnings."""
    mx = np.max(a, axis=axis, keepdims=True)
    mx = np.where(np.isfinite(mx), mx, 0.0)
    return np.squeeze(_masked_log(np.sum(np.exp(a - mx), axis=axis, keepdims=True)) + mx, axis=axis)


def _sliding_lse(h: np.ndarray, w: int) -> np.ndarray:
    """S[p] = LSE(h[max(0, p-w+1) .. p]) in O(len(h)) (van Herk / Gil-Werman blocks)."""
    n = h.size
    nb = -(-(n + w - 1) // w)
    padded = np.full(nb * w, -np.inf)
    padded[w - 1 : w - 1 + n] = h
    blocks = padded.reshape(nb, w)
    pre = np.logaddexp.accumulate(blocks, axis=1).ravel()
    suf = np.logaddexp.accumulate(blocks[:, ::-1], axis=1)[:, ::-1].ravel()
    q = np.arange(n)
    return np.where(q % w == 0, suf[q], np.logaddexp(suf[q], pre[q + w - 1]))


def _strict_transition(f: np.ndarray, c: float, target: float) -> np.ndarray:
    """out[g] = LSE_{g' < g} (f[g'] - c |g - g' - target|) in O(len(f))."""
    size = f.size
    out = np.full(size, -np.inf)
    pos = np.arange(size, dtype=np.float64)
    w = min(math.floor(target), size - 1)  # jumps k = 1..w lie at or below the target
    if w >= 1:  # -c (target - k) = (f[g'] - c g') + c g - c target
        win = _sliding_lse(f - c * pos, w)
        out[1:] = win[:-1] + (c * pos[1:] - c * target)
    if w + 1 <= size - 1:  # jumps k >= w + 1: -c (k - target) = (f[g'] + c g') - c g + c target
        acc = np.logaddexp.accumulate(f + c * pos)
        out[w + 1 :] = np.logaddexp(
            out[w + 1 :], acc[: size - w - 1] - c * pos[w + 1 :] + c * target
        )
    return out


@dataclass(frozen=True)
class JointExpForward:
    """Forward pass of the dynamic program (arrays as in the module docstring)."""

    edges: np.ndarray  # (n + 2,) lower, x_(1..n), upper; gap g = [edges[g], edges[g + 1]]
    log_len: np.ndarray  # (n + 1,) log L_g, -inf for empty gaps
    alphas: np.ndarray  # (m,)
    c: float  # ε / (2Δ)
    targets: np.ndarray  # (m + 1,) T_l = (α_{l+1} - α_l) n
    entry: np.ndarray  # (m, n + 1) E[s, g]
    run_end: np.ndarray  # (m, n + 1) A[j, g]
    log_z: float
    n: int


def joint_exp_forward(
    sorted_x: Floats, lower: float, upper: float, alphas: Floats, epsilon: float, neighbouring: str
) -> JointExpForward:
    """Validate inputs and run the log-space forward pass (O(m^2 n) time, O(mn) memory)."""
    x, lower, upper, a, eps = _validate(sorted_x, lower, upper, alphas, epsilon, neighbouring)
    n, m = x.size, a.size
    edges = np.concatenate(([lower], x, [upper]))
    log_len = _masked_log(np.diff(edges))
    c = eps / (2.0 * utility_sensitivity(a, neighbouring))
    targets = np.diff(np.concatenate(([0.0], a, [1.0]))) * n
    pos = np.arange(n + 1, dtype=np.float64)
    entry = np.empty((m, n + 1))
    run_end = np.empty((m, n + 1))
    entry[0] = -c * np.abs(pos - targets[0])
    # Run term in relative linear space: Σ_s exp(term_s[g]) = exp(scale[g]) Σ_s rel[s, g] / norm[g].
    # From j-1 to j every open run gains log L_g - c n (α_j - α_{j-1}) - log r: a column factor
    # and a row factor 1/r, so each step is two multiplications and a sum, no exp or log.
    rel = np.zeros((m, n + 1))
    scale, norm = np.full(n + 1, -np.inf), np.ones(n + 1)
    with np.errstate(under="ignore"):  # underflow of negligible terms is expected, nothing else
        for j in range(m):
            if j > 0:
                entry[j] = _strict_transition(run_end[j - 1], c, targets[j])
            new = entry[j] + log_len
            old = scale + log_len - c * n * (a[j] - a[j - 1]) if j else scale
            top = np.maximum(old, new)
            top = np.where(np.isfinite(top), top, 0.0)
            rel[:j] /= _run_length_divisor(np.arange(j + 1, 1, -1))[:, None]
            rel[:j] *= np.exp(old - top) / norm
            rel[j] = np.exp(new - top)
            norm = rel[: j + 1].sum(axis=0)
            run_end[j] = _masked_log(norm) + top
            scale = run_end[j]
            norm = np.where(norm > 0, norm, 1.0)
        log_z = float(_lse(_last_gap_logits_raw(run_end[m - 1], c, targets[m], n)))
    return JointExpForward(edges, log_len, a, c, targets, entry, run_end, log_z, n)


def _last_gap_logits_raw(last: np.ndarray, c: float, target: float, n: int) -> np.ndarray:
    return last - c * np.abs(n - np.arange(n + 1) - target)


def _run_start_logits(fw: JointExpForward, j: np.ndarray, g: np.ndarray) -> np.ndarray:
    """(K, m) log-weights of 'the run ending at output j in gap g starts at output s'."""
    m, n = fw.alphas.size, fw.n
    s = np.arange(m)[None, :]
    r = j[:, None] - s + 1
    ok = r >= 1
    rr = np.where(ok, r, 1)
    vals = (
        fw.entry[s, g[:, None]]
        - fw.c * n * (fw.alphas[j][:, None] - fw.alphas[s])
        + rr * fw.log_len[g][:, None]
        - _log_factorial_table(m)[rr]
    )
    return np.where(ok, vals, -np.inf)


def _prev_gap_logits(fw: JointExpForward, s: np.ndarray, g: np.ndarray) -> np.ndarray:
    """(K, n + 1) log-weights of 'the run before the one starting at s (>= 1) in g is in g''."""
    gp = np.arange(fw.n + 1)[None, :]
    vals = fw.run_end[s - 1] - fw.c * np.abs(g[:, None] - gp - fw.targets[s][:, None])
    return np.where(gp < g[:, None], vals, -np.inf)


def _gumbel_argmax(logits: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return np.argmax(logits + rng.gumbel(size=logits.shape), axis=-1)


def _sample_gap_tuples(fw: JointExpForward, size: int, rng: np.random.Generator) -> np.ndarray:
    """Exact backward sampling of gap tuples, shape (size, m)."""
    m = fw.alphas.size
    last = _last_gap_logits_raw(fw.run_end[m - 1], fw.c, fw.targets[m], fw.n)
    out = np.empty((size, m), dtype=np.int64)
    cols = np.arange(m)[None, :]
    chunk = max(1, _CHUNK // (fw.n + 1))
    for lo in range(0, size, chunk):
        k = min(chunk, size - lo)
        g = _gumbel_argmax(np.broadcast_to(last, (k, fw.n + 1)), rng)
        j = np.full(k, m - 1)
        rows = np.arange(lo, lo + k)
        while rows.size:
            s = _gumbel_argmax(_run_start_logits(fw, j, g), rng)
            fill = (cols >= s[:, None]) & (cols <= j[:, None])
            out[rows] = np.where(fill, g[:, None], out[rows])
            more = s > 0
            rows, s, g = rows[more], s[more], g[more]
            if rows.size:
                g = _gumbel_argmax(_prev_gap_logits(fw, s, g), rng)
                j = s - 1
    return out


def _place_in_gaps(gaps: np.ndarray, edges: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Uniform draw in each output's gap, rows sorted (sorted uniforms within shared gaps)."""
    lo, hi = edges[gaps], edges[gaps + 1]
    vals = np.minimum(lo + rng.random(gaps.shape) * (hi - lo), hi)
    return np.sort(vals, axis=1)


def sample_joint_exp(
    sorted_x: Floats,
    lower: float,
    upper: float,
    alphas: Floats,
    epsilon: float,
    neighbouring: str,
    size: int = 1,
    rng: np.random.Generator | int | None = None,
) -> np.ndarray:
    """``size`` exact ε-DP JointExp draws, shape (size, m), rows non-decreasing in [lower, upper].

    Density ∝ exp(ε u(X, o) / (2Δ)) on lower <= o_1 <= ... <= o_m <= upper (Gillenwater, Joseph &
    Kulesza, "Differentially Private Quantiles", ICML 2021); see the module docstring.
    """
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 0:
        raise ValueError(f"size must be an integer >= 0, got {size!r}")
    fw = joint_exp_forward(sorted_x, lower, upper, alphas, epsilon, neighbouring)
    gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    with np.errstate(under="ignore"):
        return _place_in_gaps(_sample_gap_tuples(fw, int(size), gen), fw.edges, gen)


def _all_tuples(n_gaps: int, m: int, limit: int = 2_000_000) -> list[tuple[int, ...]]:
    if math.comb(n_gaps + m - 1, m) > limit:
        raise ValueError(f"too many gap tuples to enumerate (n + 1 = {n_gaps}, m = {m})")
    return list(itertools.combinations_with_replacement(range(n_gaps), m))


def gap_tuple_log_probabilities(
    sorted_x: Floats, lower: float, upper: float, alphas: Floats, epsilon: float, neighbouring: str
) -> dict[tuple[int, ...], float]:
    """log P(gap tuple) as the product of the sampler's own backward conditionals.

    The sampler draws the last gap, then the start of the last run, then the previous run's
    gap, and so on; this multiplies exactly those normalised conditionals, so it is the law of
    :func:`sample_joint_exp`'s gap tuples, over every non-decreasing tuple (small inputs only).
    """
    fw = joint_exp_forward(sorted_x, lower, upper, alphas, epsilon, neighbouring)
    m, result = fw.alphas.size, {}
    with np.errstate(under="ignore"):
        last = _last_gap_logits_raw(fw.run_end[m - 1], fw.c, fw.targets[m], fw.n)
        last = last - _lse(last)
        for t in _all_tuples(fw.n + 1, m):
            if np.isneginf(fw.log_len[list(t)]).any():
                result[t] = -math.inf
                continue
            j, g, lp = m - 1, t[-1], float(last[t[-1]])
            while True:  # peel the last run, then step to the previous run's gap
                s = j
                while s > 0 and t[s - 1] == g:
                    s -= 1
                rs = _run_start_logits(fw, np.array([j]), np.array([g]))[0]
                lp += float(rs[s] - _lse(rs))
                if s == 0:
                    break
                pg = _prev_gap_logits(fw, np.array([s]), np.array([g]))[0]
                j, g = s - 1, t[s - 1]
                lp += float(pg[g] - _lse(pg))
            result[t] = lp
    return result


def joint_exp_log_density(fw: JointExpForward, outputs: Floats) -> np.ndarray:
    """log density ε u(X, o) / (2Δ) - log Z(X) at sorted output rows ``outputs`` (K, m).

    ``fw`` is :func:`joint_exp_forward` of X; u is counted from #{x <= o_j} directly (the
    paper's form) and log Z comes from the dynamic program. Used to check ε-DP pointwise.
    """
    o, n = np.atleast_2d(np.asarray(outputs, dtype=np.float64)), fw.n
    if o.ndim != 2 or o.shape[1] != fw.alphas.size or not np.all(np.isfinite(o)):
        raise ValueError(f"outputs must have shape (K, {fw.alphas.size}) with finite entries")
    if np.any(np.diff(o, axis=1) < 0) or o.min() < fw.edges[0] or o.max() > fw.edges[-1]:
        raise ValueError("outputs rows must be non-decreasing and within [lower, upper]")
    counts = np.searchsorted(fw.edges[1:-1], o, side="right")
    full = np.concatenate((np.zeros((o.shape[0], 1)), counts, np.full((o.shape[0], 1), n)), axis=1)
    u = -np.sum(np.abs(np.diff(full, axis=1) - fw.targets[None, :]), axis=1)
    return fw.c * u - fw.log_z


def brute_force_gap_tuple_log_probabilities(
    sorted_x: Floats, lower: float, upper: float, alphas: Floats, epsilon: float, neighbouring: str
) -> dict[tuple[int, ...], float]:
    """Reference: enumerate every non-decreasing gap tuple (small inputs only).

    Mass = exp(ε u(X, o) / (2Δ)) Π_g L_g^k / k!, with u counted at the gap midpoints; plain
    Python floats, independent of the dynamic program.
    """
    x, lower, upper, a, eps = _validate(sorted_x, lower, upper, alphas, epsilon, neighbouring)
    n, m = x.size, a.size
    edges = [lower, *x.tolist(), upper]
    qs = [0.0, *a.tolist(), 1.0]
    delta = utility_sensitivity(a, neighbouring)
    log_mass: dict[tuple[int, ...], float] = {}
    for t in _all_tuples(n + 1, m):
        if min(edges[g + 1] - edges[g] for g in t) <= 0.0:
            log_mass[t] = -math.inf
            continue
        mids = [0.5 * (edges[g] + edges[g + 1]) for g in t]
        below = [0, *(int(np.searchsorted(x, v, side="right")) for v in mids), n]
        u = -sum(abs(below[k + 1] - below[k] - (qs[k + 1] - qs[k]) * n) for k in range(m + 1))
        vol = sum(
            k * math.log(edges[g + 1] - edges[g]) - math.lgamma(k + 1)
            for g, k in ((g, t.count(g)) for g in set(t))
        )
        log_mass[t] = eps * u / (2.0 * delta) + vol
    top = max(log_mass.values())
    log_norm = top + math.log(math.fsum(math.exp(v - top) for v in log_mass.values()))
    return {t: v - log_norm for t, v in log_mass.items()}
