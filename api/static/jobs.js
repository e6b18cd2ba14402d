// The tuning jobs page: filters, newest first, paged; refreshed every few seconds.

import { fmtObjective, api, badge, el, fmtNumber, fmtTime, nav, poll, clearError } from "./common.js";

const PAGE = 25;
const state = { offset: 0, next: null, selected: new Set() };
const $ = (id) => document.getElementById(id);

function query() {
  const q = new URLSearchParams({ limit: PAGE, offset: state.offset });
  if ($("status").value) q.set("status", $("status").value);
  if ($("name").value.trim()) q.set("name", $("name").value.trim());
  return q;
}

function progress(p) {
  const max = p.max_jobs || Math.max(1, p.total);
  const bar = el("span", { className: "bar" }, el("span"));
  bar.firstChild.style.width = Math.min(100, (100 * p.ended) / max) + "%";
  return el("td", {}, bar, `${p.ended} / ${p.running} / ${p.max_jobs ?? "–"}`);
}

function row(job) {
  const box = el("input", {
    type: "checkbox",
    checked: state.selected.has(job.name),
    title: "select for comparison",
    onchange: (e) => {
      if (e.target.checked) state.selected.add(job.name);
      else state.selected.delete(job.name);
      $("compare").disabled = state.selected.size === 0;
    },
  });
  return el(
    "tr",
    { dataset: { name: job.name } },
    el("td", {}, box),
    el("td", {}, el("a", { href: "/ui/tuning-jobs/" + encodeURIComponent(job.name) }, job.name)),
    el("td", { title: job.status_reason || "" }, badge(job.status)),
    el("td", {}, job.strategy || "–"),
    progress(job.progress),
    el("td", { className: "num" }, fmtObjective(job.best_objective)),
    el("td", {}, fmtTime(job.created_at)),
  );
}

async function refresh() {
  const page = await api("/dashboard/tuning-jobs?" + query());
  clearError();
  state.next = page.next_offset;
  $("rows").replaceChildren(...page.items.map(row));
  if (!page.items.length) {
    $("rows").append(el("tr", {}, el("td", { colSpan: 7, className: "muted" }, "No tuning jobs.")));
  }
  $("prev").disabled = state.offset === 0;
  $("next").disabled = state.next === null;
  $("page").textContent = page.items.length
    ? `${state.offset + 1}–${state.offset + page.items.length}` : "";
  $("updated").textContent = "updated " + new Date().toLocaleTimeString();
  document.body.dataset.loaded = "1";
}

nav("tuning-jobs");
let typing = null;
$("status").addEventListener("change", () => { state.offset = 0; refresh(); });
$("name").addEventListener("input", () => {
  clearTimeout(typing);
  typing = setTimeout(() => { state.offset = 0; refresh(); }, 250);
});
$("prev").addEventListener("click", () => { state.offset = Math.max(0, state.offset - PAGE); refresh(); });
$("next").addEventListener("click", () => { if (state.next !== null) { state.offset = state.next; refresh(); } });
$("compare").addEventListener("click", () => {
  const q = new URLSearchParams();
  for (const n of state.selected) q.append("names", n);
  location.assign("/ui/compare?" + q);
});
poll(refresh, 5000);
