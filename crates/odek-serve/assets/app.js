// The page's behaviour: the new-run form, the run list (polled), and the selected run's view fed
// by its odek.event/v1 stream (Server-Sent Events) and GET /api/runs/{id}. Everything the server
// or a model wrote is untrusted and reaches the document only as text (textContent, text nodes);
// no HTML is ever parsed from data. No framework, no build step: this file is served as written.
"use strict";

(() => {
  // ---------------------------------------------------------------------------------------------
  // Small helpers.

  const byId = (id) => document.getElementById(id);

  /** An element: `props` sets class, text, attributes (from this file, never from data) and
   * listeners; children are nodes or strings (strings become text nodes). */
  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = String(value);
      else if (key === "on") for (const [type, listener] of Object.entries(value)) node.addEventListener(type, listener);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    append(node, children);
    return node;
  }

  function append(node, children) {
    for (const child of children.flat(Infinity)) {
      if (child === undefined || child === null || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
  }

  /** Replaces a node's children. */
  function fill(node, ...children) {
    node.replaceChildren();
    append(node, children);
    return node;
  }

  const numberFormat = new Intl.NumberFormat(undefined);
  const formatCount = (n) => (typeof n === "number" ? numberFormat.format(n) : "–");

  function formatTokens(n) {
    if (typeof n !== "number") return "–";
    if (n < 10000) return numberFormat.format(n);
    if (n < 1e6) return `${(n / 1000).toFixed(n < 1e5 ? 1 : 0)}k`;
    return `${(n / 1e6).toFixed(2)}M`;
  }

  function formatBytes(n) {
    if (typeof n !== "number") return "–";
    if (n < 1024) return `${n} B`;
    if (n < 1024 * 1024) return `${(n / 1024).toFixed(n < 10240 ? 1 : 0)} KB`;
    return `${(n / 1048576).toFixed(1)} MB`;
  }

  function formatDuration(ms) {
    if (typeof ms !== "number" || !Number.isFinite(ms)) return "–";
    if (ms < 1000) return `${Math.round(ms)} ms`;
    const s = ms / 1000;
    if (s < 60) return `${s.toFixed(s < 10 ? 1 : 0)} s`;
    const m = Math.floor(s / 60);
    if (m < 60) return `${m} min ${Math.round(s - m * 60)} s`;
    return `${Math.floor(m / 60)} h ${m % 60} min`;
  }

  function formatUsd(n) {
    if (typeof n !== "number") return "–";
    return `$${n < 1 ? n.toFixed(4) : n.toFixed(2)}`;
  }

  function formatAge(iso) {
    const then = Date.parse(iso);
    if (Number.isNaN(then)) return "";
    const s = Math.max(0, (Date.now() - then) / 1000);
    if (s < 5) return "just now";
    if (s < 60) return `${Math.floor(s)} s ago`;
    if (s < 3600) return `${Math.floor(s / 60)} min ago`;
    if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
    return `${Math.floor(s / 86400)} d ago`;
  }

  function formatClock(iso) {
    const then = new Date(iso);
    return Number.isNaN(then.getTime()) ? "" : then.toLocaleTimeString(undefined, { hour12: false });
  }

  const shortId = (id) => (typeof id === "string" ? id.slice(0, 8) : "");

  /** A one-line rendering of an args_summary object (`argv0=git · class=read_only`). */
  function summarizeArgs(summary) {
    if (!summary || typeof summary !== "object") return "";
    return Object.entries(summary)
      .map(([key, value]) => `${key}=${Array.isArray(value) ? value.join(", ") : typeof value === "object" ? JSON.stringify(value) : value}`)
      .join("  ·  ");
  }

  // odek's outcome classes (odek-contract's Outcome): a word and a tone (the colour class; the
  // word always shows).
  const OUTCOMES = {
    success: ["Succeeded", "ok"],
    budget_exceeded: ["Budget exceeded", "warn"],
    stalled: ["Stalled", "warn"],
    denied: ["Denied", "bad"],
    invalid_output: ["Invalid output", "bad"],
    checks_failed: ["Checks failed", "bad"],
    cancelled: ["Cancelled", "muted"],
    model_error: ["Model error", "bad"],
    tool_error: ["Tool error", "bad"],
    error: ["Failed", "bad"],
  };

  /** The word and tone of an outcome, one the page does not know included. */
  function outcomeLabel(outcome) {
    if (OUTCOMES[outcome]) return OUTCOMES[outcome];
    const word = outcome ? String(outcome).replaceAll("_", " ") : "Finished";
    return [word.charAt(0).toUpperCase() + word.slice(1), "bad"];
  }

  function runBadge(view) {
    if (!view) return badge("Loading", "muted");
    if (view.status === "running") {
      if (Array.isArray(view.pending_approvals) && view.pending_approvals.length > 0) {
        return badge("Needs approval", "warn", true);
      }
      if (Array.isArray(view.pending_elicitations) && view.pending_elicitations.length > 0) {
        return badge("Needs input", "warn", true);
      }
      return badge("Running", "run", true);
    }
    return badge(...outcomeLabel(view.outcome));
  }

  function badge(label, tone, live) {
    return el("span", { class: `badge ${tone}${live ? " live" : ""}` }, el("span", { class: "dot", "aria-hidden": "true" }), label);
  }

  // ---------------------------------------------------------------------------------------------
  // The API.

  class ApiError extends Error {
    constructor(status, message, retryAfter) {
      super(message);
      this.status = status;
      this.retryAfter = retryAfter;
    }
  }

  async function api(method, path, body) {
    const init = { method, headers: { Accept: "application/json" }, credentials: "same-origin", cache: "no-store" };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    let response;
    try {
      response = await fetch(path, init);
    } catch (failure) {
      setOnline(false);
      throw new ApiError(0, "odek serve cannot be reached; is it still running?");
    }
    setOnline(true);
    const text = await response.text().catch(() => "");
    let data = null;
    try {
      data = text ? JSON.parse(text) : null;
    } catch {
      data = null;
    }
    if (!response.ok) {
      let message = data && typeof data.error === "string" ? data.error : `HTTP ${response.status}`;
      if (response.status === 401) {
        message = "This page is not signed in: open the address odek serve printed (the one ending in ?token=…) again.";
        showBanner(message, "bad");
      }
      throw new ApiError(response.status, message, response.headers.get("Retry-After"));
    }
    return data;
  }

  // ---------------------------------------------------------------------------------------------
  // The page's state.

  const state = {
    runs: [],
    /** session id → its title (GET /api/sessions): what the list calls a run of that session. */
    titles: new Map(),
    titlesFetched: 0,
    /** run id → the task this page started it with. */
    tasks: new Map(),
    limits: null,
    maxConcurrent: null,
    online: true,
    /** The selected run (see `RunState`), or null. */
    selected: null,
    /** A session id the next run continues, or null. */
    followUp: null,
    runsTimer: 0,
  };

  // ---------------------------------------------------------------------------------------------
  // Masthead: connection and server facts; the banner.

  function setOnline(online) {
    if (state.online === online) return;
    state.online = online;
    renderConnection();
    if (online) hideBanner("offline");
    else showBanner("Lost the connection to odek serve. Retrying…", "bad", "offline");
  }

  function renderConnection() {
    const node = byId("connection");
    fill(node, state.online ? badge("Connected", "ok") : badge("Offline", "bad"));
  }

  let bannerKey = null;
  function showBanner(message, tone, key) {
    const node = byId("banner");
    bannerKey = key || null;
    node.className = `banner ${tone || "bad"}`;
    fill(node, el("span", { text: message }), el("button", { type: "button", class: "link-button", text: "Dismiss", on: { click: () => hideBanner() } }));
    node.hidden = false;
  }

  function hideBanner(key) {
    if (key && bannerKey !== key) return;
    byId("banner").hidden = true;
    bannerKey = null;
  }

  function renderFacts() {
    const parts = [];
    if (state.maxConcurrent) {
      const running = state.runs.filter((run) => run.status === "running").length;
      parts.push(`${running} of ${state.maxConcurrent} runs running`);
    }
    const limits = state.limits || {};
    const budgets = [];
    if (limits.max_iterations) budgets.push(`${formatCount(limits.max_iterations)} iterations`);
    if (limits.max_tool_calls) budgets.push(`${formatCount(limits.max_tool_calls)} tool calls`);
    if (limits.max_runtime_seconds) budgets.push(formatDuration(limits.max_runtime_seconds * 1000));
    if (limits.max_cost_usd) budgets.push(formatUsd(limits.max_cost_usd));
    if (budgets.length) parts.push(`budgets: ${budgets.join(", ")}`);
    fill(byId("server-facts"), parts.join("  ·  "));
  }

  async function loadLimits() {
    try {
      const data = await api("GET", "/api/limits");
      state.limits = (data && data.limits) || {};
      state.maxConcurrent = data && data.max_concurrent_runs;
      for (const input of document.querySelectorAll("input[data-limit]")) {
        const limit = state.limits[input.dataset.limit];
        input.placeholder = typeof limit === "number" ? `≤ ${limit}` : "none";
      }
      renderFacts();
      if (state.selected) renderBudgets(state.selected);
    } catch (failure) {
      // The form and runs still work without it; the run list's poll reports a lost server.
    }
  }

  // ---------------------------------------------------------------------------------------------
  // The new-run form.

  function formError(message) {
    const node = byId("form-error");
    node.textContent = message || "";
    node.hidden = !message;
  }

  function readLimits() {
    const limits = {};
    for (const input of document.querySelectorAll("input[data-limit]")) {
      const raw = input.value.trim();
      // A number field holds "" for text that is not a number: that is an error, not "empty".
      const unreadable = Boolean(input.validity && input.validity.badInput);
      if (!raw && !unreadable) continue;
      const name = input.dataset.limit;
      const value = Number(raw);
      const whole = name !== "max_cost_usd";
      if (unreadable || !Number.isFinite(value) || value <= 0 || (whole && !Number.isInteger(value))) {
        const label = input.closest("label").firstChild.textContent.trim();
        input.closest("details").open = true;
        input.focus();
        throw new Error(`${label}: ${whole ? "a whole number above 0" : "an amount above 0"}, or empty for the server's.`);
      }
      limits[name] = value;
    }
    return limits;
  }

  async function startRun(event) {
    event.preventDefault();
    formError("");
    const taskInput = byId("task");
    const task = taskInput.value;
    if (!task.trim()) {
      formError("Write a task first.");
      taskInput.focus();
      return;
    }
    const body = { task };
    try {
      const limits = readLimits();
      if (Object.keys(limits).length > 0) body.limits = limits;
    } catch (invalid) {
      formError(invalid.message);
      return;
    }
    const model = byId("opt-model").value.trim();
    if (model) body.model = model;
    const planning = byId("opt-planning").value;
    if (planning) body.planning = planning === "true";
    if (state.followUp) body.session_id = state.followUp;

    const button = byId("start-button");
    button.disabled = true;
    button.textContent = "Starting…";
    try {
      const started = await api("POST", "/api/runs", body);
      state.tasks.set(started.run_id, task);
      taskInput.value = "";
      setFollowUp(null);
      location.hash = `run=${started.run_id}`;
      refreshRuns();
    } catch (refused) {
      if (refused.status === 429) {
        const wait = refused.retryAfter ? ` Try again in ${refused.retryAfter} s.` : "";
        formError(`Too many runs at once: ${refused.message}.${wait}`);
      } else {
        formError(refused.message);
      }
    } finally {
      button.disabled = false;
      button.textContent = "Start run";
    }
  }

  function setFollowUp(sessionId) {
    state.followUp = sessionId;
    byId("session-chip").hidden = !sessionId;
    byId("session-chip-id").textContent = sessionId || "";
  }

  // ---------------------------------------------------------------------------------------------
  // The run list.

  /** run id → its list item, kept so a refresh updates in place (focus stays where it was). */
  const listItems = new Map();

  function runTitle(run) {
    return run.task || state.tasks.get(run.run_id) || state.titles.get(run.session_id) || `Run ${shortId(run.run_id)}`;
  }

  function renderRunList() {
    const list = byId("run-list");
    const seen = new Set();
    let previous = null;
    for (const run of state.runs) {
      seen.add(run.run_id);
      let item = listItems.get(run.run_id);
      if (!item) {
        item = el("li", { class: "run-item" }, el("a", { href: `#run=${encodeURIComponent(run.run_id)}` }));
        listItems.set(run.run_id, item);
      }
      const link = item.firstChild;
      const selected = state.selected && state.selected.id === run.run_id;
      if (selected) link.setAttribute("aria-current", "true");
      else link.removeAttribute("aria-current");
      const usage = run.usage || {};
      fill(
        link,
        el("span", { class: "run-item-top" }, runBadge(run), el("span", { class: "run-item-age", title: run.created_at, text: formatAge(run.created_at) })),
        el("span", { class: "run-item-title", text: runTitle(run) }),
        el(
          "span",
          { class: "run-item-meta" },
          el("code", { text: shortId(run.run_id) }),
          el("span", { text: `${formatTokens(usage.input_tokens)} in · ${formatTokens(usage.output_tokens)} out` }),
          typeof usage.cost_usd === "number" ? el("span", { text: formatUsd(usage.cost_usd) }) : null,
        ),
      );
      const wanted = previous ? previous.nextSibling : list.firstChild;
      if (wanted !== item) list.insertBefore(item, wanted);
      previous = item;
    }
    for (const [id, item] of listItems) {
      if (!seen.has(id)) {
        item.remove();
        listItems.delete(id);
      }
    }
    byId("runs-empty").hidden = state.runs.length > 0;
    const running = state.runs.filter((run) => run.status === "running").length;
    byId("runs-summary").textContent = state.runs.length ? `${running} running · ${state.runs.length} in all` : "";
    renderFacts();
  }

  async function refreshTitles() {
    state.titlesFetched = Date.now();
    try {
      const data = await api("GET", "/api/sessions");
      for (const session of (data && data.sessions) || []) {
        if (session && typeof session.id === "string" && typeof session.title === "string" && session.title) {
          state.titles.set(session.id, session.title);
        }
      }
      renderRunList();
      if (state.selected && state.selected.view) renderHead(state.selected);
    } catch {
      // Titles are a nicety; the list shows run ids without them.
    }
  }

  /** A list refresh soon (the list says which runs wait for an approval). */
  let runsSoon = 0;
  function refreshRunsSoon() {
    if (runsSoon) return;
    runsSoon = setTimeout(() => {
      runsSoon = 0;
      refreshRuns();
    }, 300);
  }

  async function refreshRuns() {
    clearTimeout(state.runsTimer);
    let anyRunning = false;
    try {
      const data = await api("GET", "/api/runs");
      state.runs = Array.isArray(data && data.runs) ? data.runs : [];
      anyRunning = state.runs.some((run) => run.status === "running");
      renderRunList();
      const untitled = state.runs.some((run) => !state.tasks.has(run.run_id) && !state.titles.has(run.session_id));
      if (untitled && Date.now() - state.titlesFetched > 10000) refreshTitles();
    } catch {
      // setOnline shows the lost connection; the next poll retries.
    }
    // Often while something runs, rarely when idle, not at all while the tab is hidden.
    if (!document.hidden) state.runsTimer = setTimeout(refreshRuns, anyRunning || !state.online ? 2000 : 10000);
  }

  // ---------------------------------------------------------------------------------------------
  // The selected run.

  /** What the page knows of one run: its view (GET /api/runs/{id}) and what its events said. */
  class RunState {
    constructor(id) {
      this.id = id;
      this.view = null;
      this.missing = false;
      this.source = null;
      this.lastSeq = 0;
      this.ended = false;
      this.stream = "connecting";
      this.reconnectTimer = 0;
      this.model = null;
      this.maxIterations = null;
      this.iterations = 0;
      this.tokens = null;
      this.durationMs = null;
      this.failureClass = null;
      this.events = 0;
      this.lost = 0;
      this.calls = new Map();
      this.approvals = new Map();
      this.elicitations = new Map();
      this.subagents = new Map();
      this.activity = [];
      this.viewFetch = null;
      this.viewAgain = false;
      this.viewTimer = 0;
      this.settleTries = 0;
      this.actionsKey = null;
      this.planKey = "";
      this.artifactKey = "";
      this.dom = null;
    }
  }

  function routeFromHash() {
    const match = /^#run=([0-9A-Za-z_-]{1,128})$/.exec(location.hash);
    select(match ? match[1] : null);
  }

  function select(id) {
    const current = state.selected;
    if (current && current.id === id) return;
    if (current) closeStream(current);
    const view = byId("run-view");
    if (!id) {
      state.selected = null;
      fill(view, el("div", { class: "placeholder" }, el("p", { text: "Pick a run on the left, or start one." }), el("p", { class: "muted", text: "Its tool calls, plan, approvals, requests for input and answer show here as they happen." })));
      renderRunList();
      return;
    }
    const run = new RunState(id);
    state.selected = run;
    buildRunView(run);
    renderRunList();
    refreshView(run);
    openStream(run);
  }

  function section(name, title) {
    const count = el("span", { class: "section-count" });
    const body = el("div", { class: "section-body" });
    const node = el("section", { class: "block", "data-section": name }, el("div", { class: "block-head" }, el("h3", { text: title }), count), body);
    return { node, count, body };
  }

  function buildRunView(run) {
    const view = byId("run-view");
    const title = el("h2", { class: "run-title", tabindex: "-1" });
    const status = el("span", { class: "run-status" });
    const stream = el("span", { class: "stream-state" });
    const actions = el("div", { class: "run-actions" });
    const meta = el("dl", { class: "run-meta" });
    const head = el("header", { class: "run-head" }, el("div", { class: "run-head-top" }, status, stream, actions), title, meta);
    const approvals = el("div", { class: "approvals", "aria-live": "polite" });
    const outcome = el("div", { class: "outcome" });
    const budgets = section("budget", "Budget");
    const plan = section("plan", "Plan");
    const calls = section("calls", "Tool calls");
    const subagents = section("subagents", "Sub-agents");
    const artifacts = section("artifacts", "Artifacts");
    const activity = section("activity", "Activity");
    budgets.body.classList.add("meters");
    calls.body.append(el("ol", { class: "calls" }));
    subagents.body.append(el("ol", { class: "subagents" }));
    subagents.node.hidden = true;
    artifacts.node.hidden = true;
    activity.node.hidden = true;
    plan.node.hidden = true;
    const emptyCalls = el("p", { class: "empty", text: "No tool calls yet." });
    calls.body.append(emptyCalls);
    run.dom = { title, status, stream, actions, meta, approvals, outcome, budgets, plan, calls, emptyCalls, subagents, artifacts, activity };
    fill(
      view,
      head,
      approvals,
      outcome,
      el("div", { class: "run-grid" }, el("div", { class: "run-main" }, plan.node, calls.node, subagents.node, artifacts.node), el("div", { class: "run-aside" }, budgets.node, activity.node)),
    );
    renderHead(run);
    renderBudgets(run);
  }

  function renderHead(run) {
    const d = run.dom;
    const v = run.view;
    if (run.missing) {
      fill(d.status, badge("Unknown run", "muted"));
      fill(d.title, `No run ${run.id}`);
      fill(d.meta, el("dd", { class: "muted", text: "odek serve does not know this run: it forgets runs when it restarts, and the oldest past its bound." }));
      fill(d.actions);
      fill(d.stream);
      return;
    }
    fill(d.status, runBadge(v));
    const summary = v ? state.runs.find((candidate) => candidate.run_id === run.id) : null;
    d.title.textContent = v ? runTitle(summary || v) : `Run ${shortId(run.id)}`;
    const rows = [
      ["Run", el("code", { text: run.id })],
      ["Session", v ? el("code", { text: v.session_id }) : "…"],
      ["Started", v ? el("span", { class: "run-started", title: v.created_at, text: `${formatClock(v.created_at)} (${formatAge(v.created_at)})` }) : "…"],
    ];
    if (run.model) rows.push(["Model", el("code", { text: run.model })]);
    if (run.durationMs !== null) rows.push(["Took", formatDuration(run.durationMs)]);
    fill(d.meta, rows.map(([label, value]) => el("div", { class: "meta-row" }, el("dt", { text: label }), el("dd", {}, value))));
    // Rebuilt only when they change, so a focused button keeps the focus across refreshes.
    const running = !v || v.status === "running";
    const actions = !v ? "" : running ? `cancel:${Boolean(run.cancelling)}` : "follow-up";
    if (actions !== run.actionsKey) {
      const hadFocus = d.actions.contains(document.activeElement);
      run.actionsKey = actions;
      const buttons = [];
      if (v && running) {
        buttons.push(el("button", { type: "button", class: "danger", "data-action": "cancel", text: run.cancelling ? "Cancelling…" : "Cancel run", disabled: run.cancelling || undefined, on: { click: () => cancelRun(run) } }));
      }
      if (v && !running) {
        buttons.push(el("button", { type: "button", "data-action": "follow-up", text: "Follow up", title: "Start a run that continues this session", on: { click: () => followUp(v.session_id) } }));
      }
      fill(d.actions, buttons);
      if (hadFocus) (d.actions.querySelector("button") || d.title).focus();
    }
    renderStreamState(run);
  }

  function renderStreamState(run) {
    const labels = {
      connecting: ["Connecting…", "muted"],
      live: ["Live", "run"],
      reconnecting: ["Reconnecting…", "warn"],
      lost: ["Stream lost: retrying", "bad"],
      ended: ["", ""],
    };
    const [label, tone] = labels[run.stream] || ["", ""];
    fill(run.dom.stream, label ? el("span", { class: `stream ${tone}`, text: label }) : null);
  }

  function followUp(sessionId) {
    setFollowUp(sessionId);
    const task = byId("task");
    task.focus();
    task.scrollIntoView({ block: "center" });
  }

  async function cancelRun(run) {
    run.cancelling = true;
    renderHead(run);
    try {
      await api("POST", `/api/runs/${encodeURIComponent(run.id)}/cancel`, {});
    } catch (refused) {
      run.cancelling = false;
      if (refused.status !== 409) showBanner(`Could not cancel: ${refused.message}`, "bad");
    }
    refreshView(run);
  }

  /** GET /api/runs/{id}, one at a time: a refresh asked during a fetch runs after it. */
  function refreshView(run) {
    if (run.viewFetch) {
      run.viewAgain = true;
      return run.viewFetch;
    }
    run.viewFetch = (async () => {
      try {
        const view = await api("GET", `/api/runs/${encodeURIComponent(run.id)}`);
        if (state.selected !== run) return;
        run.view = view;
        run.missing = false;
        renderView(run);
        if (view.status === "finished" && !run.ended && run.stream !== "live" && run.stream !== "connecting") {
          // Over, and the stream broke (its last event may have been dropped from the log):
          // stop listening. A healthy stream replays to its last event and ends there.
          endStream(run);
        } else if (view.status === "running" && run.ended && run.settleTries < 40) {
          // The last event comes a moment before the run's state says finished.
          run.settleTries += 1;
          clearTimeout(run.viewTimer);
          run.viewTimer = setTimeout(() => {
            run.viewTimer = 0;
            if (state.selected === run) refreshView(run);
          }, 250);
        }
      } catch (failure) {
        if (failure.status === 404 && state.selected === run) {
          run.missing = true;
          closeStream(run);
          renderHead(run);
        } else if (failure.status === 401 && state.selected === run) {
          // Signed out (the banner says how to sign in): the stream would only be refused again.
          closeStream(run);
          run.stream = "lost";
          renderStreamState(run);
        }
      } finally {
        run.viewFetch = null;
        if (run.viewAgain && state.selected === run) {
          run.viewAgain = false;
          refreshView(run);
        }
      }
    })();
    return run.viewFetch;
  }

  /** A view refresh soon: bursts of events (a plan's updates) make one request. */
  function refreshViewSoon(run) {
    if (run.viewTimer) return;
    run.viewTimer = setTimeout(() => {
      run.viewTimer = 0;
      if (state.selected === run) refreshView(run);
    }, 150);
  }

  function renderView(run) {
    renderHead(run);
    renderOutcome(run);
    renderPlan(run);
    renderArtifacts(run);
    renderBudgets(run);
    // A pending approval whose event this page never saw (dropped from the log) still shows.
    for (const id of run.view.pending_approvals || []) {
      if (!run.approvals.has(String(id))) upsertApproval(run, { approval_id: id }, null);
    }
    if (run.view.status === "finished") {
      for (const approval of run.approvals.values()) {
        if (!approval.decision) resolveApproval(run, { approval_id: approval.id, decision: "closed" });
      }
      for (const elicitation of run.elicitations.values()) {
        if (!elicitation.action) resolveElicitation(run, { elicitation_id: elicitation.id, action: "closed" });
      }
    }
    const listed = state.runs.find((candidate) => candidate.run_id === run.id);
    if (listed && (listed.status !== run.view.status || listed.outcome !== run.view.outcome)) refreshRuns();
  }

  function renderOutcome(run) {
    const v = run.view;
    const node = run.dom.outcome;
    if (!v || v.status !== "finished") {
      fill(node);
      node.hidden = true;
      return;
    }
    node.hidden = false;
    const [label, tone] = outcomeLabel(v.outcome);
    const parts = [el("div", { class: "outcome-head" }, el("h3", { text: "Outcome" }), badge(label, tone))];
    if (v.budget) parts.push(el("p", { class: "outcome-line" }, "The ", el("code", { text: v.budget }), " budget ran out."));
    if (run.failureClass && run.failureClass !== "error" && v.outcome !== "success") parts.push(el("p", { class: "outcome-line muted" }, "Error class: ", el("code", { text: run.failureClass })));
    if (v.error) parts.push(el("pre", { class: "error-text", text: v.error }));
    if (v.answer) {
      const copy = el("button", { type: "button", class: "link-button", text: "Copy" });
      copy.addEventListener("click", async () => {
        try {
          await navigator.clipboard.writeText(v.answer);
          copy.textContent = "Copied";
        } catch {
          copy.textContent = "Copy failed";
        }
      });
      parts.push(el("div", { class: "answer-head" }, el("span", { class: "muted", text: "Answer" }), copy), el("div", { class: "answer", text: v.answer }));
    } else if (v.outcome === "success") {
      parts.push(el("p", { class: "muted", text: "The run ended without an answer." }));
    }
    node.className = `outcome tone-${tone}`;
    fill(node, parts);
  }

  const STEP_STATUS = {
    done: ["Done", "ok", "✓"],
    in_progress: ["In progress", "run", "▸"],
    pending: ["Pending", "muted", "○"],
    blocked: ["Blocked", "bad", "!"],
  };

  function renderPlan(run) {
    const steps = (run.view && run.view.plan) || [];
    const key = JSON.stringify(steps);
    if (key === run.planKey) return;
    run.planKey = key;
    const { node, count, body } = run.dom.plan;
    node.hidden = steps.length === 0;
    const done = steps.filter((step) => step.status === "done").length;
    count.textContent = steps.length ? `${done} of ${steps.length} done` : "";
    const bar = el("div", { class: "bar", role: "progressbar", "aria-valuemin": "0", "aria-valuemax": String(steps.length), "aria-valuenow": String(done), "aria-label": "Plan progress" }, el("span", { class: "bar-fill ok" }));
    bar.firstChild.style.width = steps.length ? `${(100 * done) / steps.length}%` : "0";
    const list = el(
      "ol",
      { class: "plan" },
      steps.map((step) => {
        const [label, tone, mark] = STEP_STATUS[step.status] || [step.status, "muted", "·"];
        return el("li", { class: `step ${tone}` }, el("span", { class: "step-mark", "aria-hidden": "true", text: mark }), el("span", { class: "step-title", text: step.title }), el("span", { class: `step-status ${tone}`, text: label }));
      }),
    );
    fill(body, bar, list);
  }

  function renderArtifacts(run) {
    const artifacts = (run.view && Array.isArray(run.view.artifacts) && run.view.artifacts) || [];
    const key = JSON.stringify(artifacts);
    if (key === run.artifactKey) return;
    run.artifactKey = key;
    const { node, count, body } = run.dom.artifacts;
    node.hidden = artifacts.length === 0;
    count.textContent = artifacts.length ? String(artifacts.length) : "";
    fill(
      body,
      el(
        "ul",
        { class: "artifacts" },
        artifacts.map((artifact) => {
          const href = `/api/runs/${encodeURIComponent(run.id)}/artifacts/${encodeURIComponent(artifact.id)}`;
          return el(
            "li",
            { class: "artifact" },
            el("div", { class: "artifact-top" }, el("code", { class: "artifact-id", text: artifact.id }), el("a", { href, download: String(artifact.id), class: "download", text: "Download" })),
            artifact.summary ? el("div", { class: "artifact-summary", text: artifact.summary }) : null,
            el("div", { class: "artifact-meta" }, el("span", { text: artifact.media_type || "unknown type" }), el("span", { text: formatBytes(artifact.size_bytes) }), artifact.sha256 ? el("code", { title: `sha256 ${artifact.sha256}`, text: `sha256 ${String(artifact.sha256).slice(0, 12)}…` }) : null),
          );
        }),
      ),
    );
  }

  function meter(label, used, limit, format) {
    const has = typeof limit === "number" && limit > 0;
    const share = has && typeof used === "number" ? Math.min(1, used / limit) : 0;
    const tone = share >= 1 ? "bad" : share >= 0.8 ? "warn" : "run";
    const bar = el("div", { class: "bar" }, el("span", { class: `bar-fill ${tone}` }));
    bar.firstChild.style.width = `${(share * 100).toFixed(1)}%`;
    return el(
      "div",
      { class: "meter" },
      el("div", { class: "meter-top" }, el("span", { class: "meter-label", text: label }), el("span", { class: "meter-value" }, format(used), el("span", { class: "muted", text: has ? ` / ${format(limit)}` : " · no limit" }))),
      has ? bar : null,
    );
  }

  function renderBudgets(run) {
    if (!run.dom) return;
    const v = run.view || {};
    // The run's own budgets where it reports them, the server's for the rest.
    const limits = { ...(state.limits || {}) };
    for (const [name, value] of Object.entries(v.limits || {})) {
      if (typeof value === "number") limits[name] = value;
    }
    const usage = v.usage || {};
    const inputTokens = Math.max(usage.input_tokens || 0, (run.tokens && run.tokens.input) || 0);
    const outputTokens = Math.max(usage.output_tokens || 0, (run.tokens && run.tokens.output) || 0);
    const maxIterations = limits.max_iterations || run.maxIterations;
    const meters = [
      meter("Input tokens", inputTokens, limits.max_input_tokens, formatCount),
      meter("Output tokens", outputTokens, limits.max_output_tokens, formatCount),
      meter("Tool calls", run.calls.size, limits.max_tool_calls, formatCount),
      meter("Iterations", run.iterations, maxIterations, formatCount),
    ];
    if (typeof usage.cost_usd === "number" || limits.max_cost_usd) {
      meters.push(meter("Est. cost", typeof usage.cost_usd === "number" ? usage.cost_usd : undefined, limits.max_cost_usd, formatUsd));
    }
    if (limits.max_runtime_seconds) {
      let seconds = run.durationMs !== null ? run.durationMs / 1000 : undefined;
      if (seconds === undefined && v.created_at && v.status === "running") seconds = Math.max(0, (Date.now() - Date.parse(v.created_at)) / 1000);
      meters.push(meter("Runtime", seconds, limits.max_runtime_seconds, (s) => (typeof s === "number" ? formatDuration(s * 1000) : "–")));
    }
    const { count, body } = run.dom.budgets;
    count.textContent = v.limits ? "this run's" : "";
    fill(body, meters);
  }

  // Tool calls, keyed by call_id: a row is made once and updated, never rebuilt.
  function upsertCall(run, callId, update) {
    const key = String(callId || `#${run.calls.size}`);
    let call = run.calls.get(key);
    if (!call) {
      call = { id: key, status: "running" };
      call.row = el("li", { class: "call" });
      run.calls.set(key, call);
      run.dom.calls.body.firstChild.append(call.row);
      run.dom.emptyCalls.hidden = true;
    }
    Object.assign(call, update);
    renderCall(call);
    const failed = [...run.calls.values()].filter((candidate) => candidate.status === "failed").length;
    run.dom.calls.count.textContent = `${run.calls.size}${failed ? ` · ${failed} failed` : ""}`;
  }

  const CALL_STATUS = {
    running: ["Running", "run"],
    waiting: ["Approval", "warn"],
    ok: ["OK", "ok"],
    failed: ["Failed", "bad"],
  };

  function renderCall(call) {
    const [label, tone] = CALL_STATUS[call.status] || [call.status, "muted"];
    const args = summarizeArgs(call.args);
    const notes = [];
    if (call.error_class) notes.push(call.error_class);
    if (call.artifact_count) notes.push(`${call.artifact_count} artifact${call.artifact_count === 1 ? "" : "s"}`);
    if (call.truncated) notes.push(`truncated${typeof call.observed_chars === "number" ? ` from ${formatCount(call.observed_chars)} chars` : ""}`);
    call.row.className = `call ${tone}`;
    fill(
      call.row,
      badge(label, tone, call.status === "running"),
      el("span", { class: "call-tool", text: call.tool || "?" }),
      el("span", { class: "call-args", text: args || "—" }),
      el("span", { class: "call-num call-duration", title: "duration", text: call.duration_ms !== undefined ? formatDuration(call.duration_ms) : "" }),
      el("span", { class: "call-num call-size", title: "result size", text: call.result_bytes !== undefined ? formatBytes(call.result_bytes) : "" }),
      el("span", { class: "call-meta" }, el("code", { text: call.id }), call.iteration ? ` · iteration ${call.iteration}` : "", notes.length ? ` · ${notes.join(" · ")}` : ""),
    );
  }

  // A child's result status, or the parent's word for how it ended (events.md §3).
  const SUBAGENT_STATUS = {
    success: ["Succeeded", "ok"],
    completed: ["Completed", "ok"],
    budget_exceeded: ["Budget exceeded", "warn"],
    timeout: ["Timed out", "warn"],
    cancelled: ["Cancelled", "muted"],
    killed_flood: ["Killed (output flood)", "bad"],
    no_result: ["No result", "bad"],
    error: ["Failed", "bad"],
  };

  function upsertSubagent(run, taskId, update) {
    const key = String(taskId);
    let sub = run.subagents.get(key);
    if (!sub) {
      sub = { id: key, status: "running" };
      sub.row = el("li", { class: "subagent" });
      run.subagents.set(key, sub);
      run.dom.subagents.body.firstChild.append(sub.row);
      run.dom.subagents.node.hidden = false;
    }
    Object.assign(sub, update);
    const finished = sub.status !== "running";
    const [label, tone] = !finished ? ["Running", "run"] : SUBAGENT_STATUS[sub.status] || [String(sub.status).replaceAll("_", " "), "bad"];
    const facts = [];
    if (sub.depth !== undefined) facts.push(`depth ${sub.depth}`);
    if (typeof sub.iterations === "number") facts.push(`${sub.iterations} iterations`);
    if (typeof sub.tokens_used === "number") facts.push(`${formatTokens(sub.tokens_used)} tokens`);
    if (typeof sub.duration_seconds === "number") facts.push(formatDuration(sub.duration_seconds * 1000));
    else if (sub.timeout_seconds) facts.push(`timeout ${formatDuration(sub.timeout_seconds * 1000)}`);
    if (sub.artifact_count) facts.push(`${sub.artifact_count} artifacts`);
    fill(sub.row, badge(label, tone, !finished), el("code", { class: "subagent-id", text: sub.id }), el("span", { class: "muted", text: facts.join(" · ") }));
    const running = [...run.subagents.values()].filter((candidate) => candidate.status === "running").length;
    run.dom.subagents.count.textContent = `${run.subagents.size}${running ? ` · ${running} running` : ""}`;
  }

  function addActivity(run, tone, text, timestamp) {
    run.activity.push({ tone, text, timestamp });
    const { node, count, body } = run.dom.activity;
    node.hidden = false;
    count.textContent = String(run.activity.length);
    let list = body.firstChild;
    if (!list) {
      list = el("ol", { class: "activity" });
      body.append(list);
    }
    list.append(el("li", { class: `activity-item ${tone}` }, el("span", { class: "activity-time", text: formatClock(timestamp) }), el("span", { text })));
  }

  // Approvals: a card per approval_id, answered with the buttons; resolved in place.
  function upsertApproval(run, data, tool) {
    const key = String(data.approval_id);
    let approval = run.approvals.get(key);
    if (!approval) {
      approval = { id: data.approval_id, decision: null };
      approval.card = el("article", { class: "approval", "aria-label": "Approval request" });
      run.approvals.set(key, approval);
      run.dom.approvals.append(approval.card);
    }
    if (tool) approval.tool = tool;
    for (const field of ["call_id", "class", "summary", "detail", "allow_for_run"]) {
      if (data[field] !== undefined) approval[field] = data[field];
    }
    if (approval.call_id && run.calls.has(String(approval.call_id)) && !approval.decision) {
      upsertCall(run, approval.call_id, { status: "waiting" });
    }
    renderApproval(run, approval);
  }

  const DECISIONS = {
    allow: ["Allowed", "ok"],
    allow_for_run: ["Allowed for this run", "ok"],
    deny: ["Denied", "bad"],
    closed: ["Closed: the run ended", "muted"],
  };

  function renderApproval(run, approval) {
    const card = approval.card;
    const resolved = Boolean(approval.decision);
    card.className = `approval${resolved ? " resolved" : ""}`;
    const head = el(
      "div",
      { class: "approval-head" },
      resolved ? badge(...(DECISIONS[approval.decision] || [approval.decision, "muted"])) : badge("Needs approval", "warn", true),
      el("span", { class: "approval-tool", text: approval.tool || "a tool" }),
      approval.class ? el("code", { class: "approval-class", text: approval.class }) : null,
      resolved && approval.by ? el("span", { class: "muted", text: approval.by === "expired" ? "no answer in time" : approval.by === "client" ? "answered" : approval.by }) : null,
    );
    const parts = [head];
    const summary = typeof approval.summary === "string" ? approval.summary : "";
    const detail = typeof approval.detail === "string" ? approval.detail : "";
    // "Run <command>" over the command itself: the verb as a label, the command once, in full.
    const firstLine = detail.split("\n")[0];
    const verb = detail && summary.endsWith(firstLine) && summary.length - firstLine.length <= 24 ? summary.slice(0, summary.length - firstLine.length).trim() : null;
    if (verb !== null) {
      if (verb) parts.push(el("p", { class: "approval-verb", text: verb }));
    } else if (summary) {
      parts.push(el("p", { class: "approval-summary", text: summary }));
    } else if (!approval.tool) {
      parts.push(el("p", { class: "approval-summary muted", text: `Approval ${approval.id}: its details were dropped from the event log.` }));
    }
    if (detail && detail !== summary) parts.push(el("pre", { class: "approval-detail", text: detail }));
    if (!resolved) {
      const answer = (decision) => () => answerApproval(run, approval, decision);
      const buttons = [el("button", { type: "button", class: "primary", "data-decision": "allow", text: "Allow", disabled: approval.sending || undefined, on: { click: answer("allow") } })];
      if (approval.allow_for_run) {
        buttons.push(el("button", { type: "button", "data-decision": "allow_for_run", text: "Allow for this run", disabled: approval.sending || undefined, on: { click: answer("allow_for_run") } }));
      }
      buttons.push(el("button", { type: "button", class: "danger", "data-decision": "deny", text: "Deny", disabled: approval.sending || undefined, on: { click: answer("deny") } }));
      parts.push(el("div", { class: "approval-actions" }, buttons, approval.error ? el("span", { class: "form-error", role: "alert", text: approval.error }) : null));
    }
    fill(card, parts);
  }

  async function answerApproval(run, approval, decision) {
    const hadFocus = approval.card.contains(document.activeElement);
    approval.sending = true;
    approval.error = null;
    renderApproval(run, approval);
    try {
      await api("POST", `/api/runs/${encodeURIComponent(run.id)}/approvals/${encodeURIComponent(approval.id)}`, { decision });
      if (!approval.decision) resolveApproval(run, { approval_id: approval.id, decision, by: "client" });
    } catch (refused) {
      approval.sending = false;
      approval.error = refused.status === 409 ? "No longer waiting (answered elsewhere, expired, or the run ended)." : refused.message;
      renderApproval(run, approval);
    }
    if (hadFocus) {
      // Keyboard users land on the next waiting card, else on the run's title.
      const next = [...run.approvals.values()].find((candidate) => !candidate.decision);
      const target = next ? next.card.querySelector("button") : run.dom.title;
      if (target) target.focus();
    }
  }

  function resolveApproval(run, data) {
    const approval = run.approvals.get(String(data.approval_id));
    if (!approval) return;
    approval.decision = data.decision;
    if (data.by) approval.by = data.by;
    approval.sending = false;
    if (approval.call_id) {
      const call = run.calls.get(String(approval.call_id));
      if (call && call.status === "waiting") upsertCall(run, approval.call_id, { status: "running" });
    }
    renderApproval(run, approval);
  }

  // Elicitations: an MCP server asking for input. A card per elicitation_id with the form (its
  // defaults filled in) or the URL (opened only by the person's click), answered with Accept,
  // Decline or Cancel; the server checks the answer and a refusal shows on the card.
  function upsertElicitation(run, data) {
    const key = String(data.elicitation_id);
    if (run.elicitations.has(key)) return;
    const elicitation = { id: data.elicitation_id, data, action: null, inputs: [] };
    elicitation.card = el("article", { class: "approval elicitation", "aria-label": "Request for input" });
    run.elicitations.set(key, elicitation);
    run.dom.approvals.append(elicitation.card);
    buildElicitation(run, elicitation);
  }

  const FORMATS = { email: "email", uri: "url", date: "date" };

  /** One input of a form field, its default filled in; `read()` gives its value or undefined. */
  function fieldInput(field, id) {
    const hasDefault = field.default !== undefined && field.default !== null;
    const options = Array.isArray(field.options) ? field.options : null;
    if (field.type === "boolean") {
      const input = el("input", { type: "checkbox", id, name: field.name });
      input.checked = field.default === true;
      return { node: input, read: () => input.checked };
    }
    if (options) {
      const multiple = field.type === "array";
      const select = el("select", { id, name: field.name, multiple: multiple || undefined });
      if (!multiple) select.append(el("option", { value: "", text: field.required ? "Choose…" : "(none)" }));
      const chosen = multiple ? (Array.isArray(field.default) ? field.default : []) : [field.default];
      for (const option of options) {
        const node = el("option", { value: String(option.value), text: option.label || option.value });
        node.selected = chosen.includes(option.value);
        select.append(node);
      }
      if (!multiple && !hasDefault) select.value = "";
      const read = multiple
        ? () => [...select.selectedOptions].map((option) => option.value)
        : () => (select.value === "" ? undefined : select.value);
      return { node: select, read };
    }
    if (field.type === "integer" || field.type === "number") {
      const input = el("input", { type: "number", id, name: field.name, step: field.type === "integer" ? "1" : "any", min: field.minimum, max: field.maximum });
      if (hasDefault) input.value = String(field.default);
      const read = () => {
        const text = input.value.trim();
        if (text === "") return undefined;
        const number = Number(text);
        return Number.isFinite(number) ? number : text;
      };
      return { node: input, read };
    }
    const input = el("input", { type: FORMATS[field.format] || "text", id, name: field.name, maxlength: field.max_length });
    if (hasDefault) input.value = String(field.default);
    return { node: input, read: () => (input.value === "" && !field.required ? undefined : input.value) };
  }

  function buildElicitation(run, elicitation) {
    const data = elicitation.data;
    elicitation.badge = badge("Needs input", "warn", true);
    const parts = [el("div", { class: "approval-head" }, elicitation.badge, el("span", { class: "approval-tool", text: data.server || "an MCP server" }), el("code", { class: "approval-class", text: data.mode === "url" ? "url" : "form" }))];
    if (typeof data.message === "string" && data.message) parts.push(el("p", { class: "approval-summary", text: data.message }));
    if (data.mode === "url") {
      let safe = null;
      try {
        const parsed = new URL(String(data.url));
        if (parsed.protocol === "https:" || parsed.protocol === "http:") safe = parsed.href;
      } catch {
        safe = null;
      }
      parts.push(el("p", { class: "elicitation-host" }, "Opens a page on ", el("strong", { text: data.host || "?" })));
      parts.push(el("pre", { class: "approval-detail", text: String(data.url || "") }));
      if (safe) parts.push(el("p", {}, el("a", { class: "elicitation-open", href: safe, target: "_blank", rel: "noopener noreferrer", text: "Open" })));
    } else {
      const form = el("div", { class: "elicitation-form" });
      (Array.isArray(data.fields) ? data.fields : []).forEach((field, index) => {
        const id = `elicit-${elicitation.id}-${index}`;
        const input = fieldInput(field, id);
        elicitation.inputs.push({ field, read: input.read });
        const label = el("label", { for: id, text: `${field.label || field.name}${field.required ? " *" : ""}` });
        const row = el("div", { class: `elicitation-field${field.type === "boolean" ? " check" : ""}` }, field.type === "boolean" ? [input.node, label] : [label, input.node]);
        if (field.description) row.append(el("p", { class: "muted elicitation-description", text: field.description }));
        form.append(row);
      });
      parts.push(form);
    }
    const answer = (action) => () => answerElicitation(run, elicitation, action);
    elicitation.error = el("span", { class: "form-error", role: "alert" });
    elicitation.buttons = [
      el("button", { type: "button", class: "primary", "data-elicitation-action": "accept", text: "Accept", on: { click: answer("accept") } }),
      el("button", { type: "button", "data-elicitation-action": "decline", text: "Decline", on: { click: answer("decline") } }),
      el("button", { type: "button", class: "danger", "data-elicitation-action": "cancel", text: "Cancel", on: { click: answer("cancel") } }),
    ];
    elicitation.actions = el("div", { class: "approval-actions" }, elicitation.buttons, elicitation.error);
    parts.push(elicitation.actions);
    fill(elicitation.card, parts);
  }

  async function answerElicitation(run, elicitation, action) {
    const body = { action };
    if (action === "accept" && elicitation.data.mode !== "url") {
      const content = {};
      for (const { field, read } of elicitation.inputs) {
        const value = read();
        if (value !== undefined && !(Array.isArray(value) && value.length === 0 && !field.required)) content[field.name] = value;
      }
      body.content = content;
    }
    for (const button of elicitation.buttons) button.disabled = true;
    elicitation.error.textContent = "";
    try {
      await api("POST", `/api/runs/${encodeURIComponent(run.id)}/elicitations/${encodeURIComponent(elicitation.id)}`, body);
      if (!elicitation.action) resolveElicitation(run, { elicitation_id: elicitation.id, action, by: "client" });
    } catch (refused) {
      for (const button of elicitation.buttons) button.disabled = false;
      elicitation.error.textContent = refused.status === 409 ? "No longer waiting (answered elsewhere, expired, or the run ended)." : refused.message;
    }
  }

  const ELICITATION_ACTIONS = {
    accept: ["Accepted", "ok"],
    decline: ["Declined", "bad"],
    cancel: ["Cancelled", "muted"],
    closed: ["Closed: the run ended", "muted"],
  };

  function resolveElicitation(run, data) {
    const elicitation = run.elicitations.get(String(data.elicitation_id));
    if (!elicitation || elicitation.action) return;
    elicitation.action = data.action;
    elicitation.card.className = "approval elicitation resolved";
    for (const control of elicitation.card.querySelectorAll("input, select, button")) control.disabled = true;
    const [label, tone] = ELICITATION_ACTIONS[data.action] || [String(data.action), "muted"];
    const by = data.by === "expired" ? "no answer in time" : data.by === "client" ? "answered" : null;
    const resolved = badge(label, tone);
    elicitation.badge.replaceWith(resolved);
    elicitation.badge = resolved;
    fill(elicitation.actions, by ? el("span", { class: "muted", text: by }) : null);
  }

  // ---------------------------------------------------------------------------------------------
  // The event stream.

  function openStream(run) {
    if (run.ended || state.selected !== run) return;
    const source = new EventSource(`/api/runs/${encodeURIComponent(run.id)}/events`);
    run.source = source;
    source.onopen = () => {
      if (run.source !== source) return;
      run.stream = "live";
      renderStreamState(run);
    };
    source.onmessage = (message) => {
      if (run.source !== source) return;
      let event;
      try {
        event = JSON.parse(message.data);
      } catch {
        return;
      }
      const seq = Number(message.lastEventId) || 0;
      // A stream opened afresh replays from the start: what was seen is skipped.
      if (seq && seq <= run.lastSeq) return;
      if (seq) run.lastSeq = seq;
      onEvent(run, event);
    };
    source.addEventListener("lost", (message) => {
      let lost = 0;
      try {
        lost = Number(JSON.parse(message.data).lost) || 0;
      } catch {
        lost = 0;
      }
      run.lost += lost;
      addActivity(run, "warn", `${lost} event${lost === 1 ? "" : "s"} dropped from the server's buffer: the lists above may miss some.`, new Date().toISOString());
    });
    source.onerror = () => {
      if (run.source !== source || run.ended) return;
      if (source.readyState === EventSource.CLOSED) {
        // The browser gave up (an error status): a fresh stream in a moment, seen events skipped.
        source.close();
        run.source = null;
        run.stream = "lost";
        clearTimeout(run.reconnectTimer);
        run.reconnectTimer = setTimeout(() => openStream(run), 3000);
      } else {
        run.stream = "reconnecting";
      }
      renderStreamState(run);
      // The run may be over (its stream ends then): the view says so, and the stream closes.
      refreshView(run);
    };
  }

  function closeStream(run) {
    clearTimeout(run.reconnectTimer);
    clearTimeout(run.viewTimer);
    run.viewTimer = 0;
    if (run.source) {
      run.source.close();
      run.source = null;
    }
  }

  function endStream(run) {
    run.ended = true;
    closeStream(run);
    run.stream = "ended";
    renderStreamState(run);
  }

  function onEvent(run, event) {
    run.events += 1;
    const data = event.data && typeof event.data === "object" ? event.data : {};
    switch (event.type) {
      case "run_started":
        run.model = typeof data.model === "string" ? data.model : null;
        run.maxIterations = data.max_iterations;
        renderHead(run);
        renderBudgets(run);
        break;
      case "tool_call_started": {
        // serve's approval_requested can overtake the runtime's queued events: the call may
        // already be waiting.
        const asking = [...run.approvals.values()].some((approval) => !approval.decision && approval.call_id === data.call_id);
        upsertCall(run, data.call_id, { tool: event.tool, iteration: event.iteration, args: data.args_summary, status: asking ? "waiting" : "running" });
        renderBudgets(run);
        break;
      }
      case "tool_call_completed":
        upsertCall(run, data.call_id, { tool: event.tool, status: "ok", duration_ms: data.duration_ms, result_bytes: data.result_bytes, artifact_count: data.artifact_count, truncated: data.truncated, observed_chars: data.observed_chars });
        break;
      case "tool_call_failed":
        upsertCall(run, data.call_id, { tool: event.tool, status: "failed", duration_ms: data.duration_ms, error_class: data.error_class });
        break;
      case "plan_created":
      case "plan_updated":
        refreshViewSoon(run);
        break;
      case "subagent_spawned":
        upsertSubagent(run, data.task_id, { depth: data.depth, timeout_seconds: data.timeout_seconds, status: "running" });
        break;
      case "subagent_completed":
        upsertSubagent(run, data.task_id, { status: data.status || "completed", iterations: data.iterations, duration_seconds: data.duration_seconds, tokens_used: data.tokens_used, artifact_count: data.artifact_count });
        break;
      case "subagent_denied":
        addActivity(run, "warn", `A sub-agent was denied ${event.tool || "a tool"} (${data.class || "policy"}).`, event.timestamp);
        break;
      case "subagent_concurrency_wait":
        addActivity(run, "muted", `A sub-agent waited ${formatDuration(data.waited_ms)} for a slot.`, event.timestamp);
        break;
      case "iteration_completed":
        run.iterations = Math.max(run.iterations, event.iteration || 0);
        run.tokens = { input: data.input_tokens, output: data.output_tokens };
        renderBudgets(run);
        refreshViewSoon(run);
        break;
      case "budget_exceeded":
        addActivity(run, "bad", `Budget ${data.limit_name} exhausted: ${data.observed} of ${data.limit}.`, event.timestamp);
        break;
      case "context_trimmed":
        addActivity(run, "muted", `Context trimmed (${data.mode}): ${data.dropped_groups || 0} groups dropped, ${data.truncated_results || 0} results cut.`, event.timestamp);
        break;
      case "mcp_server_started":
        addActivity(run, "ok", `MCP server ${data.server} connected: ${data.tools} tools in ${formatDuration(data.duration_ms)}.`, event.timestamp);
        break;
      case "mcp_server_failed":
        addActivity(run, "bad", `MCP server ${data.server} failed (${data.error_class}).`, event.timestamp);
        break;
      case "mcp_server_restarted":
        addActivity(run, "warn", `MCP server ${data.server} restarted (${data.restarts} so far).`, event.timestamp);
        break;
      case "approval_requested":
        upsertApproval(run, data, event.tool);
        refreshViewSoon(run);
        refreshRunsSoon();
        break;
      case "approval_resolved":
        resolveApproval(run, data);
        refreshViewSoon(run);
        refreshRunsSoon();
        break;
      case "elicitation_requested":
        upsertElicitation(run, data);
        refreshViewSoon(run);
        refreshRunsSoon();
        break;
      case "elicitation_resolved":
        resolveElicitation(run, data);
        refreshViewSoon(run);
        refreshRunsSoon();
        break;
      case "run_completed":
        run.durationMs = data.duration_ms;
        run.tokens = { input: data.input_tokens, output: data.output_tokens };
        endStream(run);
        refreshView(run);
        refreshRuns();
        break;
      case "run_failed":
        run.durationMs = data.duration_ms;
        run.failureClass = data.error_class || null;
        endStream(run);
        refreshView(run);
        refreshRuns();
        break;
      default:
        // Consumers ignore event types they do not know (events.md).
        break;
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Start.

  function init() {
    byId("start-form").addEventListener("submit", startRun);
    byId("task").addEventListener("keydown", (event) => {
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
        event.preventDefault();
        byId("start-form").requestSubmit();
      }
    });
    byId("session-chip-clear").addEventListener("click", () => setFollowUp(null));
    window.addEventListener("hashchange", routeFromHash);
    document.addEventListener("visibilitychange", () => {
      if (!document.hidden) refreshRuns();
    });
    // Ages and the runtime meter move with the clock.
    setInterval(() => {
      if (document.hidden) return;
      for (const run of state.runs) {
        const item = listItems.get(run.run_id);
        const age = item && item.querySelector(".run-item-age");
        if (age) age.textContent = formatAge(run.created_at);
      }
      const run = state.selected;
      const started = run && run.view && run.dom.meta.querySelector(".run-started");
      if (started) started.textContent = `${formatClock(run.view.created_at)} (${formatAge(run.view.created_at)})`;
      if (run && run.view && run.view.status === "running") renderBudgets(run);
    }, 5000);
    renderConnection();
    loadLimits();
    refreshRuns();
    routeFromHash();
  }

  init();
})();
