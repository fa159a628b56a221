// Requests to this replica's JSON API, with the bearer token this browser
// keeps in localStorage; a 401 shows the form that asks for it.
'use strict';

window.SchedulerAPI = (function () {
  const REQUEST_TIMEOUT_MS = 8000;
  const TOKEN_KEY = 'scheduler.token';

  class Unreachable extends Error {}

  const $ = (id) => document.getElementById(id);

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
    if (r.error) return r.error;
    if (r.body && r.body.error) return `${r.status} ${r.body.error.code}: ${r.body.error.message}`;
    return `HTTP ${r.status}`;
  }

  function showAuth(show) {
    $('auth').hidden = !show;
  }

  function saveToken(tok) {
    try { localStorage.setItem(TOKEN_KEY, tok); } catch (_) { /* private mode */ }
  }

  function forgetToken() {
    try { localStorage.removeItem(TOKEN_KEY); } catch (_) { /* private mode */ }
  }

  return { api, problem, showAuth, saveToken, forgetToken };
})();
