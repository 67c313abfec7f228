"""A judge's calibration: its confidence in each verdict against whether the final human label agrees.

Each judgement with a confidence (judges.confidence: the probability of the parsed label among the
labels at the verdict token) and a human verdict (correct / incorrect) is one point: confidence c,
agreement 0/1. The points are binned on [0, 1] in equal-width bins; each bin shows its number of
items, its mean confidence and its agreement rate (Wilson 95 %). The expected calibration error is
ECE = sum over bins of (n_bin / n) * |agreement_bin - confidence_bin|, with a percentile bootstrap
interval over items.

What it can tell: a judge whose 0.9-confident verdicts agree with humans 70 % of the time
overstates itself. What it cannot: the binned ECE is biased upward with few items per bin (even a
perfectly calibrated judge shows about sqrt(2 / pi) * sqrt(p (1 - p) / n_bin) per bin), so with a
few hundred labels a small ECE is no proof of calibration; and the labels are whatever the queue
routed (disputed items first), so the figure describes the labelled items, not every response.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adjudication.analytics.stats import percentile_interval, proportion

N_BINS = 10
N_BOOT = 1000


def _bin_of(confidence: np.ndarray, n_bins: int) -> np.ndarray:
    # Equal-width bins, the last one closed: a confidence of exactly 1 is in the top bin.
    return np.minimum((confidence * n_bins).astype(np.int64), n_bins - 1)


def expected_calibration_error(confidence: np.ndarray, agrees: np.ndarray, *, n_bins: int = N_BINS) -> float:
    bins = _bin_of(confidence, n_bins)
    # sum over bins of (n_b / n) |agreement_b - confidence_b| = sum of |agreeing_b - confidence sum_b| / n
    conf_sum = np.bincount(bins, weights=confidence, minlength=n_bins)
    agree_sum = np.bincount(bins, weights=agrees.astype(float), minlength=n_bins)
    return float(np.abs(agree_sum - conf_sum).sum() / len(confidence))


def calibration(
    confidence: np.ndarray | list[float],
    agrees: np.ndarray | list[bool],
    *,
    n_bins: int = N_BINS,
    n_boot: int = N_BOOT,
    seed: int = 0,
) -> dict[str, Any]:
    """{"n", "ece", "ece_ci", "bins": [{"lo", "hi", "n", "confidence", "agreement"}], "note"} over
    one judge's points (module docstring). Empty bins are listed with n 0."""
    c = np.asarray(confidence, dtype=float)
    a = np.asarray(agrees, dtype=bool)
    if c.shape != a.shape or c.ndim != 1:
        raise ValueError("confidence and agrees must be two sequences of one length")
    if np.any(~np.isfinite(c)) or np.any((c < 0) | (c > 1)):
        raise ValueError("every confidence must be a probability in [0, 1]")
    n = len(c)
    out: dict[str, Any] = {"n": n, "n_bins": n_bins, "ece": None, "ece_ci": None, "bins": []}
    if n == 0:
        out["note"] = "no verdict with a confidence has a human label yet"
        return out
    bins = _bin_of(c, n_bins)
    for b in range(n_bins):
        mask = bins == b
        k = int(mask.sum())
        out["bins"].append(
            {
                "lo": b / n_bins,
                "hi": (b + 1) / n_bins,
                "n": k,
                "confidence": float(c[mask].mean()) if k else None,
                "agreement": proportion(int(a[mask].sum()), k) if k else None,
            }
        )
    out["ece"] = expected_calibration_error(c, a, n_bins=n_bins)
    if n_boot > 0:
        drawn = np.random.default_rng(seed).integers(0, n, size=(n_boot, n))
        boots = np.array([expected_calibration_error(c[d], a[d], n_bins=n_bins) for d in drawn])
        ci = percentile_interval(boots)
        out["ece_ci"] = list(ci) if ci else None
    out["mean_confidence"] = float(c.mean())
    out["agreement"] = proportion(int(a.sum()), n)
    out["note"] = (
        "binned ECE over the labelled items: biased upward when bins hold few items "
        f"(about {np.sqrt(2 / np.pi) * np.sqrt(0.25 / max(1, n / n_bins)):.2f} for a perfectly calibrated judge "
        f"with {n} items in {n_bins} bins, at most)"
    )
    return out
