"""Mechanisms that release m quantiles at once (issue 27).

Every class estimates the statistic ``"quantiles"``: the m order statistics
``x_(ceil(α_j n))`` of the bounded data for levels ``0 < α_1 < ... < α_m < 1`` (option
``alphas``, or ``m`` for the evenly spaced levels ``linspace(0, 1, m + 2)[1:-1]`` of
Gillenwater, Joseph & Kulesza, "Differentially Private Quantiles", ICML 2021), and its
release is a :class:`mechanisms.multi.release.QuantilesRelease` whose draws are rows of m
non-decreasing values in ``[a, b]``.

Registered methods (module, guarantee):

* ``joint_exp`` (:mod:`~mechanisms.multi.joint_exp`): the joint exponential mechanism of
  Gillenwater, Joseph & Kulesza, exact sampler :mod:`~mechanisms.multi.joint_exp_sampler`;
  ε-DP, add/remove or replace-one.
* ``ind_exp``, ``ind_duff``, ``smooth_laplace_per_level`` (:mod:`~mechanisms.multi.independent`):
  a single-quantile mechanism per level at ε/m (δ/m), basic composition, sorted afterwards;
  ``laplace_ln_per_level``: LaplaceLN per level at CDP parameter ε/√m, ε²/2-zCDP overall.
* ``app_ind_exp`` (:mod:`~mechanisms.multi.independent`, :mod:`~mechanisms.multi.composition`):
  the quantile EM per level at the ε₀ that Dong, Durfee & Rogers' optimal composition of
  exponential mechanisms allows for an overall (ε, δ).
* ``approximate_quantiles`` (:mod:`~mechanisms.multi.approximate_quantiles`): the recursive
  algorithm of Kaplan, Schnapp & Stemmer, "Differentially Private Approximate Quantiles"
  (ICML 2022); ε-DP.
* ``tree_quantiles`` / ``tree_quantiles_gaussian`` (:mod:`~mechanisms.multi.tree`): a noisy
  hierarchical histogram (the shape of Google's differential-privacy library's quantile tree);
  ε-DP with Laplace noise, (ε, δ)-DP with Gaussian noise.

The package is a statistic family: it imports only the layers below it
(:mod:`mechanisms.core`, ``sampling``, ``noise``, ``smooth``) and reaches the single-quantile
mechanisms of :mod:`mechanisms.median` through the registry at run time.
"""
