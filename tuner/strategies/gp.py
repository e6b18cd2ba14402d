"""Bayesian optimisation on the unit cube: the Bayesian strategy's ``native`` engine.

Contract: ``GPSearch.tell(x, loss)`` records a result (a point of the unit cube, a finite loss
to minimise); ``ask(n, pending)`` returns ``n`` points, spread away from each other and from
``pending`` (points still being evaluated). The same generator state and the same results give
the same points.

- The first ``n_initial_points`` points (counting pending ones) are a scrambled Sobol sequence,
  and so is every suggestion while all modelled results (own, and prior ones while they are
  modelled) tie: a model of identical losses
  is flat, and expected improvement on it chases the uncertainty into the corners of the cube
  (on a 2-D square told one loss throughout, 43-73% of coordinates fell within 0.02 of an edge,
  against 4% for uniform points). Once two losses differ the model takes over.
- Model (``gaussian_process.py``): Matern 5/2 with one length scale per dimension, MAP
  hyperparameters, each fit starting from the previous one (and, every few fits, also from the
  prior's mode). Losses beyond the median plus three robust deviations (scaled median
  absolute deviation) are compressed logarithmically, so a few diverged jobs do not flatten the
  differences among the good ones; then they are centred on their median and scaled by their
  standard deviation, so unexplored regions are predicted to be typical rather than better
  than typical.
  Past ``model_points`` observations the model keeps the best third and a random rest, and the
  hyperparameters are fitted on at most ``fit_points`` of those, so one suggestion stays well
  under a second at 1,000 observations.
- Acquisition: log expected improvement (Ament et al., "Unexpected improvements to expected
  improvement", NeurIPS 2023), maximised over Sobol points plus perturbations of the best
  observations scaled by the fitted length scales, then refined by rounds of smaller
  perturbations around the best candidates. Every second model-based suggestion is local
  (``LOCAL_OF``), two of every three where nothing is snapped (``LOCAL_OF_CONTINUOUS``: every
  range continuous): it minimises the lower confidence bound ``mean - std`` inside a box
  around the best observation, half a length scale wide in each dimension (a trust region, as
  in TuRBO: Eriksson et al., NeurIPS 2019). That makes the search converge inside the basin it
  has found, which expected improvement alone does slowly, while the other steps keep
  exploring. Two local steps of three refined Hartmann-6 faster but cost the flat
  decision-tree problems of ``bench/model_tuning.py``, whose integer ranges make plateaus a
  trust region cannot leave; on its continuous problems they did not cost
  (docs/benchmarks/optimizers.md). A trust-region step with no admissible candidate (all
  measured, busy or in an avoided basin) is made globally instead.
- Restarts (as TuRBO restarts a collapsed trust region, Eriksson et al., NeurIPS 2019): a
  search has converged once its last ``RESTART_WINDOW`` results improved its best by less than
  ``RESTART_TOLERANCE`` times the distance from its median loss to its best, after at least
  ``RESTART_MIN`` results of its own (and ``RESTART_BATCHES`` of the largest batch asked for).
  Then a new search begins: ``RESTART_POINTS`` Sobol points, then a model fitted afresh on the
  new search's results and on the converged searches' worst quarter (above the
  ``RESTART_KEEP_WORSE`` quantile of their losses). The converged searches' results stay
  recorded (their best stays the best), but their good ones are no longer modelled, so a run
  caught in a local basin gets a fresh attempt instead of refining the basin it knows, while
  their bad ones keep it from spending evaluations where nothing was found (on Hartmann-6,
  sequentially, runs ending in a local basin: 52 of 160 without restarts, 25 with a fresh
  search modelling only its own results, 17 with the worst quarter kept;
  ``docs/benchmarks/optimizers.md``). The basin a search converged in is then avoided: a GP
  is fitted on that search's results alone, and the later searches' Sobol points and
  candidates stay outside the ellipsoid of radius ``BASIN_RADIUS`` around its best, measured in
  that model's length scales and in its categories (``categories``: the one-hot slices of
  categorical ranges; another category is another basin, however near in length scales: a
  search stalled at one category of the best numbers could otherwise never try the others),
  until a later result beats its best (without it a fresh search
  fell back into the basin it left through its first Sobol points, far in the cube but near in
  the length scales of the inputs the function hardly depends on; Hartmann-6 runs ending in a
  local basin fell from 29 of 280 to 14, and from 16 of 120 to 9 on held-out seeds,
  docs/benchmarks/optimizers.md). Results told before the
  search began (a warm start's, ``inherited``) belong to the first search but do not count
  towards its minimum. Which results begin a search depends only on the sequence of results and
  the batch size, so replaying them gives the same searches.
- ``exploit_next``: that many model-based suggestions (set after a warm start from exact
  observations of the same objective) come first, each minimising the predicted mean inside
  the trust region: the model's best bet near the best result so far, with no exploration
  bonus (``EXPLOIT_BETA``).
- Prior results (``add_prior``: a related problem's, e.g. a TransferLearning parent's) join the
  model as extra points, their losses scaled on their own (centred and divided as above), so
  only their shape is trusted, never their level; own results are scaled on their own too once
  there are ``OWN_SCALE_AFTER``, before that with the prior's median and deviation. They count
  towards ``n_initial_points``; the fitted noise grows where prior and own results disagree.
  Once there are ``prior_until`` own results (``n_initial_points``, at least twice the
  dimensions plus two), the prior is left out: from then on only own results are modelled.
- Integer and categorical coordinates (``snap``: the Bayesian strategy passes the space's
  ``snap`` unless every range is continuous): every candidate is moved to the point of the
  configuration it decodes to before it is scored, as Garrido-Merchan and Hernandez-Lobato
  transform inputs ("Dealing with categorical and integer-valued variables in Bayesian
  optimization with Gaussian processes", Neurocomputing 2020), and configurations already
  measured are left out (Sobol points skip them too). Scored on the continuous cube, 18-25 of
  50 suggestions on a small integer space decoded to a measured configuration (mostly the
  trust region's best), which the strategy then replaced by random ones.
- Batches and pending points: each chosen point is added to the model with a lie for its loss
  before the next one is chosen, with the hyperparameters kept. For expected improvement the
  lie is a constant (the best, mean or worst scaled loss: constant liar, Ginsbourger et al.,
  2010); in the trust region it is the predicted mean, which shrinks only the uncertainty
  (as GP-BUCB does: Desautels et al., JMLR 2014). No suggestion comes within ``BUSY_GAP`` of
  a busy point.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.spatial import cKDTree
from scipy.stats import qmc
from threadpoolctl import threadpool_limits

from tuner.strategies.gaussian_process import GaussianProcess, Prior, log_expected_improvement

SOBOL_CANDIDATES = 512
LOCAL_STARTS = 8  # best observations (then best candidates) to perturb
LOCAL_SAMPLES = 48  # perturbations per start and round
REFINE_ROUNDS = 8
LOCAL_OF = 2  # of every LOCAL_OF model-based suggestions, all but the first are local
LOCAL_OF_CONTINUOUS = 3  # the same where nothing is snapped (every range continuous)
TRUST_REGION = 0.5  # half-width of the trust region, in length scales
FIRST_FIT_ITERATIONS = 200
WARM_FIT_ITERATIONS = 50
FRESH_START_EVERY = 5  # fits that also start from the prior's mode
PRIOR = Prior()
LOCAL_BETA = 1.0  # the trust region's acquisition: -(mean - LOCAL_BETA * std)
EXPLOIT_BETA = 0.0  # the same for the ``exploit_next`` suggestions: the predicted mean alone
BUSY_GAP = 2e-3  # no suggestion nearer than this to a busy point (unit cube distance)
SAME_POINT = 1e-9  # a snapped candidate this near a measured point is that configuration
SOBOL_DRAWS = 64  # Sobol points drawn at most for one space-filling suggestion (see there)
OUTLIER_MADS = 3.0  # losses beyond median + this many (normal-scaled) MADs are compressed
LOSS_LIMIT = 1e150  # losses are held within +-this: their squares (a variance) stay finite
OWN_SCALE_AFTER = 3  # own results scaled on their own from this many on (with a prior)
# A search has converged when its last RESTART_WINDOW results improved its best by less than
# RESTART_TOLERANCE times the distance from its median loss to its best, after at least
# RESTART_MIN results of its own and RESTART_BATCHES batches of the largest size asked for.
RESTART_WINDOW = 14
RESTART_TOLERANCE = 0.003
RESTART_MIN = 30
RESTART_BATCHES = 6
RESTART_POINTS = 5  # Sobol points that open a restarted search
RESTART_KEEP_WORSE = 0.75  # converged searches' results above this quantile stay modelled
BASIN_RADIUS = 1.0  # a converged search's basin: this many length scales around its best


@dataclass(frozen=True)
class Basin:
    """Where a converged search ended: its best point and loss, the length scales of a model of
    its results alone, and the index of the first result told after it converged."""

    centre: np.ndarray
    scales: np.ndarray
    loss: float
    after: int
    categories: tuple[slice, ...] = ()

    def holds(self, points: np.ndarray) -> np.ndarray:
        """Which of ``points`` (rows) lie within ``BASIN_RADIUS`` length scales of the centre
        and share its value of every categorical range (``categories``: one-hot slices)."""
        inside = np.sum(((points - self.centre) / self.scales) ** 2, axis=1) < BASIN_RADIUS**2
        for sl in self.categories:
            inside &= np.argmax(points[:, sl], axis=1) == np.argmax(self.centre[sl])
        return inside


def _inside(basins: list[Basin], points: np.ndarray) -> np.ndarray:
    """Which of ``points`` (rows) lie in any of ``basins``."""
    inside = np.zeros(len(points), dtype=bool)
    for basin in basins:
        inside |= basin.holds(points)
    return inside


class GPSearch:
    """Gaussian-process search over ``[0, 1]^dimensions`` (see the module contract)."""

    def __init__(
        self,
        dimensions: int,
        rng: np.random.Generator,
        n_initial_points: int,
        lie: str = "cl_min",
        model_points: int = 400,
        fit_points: int = 150,
        snap: Callable[[np.ndarray], np.ndarray] | None = None,
        categories: Sequence[slice] = (),
    ) -> None:
        self.dimensions = dimensions
        self.snap = snap
        self.categories = tuple(categories)
        self.local_of = LOCAL_OF if snap is not None else LOCAL_OF_CONTINUOUS
        self.rng = rng
        self.n_initial_points = n_initial_points
        self.lie = lie
        self.model_points = model_points
        self.fit_points = fit_points
        self.x: list[np.ndarray] = []
        self.y: list[float] = []
        self.prior_x: list[np.ndarray] = []
        self.prior_y: list[float] = []
        self.prior_until = max(n_initial_points, 2 * (dimensions + 1))
        self._theta: np.ndarray | None = None  # the last fit's hyperparameters
        self._fits = 0
        self._model_asks = 0
        self.exploit_next = 0  # model-based suggestions to make by exploitation first
        self._sobol = qmc.Sobol(dimensions, scramble=True, seed=rng)
        self.inherited = 0  # results told before the search began (a warm start's), see restarts
        self._since = 0  # own results before this index belong to converged searches
        self._scanned = 0  # results the restart rule has looked at
        self._batch = 1  # the largest batch asked for (pending points included)
        self.restarts = 0
        self.basins: list[Basin] = []  # one per restart, see the contract
        self.avoided: list[Basin] = []  # the basins not yet beaten, as of the current ask

    def tell(self, x: np.ndarray, loss: float) -> None:
        self.x.append(np.asarray(x, dtype=float))
        self.y.append(float(loss))

    def add_prior(self, x: np.ndarray, loss: float) -> None:
        """A result of a related problem (see the module contract)."""
        self.prior_x.append(np.asarray(x, dtype=float))
        self.prior_y.append(float(loss))

    def ask(self, n: int, pending: list[np.ndarray]) -> list[np.ndarray]:
        # One BLAS thread: at these matrix sizes (up to a few hundred) threads only add
        # synchronisation; OpenBLAS with 2 threads made a likelihood evaluation at 150
        # points 15x slower than with one on the 2-core development machine.
        with threadpool_limits(1, user_api="blas"):
            return self._ask(n, pending)

    def _ask(self, n: int, pending: list[np.ndarray]) -> list[np.ndarray]:
        busy = [np.asarray(p, dtype=float) for p in pending]
        out: list[np.ndarray] = []
        model: tuple[GaussianProcess, np.ndarray, np.ndarray] | None = None
        self._batch = max(self._batch, n + len(busy))
        self._scan_for_convergence()
        if self.basins:  # those not beaten since: the least loss told from each one's end on
            since = np.append(np.minimum.accumulate(np.array(self.y)[::-1])[::-1], np.inf)
            self.avoided = [b for b in self.basins if since[b.after] >= b.loss]
        # While every loss is tied the model is flat, and expected improvement on a flat model
        # chases its uncertainty into the corners: the Sobol sequence goes on instead.
        searched = self.y[self._since :]
        modelled = searched + (self.prior_y if self._prior_modelled() else [])
        tied = len(set(modelled)) < 2
        for _ in range(n):
            if self._since:
                opening = len(searched) + len(busy) < RESTART_POINTS
            else:
                opening = len(self.y) + len(self.prior_y) + len(busy) < self.n_initial_points
            if opening or tied:
                point = self._space_filling(busy)
            else:
                if model is None:
                    model = self._fit()
                point = self._maximise(*model, busy)
            out.append(point)
            busy.append(point)
        return out

    def _scan_for_convergence(self) -> None:
        """Move the search's start past every point at which it had converged (see the
        contract): a pure function of the sequence of results, so replaying them gives the same
        searches whenever the asks came."""
        while self._scanned < len(self.y):
            self._scanned += 1
            start = self._since
            losses = np.array(self.y[start : self._scanned])
            made = self._scanned - max(start, self.inherited)
            least = max(RESTART_MIN, RESTART_BATCHES * self._batch, RESTART_WINDOW + 1)
            if made < least:
                continue
            best = float(losses.min())
            gain = float(losses[:-RESTART_WINDOW].min()) - best
            if gain < RESTART_TOLERANCE * (float(np.median(losses)) - best):
                self.basins.append(self._basin(start, self._scanned))
                self._since, self._theta, self._model_asks = self._scanned, None, 0
                self.restarts += 1

    def _basin(self, start: int, end: int) -> Basin:
        """The basin of the search made of results ``start:end``, from a model of them alone
        (fitted on at most ``fit_points`` spread over their order: no random draw, so replaying
        the results gives the same basin)."""
        x, y = np.array(self.x[start:end]), self._scale(np.array(self.y[start:end]))
        fit = np.argsort(y, kind="stable")
        fit = fit[np.linspace(0, len(fit) - 1, min(len(fit), self.fit_points)).astype(int)]
        fresh = GaussianProcess.default_theta(self.dimensions, PRIOR)
        gp = GaussianProcess.fit(x[fit], y[fit], [fresh], PRIOR, FIRST_FIT_ITERATIONS)
        best = start + int(np.argmin(self.y[start:end]))
        return Basin(self.x[best], gp.length_scales, self.y[best], end, self.categories)

    def _sobol_points(self, n: int) -> np.ndarray:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # balance warnings for counts not a power of 2
            return self._sobol.random(n)

    def _space_filling(self, busy: list[np.ndarray]) -> np.ndarray:
        """The next Sobol point that lies in no avoided basin and, on a snapped space, whose
        configuration is neither measured nor busy (a small space soon repeats them), of at most
        ``SOBOL_DRAWS``; the last one drawn if none qualifies."""
        taken = np.array(self.x + busy).reshape(-1, self.dimensions)
        check_taken = self.snap is not None and len(taken) > 0
        point = self._snapped(self._sobol_points(1))[0]
        for _ in range(SOBOL_DRAWS if check_taken or self.avoided else 0):
            repeat = check_taken and np.abs(taken - point).max(axis=1).min() < SAME_POINT
            if not repeat and not _inside(self.avoided, point[None, :])[0]:
                break
            point = self._snapped(self._sobol_points(1))[0]
        return point

    def _snapped(self, points: np.ndarray) -> np.ndarray:
        """Candidates moved to the points of the configurations they stand for (see snap)."""
        return points if self.snap is None else self.snap(points)

    def _fit(self) -> tuple[GaussianProcess, np.ndarray, np.ndarray]:
        """The model of the results so far, with the points and scaled losses it holds."""
        x, y = self._points()
        x, y = self._subset(x, y, self.model_points)
        fit_x, fit_y = self._subset(x, y, self.fit_points)
        fresh = GaussianProcess.default_theta(self.dimensions, PRIOR)
        if self._theta is None:
            starts, iterations = [fresh], FIRST_FIT_ITERATIONS
        elif self._fits % FRESH_START_EVERY == 0:
            starts, iterations = [self._theta, fresh], WARM_FIT_ITERATIONS
        else:
            starts, iterations = [self._theta], WARM_FIT_ITERATIONS
        gp = GaussianProcess.fit(fit_x, fit_y, starts, PRIOR, iterations)
        self._theta = gp.theta
        self._fits += 1
        return gp.condition(x, y), x, y

    def _points(self) -> tuple[np.ndarray, np.ndarray]:
        """Own results and prior results, with their scaled losses (see the contract)."""
        own = np.array(self.y[self._since :])
        if self._since:  # restarted: the converged searches' worst results, then its own
            old = np.array(self.y[: self._since])
            worse = old > np.quantile(old, RESTART_KEEP_WORSE)
            x = np.vstack([np.array(self.x[: self._since])[worse], self.x[self._since :]])
            return x, self._scale(np.concatenate([old[worse], own]))
        if not self._prior_modelled():
            return np.array(self.x), self._scale(own)
        prior = np.array(self.prior_y)
        if len(own) >= OWN_SCALE_AFTER:
            own_scaled = self._scale(own)
        else:
            spread = float(prior.std()) or 1.0
            own_scaled = (own - float(np.median(prior))) / spread
        x = np.array(self.prior_x + self.x).reshape(-1, self.dimensions)
        return x, np.concatenate([self._scale(prior), own_scaled])

    def _prior_modelled(self) -> bool:
        """Prior results are modelled until ``prior_until`` own results, and never after a
        restart."""
        return bool(self.prior_y) and not self._since and len(self.y) < self.prior_until

    def _subset(self, x: np.ndarray, y: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
        """At most ``size`` observations: the best third and a random rest."""
        if len(y) <= size:
            return x, y
        order = np.argsort(y)
        best = order[: size // 3]
        rest = self.rng.choice(order[len(best) :], size - len(best), replace=False)
        chosen = np.sort(np.concatenate([best, rest]))
        return x[chosen], y[chosen]

    @staticmethod
    def _scale(losses: np.ndarray) -> np.ndarray:
        """Losses compressed logarithmically beyond ``OUTLIER_MADS`` robust deviations above the
        median (order kept), then centred on the median and divided by their standard
        deviation. Finite for any finite losses (1e308 once crashed the fit): they are first
        held within ``LOSS_LIMIT``."""
        losses = np.clip(losses, -LOSS_LIMIT, LOSS_LIMIT)
        median = float(np.median(losses))
        deviation = 1.4826 * float(np.median(np.abs(losses - median)))
        if deviation > 0.0:
            cap = median + OUTLIER_MADS * deviation
            over = np.maximum(losses - cap, 0.0)
            with np.errstate(over="ignore"):
                excess = over / deviation
            # log1p(excess), the same value, where the division overflowed
            logs = np.where(
                np.isfinite(excess),
                np.log1p(excess),
                np.log(deviation + over) - np.log(deviation),
            )
            losses = np.where(losses > cap, cap + deviation * logs, losses)
        spread = float(losses.std())
        if spread == 0.0:
            return np.zeros_like(losses)
        return (losses - np.median(losses)) / spread

    def _lie_value(self, y: np.ndarray) -> float:
        if self.lie == "cl_max":
            return float(y.max())
        if self.lie == "cl_mean":
            return float(y.mean())
        return float(y.min())

    def _maximise(
        self, gp: GaussianProcess, x: np.ndarray, y: np.ndarray, busy: list[np.ndarray]
    ) -> np.ndarray:
        """The best candidate once the ``busy`` points are told with a lie: by log expected
        improvement, or (all but one of every ``local_of`` calls) by lower confidence bound in
        the trust region (the ``exploit_next`` calls first: by predicted mean there). Where no
        candidate is admissible the step is made globally; where none is admissible there
        either, avoided basins are ignored."""
        self._model_asks += 1
        exploit = self.exploit_next > 0
        self.exploit_next -= exploit
        in_region = exploit or self._model_asks % self.local_of != 1
        beta = EXPLOIT_BETA if exploit else LOCAL_BETA
        point, value = self._best_candidate(gp, x, y, busy, in_region, beta, self.avoided)
        if value == -np.inf and in_region:
            point, value = self._best_candidate(gp, x, y, busy, False, beta, self.avoided)
        if value == -np.inf and self.avoided:
            point, value = self._best_candidate(gp, x, y, busy, False, beta, [])
        return point

    def _best_candidate(
        self,
        gp: GaussianProcess,
        x: np.ndarray,
        y: np.ndarray,
        busy: list[np.ndarray],
        in_region: bool,
        beta: float,
        avoid: list[Basin],
    ) -> tuple[np.ndarray, float]:
        """One step of ``_maximise``: its best candidate and score (-inf: none admissible)."""
        pending = np.array(busy)
        if busy:
            # In the trust region the busy points are told their predicted mean (kriging
            # believer): only the uncertainty around them shrinks, so the lower confidence bound
            # moves on instead of clustering where an optimistic lie lowered the mean.
            lies = gp.predict(pending)[0] if in_region else np.full(len(busy), self._lie_value(y))
            gp = GaussianProcess(gp.theta).condition(
                np.vstack([x, pending]), np.concatenate([y, lies])
            )
        best = float(y.min())
        scales = np.minimum(gp.length_scales, 1.0)
        low, high = np.zeros(self.dimensions), np.ones(self.dimensions)
        if in_region:
            centre = x[int(np.argmin(y))]
            width = np.clip(scales, 0.05, 0.5) * TRUST_REGION
            low, high = np.maximum(centre - width, 0.0), np.minimum(centre + width, 1.0)

        near_busy = cKDTree(pending) if busy else None
        # On a snapped space a candidate can be a configuration already measured, whose
        # predicted mean makes it the trust region's favourite: measured points are left out.
        measured = cKDTree(np.array(self.x)) if self.snap is not None and self.x else None

        def score(points: np.ndarray) -> np.ndarray:
            mean, std = gp.predict(points)
            if in_region:
                values = beta * std - mean
            else:
                values = log_expected_improvement(mean, np.maximum(std, 1e-9), best)
            if near_busy is not None:
                gaps = near_busy.query(points)[0]
                values = np.where(gaps < BUSY_GAP, -np.inf, values)
            if measured is not None:
                values = np.where(measured.query(points)[0] < SAME_POINT, -np.inf, values)
            if avoid:
                values = np.where(_inside(avoid, points), -np.inf, values)
            return values

        starts = x[np.argsort(y)[:LOCAL_STARTS]]
        spread = low + (high - low) * self._sobol_points(SOBOL_CANDIDATES)
        candidates = np.vstack([spread, self._around(starts, scales)])
        candidates = self._snapped(np.clip(candidates, low, high))
        values = score(candidates)
        for round_ in range(1, REFINE_ROUNDS + 1):
            top = candidates[np.argsort(-values)[:LOCAL_STARTS]]
            local = self._snapped(np.clip(self._around(top, scales * 0.5**round_), low, high))
            candidates = np.vstack([candidates, local])
            values = np.concatenate([values, score(local)])
        chosen = int(np.argmax(values))
        return candidates[chosen], float(values[chosen])

    def _around(self, centres: np.ndarray, scales: np.ndarray) -> np.ndarray:
        steps = self.rng.normal(size=(len(centres), LOCAL_SAMPLES, self.dimensions)) * scales
        return np.clip((centres[:, None, :] + steps).reshape(-1, self.dimensions), 0.0, 1.0)
