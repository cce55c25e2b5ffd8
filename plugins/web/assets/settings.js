// The settings dialog (General, Models, Presets, Plugins, About, in tabs the arrows move
// through) and the theme.

import { element, tokens } from "./render.js";
import { renderHero } from "./start-page.js";
import { loadModels } from "./composer.js";
import { $, call, fail, state, toast } from "./core.js";
import { renderPresetSettings } from "./presets.js";
import { renderProviderSettings, wireProviders } from "./providers.js";

// ---- theme -------------------------------------------------------------------------------

export function applyTheme(theme) {
  if (theme === "system") document.documentElement.removeAttribute("data-theme");
  else document.documentElement.dataset.theme = theme;
  $("theme").textContent = { system: "◐", light: "☀", dark: "☾" }[theme];
  $("theme").title = `Theme: ${theme}`;
}
function setTheme(theme) {
  localStorage.setItem("dsh-theme", theme);
  applyTheme(theme);
  for (const radio of document.querySelectorAll('input[name="theme"]')) radio.checked = radio.value === theme;
}
export function cycleTheme() {
  const order = ["system", "light", "dark"];
  setTheme(order[(order.indexOf(localStorage.getItem("dsh-theme") || "system") + 1) % 3]);
}

// What Enter does while a turn runs: queue the prompt for the next turn (the default) or steer
// the running one.
export function enterWhileBusy() {
  return localStorage.getItem("dsh-enter-busy") === "steer" ? "steer" : "queue";
}


// ---- settings --------------------------------------------------------------------------

// The settings' tabs: arrows move between them, as a tab list does.
function showTab(id) {
  for (const tab of document.querySelectorAll('#settings [role="tab"]')) {
    const chosen = tab.id === id;
    tab.setAttribute("aria-selected", String(chosen));
    tab.tabIndex = chosen ? 0 : -1;
    $(tab.getAttribute("aria-controls")).hidden = !chosen;
  }
}

function wireTabs() {
  const tabs = [...document.querySelectorAll('#settings [role="tab"]')];
  tabs.forEach((tab, index) => {
    tab.addEventListener("click", () => showTab(tab.id));
    tab.addEventListener("keydown", (event) => {
      const step = { ArrowRight: 1, ArrowLeft: -1 }[event.key];
      if (!step) return;
      event.preventDefault();
      const next = tabs[(index + step + tabs.length) % tabs.length];
      showTab(next.id);
      next.focus();
    });
  });
  for (const radio of document.querySelectorAll('input[name="theme"]')) radio.addEventListener("change", () => setTheme(radio.value));
  $("enter-busy").addEventListener("change", () => localStorage.setItem("dsh-enter-busy", $("enter-busy").value));
}

export async function openSettings() {
  const theme = localStorage.getItem("dsh-theme") || "system";
  for (const radio of document.querySelectorAll('input[name="theme"]')) radio.checked = radio.value === theme;
  $("enter-busy").value = enterWhileBusy();
  const host = state.host || (await call("host.describe"));
  const facts = [
    ["Version", host.version],
    ["Profile", host.profile],
    ["Folder for new sessions", host.cwd],
    ["Providers", host.providers.join(", ") || "none"],
    ["Default model", host.defaultModel || "none usable"],
    ["Listening", host.remote ? "beyond this machine" : "on this machine only"],
  ];
  $("about").replaceChildren(...facts.flatMap(([name, value]) => [element("dt", {}, name), element("dd", {}, value)]));
  await renderModelList();
  const [credentials, settings] = await Promise.all([call("credentials.describe"), call("settings.describe")]);
  const key = credentials.credentials.find((credential) => credential.name === "DEEPSEEK_API_KEY");
  $("key-state").textContent = key?.stored ? "(stored)" : key?.inEnvironment ? "(from the environment)" : "(not set)";
  $("settings-url").value = settings.baseUrl || "";
  const writable = credentials.writable && settings.writable;
  await Promise.all([renderPresetSettings(writable), renderProviderSettings(), renderPlugins(writable)]);
  for (const id of ["settings-key", "save-key", "remove-key", "settings-url", "save-url"]) $(id).disabled = !writable;
  $("settings-note").textContent = writable
    ? "A stored key wins over the environment. An endpoint change reloads the model adapter; running turns keep theirs."
    : "This server listens beyond this machine: settings cannot be changed from here.";
  $("settings").showModal();
}

// ---- plugins -------------------------------------------------------------------------------

// The rows of the tree with their state, and a switch that turns a row off or on: written to the
// settings document (`$enabled` in the row's namespace), which the host lays over the profile and
// reloads, so the row stops or starts without a restart.
async function renderPlugins(writable) {
  const { plugins } = await call("host.plugins").catch(() => ({ plugins: [] }));
  $("plugin-list").replaceChildren(...plugins.map((row) => pluginItem(row, writable)));
}

function pluginItem(row, writable) {
  const off = row.state === "DISABLED";
  // The rows this page runs on are listed not switchable: turning one off would end the page.
  const fixed = row.switchable === false;
  return element(
    "li",
    { class: `plugin state-${row.state.toLowerCase()}`, "data-row": row.row },
    element("span", { class: "plugin-state" }, row.state),
    element("code", {}, row.row),
    row.plugin !== row.row ? element("span", { class: "muted" }, ` ${row.plugin}`) : null,
    fixed
      ? null
      : element(
          "button",
          {
            type: "button",
            class: "secondary plugin-toggle",
            disabled: !writable,
            title: fixed ? null : `${off ? "Start" : "Stop"} ${row.row} (kept in settings.yaml)`,
            onclick: () => setRowEnabled(row.row, off, writable),
          },
          off ? "Turn on" : "Turn off",
        ),
    row.waitingFor?.length ? element("div", { class: "muted small" }, `waits for ${row.waitingFor.join(", ")}`) : null,
    row.error ? element("div", { class: "plugin-error" }, row.error) : null,
  );
}

async function setRowEnabled(row, enabled, writable) {
  try {
    await call("host.setRowEnabled", { row, enabled });
  } catch (error) {
    return fail(error);
  }
  // The host reloads the row when it sees the file change: list again until the row shows it.
  for (let attempt = 0; attempt < 25; attempt++) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    const { plugins } = await call("host.plugins").catch(() => ({ plugins: [] }));
    const now = plugins.find((listed) => listed.row === row);
    if (now && (now.state === "DISABLED") !== enabled && now.state !== "LOADING" && now.state !== "UNLOADING") break;
  }
  toast(`${row} is ${enabled ? "on" : "off"}.`);
  await renderPlugins(writable);
}

// The models every adapter offers now (a provider added here among them).
async function renderModelList() {
  const models = await call("session.models", state.open ? { sessionId: state.open.id } : {}).catch(() => null);
  $("model-list").replaceChildren(
    ...(models?.models || []).map((model) =>
      element(
        "li",
        {},
        `${model.label} `,
        element("code", {}, model.route),
        model.contextWindow ? element("span", { class: "muted" }, ` · ${tokens(model.contextWindow)} context`) : null,
      ),
    ),
  );
  if (!$("model-list").children.length) $("model-list").append(element("li", { class: "muted" }, "No model is usable yet: add a key or an endpoint above."));
}

async function afterSettings(message) {
  toast(message);
  state.host = await call("host.describe");
  if (!state.open) renderHero(state.host);
  await loadModels(state.open?.id);
  await openSettings();
}

export function wireSettings() {
  wireTabs();
  wireProviders();
  document.addEventListener("dsh-models-changed", () => renderModelList().catch((e) => fail(e)));
  $("open-settings").addEventListener("click", () => openSettings().catch((e) => fail(e)));
  $("save-key").addEventListener("click", async () => {
    try {
      await call("credentials.set", { name: "DEEPSEEK_API_KEY", value: $("settings-key").value });
      $("settings-key").value = "";
      await afterSettings("The key is stored.");
    } catch (error) {
      fail(error);
    }
  });
  $("remove-key").addEventListener("click", async () => {
    try {
      await call("credentials.unset", { name: "DEEPSEEK_API_KEY" });
      await afterSettings("The stored key is removed.");
    } catch (error) {
      fail(error);
    }
  });
  $("save-url").addEventListener("click", async () => {
    try {
      const value = $("settings-url").value.trim();
      await call("settings.update", value ? { baseUrl: value } : {});
      await afterSettings(value ? "The endpoint is saved." : "Back to the default endpoint.");
    } catch (error) {
      fail(error);
    }
  });
}
