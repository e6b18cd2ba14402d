"""How much of an arm's objective variation each tuned hyperparameter accounts for: fANOVA
(Hutter, Hoos and Leyton-Brown, ICML 2014) as Optuna implements it (``get_param_importances``
with ``FanovaImportanceEvaluator``), on the arm's completed training jobs, its seeds pooled.

Each hyperparameter enters on the scale it was searched on: a numeric range as its unit
coordinate (``to_unit``: a Logarithmic range's log), a categorical one as its choice. The
importances of an arm sum to 1 over its tuned hyperparameters. Jobs stopped early are left out
(their values are of a shorter training), so a Hyperband arm is judged on the jobs that ran to
the end. An arm with fewer than ``MIN_JOBS`` completed jobs, or whose objective did not vary,
gets no figures, only the reason; a hyperparameter that took one value in every job it is
judged on explains none of it (0).

fANOVA's random forest grows faster than linearly with the jobs (about 2 s for 200 jobs and
120 s for 3,000 on the 2-core development machine), so an arm with more completed jobs than its
cap is judged on a seeded random sample of them (the same sample each time). The cap is
``MAX_JOBS``, or less in a report of more than five arms, which judges at most
``MAX_REPORT_JOBS`` jobs in all (``cap_for``): a 20-arm report that a client asks for does not
hold a worker for half a minute.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from typing import Any

import optuna
from optuna.distributions import BaseDistribution, CategoricalDistribution, FloatDistribution
from optuna.importance import FanovaImportanceEvaluator, get_param_importances

from tuner.errors import ValidationError
from tuner.parameters import CategoricalParameter, Parameter, parameter_from_dict

optuna.logging.set_verbosity(optuna.logging.WARNING)  # no "A new study created" per arm

MIN_JOBS = 10
MAX_JOBS = 200
MAX_REPORT_JOBS = 1_000
SEED = 0


def cap_for(arms: int) -> int:
    """The most completed jobs each of ``arms`` arms is judged on."""
    return min(MAX_JOBS, max(MIN_JOBS, MAX_REPORT_JOBS // max(1, arms)))


def arm_importance(
    ranges: Mapping[str, dict[str, Any]],
    points: list[dict[str, Any]],
    maximize: bool,
    cap: int = MAX_JOBS,
) -> dict[str, Any]:
    """``{"jobs": n used, "of": n completed, "importance": {name: fraction} | None, "why": ...}``
    for one arm: ``ranges`` its tuned ranges (as stored), ``points`` its completed jobs'
    ``{"objective", "hyperparameters"}``, judged on at most ``cap`` of them; a point whose
    value lies outside its range is left out. Ranges that cannot be read (a record written
    outside the tuner's checks) give the reason, not an error: the rest of the report stands."""
    row: dict[str, Any] = {"jobs": 0, "of": len(points), "importance": None, "why": None}
    try:
        parsed = {name: parameter_from_dict(spec) for name, spec in ranges.items()}
    except ValidationError as exc:
        return {**row, "why": f"its ranges cannot be read: {exc}"}
    usable = []
    for point in points:
        coded = _encoded(parsed, point["hyperparameters"])
        value = point["objective"]
        if coded is not None and isinstance(value, int | float) and math.isfinite(value):
            usable.append((coded, float(value)))
    completed = len(usable)
    if len(usable) > cap:
        usable = random.Random(SEED).sample(usable, cap)
    row.update(jobs=len(usable), of=completed)
    if len(usable) < MIN_JOBS:
        row["why"] = f"{len(usable)} completed jobs, fewer than the {MIN_JOBS} it needs"
    elif len({value for _, value in usable}) == 1:
        row["why"] = "the objective had one value in every job"
    elif not (varied := [n for n in parsed if len({c[n] for c, _ in usable}) > 1]):
        row["why"] = "every tuned hyperparameter had one value in every job"
    else:  # one that never varied explains nothing (fANOVA gave a lone one all of it)
        shares = _fanova({n: parsed[n] for n in varied}, usable, maximize)
        row["importance"] = {name: shares.get(name, 0.0) for name in parsed}
    return row


def _encoded(parsed: Mapping[str, Parameter], config: Mapping[str, Any]) -> dict[str, Any] | None:
    coded: dict[str, Any] = {}
    for name, rng in parsed.items():
        value = config.get(name)
        if value is None or not rng.contains(value):
            return None
        if isinstance(rng, CategoricalParameter):
            coded[name] = rng.index(value)
        else:
            coded[name] = rng.to_unit(value)
    return coded


def _distribution(rng: Parameter) -> BaseDistribution:
    if isinstance(rng, CategoricalParameter):
        return CategoricalDistribution(list(range(len(rng.values))))
    return FloatDistribution(0.0, 1.0)


def _fanova(
    parsed: Mapping[str, Parameter], usable: list[tuple[dict[str, Any], float]], maximize: bool
) -> dict[str, float]:
    distributions = {name: _distribution(rng) for name, rng in parsed.items()}
    study = optuna.create_study(direction="maximize" if maximize else "minimize")
    study.add_trials(
        [
            optuna.trial.create_trial(
                params={n: coded[n] for n in parsed}, distributions=distributions, value=value
            )
            for coded, value in usable
        ]
    )
    found = get_param_importances(study, evaluator=FanovaImportanceEvaluator(seed=SEED))
    return {name: float(found.get(name, 0.0)) for name in parsed}
