// How the dashboard writes into the page: elements built with text only
// (text from the API is only ever set with textContent), table rows kept by
// key across polls, and times written as local and relative time.
'use strict';

window.SchedulerDOM = (function () {
  const ZERO_TIME = '0001-01-01T00:00:00Z';

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

  return { $, el, isTime, absTime, span, relTime, fillTime, badge, syncRows, cells, setText, note };
})();
