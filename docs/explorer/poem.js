// The poem page: runs the committed Tang-poem model (model.js, packed from
// data/tang/ by docs/pack_model.py) on what is typed, and draws every
// layer x head, the five likeliest next characters and the head scores of
// tang_spec.md.
//
// Plain JavaScript, not the C++ core compiled with emscripten: the forward of
// a model this small is about a hundred lines (embeddings, LayerNorm, causal
// attention, GELU, a linear head), it runs in milliseconds on 64 characters,
// and a student can read it beside src/mha/ in the browser's debugger; a
// wasm build would add a toolchain to the docs build for no speed anyone sees.
// It computes in float64 from the float32 weights, as the tests' reference
// does; the browser test holds it to mha_forward --model within 1e-4.
"use strict";

const $ = (id) => document.getElementById(id);
const MARKS = new Set([..."，。？！；：、,.?!;:"]);
const EPS = 1e-5;  // LayerNorm's, PyTorch's default: the checkpoint's norms were trained with it

// ---- 1. The model, checked before it is used --------------------------------

function blockNames(l) {
  return ["self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight",
          "self_attn.out_proj.bias", "linear1.weight", "linear1.bias", "linear2.weight",
          "linear2.bias", "norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias"]
    .map((n) => `layers.${l}.${n}`);
}

// The shape each tensor must have, from config (save_model's names and shapes).
function expectedShapes(c) {
  const V = c.vocab, T = c.t_max, E = c.embed_dim, F = c.ff_dim, want = {};
  want["tok_emb.weight"] = [V, E];
  want["pos_emb.weight"] = [T, E];
  for (let l = 0; l < c.num_layers; ++l) {
    const [inW, inB, oW, oB, w1, b1, w2, b2, n1w, n1b, n2w, n2b] = blockNames(l);
    Object.assign(want, { [inW]: [3 * E, E], [inB]: [3 * E], [oW]: [E, E], [oB]: [E],
                          [w1]: [F, E], [b1]: [F], [w2]: [E, F], [b2]: [E],
                          [n1w]: [E], [n1b]: [E], [n2w]: [E], [n2b]: [E] });
  }
  Object.assign(want, { "norm.weight": [E], "norm.bias": [E], "head.weight": [V, E],
                        "head.bias": [V] });
  return want;
}

function crc32(bytes) {
  let table = crc32.table;
  if (!table) {
    table = crc32.table = new Uint32Array(256);
    for (let n = 0; n < 256; ++n) {
      let c = n;
      for (let k = 0; k < 8; ++k) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      table[n] = c >>> 0;
    }
  }
  let c = 0xffffffff;
  for (let i = 0; i < bytes.length; ++i) c = table[(c ^ bytes[i]) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

// The model from window.MHA_MODEL, or an Error whose message is the one line
// the page shows: a blob that is cut, altered or does not fit config is refused.
function loadModel(m) {
  if (m === undefined) {
    throw new Error("no model: model.js is missing next to this page, or cut short " +
                    "(it set no model)");
  }
  if (m === null) {
    throw new Error("No model was packaged: data/tang/ was not there when these pages were " +
                    "built (build the docs again once it is)");
  }
  if (typeof m !== "object" || m.format !== 1) throw new Error("model.js is not format 1");
  const c = m.config || {};
  for (const k of ["vocab", "t_max", "embed_dim", "num_heads", "ff_dim", "num_layers"]) {
    if (!Number.isInteger(c[k]) || c[k] < 1 || c[k] > 1e6) {
      throw new Error(`config's ${k} is not a size`);
    }
  }
  if (c.embed_dim % c.num_heads !== 0) {
    throw new Error(`H = ${c.num_heads} does not divide E = ${c.embed_dim}`);
  }
  if (!Array.isArray(m.vocab) || m.vocab.length !== c.vocab ||
      !m.vocab.every((t) => typeof t === "string")) {
    throw new Error(`vocab is not a list of ${c.vocab} strings (config's vocab)`);
  }
  const want = expectedShapes(c), names = Object.keys(want);
  if (!Array.isArray(m.tensors) || m.tensors.length !== names.length) {
    const n = Array.isArray(m.tensors) ? m.tensors.length : "no";
    throw new Error(`the manifest lists ${n} tensors, ` +
                    `not the ${names.length} of ${c.num_layers} layers`);
  }
  let need = 0;
  for (const [k, t] of m.tensors.entries()) {
    if (!t || t.name !== names[k] || String(t.shape) !== String(want[names[k]])) {
      throw new Error(`tensor ${k} is ${t && t.name} [${t && t.shape}], ` +
                      `not ${names[k]} [${want[names[k]]}]`);
    }
    need += 4 * want[names[k]].reduce((a, b) => a * b, 1);
  }
  let text;
  try { text = atob(typeof m.blob === "string" ? m.blob : ""); } catch (e) {
    throw new Error("the weights blob is not base64: refused");
  }
  if (text.length !== need || m.bytes !== need) {
    throw new Error(`the weights blob holds ${text.length} bytes; the manifest says ${m.bytes} ` +
                    `and its shapes need ${need}: refused (a cut or altered model.js)`);
  }
  const bytes = new Uint8Array(need);
  for (let i = 0; i < need; ++i) bytes[i] = text.charCodeAt(i);
  if (crc32(bytes) !== m.crc32) {
    throw new Error("the weights blob's CRC-32 is not the manifest's: refused");
  }
  const all = new Float32Array(bytes.buffer);  // little-endian, as every browser's typed arrays
  for (let i = 0; i < all.length; ++i) {
    if (!Number.isFinite(all[i])) throw new Error(`weight ${i} is not a finite number: refused`);
  }
  const w = {};
  let at = 0;
  for (const n of names) {
    const size = want[n].reduce((a, b) => a * b, 1);
    w[n] = all.subarray(at, at + size);
    at += size;
  }
  return { name: String(m.name), config: c, vocab: m.vocab, w,
           index: new Map(m.vocab.map((t, k) => [t, k])) };
}

// ---- 2. Tokens, as tang_spec.md says ----------------------------------------

// "<poem>", then each character; a newline is "\n"; a character outside the
// vocabulary is <unk> (id 0). Returns {ids, shown, unknown}: shown is what the
// labels draw (the typed character, a mark for <poem> and the line end).
function tokenise(model, text) {
  const ids = [model.index.has("<poem>") ? model.index.get("<poem>") : 1], shown = ["\u25b8"];
  const typed = ["<poem>"], unknown = new Set();
  for (const ch of Array.from(text)) {
    if (ch === "\r") continue;
    const id = model.index.get(ch);
    if (id === undefined) unknown.add(ids.length);
    ids.push(id === undefined ? 0 : id);
    shown.push(ch === "\n" ? "\u21b5" : ch);
    typed.push(ch);
  }
  return { ids, shown, typed, unknown };
}

// ---- 3. The forward: src/mha/model/language_model.cpp in float64 ------------

// erf to double precision: its series below 3, its continued fraction above
// (the C++ core's GELU is PyTorch's exact 0.5 x (1 + erf(x / sqrt 2))).
function erf(x) {
  const a = Math.abs(x);
  if (a < 3) {
    let term = a, sum = a;
    for (let n = 1; n < 100; ++n) {
      term *= -a * a / n;
      const add = term / (2 * n + 1);
      sum += add;
      if (Math.abs(add) < 1e-17 * Math.abs(sum)) break;
    }
    return Math.sign(x) * Math.min(1, 2 / Math.sqrt(Math.PI) * sum);
  }
  let t = a;
  for (let k = 60; k >= 1; --k) t = a + (k / 2) / t;
  return Math.sign(x) * (1 - Math.exp(-a * a) / Math.sqrt(Math.PI) / t);
}
function gelu(x) { return 0.5 * x * (1 + erf(x * Math.SQRT1_2)); }

// y [T, n] = x [T, k] W[row0 .. row0 + n)^T + b[row0 .. row0 + n), W [*, k] row-major
function linear(x, T, k, W, b, n, row0 = 0) {
  const y = new Float64Array(T * n);
  for (let t = 0; t < T; ++t) {
    for (let o = 0; o < n; ++o) {
      let s = b[row0 + o];
      const wr = (row0 + o) * k, xr = t * k;
      for (let i = 0; i < k; ++i) s += W[wr + i] * x[xr + i];
      y[t * n + o] = s;
    }
  }
  return y;
}

function layerNorm(x, T, E, w, b) {
  const y = new Float64Array(T * E);
  for (let t = 0; t < T; ++t) {
    let mean = 0, v = 0;
    for (let e = 0; e < E; ++e) mean += x[t * E + e];
    mean /= E;
    for (let e = 0; e < E; ++e) v += (x[t * E + e] - mean) ** 2;
    const r = 1 / Math.sqrt(v / E + EPS);  // the biased variance, as PyTorch's
    for (let e = 0; e < E; ++e) y[t * E + e] = (x[t * E + e] - mean) * r * w[e] + b[e];
  }
  return y;
}

// ids [T] -> logits [T, V] and, per layer, weights and scores [H, T, T]
// (scores before the softmax, q.k / sqrt(D); masked entries -Infinity).
function forward(model, ids) {
  const { vocab: V, embed_dim: E, num_heads: H, ff_dim: F, num_layers: L } = model.config;
  const w = model.w, T = ids.length, D = E / H;
  let x = new Float64Array(T * E);  // tok_emb(ids) + pos_emb(0..T-1)
  for (let t = 0; t < T; ++t) {
    for (let e = 0; e < E; ++e) {
      x[t * E + e] = w["tok_emb.weight"][ids[t] * E + e] + w["pos_emb.weight"][t * E + e];
    }
  }
  const weights = [], scores = [];
  for (let l = 0; l < L; ++l) {
    const [inW, inB, oW, oB, w1, b1, w2, b2, n1w, n1b, n2w, n2b] = blockNames(l).map((n) => w[n]);
    const h = layerNorm(x, T, E, n1w, n1b);
    // PyTorch's in_proj stacks wq, wk, wv: rows [0, E), [E, 2E), [2E, 3E)
    const q = linear(h, T, E, inW, inB, E, 0), k = linear(h, T, E, inW, inB, E, E);
    const v = linear(h, T, E, inW, inB, E, 2 * E);
    const wt = new Float64Array(H * T * T), sc = new Float64Array(H * T * T).fill(-Infinity);
    const ctx = new Float64Array(T * E);
    for (let hd = 0; hd < H; ++hd) {
      for (let i = 0; i < T; ++i) {
        const row = (hd * T + i) * T;
        let top = -Infinity;
        for (let j = 0; j <= i; ++j) {  // causal: keys 0..i
          let s = 0;
          for (let d = 0; d < D; ++d) s += q[i * E + hd * D + d] * k[j * E + hd * D + d];
          sc[row + j] = s / Math.sqrt(D);
          top = Math.max(top, sc[row + j]);
        }
        let sum = 0;
        for (let j = 0; j <= i; ++j) sum += (wt[row + j] = Math.exp(sc[row + j] - top));
        for (let j = 0; j <= i; ++j) wt[row + j] /= sum;
        for (let d = 0; d < D; ++d) {
          let s = 0;
          for (let j = 0; j <= i; ++j) s += wt[row + j] * v[j * E + hd * D + d];
          ctx[i * E + hd * D + d] = s;
        }
      }
    }
    const a = linear(ctx, T, E, oW, oB, E);
    for (let n = 0; n < T * E; ++n) x[n] += a[n];
    const f = linear(layerNorm(x, T, E, n2w, n2b), T, E, w1, b1, F).map(gelu);
    const g = linear(f, T, F, w2, b2, E);
    for (let n = 0; n < T * E; ++n) x[n] += g[n];
    weights.push(wt);
    scores.push(sc);
  }
  const logits = linear(layerNorm(x, T, E, w["norm.weight"], w["norm.bias"]), T, E,
                        w["head.weight"], w["head.bias"], V);
  return { logits, weights, scores };
}

// ---- 4. The head scores of tang_spec.md --------------------------------------

// For one head's weights wt [T, T] (row q, key k) over the token strings s:
// the mean over the queries that have a target of w[q][target], NaN when none has.
function headScores(s, wt, T) {
  const isMark = (t) => MARKS.has(t), inSegment = (t) => !isMark(t) && t !== "\n" && t !== "<poem>";
  const seg = [];  // per position: {start, offset, prevStart, prevLength} or null
  let start = -1, prevStart = -1, prevLength = 0;
  for (let q = 0; q < T; ++q) {
    if (!inSegment(s[q])) {
      if (start >= 0) { prevStart = start; prevLength = q - start; start = -1; }
      seg.push(null);
      continue;
    }
    if (start < 0) start = q;
    seg.push({ offset: q - start, prevStart, prevLength });
  }
  const mean = (target) => {
    let sum = 0, n = 0;
    for (let q = 0; q < T; ++q) {
      const k = target(q);
      if (k !== null) { sum += wt[q * T + k]; ++n; }
    }
    return n ? sum / n : NaN;
  };
  const lastMark = [];
  for (let q = 0, m = null; q < T; ++q) { lastMark.push(m); if (isMark(s[q])) m = q; }
  return {
    previous: mean((q) => (q >= 1 ? q - 1 : null)),
    partner: mean((q) => {
      const g = seg[q];
      return g && g.prevStart >= 0 && g.prevLength > g.offset ? g.prevStart + g.offset : null;
    }),
    last_mark: mean((q) => lastMark[q]),
    start: mean((q) => (q >= 1 ? 0 : null)),
  };
}

// ---- 5. The page -------------------------------------------------------------

const state = { model: null, run: null, focus: null };  // focus: {l, h}, one panel large

function tokenName(t) {
  return t === "\n" ? "\u21b5 (line end)" : t === "<unk>" ? "<unk> (unknown)" : t;
}

// What the cell under the mouse in canvas C holds (x, y: pixels from its corner).
function describe(c, x, y) {
  const r = state.run, l = Number(c.dataset.layer), h = Number(c.dataset.head);
  const T = r.ids.length, size = Number(c.dataset.size);
  const at = (px) => Math.max(0, Math.min(T - 1, Math.floor(px * T / Math.round(size * T))));
  const i = at(y), j = at(x);  // the canvas is round(size T) pixels wide
  const name = (p) => `${p} ${r.tok.shown[p]}` + (r.tok.unknown.has(p) ? " (unknown: <unk>)" : "");
  const head = `layer ${l}, head ${h}\nquery ${name(i)}, key ${name(j)}\n`;
  if (j > i) return head + "masked: a later key (no weight, no score)";
  const k = (h * T + i) * T + j;
  return head + `weight ${r.weights[l][k].toFixed(4)}, score ${r.scores[l][k].toFixed(4)}`;
}

function drawGrids() {
  const r = state.run, box = $("grids"), { num_heads: H, num_layers: L } = state.model.config;
  box.replaceChildren();
  if (!r) return;
  const T = r.ids.length, f = state.focus;
  const all = [...Array(L).keys()].flatMap((l) => [...Array(H).keys()].map((h) => [l, h]));
  const shown = f ? [[f.l, f.h]] : all;
  const perRow = f ? 1 : H, size = fitCell(box, shown.length, perRow, T, T, true);
  shown.forEach(([l, h], n) => {
    if (n > 0 && n % perRow === 0) box.appendChild(el("div", "layer-break"));
    const panel = makePanel({
      title: `layer ${l}, head ${h}` + (f ? " (click: every head)" : ""),
      rows: T, cols: T, rowLabels: r.tok.shown, colLabels: r.tok.shown, size,
      unknown: r.tok.unknown,
      value: (i, j) => (j > i ? null : r.weights[l][(h * T + i) * T + j]) });
    Object.assign(panel.querySelector("canvas").dataset, { layer: l, head: h, size });
    box.appendChild(panel);
  });
  $("scale").replaceChildren(colourBar(1, "weight, every grid (query \u2193, key \u2192)"));
}

function drawTop5() {
  const r = state.run, V = state.model.config.vocab, T = r.ids.length;
  const last = r.logits.subarray((T - 1) * V, T * V);
  const top = Math.max(...last), p = Array.from(last, (z) => Math.exp(z - top));
  const sum = p.reduce((a, b) => a + b, 0);
  const best = [...p.keys()].sort((a, b) => p[b] - p[a]).slice(0, 5);
  r.top5 = best.map((k) => ({ id: k, token: state.model.vocab[k], p: p[k] / sum }));
  $("top5").replaceChildren(...r.top5.map((t) => {
    const row = el("div", "bar-row");
    row.appendChild(el("span", "key", tokenName(t.token)));
    const bar = el("span", "bar");
    bar.style.width = `${Math.round(t.p * 120)}px`;
    row.appendChild(bar);
    row.appendChild(el("span", "val", t.p.toFixed(3)));
    return row;
  }));
}

function drawScores() {
  const r = state.run, { num_heads: H, num_layers: L } = state.model.config, T = r.ids.length;
  const s = r.ids.map((id) => state.model.vocab[id]);
  const kinds = ["previous", "partner", "last_mark", "start"];
  r.headScores = [];
  for (let l = 0; l < L; ++l) {
    for (let h = 0; h < H; ++h) {
      r.headScores.push({ layer: l, head: h,
                          ...headScores(s, r.weights[l].subarray(h * T * T, (h + 1) * T * T), T) });
    }
  }
  const table = el("table", "scores"), header = el("tr");
  for (const k of ["", ...kinds]) header.appendChild(el("th", "", k));
  table.appendChild(header);
  const best = kinds.map((k) =>
    Math.max(...r.headScores.map((x) => (Number.isNaN(x[k]) ? -1 : x[k]))));
  for (const x of r.headScores) {
    const tr = el("tr");
    tr.appendChild(el("th", "", `L${x.layer} H${x.head}`));  // layer, head
    kinds.forEach((k, n) => {
      const td = el("td", "", Number.isNaN(x[k]) ? "\u2013" : x[k].toFixed(2));
      if (!Number.isNaN(x[k]) && x[k] === best[n]) td.classList.add("best");
      tr.appendChild(td);
    });
    table.appendChild(tr);
  }
  $("scores").replaceChildren(table, el("p", "note", "L layer, H head: the mean weight on " +
    "each target (tang_spec.md); \u2013 no query has one; yellow: the highest"));
}

function status(text, refused) {
  $("status").textContent = text;
  $("status").className = refused ? "status refused" : "status";
}

// Typing runs update() once the keys pause (a burst of keys, one forward):
// at T = 64 a forward and 16 redrawn grids take a good part of a second.
let pending = null;
function later() {
  clearTimeout(pending);
  pending = setTimeout(update, 60);
}

function update() {
  window.poemText = null;
  const m = state.model, c = m.config, tok = tokenise(m, $("text").value);
  const T = tok.ids.length;
  if (T > c.t_max) {  // pos_emb has t_max rows: past them there is no model, only garbage
    state.run = window.poemResult = null;
    status(`${T} tokens (<poem> and ${T - 1} characters): longer than the model's ` +
           `T_max = ${c.t_max}; shorten the text to ${c.t_max - 1} characters`, true);
    drawGrids(); $("top5").replaceChildren(); $("scores").replaceChildren();
    window.poemText = $("text").value;
    return;
  }
  const out = forward(m, tok.ids);
  state.run = { tok, ids: tok.ids, ...out };
  const unknown = [...tok.unknown].map((p) => tok.typed[p]);
  status(`${T} token${T === 1 ? "" : "s"} of at most ${c.t_max} (\u25b8 = <poem>, \u21b5 = line end)` +
         (unknown.length ? `; unknown to the model, read as <unk>: ${unknown.join(" ")}` : ""),
         false);
  drawGrids(); drawTop5(); drawScores();
  // for the browser test: what was computed, as plain arrays
  window.poemResult = { ids: tok.ids, logits: Array.from(out.logits),
                        weights: out.weights.map((a) => Array.from(a)),
                        scores: out.scores.map((a) =>
                          Array.from(a, (v) => (v === -Infinity ? null : v))),
                        top5: state.run.top5, headScores: state.run.headScores };
  window.poemText = $("text").value;  // what poemResult is of (the test waits for it)
}

try {
  state.model = loadModel(window.MHA_MODEL);
} catch (e) {
  status(e.message, true);
  $("text").disabled = true;
}
if (state.model) {
  const want = new URLSearchParams(location.search).get("text");
  if (want !== null) $("text").value = want;
  $("text").addEventListener("input", () => { state.focus = null; later(); });
  $("grids").addEventListener("mousemove", (e) => {
    if (e.target.classList.contains("heat") && state.run) {
      $("info").textContent = describe(e.target, e.offsetX, e.offsetY);
    }
  });
  $("grids").addEventListener("click", (e) => {
    if (!e.target.classList.contains("heat")) return;
    const d = e.target.dataset;
    state.focus = state.focus ? null : { l: Number(d.layer), h: Number(d.head) };
    drawGrids();
  });
  window.addEventListener("resize", drawGrids);
  update();
  document.title += ` (${state.model.name})`;
}
