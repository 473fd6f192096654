/*
 * TraceCup page enhancements. Plain JavaScript, no dependencies, no network
 * except same-origin requests to the platform itself.
 *
 * Every feature is progressive: the server-rendered page works without this
 * file (forms post normally, tables hold the numbers, pages refresh
 * themselves while a job runs). This file adds:
 *   - sortable tables            <table data-sortable>
 *   - countdowns                 <... data-countdown data-deadline="ISO" data-tz="Asia/Tokyo">
 *   - live job status            <... data-poll-url="/...json">   (server returns {finished, html})
 *   - drag-and-drop upload with an upload progress bar   <form data-upload>
 *   - charts as inline SVG       <figure data-chart="heatmap|gridmap|scatter" data-src="json-script-id">
 * Strings shown to people come from the page (<script id="tc-i18n">), so
 * they follow the site language.
 */
(function () {
  "use strict";

  var SVGNS = "http://www.w3.org/2000/svg";
  var I18N = {};

  function t(key, fallback) {
    return Object.prototype.hasOwnProperty.call(I18N, key) ? I18N[key] : (fallback || key);
  }

  function fmt(template, values) {
    return template.replace(/\{(\w+)\}/g, function (m, k) {
      return Object.prototype.hasOwnProperty.call(values, k) ? values[k] : m;
    });
  }

  function readJSON(id) {
    var el = document.getElementById(id);
    if (!el) { return null; }
    try { return JSON.parse(el.textContent); } catch (e) { return null; }
  }

  function svg(name, attrs, parent) {
    var el = document.createElementNS(SVGNS, name);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) { el.setAttribute(k, attrs[k]); });
    }
    if (parent) { parent.appendChild(el); }
    return el;
  }

  function svgText(parent, x, y, text, attrs) {
    var a = attrs || {};
    a.x = x; a.y = y;
    var el = svg("text", a, parent);
    el.textContent = text;
    return el;
  }

  /* Estimated width (px) of a text at a font size, before it is drawn: CJK and other wide
     characters take about a full em, Latin ones a little over half. */
  function textWidth(text, size) {
    var w = 0;
    String(text).split("").forEach(function (ch) { w += ch.charCodeAt(0) >= 0x2e80 ? size : 0.6 * size; });
    return w;
  }

  function getCookie(name) {
    var parts = document.cookie ? document.cookie.split(";") : [];
    for (var i = 0; i < parts.length; i++) {
      var c = parts[i].trim();
      if (c.indexOf(name + "=") === 0) { return decodeURIComponent(c.slice(name.length + 1)); }
    }
    return null;
  }

  function csrfToken(form) {
    var input = form && form.querySelector("input[name=csrfmiddlewaretoken]");
    return input ? input.value : getCookie("csrftoken");
  }

  /* ------------------------------------------------------------ colours */

  // Sequential scale (perceptually ordered, colour-blind safe, close to
  // viridis): low = dark purple, high = yellow. Stops sampled from viridis.
  var VIRIDIS = [
    [68, 1, 84], [72, 40, 120], [62, 74, 137], [49, 104, 142], [38, 130, 142],
    [31, 158, 137], [53, 183, 121], [109, 205, 89], [180, 222, 44], [253, 231, 37]
  ];

  function colourAt(stops, u) {
    if (!(u >= 0)) { u = 0; }
    if (u > 1) { u = 1; }
    var pos = u * (stops.length - 1);
    var i = Math.min(Math.floor(pos), stops.length - 2);
    var f = pos - i;
    var a = stops[i], b = stops[i + 1];
    var rgb = [0, 1, 2].map(function (k) { return Math.round(a[k] + (b[k] - a[k]) * f); });
    // light: black text reads better on it than white (WCAG relative luminance above 0.179, where the
    // two contrasts are equal); the better of the two is at least 4.58:1, AA for the cells' numbers.
    var lum = rgb.map(function (c) { c /= 255; return c <= 0.04045 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4); });
    return { css: "rgb(" + rgb.join(",") + ")", light: 0.2126 * lum[0] + 0.7152 * lum[1] + 0.0722 * lum[2] > 0.179 };
  }

  function legendBar(parent, x, y, w, h, lo, hi, format, label) {
    var g = svg("g", { "class": "legend" }, parent);
    var n = 40;
    for (var i = 0; i < n; i++) {
      svg("rect", { x: x + (w * i) / n, y: y, width: w / n + 0.5, height: h, fill: colourAt(VIRIDIS, i / (n - 1)).css }, g);
    }
    svg("rect", { x: x, y: y, width: w, height: h, fill: "none", stroke: "#6b7686" }, g);
    svgText(g, x, y + h + 14, format(lo), { "font-size": 11 });
    svgText(g, x + w, y + h + 14, format(hi), { "font-size": 11, "text-anchor": "end" });
    if (label) { svgText(g, x + w / 2, y - 4, label, { "font-size": 11, "text-anchor": "middle" }); }
    return g;
  }

  function fixed(digits) { return function (v) { return Number(v).toFixed(digits); }; }

  /* ------------------------------------------------------------ charts */

  /*
   * Heatmap of a rows x cols matrix (e.g. the attack matrix, attacker x
   * target). spec: {rows: [label], cols: [label], values: [[number|null]],
   * min, max, label, rowTitle, colTitle, digits}. null cells are drawn hatched
   * ("no attack").
   */
  function heatmap(figure, spec) {
    var rows = spec.rows, cols = spec.cols, values = spec.values;
    var footer = spec.footer;  // {label, values}: e.g. each target's minimum, drawn under a gap
    var digits = spec.digits == null ? 4 : spec.digits;
    var lo = spec.min == null ? 0 : spec.min, hi = spec.max == null ? 1 : spec.max;
    var labels = rows.concat(footer ? [footer.label] : []);
    var left = 12 + Math.max.apply(null, labels.map(function (r) { return textWidth(r, 11.5); }).concat([30]));
    var longest = Math.max.apply(null, cols.map(function (c) { return textWidth(c, 11); }).concat([30]));
    var top = 40 + longest * Math.sin(50 * Math.PI / 180);
    // column labels are rotated -50 degrees: the last one reaches this far right of its cell
    var right = Math.max(16, longest * Math.cos(50 * Math.PI / 180) - 10);
    var avail = Math.max(320, availableWidth(figure));
    // 40 px at least: a cell keeps its number; a matrix wider than a phone scrolls inside its figure
    var cell = Math.max(40, Math.min(80, Math.floor((avail - left - right) / Math.max(cols.length, 1))));
    var gap = footer ? 8 : 0;
    var nrows = rows.length + (footer ? 1 : 0);
    var width = left + cell * cols.length + right, height = top + cell * nrows + gap + 56;
    var root = svg("svg", { viewBox: "0 0 " + width + " " + height, width: width, role: "img", "aria-label": spec.label || "" });
    svgText(root, left + (cell * cols.length) / 2, 14, spec.colTitle || "", { "text-anchor": "middle", "font-size": 12, "font-weight": 700 });
    svgText(root, 4, top - 6, spec.rowTitle || "", { "font-size": 12, "font-weight": 700 });
    var defs = svg("defs", null, root);
    var pat = svg("pattern", { id: "hatch-" + Math.random().toString(36).slice(2), width: 6, height: 6, patternUnits: "userSpaceOnUse", patternTransform: "rotate(45)" }, defs);
    svg("rect", { width: 6, height: 6, fill: "#fff" }, pat);
    svg("line", { x1: 0, y1: 0, x2: 0, y2: 6, stroke: "#d3d9e1", "stroke-width": 3 }, pat);
    cols.forEach(function (c, j) {
      var x = left + cell * j + cell / 2;
      svgText(root, x, top - 8, c, { "font-size": 11, transform: "rotate(-50 " + x + " " + (top - 8) + ")" });
    });
    rows.forEach(function (r, i) {
      svgText(root, left - 6, top + cell * i + cell / 2 + 4, r, { "font-size": 11, "text-anchor": "end" });
      cols.forEach(function (c, j) {
        var v = values[i] ? values[i][j] : null;
        var x = left + cell * j, y = top + cell * i;
        var rect;
        if (v == null) {
          rect = svg("rect", { x: x, y: y, width: cell - 1, height: cell - 1, fill: "url(#" + pat.id + ")" }, root);
          svg("title", null, rect).textContent = r + " \u2192 " + c + ": " + t("no_attack", "no attack");
          return;
        }
        var col = colourAt(VIRIDIS, (v - lo) / ((hi - lo) || 1));
        rect = svg("rect", { x: x, y: y, width: cell - 1, height: cell - 1, fill: col.css }, root);
        svg("title", null, rect).textContent = r + " \u2192 " + c + ": " + Number(v).toFixed(digits);
        if (cell >= 40) {
          svgText(root, x + cell / 2, y + cell / 2 + 4, Number(v).toFixed(2),
            { "font-size": 11, "text-anchor": "middle", fill: col.light ? "#000" : "#fff", style: "fill:" + (col.light ? "#000" : "#fff") });
        }
      });
    });
    if (footer) {
      var fy = top + cell * rows.length + gap;
      svgText(root, left - 6, fy + cell / 2 + 4, footer.label, { "font-size": 11, "font-weight": 700, "text-anchor": "end" });
      cols.forEach(function (c, j) {
        var v = footer.values[j];
        if (v == null) { return; }
        var x = left + cell * j;
        var col = colourAt(VIRIDIS, (v - lo) / ((hi - lo) || 1));
        var rect = svg("rect", { x: x, y: fy, width: cell - 1, height: cell - 1, fill: col.css, stroke: "#1b1f24", "stroke-width": 1 }, root);
        svg("title", null, rect).textContent = footer.label + " \u2192 " + c + ": " + Number(v).toFixed(digits);
        if (cell >= 40) {
          svgText(root, x + cell / 2, fy + cell / 2 + 4, Number(v).toFixed(2),
            { "font-size": 11, "font-weight": 700, "text-anchor": "middle", fill: col.light ? "#000" : "#fff", style: "fill:" + (col.light ? "#000" : "#fff") });
        }
      });
    }
    legendBar(root, left, top + cell * nrows + gap + 22, Math.min(220, cell * cols.length), 10, lo, hi, fixed(2), spec.legend || "");
    figure.insertBefore(root, figure.firstChild);
    if (width > availableWidth(figure) + 1) {         // drawn wider than the screen: say it scrolls
      figure.classList.add("chart-wide");
      var hint = document.createElement("p");
      hint.className = "chart-hint small";
      hint.textContent = t("scroll_sideways", "The matrix is wider than the screen: scroll it sideways \u2192");
      figure.parentNode.insertBefore(hint, figure);
    }
  }

  /* The width a chart may take: its figure's content box (the column it sits in). */
  function availableWidth(figure) {
    var w = figure.clientWidth || (figure.parentNode && figure.parentNode.clientWidth) || 640;
    return Math.floor(w);
  }

  /*
   * Population map on the contest grid. spec: {nx, ny, values: [M] numbers in
   * region-id order (region id r = y*nx + x + 1, origin lower-left, as
   * rules §2), max (shared across maps so two maps compare), label, hospitals:
   * [1-based ids] (outlined)}. A square-root scale keeps sparse regions
   * visible beside the busy centre.
   */
  function gridmap(figure, spec) {
    var nx = spec.nx, ny = spec.ny, vals = spec.values;
    var pad = 4;
    var cell = Math.max(6, Math.min(24, Math.floor((availableWidth(figure) - 2 * pad) / nx)));
    var width = nx * cell + 2 * pad, height = ny * cell + 2 * pad + 44;
    var hi = spec.max || Math.max.apply(null, vals.concat([1e-12]));
    var root = svg("svg", { viewBox: "0 0 " + width + " " + height, width: width, role: "img", "aria-label": spec.label || "" });
    var hosp = {};
    (spec.hospitals || []).forEach(function (h) { hosp[h] = true; });
    for (var r = 0; r < nx * ny; r++) {
      var x = r % nx, y = Math.floor(r / nx);
      var v = vals[r] || 0;
      var col = v > 0 ? colourAt(VIRIDIS, Math.sqrt(v / hi)).css : "#f0f2f5";
      var rect = svg("rect", {
        x: pad + x * cell, y: pad + (ny - 1 - y) * cell, width: cell, height: cell, fill: col,
        stroke: hosp[r + 1] ? "#e8175d" : "none", "stroke-width": hosp[r + 1] ? 1.2 : 0
      }, root);
      // x and y are 0-based, as in the rules' formula r = y * nx + x + 1
      svg("title", null, rect).textContent = fmt(t("region_tip", "region {r} (x {x}, y {y}): {v}"),
        { r: r + 1, x: x, y: y, v: (100 * v).toFixed(3) + "%" });
    }
    svg("rect", { x: pad, y: pad, width: nx * cell, height: ny * cell, fill: "none", stroke: "#6b7686" }, root);
    legendBar(root, pad, ny * cell + pad + 16, Math.min(200, nx * cell), 9, 0, hi,
      function (v) { return (100 * v).toFixed(2) + "%"; }, spec.legend || t("share_of_events", "share of events (sqrt scale)"));
    figure.insertBefore(root, figure.firstChild);
  }

  function pearson(xs, ys) {
    var n = xs.length;
    if (n < 2) { return null; }
    var mx = 0, my = 0, i;
    for (i = 0; i < n; i++) { mx += xs[i]; my += ys[i]; }
    mx /= n; my /= n;
    var sxy = 0, sxx = 0, syy = 0;
    for (i = 0; i < n; i++) {
      sxy += (xs[i] - mx) * (ys[i] - my);
      sxx += (xs[i] - mx) * (xs[i] - mx);
      syy += (ys[i] - my) * (ys[i] - my);
    }
    if (sxx === 0 || syy === 0) { return null; }
    return sxy / Math.sqrt(sxx * syy);
  }

  var GROUP_COLOURS = ["#0b4f8a", "#a13d00", "#146c2e", "#7b2d8e", "#8a6d00", "#a4161a"];
  var GROUP_SHAPES = ["circle", "square", "diamond", "triangle", "circle", "square"];

  function marker(parent, shape, x, y, colour) {
    var s = 5;
    if (shape === "square") { return svg("rect", { x: x - s, y: y - s, width: 2 * s, height: 2 * s, fill: colour, stroke: "#fff" }, parent); }
    if (shape === "diamond") { return svg("path", { d: "M" + x + " " + (y - s - 1) + "l" + (s + 1) + " " + (s + 1) + "l-" + (s + 1) + " " + (s + 1) + "l-" + (s + 1) + " -" + (s + 1) + "z", fill: colour, stroke: "#fff" }, parent); }
    if (shape === "triangle") { return svg("path", { d: "M" + x + " " + (y - s - 1) + "l" + (s + 1) + " " + (2 * s) + "h-" + (2 * s + 2) + "z", fill: colour, stroke: "#fff" }, parent); }
    return svg("circle", { cx: x, cy: y, r: s, fill: colour, stroke: "#fff" }, parent);
  }

  /*
   * Scatter plot of s_I,min (x) against s_T,min (y) per set, as the paper's
   * Fig. 8 / Fig. 9. spec: {points: [{x, y, label, group}], xlabel, ylabel,
   * r (correlation; computed here when absent), showR, xmin, xmax, ymin, ymax,
   * label, empty (text shown instead of empty axes when there is no point)}.
   * The plot takes the width of its column; the legend sits under the axes
   * (it wraps, so long group names are never cut); point labels are placed
   * where they overlap no other label or marker, and a label that fits
   * nowhere is left to the point's hover text.
   */
  function scatter(figure, spec) {
    var pts = spec.points || [];
    if (!pts.length) {
      var note = document.createElement("p");
      note.className = "chart-empty";
      note.textContent = spec.empty || t("not_played", "Not played yet: no scores in this round.");
      figure.insertBefore(note, figure.firstChild);
      return;
    }
    var W = Math.max(300, Math.min(availableWidth(figure), 900));
    var L = 56, R = 16, T = 16, B = 48;
    var pw = W - L - R, ph = Math.round(Math.min(440, Math.max(240, pw * 0.62)));
    var x0 = spec.xmin == null ? 0 : spec.xmin, x1 = spec.xmax == null ? 1 : spec.xmax;
    var y0 = spec.ymin == null ? 0 : spec.ymin, y1 = spec.ymax == null ? 1 : spec.ymax;
    function sx(v) { return L + ((v - x0) / (x1 - x0)) * pw; }
    function sy(v) { return T + ph - ((v - y0) / (y1 - y0)) * ph; }

    // legend items and the correlation flow left to right under the axes, wrapping at the width
    var groups = [];
    pts.forEach(function (p) { if (groups.indexOf(p.group || "") < 0) { groups.push(p.group || ""); } });
    var items = [];
    if (groups.length > 1 || groups[0]) {
      groups.forEach(function (g, gi) { items.push({ group: gi, text: g, w: 22 + textWidth(g, 12) }); });
    }
    var r = spec.r;
    if (r == null && spec.showR !== false) {
      r = pearson(pts.map(function (p) { return +p.x; }), pts.map(function (p) { return +p.y; }));
    }
    if (spec.showR !== false) {
      items.push({ group: null, text: "R = " + (r == null ? "\u2014" : Number(r).toFixed(3)), w: 90 });
    }
    var lx = L, ly = T + ph + B + 8, lines = items.length ? 1 : 0;
    items.forEach(function (it) {
      if (lx + it.w > W && lx > L) { lx = L; ly += 20; lines++; }
      it.x = lx; it.y = ly; lx += it.w + 14;
    });
    var H = T + ph + B + lines * 20 + 10;

    var root = svg("svg", { viewBox: "0 0 " + W + " " + H, width: W, role: "img", "aria-label": spec.label || "" });
    var axis = svg("g", { "class": "axis" }, root);
    for (var k = 0; k <= 5; k++) {
      var vx = x0 + ((x1 - x0) * k) / 5, vy = y0 + ((y1 - y0) * k) / 5;
      svg("line", { x1: sx(vx), y1: T, x2: sx(vx), y2: T + ph, "class": "gridline" }, axis);
      svg("line", { x1: L, y1: sy(vy), x2: L + pw, y2: sy(vy), "class": "gridline" }, axis);
      svgText(axis, sx(vx), T + ph + 16, vx.toFixed(1), { "font-size": 11, "text-anchor": "middle" });
      svgText(axis, L - 6, sy(vy) + 4, vy.toFixed(1), { "font-size": 11, "text-anchor": "end" });
    }
    svg("rect", { x: L, y: T, width: pw, height: ph, fill: "none", stroke: "#6b7686" }, axis);
    svgText(root, L + pw / 2, T + ph + 36, spec.xlabel || "", { "font-size": 13, "text-anchor": "middle" });
    svgText(root, 14, T + ph / 2, spec.ylabel || "", { "font-size": 13, "text-anchor": "middle", transform: "rotate(-90 14 " + (T + ph / 2) + ")" });

    // markers first: they are obstacles for every label
    var boxes = [];
    pts.forEach(function (p) {
      var gi = groups.indexOf(p.group || "");
      var px = sx(p.x), py = sy(p.y);
      var m = marker(root, GROUP_SHAPES[gi % GROUP_SHAPES.length], px, py, GROUP_COLOURS[gi % GROUP_COLOURS.length]);
      svg("title", null, m).textContent = (p.label || "") + ": (" + Number(p.x).toFixed(4) + ", " + Number(p.y).toFixed(4) + ")";
      boxes.push({ x0: px - 6, y0: py - 6, x1: px + 6, y1: py + 6 });
    });
    function free(b) {
      if (b.x0 < L + 1 || b.x1 > L + pw - 1 || b.y0 < T + 1 || b.y1 > T + ph - 1) { return false; }
      for (var i = 0; i < boxes.length; i++) {
        var o = boxes[i];
        if (b.x0 < o.x1 && b.x1 > o.x0 && b.y0 < o.y1 && b.y1 > o.y0) { return false; }
      }
      return true;
    }
    // Greedy placement in input order: the nearest free spot around the point, on rings of growing
    // radius, whose nearest marker is the label's own point (a label between two points would name
    // the wrong one). Past the first ring a thin leader line ties the label to its point, so on a
    // phone's narrow plot a crowded cluster keeps every label instead of dropping some.
    var centres = pts.map(function (p) { return [sx(p.x), sy(p.y)]; });
    function ownedBy(b, own) {
      var cx = (b.x0 + b.x1) / 2, cy = (b.y0 + b.y1) / 2, best = -1, bestD = Infinity;
      centres.forEach(function (c, i) {
        // distance from the point to the label's box
        var ddx = Math.max(b.x0 - c[0], 0, c[0] - b.x1), ddy = Math.max(b.y0 - c[1], 0, c[1] - b.y1);
        var d = Math.sqrt(ddx * ddx + ddy * ddy) + 1e-3 * Math.hypot(cx - c[0], cy - c[1]);
        if (d < bestD - 0.5 || (Math.abs(d - bestD) <= 0.5 && i === own)) { best = i; bestD = d; }
      });
      return best === own;
    }
    // A label that finds no such spot takes the nearest free one whose leader line names its point, even
    // if another marker lies nearer: a crowded cluster on a phone (three close points, labels as wide as a
    // third of the plot) left the last label nowhere about once in a hundred draws of the same contest.
    var RINGS = [9, 16, 26, 38, 52, 70, 92, 120, 150, 185];
    pts.forEach(function (p, own) {
      if (!p.label) { return; }
      if (!placeLabel(p, own, true)) { placeLabel(p, own, false); }
      // nowhere free: the point keeps its hover text, and the table under the plot has every value
    });
    function placeLabel(p, own, nearestOwns) {
      var px = centres[own][0], py = centres[own][1], w = textWidth(p.label, 10), h = 12;
      for (var ri = nearestOwns ? 0 : 2; ri < RINGS.length; ri++) {
        var rad = RINGS[ri];
        for (var a = 0; a < 16; a++) {
          var ang = (a * Math.PI) / 8 - Math.PI / 4;   // start up and to the right, go round
          var dx = Math.round(rad * Math.cos(ang)), dy = Math.round(-rad * Math.sin(ang));
          var anchor = dx > 2 ? "start" : dx < -2 ? "end" : "middle";
          var bx = anchor === "start" ? px + dx : anchor === "end" ? px + dx - w : px + dx - w / 2;
          var base = py + dy + 4;                      // text baseline: the box is centred on the ring
          var b = { x0: bx - 1, y0: base - h + 2, x1: bx + w + 1, y1: base + 3 };
          if (free(b) && (!nearestOwns || ownedBy(b, own))) {
            if (ri >= 2) {                             // a leader from the marker's edge to the label's box
              var ex = Math.max(b.x0, Math.min(px, b.x1)), ey = Math.max(b.y0, Math.min(py, b.y1));
              var len = Math.hypot(ex - px, ey - py) || 1;
              svg("line", { x1: px + ((ex - px) * 6) / len, y1: py + ((ey - py) * 6) / len, x2: ex, y2: ey,
                            "class": "leader", stroke: "#6b7686", "stroke-width": 0.8 }, root);
            }
            svgText(root, px + dx, base, p.label,
                    { "font-size": 10, "text-anchor": anchor, "class": "point-label" });
            boxes.push(b);
            return true;
          }
        }
      }
      return false;
    }

    items.forEach(function (it) {
      if (it.group != null) {
        marker(root, GROUP_SHAPES[it.group % GROUP_SHAPES.length], it.x + 6, it.y - 4, GROUP_COLOURS[it.group % GROUP_COLOURS.length]);
        svgText(root, it.x + 16, it.y, it.text, { "font-size": 12 });
      } else {
        svgText(root, it.x, it.y, it.text, { "font-size": 13, "font-weight": 700 });
      }
    });
    figure.insertBefore(root, figure.firstChild);
  }

  var CHARTS = { heatmap: heatmap, gridmap: gridmap, scatter: scatter };

  function drawChart(fig) {
    var spec = readJSON(fig.getAttribute("data-src"));
    var draw = CHARTS[fig.getAttribute("data-chart")];
    if (!spec || !draw) { return; }
    Array.prototype.forEach.call(fig.querySelectorAll("svg, .chart-empty"), function (old) { old.remove(); });
    draw(fig, spec);
    fig.setAttribute("data-chart-done", String(availableWidth(fig)));
  }

  function initCharts(scope) {
    Array.prototype.forEach.call(scope.querySelectorAll("[data-chart]"), function (fig) {
      if (!fig.getAttribute("data-chart-done")) { drawChart(fig); }
    });
  }

  // Charts are drawn at their column's width: draw them again when that width changes.
  var resizeTimer = null;
  window.addEventListener("resize", function () {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(function () {
      Array.prototype.forEach.call(document.querySelectorAll("[data-chart][data-chart-done]"), function (fig) {
        if (fig.getAttribute("data-chart-done") !== String(availableWidth(fig))) { drawChart(fig); }
      });
    }, 150);
  });

  // A chart in a folded <details> had no width to be drawn at: draw it when the fold opens.
  document.addEventListener("toggle", function (event) {
    var fold = event.target;
    if (!fold.open || !fold.querySelectorAll) { return; }
    Array.prototype.forEach.call(fold.querySelectorAll("[data-chart][data-chart-done]"), function (fig) {
      if (fig.getAttribute("data-chart-done") !== String(availableWidth(fig))) { drawChart(fig); }
    });
    initScrollers(fold);
  }, true);

  /* ------------------------------------------------------------ sorting */

  function cellKey(td) {
    if (!td) { return { num: NaN, text: "" }; }
    var raw = td.hasAttribute("data-sort") ? td.getAttribute("data-sort") : td.textContent.trim();
    var num = raw === "" ? NaN : Number(raw);
    return { num: num, text: raw.toLowerCase() };
  }

  function sortTable(table, col, direction) {
    var tbody = table.tBodies[0];
    var rows = Array.prototype.slice.call(tbody.rows);
    var sign = direction === "ascending" ? 1 : -1;
    rows.sort(function (a, b) {
      var ka = cellKey(a.cells[col]), kb = cellKey(b.cells[col]);
      var an = !isNaN(ka.num), bn = !isNaN(kb.num);
      if (an && bn) { return sign * (ka.num - kb.num); }
      if (an !== bn) { return an ? -1 : 1; }  // numbers before blanks either way
      return sign * ka.text.localeCompare(kb.text);
    });
    rows.forEach(function (r) { tbody.appendChild(r); });
  }

  function initSortable(scope) {
    Array.prototype.forEach.call(scope.querySelectorAll("table[data-sortable]"), function (table) {
      if (table.getAttribute("data-sort-done")) { return; }
      table.setAttribute("data-sort-done", "1");
      var heads = table.tHead ? table.tHead.rows[table.tHead.rows.length - 1].cells : [];
      Array.prototype.forEach.call(heads, function (th, col) {
        if (th.hasAttribute("data-nosort")) { return; }
        var btn = document.createElement("button");
        btn.type = "button";
        btn.className = "sort-btn";
        while (th.firstChild) { btn.appendChild(th.firstChild); }
        th.appendChild(btn);
        btn.addEventListener("click", function () {
          var current = th.getAttribute("aria-sort");
          var firstDir = th.getAttribute("data-sort-first") || "descending";
          var next = current === firstDir ? (firstDir === "ascending" ? "descending" : "ascending") : firstDir;
          Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
          th.setAttribute("aria-sort", next);
          sortTable(table, col, next);
          announce(fmt(t("sorted_by", "Sorted by {col}, {dir}"), { col: btn.textContent.trim(), dir: t(next, next) }));
        });
      });
    });
  }

  var liveRegion = null;
  function announce(text) {
    if (!liveRegion) {
      liveRegion = document.createElement("div");
      liveRegion.className = "visually-hidden";
      liveRegion.setAttribute("aria-live", "polite");
      document.body.appendChild(liveRegion);
    }
    liveRegion.textContent = text;
  }

  /* ------------------------------------------------------------ countdown */

  /* A time as every page writes one (Contest.local_text in Python, the contest_time filter in templates):
     "2019-11-20 17:00 JST", in zone tz, named zoneName when the server gave the zone's abbreviation
     (data-tz-name), else by the browser's short name ("GMT+9"). One format in both languages. */
  function formatIn(date, tz, zoneName) {
    try {
      var parts = {};
      new Intl.DateTimeFormat("en-US", {
        timeZone: tz, year: "numeric", month: "2-digit", day: "2-digit",
        hour: "2-digit", minute: "2-digit", hourCycle: "h23", timeZoneName: "short"
      }).formatToParts(date).forEach(function (p) { parts[p.type] = p.value; });
      return parts.year + "-" + parts.month + "-" + parts.day + " " + parts.hour + ":" + parts.minute +
        " " + (zoneName || parts.timeZoneName);
    } catch (e) {
      return date.toISOString();
    }
  }

  function remaining(ms) {
    var s = Math.max(0, Math.floor(ms / 1000));
    var d = Math.floor(s / 86400); s -= d * 86400;
    var h = Math.floor(s / 3600); s -= h * 3600;
    var m = Math.floor(s / 60); s -= m * 60;
    function two(n) { return (n < 10 ? "0" : "") + n; }
    return (d > 0 ? d + t("days_short", "d") + " " : "") + two(h) + ":" + two(m) + ":" + two(s);
  }

  function initCountdowns(scope) {
    var items = Array.prototype.slice.call(scope.querySelectorAll("[data-countdown]"));
    if (!items.length) { return; }
    var viewerTz;
    try { viewerTz = Intl.DateTimeFormat().resolvedOptions().timeZone; } catch (e) { viewerTz = undefined; }
    items.forEach(function (el) {
      var when = new Date(el.getAttribute("data-deadline"));
      var zones = el.querySelector(".countdown-zones");
      if (zones && !isNaN(when)) {
        var contestTz = el.getAttribute("data-tz"), zoneName = el.getAttribute("data-tz-name");
        zones.textContent = fmt(t("deadline_zones", "{contest} (contest time) \u00b7 {viewer} (your time)"),
          { contest: formatIn(when, contestTz, zoneName),
            viewer: formatIn(when, viewerTz, viewerTz === contestTz ? zoneName : null) });
      }
    });
    function tick() {
      var now = Date.now();
      items.forEach(function (el) {
        var when = new Date(el.getAttribute("data-deadline"));
        var out = el.querySelector(".countdown");
        if (!out || isNaN(when)) { return; }
        var ms = when.getTime() - now;
        out.textContent = ms > 0 ? remaining(ms) : t("deadline_passed", "deadline passed");
        if (ms <= 0 && el.hasAttribute("data-reload") && !el.getAttribute("data-reloaded")) {
          el.setAttribute("data-reloaded", "1");
          setTimeout(function () { window.location.reload(); }, 1500);
        }
      });
    }
    tick();
    setInterval(tick, 1000);
  }

  /* ------------------------------------------------------------ live job status */

  function poll(el) {
    var url = el.getAttribute("data-poll-url");
    if (!url || el.getAttribute("data-polling")) { return; }
    el.setAttribute("data-polling", "1");
    var delay = 700;
    function once() {
      var xhr = new XMLHttpRequest();
      xhr.open("GET", url);
      xhr.setRequestHeader("Accept", "application/json");
      xhr.setRequestHeader("X-Requested-With", "XMLHttpRequest");
      xhr.onload = function () {
        var data = null;
        try { data = JSON.parse(xhr.responseText); } catch (e) { data = null; }
        if (xhr.status === 200 && data) {
          if (data.html != null) {
            el.innerHTML = data.html;
            initAll(el);
          }
          if (data.finished) {
            el.removeAttribute("data-polling");
            el.setAttribute("data-finished", "1");
            var ev = new CustomEvent("tracecup:finished", { bubbles: true, detail: data });
            el.dispatchEvent(ev);
            return;
          }
        }
        delay = Math.min(delay * 1.3, 4000);
        setTimeout(once, delay);
      };
      xhr.onerror = function () { setTimeout(once, 4000); };
      xhr.send();
    }
    once();
  }

  /* Start (or restart) polling an element that carries data-state-url: used after an
     upload, so the card's counter, final-set marker and history follow the server. */
  function watch(el) {
    if (!el) { return; }
    var url = el.getAttribute("data-state-url");
    if (url) { el.setAttribute("data-poll-url", url); }
    el.removeAttribute("data-finished");
    poll(el);
  }

  function initPolling(scope) {
    Array.prototype.forEach.call(scope.querySelectorAll("[data-poll-url]"), function (el) {
      if (!el.getAttribute("data-finished")) { poll(el); }
    });
    if (scope.hasAttribute && scope.hasAttribute("data-poll-url") && !scope.getAttribute("data-finished")) { poll(scope); }
  }

  /* ------------------------------------------------------------ upload */

  /* Sizes in the site's one unit, as contest.upload_limits.size_text states them: MiB (2^20 bytes), KiB
     below one MiB, one decimal unless the figure is whole. */
  // The size rule's units (contest.upload_rule.size_text): B below a KiB, KiB below a MiB, then MiB.
  function humanBytes(n) {
    if (n < 1024) { return n + "\u00a0B"; }
    var big = n >= 1048576, figure = (n / (big ? 1048576 : 1024)).toFixed(1).replace(/\.0$/, "");
    return figure + "\u00a0" + (big ? "MiB" : "KiB");
  }

  function initUploads(scope) {
    Array.prototype.forEach.call(scope.querySelectorAll("form[data-upload]"), function (form) {
      if (form.getAttribute("data-upload-done")) { return; }
      form.setAttribute("data-upload-done", "1");
      var input = form.querySelector("input[type=file]");
      var zone = form.querySelector(".dropzone") || form;
      var bar = form.querySelector("progress");
      var status = form.querySelector(".upload-status");
      var result = document.getElementById(form.getAttribute("data-result")) || form.querySelector(".upload-result");
      var chosen = form.querySelector(".dz-file");
      if (!input || !window.FormData) { return; }

      function showChosen() {
        if (chosen) {
          chosen.textContent = input.files && input.files.length
            ? fmt(t("chosen_file", "Chosen: {name} ({size})"), { name: input.files[0].name, size: humanBytes(input.files[0].size) })
            : "";
        }
      }
      input.addEventListener("change", showChosen);

      // Once the result box reports the final state, the "received; validating and scoring"
      // line and the progress bar have said all they had to say.
      function settle() {
        if (status) { status.textContent = ""; }
        if (bar) { bar.hidden = true; }
      }
      if (result) { result.addEventListener("tracecup:finished", settle); }

      ["dragenter", "dragover"].forEach(function (name) {
        zone.addEventListener(name, function (e) {
          e.preventDefault();
          zone.classList.add("is-dragover");
        });
      });
      ["dragleave", "dragend", "drop"].forEach(function (name) {
        zone.addEventListener(name, function () { zone.classList.remove("is-dragover"); });
      });
      zone.addEventListener("drop", function (e) {
        e.preventDefault();
        if (e.dataTransfer && e.dataTransfer.files && e.dataTransfer.files.length) {
          try { input.files = e.dataTransfer.files; } catch (err) { /* old browsers: keep picker */ }
          showChosen();
        }
      });

      /* A failed upload says so where the result goes, in the card: never a silent reset. The
         message is set as text (a server's message is never parsed as HTML). */
      function refuse(message) {
        if (status) { status.textContent = ""; }
        if (bar) { bar.hidden = true; }
        var box = document.createElement("div");
        box.className = "msg msg-error";
        box.setAttribute("role", "alert");
        var lead = document.createElement("strong");
        lead.textContent = t("upload_refused", "Upload refused:");
        box.appendChild(lead);
        box.appendChild(document.createTextNode(" " + message));
        if (result) { result.innerHTML = ""; result.appendChild(box); } else if (status) { status.textContent = message; }
      }

      form.addEventListener("submit", function (e) {
        if (!input.files || !input.files.length) { return; }  // let the server say what is missing
        e.preventDefault();
        // The limit the page states (data-max-bytes, the contest's upload_size_limit): a file past it is
        // refused before minutes of sending; the server checks again in any case.
        var most = parseInt(form.getAttribute("data-max-bytes") || "0", 10);
        if (most && input.files[0].size > most) {
          refuse(fmt(t("file_too_large", "{name} is {size}; an upload may be {limit}."),
                     { name: input.files[0].name, size: humanBytes(input.files[0].size),
                       limit: form.getAttribute("data-max-text") || humanBytes(most) }));
          return;
        }
        var data = new FormData(form);
        var xhr = new XMLHttpRequest();
        xhr.open("POST", form.action || window.location.href);
        xhr.setRequestHeader("X-Requested-With", "XMLHttpRequest");
        xhr.setRequestHeader("Accept", "application/json");
        var token = csrfToken(form);
        if (token) { xhr.setRequestHeader("X-CSRFToken", token); }
        var submit = form.querySelector("[type=submit]");
        if (submit) { submit.disabled = true; }
        if (bar) { bar.hidden = false; bar.value = 0; bar.max = 1; }
        if (status) { status.textContent = t("uploading", "Uploading\u2026"); }
        xhr.upload.onprogress = function (ev) {
          if (!ev.lengthComputable) { return; }
          if (bar) { bar.value = ev.loaded / ev.total; }
          if (status) {
            status.textContent = fmt(t("uploaded_of", "Uploaded {done} of {total} ({pct}%)"),
              { done: humanBytes(ev.loaded), total: humanBytes(ev.total), pct: Math.round((100 * ev.loaded) / ev.total) });
          }
        };
        xhr.upload.onload = function () {
          if (bar) { bar.value = 1; }
          if (status) { status.textContent = t("upload_received", "Upload complete; waiting for the server\u2026"); }
        };
        xhr.onload = function () {
          if (submit) { submit.disabled = false; }
          var data = null;
          try { data = JSON.parse(xhr.responseText); } catch (err) { data = null; }
          if (!data || (!data.ok && data.html == null)) {
            // Answered by something other than the upload view (the 413 of the size cap, a proxy's
            // error page, a server error): its own message when it sent one, else the HTTP status.
            var said = data && (data.message || (data.error && data.error.message));
            refuse(said || fmt(t("upload_failed", "Upload failed (HTTP {code})."), { code: xhr.status }));
            return;
          }
          // A refused upload's message is shown once, in the result box (server-rendered and
          // escaped there); the transient line under the bar only says what is under way.
          if (status) { status.textContent = data.ok ? (data.message || "") : ""; }
          if (!data.ok && bar) { bar.hidden = true; }
          if (result && data.html != null) {
            result.innerHTML = data.html;
            initAll(result);
            if (data.ok && !result.querySelector("[data-poll-url]")) { settle(); }
          }
          if (data.replace) {  // other parts of the page the server re-rendered (e.g. counters)
            Object.keys(data.replace).forEach(function (id) {
              var target = document.getElementById(id);
              if (target) { target.innerHTML = data.replace[id]; initAll(target); }
            });
          }
          (data.poll || []).forEach(function (id) { watch(document.getElementById(id)); });
          if (data.ok) {
            form.reset();
            showChosen();
          }
        };
        xhr.onerror = xhr.ontimeout = xhr.onabort = function () {
          if (submit) { submit.disabled = false; }
          refuse(t("network_error", "Network error: the upload did not reach the server."));
        };
        xhr.send(data);
      });
    });
  }

  /* ------------------------------------------------------------ confirm */

  function initConfirm(scope) {
    Array.prototype.forEach.call(scope.querySelectorAll("form[data-confirm]"), function (form) {
      if (form.getAttribute("data-confirm-done")) { return; }
      form.setAttribute("data-confirm-done", "1");
      form.addEventListener("submit", function (e) {
        // data-confirm-if-changed names a field: ask only when it was changed (e.g. a running phase's
        // opening, not its deadline)
        var only = form.getAttribute("data-confirm-if-changed");
        var field = only ? form.querySelector("[name='" + only + "']") : null;
        if (field && field.value === field.defaultValue) { return; }
        if (!window.confirm(form.getAttribute("data-confirm"))) { e.preventDefault(); }
      });
    });
  }

  // A read-only field (the API token) selects its text on focus, for copying.
  function initSelectOnFocus(scope) {
    scope.querySelectorAll("[data-select-on-focus]").forEach(function (el) {
      el.addEventListener("focus", function () { el.select(); });
    });
  }

  /* Tables marked data-phone-cards read as cards on a phone (CSS): each body cell gets its column's
     header text (or the header's own data-label) as data-label (colspans followed), set again whenever a live part re-renders rows. */
  function initPhoneCards(scope) {
    var tables = Array.prototype.slice.call(scope.querySelectorAll("table[data-phone-cards]"));
    if (scope.closest) {
      var own = scope.closest("table[data-phone-cards]");
      if (own && tables.indexOf(own) < 0) { tables.push(own); }
    }
    tables.forEach(function (table) {
      var heads = [];
      var row = table.tHead && table.tHead.rows[table.tHead.rows.length - 1];
      if (!row) { return; }
      Array.prototype.forEach.call(row.cells, function (th) {
        /* a header that breaks its text over lines (<br>, which textContent drops) names itself by data-label */
        var text = th.getAttribute("data-label") || th.textContent.replace(/\s+/g, " ").trim();
        for (var k = 0; k < (th.colSpan || 1); k++) { heads.push(text); }
      });
      Array.prototype.forEach.call(table.tBodies, function (body) {
        Array.prototype.forEach.call(body.rows, function (tr) {
          var col = 0;
          Array.prototype.forEach.call(tr.cells, function (cell) {
            /* a cell across the whole row ("No team yet.") is a note about the table, not a column's value */
            var wholeRow = (cell.colSpan || 1) >= heads.length && heads.length > 1;
            if (cell.tagName === "TD" && heads[col] && !wholeRow && !cell.hasAttribute("data-label")) {
              cell.setAttribute("data-label", heads[col]);
            }
            col += cell.colSpan || 1;
          });
        });
      });
    });
  }

  /* A box that scrolls sideways (a wide table or matrix on a phone, a long command) can be reached by
     the keyboard to scroll it (a tab stop, a region named by its caption if it has one) and shows that it scrolls: a shadow
     at the edge with more to see. Looked at again when the window's width changes. */
  var SCROLLERS = ".table-scroll, figure.chart-wide, pre";

  function markScroller(el) {
    var wide = el.scrollWidth > el.clientWidth + 1;
    el.classList.toggle("is-scrollable", wide);
    el.classList.toggle("scrolled-to-end", wide && el.scrollLeft + el.clientWidth >= el.scrollWidth - 1);
    if (wide && !el.hasAttribute("tabindex")) {
      el.setAttribute("tabindex", "0");
      el.setAttribute("data-scroll-stop", "");
      var title = el.querySelector("caption, figcaption");
      if (title && !el.hasAttribute("role")) {
        el.setAttribute("role", "region");
        el.setAttribute("aria-label", title.textContent.replace(/\s+/g, " ").trim());
      }
    } else if (!wide && el.hasAttribute("data-scroll-stop")) {
      el.removeAttribute("tabindex");
      el.removeAttribute("data-scroll-stop");
    }
    if (!el.hasAttribute("data-scroll-watch")) {
      el.setAttribute("data-scroll-watch", "");
      el.addEventListener("scroll", function () {
        el.classList.toggle("scrolled-to-end", el.scrollLeft + el.clientWidth >= el.scrollWidth - 1);
      }, { passive: true });
    }
  }

  function initScrollers(scope) {
    var boxes = Array.prototype.slice.call(scope.querySelectorAll(SCROLLERS));
    if (scope.closest && scope.closest(SCROLLERS)) { boxes.push(scope.closest(SCROLLERS)); }
    boxes.forEach(markScroller);
  }

  var scrollerTimer = null;
  window.addEventListener("resize", function () {
    clearTimeout(scrollerTimer);
    scrollerTimer = setTimeout(function () { initScrollers(document); }, 200);
  });

  function initAll(scope) {
    initPhoneCards(scope);
    initSelectOnFocus(scope);
    initSortable(scope);
    initCharts(scope);
    initUploads(scope);
    initPolling(scope);
    initConfirm(scope);
    initScrollers(scope);
  }

  /* ------------------------------------------------------------ messages where the user is */

  /* After an action the server redirects to the section it came from (#rounds, #results, ...) and
     the browser jumps there, past the messages at the top of the page. Put the messages under that
     section's heading instead, so a refusal is read where the user is looking. */
  function placeMessages() {
    var list = document.querySelector("main > ul.messages");
    if (!list || !window.location.hash) { return; }
    var target = null;
    try { target = document.getElementById(decodeURIComponent(window.location.hash.slice(1))); } catch (e) { target = null; }
    if (!target || target === list || !target.closest("main")) { return; }
    if (/^H[1-6]$/.test(target.tagName)) {
      target.insertAdjacentElement("afterend", list);
    } else if (/^(TR|TBODY|THEAD|TD|TH|LI)$/.test(target.tagName)) {
      var holder = target.closest("table, ul, ol") || target;
      holder.insertAdjacentElement("beforebegin", list);
      target = list;
    } else {
      target.insertAdjacentElement("afterbegin", list);
    }
    target.scrollIntoView({ block: "start" });
  }

  document.addEventListener("DOMContentLoaded", function () {
    placeMessages();
    I18N = readJSON("tc-i18n") || {};
    document.documentElement.classList.add("js");
    // Without JS the page refreshes itself while a job runs (<noscript> meta
    // refresh); with JS the poller takes over.
    initAll(document);
    initCountdowns(document);
  });

  window.TraceCup = { heatmap: heatmap, gridmap: gridmap, scatter: scatter, pearson: pearson, sortTable: sortTable, initAll: initAll };
})();
