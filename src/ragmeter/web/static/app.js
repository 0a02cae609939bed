/* ragmeter dashboard: sorting, filters, charts (inline SVG) and the label/review actions.
   Plain JavaScript, no libraries, nothing fetched from outside. */
"use strict";

const SVGNS = "http://www.w3.org/2000/svg";
const COLORS = ["#2456a6", "#d1495b", "#2a9d8f", "#e9a03b", "#6a4fb3", "#4d908e", "#8c564b", "#577590"];

function pageData() {
  const node = document.getElementById("page-data");
  return node ? JSON.parse(node.textContent) : null;
}

function el(name, attrs, text) {
  const node = document.createElementNS(SVGNS, name);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

function fmtNum(v) {
  if (v === null || v === undefined) return "–";
  return Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 10 ? v.toFixed(1) : v.toFixed(2);
}

/* -- sortable tables ------------------------------------------------------------ */

function cellValue(row, index, kind) {
  const cell = row.children[index];
  if (!cell) return kind === "num" ? -Infinity : "";
  const raw = cell.dataset.value !== undefined ? cell.dataset.value : cell.textContent.trim();
  if (kind === "num") {
    const n = parseFloat(raw);
    return Number.isNaN(n) ? -Infinity : n;
  }
  return raw.toLowerCase();
}

/* Set (or delete, when value is "") URL parameters, keeping the others. */
function setParams(values) {
  const p = new URLSearchParams(window.location.search);
  for (const [key, value] of Object.entries(values)) {
    if (value) p.set(key, value); else p.delete(key);
  }
  const query = p.toString();
  window.history.replaceState(null, "", window.location.pathname + (query ? `?${query}` : ""));
}

/* A sortable table with an id keeps its sort in the URL: ?<id>.sort=<column> (or -<column>). */
function makeSortable(table) {
  const headers = table.querySelectorAll("thead th");
  const param = table.id ? `${table.id}.sort` : null;
  const label = (th) => th.dataset.col || th.textContent.trim();
  const sorters = {};
  headers.forEach((th, index) => {
    const kind = th.dataset.sort;
    if (!kind || kind === "none") return;
    th.tabIndex = 0;
    const sort = (asc) => {
      headers.forEach((h) => h.removeAttribute("aria-sort"));
      th.setAttribute("aria-sort", asc ? "ascending" : "descending");
      const body = table.tBodies[0];
      const rows = Array.from(body.rows);
      rows.sort((a, b) => {
        const x = cellValue(a, index, kind), y = cellValue(b, index, kind);
        return (x < y ? -1 : x > y ? 1 : 0) * (asc ? 1 : -1);
      });
      body.append(...rows);
      if (param) setParams({ [param]: `${asc ? "" : "-"}${label(th)}` });
    };
    const toggle = () => sort(th.getAttribute("aria-sort") !== "ascending");
    sorters[label(th)] = sort;
    th.addEventListener("click", toggle);
    th.addEventListener("keydown", (e) => { if (e.key === "Enter") toggle(); });
  });
  const wanted = param ? new URLSearchParams(window.location.search).get(param) : null;
  if (wanted) {
    const sort = sorters[wanted.replace(/^-/, "")];
    if (sort) sort(!wanted.startsWith("-"));
  }
}

/* -- charts ------------------------------------------------------------------------ */

function niceMax(v) {
  if (v <= 0) return 1;
  if (v <= 1) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  return Math.ceil(v / p) * p;
}

/* series: [{name, values: [number|null]}]; xLabels: labels of the x positions.
   Series whose values exceed 1 go on a right-hand axis (latencies beside rates). */
function lineChart(svg, series, xLabels, opts) {
  opts = opts || {};
  svg.replaceChildren();
  const W = svg.clientWidth || 800, H = svg.clientHeight || 260;
  const m = { l: 44, r: 52, t: 12, b: 38 };
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  const n = xLabels.length;
  const big = (s) => s.values.some((v) => v !== null && v > 1);
  const left = series.filter((s) => !big(s)), right = series.filter(big);
  const maxOf = (list) => niceMax(Math.max(0, ...list.flatMap((s) => s.values.filter((v) => v !== null))));
  const yL = opts.yMax || 1, yR = maxOf(right);
  const x = (i) => m.l + (n <= 1 ? (W - m.l - m.r) / 2 : (i * (W - m.l - m.r)) / (n - 1));
  const y = (v, max) => H - m.b - (v / max) * (H - m.t - m.b);
  for (let g = 0; g <= 4; g++) {
    const yy = y((g / 4) * yL, yL);
    svg.append(el("line", { x1: m.l, x2: W - m.r, y1: yy, y2: yy, class: "grid" }));
    svg.append(el("text", { x: m.l - 6, y: yy + 4, "text-anchor": "end" }, fmtNum((g / 4) * yL)));
    if (right.length) svg.append(el("text", { x: W - m.r + 6, y: yy + 4 }, fmtNum((g / 4) * yR)));
  }
  svg.append(el("line", { x1: m.l, x2: W - m.r, y1: H - m.b, y2: H - m.b, class: "axis" }));
  svg.append(el("line", { x1: m.l, x2: m.l, y1: m.t, y2: H - m.b, class: "axis" }));
  const step = Math.max(1, Math.ceil(n / 14));
  for (let i = 0; i < n; i += step) {
    svg.append(el("text", { x: x(i), y: H - m.b + 14, "text-anchor": "middle" }, xLabels[i]));
  }
  if (opts.xTitle) svg.append(el("text", { x: (W + m.l - m.r) / 2, y: H - 6, "text-anchor": "middle" }, opts.xTitle));
  series.forEach((s, si) => {
    const color = COLORS[si % COLORS.length];
    const max = big(s) ? yR : yL;
    const pts = s.values.map((v, i) => (v === null ? null : [x(i), y(v, max)])).filter(Boolean);
    if (pts.length > 1) {
      svg.append(el("polyline", { points: pts.map((p) => p.join(",")).join(" "), fill: "none", stroke: color, "stroke-width": 2, "data-series": s.name }));
    }
    if (s.values.length <= 150) {
      s.values.forEach((v, i) => {
        if (v === null) return;
        const dot = el("circle", { cx: x(i), cy: y(v, max), r: 3, fill: color });
        dot.append(el("title", {}, `${s.name} ${xLabels[i]}: ${fmtNum(v)}`));
        svg.append(dot);
      });
    }
    const lx = m.l + 10 + si * 150;
    svg.append(el("rect", { x: lx, y: m.t, width: 12, height: 4, fill: color }));
    svg.append(el("text", { x: lx + 16, y: m.t + 6, class: "legend-text" }, s.name + (big(s) ? " (right axis)" : "")));
  });
}

function barChart(svg, counts, edges) {
  svg.replaceChildren();
  const W = svg.clientWidth || 500, H = svg.clientHeight || 210;
  const m = { l: 40, r: 12, t: 10, b: 34 };
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  if (!counts.length) {
    svg.append(el("text", { x: W / 2, y: H / 2, "text-anchor": "middle" }, "no latencies recorded"));
    return;
  }
  const max = Math.max(...counts);
  const bw = (W - m.l - m.r) / counts.length;
  const y = (v) => H - m.b - (v / max) * (H - m.t - m.b);
  for (let g = 0; g <= 4; g++) {
    const v = Math.round((g / 4) * max);
    svg.append(el("line", { x1: m.l, x2: W - m.r, y1: y(v), y2: y(v), class: "grid" }));
    svg.append(el("text", { x: m.l - 6, y: y(v) + 4, "text-anchor": "end" }, String(v)));
  }
  counts.forEach((c, i) => {
    const bar = el("rect", { x: m.l + i * bw + 1, y: y(c), width: Math.max(1, bw - 2), height: H - m.b - y(c), class: "hbar" });
    bar.append(el("title", {}, `${fmtNum(edges[i])}–${fmtNum(edges[i + 1])} ms: ${c}`));
    svg.append(bar);
  });
  svg.append(el("line", { x1: m.l, x2: W - m.r, y1: H - m.b, y2: H - m.b, class: "axis" }));
  const ticks = [0, Math.floor(counts.length / 2), counts.length];
  ticks.forEach((i) => svg.append(el("text", { x: m.l + i * bw, y: H - m.b + 14, "text-anchor": "middle" }, fmtNum(edges[i]))));
  svg.append(el("text", { x: (W + m.l) / 2, y: H - 4, "text-anchor": "middle" }, "milliseconds"));
}

/* -- runs page ---------------------------------------------------------------------- */

function initRuns(data) {
  const params = new URLSearchParams(window.location.search);
  const colBoxes = Array.from(document.querySelectorAll("[data-toggle-col]"));
  const showCol = (box) => {
    document.querySelectorAll(`[data-col="${CSS.escape(box.dataset.toggleCol)}"]`).forEach((cell) => {
      cell.classList.toggle("col-hidden", !box.checked);
    });
  };
  // ?cols=hit@5,mrr and ?plot=mrr: the chosen columns and plotted metrics (links keep them).
  if (params.has("cols")) {
    const cols = params.get("cols").split(",");
    colBoxes.forEach((box) => { box.checked = cols.includes(box.dataset.toggleCol); showCol(box); });
  }
  colBoxes.forEach((box) => box.addEventListener("change", () => {
    showCol(box);
    setParams({ cols: colBoxes.filter((b) => b.checked).map((b) => b.dataset.toggleCol).join(",") || "none" });
  }));
  const plotBoxes = Array.from(document.querySelectorAll("#chart-metrics input"));
  if (params.has("plot")) {
    const plot = params.get("plot").split(",");
    plotBoxes.forEach((box) => { box.checked = plot.includes(box.value); });
  }
  plotBoxes.forEach((box) => box.addEventListener("change", () => {
    setParams({ plot: plotBoxes.filter((b) => b.checked).map((b) => b.value).join(",") || "none" });
  }));
  const button = document.getElementById("diff-selected");
  const side = document.getElementById("compare-selected");
  const hint = document.getElementById("diff-hint");
  const picks = () => Array.from(document.querySelectorAll("input.pick:checked")).map((b) => Number(b.value));
  document.querySelectorAll("input.pick").forEach((box) => box.addEventListener("change", () => {
    const chosen = picks();
    button.disabled = side.disabled = chosen.length !== 2;
    hint.textContent = chosen.length === 2 ? `run ${Math.min(...chosen)} → run ${Math.max(...chosen)}` : "Tick two runs to compare them.";
  }));
  const open = (path) => () => {
    const [a, b] = picks().sort((p, q) => p - q);
    window.location.href = `${path}?a=${a}&b=${b}`;
  };
  if (button) button.addEventListener("click", open("/diff"));
  if (side) side.addEventListener("click", open("/compare"));
  // ?baseline=RUN: the page is rendered against it, so a new pick reloads (issue 15.2).
  const pick = document.getElementById("baseline-pick");
  if (pick) pick.addEventListener("change", () => {
    const p = new URLSearchParams(window.location.search);
    if (pick.value) p.set("baseline", pick.value); else p.delete("baseline");
    p.delete("page");
    window.location.search = p.toString();
  });
  // Health shading explains only the columns on show: no legend for hidden metrics.
  const legend = document.getElementById("health-legend");
  const syncLegend = () => {
    if (!legend) return;
    const shaded = legend.dataset.shaded.split(",");
    legend.hidden = !colBoxes.some((b) => b.checked && shaded.includes(b.dataset.toggleCol));
  };
  colBoxes.forEach((box) => box.addEventListener("change", syncLegend));
  syncLegend();
  const svg = document.getElementById("runs-chart");
  if (!svg) return;
  const draw = () => {
    const chosen = Array.from(document.querySelectorAll("#chart-metrics input:checked")).map((b) => b.value);
    const series = chosen.map((name) => ({ name, values: data.runs.map((r) => (r.metrics[name] ?? null)) }));
    lineChart(svg, series, data.runs.map((r) => String(r.id)), { xTitle: "run" });
  };
  document.querySelectorAll("#chart-metrics input").forEach((b) => b.addEventListener("change", draw));
  draw();
  window.addEventListener("resize", draw);
}

/* -- run page ----------------------------------------------------------------------- */

function h(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

/* A chunk's text as stored with the run, gold quotes in <mark> (issue 15.1). Segments are
   plain text from the server; each becomes a text node, never markup. */
function chunkText(hit) {
  if (hit.text_source === "none" || !hit.text) return h("div", "chunk-text hint", "text not stored with this run");
  const box = h("div", "chunk-text");
  const segments = hit.segments || [{ text: hit.text, quote: false }];
  segments.forEach((s) => box.append(s.quote ? h("mark", "quote", s.text) : document.createTextNode(s.text)));
  if (hit.text_source === "snippet") box.append(h("span", "hint", " (first words only: stored by an older version)"));
  return box;
}

function goldAndMetrics(q) {
  const frag = document.createDocumentFragment();
  const quoted = (q.gold || []).filter((g) => g.quote || g.chunk);
  if (quoted.length) {
    const list = h("ul", "gold small");
    quoted.forEach((g) => {
      const li = h("li", "");
      li.append(h("code", "", g.chunk || g.doc), ` grade ${g.grade}`);
      if (g.quote) li.append(": ", h("q", "", g.quote));
      list.append(li);
    });
    frag.append(h("p", "small", "gold passages:"), list);
  }
  const names = Object.keys(q.metrics || {});
  if (names.length) {
    const line = h("p", "small q-metrics");
    names.forEach((name) => line.append(h("span", "metric-pill", `${name} ${fmtNum(q.metrics[name])}`), " "));
    frag.append(line);
  }
  return frag;
}

/* A question's details, built on first expand from the page data (textContent only:
   gold text and answers never become markup). Keeps a 2,000-question page light. */
function renderDetail(q) {
  const box = h("div", "detail");
  const expected = h("p", "small", "expected: ");
  q.expected.forEach((d) => { expected.append(h("code", "", d), " "); });
  box.append(expected, goldAndMetrics(q));
  if (q.error) box.append(h("p", "worse", `error: ${q.error}`));
  if (q.retrieved.length) {
    const list = h("ol", "chunks");
    q.retrieved.forEach((hit) => {
      const li = h("li", `mark-${hit.mark}`);
      let badge = hit.mark;
      if (hit.mark === "gold") badge += ` ${hit.grade}`;
      else if (hit.judge_grade !== null && hit.judge_grade !== undefined) badge += ` ${hit.judge_grade}`;
      const mark = h("span", `badge mark ${hit.mark}`, badge);
      mark.title = `relevance: ${hit.mark}`;
      li.append(h("span", "small rank", `#${hit.rank}`), " ", mark, " ", h("code", "", hit.id), " ", h("span", "small", `score ${fmtNum(hit.score)}`));
      li.append(chunkText(hit));
      list.append(li);
    });
    box.append(list);
  }
  if (q.answer !== null && q.answer !== undefined) {
    const answer = h("div", "answer");
    answer.append(h("strong", "", "Answer"), h("p", "", q.answer));
    box.append(answer);
  }
  if (q.answer_ok !== null && q.answer_ok !== undefined) {
    box.append(h("p", `small ${q.answer_ok ? "better" : "worse"}`, `answer check: ${q.answer_ok ? "passed" : "failed"}`));
  }
  if (q.generation_error) box.append(h("p", "worse", `generation error: ${q.generation_error}`));
  if (q.verdict) {
    const verdict = h("div", `verdict ${q.verdict.supported ? "supported" : "unsupported"}`);
    const head = h("p", "");
    head.append(h("strong", "", "Judge"), `: ${q.verdict.supported ? "supported" : "not supported"}`);
    verdict.append(head);
    const claims = q.verdict.unsupported_claims || [];
    if (claims.length) {
      const list = h("ul", "claims");
      claims.forEach((c) => list.append(h("li", "", c)));
      verdict.append(h("p", "small", "unsupported claims:"), list);
    }
    if (q.verdict.reason) verdict.append(h("p", "small", `reason: ${q.verdict.reason}`));
    box.append(verdict);
  } else if (q.answer !== null && q.answer !== undefined) {
    box.append(h("p", "small hint", "no judge verdict (run ragmeter judge faithfulness or judge lexical)"));
  }
  if (q.blame) {
    const blame = h("p", "");
    blame.append(h("strong", "", "Blame"), " ", h("span", `badge blame-${q.blame}`, q.blame));
    box.append(blame);
  }
  if (!q.hit && !q.error && window.ragmeterRunId) box.append(goldEditPanel(q, window.ragmeterRunId, box));
  return box;
}

/* -- gold edits from a miss (issue 15.3) -------------------------------------------
   Mark a retrieved chunk relevant (grade 0-3; a passage selected in its text becomes the
   quote) or an expected document wrong. The server checks the edit against the run and
   stores it; `ragmeter gold apply-edits` writes it into the gold file later. */

function describeEdit(e) {
  const what = e.action === "wrong" ? `${e.doc}: not relevant`
    : `${e.chunk || e.doc}: relevant, grade ${e.grade}${e.quote ? ` (quote “${e.quote}”)` : ""}`;
  return `#${e.id} ${what} · ${e.user} · ${e.created.slice(0, 16).replace("T", " ")}`;
}

function goldEditPanel(q, runId, detail) {
  const panel = h("section", "gold-fix");
  panel.append(h("h4", "", "Fix the gold set"));
  panel.append(h("p", "hint", "Mark a retrieved chunk above relevant — select a passage in its text first to quote it — or an expected document wrong. Edits are stored with your name; ragmeter gold apply-edits writes them into the gold file."));
  let quote = null;  // {text, rank}: the passage selected inside one chunk's text
  const noQuote = "no passage selected: the whole document is marked";
  const chosen = h("p", "small quote-chosen", noQuote);
  const clear = h("button", "secondary small-button", "clear the selection");
  clear.type = "button";
  clear.hidden = true;
  clear.addEventListener("click", () => { quote = null; chosen.textContent = noQuote; clear.hidden = true; });
  document.addEventListener("selectionchange", () => {
    const sel = window.getSelection();
    const text = sel ? sel.toString().trim() : "";
    const node = sel && sel.anchorNode ? (sel.anchorNode.nodeType === 1 ? sel.anchorNode : sel.anchorNode.parentElement) : null;
    const chunk = node ? node.closest(".chunk-text") : null;
    if (!text || !chunk || !detail.contains(chunk)) return;
    const items = Array.from(detail.querySelectorAll("ol.chunks > li"));
    const rank = items.indexOf(chunk.closest("li")) + 1;
    if (rank < 1) return;
    quote = { text, rank };
    chosen.textContent = `selected in chunk ${rank}: “${text}” `;
    clear.hidden = false;
  });
  const status = h("p", "status");
  const list = h("ul", "gold-edits");
  const show = (edits) => list.replaceChildren(...edits.map((e) => h("li", "", describeEdit(e))));
  const send = async (body) => {
    try {
      const saved = await post("/api/gold-edits", { run: String(runId), item_id: q.id, ...body });
      status.className = "status ok";
      status.textContent = `saved edit #${saved.edit.id}`;
      list.append(h("li", "", describeEdit(saved.edit)));
    } catch (error) {
      status.className = "status err";
      status.textContent = String(error.message);
    }
  };
  // The controls go beside each retrieved chunk of the detail (ol.chunks > li, in rank
  // order); if the detail lists chunks some other way, they get a table of their own.
  const markControls = (hit, index) => {
    const span = h("span", "gold-mark nowrap");
    span.dataset.chunk = hit.id;
    const grade = h("select", "");
    grade.setAttribute("aria-label", `grade for ${hit.id}`);
    [0, 1, 2, 3].forEach((g) => { const o = h("option", "", String(g)); o.value = String(g); grade.append(o); });
    grade.value = "2";
    const button = h("button", "secondary small-button", "Mark relevant");
    button.type = "button";
    button.addEventListener("click", () => {
      const body = { action: "relevant", doc: hit.doc, chunk: hit.id, grade: Number(grade.value) };
      if (quote && quote.rank !== index + 1) {
        // Never drop a selected passage quietly: it belongs to another chunk.
        status.className = "status err";
        status.textContent = `the selected passage is in chunk ${quote.rank}, not ${index + 1}: select inside this chunk's text, or clear the selection`;
        return;
      }
      if (quote) body.quote = quote.text;
      send(body);
    });
    span.append("grade ", grade, " ", button);
    return span;
  };
  const items = Array.from(detail.querySelectorAll("ol.chunks > li"));
  const parts = [chosen, clear];
  if (items.length === q.retrieved.length) {
    items.forEach((li, index) => li.querySelector("code") ? li.querySelector("code").after(" ", markControls(q.retrieved[index], index)) : li.append(markControls(q.retrieved[index], index)));
  } else {
    const own = h("ol", "gold-fix-chunks");
    q.retrieved.forEach((hit, index) => { const li = h("li", ""); li.append(h("code", "", hit.id), " ", markControls(hit, index)); own.append(li); });
    parts.push(own);
  }
  const expected = h("p", "expected-docs");
  q.expected.forEach((doc) => {
    const span = h("span", "expected-doc nowrap");
    span.dataset.doc = doc;
    const button = h("button", "danger small-button", "Not relevant");
    button.type = "button";
    button.addEventListener("click", () => send({ action: "wrong", doc }));
    span.append("expected ", h("code", "", doc), " ", button, " ");
    expected.append(span);
  });
  panel.append(...parts, expected, status, list);
  fetch(`/api/gold-edits?run=${runId}&item=${encodeURIComponent(q.id)}`, { credentials: "same-origin" })
    .then((r) => (r.ok ? r.json() : { edits: [] })).then((data) => show(data.edits)).catch(() => {});
  return panel;
}

function fmtFixed(v, digits) {
  if (v === null || v === undefined) return "–";
  return Math.abs(v) < 100 ? v.toFixed(digits) : v.toFixed(0);
}

/* The run page's view state lives in the URL (?tag=&q=&misses=1&page=&open=), so a reload
   or a shared link shows the same questions. */
function readState() {
  const p = new URLSearchParams(window.location.search);
  return { tag: p.get("tag") || "", q: p.get("q") || "", misses: p.get("misses") === "1",
    page: Math.max(1, parseInt(p.get("page") || "1", 10) || 1), open: p.get("open") || "",
    sort: p.get("sort") || "" };
}

function filterParams(state) {
  const p = new URLSearchParams();
  if (state.tag) p.set("tag", state.tag);
  if (state.q) p.set("q", state.q);
  if (state.misses) p.set("misses", "1");
  if (state.sort) p.set("sort", state.sort);
  return p;
}

/* The same rules as views.shown_questions on the server (the CSV/JSON export). */
const SORT_FIELDS = { id: "id", rank: "first_relevant_rank", latency: "latency_ms" };
function shownQuestions(all, state) {
  const tag = state.tag, text = state.q.trim().toLowerCase();
  const kept = all.filter((q) => (!tag || q.tags.includes(tag)) &&
    (!text || q._search.includes(text)) && (!state.misses || (!q.hit && !q.error)));
  const field = SORT_FIELDS[state.sort.replace(/^-/, "")];
  if (!field) return kept;
  const dir = state.sort.startsWith("-") ? -1 : 1;
  const key = (q) => (q[field] === null || q[field] === undefined ? Infinity : q[field]);
  return kept.slice().sort((a, b) => { const x = key(a), y = key(b); return (x < y ? -1 : x > y ? 1 : 0) * dir; });
}

function writeState(state) {
  setParams({ tag: state.tag, q: state.q, misses: state.misses ? "1" : "", sort: state.sort,
    page: state.page > 1 ? String(state.page) : "", open: state.open });
}

async function fillDetail(details, runId, q) {
  const box = h("div", "detail");
  box.append(h("p", "small hint", "loading…"));
  details.append(box);
  try {
    const response = await fetch(`/api/runs/${runId}/questions/${encodeURIComponent(q.id)}`, { credentials: "same-origin" });
    const data = await response.json();
    if (!response.ok) throw new Error(data.error ? data.error.message : `HTTP ${response.status}`);
    box.replaceWith(renderDetail(data));
  } catch (error) {
    box.replaceChildren(h("p", "worse", `could not load the question: ${error.message}`));
  }
}

function questionRow(q, runId, state, onOpen) {
  const tr = h("tr", `q ${q.hit ? "hit" : (q.error ? "error" : "miss")}`);
  tr.dataset.id = q.id;
  tr.dataset.tags = q.tags.join(" ");
  const details = h("details", "");
  details.append(h("summary", "", q.question));
  details.addEventListener("toggle", () => {
    if (details.open && !details.dataset.filled) {
      details.dataset.filled = "1";
      fillDetail(details, runId, q);
    }
    onOpen(details.open ? q.id : (state.open === q.id ? "" : state.open));
  });
  const tags = h("td", "");
  q.tags.forEach((t) => tags.append(h("span", "tag", t)));
  const first = h("td", "num");
  if (q.error) first.textContent = "error";
  else if (q.first_relevant_rank === null) first.append(h("span", "worse", "none"));
  else first.textContent = String(q.first_relevant_rank);
  const cell = h("td", "");
  cell.append(details);
  tr.append(h("td", "mono small", q.id), cell, tags, first, h("td", "num", fmtFixed(q.latency_ms, 1)));
  if (state.open === q.id) { details.open = true; }
  return tr;
}

function missItem(q) {
  const li = h("li", "");
  li.dataset.id = q.id;
  li.dataset.tags = q.tags.join(" ");
  li.append(h("span", "mono", q.id), " ", q.question, " ");
  const tags = h("span", "tags");
  q.tags.forEach((t) => tags.append(h("span", "tag", t)));
  li.append(tags);
  const small = h("div", "small", "expected ");
  q.expected.forEach((d) => small.append(h("code", "", d), " "));
  small.append(`· first relevant rank ${q.first_relevant_rank === null ? "none" : q.first_relevant_rank} · got `);
  q.got.forEach((d) => small.append(h("code", "", d), " "));
  li.append(small);
  return li;
}

function initCauseFilter() {
  // Issue 28: show only the misses explain gave one cause (or none: "unexplained").
  const sel = document.getElementById("cause-filter");
  if (!sel) return;
  sel.addEventListener("change", () => {
    document.querySelectorAll("#why-missed tbody tr").forEach((tr) => {
      tr.hidden = sel.value !== "" && !tr.dataset.causes.split(" ").includes(sel.value);
    });
  });
}

function initRun(data) {
  initCauseFilter();
  const k = data.hit_curve.length;
  const curve = document.getElementById("hit-curve");
  const drawCharts = () => {
    lineChart(curve, [{ name: "hit@k", values: data.hit_curve }], Array.from({ length: k }, (_, i) => String(i + 1)), { xTitle: "k" });
    barChart(document.getElementById("latency-hist"), data.latency_histogram.counts, data.latency_histogram.edges);
  };
  drawCharts();
  window.addEventListener("resize", drawCharts);

  const runId = data.run.id;
  window.ragmeterRunId = runId;
  const tagSel = document.getElementById("tag-filter");
  const search = document.getElementById("q-search");
  const missesOnly = document.getElementById("misses-only");
  const count = document.getElementById("q-count");
  const body = document.querySelector("#questions tbody");
  const pager = document.getElementById("q-pager");
  const missList = document.getElementById("misses");
  const missMore = document.getElementById("misses-more");
  // A big run's table comes a page at a time from the server, picked by the URL's filters
  // (issue 29.1): a changed filter, sort or page loads that URL instead of filtering here.
  const server = data.server || null;
  const all = server ? server.questions : data.questions;
  const reload = () => { writeState(state); window.location.reload(); };
  all.forEach((q) => { q._search = [q.id, q.question, ...q.expected, ...q.got].join(" ").toLowerCase(); });
  const missed = all.filter((q) => !q.hit && !q.error);
  const state = readState();
  tagSel.value = state.tag;
  if (tagSel.value !== state.tag) state.tag = "";
  search.value = state.q;
  missesOnly.checked = state.misses;

  const setOpen = (id) => { state.open = id; writeState(state); };
  const exportCsv = document.getElementById("export-csv");
  const exportJson = document.getElementById("export-json");
  const headers = document.querySelectorAll("#questions thead th[data-key]");
  headers.forEach((th) => {
    const sort = () => {
      state.sort = state.sort === th.dataset.key ? `-${th.dataset.key}` : th.dataset.key;
      state.page = 1;
      if (server) reload(); else render();
    };
    th.addEventListener("click", sort);
    th.addEventListener("keydown", (e) => { if (e.key === "Enter") sort(); });
  });
  const render = () => {
    const tag = state.tag;
    const shown = server ? all : shownQuestions(all, state);
    headers.forEach((th) => {
      const key = th.dataset.key;
      if (state.sort === key) th.setAttribute("aria-sort", "ascending");
      else if (state.sort === `-${key}`) th.setAttribute("aria-sort", "descending");
      else th.removeAttribute("aria-sort");
    });
    const query = filterParams(state).toString();
    exportCsv.href = `/api/runs/${runId}/questions.csv${query ? `?${query}` : ""}`;
    exportJson.href = `/api/runs/${runId}/questions.json${query ? `?${query}` : ""}`;
    const pages = server ? server.pages : Math.max(1, Math.ceil(shown.length / data.page_size));
    state.page = server ? server.page : Math.min(state.page, pages);
    const start = server ? 0 : (state.page - 1) * data.page_size;
    body.replaceChildren(...shown.slice(start, start + data.page_size).map((q) => questionRow(q, runId, state, setOpen)));
    pager.replaceChildren();
    if (pages > 1) {
      const go = (page, label) => {
        const button = h("button", "", label);
        button.type = "button";
        button.disabled = page < 1 || page > pages;
        button.addEventListener("click", () => { state.page = page; if (server) reload(); else render(); });
        return button;
      };
      pager.append(go(state.page - 1, "← previous"), h("span", "", `page ${state.page} of ${pages}`), go(state.page + 1, "next →"));
    }
    const [nShown, nAll] = server ? [server.shown, server.total] : [shown.length, all.length];
    count.textContent = nShown === nAll ? `${nAll} questions` : `${nShown} of ${nAll} questions`;
    const misses = server ? server.misses : missed.filter((q) => !tag || q.tags.includes(tag));
    const nMisses = server ? server.n_misses : misses.length;
    missList.replaceChildren(...misses.slice(0, data.misses_shown).map(missItem));
    missMore.hidden = nMisses <= data.misses_shown;
    missMore.textContent = `… and ${nMisses - data.misses_shown} more: tick "misses only" to see them all in the table.`;
    document.getElementById("miss-count").textContent = tag ? `${nMisses} with tag ${tag}` : String(server ? server.n_missed : missed.length);
    document.querySelectorAll("#by-tag tr.tag-row").forEach((tr) => tr.classList.toggle("selected-tag", tr.dataset.tag === tag));
    writeState(state);
  };
  const refilter = () => {
    state.tag = tagSel.value; state.q = search.value; state.misses = missesOnly.checked; state.page = 1;
    if (server) reload(); else render();
  };
  [tagSel, missesOnly].forEach((c) => c.addEventListener("change", refilter));
  search.addEventListener(server ? "change" : "input", refilter);
  document.querySelectorAll("a.tag-link").forEach((a) => a.addEventListener("click", (e) => {
    e.preventDefault();
    tagSel.value = tagSel.value === a.dataset.tag ? "" : a.dataset.tag;
    refilter();
  }));
  if (state.open) {
    const index = all.findIndex((q) => q.id === state.open);
    if (index < 0) state.open = "";
  }
  render();
  if (state.open) {
    const row = body.querySelector(`tr[data-id="${CSS.escape(state.open)}"]`);
    if (row) row.scrollIntoView({ block: "center" });
  }
}

/* -- label and review pages ------------------------------------------------------- */

async function post(url, body) {
  const response = await fetch(url, {
    method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body),
    credentials: "same-origin",
  });
  const data = await response.json();
  if (!response.ok) throw new Error(data.error ? data.error.message : `HTTP ${response.status}`);
  return data;
}

function setStatus(card, ok, text) {
  const status = card.querySelector(".status");
  status.className = "status " + (ok ? "ok" : "err");
  status.textContent = text;
}

function initLabel() {
  // The run picker and the filter are a GET form (so the URL holds them); submit on change.
  const form = document.getElementById("label-filters");
  if (form) {
    form.querySelectorAll("select, input").forEach((c) => c.addEventListener("change", () => form.requestSubmit()));
  }
  const count = document.getElementById("label-count");
  document.querySelectorAll(".card[data-item]").forEach((card) => {
    card.querySelectorAll("button[data-supported]").forEach((button) => button.addEventListener("click", async () => {
      const body = { run: card.dataset.run, item_id: card.dataset.item, supported: button.dataset.supported === "true" };
      try {
        await post("/api/labels", body);
        setStatus(card, true, `saved: ${body.supported ? "supported" : "not supported"}`);
        if (!card.classList.contains("done") && count) count.textContent = String(Number(count.textContent) + 1);
        card.querySelectorAll("button[data-supported]").forEach((b) => {
          b.classList.toggle("chosen", b === button);
          b.setAttribute("aria-pressed", b === button ? "true" : "false");
        });
        card.classList.add("done");
      } catch (error) {
        setStatus(card, false, String(error.message));
      }
    }));
  });
}

function lines(text) {
  return text.split("\n").map((s) => s.trim()).filter(Boolean);
}

function initReview() {
  document.querySelectorAll(".card[data-item]").forEach((card) => {
    const form = card.querySelector(".edit-form");
    // A flywheel candidate has no relevant document: the reviewer marks a retrieved one.
    card.querySelectorAll("button[data-accept-doc]").forEach((button) => button.addEventListener("click", async () => {
      try {
        const saved = await post("/api/review", { item_id: card.dataset.item, decision: "accept", relevant: [button.dataset.acceptDoc] });
        setStatus(card, true, `saved: ${saved.item.status} with ${button.dataset.acceptDoc}`);
        card.classList.add("done");
        if (form) form.classList.remove("open");
        const why = card.querySelector(".accept-reason");
        if (why) why.hidden = true;
      } catch (error) {
        setStatus(card, false, String(error.message));
      }
    }));
    card.querySelectorAll("button[data-decision]").forEach((button) => button.addEventListener("click", async () => {
      const decision = button.dataset.decision;
      if (decision === "edit" && !form.classList.contains("open")) {
        form.classList.add("open");
        return;
      }
      const body = { item_id: card.dataset.item, decision };
      if (decision === "edit") {
        body.question = form.querySelector("[name=question]").value;
        body.relevant = lines(form.querySelector("[name=relevant]").value);
        body.answer_contains = lines(form.querySelector("[name=answer_contains]").value);
      }
      try {
        const saved = await post("/api/review", body);
        setStatus(card, true, `saved: ${saved.item.status}`);
        card.classList.add("done");
        form.classList.remove("open");
      } catch (error) {
        setStatus(card, false, String(error.message));
      }
    }));
  });
}

/* -- table exports ---------------------------------------------------------------- */

/* Every table with an id (but the question table, exported by the server across its pages)
   gets "CSV · JSON" of exactly what is shown: the visible rows in their current order, the
   visible columns, raw numbers (data-value) where a cell has one. Built in the page from
   what it shows, so it cannot disagree with it; no request is made. */
function shownTable(table) {
  const visible = (node) => node.getClientRects().length > 0;
  const heads = Array.from(table.tHead ? table.tHead.rows[0].cells : []);
  const columns = heads.map((th, i) => ({ i, name: th.textContent.replace(/\s+/g, " ").trim() }))
    .filter((c) => c.name && visible(heads[c.i]));
  const rows = Array.from(table.tBodies[0] ? table.tBodies[0].rows : []).filter(visible).map((tr) => {
    const record = {};
    columns.forEach((c) => {
      const cell = tr.cells[c.i];
      if (!cell) { record[c.name] = null; return; }
      const raw = cell.dataset.value;
      const num = raw === undefined || raw === "" ? NaN : Number(raw);
      record[c.name] = Number.isFinite(num) ? num : cell.textContent.replace(/\s+/g, " ").trim();
    });
    return record;
  });
  return { table: table.id, columns: columns.map((c) => c.name), rows };
}

/* A text starting like a formula (= + - @ tab CR) gets a leading ' so a spreadsheet shows it
   as text (OWASP CSV injection guidance; formats/spreadsheet.py does the same on the server).
   Numbers stay numbers. */
function csvCell(v) {
  let text = v === null || v === undefined ? "" : String(v);
  if (typeof v === "string" && /^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\n\r]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

function csvText(shown) {
  const cell = csvCell;
  return [shown.columns.map(cell).join(","), ...shown.rows.map((r) => shown.columns.map((c) => cell(r[c])).join(","))].join("\n") + "\n";
}

function addTableExports() {
  document.querySelectorAll("table[id]").forEach((table) => {
    if (table.id === "questions" || !table.tHead) return;
    const bar = h("p", "small exports table-export", "export what is shown: ");
    ["csv", "json"].forEach((fmt, n) => {
      const link = h("a", `export-${fmt}`, fmt.toUpperCase());
      link.href = "#";
      link.download = `${table.id}.${fmt}`;
      link.addEventListener("click", () => {
        const shown = shownTable(table);
        const text = fmt === "csv" ? csvText(shown) : JSON.stringify(shown, null, 1);
        link.href = `data:${fmt === "csv" ? "text/csv" : "application/json"};charset=utf-8,${encodeURIComponent(text)}`;
      });
      if (n) bar.append(" · ");
      bar.append(link);
    });
    bar.dataset.table = table.id;
    const box = table.closest(".table-wrap") || table;
    box.before(bar);
  });
}

/* The side-by-side page is rendered on the server from its URL (?a=&b=&changed=1&tag=):
   a changed filter loads that URL, so a reload or a shared link shows the same view. */
function initCompare() {
  const form = document.getElementById("compare-filters");
  if (!form) return;
  form.querySelectorAll("input[type=checkbox], select").forEach((c) => c.addEventListener("change", () => {
    const p = new URLSearchParams();
    for (const [key, value] of new FormData(form)) if (value) p.set(key, value);
    window.location.search = p.toString();
  }));
}

document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("table.sortable").forEach(makeSortable);
  addTableExports();
  const data = pageData();
  const page = document.body.dataset.page;
  if (page === "runs" && data && data.runs.length) initRuns(data);
  if (page === "run" && data) initRun(data);
  if (page === "label") initLabel();
  if (page === "review") initReview();
  if (page === "compare") initCompare();
});
