// One tuning job: live counters, best so far, objective against each hyperparameter, parallel
// coordinates, where early stopping can cut (GET .../fidelity), the training jobs (paged) and a
// training job's log followed live; and Stop.

import { fmtObjective, api, badge, el, fmtNumber, fmtSeconds, fmtTime, nav, poll, clearError, showError }
  from "./common.js";
import { PALETTE, lineChart, parallel, scatter } from "./charts.js";

const ROWS = 50;
const REFRESH_MS = 2000;
const LOG_MS = 1000;
const LOG_START = -65536; // the last 64 KiB of a long log first
const LOG_KEEP = 2_000_000; // characters of log kept in the page
const FIDELITY_MIN_JOBS = 6; // completed jobs before the agreement table means anything
const FIDELITY_MS = 30000; // while running, re-read the agreement at most this often
const TERMINAL = new Set(["Completed", "Stopped", "Failed"]);
const name = decodeURIComponent(location.pathname.split("/").pop());
const $ = (id) => document.getElementById(id);
const state = {
  data: null, drawn: null, rowsKey: null, page: 0, log: null, logRun: 0, stopArmed: null,
  missing: false, fidelityAt: null, fidelityTime: 0,
};
const started = performance.now();

function isTerminal() {
  return state.data !== null && TERMINAL.has(state.data.status);
}

function maximize() {
  return state.data.objective.type === "Maximize";
}

function ended(columns) {
  return columns.status.filter((s) => TERMINAL.has(s)).length;
}

function setText(id, text) {
  const node = $(id);
  if (node.textContent !== String(text)) node.textContent = text;
}

function counters(d) {
  const c = d.training_job_status_counters;
  const cols = d.columns;
  setText("c-progress", `${ended(cols)} / ${c.InProgress} / ${d.limits.max_jobs ?? "–"}`);
  setText("c-completed", c.Completed);
  setText("c-completed-sub", `${c.Pending} pending`);
  setText("c-failed", c.Failed);
  setText("c-failed-sub", d.failure_reasons.length ? `${d.failure_reasons.length} reason(s)` : "");
  setText("c-stopped", c.Stopped);
  setText("c-stopped-sub", d.stopped_early ? `${d.stopped_early} stopped early` : "");
  const best = d.best_training_job;
  setText("c-best", best ? fmtObjective(best.objective) : "–");
  setText("c-best-sub", best ? `${best.name}` : `${d.objective.type} ${d.objective.metric}`);
  const end = d.ended_at ?? d.now;
  setText("c-wall", fmtSeconds(end - d.created_at));
  setText("c-wall-sub", d.ended_at ? "ended " + fmtTime(d.ended_at) : "running");
  const compute = d.curve.compute_seconds.length ? d.curve.compute_seconds.at(-1) : 0;
  setText("c-compute", fmtSeconds(compute));
  setText("c-compute-sub", `${d.compute_unit}, ended jobs`);
}

function header(d) {
  setText("title", d.name);
  document.title = "tuner · " + d.name;
  $("status").replaceChildren(badge(d.status));
  $("status").title = d.status_reason || "";
  setText("subtitle", `${d.strategy} · ${d.objective.type} ${d.objective.metric} · created ` +
    `${fmtTime(d.created_at)}${d.status_reason ? " · " + d.status_reason : ""}`);
  const stop = $("stop");
  stop.disabled = TERMINAL.has(d.status) || d.status === "Stopping";
  if (stop.disabled) stop.textContent = d.status === "Stopping" ? "Stopping…" : "Stop";
}

function failures(d) {
  $("failures").classList.toggle("hidden", !d.failure_reasons.length);
  $("failure-rows").replaceChildren(...d.failure_reasons.map((g) => el("tr", {},
    el("td", { className: "num" }, g.count), el("td", { className: "reason" }, g.reason))));
}

/** Completed jobs' objectives in the order jobs ended (the x of the best-so-far curve). */
function endedOrder(cols) {
  const idx = [];
  for (let i = 0; i < cols.number.length; i++) if (cols.ended[i] !== null) idx.push(i);
  idx.sort((a, b) => cols.ended[a] - cols.ended[b]);
  return idx;
}

function bestChart(d) {
  const key = $("curve-x").value;
  const curve = d.curve;
  const x = curve[key];
  const series = [{ x, y: curve.best, color: PALETTE[0], step: true, width: 2.5 }];
  if (key === "jobs" || key === "seconds") {
    const order = endedOrder(d.columns);
    const each = order.map((i) => (d.columns.status[i] === "Completed" ? d.columns.objective[i] : null));
    const ex = key === "jobs" ? order.map((_, k) => k + 1) : order.map((i) => d.columns.ended[i]);
    series.unshift({ x: ex, y: each, color: PALETTE[1], dots: true, alpha: 0.5 });
  }
  const labels = { jobs: "training jobs ended", seconds: "seconds since the tuning job began",
    compute_seconds: `${d.compute_unit} training-seconds` };
  lineChart($("best"), series, { xLabel: labels[key], yLabel: d.objective.metric || "objective",
    height: 280, xIntegers: key === "jobs" });
}

/** A numeric range's [min_value, max_value] (the axis spans the search space), else null. */
function domainOf(range) {
  return range.type === "categorical" ? null : [range.min_value, range.max_value];
}

function kindOf(range) {
  if (range.type === "categorical") return "category";
  return range.scaling_type === "Logarithmic" ? "log" : "linear";
}

function scoreOf(d) {
  const cols = d.columns;
  const done = cols.objective.map((v, i) => (cols.status[i] === "Completed" ? v : null));
  const vals = done.filter((v) => v !== null);
  const lo = Math.min(...vals);
  const hi = Math.max(...vals);
  return done.map((v) => (v === null ? null
    : maximize() ? (v - lo) / (hi - lo || 1) : (hi - v) / (hi - lo || 1)));
}

function hyperCharts(d) {
  const box = $("scatter");
  const names = Object.keys(d.hyperparameter_ranges);
  if (box.children.length !== names.length) {
    box.replaceChildren(...names.map((n) => el("div", {}, el("canvas", { dataset: { param: n } }))));
  }
  const cols = d.columns;
  const y = cols.objective.map((v, i) => (cols.status[i] === "Completed" ? v : null));
  for (const canvas of box.querySelectorAll("canvas")) {
    const p = canvas.dataset.param;
    const range = d.hyperparameter_ranges[p];
    scatter(canvas, cols.hyperparameters[p], y, {
      xKind: kindOf(range), categories: range.values ? range.values.map(String) : null,
      domain: domainOf(range),
      xLabel: p + (range.scaling_type === "Logarithmic" ? " (log)" : ""),
      yLabel: d.objective.metric, maximize: maximize(),
    });
  }
}

function parallelChart(d) {
  const cols = d.columns;
  const score = scoreOf(d);
  const axes = Object.entries(d.hyperparameter_ranges).map(([p, range]) => ({
    name: p, values: cols.hyperparameters[p], kind: kindOf(range), domain: domainOf(range),
    categories: range.values ? range.values.map(String) : null,
  }));
  axes.push({ name: d.objective.metric, values: cols.objective.map((v, i) => (score[i] === null ? null : v)) });
  const n = score.filter((s) => s !== null).length;
  setText("parallel-note", n ? `${n} completed training jobs, coloured by objective (yellow: best)` : "no completed training job yet");
  parallel($("parallel"), axes, score, { height: 300 });
}

function jobRows(d) {
  const cols = d.columns;
  const params = Object.keys(d.hyperparameter_ranges);
  const head = ["#", "Training job", "Status", "Objective", "Steps", "Duration", "Queued",
    ...params, "Failure reason"];
  if ($("job-head").children.length !== head.length) {
    $("job-head").replaceChildren(...head.map((h, k) => el("th", {
      className: k === 0 || (k >= 3 && k < 7 + params.length) ? "num" : "" }, h)));
  }
  const want = $("job-status").value;
  let idx = cols.number.map((_, i) => i).filter((i) => !want || cols.status[i] === want);
  const order = $("job-order").value;
  if (order === "newest") idx.reverse();
  if (order === "best") {
    const sign = maximize() ? -1 : 1;
    idx = idx.filter((i) => cols.objective[i] !== null && cols.status[i] === "Completed")
      .sort((a, b) => sign * (cols.objective[a] - cols.objective[b]));
  }
  const pages = Math.max(1, Math.ceil(idx.length / ROWS));
  state.page = Math.min(state.page, pages - 1);
  $("job-prev").disabled = state.page === 0;
  $("job-next").disabled = state.page >= pages - 1;
  setText("job-page", `page ${state.page + 1} of ${pages} · ${idx.length} training jobs`);
  const shown = idx.slice(state.page * ROWS, (state.page + 1) * ROWS);
  const key = JSON.stringify([state.log, shown.map((i) => [cols.status[i], cols.objective[i],
    cols.steps[i], cols.duration[i]]), shown]);
  if (key === state.rowsKey) return;
  state.rowsKey = key;
  $("job-rows").replaceChildren(...shown.map((i) => el("tr", {
    className: "clickable" + (state.log === cols.name[i] ? " selected" : ""),
    dataset: { job: cols.name[i] },
    onclick: () => follow(cols.name[i]),
  },
  el("td", { className: "num" }, cols.number[i]),
  el("td", {}, cols.name[i]),
  el("td", {}, badge(cols.status[i])),
  el("td", { className: "num" }, fmtObjective(cols.objective[i])),
  el("td", { className: "num" }, cols.steps[i]),
  el("td", { className: "num" }, fmtSeconds(cols.duration[i])),
  el("td", { className: "num" }, fmtSeconds(cols.queued[i])),
  ...params.map((p) => el("td", { className: "num" }, fmtNumber(cols.hyperparameters[p][i]))),
  el("td", { className: "reason" }, cols.failure_reason[i] || ""),
  )));
}

/** How well each step ranks the completed jobs as they end (tuner fidelity): read again when
 * more jobs have completed, at most every FIDELITY_MS while the tuning job runs. */
async function fidelity(d) {
  const completed = d.training_job_status_counters.Completed;
  const due = isTerminal() || performance.now() - state.fidelityTime >= FIDELITY_MS;
  if (completed < FIDELITY_MIN_JOBS || completed === state.fidelityAt || !due) return;
  state.fidelityAt = completed;
  state.fidelityTime = performance.now();
  const f = await api(`/tuning-jobs/${encodeURIComponent(name)}/fidelity`);
  const panel = $("fidelity");
  panel.classList.toggle("hidden", !f.steps.length);
  setText("fidelity-note", `${f.completed_jobs} jobs that ran to the end`);
  setText("fidelity-eta", `1/${f.eta}`);
  const k = f.suggested_min_resource;
  setText("fidelity-suggestion", k !== null
    ? `From step ${k} these jobs already rank about as they end: a first rung there ` +
      `(Hyperband's min_resource: ${k}) would keep most of the eventual best. Rule: ${f.rule}.`
    : "No step ranks these jobs as they end yet: early stopping would mostly stop the eventual " +
      `winners (or too few jobs have ended). Rule: ${f.rule}.`);
  panel.dataset.suggested = k ?? "";
  $("fidelity-rows").replaceChildren(...f.steps.map((r) => el("tr", {
    className: r.step === k ? "selected" : "" },
  el("td", { className: "num" }, r.step),
  el("td", { className: "num" }, r.jobs),
  el("td", { className: "num" }, r.spearman === null ? "–" : r.spearman.toFixed(2)),
  el("td", { className: "num" }, r.best_kept === null ? "–" : r.best_kept.toFixed(2)),
  )));
}

function draw(force = false) {
  const d = state.data;
  const signature = `${d.curve.jobs.length}/${d.columns.number.length}/${$("curve-x").value}`;
  if (force || signature !== state.drawn) {
    bestChart(d);
    hyperCharts(d);
    parallelChart(d);
    state.drawn = signature;
  }
}

async function refresh() {
  const t0 = performance.now();
  let d;
  try {
    d = await api(`/tuning-jobs/${encodeURIComponent(name)}/trials`);
  } catch (err) {
    state.missing = err.message.startsWith("404");  // no such tuning job: stop asking
    throw err;
  }
  const t1 = performance.now();
  clearError();
  state.data = d;
  header(d);
  counters(d);
  failures(d);
  jobRows(d);
  draw();
  fidelity(d).catch(showError);
  if (!document.body.dataset.loaded) {
    document.body.dataset.fetchMs = Math.round(t1 - t0);
    document.body.dataset.renderMs = Math.round(performance.now() - t1);
    document.body.dataset.loadMs = Math.round(performance.now());
    document.body.dataset.sinceScriptMs = Math.round(performance.now() - started);
    document.body.dataset.loaded = "1";
  }
  document.body.dataset.refreshMs = Math.round(performance.now() - t0);
  document.body.dataset.status = d.status;
}

/** Follow one training job's log: chunks from a byte offset until the job has ended. */
async function follow(job) {
  const run = ++state.logRun;
  state.log = job;
  $("log-panel").classList.remove("hidden");
  setText("log-name", job);
  const pre = $("log");
  pre.textContent = "";
  for (const tr of $("job-rows").children) tr.classList.toggle("selected", tr.dataset.job === job);
  let offset = LOG_START;
  while (run === state.logRun) {
    let chunk;
    try {
      chunk = await api(`/training-jobs/${encodeURIComponent(job)}/log-chunk?offset=${offset}`);
    } catch (err) {
      showError(err);
      await new Promise((r) => setTimeout(r, LOG_MS * 3));
      continue;
    }
    if (run !== state.logRun) return;
    if (offset < 0 && chunk.offset > 0) pre.append(`… (the first ${chunk.offset} bytes are left out)\n`);
    const atBottom = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
    if (chunk.text) pre.append(chunk.text);
    if (pre.textContent.length > LOG_KEEP) {  // keep the page light: drop the oldest output
      pre.textContent = "… (earlier output dropped)\n" + pre.textContent.slice(-LOG_KEEP / 2);
    }
    if (atBottom) pre.scrollTop = pre.scrollHeight;
    offset = chunk.next_offset;
    const done = chunk.ended && chunk.next_offset >= chunk.size;
    setText("log-state", done ? `${chunk.status}: the log is complete` : `${chunk.status}: following…`);
    $("log-panel").dataset.state = done ? "complete" : "following";
    if (done) return;
    if (chunk.next_offset >= chunk.size) await new Promise((r) => setTimeout(r, LOG_MS));
  }
}

async function stop() {
  const button = $("stop");
  if (!state.stopArmed) {
    button.textContent = "Really stop?";
    state.stopArmed = setTimeout(() => {
      state.stopArmed = null;
      if (!button.disabled) button.textContent = "Stop";
    }, 5000);
    return;
  }
  clearTimeout(state.stopArmed);
  state.stopArmed = null;
  button.disabled = true;
  button.textContent = "Stopping…";
  try {
    await api(`/tuning-jobs/${encodeURIComponent(name)}/stop`, { method: "POST" });
    await refresh();
  } catch (err) {
    showError(err);
  }
}

nav("");
$("legend-best").style.background = PALETTE[0];
$("legend-each").style.background = PALETTE[1];
$("stop").addEventListener("click", stop);
$("curve-x").addEventListener("change", () => state.data && draw(true));
$("job-status").addEventListener("change", () => { state.page = 0; state.data && jobRows(state.data); });
$("job-order").addEventListener("change", () => { state.page = 0; state.data && jobRows(state.data); });
$("job-prev").addEventListener("click", () => { state.page--; jobRows(state.data); });
$("job-next").addEventListener("click", () => { state.page++; jobRows(state.data); });
let resizing = null;
window.addEventListener("resize", () => {
  clearTimeout(resizing);
  resizing = setTimeout(() => state.data && draw(true), 200);
});
// Every 2 s, or less often when a refresh is slow (a large tuning job on a busy service).
poll(refresh, (took) => Math.max(REFRESH_MS, 3 * took), () => !isTerminal() && !state.missing);
