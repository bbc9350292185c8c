// The console's behaviour. Every page works without it; it adds the time
// zone, copying, confirmations, the CSRF header of htmx requests and the
// charts.
(function () {
  "use strict";

  // The browser's time zone, so the server shows times in it.
  try {
    var tz = Intl.DateTimeFormat().resolvedOptions().timeZone;
    var had = /(?:^|; )tollgate_tz=/.test(document.cookie);
    if (tz) {
      document.cookie = "tollgate_tz=" + encodeURIComponent(tz) + "; path=/console/; SameSite=Lax; max-age=31536000";
      if (!had && tz !== "UTC" && document.querySelector("time") && !sessionStorage.getItem("tollgate_tz_reload")) {
        sessionStorage.setItem("tollgate_tz_reload", "1");
        location.reload();
        return;
      }
    }
  } catch (e) { /* no zone: times stay in UTC */ }

  document.addEventListener("htmx:configRequest", function (ev) {
    var t = document.body.getAttribute("data-csrf");
    if (t) { ev.detail.headers["X-CSRF-Token"] = t; }
  });

  document.addEventListener("submit", function (ev) {
    var msg = ev.target.getAttribute && ev.target.getAttribute("data-confirm");
    if (msg && !window.confirm(msg)) {
      ev.preventDefault();
      ev.stopImmediatePropagation();
    }
  }, true);

  document.addEventListener("click", function (ev) {
    var btn = ev.target.closest && ev.target.closest("[data-copy]");
    if (!btn) { return; }
    var el = document.querySelector(btn.getAttribute("data-copy"));
    if (!el) { return; }
    var text = el.textContent.trim();
    var done = function () {
      btn.textContent = "Copied";
      btn.setAttribute("data-copied", "true");
      setTimeout(function () { btn.textContent = "Copy"; }, 2000);
    };
    var fallback = function () {
      var r = document.createRange();
      r.selectNodeContents(el);
      var s = window.getSelection();
      s.removeAllRanges();
      s.addRange(r);
      try { document.execCommand("copy"); done(); } catch (e) { /* selected: the person copies */ }
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, fallback);
    } else {
      fallback();
    }
  });

  // A date typed into the log filters means the "Dates…" period.
  document.addEventListener("change", function (ev) {
    var f = ev.target.form;
    if (!f || !f.classList.contains("filters")) { return; }
    if ((ev.target.name === "from" || ev.target.name === "to") && ev.target.value) {
      f.elements.period.value = "custom";
    }
  });

  var palette = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f"];

  // An axis tick as a person reads an amount: no exponent, three
  // significant digits.
  function amount(v) {
    if (v === 0) { return "0"; }
    var s = Number(v.toPrecision(3));
    return Math.abs(s) < 1e-6 ? s.toFixed(12).replace(/0+$/, "") : String(s);
  }

  function drawBars(root) {
    root.querySelectorAll(".bar[data-share]").forEach(function (b) {
      b.style.width = Math.max(0, Math.min(100, parseFloat(b.getAttribute("data-share")) || 0)) + "%";
    });
  }

  // A chart: spend per day stacked by model. The amounts arrive as exact
  // decimal strings; numbers are made only to draw, and the legend shows
  // the strings.
  function drawChart(el) {
    if (el.getAttribute("data-drawn") || typeof uPlot === "undefined") { return; }
    var d = JSON.parse(el.getAttribute("data-chart"));
    if (!d.x || !d.x.length) { return; }
    el.setAttribute("data-drawn", "true");
    var styles = getComputedStyle(document.body);
    var fg = styles.getPropertyValue("--muted").trim() || "#666";
    var grid = styles.getPropertyValue("--line").trim() || "#ddd";
    var stacked = [], sum = d.x.map(function () { return 0; });
    d.series.forEach(function (s) {
      sum = sum.map(function (v, i) { return v + parseFloat(s.costs[i]); });
      stacked.push(sum.slice());
    });
    var bars = uPlot.paths.bars({ size: [0.7, 60] });
    var series = [{ label: "Day (UTC)", value: function (u, v, si, i) { return i == null ? "" : d.labels[i]; } }];
    // Drawn from the top of the stack down, so each band covers the ones
    // above it only where it is.
    var order = d.series.map(function (s, i) { return i; }).reverse();
    order.forEach(function (i) {
      series.push({
        label: d.series[i].model, stroke: palette[i % palette.length], fill: palette[i % palette.length],
        paths: bars, points: { show: false },
        value: function (u, v, si, idx) { return idx == null ? "" : d.series[i].costs[idx]; }
      });
    });
    var data = [d.x].concat(order.map(function (i) { return stacked[i]; }));
    var opts = {
      width: Math.max(280, el.clientWidth), height: 260,
      scales: { x: { time: true }, y: { range: function (u, min, max) { return [0, max > 0 ? max * 1.1 : 1]; } } },
      axes: [
        { stroke: fg, grid: { stroke: grid }, ticks: { stroke: grid } },
        { stroke: fg, grid: { stroke: grid }, ticks: { stroke: grid }, size: 80,
          values: function (u, splits) { return splits.map(amount); } }
      ],
      tzDate: function (ts) { return uPlot.tzDate(new Date(ts * 1000), "Etc/UTC"); },
      legend: { live: true },
      series: series
    };
    var plot = new uPlot(opts, data, el);
    window.addEventListener("resize", function () { plot.setSize({ width: Math.max(280, el.clientWidth), height: 260 }); });
  }

  function draw(root) {
    root.querySelectorAll(".plot[data-chart]").forEach(drawChart);
    drawBars(root);
  }

  document.addEventListener("DOMContentLoaded", function () { draw(document); });
  document.addEventListener("htmx:afterSettle", function (ev) { draw(ev.target); });
})();
