// The dashboard: polls /dashboard/data and redraws its charts. No framework, Chart.js only.
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
  const charts = {};
  const state = { updates: 0, errors: 0, lastError: null };
  window.dashboard = { charts, state };

  function chart(id, config) {
    if (!charts[id]) {
      config.options = Object.assign({ responsive: true, maintainAspectRatio: false, animation: false }, config.options || {});
      charts[id] = new Chart(document.getElementById(id), config);
    }
    return charts[id];
  }

  function setBars(id, labels, values, label, colours, horizontal) {
    const c = chart(id, {
      type: "bar",
      data: { labels: [], datasets: [{ label, data: [], backgroundColor: colours || palette[0] }] },
      options: { indexAxis: horizontal ? "y" : "x", plugins: { legend: { display: false } } },
    });
    c.data.labels = labels;
    c.data.datasets[0].data = values;
    if (colours) c.data.datasets[0].backgroundColor = colours;
    c.update();
  }

  function text(id, value) {
    document.getElementById(id).textContent = value;
  }

  function number(n) {
    return n === null || n === undefined ? "–" : Number(n).toLocaleString("en");
  }

  function draw(data) {
    const m = data.metrics;
    const urls = m.urls;
    text("rate-1m", urls.pages_per_second["1m"].toFixed(1));
    text("fetched", number(urls.fetched));
    text("queued", `${number(urls.by_state.queued)} (${number(urls.queued_due_now)})`);
    text("hosts", `${number(m.hosts.leased)} / ${number(m.hosts.ready)} / ${number(m.hosts.backing_off)}`);
    text("indexed", number(m.documents.indexed));
    text("dead", number(m.dead_letters));

    const history = data.history;
    const rate = chart("chart-rate", {
      type: "line",
      data: { labels: [], datasets: [
        { label: "pages/s", data: [], borderColor: palette[0], backgroundColor: palette[0], yAxisID: "y", tension: 0.25 },
        { label: "queued URLs", data: [], borderColor: palette[2], backgroundColor: palette[2], yAxisID: "queue", tension: 0.25 },
      ] },
      options: { scales: { y: { beginAtZero: true, title: { display: true, text: "pages/s" } },
                           queue: { beginAtZero: true, position: "right", grid: { drawOnChartArea: false },
                                    title: { display: true, text: "queued" } } } },
    });
    rate.data.labels = history.map((p) => new Date(p.t).toLocaleTimeString());
    rate.data.datasets[0].data = history.map((p) => p.pages_per_second);
    rate.data.datasets[1].data = history.map((p) => p.queued);
    rate.update();

    const statuses = Object.keys(urls.by_status);
    const status = chart("chart-status", {
      type: "doughnut",
      data: { labels: [], datasets: [{ data: [], backgroundColor: [] }] },
      options: { plugins: { legend: { position: "right" } } },
    });
    status.data.labels = statuses;
    status.data.datasets[0].data = statuses.map((s) => urls.by_status[s]);
    status.data.datasets[0].backgroundColor = statuses.map(statusColour);
    status.update();

    const priorities = Object.keys(urls.queued_by_priority);
    setBars("chart-priority", priorities.map((p) => `priority ${p}`), priorities.map((p) => urls.queued_by_priority[p]), "queued URLs");
    setBars("chart-top-pages", m.top_hosts.by_pages.map((h) => h.host), m.top_hosts.by_pages.map((h) => h.count), "pages", palette[1], true);
    setBars("chart-top-errors", m.top_hosts.by_errors.map((h) => h.host), m.top_hosts.by_errors.map((h) => h.count), "errors", palette[3], true);
    const kinds = Object.keys(urls.errors_by_kind);
    setBars("chart-errors", kinds, kinds.map((k) => urls.errors_by_kind[k]), "URLs", palette[3]);

    const rows = document.querySelector("#recent-errors tbody");
    rows.replaceChildren(...m.recent_errors.map((e) => {
      const tr = document.createElement("tr");
      for (const [value, cls] of [[new Date(e.last_fetched_at).toLocaleTimeString(), ""], [e.url, "url"], [e.state, ""],
                                  [e.outcome, ""], [e.last_status ?? "", ""], [e.attempts, ""]]) {
        const td = document.createElement("td");
        td.textContent = value;
        if (cls) td.className = cls;
        tr.appendChild(td);
      }
      return tr;
    }));
  }

  async function refresh() {
    const status = document.getElementById("status");
    try {
      const response = await fetch(source, { credentials: "same-origin", headers: { Accept: "application/json" } });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      const data = await response.json();
      draw(data);
      state.updates += 1;
      status.className = "";
      status.textContent = `updated ${new Date().toLocaleTimeString()} · figures ${Math.round(data.metrics.age_seconds)} s old`;
    } catch (err) {
      state.errors += 1;
      state.lastError = String(err);
      status.className = "stale";
      status.textContent = `not updating: ${err.message} (retrying)`;
    } finally {
      setTimeout(refresh, refreshMs);
    }
  }

  refresh();
})();
