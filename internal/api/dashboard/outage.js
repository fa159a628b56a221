// An etcd outage as this replica sees it: while it cannot confirm its view
// with etcd, the API answers the leader, members, slots and jobs with 503
// etcd_unavailable (SPEC section 16). The page then says so in a banner,
// says who leads is unknown, and greys out what it last read, marked with
// the time it was current, until the answers come back.
'use strict';

window.SchedulerOutage = (function () {
  const { $, absTime, setText, note } = window.SchedulerDOM;

  // The sections drawn from reads that depend on etcd.
  const STALE = ['members', 'slots', 'windows', 'jobs', 'timeline', 'lateness', 'runs'];

  let lastCurrent = null; // when the page last read a confirmed view
  let downSince = null; // when the page first saw etcd_unavailable in this outage

  function etcdUnavailable(r) {
    return !!(r && r.status === 503 && r.body && r.body.error && r.body.error.code === 'etcd_unavailable');
  }

  // update takes the answers of the confirmed reads and says whether etcd
  // is unreachable from this replica; it marks the page accordingly.
  function update(answers) {
    const now = new Date().toISOString();
    const down = answers.some(etcdUnavailable);
    if (!down) {
      if (answers.every((r) => r && r.ok)) lastCurrent = now;
      downSince = null;
    } else if (!downSince) {
      downSince = now;
    }
    const b = $('etcd-down');
    b.hidden = !down;
    const asOf = lastCurrent ? `as of ${absTime(lastCurrent)}` : 'from before this page could read them';
    setText(b, down ? `etcd unreachable: this replica cannot confirm its view of the cluster (since ${absTime(downSince)}). ` +
      `Who leads is unknown; members, held slots, jobs, the timeline and runs below are not current: greyed out, ${asOf}. ` +
      'Retrying every second…' : '');
    for (const id of STALE) {
      const s = $(id);
      s.classList.toggle('stale', down);
      if (down) s.dataset.stale = 'true'; else delete s.dataset.stale;
    }
    if (down) {
      for (const id of ['members', 'slots', 'jobs']) note(id, `etcd unavailable: not current, ${asOf}`);
      leader();
    }
    return down;
  }

  // leader fills the leader card while etcd is unreachable: nobody can say
  // who leads, which is not the same as nobody leading.
  function leader() {
    const card = $('leader');
    card.classList.add('none');
    setText($('leader-id'), 'unknown (etcd unavailable)');
    for (const id of ['leader-addr', 'leader-since', 'leader-revision']) {
      $(id).replaceChildren();
      setText($(id), '—');
    }
    note('leader', 'etcd is unreachable from this replica: it cannot tell who leads, nor whether runs are being scheduled.');
  }

  return { update };
})();
