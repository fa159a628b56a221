// Drawing the timeline: a row per job shown, with a lane of skipped and
// missed ticks above a lane per slot, each run a bar from its start to its
// end (or to now while it holds its slot), under a minute axis; and the
// same counts as a table. timeline.js decides the rows and reads the
// records; this file only draws them.
'use strict';

window.SchedulerTimelineDraw = (function () {
  const { isTime, ms, pad, clock, duration, svg, set, titleOf } = window.SchedulerSVG;
  const HOUR_MS = 3600 * 1000;

  // Layout of the timeline, in CSS pixels.
  const LABEL_W = 190;
  const AXIS_H = 24;
  const MARK_H = 12; // the lane of skipped and missed ticks, above the slot lanes
  const LANE_H = 14;
  const ROW_GAP = 10;
  const MIN_BAR_W = 2; // a 20 ms run is still visible on a one-hour axis

  const RUN_OUTCOMES = ['succeeded', 'failed', 'timed_out', 'cancelled', 'lost', 'interrupted'];
  const MARK_OUTCOMES = ['skipped', 'missed'];

  // Bars are placed at absolute times from this origin; moving the window
  // is then one transform on their common group, not a write per bar.
  const epoch = Date.now() - HOUR_MS;

  const $ = (id) => document.getElementById(id);

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

  // A sharded job's shard k holds slots of its own (max_concurrency per
  // shard index): its lanes are the k-th block of max_concurrency lanes.
  function shardOf(x) {
    const m = /#(\d+)$/.exec(x.run_id || '');
    return m ? Number(m[1]) : -1;
  }

  function laneOf(j, x) {
    const slot = Number.isInteger(x.slot) && x.slot >= 0 ? x.slot : 0;
    const k = j.shards > 1 ? shardOf(x) : -1;
    return k >= 0 ? k * Math.max(1, j.max_concurrency || 1) + slot : slot;
  }

  function lanes(j, list) {
    let n = Math.max(1, j.max_concurrency || 1) * Math.max(1, j.shards || 1);
    for (const x of list) if (Number.isInteger(x.slot) && laneOf(j, x) + 1 > n) n = laneOf(j, x) + 1;
    return n;
  }

  // drawRow keeps one element per run in the job's group, keyed by run id.
  function drawRow(j, st, list, k, now) {
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
      // A backfilled run (a past tick queued by a backfill) is outlined:
      // its bar is where it ran, not where its tick was.
      set(node, 'class', `tl-${kind} ${outcome}${x.trigger === 'backfill' ? ' backfill' : ''}`);
      node.dataset.outcome = outcome;
      node.dataset.trigger = x.trigger || '';
      node.dataset.slot = String(x.slot ?? '');
      node.dataset.token = String(x.fencing_token || '');
      if (bar) {
        const start = ms(x.started_at);
        const end = x.running || !isTime(x.ended_at) ? now : ms(x.ended_at);
        set(node, 'x', ((start - epoch) * k).toFixed(1));
        set(node, 'width', Math.max(MIN_BAR_W, (end - start) * k).toFixed(1));
        set(node, 'y', MARK_H + laneOf(j, x) * LANE_H + 2);
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

  // drawTimeline draws the rows of the jobs shown, in the order given;
  // jobs maps a job's name to its state in timeline.js, whose group and
  // bars this keeps, and span is the width of the window in ms.
  function drawTimeline(shown, jobs, slots, now, span) {
    const root = $('timeline-svg');
    const width = Math.max(600, root.parentElement.clientWidth - 2);
    const plotW = width - LABEL_W - 40;
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
      drawRow(j, st, list, k, now);

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
        const per = Math.max(1, j.max_concurrency || 1);
        t.textContent = j.shards > 1 ? `shard ${Math.floor(s / per)}` + (per > 1 ? `/${s % per}` : '') : `slot ${s}`;
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

  return { draw: drawTimeline };
})();
