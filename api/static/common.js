// Shared by every page: the token kept in sessionStorage, authorised calls, formatting.

const KEY = "tuner-token";

/** The stored token, or a redirect to the login page (which comes back here). */
export function token() {
  const value = sessionStorage.getItem(KEY);
  if (!value) {
    toLogin();
    throw new Error("not logged in");
  }
  return value;
}

export function saveToken(value) {
  sessionStorage.setItem(KEY, value);
}

export function logout() {
  sessionStorage.removeItem(KEY);
  toLogin();
}

function toLogin() {
  const next = location.pathname + location.search;
  location.assign("/ui/login?next=" + encodeURIComponent(next));
}

/** fetch() with the bearer token; JSON back; a 401 sends the user to the login page. */
export async function api(path, options = {}) {
  const headers = { ...(options.headers || {}), Authorization: "Bearer " + token() };
  const response = await fetch(path, { ...options, headers });
  if (response.status === 401) {
    sessionStorage.removeItem(KEY);
    toLogin();
    throw new Error("the token was refused");
  }
  if (!response.ok) {
    let detail = response.statusText;
    try {
      detail = JSON.stringify((await response.json()).detail);
    } catch (_) {
      /* not JSON */
    }
    throw new Error(`${response.status}: ${detail}`);
  }
  return response.json();
}

/** Create an element: el("td", {className: "num"}, "text", child, ...). */
export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === "dataset") Object.assign(node.dataset, v);
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node[k] = v;
  }
  for (const c of children) {
    if (c !== null && c !== undefined) node.append(c instanceof Node ? c : String(c));
  }
  return node;
}

export function badge(status) {
  return el("span", { className: "badge " + status }, status);
}

export const OBJECTIVE_DIGITS = 6; // 0.999998 must not read as 1, nor two close bests as a tie
const MAX_OBJECTIVE_DIGITS = 10;

// An objective: the fewest significant digits from OBJECTIVE_DIGITS up to 10 that read back as
// the same number (0.9999996 read as 1 at six), written as tuner.summary.objective_text writes
// it (Python's "%g": 123456.7 is "123457", not "1.23457e+5"), so the pages and the CLI agree.
export function fmtObjective(v) {
  if (typeof v !== "number" || !Number.isFinite(v)) return fmtNumber(v, OBJECTIVE_DIGITS);
  for (let d = OBJECTIVE_DIGITS; d < MAX_OBJECTIVE_DIGITS; d++) {
    if (Number(v.toPrecision(d)) === v) return formatG(v, d);
  }
  return formatG(v, MAX_OBJECTIVE_DIGITS);
}

// Python's f"{v:.{digits}g}" for a finite number: exponent form below 1e-4 and from
// 10**digits on (after rounding), trailing zeros dropped, a two-digit exponent at least. One
// difference: a value exactly halfway between two at `digits` digits (1234567890.5 at ten)
// JavaScript rounds away from zero, Python to even; fmtObjective meets it at ten digits only.
export function formatG(v, digits) {
  if (v === 0) return Object.is(v, -0) ? "-0" : "0";
  const [mantissa, power] = v.toExponential(digits - 1).split("e");
  const exponent = Number(power);
  const bare = (text) => (text.includes(".") ? text.replace(/\.?0+$/, "") : text);
  if (exponent < -4 || exponent >= digits) {
    const size = String(Math.abs(exponent)).padStart(2, "0");
    return bare(mantissa) + "e" + (exponent < 0 ? "-" : "+") + size;
  }
  return bare(v.toFixed(Math.max(0, digits - 1 - exponent)));
}

export function fmtNumber(v, digits = 4) {
  if (v === null || v === undefined || Number.isNaN(v)) return "–";
  if (typeof v !== "number") return String(v);
  if (Number.isInteger(v)) return String(v);
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-3 || a >= 1e5)) return v.toExponential(digits - 1);
  const text = v.toPrecision(digits);
  // Trailing zeros go only after a decimal point: 1200.4 to 4 digits is "1200", not "12".
  return text.includes(".") ? text.replace(/\.?0+$/, "") : text;
}

export function fmtSeconds(s) {
  if (s === null || s === undefined) return "–";
  if (s < 60) return s.toFixed(1) + " s";
  if (s < 3600) return Math.floor(s / 60) + " min " + Math.round(s % 60) + " s";
  return Math.floor(s / 3600) + " h " + Math.round((s % 3600) / 60) + " min";
}

export function fmtTime(epoch) {
  if (!epoch) return "–";
  return new Date(epoch * 1000).toLocaleString();
}

/** The top bar: links to the pages and a log-out button. */
export function nav(here) {
  const links = [
    ["tuning-jobs", "/ui/tuning-jobs", "Tuning jobs"],
    ["compare", "/ui/compare", "Compare"],
  ];
  const bar = el(
    "header",
    { className: "top" },
    el("span", { className: "brand" }, "tuner"),
    ...links.map(([id, href, text]) => el("a", { href, className: id === here ? "here" : "" }, text)),
    el("span", { className: "spacer" }),
    el("button", { id: "logout", onclick: logout }, "Log out"),
  );
  document.body.prepend(bar);
}

/**
 * Run ``tick`` now and again ``ms`` after each run ends (a number, or a function of how long
 * the run took) while ``keepGoing()`` holds; never two at once.
 */
export function poll(tick, ms, keepGoing = () => true) {
  let timer = null;
  let stopped = false;
  const run = async () => {
    const began = performance.now();
    try {
      await tick();
    } catch (err) {
      showError(err);
    }
    const wait = typeof ms === "function" ? ms(performance.now() - began) : ms;
    if (!stopped && keepGoing()) timer = setTimeout(run, wait);
  };
  run();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

export function showError(err) {
  const box = document.getElementById("error");
  if (box) {
    box.textContent = String(err.message || err);
    box.classList.remove("hidden");
  }
}

export function clearError() {
  const box = document.getElementById("error");
  if (box) box.classList.add("hidden");
}
