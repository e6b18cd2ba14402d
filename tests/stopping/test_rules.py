"""Stopping decisions on scripted learning curves: which job stops at which step."""

from __future__ import annotations

import math

import pytest

from tuner.errors import ValidationError
from tuner.stopping import HyperbandRungs, MedianStoppingRule, StoppingRule, told_value
from tuner.stopping.hyperband import bracket_cycle

# Accuracy per step (maximize) of scripted jobs: the value at step k is CURVES[job][k - 1].
CURVES = {
    "A": [0.5, 0.6, 0.7, 0.8],
    "B": [0.4, 0.5, 0.6, 0.7],
    "C": [0.2, 0.3, 0.4, 0.5],
    "D": [0.6, 0.7, 0.8, 0.9],
    "E": [0.3, 0.45, 0.6, 0.7],
}


def replay(rule: StoppingRule, events: list[tuple[str, int]]) -> dict[str, int]:
    """Feed (job, step) events in order, as running jobs report them; {job: step stopped}."""
    stopped: dict[str, int] = {}
    for job, step in events:
        if job in stopped:
            continue  # a stopped job reports nothing more
        number = ord(job) - ord("A") + 1
        if rule.report(job, number, {"job": job}, step, CURVES[job][step - 1]) is not None:
            stopped[job] = step
    return stopped


def interleaved(order: str, steps: int = 4) -> list[tuple[str, int]]:
    """Jobs running at once: each round every job in ``order`` reports its next step."""
    return [(job, step) for step in range(1, steps + 1) for job in order]


def test_median_rule_stops_jobs_below_the_median_of_running_averages():
    rule = MedianStoppingRule(maximize=True, min_jobs=2, warmup_steps=1)
    # Round 2: C's 0.3 against A's average 0.55 and B's 0.45 (median 0.5): stopped at step 2.
    # E's 0.45 against A 0.55, B 0.45, C 0.25, D 0.65 (median 0.5): stopped at step 2.
    # B at steps 3 and 4 has only A before it (min_jobs=2): it goes on.
    assert replay(rule, interleaved("ABCDE")) == {"C": 2, "E": 2}
    assert rule.decided("C") == "early stopping at step 2"
    assert rule.decided("A") is None


def test_median_rule_waits_for_min_jobs_and_the_warm_up():
    rule = MedianStoppingRule(maximize=True, min_jobs=3, warmup_steps=2)
    # Step 2 is warm-up; at step 3 C (0.4) has A, B, D before it (median 0.6): stopped.
    # E at step 3 (0.6) meets A 0.6, B 0.5, D 0.7, C 0.3 (median 0.55): it goes on.
    assert replay(rule, interleaved("ABDCE")) == {"C": 3}
    alone = MedianStoppingRule(maximize=True, min_jobs=3, warmup_steps=0)
    assert replay(alone, interleaved("CA")) == {}  # never 3 others at any step


def test_median_rule_with_jobs_finishing_in_shuffled_order():
    # C runs alone first (nothing to compare with), then the others: C is never stopped;
    # E, arriving last, meets A, B, C, D (averages at step 2: 0.55, 0.45, 0.25, 0.65).
    events = interleaved("C") + interleaved("DA") + interleaved("B") + interleaved("E")
    rule = MedianStoppingRule(maximize=True, min_jobs=2, warmup_steps=1)
    # B at step 2: C 0.25, D 0.65, A 0.55 -> median 0.55 > 0.5: stopped at step 2.
    # E at step 2: C, D, A, B(0.45) -> median 0.5 > 0.45: stopped at step 2.
    assert replay(rule, events) == {"B": 2, "E": 2}


def test_median_rule_minimizing_and_ties_go_on():
    rule = MedianStoppingRule(maximize=False, min_jobs=1, warmup_steps=0)
    assert rule.report("a", 1, {}, 1, 1.0) is None
    assert rule.report("b", 2, {}, 1, 1.0) is None  # equal to the median: not worse
    assert rule.report("c", 3, {}, 1, 2.0) == "early stopping at step 1"
    assert rule.report("c", 3, {}, 2, 9.0) is None  # decided once


def test_median_rule_options_are_checked():
    with pytest.raises(ValidationError, match="min_jobs must be an integer >= 1, got 0"):
        MedianStoppingRule(True, min_jobs=0)
    with pytest.raises(ValidationError, match="warmup_steps must be an integer >= 0, got -1"):
        MedianStoppingRule(True, warmup_steps=-1)


def test_hyperband_brackets_follow_hyperband_proportions():
    cycle = bracket_cycle(2, 3)  # R/r = 9, eta = 3: 9, 5 and 3 configurations per bracket
    assert cycle == [0, 1, 0, 2, 0, 1, 0, 0, 1, 2, 0, 1, 0, 0, 2, 1, 0]
    rungs = HyperbandRungs(True, 1, 9, 3)
    assert rungs.rungs == [1, 3]
    assert [rungs.bracket(n) for n in (1, 2, 4, 18, 19)] == [0, 1, 2, 0, 1]


def test_hyperband_rungs_keep_the_top_third_at_each_rung():
    rungs = HyperbandRungs(True, 1, 9, 3)
    bracket0 = [n for n in range(1, 18) if rungs.bracket(n) == 0]  # 1, 3, 5, 7, 8, 11, ...
    values_at_1 = [0.5, 0.6, 0.4, 0.7, 0.55, 0.8]
    decisions = {}
    for n, v in zip(bracket0, values_at_1, strict=False):
        decisions[n] = rungs.report(f"j{n}", n, {"n": n}, 1, v)
    # keep = max(1, seen // 3): j1 first (goes on), j3 beats j1, j5 is beaten by both,
    # j7 best so far, j8 (5 seen, keep 1) behind j7, j11 (6 seen, keep 2) best.
    assert {n for n, d in decisions.items() if d} == {5, 8}
    assert decisions[5] == "early stopping at step 1"
    # Rung 2 (resource 3) of bracket 0: survivors j1, j3, j7 report in shuffled order.
    at_3 = {7: 0.9, 1: 0.6, 3: 0.95}
    second = {n: rungs.report(f"j{n}", n, {"n": n}, 2, v - 0.05) for n, v in at_3.items()}
    assert all(d is None for d in second.values())  # step 2 is no rung
    third = {n: rungs.report(f"j{n}", n, {"n": n}, 3, v) for n, v in at_3.items()}
    # j7 first (on), j1 behind j7 (2 seen, keep 1): stopped; j3 beats both: on.
    assert third == {7: None, 1: "early stopping at step 3", 3: None}


def test_hyperband_later_brackets_start_at_a_higher_rung():
    rungs = HyperbandRungs(True, 1, 9, 3)
    bracket1 = [n for n in range(1, 18) if rungs.bracket(n) == 1]  # 2, 6, 9, 12, 16
    bracket2 = [n for n in range(1, 18) if rungs.bracket(n) == 2]  # 4, 10, 15
    for n, v in zip(bracket1, [0.9, 0.1], strict=False):  # never judged at step 1
        assert rungs.report(f"j{n}", n, {}, 1, v) is None
    assert rungs.report("j2", 2, {}, 3, 0.9) is None
    assert rungs.report("j6", 6, {}, 3, 0.2) == "early stopping at step 3"
    for n, v in zip(bracket2, [0.1, 0.0, 0.05], strict=True):  # full budget: never judged
        assert all(rungs.report(f"j{n}", n, {}, k, v) is None for k in range(1, 10))
    assert len(rungs.results[9]) == 3 and len(rungs.results[3]) == 5  # every job at 3


@pytest.mark.parametrize(
    ("high", "rungs"), [(10, [1, 3, 9]), (26, [1, 3, 9]), (100, [1, 3, 9, 27, 81])]
)
def test_hyperbands_last_bracket_runs_at_full_budget_also_between_powers(high, rungs):
    """QA: with R = 10 (rungs 1, 3, 9) the last bracket, Hyperband's hedge, judged its jobs at
    step 9 and stopped most; only where R was r times a power of eta did it run them all."""
    hyperband = HyperbandRungs(True, 1, high, 3)
    assert hyperband.rungs == rungs
    last = [n for n in range(1, 200) if hyperband.bracket(n) == hyperband.s_max]
    for i, n in enumerate(last):
        value = 1.0 - i / 100  # each worse than every earlier one
        assert all(hyperband.report(f"j{n}", n, {}, k, value) is None for k in range(1, high))
    before = [n for n in range(1, 200) if hyperband.bracket(n) == hyperband.s_max - 1]
    outcomes = [
        hyperband.report(f"j{n}", n, {}, rungs[-1], 1.0 - i / 100) for i, n in enumerate(before)
    ]
    assert any(outcomes)  # the bracket before it still judges at its rungs


def test_a_replayed_rule_decides_exactly_what_the_live_one_did():
    events = interleaved("ABCDE")
    live = MedianStoppingRule(True, min_jobs=2)
    stopped = replay(live, events[:12])  # killed mid-run
    rebuilt = MedianStoppingRule(True, min_jobs=2)
    assert replay(rebuilt, events[:12]) == stopped
    # Going on from there, each job is judged once in all: the same as one uninterrupted run.
    later = replay(rebuilt, [e for e in events[12:] if e[0] not in stopped])
    assert {**stopped, **later} == replay(MedianStoppingRule(True, min_jobs=2), events)


@pytest.mark.parametrize(
    ("low", "high", "eta", "message"),
    [
        (9, 9, 3, "min_resource < max_resource, got min_resource=9, max_resource=9"),
        (0, 9, 3, "min_resource must be an integer >= 1, got 0"),
        (1, 9, 1, "reduction_factor must be an integer >= 2, got 1"),
    ],
)
def test_bad_hyperband_resources_are_refused(low, high, eta, message):
    with pytest.raises(ValidationError, match=message):
        HyperbandRungs(True, low, high, eta)


def test_a_stopped_job_is_told_no_better_than_the_worst_full_result():
    assert told_value(0.7, 0.6, maximize=True) == 0.6
    assert told_value(0.5, 0.6, maximize=True) == 0.5
    assert told_value(0.3, 0.2, maximize=False) == 0.3
    assert told_value(0.1, 0.2, maximize=False) == 0.2
    assert told_value(0.4, None, maximize=True) == 0.4
    assert told_value(float("nan"), 0.2, maximize=True) is None


def test_one_bracket_is_asha_and_brackets_are_checked():
    rungs = HyperbandRungs(True, 1, 9, 3, brackets=1)
    assert {rungs.bracket(n) for n in range(1, 30)} == {0}
    assert rungs.report("a", 1, {}, 1, 0.5) is None
    assert rungs.report("b", 2, {}, 1, 0.4) == "early stopping at step 1"
    with pytest.raises(ValidationError, match=r"brackets must be within 1\.\.3 .* got 4"):
        HyperbandRungs(True, 1, 9, 3, brackets=4)


@pytest.mark.parametrize(
    "rule",
    [HyperbandRungs(True, 1, 9, 3, brackets=1), MedianStoppingRule(True, min_jobs=1)],
    ids=["asha", "median"],
)
def test_a_forgotten_job_does_not_judge_its_own_rerun(rule):
    """An interrupted job runs again with the same configuration and reports the same values:
    judged against its own first run (ties go to the earlier value), ASHA stopped the best
    configuration so far at its first rung."""
    for step in (1, 2, 3):  # a weaker configuration first, so that the rule has a reference
        rule.report("weak", 1, {"x": 0.1}, step, 0.5)
    rule.report("best", 2, {"x": 0.2}, 1, 0.9)
    rule.report("best", 2, {"x": 0.2}, 2, 0.9)  # then interrupted from outside
    rule.forget("best")
    assert rule.report("rerun", 3, {"x": 0.2}, 1, 0.9) is None
    assert rule.report("rerun", 3, {"x": 0.2}, 2, 0.9) is None
    assert rule.report("rerun", 3, {"x": 0.2}, 3, 0.9) is None


def test_the_median_rule_decides_as_the_plain_median_of_every_running_average():
    """The running averages are kept sorted (a median of every job's at each step made a long
    tuning job quadratic); the decisions are those of ``statistics.median`` over a dict."""
    import random
    import statistics

    class Plain(MedianStoppingRule):
        def _judge(self, job, number, config, step, loss):
            sums = self._sums.setdefault(job, [])
            if step != len(sums) + 1:
                return None
            sums.append((sums[-1] if sums else 0.0) + loss)
            others = self._averages.setdefault(step, {})
            stop = (
                step > self.warmup_steps
                and len(others) >= self.min_jobs
                and loss > statistics.median(others.values())
            )
            others[job] = sums[-1] / step
            return f"early stopping at step {step}" if stop else None

        def _forget(self, job):
            self._sums.pop(job, None)
            for averages in self._averages.values():
                averages.pop(job, None)

    assert_same_decisions(
        MedianStoppingRule(maximize=False),
        Plain(maximize=False),
        random.Random(4),
        reports=3000,
        jobs=60,
        forget=0.03,
        value=lambda rng: rng.choice([rng.random()] * 30 + [0.5] * 5 + [math.inf, math.nan]),
        stops=100,
    )


def test_hyperband_rungs_decide_as_a_plain_count_over_every_value():
    """A rung's values are kept sorted (a count over every value at each rung made a long
    tuning job quadratic); the decisions are those of the plain count, ties to the earlier."""
    import random

    class Plain(HyperbandRungs):
        def _judge(self, job, number, config, step, loss):
            if step not in self.rungs:
                return None
            bracket, rung = self.bracket(number), self.rungs.index(step)
            if rung < bracket:
                return None
            values = self._values.setdefault((bracket, rung), [])
            values.append((job, loss))
            keep = max(1, len(values) // self.eta)
            better = sum(v <= loss for _, v in values[:-1])
            return None if better < keep else f"early stopping at step {step}"

        def _forget(self, job):
            for key, values in self._values.items():
                self._values[key] = [(j, v) for j, v in values if j != job]

    assert_same_decisions(
        HyperbandRungs(False, 1, 27),
        Plain(False, 1, 27),
        random.Random(7),
        reports=6000,
        jobs=300,
        forget=0.01,
        value=lambda rng: rng.choice([round(rng.random(), 2)] * 30 + [math.inf]),  # ties too
        stops=50,
    )


def assert_same_decisions(
    fast, plain, rng, reports: int, jobs: int, forget: float, value, stops: int
) -> None:
    """``reports`` random reports (and forgets) to both rules give the same decisions, and
    more than ``stops`` stops."""
    steps: dict[int, int] = {}
    stopped = 0
    for _ in range(reports):
        number = rng.randrange(1, jobs)
        job = f"job-{number}"
        if rng.random() < forget:
            fast.forget(job)
            plain.forget(job)
            steps.pop(number, None)
            continue
        steps[number] = steps.get(number, 0) + 1
        loss = value(rng)
        got = fast.report(job, number, {}, steps[number], loss)
        assert got == plain.report(job, number, {}, steps[number], loss)
        stopped += got is not None
    assert stopped > stops
