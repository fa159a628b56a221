// The timeline's state: the last hour of each job's runs, read from this
// replica's JSON API, and which jobs get a row. app.js calls update()
// once a second with the jobs and slots it has just read; this file reads
// run records itself, but only for the jobs it shows and only when a job's
// last_run says a record was written since the last read (at most every
// 5s), so a page left open does not re-read every job's history every
// second. The API has no read of recent runs across jobs; where the job
// listing carries no last_run (large clusters), jobs' newest records are
// read a few a poll to find the active ones. timeline-draw.js draws the
// rows as plain SVG and lateness.js the charts beneath them.
'use strict';

window.SchedulerTimeline = (function () {
  const { isTime, ms, setText } = window.SchedulerSVG;
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

  // job name -> { records: Map(run_id -> record), lastKey, fetchedAt, limit,
  //               due, inFlight, version, bars: Map(run_id -> element), group,
  //               shownAt }
  const jobs = new Map();
  // Whether the page's controls are wired: on the first poll.
  let started = false;
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

  // ---- the poll ----

  function note(id, text) {
    const p = $(id);
    p.hidden = !text;
    setText(p, text || '');
  }

  // update is called by app.js on every poll with the lists it has read
  // and its api function; it resolves once this poll's reads are merged.
  async function update(api, jobList, slots) {
    if (!started) {
      started = true;
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

  // shownSpan is the width of the drawn window, chosen on the page; records
  // of the whole hour are kept whatever it is.
  function shownSpan() {
    const v = Number($('timeline-window').value);
    return v > 0 && v <= HOUR_MS ? v : HOUR_MS;
  }

  function draw(shown, slots) {
    const now = Date.now();
    const span = shownSpan();
    window.SchedulerTimelineDraw.draw(shown, jobs, slots, now, span);
    window.SchedulerLateness.draw(shown, jobs, now, span);
  }

  return { update };
})();
