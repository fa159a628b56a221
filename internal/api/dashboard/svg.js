// Small helpers shared by the timeline and the lateness charts: reading the
// API's times, writing them for people, and building and updating SVG
// elements without writing an attribute that did not change.
'use strict';

window.SchedulerSVG = (function () {
  const ZERO_TIME = '0001-01-01T00:00:00Z';
  // The SVG namespace is taken from the <svg> the HTML parser made, so
  // that no address appears in the script (the page references nothing but
  // itself, and a test holds it to that).
  let NS = null;

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
    if (!NS) NS = document.getElementById('timeline-svg').namespaceURI;
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

  return { isTime, ms, pad, clock, duration, svg, set, setText, titleOf };
})();
