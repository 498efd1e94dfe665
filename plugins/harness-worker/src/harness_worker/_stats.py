"""The statistics of `harness batch status`: pure functions of the samples, computed by SciPy.

A sample is one run of one task (`task`, its `repeat` index) in one variant. Only a checked
sample (its check passed or failed) judges anything; a skipped check or none is left out.

- Pass rate with its 95% Wilson interval (`scipy.stats.binomtest(...).proportion_ci`).
- pass@k: the share of tasks with at least one pass among their k repeats; pass^k: the share
  of tasks whose k repeats all passed (k: the checked repeats a task has). Both are
  definitions, counted over the samples: the first says "can it ever", the second "does it
  always".
- For a pair of variants (A, B), on the samples they share (same task, same repeat, both
  checked): `a_only` (A passed, B failed), `b_only`, the difference in pass rate B - A with a
  paired bootstrap 95% interval (percentile method, a fixed seed: the same batch always gives
  the same interval), the exact McNemar p-value (a two-sided binomial test of `a_only` among
  the discordant pairs at 1/2; 1.0 when there are none), and the same bootstrap on the
  difference in total tokens (input + output) per sample.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["Sample", "compare", "pass_at_k", "verdict", "wilson"]

SEED: Final = 20260
RESAMPLES: Final = 9999
LEVEL: Final = 0.95
SIGNIFICANT: Final = 0.05


@dataclass(frozen=True, slots=True)
class Sample:
    """One checked sample: which task, which repeat, whether it passed, its total tokens."""

    task: str
    repeat: int
    passed: bool
    tokens: int


def wilson(passed: int, checked: int) -> list[float] | None:
    """The 95% Wilson interval of `passed` of `checked`; None when nothing was checked."""
    if checked == 0:
        return None
    from scipy.stats import binomtest

    ci = binomtest(passed, checked).proportion_ci(confidence_level=LEVEL, method="wilson")
    return [float(ci.low), float(ci.high)]


def pass_at_k(samples: Sequence[Sample]) -> tuple[float | None, float | None]:
    """(pass@k, pass^k) over the tasks of `samples`; (None, None) when there are none."""
    runs: dict[str, list[bool]] = {}
    for sample in samples:
        runs.setdefault(sample.task, []).append(sample.passed)
    if not runs:
        return None, None
    return (
        sum(any(r) for r in runs.values()) / len(runs),
        sum(all(r) for r in runs.values()) / len(runs),
    )


def compare(a_name: str, b_name: str, a: Sequence[Sample], b: Sequence[Sample]) -> dict[str, Any]:
    """Variant B against variant A on the samples they share."""
    theirs = {(s.task, s.repeat): s for s in b}
    pairs = [(s, theirs[s.task, s.repeat]) for s in a if (s.task, s.repeat) in theirs]
    a_only = sum(x.passed and not y.passed for x, y in pairs)
    b_only = sum(y.passed and not x.passed for x, y in pairs)
    diff = tokens_diff = None
    diff_ci = tokens_diff_ci = None
    if pairs:
        diff = sum(y.passed - x.passed for x, y in pairs) / len(pairs)
        tokens_diff = sum(y.tokens - x.tokens for x, y in pairs) / len(pairs)
        diff_ci = _paired_ci([x.passed for x, _ in pairs], [y.passed for _, y in pairs])
        tokens_diff_ci = _paired_ci([x.tokens for x, _ in pairs], [y.tokens for _, y in pairs])
    p_value = _mcnemar(a_only, b_only)
    result = {
        "a": a_name,
        "b": b_name,
        "pairs": len(pairs),
        "a_only": a_only,
        "b_only": b_only,
        "diff": diff,
        "diff_ci": diff_ci,
        "p_value": p_value,
        "tokens_diff": tokens_diff,
        "tokens_diff_ci": tokens_diff_ci,
    }
    result["verdict"] = verdict(result)
    return result


def _mcnemar(a_only: int, b_only: int) -> float:
    """The exact McNemar test: under no difference each discordant pair is a fair coin."""
    if a_only + b_only == 0:
        return 1.0
    from scipy.stats import binomtest

    return float(binomtest(a_only, a_only + b_only, 0.5).pvalue)


def _paired_ci(a: Sequence[float], b: Sequence[float]) -> list[float] | None:
    """The seeded paired-bootstrap 95% interval of mean(b - a); None below two pairs (there
    is nothing to resample). Percentile, not BCa: on data that never varies (every pair
    the same) it is the point itself where BCa divides by zero."""
    if len(a) < 2:
        return None
    import numpy as np
    from scipy.stats import bootstrap

    def mean_diff(x: Any, y: Any, axis: int = -1) -> Any:
        return np.mean(y, axis=axis) - np.mean(x, axis=axis)

    ci = bootstrap(
        (np.asarray(a, dtype=float), np.asarray(b, dtype=float)),
        mean_diff,
        paired=True,
        vectorized=True,
        n_resamples=RESAMPLES,
        confidence_level=LEVEL,
        method="percentile",
        rng=np.random.default_rng(SEED),
    ).confidence_interval
    return [float(ci.low), float(ci.high)]


def verdict(comparison: dict[str, Any]) -> str:
    """One line: "B passes 8.3 points more [-4.2, 20.8], p = 0.45, 12 discordant of 48: no
    significant difference"."""
    b, pairs = comparison["b"], comparison["pairs"]
    if not pairs:
        return f"{b} shares no checked sample with {comparison['a']}: nothing to compare"
    diff = comparison["diff"] * 100
    ci = comparison["diff_ci"]
    interval = "" if ci is None else f" [{ci[0] * 100:.1f}, {ci[1] * 100:.1f}]"
    p = comparison["p_value"]
    discordant = comparison["a_only"] + comparison["b_only"]
    judged = "significant difference" if p < SIGNIFICANT else "no significant difference"
    return (
        f"{b} passes {abs(diff):.1f} points {'fewer' if diff < 0 else 'more'}{interval}, "
        f"p = {p:.2g}, {discordant} discordant of {pairs}: {judged}"
    )
