// The status page: polls status/data every 5 s and shows it, with uPlot charts of the last hour.
// No framework; every value from the service goes into the page as text (textContent), never as
// markup. The page keeps the last report it showed in window.__statusData and its charts in
// window.__statusCharts (the browser test reads both).
(function () {
  'use strict';

  var POLL_MS = 5000;
  var FETCH_TIMEOUT_MS = 4500;
  var TOP_TOOLS = 8;
  var CHART_HEIGHT = 200;
  // Distinguishable on white (each at least 3:1 against it); series 5-8 are also dashed, so a
  // line is told apart by its pattern and its legend label too, not by colour alone.
  var PALETTE = ['#1f5fbf', '#c2410c', '#15803d', '#7e22ce', '#b91c1c', '#0e7490', '#8a5a00', '#be185d'];
  var DASHES = [null, null, null, null, [8, 4], [8, 4], [2, 3], [2, 3]];

  // status/data, found from this script's own URL (…/status/assets/status.js), so the page
  // works behind a path prefix and whether or not the page's URL ends in a slash.
  var me = document.currentScript;
  var dataUrl = new URL('../data', me && me.src ? me.src : new URL('status/assets/status.js', document.baseURI)).href;
  var storageKey = 'status-page-credentials:' + new URL(dataUrl).pathname;

  var $ = function (id) { return document.getElementById(id); };
  var state = {
    timer: null,
    inFlight: false,
    waitingForKey: false,
    last: null,        // the last report shown
    lastAt: null,      // when it arrived (Date)
    charts: {},        // id -> {plot, labels}
    memoryCredentials: null,
  };
  window.__statusCharts = {};

  // ---- small helpers ------------------------------------------------------------------------

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (name) {
        var value = attrs[name];
        if (value === null || value === undefined || value === false) return;
        if (name === 'text') node.textContent = String(value);
        else if (name === 'className') node.className = value;
        else node.setAttribute(name, value === true ? '' : String(value));
      });
    }
    (children || []).forEach(function (child) {
      if (child === null || child === undefined) return;
      node.appendChild(typeof child === 'string' ? document.createTextNode(child) : child);
    });
    return node;
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
  }

  function pad(n) { return (n < 10 ? '0' : '') + n; }

  // HH:MM:SS in the browser's time zone; with the date in front when it is not today.
  function localTime(date, withDateIfOld) {
    if (!(date instanceof Date) || isNaN(date.getTime())) return '';
    var hms = pad(date.getHours()) + ':' + pad(date.getMinutes()) + ':' + pad(date.getSeconds());
    if (withDateIfOld && date.toDateString() !== new Date().toDateString()) {
      return date.getFullYear() + '-' + pad(date.getMonth() + 1) + '-' + pad(date.getDate()) + ' ' + hms;
    }
    return hms;
  }

  function timeEl(value) {
    var date = value instanceof Date ? value : new Date(value);
    if (isNaN(date.getTime())) return document.createTextNode(String(value));
    return el('time', { datetime: date.toISOString(), text: localTime(date, true) });
  }

  function duration(seconds) {
    seconds = Math.max(0, Math.floor(Number(seconds) || 0));
    var d = Math.floor(seconds / 86400);
    var h = Math.floor((seconds % 86400) / 3600);
    var m = Math.floor((seconds % 3600) / 60);
    var s = seconds % 60;
    if (d) return d + ' d ' + h + ' h ' + m + ' min';
    if (h) return h + ' h ' + m + ' min';
    if (m) return m + ' min ' + s + ' s';
    return s + ' s';
  }

  function isNum(v) { return typeof v === 'number' && isFinite(v); }

  function fixed(v) {
    if (!isNum(v)) return '';
    var a = Math.abs(v);
    if (a === 0) return '0';
    if (Number.isInteger(v)) return v.toLocaleString();
    if (a < 10) return v.toFixed(2);
    if (a < 100) return v.toFixed(1);
    return Math.round(v).toLocaleString();
  }

  function count(v) { return isNum(v) ? Math.round(v).toLocaleString() : ''; }

  // A missing value: a dash to see, the word to hear.
  function none(word) {
    return el('span', { className: 'none' }, [
      el('span', { 'aria-hidden': 'true', text: '—' }),
      el('span', { className: 'visually-hidden', text: word || 'none' }),
    ]);
  }

  function ms(v) { return isNum(v) ? document.createTextNode(fixed(v) + ' ms') : none(); }

  function percent(v) { return isNum(v) ? (v * 100).toFixed(1) + ' %' : ''; }

  function humanKey(key) {
    var s = String(key).replace(/_/g, ' ');
    return s.charAt(0).toUpperCase() + s.slice(1);
  }

  // ---- statuses: a word, a symbol and a colour, always together -----------------------------

  var KINDS = {
    ok: ['healthy', 'connected', 'closed', 'ready', 'watching', 'serving', 'running', 'up', 'ok'],
    warn: ['degraded', 'unknown', 'half_open', 'initializing', 'shutting_down', 'building', 'starting',
      'draining', 'not serving', 'disconnected'],
    bad: ['unavailable', 'down', 'open', 'error', 'failed', 'refused'],
  };
  var ICONS = { ok: '✓', warn: '!', bad: '✕', neutral: '•' };

  function kindOf(word) {
    var w = String(word == null ? '' : word).toLowerCase();
    if (KINDS.ok.indexOf(w) >= 0) return 'ok';
    if (KINDS.bad.indexOf(w) >= 0) return 'bad';
    if (KINDS.warn.indexOf(w) >= 0) return 'warn';
    return 'neutral';
  }

  function badge(word, kind) {
    var text = word == null || word === '' ? 'unknown' : String(word).replace(/_/g, ' ');
    var k = kind || kindOf(word == null ? 'unknown' : word);
    return el('span', { className: 'badge', 'data-kind': k }, [
      el('span', { className: 'badge-icon', 'aria-hidden': 'true', text: ICONS[k] }),
      el('span', { className: 'badge-text', text: text }),
    ]);
  }

  function setBadge(node, word, kind) {
    var fresh = badge(word, kind);
    node.setAttribute('data-kind', fresh.getAttribute('data-kind'));
    clear(node);
    while (fresh.firstChild) node.appendChild(fresh.firstChild);
  }

  // ---- credentials --------------------------------------------------------------------------

  function loadCredentials() {
    try {
      var raw = window.sessionStorage.getItem(storageKey);
      return raw ? JSON.parse(raw) : null;
    } catch (e) {
      return state.memoryCredentials;
    }
  }

  function saveCredentials(creds) {
    state.memoryCredentials = creds;
    try {
      if (creds) window.sessionStorage.setItem(storageKey, JSON.stringify(creds));
      else window.sessionStorage.removeItem(storageKey);
    } catch (e) { /* storage off: kept in memory for this page only */ }
    $('forget').hidden = !creds;
  }

  function credentialHeaders() {
    var creds = loadCredentials();
    var headers = { Accept: 'application/json' };
    if (creds && creds.key) headers['X-API-Key'] = creds.key;
    if (creds && creds.token) headers.Authorization = 'Bearer ' + creds.token;
    return headers;
  }

  function askForKey(status, body) {
    state.waitingForKey = true;
    var creds = loadCredentials();
    var said = body && typeof body.error === 'string' ? ' The service says: ' + body.error : '';
    var why;
    if (status === 403) {
      why = 'The key or token given may not read this status (403).' + said;
    } else if (creds) {
      why = 'The key or token given was refused (401).' + said;
    } else {
      why = 'This service shows its status only to callers with an API key or an OAuth access token.';
    }
    $('auth-why').textContent = why;
    $('auth-error').hidden = true;
    $('auth').hidden = false;
    document.body.setAttribute('data-view', 'auth');
    if (state.last) {
      showPollProblem('Refreshing stopped: a key is needed (see the form above).', false);
    } else {
      $('updated').textContent = 'Waiting for a key.';
      setBadge($('overall'), 'key needed', 'neutral');
    }
    var active = document.activeElement;
    if (!active || active === document.body) $('api-key').focus();
  }

  function onAuthSubmit(event) {
    event.preventDefault();
    var key = $('api-key').value.trim();
    var token = $('bearer-token').value.trim();
    if (!key && !token) {
      var err = $('auth-error');
      err.textContent = 'Enter an API key, or open "Use an OAuth access token instead" and enter a token.';
      err.hidden = false;
      $('api-key').focus();
      return;
    }
    saveCredentials({ key: key || null, token: token || null });
    $('api-key').value = '';
    $('bearer-token').value = '';
    $('auth').hidden = true;
    state.waitingForKey = false;
    document.body.setAttribute('data-view', state.last ? 'ready' : 'loading');
    $('updated').textContent = 'Loading the status…';
    pollNow();
  }

  // Forgetting the key also takes away what it showed.
  function onForget() {
    saveCredentials(null);
    state.waitingForKey = false;
    state.last = null;
    state.lastAt = null;
    window.__statusData = undefined;
    $('report').hidden = true;
    clearPollProblem();
    pollNow();
  }

  // ---- polling ------------------------------------------------------------------------------

  function schedule(delay) {
    if (state.timer) clearTimeout(state.timer);
    state.timer = setTimeout(poll, delay);
  }

  function pollNow() { schedule(0); }

  function readJson(response) {
    return response.text().then(function (text) {
      try { return JSON.parse(text); } catch (e) { return null; }
    });
  }

  function poll() {
    state.timer = null;
    if (state.inFlight || state.waitingForKey) return;
    if (document.hidden) return; // polled again when the tab is shown
    state.inFlight = true;
    var controller = new AbortController();
    var giveUp = setTimeout(function () { controller.abort(); }, FETCH_TIMEOUT_MS);
    var next = POLL_MS;
    fetch(dataUrl, {
      headers: credentialHeaders(),
      cache: 'no-store',
      credentials: 'same-origin',
      redirect: 'error',
      signal: controller.signal,
    }).then(function (response) {
      return readJson(response).then(function (body) {
        if (response.status === 401 || response.status === 403) {
          next = null;
          askForKey(response.status, body);
          return;
        }
        if (!response.ok) {
          var retry = Number(response.headers.get('Retry-After'));
          if (isNum(retry) && retry * 1000 > next) next = retry * 1000;
          var why = body && typeof body.error === 'string' ? ': ' + body.error : '';
          throw new Error('the service answered ' + response.status + why);
        }
        // The report itself, or the envelope around it.
        var data = body && body.success === true && body.data && typeof body.data === 'object' ? body.data : body;
        if (!data || typeof data !== 'object' || !('tools' in data)) {
          throw new Error('the answer is not a status report');
        }
        show(data);
      });
    }).catch(function (error) {
      var why = error && error.name === 'AbortError'
        ? 'no answer within ' + FETCH_TIMEOUT_MS / 1000 + ' s'
        : (error && error.message) || String(error);
      showPollProblem('Could not refresh at ' + localTime(new Date()) + ' (' + why + ').');
      if (error && error.renderBug) setTimeout(function () { throw error.renderBug; });
    }).then(function () {
      clearTimeout(giveUp);
      state.inFlight = false;
      if (next !== null && !state.waitingForKey) schedule(next);
    });
  }

  function showPollProblem(message, retrying) {
    var region = $('poll-error');
    var again = retrying === false ? '' : 'trying again every ' + POLL_MS / 1000 + ' s.';
    var keeping = state.lastAt
      ? ' Showing the data of ' + localTime(state.lastAt) + (again ? '; ' + again : '.')
      : (again ? ' T' + again.slice(1) : '');
    var text = '⚠ ' + message + keeping;
    if (region.textContent !== text) {
      clear(region);
      region.appendChild(el('p', { className: 'poll-error', text: text }));
    }
    $('updated').classList.add('stale');
    if (!state.last) document.body.setAttribute('data-view', 'error');
  }

  function clearPollProblem() {
    var region = $('poll-error');
    if (region.firstChild) clear(region);
    $('updated').classList.remove('stale');
  }

  // ---- rendering ----------------------------------------------------------------------------

  function show(data) {
    try {
      renderService(data);
      renderDependencies(data.dependencies || {});
      renderProviders(data.providers || {});
      renderCluster(data.cluster);
      renderTools(data.tools || [], data.tool_count);
      renderCharts(data);
    } catch (bug) {
      var error = new Error('could not show the report: ' + bug.message);
      error.renderBug = bug;
      throw error;
    }
    state.last = data;
    state.lastAt = new Date();
    window.__statusData = data;
    clearPollProblem();
    var updated = $('updated');
    clear(updated);
    updated.appendChild(document.createTextNode('Updated '));
    updated.appendChild(el('time', { datetime: state.lastAt.toISOString(), text: localTime(state.lastAt) }));
    $('report').hidden = false;
    $('auth').hidden = true;
    document.body.setAttribute('data-view', 'ready');
  }

  function fact(dl, term, value) {
    // A long sentence (a reason, an error) takes the whole row rather than a narrow column.
    var long = typeof value === 'string' && value.length > 24;
    dl.appendChild(el('div', { className: long ? 'fact wide' : 'fact' }, [
      el('dt', { text: term }),
      el('dd', null, [typeof value === 'string' || typeof value === 'number' ? String(value) : value]),
    ]));
  }

  function renderService(data) {
    var name = data.service || 'service';
    $('title').textContent = 'Status of ' + name;
    var overall = data.status || data.state;
    setBadge($('overall'), overall);
    var title = name + ' — ' + (overall ? String(overall) : 'status');
    if (document.title !== title) document.title = title;

    var dl = $('service-facts');
    clear(dl);
    fact(dl, 'Name', name);
    fact(dl, 'Version', data.version || none('unknown'));
    fact(dl, 'State', badge(data.state));
    fact(dl, 'Status', badge(data.status));
    fact(dl, 'Up for', isNum(data.uptime_seconds) ? duration(data.uptime_seconds) : none('unknown'));
    fact(dl, 'Active calls', count(data.active_calls) || '0');
    fact(dl, 'Queued calls', count(data.queued_calls) || '0');
    fact(dl, 'Report made at', data.generated_at ? timeEl(data.generated_at) : none('unknown'));
  }

  // A table that stacks into cards on a narrow screen: every cell carries its column's name.
  function table(captionText, columns, rows, extraClass) {
    var head = el('tr', null, columns.map(function (c) {
      return el('th', { scope: 'col', className: c.num ? 'num' : null, text: c.label });
    }));
    var body = el('tbody', null, rows.map(function (cells) {
      return el('tr', null, cells.map(function (cell, i) {
        var c = columns[i];
        var tag = i === 0 ? 'th' : 'td';
        var node = el(tag, {
          scope: i === 0 ? 'row' : null,
          className: c.num ? 'num' : null,
          'data-label': c.label,
        });
        if (cell === null || cell === undefined || cell === '') node.appendChild(none());
        else node.appendChild(typeof cell === 'string' || typeof cell === 'number' ? document.createTextNode(String(cell)) : cell);
        return node;
      }));
    }));
    return el('table', { className: 'stack' + (extraClass ? ' ' + extraClass : '') }, [
      el('caption', { text: captionText }),
      el('thead', null, [head]),
      body,
    ]);
  }

  function renderDependencies(deps) {
    var box = $('deps-body');
    clear(box);
    var names = Object.keys(deps).sort();
    if (!names.length) {
      box.appendChild(el('p', { className: 'note', text: 'This service has no dependencies.' }));
      return;
    }
    box.appendChild(table('Dependencies, as last checked', [
      { label: 'Dependency' }, { label: 'Status' }, { label: 'Check took', num: true }, { label: 'Error' },
    ], names.map(function (name) {
      var d = deps[name] || {};
      return [
        name,
        badge(d.status),
        isNum(d.response_time_ms) ? fixed(d.response_time_ms) + ' ms' : null,
        d.error ? el('span', { className: 'wrap', text: d.error }) : null,
      ];
    })));
  }

  var PROVIDER_KNOWN = ['kind', 'serving', 'reason', 'instances', 'resilience'];

  function scalarText(value) {
    if (value === null || value === undefined) return null;
    if (typeof value === 'boolean') return value ? 'yes' : 'no';
    if (typeof value === 'number') return fixed(value) || '0';
    if (typeof value === 'string') {
      return /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d/.test(value) ? timeEl(value) : value;
    }
    if (Array.isArray(value)) return value.length ? value.map(String).join(', ') : null;
    // An object: its scalar members, "name: value" (e.g. a search provider's index).
    var parts = Object.keys(value).filter(function (k) {
      var v = value[k];
      return v !== null && typeof v !== 'object';
    }).map(function (k) {
      var v = value[k];
      return humanKey(k) + ': ' + (typeof v === 'number' ? fixed(v) || '0' : String(v));
    });
    return parts.length ? parts.join('; ') : null;
  }

  function renderProviders(providers) {
    var box = $('providers-body');
    clear(box);
    var names = Object.keys(providers).sort();
    if (!names.length) {
      box.appendChild(el('p', { className: 'note', text: 'No providers are configured.' }));
      return;
    }
    names.forEach(function (name) {
      var p = providers[name] || {};
      var r = p.resilience || null;
      var id = 'provider-' + name.replace(/[^A-Za-z0-9_-]/g, '_');
      var serving = p.serving === false ? badge('not serving', 'warn') : badge('serving', 'ok');
      var article = el('article', { className: 'provider', 'aria-labelledby': id }, [
        el('h3', { id: id }, [el('span', { className: 'provider-name', text: name }), ' ', serving]),
      ]);
      var dl = el('dl', { className: 'facts' });
      fact(dl, 'Kind', p.kind || none('unknown'));
      if (p.serving === false) fact(dl, 'Not serving because', p.reason || none('not said'));
      if (r) {
        var circuit = el('span', null, [badge(r.circuit || 'closed')]);
        if (isNum(r.retry_after_seconds)) circuit.appendChild(document.createTextNode(' probes in ' + r.retry_after_seconds + ' s'));
        fact(dl, 'Circuit', circuit);
        if (r.circuit_reason) fact(dl, 'Circuit last opened', r.circuit_reason);
        fact(dl, 'Retries / hedges', count(r.retries || 0) + ' / ' + count(r.hedges || 0));
        fact(dl, 'Cache hits / coalesced / misses',
          count(r.cache_hits || 0) + ' / ' + count(r.cache_coalesced || 0) + ' / ' + count(r.cache_misses || 0));
      }
      // Whatever else a kind of provider reports (a gRPC connection's state, a search index…).
      Object.keys(p).forEach(function (key) {
        if (PROVIDER_KNOWN.indexOf(key) >= 0) return;
        var shown = key === 'state' ? badge(p[key]) : scalarText(p[key]);
        if (shown !== null && shown !== '') fact(dl, humanKey(key), shown);
      });
      article.appendChild(dl);
      if (Array.isArray(p.instances) && p.instances.length) {
        article.appendChild(table('Children of ' + name, [
          { label: 'Child' }, { label: 'Status' }, { label: 'Calls in flight', num: true },
          { label: 'Restarts', num: true }, { label: 'Ejections', num: true }, { label: 'Out of rotation' },
        ], p.instances.map(function (c) {
          var status = el('span', null, [badge(c.status)]);
          if (c.error) status.appendChild(el('span', { className: 'wrap detail', text: ' ' + c.error }));
          return [
            '#' + c.instance,
            status,
            count(c.calls_in_flight || 0),
            count(c.restarts || 0),
            count(c.ejections || 0),
            isNum(c.ejected_for_ms) ? 'yes, ' + fixed(c.ejected_for_ms / 1000) + ' s more' : 'no',
          ];
        }), 'children'));
      }
      box.appendChild(article);
    });
  }

  function renderCluster(cluster) {
    var section = $('cluster');
    var box = $('cluster-body');
    if (!cluster || typeof cluster !== 'object') {
      section.hidden = true;
      clear(box);
      return;
    }
    section.hidden = false;
    clear(box);
    var dl = el('dl', { className: 'facts' });
    Object.keys(cluster).forEach(function (key) {
      if (key === 'usage' || key === 'replicas') return;
      var shown = key === 'redis' ? badge(cluster[key]) : scalarText(cluster[key]);
      if (shown !== null && shown !== '') fact(dl, key === 'replica_id' ? 'Replica' : humanKey(key), shown);
    });
    box.appendChild(dl);
    var replicas = Array.isArray(cluster.replicas) ? cluster.replicas : [];
    if (replicas.length) {
      box.appendChild(table('Replicas up (' + replicas.length + ')', [
        { label: 'Replica' }, { label: 'Status page' }, { label: 'Version' }, { label: 'Started' },
      ], replicas.map(function (r) {
        var address = String(r.address || '');
        // A wildcard address (0.0.0.0, [::]) names no host a browser can open.
        var page = /^(0\.0\.0\.0|\[::\]):/.test(address) || !address
          ? address
          : el('a', { href: 'http://' + address + '/status', text: address });
        var name = String(r.replica_id || '') + (r.this ? ' (this one)' : '');
        return [name, page, r.version || '', r.started_at ? timeEl(r.started_at) : ''];
      }), 'replicas'));
    }
    var usage = cluster.usage;
    if (usage && typeof usage === 'object' && Object.keys(usage).length) {
      box.appendChild(table('Calls counted by every replica', [
        { label: 'Tool' }, { label: 'Calls', num: true }, { label: 'Errors', num: true },
      ], Object.keys(usage).sort().map(function (tool) {
        var u = usage[tool] || {};
        return [tool, count(u.calls || 0), count(u.errors || 0)];
      })));
    }
  }

  function lastError(e) {
    if (!e) return none();
    var parts = [];
    if (e.at) parts.push(timeEl(e.at));
    if (e.code) parts.push(el('span', { className: 'code', text: e.code }));
    var box = el('span', { className: 'last-error' }, parts);
    if (e.request_id) {
      box.appendChild(el('span', { className: 'request-id' }, [
        el('span', { className: 'visually-hidden', text: 'request id ' }),
        el('code', { text: e.request_id }),
      ]));
    }
    return box;
  }

  function renderTools(tools, total) {
    var list = Array.isArray(tools) ? tools.slice() : Object.keys(tools).map(function (name) {
      var t = tools[name] || {};
      return Object.assign({ name: name }, t);
    });
    list.sort(function (a, b) { return String(a.name).localeCompare(String(b.name)); });
    var filter = $('tool-filter').value.trim().toLowerCase();
    var tbody = $('tools-table').tBodies[0];
    var rows = document.createDocumentFragment();
    var shown = 0;
    list.forEach(function (t) {
      var hay = [t.name, t.provider, t.status].join(' ').toLowerCase();
      var match = !filter || hay.indexOf(filter) >= 0;
      if (match) shown += 1;
      var cells = [
        el('th', { scope: 'row', 'data-label': 'Tool', className: 'tool-name', text: t.name }),
        el('td', { 'data-label': 'Provider' }, [t.provider ? String(t.provider) : none()]),
        el('td', { 'data-label': 'Status' }, [badge(t.status)]),
        el('td', { 'data-label': 'Calls', className: 'num', text: count(t.calls || 0) }),
        el('td', { 'data-label': 'Error rate', className: 'num' }, [isNum(t.error_rate) ? percent(t.error_rate) : none()]),
        el('td', { 'data-label': 'p50', className: 'num' }, [ms(t.p50_ms)]),
        el('td', { 'data-label': 'p95', className: 'num' }, [ms(t.p95_ms)]),
        el('td', { 'data-label': 'Last error' }, [lastError(t.last_error)]),
      ];
      rows.appendChild(el('tr', { hidden: !match, 'data-tool': t.name }, cells));
    });
    clear(tbody);
    tbody.appendChild(rows);
    // With keys or OAuth on, the report names only the tools the key may call.
    var hidden = typeof total === 'number' && total > list.length ? total - list.length : 0;
    var caption = list.length + (list.length === 1 ? ' tool' : ' tools')
      + (hidden ? ' of ' + total + ' (the others are outside your key\'s scope)' : '')
      + (filter ? ', ' + shown + ' shown' : '')
      + ': calls since the start; error rate, p50 and p95 over the last 5 minutes';
    $('tools-caption').textContent = caption;
    $('tools-empty').hidden = !(list.length && filter && !shown);
    if (!list.length) {
      $('tools-empty').textContent = hidden
        ? 'This service serves ' + total + ' tools, none of them within your key\'s scope.'
        : 'This service serves no tools now.';
      $('tools-empty').hidden = false;
    } else {
      $('tools-empty').textContent = 'No tool matches the filter.';
    }
  }

  function onFilter() {
    if (state.last) renderTools(state.last.tools || [], state.last.tool_count);
  }

  // ---- charts -------------------------------------------------------------------------------

  function seriesValues(arr, length) {
    var out = new Array(length);
    for (var i = 0; i < length; i++) {
      var v = arr && i < arr.length ? arr[i] : null;
      out[i] = isNum(v) ? v : null;
    }
    return out;
  }

  function sum(arr) {
    var s = 0;
    (arr || []).forEach(function (v) { if (isNum(v)) s += v; });
    return s;
  }

  // The tools to chart: all of them up to 8, else the 8 with the most calls in the last hour
  // (then the most calls since the start, then by name).
  function topTools(data) {
    var timeline = data.timeline || {};
    var series = timeline.tools || {};
    var totals = {};
    (Array.isArray(data.tools) ? data.tools : []).forEach(function (t) { totals[t.name] = t.calls || 0; });
    var names = Object.keys(series);
    var hour = {};
    names.forEach(function (n) { hour[n] = sum(series[n] && series[n].calls_per_s); });
    names.sort(function (a, b) {
      return (hour[b] - hour[a]) || ((totals[b] || 0) - (totals[a] || 0)) || a.localeCompare(b);
    });
    // Charted in name order, so a tool keeps its colour while the busiest ones trade places.
    return { names: names.slice(0, TOP_TOOLS).sort(), of: names.length };
  }

  // The time axis: HH:MM in the browser's time zone.
  function timeTicks(u, splits) {
    return splits.map(function (ts) {
      var d = new Date(ts * 1000);
      return pad(d.getHours()) + ':' + pad(d.getMinutes());
    });
  }

  // The newest values in the legend while the pointer is not over the chart.
  function legendAtNewest(plot) {
    var n = plot.data[0] ? plot.data[0].length : 0;
    if (n && plot.cursor.idx == null) plot.setLegend({ idx: n - 1 }, false);
  }

  function legendValue(unit) {
    return function (u, v) { return v == null ? '—' : fixed(v) + (unit || ''); };
  }

  function chartWidth(figure) {
    var plot = figure.querySelector('.plot');
    return Math.max(200, Math.floor(plot.clientWidth || figure.clientWidth || 300));
  }

  // Creates the chart, or gives it new data when its series are the same.
  function drawChart(id, labels, data, options) {
    var figure = $(id);
    var plotBox = figure.querySelector('.plot');
    var existing = state.charts[id];
    var key = labels.join('\u0000') + '|' + (options.axes2 ? 2 : 1);
    if (existing && existing.key === key) {
      existing.plot.setData(data);
      legendAtNewest(existing.plot);
      return existing.plot;
    }
    if (existing) existing.plot.destroy();
    clear(plotBox);
    var series = [{ label: 'At', value: function (u, ts) { return ts == null ? '—' : localTime(new Date(ts * 1000)); } }];
    labels.forEach(function (label, i) {
      var s = {
        label: label,
        stroke: PALETTE[i % PALETTE.length],
        width: 2,
        spanGaps: false,
        points: { show: false },
        value: legendValue(options.units ? options.units[i] : options.unit),
      };
      if (DASHES[i]) s.dash = DASHES[i];
      if (options.scales && options.scales[i]) s.scale = options.scales[i];
      series.push(s);
    });
    // The units are in the caption and the legend; the axes carry plain numbers.
    var axes = [
      { stroke: '#333', space: 70, grid: { stroke: '#e3e3e3' }, ticks: { stroke: '#c8c8c8' }, values: timeTicks },
      { stroke: '#333', size: 48, grid: { stroke: '#e3e3e3' }, ticks: { stroke: '#c8c8c8' } },
    ];
    var scales = { x: { time: true }, y: { range: zeroBased } };
    if (options.axes2) {
      axes.push({ scale: options.axes2.scale, side: 1, stroke: '#333', size: 48, grid: { show: false } });
      scales[options.axes2.scale] = { range: zeroBased };
    }
    var plot = new window.uPlot({
      width: chartWidth(figure),
      height: CHART_HEIGHT,
      series: series,
      axes: axes,
      scales: scales,
      legend: { show: true, live: true },
      cursor: { drag: { x: false, y: false }, points: { size: 6 } },
      hooks: { setCursor: [legendAtNewest] },
    }, data, plotBox);
    legendAtNewest(plot);
    // The canvas itself says nothing to a screen reader; the summary below it does.
    var canvasBox = plotBox.querySelector('.u-over');
    if (canvasBox) canvasBox.setAttribute('aria-hidden', 'true');
    state.charts[id] = { plot: plot, key: key };
    window.__statusCharts[id.replace(/^chart-/, '')] = plot;
    return plot;
  }

  function zeroBased(u, min, max) {
    var top = isNum(max) && max > 0 ? max * 1.1 : 1;
    return [0, top];
  }

  function summarize(figure, labels, data, unit) {
    var n = data[0].length;
    var parts = labels.map(function (label, i) {
      var arr = data[i + 1];
      var last = null;
      var peak = null;
      for (var j = 0; j < n; j++) {
        if (arr[j] != null) {
          last = arr[j];
          if (peak === null || arr[j] > peak) peak = arr[j];
        }
      }
      return label + ' ' + (last === null ? 'no data' : fixed(last) + unit) + ' now, peak ' + (peak === null ? 'none' : fixed(peak) + unit);
    });
    figure.querySelector('.summary').textContent = n
      ? 'From ' + localTime(new Date(data[0][0] * 1000)) + ' to ' + localTime(new Date(data[0][n - 1] * 1000)) + ': ' + parts.join('; ') + '.'
      : 'No samples yet.';
  }

  function renderCharts(data) {
    var timeline = data.timeline || {};
    var t = seriesValues(timeline.t, (timeline.t || []).length);
    var n = t.length;
    var top = topTools(data);
    var note = $('charts-note');
    var every = isNum(timeline.interval_seconds) ? ' One point every ' + timeline.interval_seconds + ' s.' : '';
    if (top.of > TOP_TOOLS) {
      note.textContent = 'The tool charts show the ' + TOP_TOOLS + ' tools with the most calls in the last hour, of '
        + top.of + ' tools; the table above lists them all.' + every;
    } else if (top.of === 0) {
      note.textContent = 'No tool has calls to chart yet.' + every;
    } else {
      note.textContent = 'Every tool is charted.' + every;
    }

    var perTool = function (field) {
      var out = [t];
      top.names.forEach(function (name) {
        var s = (timeline.tools || {})[name] || {};
        out.push(seriesValues(s[field], n));
      });
      return out;
    };
    var specs = [
      { id: 'chart-calls', data: perTool('calls_per_s'), unit: '/s' },
      { id: 'chart-p95', data: perTool('p95_ms'), unit: ' ms' },
      { id: 'chart-errors', data: perTool('errors_per_s'), unit: '/s' },
    ];
    specs.forEach(function (spec) {
      drawChart(spec.id, top.names, spec.data, { unit: spec.unit });
      summarize($(spec.id), top.names, spec.data, spec.unit);
    });

    var queueLabels = ['queue depth', 'active calls', 'refusals/s'];
    var queueData = [t, seriesValues(timeline.queue_depth, n), seriesValues(timeline.active_calls, n), seriesValues(timeline.refusals_per_s, n)];
    drawChart('chart-queue', queueLabels, queueData, {
      unit: '',
      units: ['', '', '/s'],
      scales: [null, null, 'rate'],
      axes2: { scale: 'rate', unit: '/s' },
    });
    summarize($('chart-queue'), queueLabels, queueData, '');
  }

  function resizeCharts() {
    Object.keys(state.charts).forEach(function (id) {
      var figure = $(id);
      var width = chartWidth(figure);
      var plot = state.charts[id].plot;
      if (Math.abs(plot.width - width) > 1) plot.setSize({ width: width, height: CHART_HEIGHT });
    });
  }

  // ---- start --------------------------------------------------------------------------------

  function start() {
    if (typeof window.uPlot !== 'function') {
      showPollProblem('The chart library did not load.', false);
      return;
    }
    try {
      var tz = Intl.DateTimeFormat().resolvedOptions().timeZone;
      if (tz) $('tz').textContent = ' (' + tz + ')';
    } catch (e) { /* no Intl: the sentence stands without the zone's name */ }
    $('forget').hidden = !loadCredentials();
    $('auth-form').addEventListener('submit', onAuthSubmit);
    $('forget').addEventListener('click', onForget);
    $('tool-filter').addEventListener('input', onFilter);
    document.addEventListener('visibilitychange', function () {
      if (!document.hidden && !state.timer && !state.inFlight && !state.waitingForKey) pollNow();
    });
    var resizeTimer = null;
    var onResize = function () {
      clearTimeout(resizeTimer);
      resizeTimer = setTimeout(resizeCharts, 100);
    };
    if (typeof ResizeObserver === 'function') new ResizeObserver(onResize).observe($('charts'));
    else window.addEventListener('resize', onResize);
    pollNow();
  }

  start();
}());
