// Compare tuning jobs: the comparison report's best-so-far curves and arm table, live.

import {
  fmtObjective, api, badge, el, fmtNumber, fmtSeconds, nav, poll, clearError, showError,
} from "./common.js";
import { PALETTE, lineChart } from "./charts.js";

const TERMINAL = new Set(["Completed", "Stopped", "Failed"]);
const $ = (id) => document.getElementById(id);
const chosen = new Set(new URLSearchParams(location.search).getAll("names"));
let data = null;

async function pickList() {
  const q = new URLSearchParams({ limit: 200 });
  if ($("filter").value.trim()) q.set("name", $("filter").value.trim());
  const page = await api("/dashboard/tuning-jobs?" + q);
  $("picklist").replaceChildren(...page.items.map((job) => el("label", {},
    el("input", {
      type: "checkbox", checked: chosen.has(job.name), value: job.name,
      onchange: (e) => (e.target.checked ? chosen.add(job.name) : chosen.delete(job.name)),
    }),
    el("span", {}, job.name), badge(job.status),
    el("span", { className: "muted" }, `${job.strategy} · ${job.objective.type} ${job.objective.metric}`
      + (job.best_objective !== null ? ` · best ${fmtObjective(job.best_objective)}` : "")),
  )));
}

function draw() {
  const key = $("curve-x").value;
  const arms = data.arms.map((a) => a.arm);
  const series = [];
  for (const [k, arm] of arms.entries()) {
    for (const run of data.curves[arm]) {
      series.push({ x: run.map((p) => p[key]), y: run.map((p) => p.best), step: true,
        color: PALETTE[k % PALETTE.length], width: 2 });
    }
  }
  const labels = { jobs: "training jobs ended", seconds: "seconds since each run began",
    compute_seconds: "training-seconds" };
  lineChart($("curves"), series, { xLabel: labels[key], yLabel: data.objective.metric, height: 320 });
  $("legend").replaceChildren(...arms.map((arm, k) => {
    const swatch = el("i");
    swatch.style.background = PALETTE[k % PALETTE.length];
    return el("span", { dataset: { arm } }, swatch, arm);
  }));
}

function table() {
  $("arms").replaceChildren(...data.arms.map((a) => el("tr", {},
    el("td", {}, a.arm), el("td", {}, a.strategy || "–"),
    el("td", {}, ...a.runs.map((r) => el("span", {},
      el("a", { href: "/ui/tuning-jobs/" + encodeURIComponent(r) }, r), " ",
      badge(data.statuses[r]), " "))),
    el("td", { className: "num" }, fmtObjective(a.best_median)),
    el("td", { className: "num" }, fmtObjective(a.best_overall)),
    el("td", { className: "num" }, fmtNumber(a.jobs_to_best_median)),
    el("td", { className: "num" }, fmtSeconds(a.wall_seconds_median)),
    el("td", { className: "num" }, `${fmtSeconds(a.compute_hours * 3600)} (${a.compute_unit.replace("-hours", "")})`),
    el("td", { className: "num" }, a.completed),
    el("td", { className: "num" }, a.failed),
    el("td", { className: "num" }, a.stopped),
  )));
}

// fANOVA per arm (GET /dashboard/compare?importance=true): asked for with the button, once,
// since it takes seconds; the arm's reason stands in for figures it has none for.
let selection = 0; // counts the Compare clicks: an answer for an earlier selection is dropped

async function importance() {
  const q = new URLSearchParams({ importance: "true" });
  for (const n of data ? Object.keys(data.statuses) : chosen) q.append("names", n); // as shown
  const asked = selection;
  $("importance-compute").disabled = true;
  $("importance-note").textContent = "computing…";
  try {
    const rows = (await api("/dashboard/compare?" + q)).importance;
    if (asked !== selection) return;
    const names = [...new Set(rows.flatMap((r) => Object.keys(r.importance || {})))];
    $("importance-head").replaceChildren(el("th", {}, "Arm"), el("th", { className: "num" }, "Jobs used"),
      ...names.map((n) => el("th", { className: "param" }, n)));
    $("importance-rows").replaceChildren(...rows.map((r) => el("tr", { dataset: { arm: r.arm } },
      el("td", {}, r.arm),
      el("td", { className: "num" }, r.jobs === r.of ? r.jobs : `${r.jobs} of ${r.of}`),
      ...(r.importance
        ? names.map((n) => share(r.importance[n]))
        : [el("td", { colSpan: Math.max(1, names.length), className: "muted" }, r.why)]),
    )));
    $("importance-table").classList.remove("hidden");
    $("importance-note").textContent = "computed " + new Date().toLocaleTimeString();
  } finally {
    $("importance-compute").disabled = false;
  }
}

function share(fraction) {
  if (fraction === undefined) return el("td", { className: "muted" }, "–");
  const bar = el("span", { className: "bar" }, el("span"));
  bar.firstChild.style.width = Math.round(100 * fraction) + "%";
  return el("td", {}, bar, Math.round(100 * fraction) + "%");
}

async function refresh() {
  const q = new URLSearchParams();
  for (const n of chosen) q.append("names", n);
  data = await api("/dashboard/compare?" + q);
  clearError();
  $("result").classList.remove("hidden");
  draw();
  table();
  $("updated").textContent = "updated " + new Date().toLocaleTimeString();
  document.body.dataset.loaded = "1";
}

function live() {
  return data !== null && Object.values(data.statuses).some((s) => !TERMINAL.has(s));
}

nav("compare");
let cancel = null;
let typing = null;
$("filter").addEventListener("input", () => {
  clearTimeout(typing);
  typing = setTimeout(pickList, 250);
});
$("apply").addEventListener("click", () => {
  const q = new URLSearchParams();
  for (const n of chosen) q.append("names", n);
  history.replaceState(null, "", "/ui/compare?" + q);
  if (cancel) cancel();
  data = null;
  selection += 1;
  $("importance-table").classList.add("hidden"); // it was for the jobs chosen before
  $("importance-note").textContent = "";
  if (chosen.size) cancel = poll(refresh, 5000, live);
});
$("curve-x").addEventListener("change", () => data && draw());
$("importance-compute").addEventListener("click", () => importance().catch((err) => {
  $("importance-note").textContent = "";
  showError(err);
}));
poll(pickList, 0, () => false);
if (chosen.size) cancel = poll(refresh, 5000, live);
