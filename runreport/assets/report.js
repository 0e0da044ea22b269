// cairn's run report: draws the page from the data cairn packed into it
// (gzipped JSON, base64, unpacked with the browser's DecompressionStream).
// Plain JavaScript, no library: the page works offline, from a file.
"use strict";

const COLORS = { ok: "#2e8540", cached: "#7a9cc6", failed: "#d0312d", skipped: "#b0b0b0", running: "#e6a100", interrupted: "#8a4fbf", planned: "#dddddd" };
const SVGNS = "http://www.w3.org/2000/svg";
const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const k in attrs || {}) {
    if (k === "text") e.textContent = attrs[k];
    else if (k === "class") e.className = attrs[k];
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), attrs[k]);
    else e.setAttribute(k, attrs[k]);
  }
  for (const c of kids) if (c != null) e.append(c);
  return e;
}

function svg(tag, attrs) {
  const e = document.createElementNS(SVGNS, tag);
  for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
  return e;
}

async function unpack(id, timings) {
  const node = $(id);
  if (!node) return null;
  const b64 = node.textContent.trim();
  let bytes;
  if (Uint8Array.fromBase64) bytes = Uint8Array.fromBase64(b64);
  else {
    const bin = atob(b64);
    bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  }
  if (timings) timings.decoded = performance.now();
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  const text = await new Response(stream).text();
  if (timings) { timings.inflated = performance.now(); timings.json_mib = text.length / 1048576; }
  return JSON.parse(text);
}

// Formatting: durations in seconds with 3 decimals, memory in MiB with 1.
function secs(x) { return x == null || x < 0 ? "-" : fixed(x, 3) + " s"; }
function mib(x) { return !x ? "-" : fixed(x, 1) + " MiB"; }

// fixed is x (>= 0) with d decimals, as cairn's command line writes it: to
// the nearest, and an exact tie to the even digit (19.25 MiB is "19.2 MiB"),
// where toFixed takes the larger one. toFixed(100) is x's exact decimal
// expansion for every x >= 2^-48.
function fixed(x, d) {
  const e = x.toFixed(100);
  const cut = e.indexOf(".") + (d > 0 ? 1 + d : 0);
  if (!/^\.?50*$/.test(e.slice(cut))) return x.toFixed(d);
  const kept = e.slice(0, cut);
  return (kept.charCodeAt(kept.length - 1) - 48) % 2 === 0 ? kept : x.toFixed(d);
}
function human(ms) {
  const s = ms / 1000;
  if (Math.abs(s) < 60) return s.toFixed(s < 10 ? 2 : 1) + "s";
  if (Math.abs(s) < 3600) return Math.floor(s / 60) + "m" + String(Math.round(s % 60)).padStart(2, "0") + "s";
  return Math.floor(s / 3600) + "h" + String(Math.floor((s % 3600) / 60)).padStart(2, "0") + "m";
}
function stamp(t0, ms) { return ms == null ? "-" : new Date(t0 + ms).toISOString().replace("T", " ").replace("Z", " UTC"); }

let D; // the page's data
const C = {}; // column index by name
// The node rows by column (the page carries them so: they parse fast):
// COL.address[i] is node i's address. row(i) is node i as a row, n[C.x].
const COL = {};
// column unpacks a column as the page carries it (runreport's column):
// its values; {fill, at, v}: one value but in the rows at; {dict, idx}.
function column(v, n) {
  if (Array.isArray(v)) return v;
  if (!v) return new Array(n).fill(null);
  if (v.dict) return v.idx.map((k) => v.dict[k]);
  const a = new Array(n).fill(v.fill);
  for (let k = 0; k < v.at.length; k++) a[v.at[k]] = v.v[k];
  return a;
}
function row(i) { const r = new Array(D.cols.length); for (const c of D.cols) r[C[c]] = COL[c][i]; return r; }
// The timeline's bars, 8 numbers each in one flat list: bar bi's field k
// is D.bars[bi * 8 + k] (node, lane, start, end, attempt, state, peak GPU,
// the attempt's own class: an index in D.classes).
const BW = 8;
function bar(bi) { return D.bars.slice(bi * BW, bi * BW + BW); }

async function main() {
  // How long each part took to draw, in ms since navigation began (for
  // the page's own benchmark, bench/out/report-100k.txt).
  const timings = { start: performance.now() };
  D = await unpack("cairn-data", timings);
  timings.unpacked = performance.now();
  D.cols.forEach((c, i) => (C[c] = i));
  for (const c of D.cols) COL[c] = column(D.nodes[c], D.count);
  timings.columns = performance.now();
  window.cairnReport = { data: D, ready: false, timings };
  for (const [name, f] of [["header", header], ["timeline", timeline], ["nodes", nodesTable], ["resources", resources], ["seed", seedViews], ["items", items]]) {
    f();
    timings[name] = performance.now();
  }
  window.cairnReport.ready = true;
  document.body.dataset.ready = "1";
}

// A node state as the page words it: "planned" is a node that did not
// start, as the header's counts say.
function stateLabel(s) { return s === "planned" ? "not started" : s; }

function badge(state) {
  return el("span", { class: "badge", style: "background:" + (COLORS[state] || "#555"), text: stateLabel(state) });
}

function header() {
  const r = D.run;
  const h = $("header");
  h.append(el("h1", {}, document.createTextNode((r.pipeline || "(pipeline unknown)") + " "), badge(r.state)));
  if (r.state === "running") h.append(el("div", { class: "warn", text: "This run is still going: the page shows it as of " + D.generated + "; reload to see it now (cairn apply --report rewrites it every few seconds)." }));
  // Interrupted: stopped (Ctrl-C, SIGTERM), it wrote its end record; killed
  // (kill -9, a crash), it has none.
  if (r.state === "interrupted") h.append(el("div", { class: "warn", id: "run-interrupted", text: r.end
    ? "This run was interrupted (Ctrl-C or SIGTERM) and ended: the nodes it stopped show as interrupted."
    : "This run ended without its end record (killed: kill -9, a crash, the machine went down): the page shows what its journal knows, up to its last record." }));
  if (r.damaged) h.append(el("div", { class: "warn", text: "The journal is not whole: " + r.damaged }));
  for (const n of r.notes || []) h.append(el("div", { class: "warn note", text: n }));
  const kv = el("dl", { class: "kv" });
  const add = (k, v, id) => { kv.append(el("dt", { text: k }), el("dd", id ? { text: v, id } : { text: v })); };
  add("run", r.id, "run-id");
  add("cairn", r.version || "(not journaled)");
  add("host", r.host || "(not journaled)");
  add("executor", r.executor || "local");
  if (r.gpus && r.gpus.length) add("GPUs", r.gpus.map((g) => g.index + ": " + (g.name || "?") + (g.memory_mib && !/GiB|GB/.test(g.name || "") ? " (" + (g.memory_mib / 1024).toFixed(0) + " GiB)" : "")).join(", "));
  const utc = (t) => new Date(t).toISOString().replace("T", " ").replace("Z", " UTC");
  add("started", r.start && !r.start.startsWith("0001") ? utc(r.start) : "unknown");
  add("ended", r.end ? utc(r.end) : (r.state === "running" ? "(running)" : "(no end record)"));
  add("duration", secs(r.duration_s), "run-duration");
  add("exit status", r.exit_status === -1 ? "(running)" : r.exit_status === -2 ? "(none: the run never ended)" : String(r.exit_status), "run-exit");
  if (r.message) add("message", r.message);
  h.append(kv);
  const c = r.counts;
  const counts = el("div", { class: "counts", id: "counts" });
  for (const [k, label] of [["ran", "ran"], ["cached", "cached"], ["failed", "failed"], ["skipped", "skipped"], ["running", "running"], ["interrupted", "interrupted"], ["planned", "not started"], ["failed_attempts", "failed attempts"]]) {
    if (c[k] || ["ran", "cached", "failed", "skipped"].includes(k)) counts.append(el("span", {}, el("b", { id: "count-" + k, text: String(c[k] || 0) }), document.createTextNode(" " + label)));
  }
  h.append(counts);
  if (r.vars && r.vars.length) {
    h.append(el("h3", { text: "Variables" }));
    const t = el("table", { class: "t", id: "vars" });
    for (const v of r.vars) t.append(el("tr", {}, el("th", { text: v.file ? "var-file" : v.name }), el("td", { text: v.value })));
    h.append(t, el("div", { class: "hint", text: "Sensitive variables are journaled as (sensitive); values from var-files are in their files." }));
  }
  if (r.command) h.append(el("h3", { text: "To run it again" }), el("pre", { id: "command", text: r.command }));
  // A sensitive variable's value is not journaled: the command reads it
  // from the environment, and the shell refuses to run it without.
  const secret = (r.vars || []).filter((v) => v.env);
  if (r.command && secret.length) h.append(el("div", { class: "warn", id: "command-sensitive", text: "Give the sensitive variables' values again (the journal keeps none): set " + secret.map((v) => v.env + " to the value of " + v.name).join(", ") + " before running it; without, the shell refuses to run it." }));
  if (D.trace) h.append(el("div", { class: "hint" }, document.createTextNode("One row per node attempt, for pandas or R: "), el("a", { href: D.trace, text: D.trace })));
}

// ---- timeline -------------------------------------------------------------

const LANE_H = 22, LABEL_W = 90, AXIS_H = 22;
// The timeline's view (ms since the run's start) and width: the GPU
// memory plots of the Resources section follow it (zoom and pan too).
const TL = { view: null, width: () => 900, hooks: [] };

function timeline() {
  const lg = $("legend");
  for (const s of D.states) lg.append(el("span", {}, el("i", { style: "background:" + COLORS[s] }), document.createTextNode(stateLabel(s))));
  const box = $("tl");
  if (!D.lanes.length) { box.append(el("div", { class: "hint", text: "No node of this run started: nothing to draw." })); box.style.cursor = "default"; return; }
  let end = Math.max(D.now, 1);
  for (let k = 3; k < D.bars.length; k += BW) if (D.bars[k] > end) end = D.bars[k];
  const view = { a: 0, b: end * 1.02 };
  TL.view = view;
  TL.width = width;
  // The bars come sorted by lane and start: a lane is a run of them.
  const byLane = D.lanes.map(() => ({ from: 0, to: 0 }));
  for (let bi = 0, n = D.bars.length / BW; bi < n; bi++) {
    const l = byLane[D.bars[bi * BW + 1]];
    if (l.to === 0) l.from = bi;
    l.to = bi + 1;
  }
  // A batch's waves: a band behind the GPU lanes, from the wave's first
  // start to its slowest variant's end.
  const bands = [];
  const laneOf = new Map(), index = new Map();
  if (D.batches && D.batches.length) {
    for (let k = 0; k < D.bars.length; k += BW) laneOf.set(D.bars[k], D.bars[k + 1]);
    COL.address.forEach((a, i) => index.set(a, i));
  }
  for (const b of D.batches || []) for (const wv of b.waves || []) {
    const lanes = wv.nodes.map((addr) => laneOf.get(index.get(addr))).filter((l) => l != null);
    if (!lanes.length) continue;
    bands.push({ a: Date.parse(wv.start) - D.t0, z: Date.parse(wv.end) - D.t0, l0: Math.min(...lanes), l1: Math.max(...lanes), id: b.id + "#" + wv.wave, label: b.stage + " wave " + wv.wave });
  }
  const devices = new Map((D.run.gpus || []).map((g) => ["gpu " + g.index, g]));
  const tip = $("tip");
  let drag = null;
  function width() { return Math.max(400, box.clientWidth || 900); }
  function draw() {
    const W = width(), H = AXIS_H + D.lanes.length * LANE_H + 4;
    const s = svg("svg", { width: W, height: H, id: "tlsvg" });
    const x = (ms) => LABEL_W + ((ms - view.a) / (view.b - view.a)) * (W - LABEL_W - 8);
    // axis
    const span = view.b - view.a;
    const step = niceStep(span / 8);
    for (let t = Math.ceil(view.a / step) * step; t <= view.b; t += step) {
      const px = x(t);
      s.append(svg("line", { x1: px, x2: px, y1: AXIS_H - 4, y2: H, stroke: "#eef0f2" }));
      const tx = svg("text", { x: px + 2, y: 14, "font-size": 11, fill: "#5f6b76", class: "tick" });
      tx.textContent = tickLabel(t, step, view.b);
      s.append(tx);
    }
    // A batch's waves: a band behind the GPU lanes, from the wave's first
    // start to its slowest variant's end.
    for (const w of bands) {
      if (w.z < view.a || w.a > view.b) continue;
      s.append(svg("rect", { x: x(w.a), y: AXIS_H + w.l0 * LANE_H, width: Math.max(1, x(w.z) - x(w.a)), height: (w.l1 - w.l0 + 1) * LANE_H, fill: "#efe9fb", stroke: "#b9a6e6", class: "wave", "data-wave": w.id }));
      const t = svg("text", { x: x(w.a) + 2, y: AXIS_H + w.l0 * LANE_H - 1, "font-size": 9, fill: "#6a55a8" });
      t.textContent = w.label;
      s.append(t);
    }
    D.lanes.forEach((name, li) => {
      const y = AXIS_H + li * LANE_H;
      if (li % 2) s.insertBefore(svg("rect", { x: 0, y, width: W, height: LANE_H, fill: "#f8f9fa" }), s.firstChild);
      const t = svg("text", { x: 4, y: y + 15, "font-size": 12, fill: "#1d2329", class: "lane", "data-lane": name });
      t.textContent = name;
      const dev = devices.get(name);
      if (dev) {
        // The device's name and memory: its memory beside the lane's
        // name, all of it on hover.
        if (dev.memory_mib) t.textContent += " · " + (dev.memory_mib / 1024).toFixed(0) + "G";
        const title = svg("title");
        title.textContent = name + ": " + (dev.name || "?") + (dev.memory_mib ? ", " + dev.memory_mib + " MiB" : "");
        t.append(title);
      }
      s.append(t);
      // Bars narrower than a pixel next to each other merge into one:
      // the page stays fast however many nodes the run has.
      let last = null;
      const B = D.bars;
      for (let bi = byLane[li].from; bi < byLane[li].to; bi++) {
        const o = bi * BW, b2 = B[o + 2], b3 = B[o + 3], st = B[o + 5];
        if (b3 < view.a || b2 > view.b) continue;
        const x0 = Math.max(LABEL_W, x(b2)), x1 = Math.min(W - 8, Math.max(x(b3), x0 + 1.5));
        if (last && last.state === st && x0 - last.x1 < 1 && x1 - x0 < 2) { last.x1 = Math.max(last.x1, x1); last.n++; continue; }
        if (last) flush(s, last, y, name);
        last = { x0, x1, state: st, bi, n: 1 };
      }
      if (last) flush(s, last, y, name);
    });
    box.replaceChildren(s);
    for (const f of TL.hooks) f();
  }
  function flush(s, r, y, lane) {
    const a = { x: r.x0, y: y + 3, width: Math.max(1, r.x1 - r.x0), height: LANE_H - 6, fill: COLORS[D.states[r.state]], rx: 2, class: "bar", "data-lane": lane };
    if (r.n === 1) {
      const node = row(D.bars[r.bi * BW]);
      a["data-bar"] = r.bi;
      a["data-node"] = node[C.address];
      a["data-state"] = D.states[r.state];
    } else a["data-merged"] = r.n;
    s.append(svg("rect", a));
  }
  draw();
  window.addEventListener("resize", draw);
  box.addEventListener("wheel", (ev) => {
    ev.preventDefault();
    const W = width(), f = Math.max(0, ev.offsetX - LABEL_W) / (W - LABEL_W - 8);
    const at = view.a + f * (view.b - view.a), k = ev.deltaY > 0 ? 1.25 : 0.8;
    const span = Math.max(20, (view.b - view.a) * k);
    view.a = at - f * span; view.b = view.a + span;
    draw();
  }, { passive: false });
  box.addEventListener("mousedown", (ev) => { drag = { x: ev.clientX, a: view.a, b: view.b }; box.style.cursor = "grabbing"; });
  window.addEventListener("mouseup", () => { drag = null; box.style.cursor = "grab"; });
  box.addEventListener("dblclick", () => { view.a = 0; view.b = end * 1.02; draw(); });
  box.addEventListener("mousemove", (ev) => {
    if (drag) {
      const d = ((ev.clientX - drag.x) / (width() - LABEL_W - 8)) * (drag.b - drag.a);
      view.a = drag.a - d; view.b = drag.b - d;
      draw();
      return;
    }
    const bi = ev.target.getAttribute && ev.target.getAttribute("data-bar");
    if (bi == null) { tip.style.display = "none"; return; }
    // The attempt's own outcome and class: a retried node's attempts may
    // have failed each its own way.
    const b = bar(+bi), n = row(b[0]), cls = D.classes[b[7]];
    tip.textContent = n[C.address] + "\n" + D.states[b[5]] + (cls ? " (" + cls + ")" : "") + ", attempt " + b[4] +
      "\n" + stamp(D.t0, b[2]) + " → " + stamp(D.t0, b[3]) + "  (" + ((b[3] - b[2]) / 1000).toFixed(3) + " s)" +
      "\nlane " + D.lanes[b[1]] + (n[C.wave] ? ", wave " + n[C.wave] : "") +
      "\npeak RSS " + mib(n[C.peak_rss]) + ", peak GPU " + mib(b[6]) + (n[C.reason] ? "\n" + n[C.reason] : "");
    tip.style.display = "block";
    tip.style.left = Math.min(ev.clientX + 12, window.innerWidth - 540) + "px";
    tip.style.top = ev.clientY + 14 + "px";
  });
  box.addEventListener("mouseleave", () => (tip.style.display = "none"));
  box.addEventListener("click", (ev) => {
    const bi = ev.target.getAttribute && ev.target.getAttribute("data-bar");
    if (bi != null) showDetail(D.bars[+bi * BW]);
  });
}

// tickLabel is the axis label of time t (ms, a multiple of step) on ticks
// step ms apart, on an axis that ends at end: in ms where the axis is under
// a second, else in seconds (minutes, hours) with as many decimals as the
// step needs, so that no two ticks read the same.
function tickLabel(t, step, end) {
  if (end < 1000) return t + " ms";
  const d = Math.max(0, Math.ceil(-Math.log10(step / 1000) - 1e-9));
  if (step >= 60000) return human(t);
  const s = (t % 60000) / 1000, m = Math.floor(t / 60000);
  if (m === 0) return s.toFixed(d) + "s";
  const sec = s.toFixed(d).padStart(d ? 3 + d : 2, "0") + "s";
  return m < 60 ? m + "m" + sec : Math.floor(m / 60) + "h" + String(m % 60).padStart(2, "0") + "m" + sec;
}

function niceStep(x) {
  const p = Math.pow(10, Math.floor(Math.log10(Math.max(x, 1))));
  for (const m of [1, 2, 5, 10]) if (m * p >= x) return m * p;
  return 10 * p;
}

// ---- nodes table ----------------------------------------------------------

const ROW_H = 24;
const TCOLS = [
  ["address", "address", "minmax(240px,3fr)"], ["kind", "kind", "90px"], ["state", "outcome", "120px"], ["reason", "plan reason", "minmax(160px,2fr)"],
  ["key", "key", "110px"], ["duration", "duration", "90px"], ["queue_wait", "queue wait", "90px"], ["peak_rss", "peak RSS", "90px"],
  ["peak_gpu", "peak GPU", "90px"], ["gpu_seconds", "GPU-s", "80px"], ["attempts", "attempts", "70px"], ["gpus", "GPUs", "60px"],
  ["job", "job", "110px"],
];
const NUMERIC = new Set(["duration", "queue_wait", "peak_rss", "peak_gpu", "gpu_seconds", "attempts"]);
let view = [], sortCol = null, sortAsc = true, selected = -1;

function cell(n, c) { // n: row(i)
  const v = n[C[c]];
  switch (c) {
    case "state": return stateLabel(v) + (n[C.class] ? " (" + n[C.class] + ")" : "");
    case "key": return v ? v.slice(0, 12) : "-";
    case "duration": return n[C.start] == null && v === 0 ? "-" : secs(v);
    case "queue_wait": return secs(v);
    case "peak_rss": case "peak_gpu": return mib(v);
    case "gpu_seconds": return v ? v.toFixed(3) : "-";
    case "attempts": return String(v);
    default: return v || (c === "kind" || c === "gpus" ? "-" : "");
  }
}

function nodesTable() {
  const table = $("table"), head = $("thead"), body = $("tbody"), spacer = $("tspacer");
  let drawn = "", hay = null;
  table.style.setProperty("--cols", TCOLS.map((c) => c[2]).join(" "));
  for (const [c, label] of TCOLS) {
    head.append(el("div", { "data-col": c, class: NUMERIC.has(c) ? "num" : "", text: label, title: "sort by " + label, onclick: () => sortBy(c) }));
  }
  const sf = $("statefilter");
  for (const s of D.states) sf.append(el("option", { value: s, text: stateLabel(s) }));
  let timer = null;
  $("filter").addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(applyFilter, 80); });
  sf.addEventListener("change", applyFilter);
  body.addEventListener("scroll", () => requestAnimationFrame(render));
  // The first failed node is opened: its log tail is what one looks for.
  applyFilter();
  const failed = COL.state.indexOf("failed");
  if (failed >= 0) showDetail(failed, true);

  function sortBy(c) {
    if (sortCol === c) sortAsc = !sortAsc; else { sortCol = c; sortAsc = !NUMERIC.has(c); }
    for (const d of head.children) d.className = (NUMERIC.has(d.dataset.col) ? "num " : "") + (d.dataset.col === sortCol ? "sorted" + (sortAsc ? " asc" : "") : "");
    doSort();
    render(true);
  }
  function doSort() {
    if (!sortCol) return;
    const col = COL[sortCol], dir = sortAsc ? 1 : -1;
    const num = NUMERIC.has(sortCol);
    view.sort((a, b) => {
      let x = col[a], y = col[b];
      if (num) return ((x ?? -1) - (y ?? -1)) * dir || a - b;
      x = x || ""; y = y || "";
      return (x < y ? -1 : x > y ? 1 : 0) * dir || a - b;
    });
  }
  function applyFilter() {
    const q = $("filter").value.trim().toLowerCase(), st = sf.value;
    const words = q ? q.split(/\s+/) : [];
    const fields = ["address", "kind", "reason", "class", "key", "state", "message", "job"].map((c) => COL[c]);
    if (words.length && !hay) {
      // Each node's searched text, made once, at the first search.
      hay = new Array(D.count);
      for (let i = 0; i < D.count; i++) {
        let h = "";
        for (const f of fields) if (f[i]) h += f[i] + " ";
        hay[i] = h.toLowerCase();
      }
    }
    view = [];
    const state = COL.state;
    for (let i = 0; i < D.count; i++) {
      if (st && state[i] !== st) continue;
      if (words.length && !words.every((w) => hay[i].includes(w))) continue;
      view.push(i);
    }
    doSort();
    $("shown").textContent = view.length + " of " + D.count + " nodes";
    body.scrollTop = 0;
    render(true);
  }
  function render(force) {
    spacer.style.height = view.length * ROW_H + "px";
    body.style.setProperty("--h", Math.max(72, view.length * ROW_H + 4) + "px");
    const top = body.scrollTop, h = body.clientHeight || 480;
    const from = Math.max(0, Math.floor(top / ROW_H) - 10), to = Math.min(view.length, Math.ceil((top + h) / ROW_H) + 10);
    const keyNow = from + ":" + to + ":" + view.length;
    if (!force && keyNow === drawn) return;
    drawn = keyNow;
    const rows = [];
    for (let k = from; k < to; k++) {
      const i = view[k], n = row(i);
      const r = el("div", { class: "row" + (i === selected ? " sel" : ""), "data-i": i, style: "top:" + k * ROW_H + "px" });
      for (const [c] of TCOLS) {
        const d = el("div", { class: (NUMERIC.has(c) ? "num " : "") + (c === "state" ? "st" : ""), "data-col": c, text: cell(n, c) });
        if (c === "state") d.style.color = COLORS[n[C.state]] === "#dddddd" ? "#888" : COLORS[n[C.state]];
        if (c === "reason" || c === "address") d.title = n[C[c]] || "";
        r.append(d);
      }
      r.addEventListener("click", () => showDetail(i));
      rows.push(r);
    }
    body.replaceChildren(spacer, ...rows);
  }
  window.cairnReport.table = { rows: () => view.length, filter: (q, st) => { $("filter").value = q || ""; sf.value = st || ""; applyFilter(); } };
}

let logs = null;
async function showDetail(i, quiet) {
  selected = i;
  for (const r of document.querySelectorAll(".row")) r.classList.toggle("sel", +r.dataset.i === i);
  const n = row(i), box = el("div", { class: "box", id: "detail-box", "data-node": n[C.address] });
  box.append(el("h3", {}, document.createTextNode(n[C.address] + " "), badge(n[C.state])));
  const kv = el("dl", { class: "kv" });
  const add = (k, v) => v != null && v !== "" && kv.append(el("dt", { text: k }), el("dd", { text: String(v) }));
  add("kind", n[C.kind]); add("class", n[C.class]); add("plan reason", n[C.reason]); add("key (prefix)", n[C.key]); add("message", n[C.message]);
  add("started", n[C.start] == null ? null : stamp(D.t0, n[C.start])); add("ended", n[C.end] == null ? null : stamp(D.t0, n[C.end]));
  add("duration", secs(n[C.duration])); add("queue wait", secs(n[C.queue_wait])); add("peak RSS", mib(n[C.peak_rss])); add("peak GPU memory", mib(n[C.peak_gpu]));
  add("GPU-seconds", n[C.gpu_seconds] ? n[C.gpu_seconds].toFixed(3) : null); add("attempts", n[C.attempts] + (n[C.retries] ? " (" + n[C.retries] + " retried)" : ""));
  add("GPUs", n[C.gpus]); add("wave", n[C.wave] || null); add("job", n[C.job]);
  box.append(kv);
  if (!logs) logs = (await unpack("cairn-logs")) || {};
  const t = logs[i];
  if (t) {
    if (t[0]) box.append(el("details", { open: "", class: "log", "data-stream": "stdout" }, el("summary", { text: "stdout (tail)" }), el("pre", { text: t[0] })));
    if (t[1]) box.append(el("details", { open: "", class: "log", "data-stream": "stderr" }, el("summary", { text: "stderr (tail)" }), el("pre", { text: t[1] })));
  } else box.append(el("div", { class: "hint", text: "No log output kept for this node." }));
  $("detail").replaceChildren(box);
  if (!quiet) box.scrollIntoView({ block: "nearest" });
}

// ---- resources ------------------------------------------------------------

function resources() {
  const res = $("res");
  // Per GPU: memory over time, from the samples (the event log's
  // gpu_memory series), on the timeline's time axis; without series (a
  // cluster job, an older cairn) each node's peak over its bar.
  const gpuLanes = D.lanes.map((l, i) => [l, i]).filter(([l]) => l.startsWith("gpu "));
  const series = D.gpumem || [];
  // Bars with a peak GPU memory, each as a list of its fields.
  const peaks = [];
  for (let bi = 0, n = D.bars.length / BW; bi < n; bi++) if (D.bars[bi * BW + 6] > 0) peaks.push(bar(bi));
  const withMem = series.length > 0 || peaks.length > 0;
  if (gpuLanes.length) {
    res.append(el("h3", { text: "GPU memory over time" }));
    if (!withMem) res.append(el("div", { class: "hint", text: "No node of this run reported GPU memory (simulated GPUs without reports, or no NVML)." }));
    else {
      res.append(el("div", { class: "hint", text: series.length ? "Each GPU's memory use from the 100 ms samples (each point the highest sample of its span), on the timeline's time axis: zoom and pan the timeline to follow." : "Each node's peak GPU memory over the time it held the GPU (the event log has no samples of this run)." }));
      const box = el("div", { id: "gpumem" });
      res.append(box);
      const drawMem = () => {
        const W = TL.width(), H = 96, view = TL.view || { a: 0, b: Math.max(D.now, 1) };
        const x = (ms) => LABEL_W + ((ms - view.a) / (view.b - view.a)) * (W - LABEL_W - 8);
        const plots = [];
        for (const [name, li] of gpuLanes) {
          const mine = series.filter((g) => g[0] === li);
          const bars = peaks.filter((b) => b[1] === li);
          let top = 1;
          for (const g of mine) for (let k = 1; k < g[3].length; k += 2) if (g[3][k] > top) top = g[3][k];
          if (!mine.length) for (const b of bars) if (b[6] > top) top = b[6];
          const s = svg("svg", { width: W, height: H, class: "plot gpumem", "data-gpu": name });
          const y = (v) => H - 6 - (v / top) * (H - 22);
          s.append(svg("line", { x1: LABEL_W, x2: W - 8, y1: y(0), y2: y(0), stroke: "#ccd" }));
          if (mine.length) {
            for (const g of mine) {
              const pts = g[3];
              let d = "";
              for (let k = 0; k < pts.length; k += 2) {
                const px = x(pts[k]), py = y(pts[k + 1]);
                d += k === 0 ? "M" + px + "," + y(0) + " L" + px + "," + py : " L" + px + "," + y(pts[k - 1]) + " L" + px + "," + py;
              }
              d += " L" + x(pts[pts.length - 2]) + "," + y(0);
              const node = g[1] >= 0 ? COL.address[g[1]] : "";
              const path = svg("path", { d, fill: "rgba(122,92,198,0.25)", stroke: "#7a5cc6", "stroke-width": 1.2, class: "memseries", "data-node": node, "data-attempt": g[2], "data-points": JSON.stringify(pts) });
              const title = svg("title"); title.textContent = node + " (attempt " + g[2] + ")"; path.append(title);
              s.append(path);
            }
          } else {
            for (const b of bars) s.append(svg("rect", { x: x(b[2]), y: y(b[6]), width: Math.max(1, x(b[3]) - x(b[2])), height: y(0) - y(b[6]), fill: "#7a5cc6", class: "mempeak" }));
          }
          const lbl = svg("text", { x: 4, y: 14, "font-size": 11 }); lbl.textContent = name; s.append(lbl);
          const l2 = svg("text", { x: 4, y: 28, "font-size": 10, fill: "#5f6b76" }); l2.textContent = "top " + top.toFixed(0) + " MiB"; s.append(l2);
          plots.push(s);
        }
        box.replaceChildren(...plots);
      };
      drawMem();
      TL.hooks.push(drawMem);
    }
  }
  res.append(el("h3", { text: "Time per stage" }));
  const t = el("table", { class: "t", id: "stages" });
  t.append(el("tr", {}, ...["stage", "nodes", "node-seconds", "GPU-seconds", ""].map((h) => el("th", { text: h }))));
  const topG = Math.max(1e-9, ...D.stages.map((s) => s.gpu_seconds));
  for (const s of D.stages) {
    const bar = el("div", { style: "height:10px;background:#7a5cc6;width:" + Math.round((s.gpu_seconds / topG) * 200) + "px" });
    t.append(el("tr", {}, el("td", { text: s.stage }), el("td", { class: "num", text: String(s.nodes) }), el("td", { class: "num", text: s.seconds.toFixed(3) }), el("td", { class: "num", text: s.gpu_seconds.toFixed(3) }), el("td", {}, bar)));
  }
  res.append(t);
  if (D.batches && D.batches.length) {
    res.append(el("h3", { text: "GPU batches and their waves" }));
    const w = el("table", { class: "t", id: "waves" });
    w.append(el("tr", {}, ...["batch", "state", "wave", "variants", "start", "end", "idle GPU-seconds (against the slowest variant)"].map((h) => el("th", { text: h }))));
    for (const b of D.batches) for (const wv of b.waves || []) {
      w.append(el("tr", {}, el("td", { text: b.id }), el("td", { text: b.state }), el("td", { class: "num", text: String(wv.wave) }), el("td", { text: wv.nodes.join(", ") }),
        el("td", { text: wv.start.replace("T", " ") }), el("td", { text: wv.end.replace("T", " ") }), el("td", { class: "num", text: wv.idle_gpu_seconds.toFixed(3) })));
    }
    res.append(w);
  }
}

// ---- the seed's tables and plots ------------------------------------------

function seedViews() {
  const box = $("artifacts");
  if (!D.artifacts || !D.artifacts.length) box.append(el("div", { class: "hint", text: "No node of this run wrote a table or plot (.md, .tsv, .svg outputs)." }));
  for (const a of D.artifacts || []) {
    box.append(el("h3", { text: a.path + " — " + a.node }));
    if (a.type === "svg") {
      // As an image: the plot's own markup cannot touch the page.
      const img = el("img", { class: "plot artifact-svg", alt: a.path, "data-path": a.path, src: "data:image/svg+xml;base64," + btoa(unescape(encodeURIComponent(a.svg))) });
      box.append(img);
    } else if (a.type === "table") {
      // A markdown file whole, in order: its tables, and the text around
      // them (a legend, a caveat) as written.
      for (const p of a.parts || [{ rows: a.rows }]) {
        if (!p.rows) { box.append(el("pre", { class: "artifact-text", "data-path": a.path, text: p.text })); continue; }
        const t = el("table", { class: "t artifact-table", "data-path": a.path });
        p.rows.forEach((r, i) => t.append(el("tr", {}, ...r.map((c) => el(i ? "td" : "th", { text: c })))));
        box.append(t);
      }
    } else if (a.type === "omitted") box.append(el("div", { class: "warn artifact-omitted", "data-path": a.path, text: a.text }));
    else box.append(el("pre", { text: a.text }));
  }
  attemptLedger();
  const ch = $("charges");
  if (D.charges && D.charges.length) {
    ch.append(el("h3", { text: "Rollout charge curves" }));
    ch.append(el("div", { class: "hint", text: "Rollouts charged to each job's budget over the run (journal's charged records); attempted and infrastructure failures from its counts." }));
    const grid = el("div", { class: "grid" });
    const end = Math.max(1, ...D.charges.map((c) => c.t[c.t.length - 1] || 0));
    for (const c of D.charges.slice(0, 60)) {
      const W = 300, H = 130, s = svg("svg", { width: W, height: H, class: "plot charge", "data-node": c.node });
      const top = Math.max(1, c.n[c.n.length - 1], c.attempted ? c.attempted[c.attempted.length - 1] : 0, c.budget || 0);
      const x = (t) => 34 + (t / end) * (W - 44), y = (v) => H - 30 - (v / top) * (H - 50);
      let d = "M" + x(0) + "," + y(0);
      c.t.forEach((t, i) => (d += " L" + x(t) + "," + y(i ? c.n[i - 1] : 0) + " L" + x(t) + "," + y(c.n[i])));
      s.append(svg("path", { d, fill: "none", stroke: "#24579e", "stroke-width": 1.5 }));
      // From the event log: attempted (dashed) and infrastructure
      // failures (red) beside what was charged.
      for (const [series, color, dash] of [[c.attempted, "#888", "4 3"], [c.infra_failures, "#d0312d", ""]]) {
        if (!series) continue;
        let p = "M" + x(0) + "," + y(0);
        c.t.forEach((t, i) => (p += " L" + x(t) + "," + y(i ? series[i - 1] : 0) + " L" + x(t) + "," + y(series[i])));
        s.append(svg("path", { d: p, fill: "none", stroke: color, "stroke-width": 1, "stroke-dasharray": dash, class: "series" }));
      }
      const t1 = svg("text", { x: 4, y: 12, "font-size": 10 }); t1.textContent = c.node.replace(/^stage\./, ""); s.append(t1);
      const k = c.counts || {};
      const t2 = svg("text", { x: 4, y: H - 8, "font-size": 10, fill: "#5f6b76" });
      const last = (a) => (a && a.length ? a[a.length - 1] : undefined);
      t2.textContent = "charged " + (k.charged ?? last(c.n)) + ", attempted " + (k.attempted ?? last(c.attempted) ?? "?") + ", infra failures " + (k.infra_failures ?? last(c.infra_failures) ?? "?") + (c.budget ? " of " + c.budget : "");
      s.append(t2);
      grid.append(s);
    }
    ch.append(grid);
    if (D.charges.length > 60) ch.append(el("div", { class: "hint", text: D.charges.length - 60 + " more charge curves not drawn." }));
  }
}

// A decision protocol's attempt ledger: every attempt of its slots, in the
// order they started (from the slot nodes' results).
function attemptLedger() {
  const L = D.ledger || [];
  if (!L.length) return;
  const box = $("ledger");
  const charged = L.filter((a) => a.charged).length, repl = L.filter((a) => a.replacement).length;
  box.append(el("h3", { text: "Attempt ledger" }));
  box.append(el("div", { class: "hint", id: "ledger-summary", text: L.length + " attempts of " + new Set(L.map((a) => a.slot)).size + " slots: " + charged + " charged, " + repl + " replacements counted under the cap on replacements (max_repair_allocations)" }));
  // Outcomes judged on simulated GPUs say so wherever they are shown.
  const sim = L.filter((a) => a.simulated).length;
  if (sim) box.append(el("div", { class: "warn", id: "ledger-simulated", text: "SIMULATED: " + sim + " of the " + L.length + " attempts ran on simulated GPUs: their peaks, and so their outcomes, are made up, not measurements." }));
  const t = el("table", { class: "t", id: "ledger-table" });
  t.append(el("tr", {}, ...["slot", "attempt", "outcome", "class", "charged", "under the repair cap", "started", "ended", "peak GPU", "GPUs"].map((h) => el("th", { text: h }))));
  const utc = (s) => (s ? s.replace("T", " ").replace(/\.\d+Z$|Z$/, "") : "-");
  for (const a of L) {
    t.append(el("tr", { "data-slot": a.slot, "data-attempt": a.attempt }, el("td", { text: a.slot }), el("td", { class: "num", text: String(a.attempt) }),
      el("td", { class: "outcome", text: a.state }), el("td", { class: "class", text: (a.class || "") + (a.setup_class ? " (" + a.setup_class + ")" : "") }),
      el("td", { class: "charged", text: a.charged ? "charged" : "not charged" }),
      el("td", { class: "cap", text: a.replacement ? "replacement: counted" : "initial allocation: not counted" }),
      el("td", { text: utc(a.started) }), el("td", { class: "ended", text: a.ended ? utc(a.ended) : a.end_unseen ? "not seen: cairn stopped while it ran" : "(never ended)" }), el("td", { class: "num", text: mib(a.peak_gpu_mib) }),
      el("td", { class: "gpus", text: a.simulated ? "SIMULATED" : "" })));
  }
  box.append(t);
}

// ---- items ----------------------------------------------------------------

function items() {
  const box = $("itemlist");
  if (!D.items || !D.items.length) { box.append(el("div", { class: "hint", text: "No evaluation of this run has per-item results in the cache." })); return; }
  for (const ref of D.items) {
    const n = row(ref.node);
    const out = el("div", {});
    const btn = el("button", { text: "show " + ref.count + " items", onclick: async () => { btn.disabled = true; drawItems(out, await unpack(ref.blob)); } });
    box.append(el("div", { class: "card", "data-node": n[C.address] }, el("b", { text: n[C.address] }), document.createTextNode(" " + ref.path + " "), btn, out));
  }
}

function drawItems(out, rows) {
  const scores = rows.map((r) => r[1]).filter((s) => typeof s === "number");
  let lo = Infinity, hi = -Infinity;
  for (const x of scores) { if (x < lo) lo = x; if (x > hi) hi = x; }
  const bins = 20, counts = new Array(bins).fill(0);
  for (const s of scores) counts[hi > lo ? Math.min(bins - 1, Math.floor(((s - lo) / (hi - lo)) * bins)) : 0]++;
  const W = 320, H = 100, s = svg("svg", { width: W, height: H, class: "plot" });
  const top = Math.max(1, ...counts);
  counts.forEach((c, i) => s.append(svg("rect", { x: 10 + i * ((W - 20) / bins), y: H - 16 - (c / top) * (H - 30), width: (W - 20) / bins - 1, height: (c / top) * (H - 30), fill: "#2e8540" })));
  // Without a scored item there is no range and no mean: said so, never
  // drawn as 0 or Infinity.
  const t = svg("text", { x: 10, y: H - 3, "font-size": 10, class: "score-summary" });
  t.textContent = scores.length ? "score " + lo + " … " + hi + ", mean " + (scores.reduce((a, b) => a + b, 0) / scores.length).toFixed(4) + " over " + scores.length
    : "no scored item: none of the " + rows.length + " items has a score (no range, no mean)";
  s.append(t);
  // Where each result came from: the item store, or asked of the model
  // in this run (the event log's items_from_store; "-" where the run does
  // not say: a node taken from the cache, an item not done).
  const ORIGIN = { store: "from the store", asked: "asked" };
  let fromStore = 0, asked = 0;
  for (const r of rows) { if (r[4] === "store") fromStore++; else if (r[4] === "asked") asked++; }
  const origins = el("div", { class: "hint origins", text: fromStore + asked ? fromStore + " from the item store, " + asked + " asked of the model in this run" : "This run does not say which results came from the item store (the node was taken from the cache, or an older cairn ran it)." });
  const table = el("table", { class: "t items" });
  table.append(el("tr", {}, ...["id", "score", "from the store or asked", "outputs", "error"].map((h) => el("th", { text: h }))));
  for (const r of rows.slice(0, 500)) table.append(el("tr", { "data-id": r[0], "data-origin": r[4] || "" }, el("td", { text: r[0] }), el("td", { class: "num", text: r[1] == null ? "-" : String(r[1]) }), el("td", { class: "origin", text: ORIGIN[r[4]] || "-" }), el("td", { class: "outputs", text: r[2] }), el("td", { text: r[3] || "" })));
  out.replaceChildren(s, origins, table);
  if (rows.length > 500) out.append(el("div", { class: "hint", text: "first 500 of " + rows.length + " items" }));
}

main().catch((e) => { console.error("cairn report: " + (e.stack || e.message)); document.body.dataset.ready = "error"; document.body.prepend(el("div", { class: "warn", text: "The report could not be drawn: " + e.message })); });
