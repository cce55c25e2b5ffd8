// The browser app. It reads the boot data the server put in the page, calls the unary API
// (`POST /api/<method>` in the reference's envelope, with the CSRF header) and renders what
// this version serves: the host's description and the stored sessions, grouped by directory.

const boot = JSON.parse(document.getElementById("boot").textContent);
let rpcCount = 0;

async function call(method, payload = {}) {
  const rpcId = `r${++rpcCount}`;
  const response = await fetch(`/api/${method}`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-dsh-csrf": boot.csrf },
    body: JSON.stringify({ type: "client-request", rpcId, method, payload }),
  });
  if (!response.ok) {
    throw new Error(`${method}: HTTP ${response.status}: ${await response.text()}`);
  }
  const body = await response.json();
  if (!body.result.ok) {
    const { code, message } = body.result.error;
    throw new Error(`${method}: ${code}: ${message}`);
  }
  return body.result.value;
}

function element(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (name === "class") node.className = value;
    else node.setAttribute(name, value);
  }
  for (const child of children) {
    node.append(typeof child === "string" ? document.createTextNode(child) : child);
  }
  return node;
}

function when(millis) {
  const date = new Date(millis);
  const today = new Date();
  return date.toDateString() === today.toDateString()
    ? date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })
    : date.toLocaleDateString([], { month: "short", day: "numeric" });
}

function renderSessions(sessions, filter) {
  const list = document.getElementById("sessions");
  const needle = filter.trim().toLowerCase();
  const shown = sessions.filter((s) => !needle || (s.title || s.id).toLowerCase().includes(needle));
  list.replaceChildren();
  if (shown.length === 0) {
    list.append(element("p", { class: "muted" }, sessions.length ? "No title matches." : "No sessions yet."));
    return;
  }
  const groups = new Map();
  for (const session of shown) {
    const key = session.cwd || "(no directory)";
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(session);
  }
  for (const [cwd, members] of groups) {
    const group = element("section", { class: "group" }, element("h2", { title: cwd }, cwd));
    for (const session of members) {
      group.append(
        element(
          "div",
          { class: "session", "data-session": session.id, title: session.id },
          element("span", { class: session.live ? "dot live" : "dot", "aria-label": session.live ? "open in this host" : "" }),
          element("span", { class: "title" }, session.title || session.id.slice(0, 8)),
          element("span", { class: "when" }, when(session.updatedAt)),
        ),
      );
    }
    list.append(group);
  }
}

function renderHost(host) {
  document.getElementById("version").textContent = `v${host.version}`;
  const hero = document.getElementById("hero");
  const facts = element(
    "dl",
    { class: "facts" },
    element("dt", {}, "Directory"), element("dd", {}, host.cwd || "-"),
    element("dt", {}, "Model"), element("dd", {}, host.defaultModel || "none configured"),
    element("dt", {}, "Providers"), element("dd", {}, host.providers.join(", ") || "none"),
  );
  const notice = element(
    "p",
    { class: "notice" },
    "This version serves the session list and the host's description. The chat is not built yet: run a turn with ",
    element("code", {}, 'dsh-host --profile headless "your task"'),
    " and it appears here.",
  );
  hero.replaceChildren(element("h1", {}, "dsh"), facts, notice);
}

function fail(error) {
  const hero = document.getElementById("hero");
  hero.append(element("p", { class: "notice error", role: "alert" }, String(error.message || error)));
}

async function start() {
  const host = await call("host.describe");
  renderHost(host);
  const { sessions } = await call("session.list");
  const search = document.getElementById("search");
  renderSessions(sessions, search.value);
  search.addEventListener("input", () => renderSessions(sessions, search.value));
}

start().catch(fail);
