"""`harness batch status`'s statistics against values computed here, independently: the
Wilson interval from its textbook formula, McNemar's exact p from binomial coefficients,
pass@k and pass^k counted by hand, the bootstrap interval against the normal approximation
of the same mean difference."""

from __future__ import annotations

import math
from statistics import NormalDist

import pytest
from harness_worker._stats import Sample, compare, pass_at_k, wilson

Z: float = NormalDist().inv_cdf(0.975)


def wilson_by_formula(k: int, n: int) -> tuple[float, float]:
    """Wilson (1927): (p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n)."""
    p = k / n
    centre = p + Z**2 / (2 * n)
    spread = Z * math.sqrt(p * (1 - p) / n + Z**2 / (4 * n**2))
    return (centre - spread) / (1 + Z**2 / n), (centre + spread) / (1 + Z**2 / n)


def mcnemar_exact(a_only: int, b_only: int) -> float:
    """Two-sided: twice the smaller tail of Binomial(n, 1/2), at most 1."""
    n, low = a_only + b_only, min(a_only, b_only)
    tail = sum(math.comb(n, i) for i in range(low + 1)) / 2**n
    return min(1.0, 2 * tail)


@pytest.mark.parametrize(("k", "n"), [(0, 5), (6, 20), (16, 20), (20, 20), (1, 1), (37, 48)])
def test_the_wilson_interval_is_the_textbook_one(k: int, n: int) -> None:
    assert wilson(k, n) == pytest.approx(list(wilson_by_formula(k, n)), abs=1e-9)


def test_nothing_checked_has_no_interval() -> None:
    assert wilson(0, 0) is None


def samples(outcomes: str, tokens: int = 100) -> list[Sample]:
    """One sample per character: task index i // 2, repeat i % 2, '1' a pass."""
    return [Sample(f"t{i // 2}", i % 2, c == "1", tokens) for i, c in enumerate(outcomes)]


def test_pass_at_k_counts_tasks_with_any_and_with_every_pass() -> None:
    # Four tasks, two repeats each: (1,1) (1,0) (0,1) (0,0): three ever pass, one always does.
    assert pass_at_k(samples("11100100")) == (0.75, 0.25)
    assert pass_at_k([]) == (None, None)


# Ten tasks, two repeats: A passes 6 samples, B 16; 2 only A, 12 only B (the outcomes of the
# end-to-end test in test_worker_cli.py).
A_RUNS = "0" * 12 + "1111" + "11" + "00"
B_RUNS = "1" * 12 + "1111" + "00" + "00"


def test_a_comparison_counts_pairs_and_uses_the_exact_mcnemar_test() -> None:
    result = compare("a", "b", samples(A_RUNS, 100), samples(B_RUNS, 160))
    assert (result["pairs"], result["a_only"], result["b_only"]) == (20, 2, 12)
    assert result["diff"] == pytest.approx(16 / 20 - 6 / 20)
    assert result["p_value"] == pytest.approx(mcnemar_exact(2, 12), rel=1e-12)
    assert mcnemar_exact(2, 12) == pytest.approx(212 / 16384)
    assert result["tokens_diff"] == 60 and result["tokens_diff_ci"] == [60.0, 60.0]
    assert result["verdict"] == (
        f"b passes 50.0 points more [{result['diff_ci'][0] * 100:.1f}, "
        f"{result['diff_ci'][1] * 100:.1f}], p = 0.013, 14 discordant of 20: "
        "significant difference"
    )


def test_the_bootstrap_interval_is_near_the_normal_one_and_reproducible() -> None:
    """For 20 pairs the percentile bootstrap of a mean difference sits close to mean ± z·sd/√n
    (the resampled mean is near normal); the seed makes it the same every time."""
    a, b = samples(A_RUNS), samples(B_RUNS)
    result = compare("a", "b", a, b)
    diffs = [y.passed - x.passed for x, y in zip(a, b, strict=True)]
    mean = sum(diffs) / len(diffs)
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / len(diffs))
    low, high = mean - Z * sd / math.sqrt(len(diffs)), mean + Z * sd / math.sqrt(len(diffs))
    assert result["diff_ci"] == pytest.approx([low, high], abs=0.06)
    assert result["diff_ci"][0] <= mean <= result["diff_ci"][1]
    assert compare("a", "b", a, b)["diff_ci"] == result["diff_ci"]


def test_no_discordant_pair_is_p_one_and_no_difference() -> None:
    """Identical outcomes: the bootstrap interval is the point (no crash on data that never
    varies) and the verdict says there is no difference."""
    result = compare("a", "b", samples("1100"), samples("1100"))
    assert (result["a_only"], result["b_only"], result["p_value"]) == (0, 0, 1.0)
    assert result["diff_ci"] == [0.0, 0.0]
    assert result["verdict"] == (
        "b passes 0.0 points more [0.0, 0.0], p = 1, 0 discordant of 4: no significant difference"
    )


def test_fewer_and_not_significant() -> None:
    """B loses 2 of 12 and wins 1 (p = 1 by the exact test: 3 discordant pairs say nothing)."""
    a = samples("110100" + "0" * 6)
    b = samples("001100" + "0" * 6)
    result = compare("a", "b", a, b)
    assert (result["a_only"], result["b_only"]) == (2, 1)
    assert result["p_value"] == pytest.approx(mcnemar_exact(2, 1)) == 1.0
    assert result["verdict"].startswith("b passes 8.3 points fewer [")
    assert result["verdict"].endswith("p = 1, 3 discordant of 12: no significant difference")


def test_only_shared_samples_pair_and_one_pair_has_no_interval() -> None:
    a = [Sample("x", 0, True, 10), Sample("y", 0, True, 10)]
    b = [Sample("x", 0, False, 30), Sample("x", 1, True, 30), Sample("z", 0, False, 30)]
    result = compare("a", "b", a, b)
    assert (result["pairs"], result["a_only"], result["b_only"]) == (1, 1, 0)
    assert result["diff_ci"] is None and result["tokens_diff_ci"] is None
    assert result["verdict"] == "b passes 100.0 points fewer, p = 1, 1 discordant of 1: " + (
        "no significant difference"
    )
    empty = compare("a", "b", a, [Sample("q", 0, True, 1)])
    assert empty["pairs"] == 0 and empty["diff"] is None and empty["p_value"] == 1.0
    assert empty["verdict"] == "b shares no checked sample with a: nothing to compare"


def test_the_html_report_escapes_task_ids_and_variant_names() -> None:
    """Task ids and variant names come from the batch file: in the comparison, its verdict
    and the grid they are text, never markup."""
    from harness_worker._html import page

    evil = "<img src=x onerror=alert(1)>"
    comparison = compare("a", evil, samples("10"), samples("01"))
    task = {"session": "s", "task": evil, "repeat": 0, "variant": evil, "check": "passed"}
    variant = {
        "tasks": 1,
        "ended": 1,
        "checked": 1,
        "passed": 1,
        "pass_rate": 1.0,
        "pass_rate_ci": [0.2, 1.0],
        "pass_at_k": 1.0,
        "pass_hat_k": 1.0,
        "mean_steps": 1,
        "mean_tokens": {"input": 1, "output": 1, "cached": 0},
        "mean_seconds": 1.0,
        "plan_used": 0.0,
    }
    html = page(
        {
            "batch": "b",
            "counts": dict.fromkeys(("queued", "running", "done", "failed", "passed"), 0),
            "tasks": [
                {
                    **task,
                    "status": "completed",
                    "steps": 1,
                    "tokens": None,
                    "seconds": 1.0,
                    "plan_used": None,
                }
            ],
            "variants": {evil: variant},
            "comparisons": [comparison],
        }
    )
    assert "<img" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    assert html.index('class="verdict"') < html.index('<table class="grid">')
