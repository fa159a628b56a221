// The dashboard: polls the JSON API of this replica once a second and keeps
// the tables in step. Text from the API is only ever set with textContent.
'use strict';

(function () {
  const POLL_MS = 1000;
  const REQUEST_TIMEOUT_MS = 8000;
  const RUNS_LIMIT = 20;
  const TOKEN_KEY = 'scheduler.token';
  const ZERO_TIME = '0001-01-01T00:00:00Z';

  const state = {
    selectedJob: null,
    // run_id -> job, for triggered runs until they show up in the job's history
    tracked: new Map(),
    // "action:job" or "cancel:run_id" while such a POST is in flight
    busy: new Set(),
    inFlight: false,
    again: false,
    timer: null,
  };

  class Unreachable extends Error {}

  const $ = (id) => document.getElementById(id);

  // el builds an element; attrs: text, class, title, data (object), and
  // any other key as an attribute.
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null) continue;
      if (k === 'text') node.textContent = String(v);
      else if (k === 'class') node.className = v;
      else if (k === 'data') for (const [dk, dv] of Object.entries(v)) node.dataset[dk] = dv;
      else node.setAttribute(k, v);
    }
    for (const c of children) if (c) node.append(c);
    return node;
  }

  function token() {
    try { return localStorage.getItem(TOKEN_KEY) || ''; } catch (_) { return ''; }
  }

  async function api(method, path) {
    const headers = { Accept: 'application/json' };
    const tok = token();
    if (tok) headers.Authorization = 'Bearer ' + tok;
    const ctl = new AbortController();
    const timer = setTimeout(() => ctl.abort(), REQUEST_TIMEOUT_MS);
    let res, text;
    try {
      res = await fetch(path, { method, headers, signal: ctl.signal, cache: 'no-store' });
      text = await res.text();
    } catch (e) {
      throw new Unreachable(ctl.signal.aborted ? 'request timed out' : String(e.message || e));
    } finally {
      clearTimeout(timer);
    }
    let body = null;
    if (text) {
      try { body = JSON.parse(text); } catch (_) { body = null; }
    }
    if (res.status === 401) showAuth(true);
    return { status: res.status, ok: res.ok, body };
  }

  function problem(r) {
    if (r.body && r.body.error) return `${r.status} ${r.body.error.code}: ${r.body.error.message}`;
    return `HTTP ${r.status}`;
  }

  // ---- time ----

  function isTime(t) { return typeof t === 'string' && t !== '' && t !== ZERO_TIME; }

  function pad(n) { return String(n).padStart(2, '0'); }

  // absTime writes local time; short leaves out the date when it is today.
  function absTime(t, short) {
    const d = new Date(t);
    if (isNaN(d)) return String(t);
    const day = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
    const clock = `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
    if (short && d.toDateString() === new Date().toDateString()) return clock;
    return `${day} ${clock}`;
  }

  function span(ms) {
    const s = Math.round(Math.abs(ms) / 1000);
    if (s < 60) return `${s}s`;
    if (s < 3600) return `${Math.floor(s / 60)}m${pad(s % 60)}s`;
    if (s < 86400) return `${Math.floor(s / 3600)}h${pad(Math.floor(s / 60) % 60)}m`;
    return `${Math.floor(s / 86400)}d${Math.floor(s / 3600) % 24}h`;
  }

  function relTime(t) {
    const ms = new Date(t).getTime() - Date.now();
    if (isNaN(ms)) return '';
    return ms >= 0 ? `in ${span(ms)}` : `${span(ms)} ago`;
  }

  // fillTime puts an absolute time and, beneath it, a relative one into
  // node; compact is for the runs table, where the date is mostly today.
  function fillTime(node, t, compact = false) {
    node.replaceChildren();
    node.removeAttribute('title');
    if (!isTime(t)) { node.textContent = '—'; return; }
    node.title = t;
    node.append(el('span', { class: 'abs', text: absTime(t, compact) }));
    if (!compact) node.append(el('span', { class: 'sub', text: relTime(t) }));
  }

  function badge(text, cls) { return el('span', { class: 'badge ' + (cls || text), text }); }

  // ---- table rows kept by key, so buttons and scroll positions survive polls ----

  function syncRows(tbody, items, key, create, update) {
    const old = new Map();
    for (const tr of tbody.children) old.set(tr.dataset.key, tr);
    let prev = null;
    for (const item of items) {
      const k = key(item);
      let tr = old.get(k);
      if (tr) old.delete(k);
      else { tr = create(item); tr.dataset.key = k; }
      update(tr, item);
      const want = prev ? prev.nextSibling : tbody.firstChild;
      if (want !== tr) tbody.insertBefore(tr, want);
      prev = tr;
    }
    for (const tr of old.values()) tr.remove();
    const section = tbody.closest('section');
    const empty = section && section.querySelector('.empty');
    if (empty) empty.hidden = items.length > 0;
  }

  function cells(tr, n) {
    while (tr.children.length < n) tr.append(el('td'));
    return Array.from(tr.children);
  }

  function setText(node, text) {
    const s = text === undefined || text === null ? '' : String(text);
    if (node.textContent !== s || node.children.length) node.textContent = s;
  }

  function note(section, message) {
    const p = $(section).querySelector(':scope > .note');
    p.hidden = !message;
    setText(p, message || '');
  }

  // ---- sections ----

  function renderStatus(r) {
    if (!r.ok || !r.body) {
      note('self', `status: ${problem(r)}`);
      return;
    }
    note('self', '');
    const s = r.body;
    setText($('self-id'), s.id);
    setText($('self-version'), s.version);
    setText($('self-config'), s.config_file || '—');
    setText($('self-hash'), s.config_hash);
    const reload = $('self-reload');
    reload.replaceChildren();
    if (s.last_reload_error) {
      reload.append(el('span', { class: 'error note', text: s.last_reload_error }));
    } else if (isTime(s.last_reload_at)) {
      reload.append(document.createTextNode('ok at ' + absTime(s.last_reload_at)));
    } else {
      reload.textContent = 'ok';
    }
    const role = s.is_leader ? 'leader' : 'follower';
    setText($('self-summary'), `${s.id} · ${role} · ${s.version || ''}`);
  }

  function renderLeader(r) {
    const card = $('leader');
    const l = r.ok && r.body ? r.body : null;
    card.classList.toggle('none', !l);
    if (!l) {
      setText($('leader-id'), r.status === 503 ? 'no leader' : 'unknown');
      setText($('leader-addr'), '—');
      setText($('leader-since'), '—');
      setText($('leader-revision'), '—');
      note('leader', r.status === 503 ? 'No replica holds leadership: no run is being scheduled.' : `leader: ${problem(r)}`);
      return null;
    }
    note('leader', '');
    setText($('leader-id'), l.id);
    setText($('leader-addr'), l.api_addr);
    fillTime($('leader-since'), l.since);
    setText($('leader-revision'), l.revision);
    return l;
  }

  function renderMembers(r, leader) {
    const tbody = document.querySelector('#members tbody');
    if (!r.ok || !Array.isArray(r.body)) {
      note('members', `members: ${problem(r)}`);
      return;
    }
    note('members', '');
    const members = r.body.slice().sort((a, b) => a.id.localeCompare(b.id));
    // The config everyone should run is the most common one; on a tie, the
    // leader's. Members on any other hash are flagged.
    const count = new Map();
    for (const m of members) count.set(m.config_hash, (count.get(m.config_hash) || 0) + 1);
    let ref = null;
    let best = 0;
    const leaderHash = (members.find((m) => m.is_leader || (leader && m.id === leader.id)) || {}).config_hash;
    for (const [h, n] of count) {
      if (n > best || (n === best && h === leaderHash)) { ref = h; best = n; }
    }
    const odd = members.filter((m) => m.config_hash !== ref);
    const drift = $('drift');
    drift.hidden = odd.length === 0;
    const n = members.length - odd.length;
    setText(drift, odd.length ? `Config drift: ${odd.map((m) => m.id).join(', ')} ${odd.length === 1 ? 'runs' : 'run'} ` +
      `a config other than ${(ref || '').slice(0, 12)}${ref === leaderHash ? ' (the leader\'s)' : ''}, ` +
      `which ${n} of ${members.length} members run.` : '');
    setText($('members-count'), `(${members.length})`);

    syncRows(tbody, members, (m) => m.id,
      (m) => el('tr', { data: { member: m.id } }),
      (tr, m) => {
        const [id, addr, version, hash, started, role] = cells(tr, 6);
        tr.classList.toggle('drift', m.config_hash !== ref);
        setText(id, m.id);
        setText(addr, m.api_addr);
        setText(version, m.version);
        hash.className = 'hash mono';
        hash.title = m.config_hash || '';
        hash.replaceChildren(document.createTextNode((m.config_hash || '').slice(0, 12)));
        if (m.config_hash !== ref) hash.append(badge('drift'));
        fillTime(started, m.started_at);
        role.replaceChildren(m.is_leader ? badge('leader') : badge('follower', 'plain'));
      });
  }

  function describeTarget(spec) {
    if (!spec) return '';
    if (spec.http) return `${spec.http.method || 'GET'} ${spec.http.url}`;
    if (spec.exec) return (spec.exec.command || []).join(' ');
    return '';
  }

  function renderJobs(r, slots) {
    const tbody = document.querySelector('#jobs tbody');
    if (!r.ok || !Array.isArray(r.body)) {
      note('jobs', `jobs: ${problem(r)}`);
      return null;
    }
    note('jobs', '');
    const jobs = r.body;
    setText($('jobs-count'), `(${jobs.length})`);
    if (!state.selectedJob && jobs.length) selectJob(jobs[0].name, false);

    syncRows(tbody, jobs, (j) => j.name,
      (j) => {
        const tr = el('tr', { data: { job: j.name } });
        const [,,,,,,, actions] = cells(tr, 8);
        for (const [action, label] of [['trigger', 'Trigger'], ['pause', 'Pause'], ['resume', 'Resume']]) {
          actions.append(el('button', { type: 'button', text: label, data: { action, job: j.name } }));
        }
        actions.className = 'actions';
        return tr;
      },
      (tr, j) => {
        const [name, target, schedule, next, last, running, paused, actions] = cells(tr, 8);
        tr.classList.toggle('selected', j.name === state.selectedJob);
        tr.dataset.paused = String(!!j.paused);
        name.className = 'name';
        setText(name, j.name);
        target.className = 'target mono';
        setText(target, (j.spec && j.spec.http ? 'http ' : 'exec ') + describeTarget(j.spec));
        const sp = j.spec || {};
        schedule.replaceChildren(el('span', { class: 'mono', text: sp.schedule || '' }),
          el('span', { class: 'sub', text: [sp.timezone || 'UTC', sp.overlap ? 'overlap ' + sp.overlap : ''].filter(Boolean).join(' · ') }));
        if (j.paused) { next.replaceChildren(); next.textContent = 'paused'; } else fillTime(next, j.next_run);
        last.replaceChildren();
        if (j.last_run) {
          last.append(badge(j.last_run.outcome));
          const when = j.last_run.ended_at || j.last_run.scheduled_at;
          if (isTime(when)) last.append(el('span', { class: 'sub', title: when, text: `${absTime(when)} (${relTime(when)})` }));
        } else {
          last.append(el('span', { class: 'muted', text: 'never' }));
        }
        running.replaceChildren(document.createTextNode(`${j.running} / ${j.max_concurrency}`));
        running.dataset.testid = 'running';
        if (j.pending) running.append(el('span', { class: 'sub', text: `${j.pending} pending` }));
        paused.replaceChildren(j.paused ? badge('paused') : badge('active'));
        for (const b of actions.querySelectorAll('button')) {
          const a = b.dataset.action;
          const busy = state.busy.has(`${a}:${j.name}`);
          b.disabled = busy || (a === 'pause' && !!j.paused) || (a === 'resume' && !j.paused);
        }
      });
    return jobs;
  }

  function renderSlots(r) {
    const tbody = document.querySelector('#slots tbody');
    if (!r.ok || !Array.isArray(r.body)) {
      note('slots', `slots: ${problem(r)}`);
      return [];
    }
    note('slots', '');
    // The answer lists rate windows after the slots; they have a table of their own.
    renderWindows(r.body.filter((s) => s.window));
    const slotKey = (s) => `${s.job ? 'job' : 'resource'}/${s.job || s.resource}/${s.concurrency_key || ''}/${s.slot}`;
    const slots = r.body.filter((s) => !s.window).sort((a, b) =>
      (a.job || a.resource).localeCompare(b.job || b.resource) ||
      (a.concurrency_key || '').localeCompare(b.concurrency_key || '') || a.slot - b.slot);
    setText($('slots-count'), `(${slots.length})`);
    syncRows(tbody, slots, slotKey,
      (s) => el('tr', { data: { slot: slotKey(s) } }),
      (tr, s) => {
        const [name, slot, run, holder, token, started, scheduled] = cells(tr, 7);
        name.replaceChildren(document.createTextNode(s.job || s.resource),
          el('span', { class: 'sub', text: s.job ? (s.concurrency_key ? `key ${s.concurrency_key}` : 'job') : 'resource' }));
        setText(slot, s.slot);
        run.className = 'mono';
        setText(run, s.run_id);
        setText(holder, s.holder);
        token.className = 'mono';
        token.dataset.testid = 'fencing-token';
        setText(token, s.fencing_token);
        fillTime(started, s.started_at);
        fillTime(scheduled, s.scheduled_at);
      });
    return slots;
  }

  // renderWindows shows each rate window: starts still counted of count
  // per period, and the oldest of them (when it leaves the window, a place frees).
  function renderWindows(windows) {
    const tbody = document.querySelector('#windows tbody');
    setText($('windows-count'), `(${windows.length})`);
    syncRows(tbody, windows, (w) => w.window, (w) => el('tr', { data: { window: w.window } }),
      (tr, w) => {
        const [name, used, oldest] = cells(tr, 3);
        setText(name, w.window);
        setText(used, `${w.in_use} / ${w.count} per ${w.per}`);
        fillTime(oldest, w.oldest);
      });
  }

  // renderRuns shows, for the chosen job, what is queued or running (from
  // triggered runs and held slots) above its finished records.
  function renderRuns(records, slots, pending) {
    const tbody = document.querySelector('#runs tbody');
    const byId = new Map();
    for (const p of pending) byId.set(p.run_id, p);
    for (const s of slots) {
      if (s.job !== state.selectedJob) continue;
      byId.set(s.run_id, Object.assign({}, byId.get(s.run_id), {
        run_id: s.run_id, job: s.job, state: 'running', holder: s.holder, slot: s.slot,
        fencing_token: s.fencing_token, started_at: s.started_at, scheduled_at: s.scheduled_at,
      }));
    }
    for (const rec of records) byId.delete(rec.run_id);
    const active = Array.from(byId.values()).sort((a, b) => String(b.scheduled_at).localeCompare(String(a.scheduled_at)));
    const rows = active.concat(records.map((rec) => Object.assign({ state: 'finished' }, rec)));

    syncRows(tbody, rows, (x) => x.run_id,
      (x) => el('tr', { data: { runId: x.run_id, job: x.job } }),
      (tr, x) => {
        const [id, outcome, trigger, scheduled, started, ended, holder, token, result, detail] = cells(tr, 10);
        const shown = x.state === 'finished' ? x.outcome : x.state;
        tr.dataset.outcome = shown || '';
        tr.dataset.state = x.state || '';
        id.className = 'mono';
        setText(id, x.run_id);
        // The cell's badge and button are kept, not rebuilt, so a click
        // that lands while a poll redraws the table is not lost.
        let b = outcome.querySelector('.badge');
        if (!b) {
          b = badge('');
          outcome.append(b, el('button', { type: 'button', text: 'Cancel', class: 'cancel', data: { action: 'cancel', runId: x.run_id } }));
        }
        b.className = 'badge ' + (shown || '');
        setText(b, shown || '?');
        const cancel = outcome.querySelector('button');
        cancel.hidden = x.state === 'finished';
        cancel.disabled = state.busy.has(`cancel:${x.run_id}`);
        trigger.className = 'nowrap';
        trigger.replaceChildren(el('span', { class: 'trigger', text: x.trigger || '' }));
        if (x.attempt) trigger.append(el('span', { class: 'sub', text: `attempt ${x.attempt}` }));
        if (x.previous_attempts && x.previous_attempts.length) {
          trigger.append(el('span', { class: 'sub', text: 'before: ' + x.previous_attempts.map((p) => p.outcome).join(', ') }));
        }
        fillTime(scheduled, x.scheduled_at, true);
        fillTime(started, x.started_at, true);
        fillTime(ended, x.ended_at, true);
        if (isTime(x.ended_at) && isTime(x.started_at)) {
          ended.append(el('span', { class: 'sub', text: 'took ' + span(new Date(x.ended_at) - new Date(x.started_at)) }));
        }
        holder.className = 'nowrap';
        setText(holder, x.holder || '');
        token.className = 'mono nowrap';
        setText(token, x.fencing_token ? `${x.slot} · ${x.fencing_token}` : '');
        const res = [];
        if (x.exit_code !== undefined && x.exit_code !== null) res.push(`exit ${x.exit_code}`);
        if (x.http_status) res.push(`HTTP ${x.http_status}`);
        setText(result, res.join(' '));
        detail.className = 'detail';
        let err = detail.querySelector('.error');
        let out = detail.querySelector('pre.output');
        if (!out) {
          err = el('span', { class: 'error' });
          out = el('pre', { class: 'output' });
          detail.append(err, out);
        }
        setText(err, x.error || '');
        err.hidden = !x.error;
        setText(out, x.output || '');
      });
  }

  // ---- polling ----

  async function refresh() {
    const paths = ['/api/v1/status', '/api/v1/leader', '/api/v1/members', '/api/v1/slots', '/api/v1/jobs'];
    const job = state.selectedJob;
    if (job) paths.push(`/api/v1/jobs/${encodeURIComponent(job)}/runs?limit=${RUNS_LIMIT}`);
    const tracked = Array.from(state.tracked).filter(([, j]) => j === job).map(([id]) => id);
    for (const id of tracked) paths.push(`/api/v1/runs/${encodeURIComponent(id)}`);

    const settled = await Promise.allSettled(paths.map((p) => api('GET', p)));
    const down = settled.find((s) => s.status === 'rejected');
    showBanner(down ? `API unreachable: ${down.reason.message}. Retrying every second…` : '');
    if (down) return;
    const [status, leader, members, slotsR, jobsR, runsR, ...runR] = settled.map((s) => s.value);

    renderStatus(status);
    const l = renderLeader(leader);
    renderMembers(members, l);
    const slots = renderSlots(slotsR);
    renderJobs(jobsR, slots);
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
      renderRuns(records, slots, pending);
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

  function showAuth(show) {
    $('auth').hidden = !show;
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
      try { localStorage.setItem(TOKEN_KEY, $('token-input').value.trim()); } catch (_) { /* private mode */ }
      $('token-input').value = '';
      showAuth(false);
      tick();
    });
    $('token-forget').addEventListener('click', () => {
      try { localStorage.removeItem(TOKEN_KEY); } catch (_) { /* private mode */ }
      tick();
    });
    const m = /^#job=(.+)$/.exec(location.hash);
    if (m) selectJob(decodeURIComponent(m[1]), false);
    tick();
  }

  init();
})();
