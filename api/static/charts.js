// Hand-written <canvas> charts: lines, scatter plots and parallel coordinates. Small on
// purpose: axes with round ticks, linear, logarithmic or categorical scales, no animation.

const INK = "#1d2330";
const MUTED = "#667085";
const GRID = "#e6e9ef";
export const PALETTE = ["#2f6fde", "#d9480f", "#2b8a3e", "#ae3ec9", "#e67700", "#0c8599",
  "#c2255c", "#5c7cfa", "#66a80f", "#495057"];

/** A canvas sized to its box at the device's pixel ratio; returns its 2D context. */
function prepare(canvas, height) {
  const width = canvas.parentElement.clientWidth || 600;
  const ratio = window.devicePixelRatio || 1;
  canvas.width = Math.round(width * ratio);
  canvas.height = Math.round(height * ratio);
  canvas.style.height = height + "px";
  const ctx = canvas.getContext("2d");
  ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  ctx.clearRect(0, 0, width, height);
  ctx.font = "11px system-ui, sans-serif";
  return { ctx, width, height };
}

function niceStep(span, count) {
  const raw = span / Math.max(1, count);
  const power = Math.pow(10, Math.floor(Math.log10(raw)));
  const m = raw / power;
  return (m >= 5 ? 10 : m >= 2 ? 5 : m >= 1 ? 2 : 1) * power;
}

function fmtTick(v) {
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-3 || a >= 1e5)) return v.toExponential(1);
  return String(Math.round(v * 1e6) / 1e6);
}

/** A scale: domain [lo, hi] onto range [r0, r1]; kind "linear", "log" or "category". */
export function scale(kind, values, r0, r1, categories = null) {
  if (kind === "category") {
    const cats = categories || [...new Set(values.map(String))];
    const step = (r1 - r0) / Math.max(1, cats.length);
    const f = (v) => r0 + step * (cats.indexOf(String(v)) + 0.5);
    f.ticks = () => cats.map((c) => [f(c), c]);
    return f;
  }
  const finite = values.filter((v) => typeof v === "number" && Number.isFinite(v)
    && (kind !== "log" || v > 0));
  let lo = finite.length ? Math.min(...finite) : 0;
  let hi = finite.length ? Math.max(...finite) : 1;
  if (kind === "log") {
    lo = Math.log10(lo);
    hi = Math.log10(hi);
  }
  if (hi === lo) {
    const half = Math.abs(lo) * 0.05 || 0.5;
    hi += half;
    lo -= half;
  }
  const pad = (hi - lo) * 0.04;
  lo -= pad;
  hi += pad;
  const t = kind === "log" ? (v) => Math.log10(v) : (v) => v;
  const f = (v) => r0 + ((t(v) - lo) / (hi - lo)) * (r1 - r0);
  f.ticks = (count = 5) => {
    let step = kind === "log" ? Math.max(1, Math.round(niceStep(hi - lo, count))) :
      niceStep(hi - lo, count);
    if (f.integers) step = Math.max(1, step);
    const out = [];
    for (let v = Math.ceil(lo / step) * step; v <= hi + 1e-12; v += step) {
      const value = kind === "log" ? Math.pow(10, v) : v;
      out.push([f(value), fmtTick(value)]);
    }
    return out;
  };
  return f;
}

function min(values) {
  let m = Infinity;
  for (const v of values) if (v < m) m = v;
  return m;
}

function max(values) {
  let m = -Infinity;
  for (const v of values) if (v > m) m = v;
  return m;
}

function axes(ctx, box, xs, ys, xLabel, yLabel) {
  ctx.strokeStyle = GRID;
  ctx.fillStyle = MUTED;
  ctx.lineWidth = 1;
  ctx.textAlign = "center";
  ctx.textBaseline = "top";
  for (const [px, label] of xs.ticks(6)) {
    ctx.beginPath();
    ctx.moveTo(px, box.top);
    ctx.lineTo(px, box.bottom);
    ctx.stroke();
    ctx.fillText(label, px, box.bottom + 4);
  }
  ctx.textAlign = "right";
  ctx.textBaseline = "middle";
  for (const [py, label] of ys.ticks(5)) {
    ctx.beginPath();
    ctx.moveTo(box.left, py);
    ctx.lineTo(box.right, py);
    ctx.stroke();
    ctx.fillText(label, box.left - 5, py);
  }
  ctx.strokeStyle = INK;
  ctx.strokeRect(box.left, box.top, box.right - box.left, box.bottom - box.top);
  ctx.fillStyle = INK;
  ctx.textAlign = "center";
  ctx.textBaseline = "bottom";
  ctx.fillText(xLabel, (box.left + box.right) / 2, box.bottom + 32);
  ctx.save();
  ctx.translate(12, (box.top + box.bottom) / 2);
  ctx.rotate(-Math.PI / 2);
  ctx.textBaseline = "middle";
  ctx.fillText(yLabel, 0, 0);
  ctx.restore();
}

function frame(width, height) {
  return { left: 58, right: width - 12, top: 10, bottom: height - 38 };
}

/**
 * Lines (and dots): series = [{x: [...], y: [...], color, step, dots, width}]; nulls are gaps.
 * Options: xLabel, yLabel, height, xKind ("linear" | "log"), xIntegers (ticks at whole numbers).
 */
export function lineChart(canvas, series, options = {}) {
  const { ctx, width, height } = prepare(canvas, options.height || 260);
  const box = frame(width, height);
  const allX = series.flatMap((s) => s.x).filter((v) => v !== null);
  const allY = series.flatMap((s) => s.y).filter((v) => v !== null);
  if (!allY.length) {
    ctx.fillStyle = MUTED;
    ctx.textAlign = "center";
    ctx.fillText(options.empty || "no results yet", width / 2, height / 2);
    return false;
  }
  const xs = scale(options.xKind || "linear", [min(allX), max(allX)], box.left, box.right);
  if (options.xIntegers) xs.integers = true;
  const ys = scale("linear", [min(allY), max(allY)], box.bottom, box.top);
  axes(ctx, box, xs, ys, options.xLabel || "", options.yLabel || "");
  ctx.save();
  ctx.beginPath();
  ctx.rect(box.left, box.top, box.right - box.left, box.bottom - box.top);
  ctx.clip();
  for (const s of series) {
    ctx.strokeStyle = s.color || PALETTE[0];
    ctx.fillStyle = s.color || PALETTE[0];
    if (s.dots) {
      ctx.globalAlpha = s.alpha ?? 0.6;
      for (let i = 0; i < s.x.length; i++) {
        if (s.y[i] === null || s.x[i] === null) continue;
        ctx.beginPath();
        ctx.arc(xs(s.x[i]), ys(s.y[i]), 2.5, 0, 2 * Math.PI);
        ctx.fill();
      }
      ctx.globalAlpha = 1;
      continue;
    }
    ctx.lineWidth = s.width || 2;
    ctx.beginPath();
    let pen = false;
    let lastY = null;
    for (let i = 0; i < s.x.length; i++) {
      if (s.y[i] === null || s.x[i] === null) {
        pen = false;
        continue;
      }
      const px = xs(s.x[i]);
      const py = ys(s.y[i]);
      if (!pen) ctx.moveTo(px, py);
      else if (s.step) {
        ctx.lineTo(px, lastY);
        ctx.lineTo(px, py);
      } else ctx.lineTo(px, py);
      pen = true;
      lastY = py;
    }
    ctx.stroke();
  }
  ctx.restore();
  return true;
}

/** Objective (y) against one hyperparameter (x): points coloured by their objective. */
export function scatter(canvas, x, y, options = {}) {
  const { ctx, width, height } = prepare(canvas, options.height || 220);
  const box = frame(width, height);
  const keep = [];
  for (let i = 0; i < x.length; i++) if (x[i] !== null && y[i] !== null) keep.push(i);
  if (!keep.length) {
    ctx.fillStyle = MUTED;
    ctx.textAlign = "center";
    ctx.fillText("no completed training job yet", width / 2, height / 2);
    return;
  }
  const kx = options.xKind || "linear";
  const xv = keep.map((i) => x[i]);
  const yv = keep.map((i) => y[i]);
  const xs = scale(kx, kx === "category" ? xv : options.domain || [min(xv), max(xv)], box.left,
    box.right, options.categories);
  const ys = scale("linear", [min(yv), max(yv)], box.bottom, box.top);
  axes(ctx, box, xs, ys, options.xLabel || "", options.yLabel || "");
  const lo = min(yv);
  const hi = max(yv);
  const jitter = kx === "category" ? 0.25 * (box.right - box.left) / Math.max(1,
    (options.categories || [...new Set(xv.map(String))]).length) : 0;
  keep.forEach((i, k) => {
    const t = options.maximize === false ? (hi - yv[k]) / (hi - lo || 1) : (yv[k] - lo) / (hi - lo || 1);
    ctx.fillStyle = colour(t);
    const dx = jitter ? (((i * 2654435761) % 1000) / 1000 - 0.5) * jitter : 0;
    ctx.beginPath();
    ctx.arc(xs(xv[k]) + dx, ys(yv[k]), 2.6, 0, 2 * Math.PI);
    ctx.fill();
  });
}

/**
 * Parallel coordinates: axes = [{name, values, kind, categories, domain}], one line per index;
 * ``score`` (0 worst .. 1 best, null to leave a line out) colours the lines, best on top.
 */
export function parallel(canvas, axesList, score, options = {}) {
  const { ctx, width, height } = prepare(canvas, options.height || 300);
  const top = 22;
  const bottom = height - 24;
  const left = 50;
  const right = width - 60;
  const step = (right - left) / Math.max(1, axesList.length - 1);
  const scales = axesList.map((a) => {
    const vals = a.values.filter((v) => v !== null);
    const domain = a.domain || [min(vals), max(vals)];
    return scale(a.kind || "linear", a.kind === "category" ? vals : domain, bottom, top,
      a.categories);
  });
  const order = [];
  for (let i = 0; i < score.length; i++) if (score[i] !== null) order.push(i);
  order.sort((a, b) => score[a] - score[b]);
  ctx.lineWidth = 1;
  ctx.globalAlpha = order.length > 1000 ? 0.25 : 0.6;
  for (const i of order) {
    ctx.strokeStyle = colour(score[i]);
    ctx.beginPath();
    let pen = false;
    axesList.forEach((a, k) => {
      const v = a.values[i];
      if (v === null || v === undefined) {
        pen = false;
        return;
      }
      const px = left + k * step;
      const py = scales[k](v);
      if (pen) ctx.lineTo(px, py);
      else ctx.moveTo(px, py);
      pen = true;
    });
    ctx.stroke();
  }
  ctx.globalAlpha = 1;
  axesList.forEach((a, k) => {
    const px = left + k * step;
    ctx.strokeStyle = INK;
    ctx.beginPath();
    ctx.moveTo(px, top);
    ctx.lineTo(px, bottom);
    ctx.stroke();
    ctx.fillStyle = INK;
    ctx.textAlign = "center";
    ctx.textBaseline = "bottom";
    ctx.fillText(a.name, px, top - 6);
    ctx.textAlign = "left";
    ctx.textBaseline = "middle";
    ctx.fillStyle = MUTED;
    for (const [py, label] of scales[k].ticks(4)) {
      ctx.fillText(label, px + 4, py);
    }
  });
}

/** 0..1 onto a dark purple (worst) to yellow (best) ramp, viridis-like. */
export function colour(t) {
  const stops = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
  const x = Math.min(1, Math.max(0, t)) * (stops.length - 1);
  const i = Math.min(stops.length - 2, Math.floor(x));
  const f = x - i;
  const c = stops[i].map((v, k) => Math.round(v + (stops[i + 1][k] - v) * f));
  return `rgb(${c[0]},${c[1]},${c[2]})`;
}
