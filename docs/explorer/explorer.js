// The attention explorer: draws the weights the lessons wrote (data.js,
// window.MHA_DATA, one dataset per lesson call of Lesson::explore() or
// explore_layers()). A "model" dataset holds every layer: its panels are a
// grid of layers x heads, as bertviz's model view, panel p = layer * heads + head.
// No network, no library: it reads from the files next to it (grid.js draws).
"use strict";

const $ = (id) => document.getElementById(id);

// The data files come from outside the page: each dataset is checked before
// it is drawn, and one that does not hold together is left out with a line
// saying why.
function problem(d) {
  if (d === null || typeof d !== "object") return "not an object";
  for (const key of ["heads", "rows", "cols"]) {
    if (!Number.isInteger(d[key]) || d[key] < 1 || d[key] > 4096) return `${key} is not a size from 1 to 4096`;
  }
  if (typeof d.lesson !== "string" || typeof d.title !== "string") return "no lesson or title";
  if (!["weights", "decode", "training", "model"].includes(d.kind)) return `kind '${d.kind}' is not weights, decode, training or model`;
  if (d.kind === "model" && (!Number.isInteger(d.layers) || d.layers < 1 || d.layers > 64)) return "layers is not a count from 1 to 64";
  if (d.tokens !== undefined && (!Array.isArray(d.tokens) || d.tokens.length !== d.rows ||
                                 !d.tokens.every((t) => typeof t === "string"))) {
    return `tokens is not ${d.rows} strings`;
  }
  const n = layersOf(d) * d.heads * d.rows * d.cols;
  if (!Array.isArray(d.frames) || d.frames.length === 0) return "no frames";
  for (const [k, f] of d.frames.entries()) {
    if (!f || !Array.isArray(f.w) || f.w.length !== n) {
      return `frame ${k} has ${f && Array.isArray(f.w) ? f.w.length : "no"} weights, not heads x rows x cols = ${n}`;
    }
    if (!f.w.every((v) => typeof v === "number" && Number.isFinite(v))) return `frame ${k} holds a value that is not a finite number`;
  }
  if (d.masked !== null && (!Array.isArray(d.masked) || d.masked.length !== n ||
                            !d.masked.every((v) => v === 0 || v === 1))) {
    return `masked is not null or ${n} flags of 0 and 1`;
  }
  return "";
}
function layersOf(d) { return d.kind === "model" ? d.layers : 1; }
const problems = [];
const data = (Array.isArray(window.MHA_DATA) ? window.MHA_DATA : []).filter((d, k) => {
  const why = problem(d);
  if (why) problems.push(`data ${k} (${d && d.lesson ? d.lesson : "?"}) left out: ${why}`);
  return !why;
});
if (!Array.isArray(window.MHA_DATA)) problems.push("no data: data.js is missing or does not set MHA_DATA");
$("problems").textContent = problems.join("\n");
const state = { set: 0, head: "all", frame: 0, position: 0, query: null };  // query: {layer, head, row}

function current() { return data[state.set]; }
// p: the panel, a head (layer * heads + head in a model)
function at(d, frame, p, i, j) { return d.frames[frame].w[(p * d.rows + i) * d.cols + j]; }
function masked(d, p, i, j) { return d.masked !== null && d.masked[(p * d.rows + i) * d.cols + j] === 1; }
function token(d, i) { return d.tokens ? ` (${d.tokens[i]})` : ""; }
function largest(d, frame) {
  let m = 0;
  d.frames[frame].w.forEach((v, k) => { if (d.masked === null || d.masked[k] === 0) m = Math.max(m, v); });
  return m > 0 ? m : 1;
}

function fillControls() {
  // as text, never as HTML: the names come from the data files
  $("dataset").replaceChildren(...data.map((d, k) =>
    new Option(`${d.lesson}: ${d.title} (${d.sizes || "sizes not given"})`, String(k))));
  $("dataset").value = String(state.set);
  const d = current();
  const heads = ["all"].concat([...Array(d.heads).keys()].map(String));
  $("head").replaceChildren(...heads.map((h) => new Option(h === "all" ? "all heads" : "head " + h, h)));
  $("head").value = state.head;
  $("frame-box").style.display = d.frames.length > 1 ? "" : "none";
  $("frame").max = String(d.frames.length - 1);
  $("frame").value = String(state.frame);
  $("position-box").style.display = d.kind === "decode" ? "" : "none";
  $("position").max = String(d.rows - 1);
}

// Every panel shares one scale (the largest weight shown): one colour bar.
function draw() {
  const d = current();
  if (!d) { $("info").textContent = "no data: data.js is empty"; return; }
  const heads = state.head === "all" ? [...Array(d.heads).keys()] : [Number(state.head)];
  const model = d.kind === "model", layers = [...Array(layersOf(d)).keys()];
  const top = largest(d, state.frame), box = $("grids");
  box.replaceChildren();
  // a model: one row a layer; otherwise as many panels to a row as gives the largest cells
  const panels = heads.length * layers.length;
  const perRow = model ? heads.length : bestPerRow(box, panels, d.rows, d.cols);
  const size = fitCell(box, panels, perRow, d.rows, d.cols);
  const names = (n) => d.tokens && n === d.rows ? d.tokens : [...Array(n).keys()].map(String);
  let k = 0;
  for (const [l, h] of layers.flatMap((l) => heads.map((h) => [l, h]))) {
    const p = l * d.heads + h;
    if (k > 0 && k % perRow === 0) box.appendChild(el("div", model ? "layer-break" : "row-break"));
    ++k;
    const panel = makePanel({
      title: `${model ? `layer ${l}, ` : ""}head ${h} (query \u2193, key \u2192)`,
      rows: d.rows, cols: d.cols, rowLabels: names(d.rows), colLabels: names(d.cols), size,
      cell: (i, j, c) => {
        c.dataset.layer = l; c.dataset.head = h; c.dataset.row = i; c.dataset.col = j;
        if (masked(d, p, i, j)) c.classList.add("masked");
        else c.style.background = viridis(at(d, state.frame, p, i, j) / top);
        if (d.kind === "decode" && i > state.position) c.classList.add("future");
        const q = state.query;
        if (q !== null && q.layer === l && q.head === h && q.row === i) c.classList.add("picked");
      } });
    box.appendChild(panel);
  }
  $("frame-label").textContent = d.frames[state.frame].label;
  $("position-label").textContent = d.kind === "decode"
    ? `t = ${state.position}: the cache holds keys 0..${state.position}` : "";
  $("scale").replaceChildren(colourBar(top, "weight, every grid (yellow: the largest shown)"));
  drawRow();
}

function where(d, l, h) { return (d.kind === "model" ? `layer ${l}, ` : "") + `head ${h}`; }

function describe(cell) {
  const d = current(), l = Number(cell.dataset.layer), h = Number(cell.dataset.head);
  const i = Number(cell.dataset.row), j = Number(cell.dataset.col), p = l * d.heads + h;
  const v = at(d, state.frame, p, i, j);
  return `${where(d, l, h)}, query ${i}${token(d, i)}, key ${j}${token(d, j)}: ` +
         (masked(d, p, i, j) ? "masked" : `weight ${v.toFixed(4)}`);
}

function drawRow() {
  const d = current(), q = state.query;
  if (q === null) { $("row-title").textContent = ""; $("row").replaceChildren(); return; }
  const p = q.layer * d.heads + q.head;
  $("row-title").textContent = `${where(d, q.layer, q.head)}, query ${q.row}${token(d, q.row)}: its weights over the keys`;
  $("row").replaceChildren(...[...Array(d.cols).keys()].map((j) => {
    const m = masked(d, p, q.row, j), v = at(d, state.frame, p, q.row, j);
    const row = el("div", "bar-row");
    row.appendChild(el("span", "key", d.tokens ? `key ${j} ${d.tokens[j]}` : `key ${j}`));
    const bar = el("span", "bar");
    bar.style.width = `${m ? 0 : Math.round(v * 150)}px`;
    row.appendChild(bar);
    row.appendChild(el("span", "val", m ? "masked" : v.toFixed(4)));
    return row;
  }));
}

$("grids").addEventListener("mouseover", (e) => {
  if (e.target.classList.contains("cell")) $("info").textContent = describe(e.target);
});
$("grids").addEventListener("click", (e) => {
  if (!e.target.classList.contains("cell")) return;
  const c = e.target.dataset;
  state.query = { layer: Number(c.layer), head: Number(c.head), row: Number(c.row) };
  draw();
});
$("dataset").addEventListener("change", (e) => {
  Object.assign(state, { set: Number(e.target.value), head: "all", frame: 0, position: 0, query: null });
  fillControls(); draw();
});
window.addEventListener("resize", () => { if (current()) draw(); });
$("head").addEventListener("change", (e) => { state.head = e.target.value; state.query = null; draw(); });
$("frame").addEventListener("input", (e) => { state.frame = Number(e.target.value); draw(); });
$("position").addEventListener("input", (e) => { state.position = Number(e.target.value); draw(); });

// ?data=<lesson>&size=<tiny|middle>&frame=<k|last>&query=<head,row>: where to
// start (the tests and the docs' screenshot use it; the query is in layer 0)
const want = new URLSearchParams(location.search);
if (want.get("data")) {
  const k = data.findIndex((d) => d.lesson === want.get("data") &&
                           (want.get("size") !== "tiny") !== String(d.sizes).endsWith("(--tiny)"));
  if (k >= 0) state.set = k;
}
if (data.length > 0 && want.get("frame")) {
  const n = data[state.set].frames.length;
  state.frame = want.get("frame") === "last" ? n - 1 : Math.min(n - 1, Number(want.get("frame")) || 0);
  $("frame").value = String(state.frame);
}
if (data.length > 0 && /^\d+,\d+$/.test(want.get("query") || "")) {
  const [h, row] = want.get("query").split(",").map(Number);
  if (h < data[state.set].heads && row < data[state.set].rows) state.query = { layer: 0, head: h, row };
}
if (data.length > 0) { fillControls(); draw(); } else { draw(); }
