// The dashboard: polls /dashboard/data and redraws its charts and panels. No framework, Chart.js only.
"use strict";

(function () {
  const body = document.body;
  const source = body.dataset.source;
  const refreshMs = Number(body.dataset.refreshMs) || 5000;
  const palette = ["#2f6fde", "#1aa179", "#e8a33d", "#d9534f", "#8e6bd1", "#3bb3c3", "#a0a7b4", "#c46fa8"];
  const statusColour = (code) => {
    const n = Number(code);
    if (n < 300) return "#1aa179";
    if (n < 400) return "#2f6fde";
    if (n === 404 || n === 410) return "#a0a7b4";
    if (n < 500) return "#e8a33d";
    return "#d9534f";
  };
  const statusWords = {
    200: "OK", 203: "Non-Authoritative", 204: "No Content", 206: "Partial", 301: "Moved Permanently", 302: "Found",
    303: "See Other", 304: "Not Modified", 307: "Temporary Redirect", 308: "Permanent Redirect", 400: "Bad Request",
    401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 410: "Gone", 429: "Too Many Requests",
    500: "Server Error", 502: "Bad Gateway", 503: "Unavailable", 504: "Gateway Timeout",
  };
  const charts = {};
  const state = { updates: 0, errors: 0, lastError: null, lastSuccess: null, range: null };
  const grey = "#a0a7b4";
  const rangeSelect = document.getElementById("range");
  window.dashboard = { charts, state };

  function chart(id, config) {
    if (!charts[id]) {
      config.options = Object.assign({ responsive: true, maintainAspectRatio: false, animation: false }, config.options || {});
      charts[id] = new Chart(document.getElementById(id), config);
    }
    return charts[id];
  }

  // Counts are whole numbers: no axis tick between 0 and 1.
  const countAxis = (title) => ({ beginAtZero: true, ticks: { precision: 0 }, title: { display: !!title, text: title || "" } });

  function setBars(id, labels, values, label, colours, horizontal) {
    const c = chart(id, {
      type: "bar",
      data: { labels: [], datasets: [{ label, data: [], backgroundColor: colours || palette[0] }] },
      options: { indexAxis: horizontal ? "y" : "x", plugins: { legend: { display: false } },
                 scales: { [horizontal ? "x" : "y"]: countAxis(label) } },
    });
    c.data.labels = labels;
    c.data.datasets[0].data = values;
    if (colours) c.data.datasets[0].backgroundColor = colours;
    c.update();
    empty(id, values.length === 0);
  }

  // A chart with nothing to show says why (the figure's data-empty text) instead of a blank box.
  function empty(id, isEmpty) {
    document.getElementById(id).closest("figure").classList.toggle("empty", isEmpty);
  }

  function text(id, value) {
    document.getElementById(id).textContent = value;
  }

  function number(n) {
    return n === null || n === undefined ? "–" : Number(n).toLocaleString("en");
  }

  // Seconds as an operator reads them: "45 s", "3 min", "2 h 5 min", "3 d".
  function duration(seconds) {
    const s = Math.max(0, Math.round(seconds));
    if (s < 90) return `${s} s`;
    if (s < 3600) return `${Math.round(s / 60)} min`;
    if (s < 86400) return `${Math.floor(s / 3600)} h ${Math.round((s % 3600) / 60)} min`;
    return `${Math.round(s / 86400)} d`;
  }

  // Times are compared with the server's clock (data.now), not this browser's.
  function ago(iso, now) {
    return iso ? `${duration((now - Date.parse(iso)) / 1000)} ago` : "never";
  }

  function until(iso, now) {
    return iso ? `in ${duration((Date.parse(iso) - now) / 1000)}` : "now";
  }

  // Times in the server's zone (settings.TIME_ZONE), 24-hour and named, as the admin and the
  // search page print them (common/humanize.py), whatever this browser's zone and
  // locale. The name is the server's for now (data.time_zone_name): a time across a
  // daylight-saving change from now would show the other offset under today's name.
  const zone = { id: "UTC", name: "UTC", format: null };

  function setZone(id, name) {
    if (zone.id === id && zone.format) return;
    const options = { year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit",
                      second: "2-digit", hourCycle: "h23" };
    try {
      zone.format = new Intl.DateTimeFormat("en-GB", Object.assign({ timeZone: id }, options));
      Object.assign(zone, { id, name: name || id });
    } catch (err) {  // a zone this browser does not know: UTC, named as such
      zone.format = new Intl.DateTimeFormat("en-GB", Object.assign({ timeZone: "UTC" }, options));
      Object.assign(zone, { id, name: "UTC" });
    }
  }

  function parts(time) {
    const p = {};
    for (const part of zone.format.formatToParts(new Date(time))) p[part.type] = part.value;
    return p;
  }

  // "18:08:02" (or "18:08" with seconds false): chart labels, whose axis names the zone.
  function clock(time, seconds = true) {
    const p = parts(time);
    return seconds ? `${p.hour}:${p.minute}:${p.second}` : `${p.hour}:${p.minute}`;
  }

  // "18:08:02 UTC" today (in the zone), "2026-11-25 18:08:02 UTC" another day; "–" for none.
  function moment(time, now, full = false) {
    if (time === null || time === undefined) return "–";
    const p = parts(time);
    const n = parts(now);
    const day = `${p.year}-${p.month}-${p.day}`;
    const shown = `${p.hour}:${p.minute}:${p.second} ${zone.name}`;
    return full || day !== `${n.year}-${n.month}-${n.day}` ? `${day} ${shown}` : shown;
  }

  // A sentence from the server with `commands` in backticks, shown as code.
  function prose(id, sentence) {
    const element = document.getElementById(id);
    element.replaceChildren(...(sentence || "").split("`").map((piece, i) => {
      if (i % 2 === 0) return document.createTextNode(piece);
      const code = document.createElement("code");
      code.textContent = piece;
      return code;
    }));
  }


  function fillTable(selector, rows, columns) {
    const tbody = document.querySelector(`${selector} tbody`);
    tbody.replaceChildren(...rows.map((row) => {
      const tr = document.createElement("tr");
      for (const column of columns(row)) {
        const [value, cls, title] = Array.isArray(column) ? column : [column];
        const td = document.createElement("td");
        td.textContent = value ?? "";
        if (cls) td.className = cls;
        if (title) td.title = title;
        tr.appendChild(td);
      }
      return tr;
    }));
  }

  function drawCharts(data) {
    const m = data.metrics;
    const urls = m.urls;
    const history = data.history;
    const withRate = history.filter((p) => p.pages_per_second !== null);
    const long = data.range_minutes > 60;
    const rate = chart("chart-rate", {
      type: "line",
      data: { labels: [], datasets: [
        { label: "pages/s", data: [], borderColor: palette[0], backgroundColor: palette[0], yAxisID: "y", tension: 0.25, pointRadius: 0 },
        { label: "queued URLs", data: [], borderColor: palette[2], backgroundColor: palette[2], yAxisID: "queue", tension: 0.25, pointRadius: 0 },
      ] },
      options: { interaction: { mode: "index", intersect: false },
                 scales: { x: { title: { display: true, text: "time" } },
                           y: { beginAtZero: true, title: { display: true, text: "pages/s" } },
                           queue: Object.assign(countAxis("queued"), { position: "right", grid: { drawOnChartArea: false } }) } },
    });
    rate.data.labels = history.map((p) => clock(p.t, !long));
    rate.options.scales.x.title.text = `time (${zone.name})`;
    rate.data.datasets[0].data = history.map((p) => p.pages_per_second);
    rate.data.datasets[1].data = history.map((p) => p.queued);
    rate.update();
    empty("chart-rate", withRate.length < 2);  // one point is no line

    const statuses = Object.keys(urls.by_status);
    const total = statuses.reduce((n, s) => n + urls.by_status[s], 0);
    const status = chart("chart-status", {
      type: "doughnut",
      data: { labels: [], datasets: [{ data: [], backgroundColor: [] }] },
      options: { plugins: { legend: { position: "right" },
                            tooltip: { callbacks: { label: (ctx) => `${number(ctx.parsed)} URLs (${Math.round(100 * ctx.parsed / total)}%)` } } } },
    });
    status.data.labels = statuses.map((s) => `${s}${statusWords[s] ? " " + statusWords[s] : ""} · ${number(urls.by_status[s])}`);
    status.data.datasets[0].data = statuses.map((s) => urls.by_status[s]);
    status.data.datasets[0].backgroundColor = statuses.map(statusColour);
    status.update();
    empty("chart-status", statuses.length === 0);

    // frontier/importance.py: dispatch draws hosts by band; a band with nothing queued is left out
    const bands = ["high", "middle", "low"].filter((b) => urls.queued_by_band[b]);
    setBars("chart-score", bands, bands.map((b) => urls.queued_by_band[b]), "queued URLs");
    setBars("chart-top-pages", m.top_hosts.by_pages.map((h) => h.host), m.top_hosts.by_pages.map((h) => h.count), "pages", palette[1], true);
    setBars("chart-top-errors", m.top_hosts.by_errors.map((h) => h.host), m.top_hosts.by_errors.map((h) => h.count), "URLs with errors", palette[3], true);
    const gone = m.top_hosts.by_gone || [];  // a sample taken before gone pages were counted apart has none
    setBars("chart-top-gone", gone.map((h) => h.host), gone.map((h) => h.count), "pages gone", grey, true);
    const kinds = Object.keys(urls.errors_by_kind);
    setBars("chart-errors", kinds, kinds.map((k) => urls.errors_by_kind[k]), "URLs", palette[3]);
  }

  function drawCards(data) {
    const m = data.metrics;
    const urls = m.urls;
    const live = data.liveness;
    const now = Date.parse(data.now);
    text("rate-1m", Number(urls.pages_per_second["1m"]).toFixed(1));
    text("fetched", number(urls.fetched));
    text("queued", `${number(urls.by_state.queued)} (${number(urls.queued_due_now)})`);
    text("hosts", `${number(m.hosts.leased)} / ${number(m.hosts.ready)} / ${number(m.hosts.backing_off)}`);
    text("indexed", number(m.documents.indexed));
    text("dead", number(m.dead_letters));
    text("gone", number(urls.by_state.gone));
    text("online", `${live.workers_online} / ${live.dispatchers_online}`);
    const queues = m.fetch_queues;
    text("broker", queues ? number(Object.values(queues).reduce((n, v) => n + v, 0)) : "no broker");
    document.getElementById("broker").title = queues ? Object.entries(queues).map(([q, n]) => `${q}: ${n}`).join("\n") : "the broker did not answer";
    // The embedded crawl has no beat (`crawl --continuous` releases revisits itself): greyed, never a warning.
    const beatCard = document.getElementById("beat-card");
    const beat = live.beat;
    text("beat", beat.off ? "not used" : beat.last_run_at ? ago(beat.last_run_at, now) : "never");
    beatCard.classList.toggle("off", beat.off);
    beatCard.classList.toggle("warn", beat.warn);
    beatCard.title = beat.off ? "the embedded crawl has no beat: manage.py crawl --continuous releases due revisits itself"
      : beat.last_run_at ? `beat last sent a periodic task at ${moment(beat.last_run_at, now, true)}`
      : "beat has never sent a periodic task (celery -A crawlerweb beat)";
  }

  function drawLiveness(data) {
    const live = data.liveness;
    const now = Date.parse(data.now);
    const crawl = live.crawl;
    const banner = document.getElementById("crawl-state");
    banner.dataset.state = crawl.state;
    text("crawl-state-word", crawl.state);
    text("crawl-state-detail", crawl.detail);  // whole sentences, each with its own full stop
    prose("crawl-state-advice", crawl.advice);
    text("crawl-state-last", crawl.last_request_at ? `Last request ${ago(crawl.last_request_at, now)} (${moment(crawl.last_request_at, now)}).` : "");
    const mode = document.getElementById("mode");
    mode.dataset.mode = live.mode.mode;
    text("mode", live.mode.label);

    fillTable("#processes", live.processes, (p) => [
      p.kind, [p.name, "url"], `${p.hostname} / ${p.pid}`, [p.state, `state-${p.state}`],
      [ago(p.seen_at, now), "", moment(p.seen_at, now, true)], p.kind === "dispatcher" ? "" : number(p.sessions),
      p.kind === "dispatcher" ? `${number(p.leases)} leases` : number(p.requests),
      p.kind === "dispatcher" ? ago(p.last_lease_at, now) : ago(p.last_request_at, now),
    ]);
    const start = { embedded: "run `python manage.py crawl`",
                    distributed: "start `celery -A crawlerweb worker` and `python manage.py dispatch`" }[live.mode.mode]
      || "run `python manage.py crawl`, or start `celery -A crawlerweb worker` and `python manage.py dispatch`";
    prose("processes-note", live.processes.length ? `stale: no heartbeat for ${live.stale_after_seconds} s (killed or stuck)`
      : `no process has reported yet: ${start}`);
  }

  function drawHealth(data) {
    const h = data.health;
    const now = Date.parse(data.now);
    const count = (id, part) => text(id, part.count > part.hosts.length ? `${part.count} (longest first)` : String(part.count));
    count("count-paused", h.paused);
    count("count-breaker", h.breaker_open);
    count("count-backoff", h.backing_off);
    count("count-robots", h.robots_unavailable);
    const at = (iso) => (iso ? moment(iso, now, true) : "");
    fillTable("#health-paused", h.paused.hosts, (x) => [[x.host, "url"], [ago(x.paused_at, now), "", at(x.paused_at)]]);
    fillTable("#health-breaker", h.breaker_open.hosts, (x) => [[x.host, "url"], number(x.failures), [until(x.until, now), "", at(x.until)]]);
    fillTable("#health-backoff", h.backing_off.hosts, (x) => [[x.host, "url"], [until(x.until, now), "", at(x.until)], x.reason_text]);
    fillTable("#health-robots", h.robots_unavailable.hosts, (x) => [
      [x.host, "url"], x.robots_error || (x.robots_status ? `HTTP ${x.robots_status}` : ""),
      [until(x.robots_retry_at && Date.parse(x.robots_retry_at) > now ? x.robots_retry_at : null, now), "", at(x.robots_retry_at)]]);
  }

  function drawErrors(data) {
    const now = Date.parse(data.now);
    fillTable("#recent-errors", data.metrics.recent_errors, (e) => [
      [moment(e.last_fetched_at, now), "when", ago(e.last_fetched_at, now)], [e.url, "url"], e.state, e.outcome,
      e.last_status ?? "", e.attempts]);
  }

  function dataUrl() {
    return `${source}?minutes=${encodeURIComponent(rangeSelect.value)}`;
  }

  let timer = null;
  let inFlight = false;
  let again = false;  // the range changed while a poll was under way: poll once more after it
  async function refresh() {
    if (inFlight) {
      again = true;
      return;
    }
    inFlight = true;
    clearTimeout(timer);
    const status = document.getElementById("status");
    try {
      const response = await fetch(dataUrl(), { credentials: "same-origin", headers: { Accept: "application/json" } });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      const data = await response.json();
      setZone(data.time_zone, data.time_zone_name);
      drawCards(data);
      drawCharts(data);
      drawLiveness(data);
      drawHealth(data);
      drawErrors(data);
      state.updates += 1;
      state.range = data.range_minutes;
      state.lastSuccess = Date.parse(data.now);
      body.classList.remove("stale");
      const age = Math.round(data.metrics.age_seconds);
      const old = age > 3 * Number(body.dataset.sampleSeconds || 15);
      status.className = old ? "stale" : "";
      const why = old ? (data.liveness.mode.mode === "distributed" ? " (stale: is beat running?)" : " (stale)") : "";
      status.textContent = `updated ${moment(data.now, state.lastSuccess)} · figures ${age} s old${why}`;
    } catch (err) {
      state.errors += 1;
      state.lastError = String(err);
      status.className = "stale";
      // The server's clock when it last answered, in its zone (this browser's clock may differ).
      const since = state.lastSuccess ? ` · showing figures from ${moment(state.lastSuccess, state.lastSuccess)}` : "";
      status.textContent = `not updating: ${err.message} (retrying)${since}`;
      body.classList.add("stale");  // greys every panel: what is shown is no longer current
    } finally {
      inFlight = false;
      if (again) {
        again = false;
        refresh();
      } else {
        timer = setTimeout(refresh, refreshMs);
      }
    }
  }

  rangeSelect.addEventListener("change", () => {
    const url = new URL(window.location.href);
    url.searchParams.set("minutes", rangeSelect.value);
    window.history.replaceState(null, "", url);
    refresh();
  });

  refresh();
})();
