"""Prediction-powered estimates: every headline number from the machine verdicts on all responses
plus a correction measured on a probability sample of human labels (docs/estimates.md).

Pure (numpy only): the Django layer builds a Population (every response the estimate ranges over,
its groups and every producer's verdicts), the labels with their Design (how they were drawn), and
a predictor (P(correct) per response: a producer, a vote, the consensus posterior).

The inference is design-based: the population is the dataset's responses as they are, the truth of
each is fixed, and the only randomness is which responses the design sent to humans. The labelled
responses fall in cells (a routing stratum, served in a seeded random order); within a cell every
labelled response has a known inclusion probability π_i, and the cell's population size N_c is
known. A target is a smooth function g of means μ_k = (1/N) Σ_i ψ_ik(Y_i), each ψ_ik linear in the
truth: ψ_ik(y) = α_ik·y + β_ik, with α, β known for every response (its group, the producers'
verdicts). Then, for a tuning weight λ:

    μ_k(λ) = (1/N) [ Σ_i β_ik + λ Σ_i α_ik f_i + Σ_c N_c · ȳ_c(α_k (Y − λ f)) ]

where f_i is the predictor and ȳ_c the cell's inverse-probability-weighted (Hájek) mean over its
labelled responses. λ = 0 is the human-only (stratified) estimate, λ = 1 classical PPI; the
estimate is unbiased for any λ fixed in advance and consistent for the tuned one (PPI++). The
variance is the stratified design variance of the linearised residual e_i = ∇g·α_i (Y_i − λ f_i),
with the finite-population correction (1 − π_i); λ minimises it (clipped to [0, 1]), so in large
samples the estimate is never worse than human only. Ratios (false-accept, false-reject) take a
rescaled bootstrap within cells (Rao & Wu 1988, which keeps the finite-population correction).
"""

from __future__ import annotations
