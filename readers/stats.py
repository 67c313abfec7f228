"""The one Wilson interval every figure uses (the audit in readers.audit, the analytics pages)."""

from __future__ import annotations

import functools
import math


def wilson(k: int, n: int, alpha: float = 0.05) -> tuple[float, float] | None:
    """Wilson score interval for k successes in n trials (statsmodels' proportion_confint,
    method="wilson", in closed form: statsmodels takes ~0.3 ms a call and a report asks for
    thousands), with the exact bounds 0 (k = 0) and 1 (k = n); None when n = 0."""
    if n <= 0:
        return None
    if not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    crit = _normal_quantile(alpha)
    q, crit2 = k / n, crit * crit
    denominator = 1 + crit2 / n
    centre = (q + crit2 / (2 * n)) / denominator
    half = crit * math.sqrt(q * (1.0 - q) / n + crit2 / (4.0 * n**2)) / denominator
    # The exact bounds at the edges are 0 and 1; floating point can land one ulp inside them
    # (0.9999999999999999 for k = n = 1 at alpha = 0.01), which would exclude the point estimate.
    return (0.0 if k == 0 else centre - half), (1.0 if k == n else centre + half)


@functools.lru_cache(maxsize=32)
def _normal_quantile(alpha: float) -> float:
    """The two-sided standard normal quantile of level alpha: norm.isf(alpha / 2), as statsmodels
    computes it (scipy's ndtri), so that the interval is statsmodels' to the last bit."""
    from scipy.special import ndtri

    return float(-ndtri(alpha / 2))


def wilson_share(p: float, n: float, z: float) -> tuple[float, float]:
    """Wilson's interval for a share p that carries the information of n trials, n possibly
    fractional (a weighted sample's effective size), at the two-sided quantile z (a Student t
    quantile where the variance rests on few labels). The closed form of `wilson`'s statsmodels
    interval (the tests hold them equal): statsmodels takes milliseconds a call, and the
    estimator calls this for every accuracy of every draw of its validation."""
    if not 0.0 <= p <= 1.0 or n <= 0 or z <= 0:
        raise ValueError(f"need 0 <= p <= 1, n > 0 and z > 0, got p={p}, n={n}, z={z}")
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z / (1 + z2 / n) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)
