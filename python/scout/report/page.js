// Scout report: draws the figures from the JSON the report embeds (scout/report/data.py).
// Time series use uPlot; bar charts and the journey view are plain SVG. Every component and every
// layer has one colour across all figures. window.scoutFigures tells tests what was drawn.
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("scout-data").textContent);
  var COMPONENT = {
    processing: "#4e79a7", queueing_compute: "#f28e2b", queueing_protocol: "#e15759", scheduling: "#76b7b2",
    retransmission: "#59a14f", reordering: "#edc948", transport: "#b07aa1", unattributed: "#9c9c9c"
  };
  var LAYER = {
    total: "#111111", "measured span": "#111111", app: "#8c564b", n6: "#7f7f7f", upf: "#17becf", n3: "#bcbd22",
    gtpu: "#1f77b4", cuup_exec: "#ff7f0e", sdap: "#9467bd", pdcp: "#2ca02c", f1u: "#d62728", rlc: "#e377c2",
    mac: "#8c6d31", phy: "#393b79"
  };
  var REASON = ["#000000", "#d62728", "#ff7f0e", "#9467bd", "#8c564b", "#17becf", "#7f7f7f"];
  var PHASE = { buildup: "rgba(253,224,197,.6)", saturation: "rgba(249,180,180,.6)", steady: "rgba(214,214,245,.7)", drain: "rgba(207,232,207,.7)" };
  var UE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];
  var drawn = {};
  window.scoutFigures = drawn;
  var plots = [];

  function el(tag, attrs, parent, text) {
    var ns = ["svg", "rect", "line", "text", "g", "title", "path"].indexOf(tag) >= 0;
    var e = ns ? document.createElementNS("http://www.w3.org/2000/svg", tag) : document.createElement(tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function ms(ns) { return ns / 1e6; }
  function fmtMs(v) {
    if (v == null) return "–";
    var a = Math.abs(v);
    return (a >= 100 ? v.toFixed(0) : a >= 10 ? v.toFixed(1) : a >= 1 ? v.toFixed(2) : a >= 0.01 ? v.toFixed(3) : v.toPrecision(2)) + " ms";
  }
  // A tick's label: the shortest unit that keeps it a round number (10 ns, 1 µs, 0.1 ms, 10 ms).
  function tick(vms) {
    var ns = vms * 1e6;
    if (ns < 1000) return +ns.toPrecision(3) + " ns";
    if (ns < 1e5) return +(ns / 1e3).toPrecision(3) + " µs";
    return +vms.toPrecision(3) + " ms";
  }
  function caption(name, text) { var c = document.getElementById("cap-" + name); if (c) c.textContent = text; }
  function width(node) { return Math.max(node.clientWidth || 600, 280); }
  function legend(parent, items) {
    var row = el("div", { "class": "legend-row" }, parent);
    items.forEach(function (it) {
      var s = el("span", {}, row);
      el("span", { "class": "swatch", style: "background:" + it[1] }, s);
      s.appendChild(document.createTextNode(it[0]));
    });
  }
  // One uPlot, resized with its container; its points counted for the tests.
  function plot(name, parent, opts, data) {
    var holder = el("div", {}, parent);
    opts.width = width(parent);
    var u = new uPlot(opts, data, holder);
    plots.push([u, parent]);
    var n = 0;
    for (var i = 1; i < data.length; i++) for (var j = 0; j < data[i].length; j++) if (data[i][j] != null) n++;
    drawn[name] = drawn[name] || { points: 0, plots: 0 };
    drawn[name].points += n;
    drawn[name].plots += 1;
    return u;
  }
  window.addEventListener("resize", function () {
    plots.forEach(function (p) { p[0].setSize({ width: width(p[1]), height: p[0].height }); });
  });
  // Shades spans of the x axis (overload phases) beneath the series.
  function shade(spans) {
    return {
      hooks: {
        drawClear: [function (u) {
          var ctx = u.ctx;
          spans.forEach(function (s) {
            var x0 = u.valToPos(s[0], "x", true), x1 = u.valToPos(s[1], "x", true);
            var l = Math.max(x0, u.bbox.left), r = Math.min(x1, u.bbox.left + u.bbox.width);
            if (r <= l) return;
            ctx.fillStyle = s[2];
            ctx.fillRect(l, u.bbox.top, r - l, u.bbox.height);
          });
        }]
      }
    };
  }
  var timeAxis = { label: "time (s)", values: function (u, vals) { return vals.map(function (v) { return +v.toFixed(6); }); } };
  var zeroBased = { range: function (u, lo, hi) { return [0, hi > 0 ? hi * 1.05 : 1]; } };

  // ---- attribution: mean time per packet in each layer and component, log scale (SCOUT fig. 4)
  function attribution(A) {
    var root = document.getElementById("plot-attribution");
    var nruns = A.runs.length;
    var all = [];
    Object.keys(A.rows).forEach(function (d) {
      A.rows[d].forEach(function (r) { r.components.forEach(function (c) { c.ns.forEach(function (v) { if (v > 0) all.push(v); }); }); });
    });
    var lo = Math.pow(10, Math.floor(Math.log10(Math.min.apply(null, all) / 1e6))), hi = Math.pow(10, Math.ceil(Math.log10(Math.max.apply(null, all) / 1e6)));
    var points = 0;
    Object.keys(A.rows).forEach(function (d) {
      var rows = [];
      A.rows[d].forEach(function (r) { r.components.forEach(function (c, i) { rows.push({ layer: r.layer, first: i === 0, c: c }); }); });
      var W = width(root), labelW = 190, valueW = 80, barH = nruns > 1 ? 7 : 12, rowH = barH * nruns + 8, top = 22;
      var H = top + rows.length * rowH + 30, plotW = Math.max(W - labelW - valueW, 120);
      el("div", { "class": "panel-title" }, root, d.toUpperCase() + ": mean time per " + (A.population === "delivered" ? "delivered packet" : "packet (measured span)") + " in each layer and component (log scale)");
      var svg = el("svg", { width: W, height: H, viewBox: "0 0 " + W + " " + H, role: "img" }, root);
      function x(vms) { return labelW + plotW * (Math.log10(vms) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo)); }
      var lastRight = -1e9;
      for (var t = lo; t <= hi * 1.0001; t *= 10) {
        el("line", { x1: x(t), x2: x(t), y1: top - 4, y2: H - 26, stroke: "#e5e5e5" }, svg);
        // A label is drawn only where it does not run into the one before it (about 6.5 px a character).
        var label = tick(t), half = label.length * 3.3;
        if (x(t) - half > lastRight + 6) {
          el("text", { x: x(t), y: H - 12, "text-anchor": "middle" }, svg, label);
          lastRight = x(t) + half;
        }
      }
      rows.forEach(function (r, i) {
        var y = top + i * rowH;
        if (r.first) {
          el("text", { x: 4, y: y + rowH / 2 + 4, "font-weight": "bold" }, svg, r.layer);
          if (i) el("line", { x1: 0, x2: W, y1: y, y2: y, stroke: "#ccc" }, svg);
        }
        el("text", { x: 70, y: y + rowH / 2 + 4 }, svg, r.c.component.replace("_", " "));
        r.c.ns.forEach(function (v, k) {
          if (!(v > 0)) return;
          var by = y + 4 + k * barH, xe = x(ms(v));
          var b = el("rect", { x: labelW, y: by, width: Math.max(xe - labelW, 1), height: barH - 1, fill: COMPONENT[r.c.component] || "#999", "fill-opacity": nruns > 1 ? 1 - 0.55 * k / Math.max(nruns - 1, 1) : 1 }, svg);
          el("title", {}, b, (nruns > 1 ? A.runs[k] + ": " : "") + r.layer + " " + r.c.component + ": " + fmtMs(ms(v)));
          if (nruns === 1) el("text", { x: Math.min(xe + 4, W - valueW + 4), y: by + barH - 2 }, svg, fmtMs(ms(v)));
          points++;
        });
      });
      if (nruns > 1) {
        var g = el("text", { x: labelW, y: 12 }, svg, "bars, top to bottom (darker to lighter): " + A.runs.join(", "));
        g.setAttribute("fill", "#555");
      }
    });
    legend(root, Object.keys(COMPONENT).map(function (c) { return [c.replace("_", " "), COMPONENT[c]]; }));
    drawn.attribution = { points: points, plots: Object.keys(A.rows).length };
    caption("attribution", "Each bar is the mean time a packet spent in that layer as that component; the axis is logarithmic so that a 10 µs layer is as readable as a 10 ms one. Colours are the components' in every figure." + (nruns > 1 ? " Runs compared: " + A.runs.join(", ") + " (SCOUT fig. 4)." : ""));
  }

  // ---- percentiles: each layer's delay at every percentile (log y; a CDF with the axes swapped)
  function percentiles(P) {
    var root = document.getElementById("plot-percentiles");
    var x = P.p.map(function (p) { return p * 100; });
    Object.keys(P.series).forEach(function (d) {
      var ss = P.series[d];
      el("div", { "class": "panel-title" }, root, d.toUpperCase() + ": " + P.what + " and each layer's time, at every percentile");
      var data = [x].concat(ss.map(function (s) { return s.ns.map(function (v) { return v > 0 ? v / 1e6 : null; }); }));
      plot("percentiles", root, {
        height: 300,
        scales: { x: { time: false }, y: { distr: 3 } },
        axes: [{ label: "percentile of packets (%)" }, { label: "ms (log scale)", size: 70, values: function (u, v) { return v.map(fmtMs); } }],
        series: [{ label: "percentile", value: function (u, v) { return v == null ? "–" : v.toFixed(2) + " %"; } }].concat(ss.map(function (s) {
          var tot = s.name === "total" || s.name === "measured span";
          return { label: s.name + " (" + s.n.toLocaleString() + ")", stroke: LAYER[s.name] || "#999", width: tot ? 2.5 : 1.3, value: function (u, v) { return fmtMs(v); } };
        }))
      }, data);
    });
    caption("percentiles", "The delay below which that percentage of packets fall (the CDF with its axes swapped), for the " + P.what + " and for each layer; logarithmic y axis. Hover to read every layer at one percentile.");
  }

  // ---- queues: occupancy, drops at that queue, phases (SCOUT fig. 5)
  function queues(Q) {
    var root = document.getElementById("plot-queues");
    var sync = uPlot.sync("queues");
    Q.forEach(function (q, i) {
      var panel = el("div", { "class": "panel" }, root);
      var title = q.queue === "(no queue)" ? "drops at " + q.node + " (" + q.dir + "): the layer has no queue of its own" : q.queue + " at " + q.node + " (" + q.dir + "), peak " + (q.peak_bytes / 1e3).toFixed(1) + " kB";
      el("div", { "class": "panel-title" }, panel, title + (q.drops_total ? ", " + q.drops_total.toLocaleString() + " drops" : ", no drops"));
      var data = [q.t_s], series = [{ label: "time (s)", value: function (u, v) { return v == null ? "–" : v.toFixed(4) + " s"; } }];
      var axes = [timeAxis], scales = { x: { time: false } };
      if (q.bytes) {
        data.push(q.bytes.map(function (b) { return b == null ? null : b / 1e3; }));
        series.push({ label: "occupancy (kB, max per bin)", stroke: LAYER[q.layer] || "#1f77b4", fill: "rgba(31,119,180,.08)", scale: "kB", paths: uPlot.paths.stepped({ align: 1 }), spanGaps: true, value: function (u, v) { return v == null ? "–" : v.toFixed(2) + " kB"; } });
        scales.kB = zeroBased;
        axes.push({ scale: "kB", label: "kB", size: 60 });
      }
      var reasons = Object.keys(q.drops);
      reasons.forEach(function (r, k) {
        data.push(q.drops[r]);
        series.push({ label: "drops: " + r, stroke: REASON[k % REASON.length], scale: "drops", width: 0, points: { show: true, size: 5, fill: REASON[k % REASON.length] } });
      });
      if (reasons.length) {
        scales.drops = zeroBased;
        axes.push({ scale: "drops", label: "drops per bin", side: 1, size: 60, grid: { show: false } });
      }
      var spans = (q.phases || []).map(function (p) { return [p.start_ns / 1e9, p.end_ns / 1e9, PHASE[p.phase] || "rgba(0,0,0,.05)"]; });
      plot("queues", panel, { height: 200, scales: scales, axes: axes, series: series, cursor: { sync: { key: sync.key } }, plugins: spans.length ? [shade(spans)] : [] }, data);
      if (spans.length) legend(panel, q.phases.map(function (p) { return [p.phase + " " + (p.start_ns / 1e9).toFixed(2) + "–" + (p.end_ns / 1e9).toFixed(2) + " s", PHASE[p.phase]]; }));
    });
    caption("queues", "The busiest queues, each with the drops that happened at it (dots, right axis, per " + (D.bin_s * 1e3).toFixed(3) + " ms bin) and, on the bottleneck, the overload phases (shaded). Axes start at zero; zooming one panel's cursor moves all.");
  }

  // ---- RTT over the best-correlated queue's sojourn (SCOUT fig. 6), one axis in ms from zero
  function rtt(R) {
    var root = document.getElementById("plot-rtt");
    var xs = R.t_s.slice(), q = R.queue;
    var idx = {}, t = [];
    R.t_s.forEach(function (v) { idx[v] = 1; });
    if (q) q.t_s.forEach(function (v) { idx[v] = 1; });
    t = Object.keys(idx).map(Number).sort(function (a, b) { return a - b; });
    var pos = {}; t.forEach(function (v, i) { pos[v] = i; });
    var r = t.map(function () { return null; }), s = t.map(function () { return null; });
    xs.forEach(function (v, i) { r[pos[v]] = R.rtt_ms[i]; });
    if (q) q.t_s.forEach(function (v, i) { s[pos[v]] = q.sojourn_ms[i]; });
    var series = [{ label: "time (s)" }, { label: "application RTT (ms)", stroke: "#1f77b4", width: 0, points: { show: true, size: 4, fill: "#1f77b4" }, value: function (u, v) { return fmtMs(v); } }];
    var data = [t, r];
    if (q) { series.push({ label: q.name + " sojourn (ms, mean per " + q.bin_s + " s)", stroke: "#d62728", width: 1.5, spanGaps: true, value: function (u, v) { return fmtMs(v); } }); data.push(s); }
    plot("rtt", root, { height: 260, scales: { x: { time: false }, y: zeroBased }, axes: [timeAxis, { label: "ms", size: 60 }], series: series }, data);
    caption("rtt", "Application RTT samples and " + (q ? "the sojourn of " + q.name + ", the queue that correlates best with them (Pearson r = " + q.pearson_r.toFixed(2) + ")" : "no queue sojourn to compare") + ", on one axis in ms starting at zero.");
  }

  // ---- a delay-based sender's samples, raw and as its controller used them, and the RAN's
  // retransmission events of its UE (seed 004, Figures 15-16), one axis in ms from zero
  function cc(C) {
    var root = document.getElementById("plot-cc");
    C.flows.forEach(function (f) {
      el("div", { "class": "panel-title" }, root, f.cc + ", flow " + f.flow + " (UE " + f.ue + ", " + f.dir.toUpperCase() + "): " + (f.signal === "rtt" ? "RTT" : "one-way delay") + " samples" + (f.every > 1 ? " (every " + f.every + "th)" : ""));
      var idx = {};
      f.t_s.forEach(function (v) { idx[v] = 1; });
      f.retx.t_s.forEach(function (v) { idx[v] = 1; });
      var t = Object.keys(idx).map(Number).sort(function (a, b) { return a - b; });
      var pos = {}; t.forEach(function (v, i) { pos[v] = i; });
      var raw = t.map(function () { return null; }), used = raw.slice(), ev = raw.slice();
      f.t_s.forEach(function (v, i) { raw[pos[v]] = f.raw_ms[i]; used[pos[v]] = f.used_ms[i]; });
      f.retx.t_s.forEach(function (v, i) { ev[pos[v]] = f.retx.ms[i]; });
      var pts = function (c, size) { return { show: true, size: size, fill: c }; };
      var series = [{ label: "time (s)" },
        { label: "as measured (ms)", stroke: "#9c9c9c", width: 0, points: pts("#9c9c9c", 3), value: function (u, v) { return fmtMs(v); } },
        { label: "as the controller used it (ms)", stroke: "#1f77b4", width: 0, points: pts("#1f77b4", 3), value: function (u, v) { return fmtMs(v); } },
        { label: "retransmission event: T_M / T_R (ms)", stroke: "#d62728", width: 0, points: pts("#d62728", 6), value: function (u, v) { return fmtMs(v); } }];
      plot("cc", root, { height: 240, scales: { x: { time: false }, y: zeroBased }, axes: [timeAxis, { label: "ms", size: 60 }], series: series }, [t, raw, used, ev]);
    });
    caption("cc", "Each delay-based sender's samples as measured (grey) and as its controller used them after Gandalf's compensation (blue; the same points when none is on), with the retransmission events of its UE (red, at their end, height their delay): a HARQ or RLC retransmission lifts the samples behind it by about its delay.");
  }

  // ---- PRBs per UE per slot
  function tti(T) {
    var root = document.getElementById("plot-tti");
    Object.keys(T.dirs).forEach(function (d) {
      var x = T.dirs[d];
      el("div", { "class": "panel-title" }, root, d.toUpperCase() + ": PRBs granted per UE" + (T.bin_s > 0.0011 ? " (sum per " + (T.bin_s * 1e3).toFixed(2) + " ms)" : " per slot"));
      var ues = Object.keys(x.ues);
      var series = [{ label: "time (s)", value: function (u, v) { return v == null ? "–" : v.toFixed(4) + " s"; } }].concat(ues.map(function (u, i) {
        return { label: "UE " + u, stroke: UE[i % UE.length], width: 0, points: { show: true, size: 3, fill: UE[i % UE.length] }, scale: "prb" };
      }));
      var data = [x.t_s].concat(ues.map(function (u) { return x.ues[u]; }));
      var axes = [timeAxis, { scale: "prb", label: "PRBs", size: 55 }], scales = { x: { time: false }, prb: zeroBased };
      if (x.nacks.some(function (v) { return v; })) {
        series.push({ label: "HARQ NACKs", stroke: "#d62728", width: 0, points: { show: true, size: 5, fill: "#fff", stroke: "#d62728" }, scale: "nack" });
        data.push(x.nacks);
        scales.nack = zeroBased;
        axes.push({ scale: "nack", label: "NACKs", side: 1, size: 50, grid: { show: false } });
      }
      plot("tti", root, { height: 200, scales: scales, axes: axes, series: series, cursor: { sync: { key: "tti" } } }, data);
    });
    caption("tti", "Physical resource blocks granted to each UE in each slot, and HARQ NACKs; zoom in to see single slots.");
  }

  // ---- one packet's journey: its events in each layer over time, and its components
  function journey(J) {
    var root = document.getElementById("plot-journey");
    var sel = el("select", { id: "journey-select", "aria-label": "packet" }, root);
    J.forEach(function (p, i) {
      el("option", { value: i }, sel, "packet " + p.pkt + " (" + p.dir.toUpperCase() + ", UE " + p.ue + ", " + p.why + ", " + p.status + (p.total_ns != null ? ", " + fmtMs(ms(p.total_ns)) : "") + (p.drop ? ", dropped at " + p.drop : "") + ")");
    });
    var view = el("div", {}, root);
    function draw(i) {
      var p = J[i];
      view.textContent = "";
      var layers = [];
      p.events.forEach(function (e) { if (layers.indexOf(e[2]) < 0) layers.push(e[2]); });
      var W = width(root), left = 90, right = 20, rowH = 24, top = 10, H = top + layers.length * rowH + 34;
      var tmax = Math.max.apply(null, p.events.map(function (e) { return e[0]; }).concat([1]));
      function x(t) { return left + (W - left - right) * t / tmax; }
      var svg = el("svg", { width: W, height: H, viewBox: "0 0 " + W + " " + H, role: "img" }, view);
      layers.forEach(function (l, k) {
        var y = top + k * rowH;
        el("text", { x: 4, y: y + 15 }, svg, l);
        el("line", { x1: left, x2: W - right, y1: y + rowH / 2, y2: y + rowH / 2, stroke: "#eee" }, svg);
        var ev = p.events.filter(function (e) { return e[2] === l; });
        if (ev.length > 1) el("rect", { x: x(ev[0][0]), y: y + 7, width: Math.max(x(ev[ev.length - 1][0]) - x(ev[0][0]), 1), height: rowH - 14, fill: LAYER[l] || "#999", "fill-opacity": 0.35 }, svg);
        ev.forEach(function (e) {
          var m = el("rect", { x: x(e[0]) - 1.5, y: y + 4, width: 3, height: rowH - 8, fill: e[3] === "drop" ? "#d62728" : LAYER[l] || "#555" }, svg);
          el("title", {}, m, l + " " + e[3] + " at +" + fmtMs(ms(e[0])) + " (" + e[1] + ")" + (e[4] ? ", " + e[4] : ""));
        });
      });
      for (var k = 0; k <= 4; k++) el("text", { x: x(tmax * k / 4), y: H - 8, "text-anchor": k === 0 ? "start" : k === 4 ? "end" : "middle" }, svg, "+" + fmtMs(ms(tmax * k / 4)));
      // Components in path order, widths in proportion to their time (a linear scale: they sum to the span).
      var tot = p.components.reduce(function (s, c) { return s + c.ns; }, 0);
      if (tot > 0) {
        var cw = W - left - right, bar = el("svg", { width: W, height: 34, viewBox: "0 0 " + W + " 34", role: "img" }, view), at = left;
        el("text", { x: 4, y: 20 }, bar, "components");
        p.components.forEach(function (c) {
          var w = cw * c.ns / tot;
          var r = el("rect", { x: at, y: 6, width: Math.max(w, 0.5), height: 20, fill: COMPONENT[c.component] || "#999" }, bar);
          el("title", {}, r, c.layer + " " + c.component + ": " + fmtMs(ms(c.ns)));
          if (w > 70) el("text", { x: at + 3, y: 20, fill: "#fff" }, bar, c.layer + " " + fmtMs(ms(c.ns)));
          at += w;
        });
      }
      var tbl = el("table", { "class": "journey-events" }, view);
      var hr = el("tr", {}, el("thead", {}, tbl));
      ["+ms", "node", "layer", "point", "reason"].forEach(function (h) { el("th", {}, hr, h); });
      var tb = el("tbody", {}, tbl);
      p.events.forEach(function (e) {
        var tr = el("tr", {}, tb);
        el("td", {}, tr, (e[0] / 1e6).toFixed(3)); el("td", {}, tr, e[1]); el("td", {}, tr, e[2]); el("td", {}, tr, e[3]); el("td", {}, tr, e[4] || "");
      });
      drawn.journey = { points: p.events.length, plots: 1 };
    }
    sel.addEventListener("change", function () { draw(+sel.value); });
    draw(0);
    caption("journey", "Pick a packet (the slowest, and dropped ones): each layer's events on one time line (hover a mark for its point), its components in path order, and every event.");
  }

  var figs = { attribution: attribution, percentiles: percentiles, queues: queues, rtt: rtt, cc: cc, tti: tti, journey: journey };
  Object.keys(figs).forEach(function (k) {
    if (document.getElementById("plot-" + k) && D[k]) figs[k](D[k]);
  });

  // Tables: click a header to sort, type to filter.
  document.querySelectorAll("table.sortable th").forEach(function (th, i) {
    th.addEventListener("click", function () {
      var table = th.closest("table"), tbody = table.tBodies[0];
      var col = Array.prototype.indexOf.call(th.parentNode.children, th);
      var rows = Array.prototype.slice.call(tbody.rows);
      var asc = th.getAttribute("data-asc") !== "1";
      table.querySelectorAll("th").forEach(function (h) { h.removeAttribute("data-asc"); });
      th.setAttribute("data-asc", asc ? "1" : "0");
      rows.sort(function (a, b) {
        var x = a.cells[col].getAttribute("data-v"), y = b.cells[col].getAttribute("data-v");
        var nx = parseFloat(x), ny = parseFloat(y);
        var c = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : String(x).localeCompare(String(y));
        return asc ? c : -c;
      });
      rows.forEach(function (r) { tbody.appendChild(r); });
    });
  });
  document.querySelectorAll("input.filter").forEach(function (inp) {
    inp.addEventListener("input", function () {
      var t = document.getElementById(inp.getAttribute("data-table"));
      if (!t || !t.tBodies.length) return;
      var q = inp.value.toLowerCase();
      Array.prototype.forEach.call(t.tBodies[0].rows, function (r) {
        r.style.display = r.textContent.toLowerCase().indexOf(q) >= 0 ? "" : "none";
      });
    });
  });
})();
