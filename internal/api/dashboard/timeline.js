// The timeline and the lateness charts: the last hour of each job's runs,
// drawn as plain SVG from this replica's JSON API. app.js calls update()
// once a second with the jobs and slots it has just read; this file reads
// run records itself, but only for the jobs it shows and only when a job's
// last_run says a record was written since the last read (at most every
// 5s), so a page left open does not re-read every job's history every
// second. The API has no read of recent runs across jobs; where the job
// listing carries no last_run (large clusters), jobs' newest records are
// read a few a poll to find the active ones.
'use strict';

window.SchedulerTimeline = (function () {
  const HOUR_MS = 3600 * 1000;
  // Past this many jobs a row each would make the page slow to draw and to
  // read; the most recently active ones are shown and the page says so.
  const MAX_ROWS = 50;
  const MIN_REFETCH_MS = 5000; // a busy job's runs are read at most this often
  const IDLE_REFETCH_MS = 60000; // and at least this often, should a record be rewritten in place
  const FETCHES_PER_TICK = 8; // spreads the first read of 50 jobs over a few polls
  const STEADY_LIMIT = 20;
  const FIRST_LIMIT = 200;
  const MAX_LIMIT = 1000; // the API's cap on ?limit=
  const MAX_KEPT = 3600; // records kept per job: one a second for the hour
  const LATENESS_REDRAW_MS = 10000; // the charts' time axis moves; redraw them this often at least
  // A job listing of a large cluster carries no last_run (the API bounds its
  // reads); the page then reads jobs' newest records itself, a few a poll.
  const PROBES_PER_TICK = 4;
  const PROBE_EVERY_MS = 120000;
  const RECENT_MS = 5 * 60000; // without last_run, a job active this recently is read every 5s
  // A drawn job keeps its row against a newcomer less than this much more
  // recent, so that sixty equally busy jobs do not trade fifty rows every
  // poll; and a job off the rows keeps its records this long, should it
  // come back.
  const STICKY_MS = 60000;

  // Layout of the timeline, in CSS pixels.
  const LABEL_W = 190;
  const AXIS_H = 24;
  const MARK_H = 12; // the lane of skipped and missed ticks, above the slot lanes
  const LANE_H = 14;
  const ROW_GAP = 10;
  const MIN_BAR_W = 2; // a 20 ms run is still visible on a one-hour axis

  const RUN_OUTCOMES = ['succeeded', 'failed', 'timed_out', 'cancelled', 'lost'];
  const MARK_OUTCOMES = ['skipped', 'missed'];

  const ZERO_TIME = '0001-01-01T00:00:00Z';
  // The SVG namespace is taken from the <svg> the HTML parser made, so
  // that no address appears in the script (the page references nothing but
  // itself, and a test holds it to that).
  let NS = null;

  // job name -> { records: Map(run_id -> record), lastKey, fetchedAt, limit,
  //               due, inFlight, version, bars: Map(run_id -> element), group,
  //               shownAt }
  const jobs = new Map();
  // Bars are placed at absolute times from this origin; moving the window
  // is then one transform on their common group, not a write per bar.
  const epoch = Date.now() - HOUR_MS;
  // What the last poll drew, to draw again when the window is changed.
  let last = null;
  // job name -> the latest time the page knows the job was active: from the
  // listing's last_run, a run it saw hold a slot, its records or a probe.
  // Kept for jobs without a row too: it is what chooses the rows.
  const seen = new Map();
  // job name -> when a probe last read the job's newest record.
  const probed = new Map();
  // Whether the job listing carries last_run.
  let listed = true;

  const $ = (id) => document.getElementById(id);

  function isTime(t) { return typeof t === 'string' && t !== '' && t !== ZERO_TIME; }
  function ms(t) { return isTime(t) ? new Date(t).getTime() : NaN; }
  function pad(n, w = 2) { return String(n).padStart(w, '0'); }

  function clock(t, millis) {
    const d = new Date(t);
    if (isNaN(d)) return '—';
    const s = `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
    return millis ? `${s}.${pad(d.getMilliseconds(), 3)}` : s;
  }

  function duration(d) {
    if (d < 1000) return `${Math.round(d)} ms`;
    if (d < 60000) return `${(d / 1000).toFixed(1)} s`;
    return `${Math.floor(d / 60000)}m${pad(Math.round(d / 1000) % 60)}s`;
  }

  function svg(tag, attrs) {
    const node = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) if (v !== undefined && v !== null) node.setAttribute(k, v);
    return node;
  }

  // set writes an attribute only when it changed: most bars stay put
  // from one poll to the next and need no work from the browser.
  function set(node, name, value) {
    const v = String(value);
    if (node.getAttribute(name) !== v) node.setAttribute(name, v);
  }

  function setText(node, text) {
    if (node.textContent !== text) node.textContent = text;
  }

  function titleOf(node, text) {
    let t = node.firstElementChild;
    if (!t || t.tagName !== 'title') { t = svg('title'); node.prepend(t); }
    setText(t, text);
  }

  // ---- fetching ----

  function lastKey(j) {
    const r = j.last_run;
    return r ? `${r.run_id} ${r.outcome} ${r.ended_at || ''}` : '';
  }

  function mark(name, t) {
    if (!isNaN(t) && !(seen.get(name) >= t)) seen.set(name, t);
  }

  function activity(j, now) {
    if (j.running > 0 || j.pending > 0) mark(j.name, now);
    if (j.last_run) mark(j.name, recordEnd(j.last_run));
    return seen.has(j.name) ? seen.get(j.name) : -Infinity;
  }

  function state(name) {
    let st = jobs.get(name);
    if (!st) {
      st = { records: new Map(), lastKey: null, fetchedAt: 0, limit: FIRST_LIMIT, due: true, inFlight: false, version: 0, bars: new Map(), group: null };
      jobs.set(name, st);
    }
    return st;
  }

  function wants(st, j, now) {
    if (st.inFlight) return false;
    if (st.due) return true;
    const since = now - st.fetchedAt;
    if (!listed) return since >= (now - activity(j, now) < RECENT_MS ? MIN_REFETCH_MS : IDLE_REFETCH_MS);
    return (st.lastKey !== lastKey(j) && since >= MIN_REFETCH_MS) || since >= IDLE_REFETCH_MS;
  }

  // fetchRuns reads a job's newest records and merges them in. Records come
  // newest first; when none of a full page was known, the page may have
  // skipped some, so the next read asks for more.
  async function fetchRuns(api, j, st, now) {
    st.inFlight = true;
    st.due = false;
    const key = lastKey(j);
    const limit = st.limit;
    try {
      const r = await api('GET', `/api/v1/jobs/${encodeURIComponent(j.name)}/runs?limit=${limit}`);
      if (!r.ok || !Array.isArray(r.body)) return `runs of ${j.name}: HTTP ${r.status}`;
      let known = 0;
      let changed = false;
      for (const rec of r.body) {
        const had = st.records.get(rec.run_id);
        if (had) known++;
        if (!had || JSON.stringify(had) !== JSON.stringify(rec)) changed = true;
        st.records.set(rec.run_id, rec);
        mark(j.name, recordEnd(rec));
      }
      if (changed) st.version++;
      const oldest = r.body.length ? ms(r.body[r.body.length - 1].scheduled_at) : NaN;
      if (r.body.length === limit && known === 0 && limit < MAX_LIMIT && oldest >= now - HOUR_MS) {
        st.limit = Math.min(limit * 5, MAX_LIMIT);
        st.due = true;
      } else {
        st.limit = STEADY_LIMIT;
      }
      st.lastKey = key;
      st.fetchedAt = now;
      return '';
    } catch (e) {
      st.due = true;
      return `runs of ${j.name}: ${e.message || e}`;
    } finally {
      st.inFlight = false;
    }
  }

  // probe reads the newest record of a few jobs the page knows nothing
  // recent of, oldest probe first, so that over a few minutes every job of
  // a large cluster has been looked at once.
  async function probe(api, jobList, shownNames, now) {
    const todo = jobList.filter((j) => !shownNames.has(j.name) && !(now - (probed.get(j.name) || 0) < PROBE_EVERY_MS))
      .sort((a, b) => (probed.get(a.name) || 0) - (probed.get(b.name) || 0))
      .slice(0, PROBES_PER_TICK);
    const errors = [];
    await Promise.all(todo.map(async (j) => {
      probed.set(j.name, now);
      try {
        const r = await api('GET', `/api/v1/jobs/${encodeURIComponent(j.name)}/runs?limit=1`);
        if (r.ok && Array.isArray(r.body) && r.body.length) mark(j.name, recordEnd(r.body[0]));
        else if (!r.ok) errors.push(`newest run of ${j.name}: HTTP ${r.status}`);
      } catch (e) {
        errors.push(`newest run of ${j.name}: ${e.message || e}`);
      }
    }));
    return errors;
  }

  function recordEnd(rec) {
    for (const t of [rec.ended_at, rec.started_at, rec.scheduled_at]) if (isTime(t)) return ms(t);
    return NaN;
  }

  function prune(st, now) {
    const from = now - HOUR_MS;
    for (const [id, rec] of st.records) {
      if (!(recordEnd(rec) >= from)) { st.records.delete(id); st.version++; }
    }
    if (st.records.size > MAX_KEPT) {
      const old = Array.from(st.records.values()).sort((a, b) => recordEnd(a) - recordEnd(b));
      for (const rec of old.slice(0, st.records.size - MAX_KEPT)) st.records.delete(rec.run_id);
      st.version++;
    }
  }

  // ---- drawing: the timeline ----

  // items are what a job's row shows: finished records, and the runs that
  // hold a slot now (open-ended to now) unless their record is in already.
  function items(name, st, slots, now) {
    const out = [];
    for (const rec of st.records.values()) out.push(rec);
    for (const s of slots) {
      if (s.job !== name || st.records.has(s.run_id)) continue;
      out.push({ run_id: s.run_id, job: name, outcome: 'running', slot: s.slot, holder: s.holder,
        fencing_token: s.fencing_token, started_at: s.started_at, scheduled_at: s.scheduled_at, running: true });
    }
    return out;
  }

  function tooltip(x, now) {
    const lines = [x.run_id];
    lines.push(`${x.outcome}${x.attempt ? ` · attempt ${x.attempt}` : ''}${x.trigger ? ` · ${x.trigger}` : ''}`);
    if (x.fencing_token) lines.push(`slot ${x.slot} · fencing token ${x.fencing_token}`);
    if (x.holder) lines.push(`holder ${x.holder}`);
    lines.push(`scheduled ${clock(x.scheduled_at, true)}`);
    if (isTime(x.started_at)) {
      const late = ms(x.started_at) - ms(x.scheduled_at);
      lines.push(`started ${clock(x.started_at, true)}${isNaN(late) ? '' : ` (${Math.round(late)} ms late)`}`);
    }
    if (x.running) lines.push(`running for ${duration(now - ms(x.started_at))}`);
    else if (isTime(x.ended_at)) {
      const took = isTime(x.started_at) ? ` (took ${duration(ms(x.ended_at) - ms(x.started_at))})` : '';
      lines.push(`ended ${clock(x.ended_at, true)}${took}`);
    }
    if (x.error) lines.push(`error: ${x.error}`);
    return lines.join('\n');
  }

  function lanes(j, list) {
    let n = Math.max(1, j.max_concurrency || 1);
    for (const x of list) if (Number.isInteger(x.slot) && x.slot + 1 > n) n = x.slot + 1;
    return n;
  }

  // drawRow keeps one element per run in the job's group, keyed by run id.
  function drawRow(st, list, k, now) {
    const keep = new Set();
    for (const x of list) {
      const bar = isTime(x.started_at);
      const kind = bar ? 'bar' : 'mark';
      let node = st.bars.get(x.run_id);
      if (node && node.dataset.kind !== kind) { node.remove(); node = null; }
      if (!node) {
        node = svg(bar ? 'rect' : 'circle');
        node.dataset.kind = kind;
        node.dataset.runId = x.run_id;
        st.group.append(node);
        st.bars.set(x.run_id, node);
      }
      keep.add(x.run_id);
      const outcome = x.outcome || 'unknown';
      set(node, 'class', `tl-${kind} ${outcome}`);
      node.dataset.outcome = outcome;
      node.dataset.slot = String(x.slot ?? '');
      node.dataset.token = String(x.fencing_token || '');
      if (bar) {
        const start = ms(x.started_at);
        const end = x.running || !isTime(x.ended_at) ? now : ms(x.ended_at);
        const slot = Number.isInteger(x.slot) && x.slot >= 0 ? x.slot : 0;
        set(node, 'x', ((start - epoch) * k).toFixed(1));
        set(node, 'width', Math.max(MIN_BAR_W, (end - start) * k).toFixed(1));
        set(node, 'y', MARK_H + slot * LANE_H + 2);
        set(node, 'height', LANE_H - 4);
      } else {
        set(node, 'cx', ((ms(x.scheduled_at) - epoch) * k).toFixed(1));
        set(node, 'cy', MARK_H / 2);
        set(node, 'r', 3.5);
      }
      titleOf(node, tooltip(x, now));
    }
    for (const [id, node] of st.bars) {
      if (!keep.has(id)) { node.remove(); st.bars.delete(id); }
    }
  }

  // shownSpan is the width of the drawn window, chosen on the page; records
  // of the whole hour are kept whatever it is.
  function shownSpan() {
    const v = Number($('timeline-window').value);
    return v > 0 && v <= HOUR_MS ? v : HOUR_MS;
  }

  function drawAxis(axis, grid, plotW, height, now, span) {
    axis.replaceChildren();
    grid.replaceChildren();
    const from = now - span;
    const k = plotW / span;
    // Minute ticks always; labels and grid lines as often as fit.
    const every = span <= 5 * 60000 ? 1 : span <= 15 * 60000 ? 5 : 10;
    for (let m = Math.ceil(from / 60000) * 60000; m <= now; m += 60000) {
      const x = (m - from) * k;
      const d = new Date(m);
      const major = d.getMinutes() % every === 0;
      axis.append(svg('line', { x1: (LABEL_W + x).toFixed(1), x2: (LABEL_W + x).toFixed(1), y1: AXIS_H - (major ? 8 : 4), y2: AXIS_H, class: 'tl-tick' }));
      if (major) {
        const label = svg('text', { x: (LABEL_W + x).toFixed(1), y: AXIS_H - 11, class: 'tl-axis-label' });
        label.textContent = `${pad(d.getHours())}:${pad(d.getMinutes())}`;
        axis.append(label);
      }
      if (major || every === 10 && d.getMinutes() % 5 === 0) {
        grid.append(svg('line', { x1: x.toFixed(1), x2: x.toFixed(1), y1: 0, y2: height, class: major ? 'tl-grid major' : 'tl-grid' }));
      }
    }
    const nowLabel = svg('text', { x: LABEL_W + plotW, y: AXIS_H - 11, class: 'tl-axis-label end' });
    nowLabel.textContent = 'now';
    axis.append(nowLabel);
    axis.append(svg('line', { x1: LABEL_W, x2: LABEL_W + plotW, y1: AXIS_H, y2: AXIS_H, class: 'tl-tick' }));
  }

  function drawTimeline(shown, slots, now) {
    const root = $('timeline-svg');
    const width = Math.max(600, root.parentElement.clientWidth - 2);
    const plotW = width - LABEL_W - 40;
    const span = shownSpan();
    const k = plotW / span;
    const shift = root.querySelector('.tl-shift');
    const labels = root.querySelector('.tl-labels');
    const backs = root.querySelector('.tl-backs');
    labels.replaceChildren();
    backs.replaceChildren();
    // The rows start below the axis, in the plot as beside it.
    set(labels, 'transform', `translate(0 ${AXIS_H})`);

    let y = 0;
    const summary = [];
    for (const j of shown) {
      const st = jobs.get(j.name);
      if (!st.group) {
        st.group = svg('g', { class: 'tl-job' });
        st.group.dataset.job = j.name;
      }
      shift.append(st.group); // appending in order also sorts the rows
      const list = items(j.name, st, slots, now);
      const n = lanes(j, list);
      const h = MARK_H + n * LANE_H;
      set(st.group, 'transform', `translate(0 ${y})`);
      drawRow(st, list, k, now);

      backs.append(svg('rect', { x: 0, y, width: plotW, height: h, class: 'tl-back' }));
      const name = svg('text', { x: 4, y: y + MARK_H + LANE_H - 3, class: 'tl-name' });
      name.textContent = j.name.length > 24 ? j.name.slice(0, 23) + '…' : j.name;
      name.append(svg('title'));
      name.lastChild.textContent = j.name;
      labels.append(name);
      const ticks = svg('text', { x: LABEL_W - 6, y: y + MARK_H - 2, class: 'tl-lane-label' });
      ticks.textContent = 'ticks';
      labels.append(ticks);
      for (let s = 0; s < n; s++) {
        const t = svg('text', { x: LABEL_W - 6, y: y + MARK_H + s * LANE_H + LANE_H - 3, class: 'tl-lane-label' });
        t.textContent = `slot ${s}`;
        labels.append(t);
      }
      summary.push([j.name, list]);
      y += h + ROW_GAP;
    }
    // Rows of jobs no longer shown.
    for (const g of Array.from(shift.children)) {
      if (!shown.some((j) => j.name === g.dataset.job)) g.remove();
    }

    const height = Math.max(y, 20);
    set(root, 'width', width);
    set(root, 'height', AXIS_H + height + 4);
    set(root, 'viewBox', `0 0 ${width} ${AXIS_H + height + 4}`);
    const plot = root.querySelector('.tl-plot');
    set(plot, 'x', LABEL_W);
    set(plot, 'y', AXIS_H);
    set(plot, 'width', plotW);
    set(plot, 'height', height);
    set(shift, 'transform', `translate(${(-(now - span - epoch) * k).toFixed(1)} 0)`);
    drawAxis(root.querySelector('.tl-axis'), root.querySelector('.tl-grids'), plotW, height, now, span);
    drawSummary(summary);
  }

  // drawSummary is the timeline as a table: its text alternative, and a
  // quicker read of the counts than the bars.
  function drawSummary(rows) {
    const tbody = document.querySelector('#timeline-text tbody');
    tbody.replaceChildren();
    for (const [name, list] of rows) {
      const count = new Map();
      for (const x of list) count.set(x.outcome, (count.get(x.outcome) || 0) + 1);
      const tr = document.createElement('tr');
      tr.dataset.job = name;
      for (const v of [name, ...['running', ...RUN_OUTCOMES, ...MARK_OUTCOMES].map((o) => count.get(o) || 0)]) {
        const td = document.createElement('td');
        td.textContent = String(v);
        tr.append(td);
      }
      tbody.append(tr);
    }
  }

  // ---- drawing: lateness ----

  // A retry's start includes its backoff, so only scheduled and manual
  // runs say how late the scheduler was.
  function lateness(st) {
    const pts = [];
    for (const rec of st.records.values()) {
      if (rec.trigger === 'retry' || !isTime(rec.started_at) || !isTime(rec.scheduled_at)) continue;
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

  function drawLatenessChart(fig, name, pts, now) {
    const W = 340, H = 120, L = 58, R = 8, T = 8, B = 20;
    const pw = W - L - R, ph = H - T - B;
    const span = shownSpan();
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

  function drawLateness(shown, now) {
    const span = String(shownSpan());
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
      if (fig.dataset.version !== String(st.version) || fig.dataset.span !== span || now - Number(fig.dataset.drawn || 0) >= LATENESS_REDRAW_MS) {
        drawLatenessChart(fig, j.name, lateness(st), now);
        fig.dataset.version = String(st.version);
        fig.dataset.span = span;
        fig.dataset.drawn = String(now);
      }
    }
    for (const f of figs.values()) f.remove();
  }

  // ---- the poll ----

  function note(id, text) {
    const p = $(id);
    p.hidden = !text;
    setText(p, text || '');
  }

  // update is called by app.js on every poll with the lists it has read
  // and its api function; it resolves once this poll's reads are merged.
  async function update(api, jobList, slots) {
    if (!NS) {
      NS = $('timeline-svg').namespaceURI;
      $('timeline-window').addEventListener('change', () => { if (last) draw(...last); });
    }
    const now = Date.now();
    if (!Array.isArray(jobList)) return;
    const names = new Set(jobList.map((j) => j.name));
    for (const [name, st] of jobs) {
      if (!names.has(name)) { if (st.group) st.group.remove(); jobs.delete(name); }
    }
    for (const m of [seen, probed]) for (const name of m.keys()) if (!names.has(name)) m.delete(name);
    listed = jobList.some((j) => j.last_run);

    const recent = jobList
      .map((j) => ({ j, a: activity(j, now) }))
      .filter((x) => x.a >= now - HOUR_MS)
      .map((x) => ({ j: x.j, a: x.a + (jobs.has(x.j.name) && jobs.get(x.j.name).group && jobs.get(x.j.name).group.isConnected ? STICKY_MS : 0) }))
      .sort((a, b) => b.a - a.a || a.j.name.localeCompare(b.j.name));
    // Rows in name order: sorted by activity they would jump about every second.
    const shown = recent.slice(0, MAX_ROWS).map((x) => x.j).sort((a, b) => a.name.localeCompare(b.name));
    const shownNames = new Set(shown.map((j) => j.name));
    for (const [name, st] of jobs) {
      if (shownNames.has(name)) { st.shownAt = now; continue; }
      if (st.group) st.group.remove();
      if (!(now - st.shownAt < STICKY_MS)) jobs.delete(name);
    }

    const want = shown.map((j) => [j, state(j.name)]).filter(([j, st]) => wants(st, j, now))
      .sort((a, b) => a[1].fetchedAt - b[1].fetchedAt).slice(0, FETCHES_PER_TICK);
    const [fetched, probeErrors] = await Promise.all([
      Promise.all(want.map(([j, st]) => fetchRuns(api, j, st, now))),
      listed ? [] : probe(api, jobList, shownNames, now),
    ]);
    const errors = fetched.filter(Boolean).concat(probeErrors);
    note('timeline-note', errors.length ? errors.join('; ') : '');

    const drawnAt = Date.now();
    for (const j of shown) prune(jobs.get(j.name), drawnAt);
    const idle = jobList.length - recent.length;
    let scope = `${shown.length} of ${jobList.length} jobs: those with a run in the last hour or one running now`;
    if (recent.length > MAX_ROWS) scope += `; only the ${MAX_ROWS} most recently active of ${recent.length} are drawn, to keep the page quick`;
    else if (idle > 0) scope += `; ${idle} idle ${idle === 1 ? 'job is' : 'jobs are'} left out`;
    if (!listed) {
      const looked = jobList.filter((j) => probed.has(j.name) || shownNames.has(j.name)).length;
      scope += `. The job list carries no last runs (too many jobs), so the page reads each job's newest run itself, ${PROBES_PER_TICK} a second` +
        (looked < jobList.length ? `: ${looked} of ${jobList.length} read so far` : `, each again every ${PROBE_EVERY_MS / 60000} minutes`);
    }
    setText($('timeline-scope'), scope + '.');
    $('timeline').querySelector('.empty').hidden = shown.length > 0;
    last = [shown, slots];
    draw(shown, slots);
  }

  function draw(shown, slots) {
    const now = Date.now();
    drawTimeline(shown, slots, now);
    drawLateness(shown, now);
  }

  return { update };
})();
