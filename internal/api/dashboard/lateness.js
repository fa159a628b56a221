// The lateness charts: for each job of the timeline, how late each run
// started against its schedule over the timeline's window, in ms, drawn as
// plain SVG from the records timeline.js has read.
'use strict';

window.SchedulerLateness = (function () {
  const { isTime, ms, svg, set } = window.SchedulerSVG;
  const LATENESS_REDRAW_MS = 10000; // the charts' time axis moves; redraw them this often at least

  const $ = (id) => document.getElementById(id);

  // A retry's start includes its backoff, and a backfilled run starts
  // long after its past tick by design, so only scheduled and manual runs
  // say how late the scheduler was.
  function lateness(st) {
    const pts = [];
    for (const rec of st.records.values()) {
      if (rec.trigger === 'retry' || rec.trigger === 'backfill' || !isTime(rec.started_at) || !isTime(rec.scheduled_at)) continue;
      pts.push({ t: ms(rec.scheduled_at), v: ms(rec.started_at) - ms(rec.scheduled_at), id: rec.run_id });
    }
    return pts.sort((a, b) => a.t - b.t);
  }

  function niceMax(v) {
    if (v <= 1) return 1;
    const p = Math.pow(10, Math.floor(Math.log10(v)));
    for (const m of [1, 2, 5, 10]) if (m * p >= v) return m * p;
    return 10 * p;
  }

  function quantile(sorted, q) {
    if (!sorted.length) return NaN;
    return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  }

  function drawLatenessChart(fig, name, pts, now, span) {
    const W = 340, H = 120, L = 58, R = 8, T = 8, B = 20;
    const pw = W - L - R, ph = H - T - B;
    const mins = span / 60000;
    const from = now - span;
    const shown = pts.filter((p) => p.t >= from);
    const vs = shown.map((p) => p.v).sort((a, b) => a - b);
    const lo = Math.min(0, vs.length ? vs[0] : 0);
    const hi = niceMax(Math.max(10, vs.length ? vs[vs.length - 1] : 0));
    const X = (t) => L + (t - from) / span * pw;
    const Y = (v) => T + ph - (v - lo) / (hi - lo) * ph;

    const caption = fig.querySelector('figcaption');
    const stats = vs.length
      ? `${vs.length} runs · median ${Math.round(quantile(vs, 0.5))} ms · p95 ${Math.round(quantile(vs, 0.95))} ms · max ${Math.round(vs[vs.length - 1])} ms`
      : 'no started run in this window';
    caption.replaceChildren(Object.assign(document.createElement('strong'), { textContent: name }), document.createTextNode(' ' + stats));

    const chart = fig.querySelector('svg');
    chart.replaceChildren();
    set(chart, 'viewBox', `0 0 ${W} ${H}`);
    set(chart, 'width', W);
    set(chart, 'height', H);
    set(chart, 'aria-label', `Start lateness of ${name} over the last ${mins} minutes, in milliseconds: ${stats}`);
    for (const v of [lo, (lo + hi) / 2, hi]) {
      chart.append(svg('line', { x1: L, x2: L + pw, y1: Y(v).toFixed(1), y2: Y(v).toFixed(1), class: v === 0 ? 'lat-zero' : 'lat-rule' }));
      const t = svg('text', { x: L - 4, y: (Y(v) + 4).toFixed(1), class: 'lat-label end' });
      t.textContent = `${Math.round(v)} ms`;
      chart.append(t);
    }
    for (const [m, text] of [[mins, `−${mins} min`], [mins / 2, `−${mins / 2} min`], [0, 'now']]) {
      const t = svg('text', { x: X(now - m * 60000).toFixed(1), y: H - 5, class: 'lat-label ' + (m === mins ? 'start' : m === 0 ? 'end' : 'middle') });
      t.textContent = text;
      chart.append(t);
    }
    chart.append(svg('line', { x1: L, x2: L, y1: T, y2: T + ph, class: 'lat-axis' }));
    if (shown.length > 1) {
      chart.append(svg('polyline', { class: 'lat-line', points: shown.map((p) => `${X(p.t).toFixed(1)},${Y(p.v).toFixed(1)}`).join(' ') }));
    }
    // Dots only while they can be told apart; the line carries the rest.
    if (shown.length <= 240) {
      for (const p of shown) {
        const c = svg('circle', { cx: X(p.t).toFixed(1), cy: Y(p.v).toFixed(1), r: 2.2, class: 'lat-dot' });
        c.append(svg('title'));
        c.lastChild.textContent = `${p.id}: ${Math.round(p.v)} ms late`;
        chart.append(c);
      }
    }
  }

  // drawLateness keeps a chart per job shown, in the order given; jobs maps
  // a job's name to its state in timeline.js (records and their version),
  // and span is the width of the timeline's window in ms.
  function drawLateness(shown, jobs, now, span) {
    const spanKey = String(span);
    const grid = $('lateness-charts');
    const figs = new Map();
    for (const f of grid.children) figs.set(f.dataset.job, f);
    for (const j of shown) {
      const st = jobs.get(j.name);
      let fig = figs.get(j.name);
      figs.delete(j.name);
      if (!fig) {
        fig = document.createElement('figure');
        fig.className = 'lat-chart';
        fig.dataset.job = j.name;
        fig.append(document.createElement('figcaption'), svg('svg', { role: 'img' }));
      }
      grid.append(fig);
      if (fig.dataset.version !== String(st.version) || fig.dataset.span !== spanKey || now - Number(fig.dataset.drawn || 0) >= LATENESS_REDRAW_MS) {
        drawLatenessChart(fig, j.name, lateness(st), now, span);
        fig.dataset.version = String(st.version);
        fig.dataset.span = spanKey;
        fig.dataset.drawn = String(now);
      }
    }
    for (const f of figs.values()) f.remove();
  }

  return { draw: drawLateness };
})();
