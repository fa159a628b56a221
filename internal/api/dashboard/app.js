// The dashboard: polls the JSON API of this replica once a second and keeps
// the page in step (cluster.js, jobs.js and the timeline draw it), and
// answers the page's buttons. Text from the API is only ever set with
// textContent.
'use strict';

(function () {
  const POLL_MS = 1000;
  const RUNS_LIMIT = 20;

  const state = {
    selectedJob: null,
    // run_id -> job, for triggered runs until they show up in the job's history
    tracked: new Map(),
    // "action:job" or "cancel:run_id" while such a POST is in flight
    busy: new Set(),
    inFlight: false,
    // true while this replica answers etcd_unavailable (outage.js)
    etcdDown: false,
    again: false,
    timer: null,
  };

  const { api, problem, showAuth, saveToken, forgetToken } = window.SchedulerAPI;
  const { $, absTime, setText, note } = window.SchedulerDOM;
  const { renderStatus, renderLeader, renderMembers } = window.SchedulerCluster;
  const { renderJobs, renderSlots, renderRuns } = window.SchedulerJobs;

  // ---- notifications and chains ----

  // renderNotify lists the jobs with an upstream or with notifications not
  // yet delivered, and the total pending, from the job listing.
  function renderNotify(r) {
    const section = $('notify');
    const jobs = r.ok && Array.isArray(r.body) ? r.body : [];
    const shown = jobs.filter((j) => j.after || j.pending_notifications > 0);
    const total = jobs.reduce((n, j) => n + (j.pending_notifications || 0), 0);
    setText($('notify-count'), `(${total} pending)`);
    const rows = shown.map((j) => {
      const tr = document.createElement('tr');
      for (const v of [j.name, j.after ? j.after.job : '', j.after ? (j.after.on || []).join(', ') : '', j.pending_notifications || 0]) {
        const td = document.createElement('td');
        td.textContent = String(v);
        tr.append(td);
      }
      return tr;
    });
    section.querySelector('tbody').replaceChildren(...rows);
    section.querySelector(':scope > .empty').hidden = shown.length > 0;
  }

  // ---- polling ----

  async function refresh() {
    const paths = ['/api/v1/status', '/api/v1/leader', '/api/v1/members', '/api/v1/slots', '/api/v1/jobs'];
    // While etcd is unreachable, run records cannot be read either: such a
    // read would only wait for its timeout, so it waits for etcd instead.
    const job = state.etcdDown ? null : state.selectedJob;
    if (job) paths.push(`/api/v1/jobs/${encodeURIComponent(job)}/runs?limit=${RUNS_LIMIT}`);
    const tracked = Array.from(state.tracked).filter(([, j]) => j === job).map(([id]) => id);
    for (const id of tracked) paths.push(`/api/v1/runs/${encodeURIComponent(id)}`);

    const settled = await Promise.allSettled(paths.map((p) => api('GET', p)));
    // The API is unreachable when this replica's status is; any other read
    // that fails is that section's problem.
    const down = settled[0].status === 'rejected' ? settled[0] : null;
    showBanner(down ? `API unreachable: ${down.reason.message}. Retrying every second…` : '');
    if (down) return;
    const [status, leader, members, slotsR, jobsR, runsR, ...runR] = settled.map((s) =>
      s.status === 'fulfilled' ? s.value : { status: 0, ok: false, body: null, error: s.reason.message });

    renderStatus(status);
    const l = renderLeader(leader);
    renderMembers(members, l);
    const slots = renderSlots(slotsR);
    const jobs = renderJobs(jobsR, state, selectJob);
    // Over what the renderers said of a 503: etcd is unreachable, and what
    // the page shows is not current.
    state.etcdDown = window.SchedulerOutage.update([leader, members, slotsR, jobsR]);
    // The timeline reads run records at its own, slower pace (timeline.js).
    await window.SchedulerTimeline.update(api, jobs, slots);
    renderNotify(jobsR);
    if (job && job === state.selectedJob && runsR) {
      const records = runsR.ok && Array.isArray(runsR.body) ? runsR.body : [];
      note('runs', runsR.ok ? '' : `runs: ${problem(runsR)}`);
      const seen = new Set(records.map((rec) => rec.run_id));
      const pending = [];
      tracked.forEach((id, i) => {
        const r = runR[i];
        if (seen.has(id) || r.status === 404) { state.tracked.delete(id); return; }
        if (r.ok && r.body && r.body.state !== 'finished') pending.push(r.body);
      });
      renderRuns(records, slots, pending, state);
    }
    setText($('updated'), 'updated ' + absTime(new Date().toISOString()));
  }

  async function tick() {
    if (state.inFlight) { state.again = true; return; }
    clearTimeout(state.timer);
    state.inFlight = true;
    try {
      await refresh();
    } catch (e) {
      showBanner('Dashboard error: ' + (e && e.message ? e.message : e));
    } finally {
      state.inFlight = false;
    }
    if (state.again) { state.again = false; setTimeout(tick, 0); return; }
    state.timer = setTimeout(tick, POLL_MS);
  }

  function showBanner(msg) {
    const b = $('banner');
    b.hidden = !msg;
    setText(b, msg);
  }

  let flashTimer = null;
  function flash(msg, isError) {
    const f = $('flash');
    f.hidden = false;
    f.classList.toggle('error', !!isError);
    setText(f, msg);
    clearTimeout(flashTimer);
    flashTimer = setTimeout(() => { f.hidden = true; }, isError ? 10000 : 4000);
  }

  // ---- actions ----

  function selectJob(name, poll = true) {
    if (state.selectedJob === name) return;
    state.selectedJob = name;
    setText($('runs-job'), name);
    document.querySelector('#runs tbody').replaceChildren();
    note('runs', '');
    for (const tr of document.querySelectorAll('#jobs tbody tr')) {
      tr.classList.toggle('selected', tr.dataset.job === name);
    }
    if (history.replaceState) history.replaceState(null, '', '#job=' + encodeURIComponent(name));
    if (poll) tick();
  }

  async function post(key, path, done) {
    state.busy.add(key);
    tick();
    try {
      const r = await api('POST', path);
      if (r.ok) done(r);
      else flash(`${path}: ${problem(r)}`, true);
    } catch (e) {
      flash(`${path}: ${e.message}`, true);
    } finally {
      state.busy.delete(key);
      tick();
    }
  }

  function jobAction(action, job) {
    const path = `/api/v1/jobs/${encodeURIComponent(job)}/${action}`;
    if (action === 'trigger') selectJob(job);
    post(`${action}:${job}`, path, (r) => {
      if (action === 'trigger') {
        const id = r.body && r.body.run_id;
        if (id) state.tracked.set(id, job);
        flash(`Triggered ${job}: ${id || 'queued'}`);
      } else {
        flash(`${action === 'pause' ? 'Paused' : 'Resumed'} ${job}`);
      }
    });
  }

  function cancelRun(runId) {
    post(`cancel:${runId}`, `/api/v1/runs/${encodeURIComponent(runId)}/cancel`, () => flash(`Cancel requested for ${runId}`));
  }

  function init() {
    document.querySelector('#jobs tbody').addEventListener('click', (ev) => {
      const b = ev.target.closest('button[data-action]');
      if (b) { if (!b.disabled) jobAction(b.dataset.action, b.dataset.job); return; }
      const tr = ev.target.closest('tr[data-job]');
      if (tr) selectJob(tr.dataset.job);
    });
    document.querySelector('#runs tbody').addEventListener('click', (ev) => {
      const b = ev.target.closest('button[data-action="cancel"]');
      if (b && !b.disabled) cancelRun(b.dataset.runId);
    });
    $('auth').addEventListener('submit', (ev) => {
      ev.preventDefault();
      saveToken($('token-input').value.trim());
      $('token-input').value = '';
      showAuth(false);
      tick();
    });
    $('team-filter').addEventListener('change', () => tick());
    $('token-forget').addEventListener('click', () => {
      forgetToken();
      tick();
    });
    const m = /^#job=(.+)$/.exec(location.hash);
    if (m) selectJob(decodeURIComponent(m[1]), false);
    tick();
  }

  init();
})();
