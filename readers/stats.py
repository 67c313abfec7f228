"""The one Wilson interval every figure uses (the audit in readers.audit, the analytics pages)."""

from __future__ import annotations


def wilson(k: int, n: int, alpha: float = 0.05) -> tuple[float, float] | None:
    """Wilson score interval for k successes in n trials (statsmodels' proportion_confint,
    method="wilson"), with the exact bounds 0 (k = 0) and 1 (k = n); None when n = 0."""
    if n <= 0:
        return None
    if not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    from statsmodels.stats.proportion import proportion_confint

    lo, hi = proportion_confint(k, n, alpha=alpha, method="wilson")
    # The exact bounds at the edges are 0 and 1; floating point can land one ulp inside them
    # (statsmodels gives 0.9999999999999999 for k = n = 1 at alpha = 0.01), which would exclude
    # the point estimate itself.
    return (0.0 if k == 0 else float(lo)), (1.0 if k == n else float(hi))
