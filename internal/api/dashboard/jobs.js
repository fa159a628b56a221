// The work: the jobs table with its actions, the held slots, and the runs
// of the chosen job. state is app.js's (the chosen job and the POSTs in
// flight); selectJob is how a first job gets chosen.
'use strict';

window.SchedulerJobs = (function () {
  const { $, el, isTime, absTime, span, relTime, fillTime, badge, syncRows, cells, setText, note } = window.SchedulerDOM;
  const { problem } = window.SchedulerAPI;

  function describeTarget(spec) {
    if (!spec) return '';
    if (spec.http) return `${spec.http.method || 'GET'} ${spec.http.url}`;
    if (spec.exec) return (spec.exec.command || []).join(' ');
    return '';
  }

  function renderJobs(r, state, selectJob) {
    const tbody = document.querySelector('#jobs tbody');
    if (!r.ok || !Array.isArray(r.body)) {
      note('jobs', `jobs: ${problem(r)}`);
      return null;
    }
    note('jobs', '');
    const jobs = byTeam(r.body);
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
        tr.dataset.overdue = String(!!j.overdue);
        name.className = 'name';
        name.replaceChildren(document.createTextNode(j.name));
        if (j.team) name.append(el('span', { class: 'sub', text: `team ${j.team}` }));
        target.className = 'target mono';
        setText(target, (j.spec && j.spec.http ? 'http ' : 'exec ') + describeTarget(j.spec));
        const sp = j.spec || {};
        schedule.replaceChildren(el('span', { class: 'mono', text: sp.schedule || (sp.schedules || []).join(' | ') }),
          el('span', { class: 'sub', text: [sp.timezone || 'UTC', sp.overlap ? 'overlap ' + sp.overlap : ''].filter(Boolean).join(' · ') }));
        if (j.paused) {
          next.replaceChildren();
          next.textContent = isTime(j.paused_until) ? `paused until ${absTime(j.paused_until)}` : 'paused';
        } else fillTime(next, j.next_run);
        last.replaceChildren();
        if (j.last_run) {
          last.append(badge(j.last_run.outcome));
          const when = j.last_run.ended_at || j.last_run.scheduled_at;
          if (isTime(when)) last.append(el('span', { class: 'sub', title: when, text: `${absTime(when)} (${relTime(when)})` }));
        } else {
          last.append(el('span', { class: 'muted', text: 'never' }));
        }
        // A tick not succeeded overdue_after past its time (docs/operations.md#overdue).
        if (j.overdue) {
          const since = isTime(j.last_succeeded_at) ? `last succeeded ${absTime(j.last_succeeded_at)}` : 'no success known';
          last.append(el('span', { class: 'badge overdue', title: since, text: 'overdue' }));
        }
        running.replaceChildren(document.createTextNode(`${j.running} / ${j.max_concurrency}`));
        running.dataset.testid = 'running';
        if (j.pending) running.append(el('span', { class: 'sub', text: `${j.pending} pending` }));
        fillPause(paused, j);
        for (const b of actions.querySelectorAll('button')) {
          const a = b.dataset.action;
          const busy = state.busy.has(`${a}:${j.name}`);
          b.disabled = busy || (a === 'pause' && !!j.paused) || (a === 'resume' && !j.paused);
        }
      });
    return jobs;
  }

  // byTeam keeps the jobs of the team chosen in #team-filter ("*": all;
  // "": the main file's jobs) and offers every team the list names
  // (docs/configuration.md, "Teams and tokens").
  function byTeam(all) {
    const sel = $('team-filter');
    if (!sel) return all;
    const teams = [...new Set(all.map((j) => j.team || ''))].sort();
    const have = [...sel.options].map((o) => o.value);
    for (const t of teams) {
      if (!have.includes(t)) sel.append(el('option', { value: t, text: t || '(no team)' }));
    }
    const chosen = sel.value;
    return chosen === '*' ? all : all.filter((j) => (j.team || '') === chosen);
  }

  // fillPause shows whether the job is paused and, for a pause made
  // through the API, why and until when (it resumes by itself then).
  function fillPause(td, j) {
    td.replaceChildren(j.paused ? badge('paused') : badge('active'));
    td.dataset.testid = 'pause';
    if (!j.paused) return;
    if (j.pause_reason) {
      td.append(el('span', { class: 'sub pause-reason', title: j.pause_reason, text: j.pause_reason }));
    }
    if (isTime(j.paused_until)) {
      td.append(el('span', { class: 'sub', title: j.paused_until, text: `until ${absTime(j.paused_until)} (${relTime(j.paused_until)})` }));
    }
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
    // job/<name>/<slot>, or job/<name>/<key>/<slot> for a keyed job.
    const slotKey = (s) => [s.job ? 'job' : 'resource', s.job || s.resource]
      .concat(s.concurrency_key ? [s.concurrency_key] : [], [s.slot]).join('/');
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
    document.querySelector('#windows > .empty').hidden = windows.length > 0;
  }

  // renderRuns shows, for the chosen job, what is queued or running (from
  // triggered runs and held slots) above its finished records.
  function renderRuns(records, slots, pending, state) {
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
        let input = detail.querySelector('pre.input');
        if (!out) {
          input = el('pre', { class: 'input', title: 'the run\'s input' });
          err = el('span', { class: 'error' });
          out = el('pre', { class: 'output' });
          detail.append(input, err, out);
        }
        // The run's input (SPEC section 12), as the API gives it.
        setText(input, x.input ? 'input: ' + JSON.stringify(x.input) : '');
        input.hidden = !x.input;
        setText(err, x.error || '');
        err.hidden = !x.error;
        setText(out, x.output || '');
      });
  }

  return { renderJobs, renderSlots, renderRuns, byTeam };
})();
