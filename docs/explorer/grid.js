// What both explorer pages draw with: the viridis colours, a grid of cells
// with tick labels on both axes, a colour bar with numbers, and a cell size
// that fits the panels into the window (a 1024 x 768 projector). Labels and
// titles are set as text (textContent), never as HTML: tokens come from data
// files and from what a student types.
"use strict";

// viridis through nine anchors, t in [0, 1]: the lessons' SVGs use the same
const VIRIDIS = [[68, 1, 84], [71, 44, 122], [59, 82, 139], [44, 114, 142], [33, 145, 140],
                 [40, 174, 128], [94, 201, 98], [173, 220, 48], [253, 231, 37]];
function viridis(t) {
  t = Math.min(1, Math.max(0, t || 0)) * (VIRIDIS.length - 1);
  const i = Math.min(VIRIDIS.length - 2, Math.floor(t)), f = t - i;
  const c = VIRIDIS[i].map((a, k) => Math.round(a + (VIRIDIS[i + 1][k] - a) * f));
  return `rgb(${c[0]}, ${c[1]}, ${c[2]})`;
}

function el(tag, className, text) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

// How wide a label is drawn, in em: CJK characters are a full em, the rest about half.
function labelEm(s) {
  let w = 0;
  for (const ch of s) w += /[\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef]/.test(ch) ? 1 : 0.6;
  return w;
}

// The font and the stride of the tick labels for cells of SIZE pixels: every
// label when they fit, else every k-th (0, k, 2k ...), never overlapping.
// (PITCH: a cell and the gap after it.)
function tickPlan(pitch, labels) {
  const font = Math.max(9, Math.min(13, pitch - 2));
  const widest = Math.max(1, ...labels.map(labelEm)) * font;
  return { font, rowStep: Math.ceil((font + 1) / pitch),
           colStep: Math.ceil((widest + 2) / pitch) };
}

// A panel: a title, the column labels above the cells, the row labels to their
// left. o: {title, rows, cols, rowLabels, colLabels, size, cell(i, j, div)},
// cell() colours the div and sets its data-* and classes; unknown marks
// labels to draw as unknown (a Set of row/col indices). With o.value(i, j)
// (a weight in [0, 1], null where masked) instead of o.cell, the cells are
// drawn on one canvas with no gaps: 16 heads of 64 x 64 are 65,536 cells,
// too many elements to rebuild at each key typed, and too small for gaps.
function makePanel(o) {
  const panel = el("div", "panel");
  panel.appendChild(el("h3", "", o.title));
  const frame = el("div", "frame");
  const gap = o.value ? 0 : 1, pitch = o.size + gap;
  const plan = tickPlan(pitch, o.rowLabels.concat(o.colLabels));
  const rowW = Math.ceil(Math.max(1, ...o.rowLabels.map(labelEm)) * plan.font) + 4;
  frame.style.gridTemplateColumns = `${rowW}px auto`;
  frame.appendChild(el("div", "corner"));
  const ticks = (labels, step, axis) => {
    const box = el("div", `ticks ${axis}${gap ? "" : " flush"}`);
    box.style.fontSize = `${plan.font}px`;
    const n = labels.length, track = `repeat(${n}, ${gap ? o.size : Math.round(o.size * n) / n}px)`;
    if (axis === "x") box.style.gridTemplateColumns = track;
    else box.style.gridTemplateRows = track;
    labels.forEach((t, k) => {
      const tick = el("div", "tick", k % step === 0 ? t : "");
      if (o.unknown && o.unknown.has(k)) tick.classList.add("unknown");
      box.appendChild(tick);
    });
    return box;
  };
  frame.appendChild(ticks(o.colLabels, plan.colStep, "x"));
  frame.appendChild(ticks(o.rowLabels, plan.rowStep, "y"));
  if (o.value) {
    frame.appendChild(heatCanvas(o));
    panel.appendChild(frame);
    return panel;
  }
  const grid = el("div", "grid");
  grid.style.gridTemplateColumns = `repeat(${o.cols}, ${o.size}px)`;
  grid.style.gridAutoRows = `${o.size}px`;
  for (let i = 0; i < o.rows; ++i) {
    for (let j = 0; j < o.cols; ++j) {
      const c = el("div", "cell");
      o.cell(i, j, c);
      grid.appendChild(c);
    }
  }
  frame.appendChild(grid);
  panel.appendChild(frame);
  return panel;
}

// The cells of makePanel(o) with o.value, on a canvas of class "heat".
function heatCanvas(o) {
  const c = el("canvas", "heat"), s = o.size, at = (k) => Math.round(k * s);
  c.width = at(o.cols);
  c.height = at(o.rows);
  const g = c.getContext("2d");
  for (let i = 0; i < o.rows; ++i) {
    for (let j = 0; j < o.cols; ++j) {
      const v = o.value(i, j);
      g.fillStyle = v === null ? "#d9d9d9" : viridis(v);
      g.fillRect(at(j), at(i), at(j + 1) - at(j), at(i + 1) - at(i));  // whole pixels: no seams
      if (v === null && s >= 6) {  // masked: hatched, as the other grids
        g.strokeStyle = "#8c8c8c";
        g.beginPath(); g.moveTo(j * s, (i + 1) * s); g.lineTo((j + 1) * s, i * s); g.stroke();
      }
    }
  }
  if (s >= 8) {  // thin lines between cells, where there is room for them
    g.strokeStyle = "rgba(255, 255, 255, 0.35)";
    g.beginPath();
    for (let k = 1; k < Math.max(o.rows, o.cols); ++k) {
      g.moveTo(at(k) + 0.5, 0); g.lineTo(at(k) + 0.5, c.height);
      g.moveTo(0, at(k) + 0.5); g.lineTo(c.width, at(k) + 0.5);
    }
    g.stroke();
  }
  return c;
}

// A colour bar from 0 to TOP with five numbers under it; CAPTION says what it measures.
function colourBar(top, caption) {
  const box = el("div", "colour-bar");
  box.appendChild(el("div", "caption", caption));
  const bar = el("div", "bar-gradient");
  bar.style.background = `linear-gradient(to right, ${VIRIDIS.map((_, k) =>
    viridis(k / (VIRIDIS.length - 1))).join(", ")})`;
  box.appendChild(bar);
  const nums = el("div", "bar-numbers");
  for (let k = 0; k <= 4; ++k) nums.appendChild(el("span", "", (top * k / 4).toPrecision(2)));
  box.appendChild(nums);
  return box;
}

// The largest cell (whole pixels from 3 to 40 with the 1-pixel gap of a div
// grid; if GAPLESS, for a canvas, any size from 1 to 40) at which PANELS
// panels of ROWS x COLS, laid out PER_ROW to a row, fit into BOX's width and
// the window's height below BOX's top (with room for titles and labels).
function fitCell(box, panels, perRow, rows, cols, gapless = false) {
  const width = box.clientWidth || 600;
  const height = window.innerHeight - box.getBoundingClientRect().top - 12;
  const lines = Math.ceil(panels / perRow);
  // measured in Chromium: a title line 18 px, the column labels 15, 6 between rows
  // of panels, 14 between panels, row labels up to 30 wide
  const w = (width / perRow - 14 - 30) / cols;
  const h = (height / lines - 6 - 15 - 18) / rows;
  return gapless ? Math.max(1, Math.min(40, Math.floor(8 * Math.min(w, h)) / 8))
                 : Math.max(3, Math.min(40, Math.floor(Math.min(w, h)) - 1));
}

// The number of panels to a row that gives the largest cells.
function bestPerRow(box, panels, rows, cols) {
  let best = 1, size = 0;
  for (let n = 1; n <= panels; ++n) {
    const s = fitCell(box, panels, n, rows, cols);
    if (s > size) { best = n; size = s; }
  }
  return best;
}
