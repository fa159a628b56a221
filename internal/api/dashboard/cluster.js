// The cluster: this replica's status card, the leader card and the members
// table, with config drift among the members flagged.
'use strict';

window.SchedulerCluster = (function () {
  const { $, el, isTime, absTime, fillTime, badge, syncRows, cells, setText, note } = window.SchedulerDOM;
  const { problem } = window.SchedulerAPI;

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

  return { renderStatus, renderLeader, renderMembers };
})();
