"""bench/model_tuning.py runs (tiny) so it cannot rot: real CV fits, its printed table checked."""

from __future__ import annotations

import re

import pytest

from bench.model_tuning import PROBLEMS, main


def test_tiny_run_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    contenders = ["ours-bayesian", "optuna-tpe", "random"]
    problems = ["tree-wine", "knn-wine"]
    tiny = ["--seeds", "1", "--rounds", "2", "--batch", "2"]
    main(["--problems", *problems, "--contenders", *contenders, *tiny])
    out = capsys.readouterr().out
    assert "seeds 0-0, 2 rounds of batch 2 (4 evaluations)" in out
    row = re.compile(r"^  (\S+) +(-?\d+\.\d) \+- +(\d+\.\d) \[ *(-?\d+\.\d) - +(-?\d+\.\d)\]")
    for problem in problems:
        block = out.split(f"\n{problem}: ")[1].split("\n\n")[0]
        rows = {m[1]: m for m in map(row.match, block.splitlines()) if m}
        assert sorted(rows) == sorted(contenders), block
        for m in rows.values():
            mean, low, high = float(m[2]), float(m[4]), float(m[5])
            assert low <= mean <= high <= 100.0
            assert float(m[3]) == 0.0  # one seed: no spread
        assert max(float(m[2]) for m in rows.values()) == 100.0  # the best run sets 100
        assert "winner" in block
        assert re.search(r"ours-bayesian >= random within the spread: (yes|NO)", block)
    overall = out.split("\noverall")[1]
    for contender in contenders:
        m = re.search(rf"^{contender} +(-?\d+\.\d) +(\d\.\d\d) +\d+\.\d +\d+\.\d$", overall, re.M)
        assert m, overall
        assert float(m[1]) <= 100.0 and 0.0 <= float(m[2]) <= len(problems)
    wins = re.findall(r"^\S+ +-?\d+\.\d +(\d\.\d\d)", overall, re.M)
    assert sum(map(float, wins)) == pytest.approx(len(problems), abs=0.02)
    assert re.search(r"^ranking: ours-bayesian|^ranking: optuna-tpe|^ranking: random", out, re.M)
    assert re.search(r"on \d of 2 problems", out)


def test_every_problem_is_deterministic_and_cached() -> None:
    problem = PROBLEMS["tree-cancer"]
    config = {
        "max_depth": 3,
        "min_samples_leaf": 5,
        "min_impurity_decrease": 0.0,
        "criterion": "gini",
        "max_features": 1.0,
    }
    first = problem.loss(config)
    problem.cache.clear()
    assert problem.loss(config) == first and 0.0 < first < 0.2
    assert len(problem.cache) == 1
