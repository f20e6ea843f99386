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
function tickPlan(size, labels) {
  const font = Math.max(9, Math.min(13, size - 1));
  const widest = Math.max(1, ...labels.map(labelEm)) * font;
  return { font, rowStep: Math.ceil((font + 1) / (size + 1)),
           colStep: Math.ceil((widest + 2) / (size + 1)) };
}

// A panel: a title, the column labels above the cells, the row labels to their
// left. o: {title, rows, cols, rowLabels, colLabels, size, cell(i, j, div)},
// cell() colours the div and sets its data-* and classes; unknown marks
// labels to draw as unknown (a Set of row/col indices).
function makePanel(o) {
  const panel = el("div", "panel");
  panel.appendChild(el("h3", "", o.title));
  const frame = el("div", "frame");
  const plan = tickPlan(o.size, o.rowLabels.concat(o.colLabels));
  const rowW = Math.ceil(Math.max(1, ...o.rowLabels.map(labelEm)) * plan.font) + 4;
  frame.style.gridTemplateColumns = `${rowW}px auto`;
  frame.appendChild(el("div", "corner"));
  const ticks = (labels, step, axis) => {
    const box = el("div", `ticks ${axis}`);
    box.style.fontSize = `${plan.font}px`;
    const track = `repeat(${labels.length}, ${o.size}px)`;
    if (axis === "x") box.style.gridTemplateColumns = track; else box.style.gridTemplateRows = track;
    labels.forEach((t, k) => {
      const tick = el("div", "tick", k % step === 0 ? t : "");
      if (o.unknown && o.unknown.has(k)) tick.classList.add("unknown");
      box.appendChild(tick);
    });
    return box;
  };
  frame.appendChild(ticks(o.colLabels, plan.colStep, "x"));
  frame.appendChild(ticks(o.rowLabels, plan.rowStep, "y"));
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

// The largest cell (pixels, 3 to 40) at which PANELS panels of ROWS x COLS,
// laid out PER_ROW to a row, fit into BOX's width and the window's height
// below BOX's top (with room for titles and labels).
function fitCell(box, panels, perRow, rows, cols) {
  const width = box.clientWidth || 600;
  const height = window.innerHeight - box.getBoundingClientRect().top - 12;
  const lines = Math.ceil(panels / perRow);
  const gap = 14, label = 30, title = 20;
  const w = (width / perRow - gap - label) / cols;
  const h = (height / lines - gap - label / 2 - title) / rows;
  return Math.max(3, Math.min(40, Math.floor(Math.min(w, h)) - 1));
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
