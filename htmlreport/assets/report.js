// The charts of an rlbench report, drawn with Chart.js from window.rlbenchData
// (see package htmlreport). After each chart renders with ink on its canvas,
// the body's data-charts-drawn attribute counts it, so that a headless
// browser can check the page against its data-charts-total. A script error
// is written to the body's data-js-error.
(function () {
  'use strict';

  const body = document.body;
  window.addEventListener('error', function (e) {
    body.setAttribute('data-js-error', String(e.message || e));
  });

  const data = window.rlbenchData;
  data.cells.forEach((c) => c.samples.forEach((s) => {
    s.curve = s.curve || [];
    s.series = s.series || [];
    s.faults = s.faults || [];
  }));
  // Tableau 10: one colour per file in a cell's charts, per cell in the
  // overview.
  const palette = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f',
    '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#bab0ac'];
  const dashes = [[], [6, 3], [2, 2], [8, 3, 2, 3], [12, 4]];
  const colour = (i) => palette[i % palette.length];
  const dash = (i) => dashes[i % dashes.length];

  // A latency in µs: "183µs", "1.2ms", "2.50s".
  function us(v) {
    if (v < 999.5) return v.toFixed(0) + 'µs';
    if (v < 99950) return (v / 1e3).toFixed(1) + 'ms';
    if (v < 999500) return (v / 1e3).toFixed(0) + 'ms';
    return (v / 1e6).toFixed(2) + 's';
  }

  // The percentile at x = 1/(1-q): 1 is "0%", 10 "90%", 1000 "99.9%".
  function percentile(x) {
    const digits = Math.max(0, Math.round(Math.log10(x)) - 2);
    return (100 - 100 / x).toFixed(digits) + '%';
  }

  function isPowerOfTen(v) {
    const l = Math.log10(v);
    return Math.abs(l - Math.round(l)) < 1e-9;
  }

  // Labels 1, 2 and 5 times a power of ten on a log axis, no other.
  function niceLog(v) {
    const m = v / Math.pow(10, Math.floor(Math.log10(v) + 1e-9));
    return [1, 2, 5].some((n) => Math.abs(m - n) < 1e-6);
  }

  // inked reports whether the canvas has a pixel that is not transparent.
  function inked(canvas) {
    if (!canvas.width || !canvas.height) return false;
    const px = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
    for (let i = 3; i < px.length; i += 4) {
      if (px[i] !== 0) return true;
    }
    return false;
  }

  let drawn = 0;
  Chart.register({
    id: 'rlbenchDrawn',
    afterRender(chart) {
      if (chart.$rlbenchDrawn) return;
      const plotted = chart.getSortedVisibleDatasetMetas().some((m) => m.data.length > 0);
      if (!plotted || !inked(chart.canvas)) return;
      chart.$rlbenchDrawn = true;
      drawn++;
      body.setAttribute('data-charts-drawn', String(drawn));
    },
  });

  // faultLines draws a dashed vertical line at each fault, labelled once
  // per distinct fault.
  const faultLines = {
    id: 'faultLines',
    afterDatasetsDraw(chart, _args, opts) {
      const faults = (opts && opts.faults) || [];
      if (!faults.length) return;
      const { ctx, chartArea: area, scales: { x } } = chart;
      const labelled = new Set();
      ctx.save();
      ctx.font = '11px system-ui, sans-serif';
      ctx.textBaseline = 'top';
      faults.forEach((f) => {
        const px = x.getPixelForValue(f.at_s);
        if (px < area.left || px > area.right) return;
        ctx.strokeStyle = f.failed ? '#b3261e' : '#6a3d9a';
        ctx.lineWidth = 1.5;
        ctx.setLineDash([5, 4]);
        ctx.beginPath();
        ctx.moveTo(px, area.top);
        ctx.lineTo(px, area.bottom);
        ctx.stroke();
        if (labelled.has(f.fault)) return;
        const text = f.fault + (f.failed ? ' (failed)' : '');
        const y = area.top + 3 + 14 * labelled.size;
        labelled.add(f.fault);
        ctx.setLineDash([]);
        const w = ctx.measureText(text).width;
        const left = px + 4 + w > area.right ? px - 4 - w : px + 4;
        ctx.fillStyle = 'rgba(255,255,255,0.85)';
        ctx.fillRect(left - 2, y - 1, w + 4, 14);
        ctx.fillStyle = ctx.strokeStyle;
        ctx.fillText(text, left, y);
      });
      ctx.restore();
    },
  };

  const base = {
    animation: false,
    responsive: true,
    maintainAspectRatio: false,
    normalized: true,
    interaction: { mode: 'nearest', intersect: false },
  };

  function latencyOptions(title) {
    return Object.assign({}, base, {
      scales: {
        x: {
          type: 'logarithmic',
          min: 1,
          title: { display: true, text: 'percentile' },
          afterBuildTicks(scale) {
            const ticks = [];
            for (let v = 1; v <= scale.max * 1.0001; v *= 10) ticks.push({ value: v });
            scale.ticks = ticks;
          },
          ticks: { callback: (v) => (isPowerOfTen(v) ? percentile(v) : '') },
        },
        y: {
          type: 'logarithmic',
          title: { display: true, text: 'latency' },
          ticks: { callback: (v) => (niceLog(v) ? us(v) : '') },
        },
      },
      plugins: {
        title: { display: !!title, text: title },
        legend: { position: 'bottom', labels: { boxWidth: 18, boxHeight: 2 } },
        tooltip: {
          callbacks: {
            label: (ctx) => ctx.dataset.label + ': p' + percentile(ctx.parsed.x).replace('%', '') + ' ' + us(ctx.parsed.y),
          },
        },
      },
    });
  }

  function curveData(sample) {
    return sample.curve.map((p) => ({ x: p[0], y: p[1] }));
  }

  function line(label, points, i, extra) {
    return Object.assign({
      label: label,
      data: points,
      borderColor: colour(i),
      backgroundColor: colour(i),
      borderWidth: 1.75,
      pointRadius: points.length < 40 ? 2 : 0,
    }, extra || {});
  }

  const cells = new Map(data.cells.map((c) => [c.id, c]));

  function drawOverview(canvas) {
    const datasets = [];
    data.cells.forEach((cell, ci) => {
      cell.samples.forEach((s) => {
        if (!s.curve.length) return;
        datasets.push(line(cell.title + ' (' + s.label + ')', curveData(s), ci, { borderDash: dash(s.file) }));
      });
    });
    const options = latencyOptions('');
    if (datasets.length > 24) options.plugins.legend.display = false;
    return new Chart(canvas, { type: 'line', data: { datasets: datasets }, options: options });
  }

  function drawImmortal(canvas) {
    const datasets = data.files.map((f, fi) => ({
      label: f.name + ': ' + f.path,
      data: data.cells.map((c) => c.immortal[fi]),
      backgroundColor: colour(fi),
      borderColor: colour(fi),
      minBarLength: 0,
    }));
    return new Chart(canvas, {
      type: 'bar',
      data: { labels: data.cells.map((c) => c.title), datasets: datasets },
      options: Object.assign({}, base, {
        interaction: { mode: 'index', intersect: false },
        scales: {
          x: { ticks: { autoSkip: false, maxRotation: 60 } },
          y: { beginAtZero: true, title: { display: true, text: 'keys with no TTL' }, ticks: { precision: 0 } },
        },
        plugins: { legend: { position: 'bottom' } },
      }),
    });
  }

  function drawLatency(canvas, cell) {
    const datasets = cell.samples.filter((s) => s.curve.length)
      .map((s) => line(s.label, curveData(s), s.file, { borderDash: dash(s.file) }));
    return new Chart(canvas, { type: 'line', data: { datasets: datasets }, options: latencyOptions('latency percentiles') });
  }

  function drawSeries(canvas, cell) {
    const datasets = [];
    const faults = [];
    let end = 0;
    cell.samples.forEach((s) => {
      if (!s.series.length) return;
      end = Math.max(end, s.series[s.series.length - 1][0]);
      // Each entry is a rate over the interval that ends at its time: a
      // step up or down at the start of the interval (Chart.js' 'after'),
      // from a first point at 0.
      const first = s.series[0];
      const rate = [{ x: 0, y: first[1] }].concat(s.series.map((p) => ({ x: p[0], y: p[1] })));
      const errs = [{ x: 0, y: first[2] }].concat(s.series.map((p) => ({ x: p[0], y: p[2] })));
      datasets.push(line(s.label + ' decisions/s', rate, s.file, { stepped: 'after', yAxisID: 'y', pointRadius: 0 }));
      datasets.push(line(s.label + ' errors/s', errs, s.file, {
        stepped: 'after', yAxisID: 'y1', pointRadius: 0, borderWidth: 1.25, borderDash: [2, 2],
      }));
      (s.faults || []).forEach((f) => faults.push(f));
    });
    return new Chart(canvas, {
      type: 'line',
      data: { datasets: datasets },
      plugins: [faultLines],
      options: Object.assign({}, base, {
        scales: {
          x: { type: 'linear', min: 0, max: end, title: { display: true, text: 'seconds into the load' } },
          y: { beginAtZero: true, grace: '8%', title: { display: true, text: 'decisions/s' } },
          y1: {
            beginAtZero: true, grace: '8%', position: 'right', grid: { drawOnChartArea: false },
            title: { display: true, text: 'errors/s (dotted)' }, ticks: { precision: 0 },
          },
        },
        plugins: {
          title: { display: true, text: 'throughput and errors over time' + (faults.length ? '; faults: dashed purple lines' : '') },
          legend: { position: 'bottom', labels: { boxWidth: 18, boxHeight: 2 } },
          faultLines: { faults: faults },
        },
      }),
    });
  }

  document.querySelectorAll('canvas[data-chart]').forEach((canvas) => {
    const kind = canvas.getAttribute('data-chart');
    const cell = cells.get(canvas.getAttribute('data-cell'));
    try {
      if (kind === 'latency-all') drawOverview(canvas);
      else if (kind === 'immortal') drawImmortal(canvas);
      else if (kind === 'latency') drawLatency(canvas, cell);
      else if (kind === 'series') drawSeries(canvas, cell);
    } catch (e) {
      body.setAttribute('data-js-error', kind + ': ' + (e && e.message ? e.message : String(e)));
    }
  });
})();
