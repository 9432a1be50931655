"""A one-sided lower confidence bound on a mean paired gain, for the gate's ``rule="lcb"``.

Pure and deterministic: Student's t distribution is computed from its closed form for whole
degrees of freedom (Abramowitz and Stegun 26.7.3-4) and inverted by bisection; no scipy.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import attrs

__all__ = ["LowerBound", "paired_lower_bound", "t_quantile"]

#: The smallest level `t_quantile` answers for: below it, one degree of freedom's quantile
#: (about ``1 / (pi * alpha)``) would leave the bisection's bracket.
MIN_ALPHA = 1e-9

#: The bisection's bracket ``[0, _T_MAX]`` is the same for every level, which makes the
#: quantile it finds non-increasing in alpha even where floating point rounds (see `t_quantile`).
_T_MAX = 1e12


def _t_cdf(t: float, df: int) -> float:
    """P(T <= t) for Student's t with `df` (whole, >= 1) degrees of freedom and t >= 0.

    With ``theta = atan(t / sqrt(df))``, P(|T| <= t) is a finite sum in ``cos(theta)**2``:
    ``sin(theta) * (1 + c/2 + 1*3 c**2/(2*4) + ...)`` for even `df`, and
    ``(2/pi) * (theta + sin(theta) cos(theta) * (1 + 2c/3 + 2*4 c**2/(3*5) + ...))`` for odd.

    Examples:
        >>> round(_t_cdf(1.0, 1), 12)  # the Cauchy distribution: 1/2 + atan(1)/pi
        0.75
        >>> round(_t_cdf(1.8124611, 10), 6)  # the tables' 95th percentile for 10 df
        0.95
    """
    theta = math.atan2(t, math.sqrt(df))
    c = math.cos(theta) ** 2
    total, term = 1.0, 1.0
    if df % 2 == 0:
        for k in range(1, df // 2):
            term *= c * (2 * k - 1) / (2 * k)
            total += term
        inside = math.sin(theta) * total
    else:
        if df == 1:
            total = 0.0
        for k in range(1, (df - 1) // 2):
            term *= c * (2 * k) / (2 * k + 1)
            total += term
        inside = 2 / math.pi * (theta + math.sin(theta) * math.cos(theta) * total)
    return 0.5 + 0.5 * inside


@functools.lru_cache(maxsize=256)
def t_quantile(p: float, df: int) -> float:
    """The `p` quantile of Student's t with `df` degrees of freedom, for 0.5 <= p <= 1 - MIN_ALPHA.

    Bisection of the exact distribution function on a bracket that does not depend on `p`:
    for two levels ``p1 < p2`` the two searches go the same way until the first midpoint
    where they part, ``p1`` to its left and ``p2`` to its right, so the quantile returned (the
    bracket's upper end, the conservative side) never decreases with `p`.

    Raises:
        ValueError: When `df` is no whole number >= 1 or `p` is outside that range.

    Examples:
        >>> round(t_quantile(0.95, 1), 4), round(t_quantile(0.975, 30), 4)
        (6.3138, 2.0423)
    """
    if not (type(df) is int and df >= 1):
        raise ValueError(f"t_quantile needs whole degrees of freedom >= 1, got {df!r}")
    if not 0.5 <= p <= 1 - MIN_ALPHA:
        raise ValueError(f"t_quantile needs 0.5 <= p <= {1 - MIN_ALPHA}, got {p!r}")
    lo, hi = 0.0, _T_MAX
    for _ in range(400):
        mid = (lo + hi) / 2
        if mid <= lo or mid >= hi:
            break
        if _t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
    return hi


@attrs.frozen
class LowerBound:
    """A one-sided lower confidence bound on the mean of paired gains.

    Attributes:
        mean: The mean gain.
        bound: The lower bound at level `alpha` (``-inf`` with fewer than two gains).
        items: How many paired gains.
        alpha: The level: the bound is below the true mean gain with probability about 1 - alpha.
    """

    mean: float
    bound: float
    items: int
    alpha: float

    def describe(self) -> str:
        """One line for a report, e.g. ``paired gain +0.040, lower 95% bound -0.012 (50 items, t with 49 df)``."""
        level = f"{100 * (1 - self.alpha):g}%"
        if self.items < 2:
            return f"paired gain {self.mean:+.3f}, no lower {level} bound from {self.items} item(s) (needs 2)"
        return (
            f"paired gain {self.mean:+.3f}, lower {level} bound {self.bound:+.3f} "
            f"({self.items} items, t with {self.items - 1} df)"
        )


def paired_lower_bound(gains: Sequence[float], alpha: float) -> LowerBound:
    """The one-sided paired-t lower bound ``mean - t(1 - alpha, n - 1) * sd / sqrt(n)`` of `gains`.

    Each gain is an item's candidate score minus its best score on the same item, so the
    items' own difficulty cancels out. With fewer than two gains there is no estimate of
    their spread and the bound is ``-inf``; with gains all equal it is their mean.

    Examples:
        >>> paired_lower_bound([0.5, 0.5, 0.5], 0.05).bound
        0.5
        >>> paired_lower_bound([1.0, 0.0, 0.0, -1.0], 0.05).bound < 0
        True
    """
    n = len(gains)
    mean = math.fsum(gains) / n if n else 0.0
    if n < 2:
        return LowerBound(mean, -math.inf, n, alpha)
    if all(g == gains[0] for g in gains):  # no spread; spared the rounding of the mean and its deviations
        return LowerBound(gains[0], gains[0], n, alpha)
    spread = math.sqrt(math.fsum((g - mean) ** 2 for g in gains) / (n - 1))
    return LowerBound(mean, mean - t_quantile(1 - alpha, n - 1) * (spread / math.sqrt(n)), n, alpha)
