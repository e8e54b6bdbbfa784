/* opsched demo page: draws the data computed in Python (no library, no network). */
(function () {
  "use strict";
  var DATA = JSON.parse(document.getElementById("opsched-data").textContent);
  var SVGNS = "http://www.w3.org/2000/svg";
  var PALETTE = ["#2f6fdb", "#3b9c5a", "#d8843b", "#8a55c9", "#cc4b74", "#2a9aa5",
    "#7a8a2f", "#b0603a", "#4f5bd5", "#6c7a89"];

  // ------------------------------------------------------------------ small helpers
  function $(id) { return document.getElementById(id); }
  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    for (var k in attrs || {}) { e.setAttribute(k, attrs[k]); }
    if (text !== undefined) { e.textContent = text; }
    return e;
  }
  function sv(tag, attrs, text) {
    var e = document.createElementNS(SVGNS, tag);
    for (var k in attrs || {}) { e.setAttribute(k, attrs[k]); }
    if (text !== undefined) { e.textContent = text; }
    return e;
  }
  function clear(node) { while (node.firstChild) { node.removeChild(node.firstChild); } }
  function fmt(x) {
    if (x === null || x === undefined) { return "-"; }
    return Math.abs(x - Math.round(x)) < 1e-9 ? String(Math.round(x)) : x.toFixed(2);
  }
  function bytes(b) {
    if (b >= 1048576) { return (b / 1048576).toFixed(2) + " MiB"; }
    if (b >= 1024) { return (b / 1024).toFixed(1) + " KiB"; }
    return b + " B";
  }
  function hash(s) {
    var h = 0;
    for (var i = 0; i < s.length; i++) { h = (h * 31 + s.charCodeAt(i)) | 0; }
    return Math.abs(h);
  }
  function colorFor(name) {
    var at = name.lastIndexOf("@");
    if (at >= 0) { return PALETTE[parseInt(name.slice(at + 1), 10) % PALETTE.length]; }
    return PALETTE[hash(name) % PALETTE.length];
  }
  function niceStep(span, ticks) {
    var raw = span / ticks, p = Math.pow(10, Math.floor(Math.log10(raw || 1)));
    var m = raw / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
  }

  // ------------------------------------------------------------------ drawing
  /* A DAG drawn left to right by column; states: name -> css class; badges: name -> text. */
  function drawDag(host, dag, opts) {
    opts = opts || {};
    clear(host);
    var nodes = dag.nodes, cols = 0, rows = 0, pos = {}, col = {};
    nodes.forEach(function (n) { col[n.name] = n.x; });
    function colOf(v) { return col[v]; }
    nodes.forEach(function (n) { cols = Math.max(cols, n.x + 1); rows = Math.max(rows, n.y + 1); });
    var bw = opts.nodeWidth || 78, bh = 28, gx = opts.gapX || 34, gy = 16;
    var long = dag.edges.some(function (e) { return e.dst && colOf(e.dst) - colOf(e.src) > 1; });
    var lift = long ? 26 : 0;  // room above the nodes for edges that skip columns
    var W = cols * (bw + gx) - gx + 20, H = rows * (bh + gy) - gy + 20 + lift;
    var scale = opts.scale || 1;
    var svg = sv("svg", { viewBox: "0 0 " + W + " " + H, width: W * scale, height: H * scale, role: "img",
      "class": "dag" });
    var defs = sv("defs");
    var marker = sv("marker", { id: "arrow" + (opts.id || ""), viewBox: "0 0 10 10", refX: 10,
      refY: 5, markerWidth: 8, markerHeight: 8, markerUnits: "userSpaceOnUse",
      orient: "auto-start-reverse" });
    marker.appendChild(sv("path", { d: "M0,0 L10,5 L0,10 z", fill: "#8a93a3" }));
    defs.appendChild(marker);
    svg.appendChild(defs);
    nodes.forEach(function (n) {
      // centre each column's nodes vertically
      var inCol = nodes.filter(function (m) { return m.x === n.x; }).length;
      var off = (rows - inCol) * (bh + gy) / 2;
      pos[n.name] = { x: 10 + n.x * (bw + gx), y: 10 + lift + off + n.y * (bh + gy) };
    });
    var crit = {};
    (opts.path || []).forEach(function (v, i, a) { crit[v] = true; if (i) { crit[a[i - 1] + ">" + v] = true; } });
    dag.edges.forEach(function (e) {
      var a = pos[e.src], b = pos[e.dst];
      var x1 = a.x + bw, y1 = a.y + bh / 2, x2 = b.x, y2 = b.y + bh / 2, mx = (x1 + x2) / 2;
      var d = "M" + x1 + "," + y1 + " C" + mx + "," + y1 + " " + mx + "," + y2 + " " + x2 + "," + y2;
      if (colOf(e.dst) - colOf(e.src) > 1) {  // skips a column: arc over the nodes between
        var top = Math.min(a.y, b.y) - lift + 12;
        d = "M" + (a.x + bw / 2) + "," + a.y + " C" + (a.x + bw / 2) + "," + top + " " +
          (b.x + bw / 2) + "," + top + " " + (b.x + bw / 2) + "," + b.y;
      }
      var p = sv("path", { d: d, "class": "edge" + (crit[e.src + ">" + e.dst] ? " crit" : ""),
        "marker-end": "url(#arrow" + (opts.id || "") + ")" });
      if (e.kind) { p.appendChild(sv("title", {}, e.src + " -> " + e.dst + ": " + e.kind)); }
      svg.appendChild(p);
    });
    nodes.forEach(function (n) {
      var st = (opts.states && opts.states[n.name]) || "waiting";
      var g = sv("g", { "class": "node " + st + (crit[n.name] ? " crit" : ""),
        "data-op": n.name, transform: "translate(" + pos[n.name].x + "," + pos[n.name].y + ")" });
      g.appendChild(sv("rect", { width: bw, height: bh, rx: 6 }));
      var label = n.name.length > 11 ? n.name.slice(0, 10) + "\u2026" : n.name;
      g.appendChild(sv("text", { x: bw / 2, y: bh / 2 + 4, "text-anchor": "middle" }, label));
      if (opts.badges && opts.badges[n.name] !== undefined) {
        g.appendChild(sv("circle", { cx: bw, cy: 0, r: 8, fill: "#fff", stroke: "#667" }));
        g.appendChild(sv("text", { x: bw, y: 4, "text-anchor": "middle", "class": "badge" },
          String(opts.badges[n.name])));
      }
      g.appendChild(sv("title", {}, n.name + (opts.tips ? opts.tips(n.name) : "")));
      svg.appendChild(g);
    });
    host.appendChild(svg);
  }

  /* Ops without a unit, packed into rows ("lanes") where none overlaps another: each op
     takes the first free lane of its group (`group(o)`, the row label) at its start, in
     order of start. Returns the row keys, their labels and each op's row key. */
  function packLanes(ops, group) {
    var free = {}, row = {}, keys = [], labels = {};
    ops.filter(function (o) { return o.unit === null || o.unit === undefined; })
      .sort(function (a, b) { return a.start - b.start || a.end - b.end; })
      .forEach(function (o) {
        var name = group(o), ends = free[name] || (free[name] = []), k = 0;
        while (k < ends.length && ends[k] > o.start) { k++; }
        if (k === ends.length) {
          var key = "none:" + name + ":" + k;
          keys.push(key);
          labels[key] = name + (k > 0 ? " " + (k + 1) : "");
        }
        ends[k] = o.end;
        row[o.name] = "none:" + name + ":" + k;
      });
    return { keys: keys, labels: labels, row: row };
  }

  /* Gantt chart: one row per unit; ops without a unit below them, in as many rows as ever
     run at once. */
  function drawGantt(host, ops, opts) {
    opts = opts || {};
    clear(host);
    var end = opts.horizon || 0, units = {};
    ops.forEach(function (o) {
      end = Math.max(end, o.end);
      if (o.unit !== null && o.unit !== undefined) { units[o.unit] = true; }
    });
    var rows = Object.keys(units).map(Number).sort(function (a, b) { return a - b; });
    if (opts.units) { rows = []; for (var u = 0; u < opts.units; u++) { rows.push(u); } }
    var lanes = packLanes(ops, opts.noneGroup || function () { return "no unit"; });
    var keys = rows.map(String).concat(lanes.keys);
    var W = opts.width || 640, L = 58, rh = 24, top = 6, H = top + keys.length * rh + 24;
    var sx = (W - L - 10) / (end || 1);
    var svg = sv("svg", { viewBox: "0 0 " + W + " " + H, role: "img" });
    keys.forEach(function (k, i) {
      var y = top + i * rh;
      svg.appendChild(sv("text", { x: 4, y: y + rh / 2 + 4 }, lanes.labels[k] || "unit " + k));
      svg.appendChild(sv("line", { x1: L, x2: W - 10, y1: y + rh, y2: y + rh, "class": "axis" }));
    });
    var step = niceStep(end || 1, 8);
    for (var t = 0; t <= end + 1e-9; t += step) {
      var x = L + t * sx;
      svg.appendChild(sv("line", { x1: x, x2: x, y1: top, y2: H - 18, "class": "axis" }));
      svg.appendChild(sv("text", { x: x, y: H - 6, "text-anchor": "middle" }, fmt(t)));
    }
    ops.forEach(function (o) {
      if (opts.until !== undefined && o.start > opts.until) { return; }
      var none = o.unit === null || o.unit === undefined;
      var key = none ? lanes.row[o.name] : String(o.unit);
      var i = keys.indexOf(key);
      if (i < 0) { return; }
      var x = L + o.start * sx, w = Math.max((o.end - o.start) * sx, 1.5), y = top + i * rh + 3;
      var g = sv("g", { "class": "bar", "data-op": o.name });
      var fill = opts.color ? opts.color(o) : colorFor(o.name);
      g.appendChild(sv("rect", { x: x, y: y, width: w, height: rh - 6, rx: 3, fill: fill,
        opacity: (opts.dim && opts.dim(o)) ? 0.35 : 1 }));
      var label = opts.label ? opts.label(o) : o.name;
      if (w > label.length * 5.6 + 4) {
        g.appendChild(sv("text", { x: x + w / 2, y: y + rh / 2 + 1, "text-anchor": "middle" }, label));
      }
      g.appendChild(sv("title", {}, o.name + ": " + fmt(o.start) + " \u2192 " + fmt(o.end) +
        (none ? "" : " on unit " + key)));
      svg.appendChild(g);
    });
    if (opts.clock !== undefined) {
      var cx = L + opts.clock * sx;
      svg.appendChild(sv("line", { x1: cx, x2: cx, y1: 0, y2: H - 18, "class": "now" }));
    }
    host.appendChild(svg);
  }

  /* Memory in use over time (a step function), with the peak marked. */
  function drawMemory(host, mem, horizon, width) {
    clear(host);
    var W = width || 640, H = 150, L = 62, top = 10, bottom = 22;
    var ts = mem.t, bs = mem.bytes, peak = Math.max.apply(null, bs.concat([1]));
    var end = Math.max(horizon || 0, ts[ts.length - 1] || 0) || 1;
    var sx = (W - L - 10) / end, sy = (H - top - bottom) / peak;
    var svg = sv("svg", { viewBox: "0 0 " + W + " " + H, role: "img" });
    var y0 = H - bottom, d = "M" + L + "," + y0;
    for (var i = 0; i < ts.length; i++) {
      var x = L + ts[i] * sx, y = y0 - bs[i] * sy;
      var nx = L + (i + 1 < ts.length ? ts[i + 1] : end) * sx;
      d += " L" + x + "," + y + " L" + nx + "," + y;
    }
    d += " L" + (L + end * sx) + "," + y0 + " Z";
    svg.appendChild(sv("line", { x1: L, x2: W - 10, y1: y0, y2: y0, "class": "axis" }));
    svg.appendChild(sv("path", { d: d, "class": "mem" }));
    var py = y0 - peak * sy;
    svg.appendChild(sv("line", { x1: L, x2: W - 10, y1: py, y2: py, "class": "peak" }));
    svg.appendChild(sv("text", { x: 4, y: py + 4 }, bytes(peak)));
    svg.appendChild(sv("text", { x: 4, y: y0 }, "0"));
    var step = niceStep(end, 8);
    for (var t = 0; t <= end + 1e-9; t += step) {
      svg.appendChild(sv("text", { x: L + t * sx, y: H - 6, "text-anchor": "middle" }, fmt(t)));
    }
    host.appendChild(svg);
  }

  function table(head, rows, numeric) {
    var t = el("table"), tr = el("tr");
    head.forEach(function (h) { tr.appendChild(el("th", {}, h)); });
    t.appendChild(tr);
    rows.forEach(function (r) {
      var row = el("tr");
      r.forEach(function (c, i) {
        row.appendChild(el("td", (numeric || []).indexOf(i) >= 0 ? { "class": "num" } : {}, c));
      });
      t.appendChild(row);
    });
    return t;
  }

  // ------------------------------------------------------------------ tabs
  function showTab(id) {
    Array.prototype.forEach.call(document.querySelectorAll(".tab"), function (b) {
      var on = b.getAttribute("data-panel") === id;
      b.classList.toggle("active", on);
      b.setAttribute("aria-selected", on ? "true" : "false");
      $(b.getAttribute("data-panel")).hidden = !on;
    });
  }

  // ------------------------------------------------------------------ tab 1: the loop
  var seed = DATA.seed, pos = 0, timer = null;
  function loopClock() { return pos === 0 ? 0 : seed.steps[pos - 1].t; }

  function renderLoop() {
    var a = seed.analysis, step = pos ? seed.steps[pos - 1] : null;
    $("clock").textContent = fmt(loopClock());
    $("step-label").textContent = pos === 0 ? "dependency analysis (before the loop)" :
      "event " + pos + " of " + seed.steps.length;
    $("btn-step").disabled = pos >= seed.steps.length;
    var states = {}, badges = {};
    seed.dag.nodes.forEach(function (n) {
      states[n.name] = step ? step.states[n.name] : (a.indeg[n.name] === 0 ? "ready" : "waiting");
      badges[n.name] = step ? step.indeg[n.name] : a.indeg[n.name];
    });
    drawDag($("loop-dag"), seed.dag, { id: "loop", scale: 1.5, states: states, badges: badges,
      path: pos === 0 ? a.critical_path_ops : [],
      tips: function (v) { return " waits for: " + (a.deps[v].join(", ") || "nothing"); } });
    var ph = $("loop-phases");
    clear(ph);
    function phase(title, text) {
      var li = el("li");
      li.appendChild(el("b", {}, title));
      li.appendChild(document.createTextNode(text));
      ph.appendChild(li);
    }
    if (!step) {
      phase("Dependency analysis", "count each op's unfinished dependencies (the badges): " +
        Object.keys(a.indeg).map(function (v) { return v + " " + a.indeg[v]; }).join(", ") + ".");
      phase("Ready set", "ops with none pending: " + a.sources.join(", ") + ".");
      phase("Unit assignment", "nothing runs yet; " + (seed.units ? seed.units + " units" : "unlimited units") + " are free.");
      phase("Clock", "starts at t = 0. Press Step.");
    } else {
      var rel = step.released.map(function (r) { return r.from + " \u2192 " + r.op + " (" + r.indeg + " left)"; });
      phase("1. Completions and dependencies", step.finished.length ?
        "finished at t = " + fmt(step.t) + ": " + step.finished.join(", ") + ". " +
        (rel.length ? "Pending counts drop: " + rel.join("; ") + "." : "Nothing waited on them.") :
        "nothing finishes at t = " + fmt(step.t) + ".");
      phase("2. Ready set", step.ready.length ? "[" + step.ready.join(", ") + "]" : "empty");
      phase("3. Unit assignment", (step.started.length ? step.started.map(function (s) {
        return s.op + " \u2192 unit " + (s.unit === null ? "-" : s.unit) + " (until " + fmt(s.end) + ")";
      }).join("; ") : "nothing starts") + (step.waiting.length ? "; no free unit for " + step.waiting.join(", ") : "") + ".");
      phase("4. Clock advance", step.next_t === null ? "all ops done: makespan " + fmt(seed.makespan) +
        " (serial " + fmt(a.serial) + ", critical path " + fmt(a.critical_path) + ")." :
        "jump to the next completion, t = " + fmt(step.next_t) + ".");
    }
    var started = {};
    seed.steps.slice(0, pos).forEach(function (s) { s.started.forEach(function (x) { started[x.op] = true; }); });
    drawGantt($("loop-gantt"), seed.schedule.filter(function (o) { return started[o.name]; }),
      { units: seed.units, horizon: seed.makespan, clock: loopClock(),
        dim: function (o) { return o.end > loopClock() + 1e-9; } });
    var un = $("loop-units");
    clear(un);
    un.className = "units-list";
    var busy = {};
    (step ? step.running : []).forEach(function (r) { busy[r.unit] = r; });
    var n = seed.units || Math.max(1, Object.keys(busy).length);
    for (var u = 0; u < n; u++) {
      un.appendChild(el("div", {}, "unit " + u + ": " + (busy[u] ? busy[u].op + " (until " + fmt(busy[u].end) + ")" : "idle")));
    }
  }

  function stopPlay() {
    if (timer !== null) { clearInterval(timer); timer = null; }
    $("btn-play").textContent = "Play";
    $("btn-play").classList.remove("on");
  }
  function stepOnce() {
    if (pos < seed.steps.length) { pos += 1; renderLoop(); }
    if (pos >= seed.steps.length) { stopPlay(); }
  }

  function initLoop() {
    var a = seed.analysis;
    $("loop-intro").textContent = "The seed graph (" + seed.dag.nodes.length + " ops, unit durations) on " +
      (seed.units ? seed.units + " compute units" : "unlimited units") + ", scheduled by the event-driven " +
      "greedy loop: at every event, finished ops release their successors, every ready op that a free " +
      "unit can take starts, and the clock jumps to the next completion. Kahn order: " +
      a.order.join(" \u2192 ") + ". Serial time " + fmt(a.serial) + ", critical path " +
      fmt(a.critical_path) + " (" + a.critical_path_ops.join(" \u2192 ") + "), greedy makespan " +
      fmt(seed.makespan) + ".";
    var lg = $("loop-legend");
    ["waiting", "ready", "running", "done"].forEach(function (s) {
      var span = el("span"), i = el("i");
      i.style.background = "var(--" + s + ")";
      span.appendChild(i);
      span.appendChild(document.createTextNode(s));
      lg.appendChild(span);
    });
    var an = $("loop-analysis");
    an.appendChild(table(["op", "waits for", "pending"], seed.dag.nodes.map(function (nd) {
      return [nd.name, a.deps[nd.name].join(", ") || "-", String(a.indeg[nd.name])];
    }), [2]));
    $("btn-step").addEventListener("click", function () { stopPlay(); stepOnce(); });
    $("btn-reset").addEventListener("click", function () { stopPlay(); pos = 0; renderLoop(); });
    $("btn-play").addEventListener("click", function () {
      if (timer !== null) { stopPlay(); return; }
      if (pos >= seed.steps.length) { pos = 0; }
      $("btn-play").textContent = "Pause";
      $("btn-play").classList.add("on");
      stepOnce();
      timer = setInterval(stepOnce, 900);
    });
    renderLoop();
  }

  // ------------------------------------------------------------------ tab 2: strategies
  function initStrategies() {
    var S = DATA.strategies, g = S.graph;
    $("strategy-graph-title").textContent = "Graph: " + g.name + " (" + g.ops.length + " ops, work " +
      fmt(g.work) + ", critical path " + fmt(g.critical_path) + "; hover an op for its kind, " +
      "duration and output size)";
    var info = {};
    g.ops.forEach(function (o) { info[o.name] = o; });
    drawDag($("strategy-dag"), S.dag, { id: "strat", path: g.critical_path_ops, nodeWidth: 84, scale: 1.4,
      states: {}, tips: function (v) { return ": " + (info[v].kind || "op") + ", duration " +
        fmt(info[v].duration) + ", output " + bytes(info[v].output_bytes); } });
    $("strategy-intro").textContent = "Three goals that compilers combine: keep many units busy " +
      "(parallel), keep few tensors alive at once (memory-aware), or stream inputs through the graph " +
      "(pipeline). Each panel shows its schedule, the memory in use over time, and its metrics.";
    var grid = $("strategy-grid"), keys = ["parallel", "memory", "pipeline"];
    keys.forEach(function (k) {
      var p = S[k], card = el("div", { "class": "card", id: "strategy-" + k });
      card.appendChild(el("h4", {}, p.title));
      card.appendChild(el("p", { "class": "intro" }, p.note));
      var gantt = el("div", { "class": "gantt" }), mem = el("div", { "class": "memory" });
      card.appendChild(el("h3", {}, "Gantt chart"));
      card.appendChild(gantt);
      card.appendChild(el("h3", {}, "Memory in use"));
      card.appendChild(mem);
      grid.appendChild(card);
      var label = function (o) { return o.name.split("@")[0]; };
      var group = function (o) { return p.kinds[o.name] === "admit" ? "admit" : "no unit"; };
      drawGantt(gantt, p.ops, { units: p.units, noneGroup: group, label: label, width: 420,
        color: k === "pipeline" ? null : function (o) { return colorFor(label(o)); } });
      drawMemory(mem, p.memory, p.metrics.makespan, 420);
    });
    var m = keys.map(function (k) { return S[k].metrics; });
    var rows = [
      ["units", keys.map(function (k) { return String(S[k].units); })],
      ["inputs processed", ["1", "1", String(S.pipeline.micro_batches)]],
      ["makespan", m.map(function (x) { return fmt(x.makespan); })],
      ["latency per input (max)", m.map(function (x) { return fmt(x.latency_max); })],
      ["throughput (inputs per 100 time units)", m.map(function (x) { return (100 * x.throughput).toFixed(2); })],
      ["initiation interval", ["-", "-", fmt(m[2].initiation_interval)]],
      ["peak memory", m.map(function (x) { return bytes(x.peak_memory); })],
      ["utilisation", m.map(function (x) { return (100 * x.utilisation).toFixed(1) + " %"; })],
      ["validator", m.map(function (x) { return x.valid ? "valid" : "INVALID"; })]
    ];
    $("strategy-metrics").appendChild(table(["metric", "parallel", "memory-aware", "pipeline"],
      rows.map(function (r) { return [r[0]].concat(r[1]); }), [1, 2, 3]));
  }

  // ------------------------------------------------------------------ tab 3: critical path
  function initCritical() {
    var C = DATA.critical;
    $("critical-intro").textContent = "Run in program order, every op waits for the one before it: " +
      "a chain. Deriving the true read-after-write dependencies from each op's read and write sets " +
      "(an op waits only for the writer of a buffer it reads) exposes the parallelism.";
    $("critical-program").appendChild(table(["op", "reads", "writes"], C.program.map(function (o) {
      return [o.name, o.reads.join(", ") || "-", o.writes.join(", ") || "-"];
    })));
    var ul = $("critical-edges");
    C.edges.forEach(function (e) { ul.appendChild(el("li", {}, e)); });
    $("critical-summary").textContent = "Critical path " + fmt(C.before.length) + " \u2192 " +
      fmt(C.after.length) + ": " + fmt(C.speedup_percent) + " % shorter";
    $("critical-before-title").textContent = "Before: program-order chain, length " + fmt(C.before.length);
    $("critical-after-title").textContent = "After: RAW dependencies only, length " + fmt(C.after.length);
    ["before", "after"].forEach(function (k) {
      var part = C[k];
      drawDag($("critical-" + k + "-dag"), part.dag, { id: k, path: part.path, nodeWidth: 48, gapX: 26, scale: 1.3 });
      var host = $("critical-" + k + "-gantt");
      drawGantt(host, part.schedule, { horizon: C.before.makespan, width: 420 });
      host.appendChild(el("p", { "class": "intro" }, "greedy schedule, unlimited units: makespan " +
        fmt(part.makespan)));
    });
  }

  Array.prototype.forEach.call(document.querySelectorAll(".tab"), function (b) {
    b.addEventListener("click", function () { showTab(b.getAttribute("data-panel")); });
  });
  initLoop();
  initStrategies();
  initCritical();
  showTab("panel-loop");
})();
