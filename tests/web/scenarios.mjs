// Browser scenarios of the web profile: `node scenarios.mjs SCENARIO AUTH_URL OUT_DIR`. Each
// drives Debian's chromium (through playwright-core) against a real dsh-host, fails on the
// first unmet expectation or on any console error in the page, and saves screenshots of the
// states it reaches under OUT_DIR.

import { writeFileSync } from "node:fs";
import { chromium } from "playwright-core";
import { editorScenarios } from "./editor.mjs";
import { effortScenarios } from "./effort.mjs";
import { exportScenarios } from "./export.mjs";
import { frameScenarios } from "./layout.mjs";
import { goalScenarios } from "./goal.mjs";
import { planScenarios } from "./plan.mjs";
import { pluginScenarios } from "./plugins.mjs";
import { presetScenarios } from "./presets.mjs";
import { providerScenarios } from "./providers.mjs";
import { imageScenarios } from "./images.mjs";
import { terminalScenarios } from "./terminal.mjs";
import { undoScenarios } from "./undo.mjs";

const [scenario, authUrl, outDir] = process.argv.slice(2);
const executablePath = process.env.DSH_CHROMIUM || "/usr/bin/chromium";
const problems = [];

function expect(condition, message) {
  if (!condition) throw new Error(`expectation failed: ${message}`);
}

async function shoot(page, name) {
  await page.screenshot({ path: `${outDir}/${scenario}-${name}.png`, fullPage: false });
}

async function themes(page, name) {
  for (const scheme of ["light", "dark"]) {
    await page.emulateMedia({ colorScheme: scheme });
    await shoot(page, `${name}-${scheme}`);
  }
  await page.emulateMedia({ colorScheme: "light" });
}

// Signs in, then opens session `id` by its address.
async function openSession(page, id) {
  await page.goto(authUrl);
  await page.waitForSelector(".hero h1");
  const target = new URL(page.url());
  target.hash = id;
  await page.goto("about:blank");
  await page.goto(target.toString());
  await page.waitForSelector("#chat:not([hidden])");
}

// For the benchmarks: the page opens the session DSH_BENCH_SESSION names and prompts it.
async function promptBenchSession(page) {
  await openSession(page, process.env.DSH_BENCH_SESSION);
  await page.waitForTimeout(300);
  await page.fill("#prompt", "go");
  await page.keyboard.press("Enter");
}

const scenarios = {
  // A prompt from the composer: the answer streams with its reasoning and a terminal card, the
  // page survives a reload with the same history, and works 390 px wide.
  async chat(page) {
    await page.goto(authUrl);
    await page.waitForSelector(".hero h1");
    await themes(page, "hero");
    await page.fill("#prompt", "run the shell");
    await page.keyboard.press("Enter");
    await page.waitForSelector(".message.user .bubble");
    await page.waitForSelector(".tool .tool-name");
    await page.waitForFunction(() =>
      [...document.querySelectorAll(".message.assistant")].some((node) => node.textContent.includes("It printed")),
    );
    await page.waitForSelector(".turn-end", { state: "attached" });
    const user = await page.textContent(".message.user .bubble");
    expect(user === "run the shell", `the user bubble says "${user}"`);
    const command = await page.textContent(".terminal .command");
    expect(command.includes("echo from-the-shell"), `the terminal card shows "${command}"`);
    // A successful card is collapsed; open it to look inside.
    await page.click(".tool summary");
    const output = await page.textContent(".terminal .output");
    expect(output.trim() === "from-the-shell", `the terminal output is "${output}"`);
    const pill = await page.textContent(".terminal .pill");
    expect(pill === "exit 0", `the exit pill says "${pill}"`);
    expect((await page.locator(".reasoning").count()) === 1, "one reasoning panel");
    await page.click(".reasoning summary");
    const thought = await page.textContent(".reasoning .thought");
    expect(thought.includes("The shell answered."), `the reasoning is "${thought}"`);
    await page.waitForSelector("#context-meter:not([hidden])");
    const meter = await page.textContent("#context-text");
    expect(meter.includes("% of 1000k"), `the context bar reads "${meter}"`);
    // The turn's time and first token under it; the session's cost under the composer.
    const turn = await page.textContent(".turn-end .turn-stats");
    expect(/^\d+\.\d s · first token \d+\.\d s/.test(turn), `the turn's figures read "${turn}"`);
    const stats = await page.textContent("#stats");
    expect(/^1 turn · 2 steps · model \d+\.\d s · tools \d+\.\d s · cache hit \d+% · \d+ in · \d+ out$/.test(stats), `the stats line reads "${stats}"`);
    await themes(page, "answered");
    const items = await page.locator("[data-item]").count();
    await page.reload();
    await page.waitForSelector(".message.assistant");
    const restored = await page.locator("[data-item]").count();
    expect(restored === items, `after a reload ${restored} items, before ${items}`);
    const reloaded = await page.textContent("#stats");
    expect(reloaded === stats, `after a reload the stats line reads "${reloaded}", before "${stats}"`);
    await page.setViewportSize({ width: 390, height: 844 });
    await shoot(page, "narrow");
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth + 1);
    expect(!overflow, "the page scrolls sideways at 390 px");
  },

  // A policy asks before the shell runs: the card is answerable, survives a reload still
  // pending, and allowing it runs the command.
  async approval(page) {
    await page.goto(authUrl);
    await page.waitForSelector(".hero h1");
    await page.fill("#prompt", "run it");
    await page.keyboard.press("Enter");
    await page.waitForSelector(".approval.pending");
    const ask = await page.textContent(".approval.pending .approval-ask");
    expect(ask.includes("Run bash?") && ask.includes("the policy asks"), `the card asks "${ask}"`);
    // The list marks the session as waiting for an answer, through a reload too.
    await page.waitForSelector("#sessions .dot.waiting");
    await themes(page, "pending");
    await page.reload();
    await page.waitForSelector(".approval.pending button.allow");
    await page.waitForSelector("#sessions .dot.waiting");
    // Answered by key, with nothing being typed.
    await page.click(".chat-title");
    await page.keyboard.press("y");
    await page.waitForSelector(".approval.decided");
    await page.waitForSelector("#sessions .dot.waiting", { state: "detached" });
    const outcome = await page.textContent(".approval.decided .approval-outcome");
    expect(outcome === "Allowed once", `the card says "${outcome}"`);
    await page.waitForSelector(".tool.tool-ok");
    await page.waitForFunction(() =>
      [...document.querySelectorAll(".message.assistant")].some((node) => node.textContent.includes("done")),
    );
    await shoot(page, "allowed");
  },

  // The model asks three questions (one choice, several, free text): the card waits through
  // a reload, an empty answer is refused, the answers reach the model, and the card then shows
  // them decided.
  async question(page) {
    await page.goto(authUrl);
    await page.waitForSelector(".hero h1");
    await page.fill("#prompt", "plan the service");
    await page.keyboard.press("Enter");
    await page.waitForSelector(".question.pending");
    const legends = await page.locator(".question.pending legend").allTextContents();
    expect(legends.length === 3 && legends[0].includes("Storage"), `the card asks ${JSON.stringify(legends)}`);
    expect((await page.locator(".question.pending [data-question=db] input[type=radio]").count()) === 2, "one choice: radios");
    expect((await page.locator(".question.pending [data-question=extras] input[type=checkbox]").count()) === 3, "several: checkboxes");
    await page.reload();
    await page.waitForSelector(".question.pending button.submit");
    await page.click(".question.pending button.submit");
    await page.waitForSelector(".toast");
    await page.waitForSelector(".question.pending button.submit:not([disabled])");
    await page.check(".question.pending [data-question=db] input[value=SQLite]");
    await page.check(".question.pending [data-question=extras] input[value=Metrics]");
    await page.check(".question.pending [data-question=extras] input[value=Backups]");
    await page.fill(".question.pending [data-question=name] .own-answer", "ledger");
    await themes(page, "pending");
    await page.click(".question.pending button.submit");
    await page.waitForSelector(".question.decided");
    const said = await page.locator(".question.decided .question-answer").allTextContents();
    expect(
      JSON.stringify(said) === JSON.stringify(["SQLite", "Metrics, Backups", "ledger"]),
      `the decided card shows ${JSON.stringify(said)}`,
    );
    await page.waitForFunction(() =>
      [...document.querySelectorAll(".message.assistant")].some((node) => node.textContent.includes("SQLite it is")),
    );
    // The call's own card says what it asked in words, never its raw JSON.
    const line = await page.textContent(".tool .tool-what");
    expect(line === "3 questions for you", `the question call's line reads "${line}"`);
    expect(!(await page.textContent(".tool")).includes('"questions"'), "the question call's card shows raw JSON");
    await themes(page, "answered");
  },

  // The same ask, rejected: the card says so, the tool does not run, and the model is told.
  async reject(page) {
    await page.goto(authUrl);
    await page.waitForSelector(".hero h1");
    await page.fill("#prompt", "run it");
    await page.keyboard.press("Enter");
    await page.waitForSelector(".approval.pending button.reject");
    await page.click(".approval.pending button.reject");
    await page.waitForSelector(".approval.decided");
    const outcome = await page.textContent(".approval.decided .approval-outcome");
    expect(outcome === "Rejected", `the card says "${outcome}"`);
    await page.waitForFunction(() =>
      [...document.querySelectorAll(".message.assistant")].some((node) => node.textContent.includes("not run")),
    );
    expect((await page.locator(".tool.tool-ok").count()) === 0, "a rejected call shows as run");
    // The card says why in words and shows no exit code the command never had.
    const why = await page.textContent(".tool.tool-error");
    expect(why.includes("rejected"), `the rejected card hides why it failed: "${why}"`);
    expect((await page.locator(".tool .pill.ok").count()) === 0, "a rejected command shows a green exit 0");
    const line = await page.textContent(".tool.tool-error summary");
    expect(line.includes("failed"), `the card's line says "${line}"`);
    await shoot(page, "rejected");
  },

  // Prompts sent while a turn runs: one steered into it from the composer, two queued; of the
  // queued, one is edited in its row and one removed. The page ends with what the model got.
  async queue(page) {
    await page.goto(authUrl);
    await page.waitForSelector(".hero h1");
    await page.fill("#prompt", "first");
    await page.keyboard.press("Enter");
    await page.waitForSelector("#steer:not([hidden])");
    await page.fill("#prompt", "steer me");
    await page.click("#steer");
    for (const text of ["queued later", "drop me"]) {
      await page.fill("#prompt", text);
      await page.keyboard.press("Enter");
    }
    await page.waitForFunction(() => document.querySelectorAll(".queue-row").length === 3);
    const kinds = await page.locator(".queue-row .queued-kind").allTextContents();
    expect(kinds.join(",") === "steering,queued,queued", `the queue rows are ${kinds}`);
    await shoot(page, "waiting");
    // The edit is opened first: the removal after it renders the queue anew, and the open
    // editor must survive that.
    await page.locator(".queue-row", { hasText: "queued later" }).getByRole("button", { name: "Edit" }).click();
    await page.waitForSelector(".queued-editor");
    await page.locator(".queue-row", { hasText: "drop me" }).getByRole("button", { name: "Remove" }).click();
    await page.waitForFunction(() => document.querySelectorAll(".queue-row").length === 2);
    expect(await page.isVisible(".queued-editor"), "the open editor vanished when the queue changed");
    await page.fill(".queued-editor", "queued, edited");
    await page.keyboard.press("Enter");
    await page.waitForFunction(() => {
      const rows = [...document.querySelectorAll(".queue-row.queued .queued-text")].map((node) => node.textContent);
      return rows.length === 1 && rows[0] === "queued, edited";
    });
    await themes(page, "edited");
    // The first step's command waits for this file (the scenario runs where the session works).
    writeFileSync("go", "");
    await page.waitForFunction(() => document.querySelectorAll(".turn-end").length === 2);
    const asked = await page.locator(".message.user .bubble").allTextContents();
    expect(asked.join("|") === "first|steer me|queued, edited", `the user bubbles are ${JSON.stringify(asked)}`);
    expect(await page.isHidden("#queue"), "the queue is shown empty");
  },

  // The server drops the event socket in the middle of a long answer: the page reconnects,
  // resumes after the last seq it applied, and ends with every chunk once, in order.
  async dropped(page) {
    let connections = 0;
    let droppedAfter = null;
    await page.routeWebSocket(/\/api\/events$/, (ws) => {
      connections += 1;
      const server = ws.connectToServer();
      if (connections !== 1) return;
      let updates = 0;
      server.onMessage((message) => {
        if (droppedAfter !== null) return;
        ws.send(message);
        if (JSON.parse(message).type === "session/update" && ++updates === 40) {
          droppedAfter = updates;
          ws.close({ code: 1011, reason: "dropped by the test" });
          server.close();
        }
      });
    });
    await page.goto(authUrl);
    await page.waitForSelector(".hero h1");
    await page.fill("#prompt", "count");
    await page.keyboard.press("Enter");
    await page.waitForSelector(".turn-end", { state: "attached", timeout: 60000 });
    expect(droppedAfter !== null && connections >= 2, `dropped after ${droppedAfter}, ${connections} connections`);
    const expected = process.env.DSH_EXPECTED_TEXT;
    const answer = (await page.textContent(".message.assistant")).replace(/\s+/g, " ").trim();
    expect(answer.includes(expected), `the answer reads "${answer}"`);
    await shoot(page, "resumed");
  },

  // The permission selector: a session started read-only cannot write; switched to the
  // workspace preset, its next command can.
  async preset(page) {
    await page.goto(authUrl);
    await page.waitForSelector(".hero h1");
    await page.selectOption("#preset", "read-only");
    await page.fill("#prompt", "make the file");
    await page.keyboard.press("Enter");
    await page.waitForFunction(() => document.querySelectorAll(".turn-end").length === 1);
    const refused = await page.textContent(".tool");
    expect(refused.includes("Read-only file system"), `the first card reads "${refused}"`);
    await shoot(page, "read-only");
    await page.selectOption("#preset", "workspace-write");
    await page.waitForSelector(".toast");
    await page.fill("#prompt", "again");
    await page.keyboard.press("Enter");
    await page.waitForFunction(() => document.querySelectorAll(".turn-end").length === 2);
    await page.reload();
    await page.waitForSelector(".message.assistant");
    const kept = await page.inputValue("#preset");
    expect(kept === "workspace-write", `after a reload the preset reads "${kept}"`);
  },

  // The `/` menu lists the commands; one picked from it runs instead of reaching the model,
  // and its answer shows in the conversation.
  async commands(page) {
    await page.goto(authUrl);
    await page.waitForSelector(".hero h1");
    await page.fill("#prompt", "/");
    await page.waitForSelector("#command-menu:not([hidden]) .command");
    const listed = await page.locator("#command-menu .command").allTextContents();
    expect(["/compact", "/help", "/model", "/permission"].every((name) => listed.some((row) => row.startsWith(name))), `the menu lists ${JSON.stringify(listed)}`);
    // From the keyboard: Escape closes the menu, arrows mark a command, Enter takes it.
    await page.keyboard.press("Escape");
    expect(await page.isHidden("#command-menu"), "Escape leaves the menu open");
    await page.fill("#prompt", "/perm");
    await page.waitForSelector("#command-menu:not([hidden]) .command");
    await page.keyboard.press("ArrowDown");
    await page.keyboard.press("Enter");
    expect((await page.inputValue("#prompt")) === "/permission ", "Enter takes the marked command");
    await page.fill("#prompt", "/he");
    await page.waitForFunction(() => document.querySelectorAll("#command-menu .command").length === 1);
    await shoot(page, "menu");
    await page.click("#command-menu .command");
    expect((await page.inputValue("#prompt")) === "/help ", "picking a command fills the composer");
    await page.keyboard.press("Enter");
    await page.waitForFunction(() => [...document.querySelectorAll(".notice")].some((node) => node.textContent.includes("/permission PRESET")));
    expect(await page.isHidden("#command-menu"), "the menu is still shown after the command ran");
    expect(await page.isHidden("#context-meter"), "an empty context bar is shown before any request");
    await themes(page, "help");
  },

  // No key: the page asks for one (and an endpoint); once saved, a prompt is answered.
  async onboarding(page) {
    await page.goto(authUrl);
    await page.waitForSelector("#onboarding");
    await themes(page, "no-key");
    await page.fill("#api-key", "sk-from-the-page");
    await page.fill("#onboarding-url", process.env.DSH_SERVER_URL);
    await page.click("#onboarding button[type=submit]");
    await page.waitForSelector("#ready");
    expect((await page.locator(".toast").count()) === 0, "saving the key and endpoint raised an error");
    const model = await page.textContent(".facts dd:nth-of-type(2)");
    expect(model.includes("deepseek"), `the model is "${model}"`);
    await page.fill("#prompt", "hello");
    await page.keyboard.press("Enter");
    await page.waitForFunction(() =>
      [...document.querySelectorAll(".message.assistant")].some((node) => node.textContent.includes("hi there")),
    );
    await shoot(page, "answered");
  },

  // No key, no network: the offline demo replays the recorded session, its shell call for real.
  async demo(page) {
    await page.goto(authUrl);
    await page.waitForSelector("#demo");
    await page.click("#demo");
    await page.waitForSelector(".tool .tool-name");
    await page.waitForFunction(() =>
      [...document.querySelectorAll(".message.assistant")].some((node) => node.textContent.includes("42")),
    );
    await page.click(".tool summary");
    const output = await page.textContent(".terminal .output");
    expect(output.trim() === "42", `the demo's shell printed "${output}"`);
    await themes(page, "replayed");
  },

  // A finished answer is forked from, the fork renamed in place, deleted, brought back with
  // Undo, and deleted again: the list follows.
  async manage(page) {
    page.on("dialog", () => problems.push("the page opened a native dialog"));
    await page.goto(authUrl);
    await page.waitForSelector(".hero h1");
    await page.fill("#prompt", "first");
    await page.keyboard.press("Enter");
    await page.waitForSelector(".turn-end", { state: "attached" });
    const original = await page.evaluate(() => window.location.hash);
    await page.hover(".message.assistant");
    await page.click(".message.assistant .fork-here");
    await page.waitForFunction(() => document.querySelectorAll(".session").length === 2);
    // The list can show the fork (the store's watcher) before the page has opened it: rename
    // only once the fork is the open session, or the original would be renamed instead.
    await page.waitForFunction((before) => window.location.hash !== before, original);
    await page.waitForSelector(".message.assistant");
    // The fork is marked as one, naming what it was forked from.
    const mark = await page.waitForSelector(".session .fork-mark", { timeout: 15000 });
    const from = await mark.getAttribute("title");
    expect(from.startsWith("Forked from"), `the fork's mark says "${from}"`);
    await page.click("#rename");
    await page.fill(".rename-box", "The fork, renamed");
    await page.keyboard.press("Enter");
    await page.waitForFunction(() => document.getElementById("title").textContent === "The fork, renamed");
    await page.waitForFunction(() =>
      [...document.querySelectorAll(".session .title")].some((node) => node.textContent === "The fork, renamed"),
    );
    await shoot(page, "renamed");
    const fork = await page.evaluate(() => location.hash);
    await page.click("#delete");
    await page.waitForFunction(() => document.querySelectorAll(".session").length === 1);
    await page.waitForSelector(".toast .toast-action");
    await shoot(page, "undo");
    await page.click(".toast .toast-action");
    await page.waitForFunction((wanted) => location.hash === wanted, fork);
    await page.waitForFunction(() => document.querySelectorAll(".session").length === 2);
    await page.waitForFunction(() => document.getElementById("title").textContent === "The fork, renamed");
    await page.click("#delete");
    await page.waitForFunction(() => document.querySelectorAll(".session").length === 1);
    expect(await page.isVisible("#hero"), "the hero is back after the open session was deleted");
    await shoot(page, "deleted");
  },

  // A long answer is cancelled mid-stream: what arrived stays, cut short, and the turn says so.
  async cancel(page) {
    await page.goto(authUrl);
    await page.waitForSelector(".hero h1");
    await page.fill("#prompt", "talk for a long time");
    await page.keyboard.press("Enter");
    await page.waitForFunction(() =>
      [...document.querySelectorAll(".message.assistant")].some((node) => node.textContent.includes("beginning")),
    );
    await page.waitForSelector("#cancel:not([hidden])");
    await page.keyboard.press("Escape");
    await page.waitForSelector(".turn-stop");
    const notice = await page.evaluate(() => {
      const node = document.querySelector(".turn-stop").cloneNode(true);
      node.querySelector(".turn-stats")?.remove();
      return node.textContent;
    });
    expect(notice === "Cancelled by you", `the turn end says "${notice}"`);
    const figures = await page.textContent(".turn-stop .turn-stats");
    expect(/^\d+\.\d s/.test(figures), `the cancelled turn's figures read "${figures}"`);
    const cut = await page.textContent(".message.assistant");
    expect(cut.includes("beginning") && cut.includes("cut short"), `the answer reads "${cut}"`);
    expect(await page.isHidden("#cancel"), "the cancel button is gone once the turn ended");
    await shoot(page, "cancelled");
  },

  // Two tabs on one session see the same stream, and an ask answered in one is decided in both.
  async tabs(page) {
    await page.goto(authUrl);
    await page.waitForSelector(".hero h1");
    await page.fill("#prompt", "run it");
    await page.keyboard.press("Enter");
    await page.waitForSelector(".approval.pending");
    const url = page.url();
    const other = await page.context().newPage();
    other.on("console", (message) => {
      if (message.type() === "error") problems.push(`second tab: console error: ${message.text()}`);
    });
    await other.goto(url);
    await other.waitForSelector(".approval.pending button.allow");
    await other.click(".approval.pending button.allow");
    for (const tab of [page, other]) {
      await tab.waitForSelector(".approval.decided");
      await tab.waitForFunction(() =>
        [...document.querySelectorAll(".message.assistant")].some((node) => node.textContent.includes("done")),
      );
      // The turn's end (with its figures) comes after the answer's text.
      await tab.waitForSelector(".turn-end", { state: "attached" });
    }
    const texts = await Promise.all([page, other].map((tab) => tab.textContent("#items")));
    expect(texts[0] === texts[1], "the two tabs show different conversations");
    await shoot(other, "second-tab");
  },

  // A file written by the agent shows as a diff card, open.
  async write(page) {
    await page.goto(authUrl);
    await page.waitForSelector(".hero h1");
    await page.fill("#prompt", "write the notes");
    await page.keyboard.press("Enter");
    await page.waitForSelector(".tool.tool-ok .diff");
    const path = await page.textContent(".tool .path");
    expect(path === "notes.txt +2 −0", `the diff names "${path}"`);
    const added = await page.locator(".tool >> nth=0 >> .diff .added .dt").allTextContents();
    expect(added.join("|") === "first line|second line", `the diff adds ${JSON.stringify(added)}`);
    const numbers = await page.locator(".tool >> nth=0 >> .diff .added .dn").allTextContents();
    expect(numbers.join(",") === ",1,,2", `the new file's lines are numbered ${JSON.stringify(numbers)}`);
    // The edit that follows: one unified hunk, numbered where it landed, the changed word marked.
    // Wait for the edit's result, not its card: a card may show while the call still runs.
    await page.waitForSelector(".tool.tool-ok >> nth=1 >> .diff .removed");
    const rows = await page.locator(".tool >> nth=1 >> .diff .dl").evaluateAll((rows) =>
      rows.map((row) => [...row.children].map((cell) => cell.textContent).join("|")),
    );
    expect(
      JSON.stringify(rows) === JSON.stringify(["1|1| |first line", "2||−|second line", "|2|+|second row"]),
      `the edit's hunk reads ${JSON.stringify(rows)}`,
    );
    const marks = await page.locator(".tool >> nth=1 >> .diff mark").allTextContents();
    expect(marks.join("|") === "line|row", `the changed words are ${JSON.stringify(marks)}`);
    const stat = await page.textContent(".tool >> nth=1 >> .tool-status");
    expect(/^\+1 −1 · \d+\.\d s$/.test(stat), `the edit's line says "${stat}"`);
    await page.waitForSelector(".turn-end", { state: "attached" });
    // The turn names the file it produced; the chip opens its last change.
    const chips = await page.locator(".turn-end .produced .chip").allTextContents();
    expect(JSON.stringify(chips) === JSON.stringify(["notes.txt"]), `the turn produced ${JSON.stringify(chips)}`);
    await page.click(".tool >> nth=1 >> summary");
    await page.click(".turn-end .produced .chip");
    await page.waitForFunction(() => document.querySelectorAll(".tool")[1].open);
    // Inspect lays the call open: its arguments, its result, its time.
    await page.click(".tool >> nth=1 >> .inspect");
    await page.waitForSelector("#inspect[open]");
    const inspected = await page.textContent("#inspect");
    expect(inspected.includes('"old_string": "second line"') && inspected.includes("Time") && inspected.includes("edit"), `the inspection reads ${JSON.stringify(inspected)}`);
    await themes(page, "inspect");
    await page.keyboard.press("Escape");
    await page.waitForSelector("#inspect[open]", { state: "detached" });
    // The Trajectory view: one turn, its three steps, the two calls; a call opens its card.
    await page.click("#view-trajectory");
    await page.waitForSelector("#trajectory .trajectory-turn");
    const steps = await page.locator("#trajectory .trajectory-steps > li").count();
    expect(steps === 3, `the trajectory shows ${steps} steps`);
    const calls = await page.locator("#trajectory .call").allTextContents();
    expect(calls.length === 2 && calls[0].includes("write") && calls[1].includes("notes.txt"), `the trajectory's calls read ${JSON.stringify(calls)}`);
    await themes(page, "trajectory");
    await page.click("#trajectory .call >> nth=1");
    await page.waitForSelector("#items:not([hidden])");
    await themes(page, "diff");
    await page.setViewportSize({ width: 390, height: 844 });
    const overflow = await page.evaluate(() => document.scrollingElement.scrollWidth - window.innerWidth);
    expect(overflow <= 0, `the page overflows sideways by ${overflow}px at 390 px`);
    await themes(page, "diff-390");
  },

  // An answer in Markdown: headings, a wide table that scrolls in its own box, a task list, a
  // quote, highlighted code with a Copy button, links that keep to the web; the model's own
  // HTML is shown as text and runs nothing. While it streams, only its last block is replaced.
  async markdown(page) {
    await page.context().grantPermissions(["clipboard-read", "clipboard-write"]);
    await page.goto(authUrl);
    await page.waitForSelector(".hero h1");
    await page.evaluate(() => {
      window.blocksReplaced = [];
      window.firstBlock = null;
      new MutationObserver((records) => {
        let replaced = 0;
        for (const record of records) for (const node of record.removedNodes) if (node.classList?.contains("md-block")) replaced++;
        if (replaced) window.blocksReplaced.push(replaced);
        // The first block once a second one exists: settled then, it should never be rendered again.
        const blocks = document.querySelectorAll("#items .message.assistant .md-block");
        if (!window.firstBlock && blocks.length >= 2) window.firstBlock = blocks[0];
      }).observe(document.getElementById("items"), { childList: true, subtree: true });
    });
    await page.fill("#prompt", "show me markdown");
    await page.keyboard.press("Enter");
    await page.waitForSelector(".message.assistant:not(.streaming) .table-wrap table", { timeout: 30000 });
    // However the chunks fell into frames (a loaded machine paints fewer), no frame replaced
    // more than the changed blocks, and the first block shown is the one still shown.
    const patches = await page.evaluate(() => window.blocksReplaced);
    expect(Math.max(0, ...patches) <= 2, `a frame replaced ${Math.max(...patches)} blocks: ${patches}`);
    const kept = await page.evaluate(() => window.firstBlock?.isConnected && window.firstBlock === document.querySelector("#items .message.assistant .md-block"));
    expect(kept, "the answer's first block was rendered again");
    const answer = ".message.assistant .markdown";
    expect((await page.textContent(`${answer} h1`)).includes("你好"), "the heading keeps its CJK text");
    expect((await page.locator(`${answer} th`).count()) === 3, "the table has three columns");
    expect((await page.locator(`${answer} input[type=checkbox]:checked`).count()) === 1, "one task is done");
    expect((await page.locator(`${answer} input[type=checkbox]`).count()) === 2, "two tasks");
    expect((await page.textContent(`${answer} blockquote`)).includes("A quoted line."), "the quote");
    expect((await page.textContent(`${answer} .code-language`)) === "rust", "the code names its language");
    expect((await page.locator(`${answer} .code .hl-keyword`).count()) > 0, "the code is highlighted");
    const injected = await page.evaluate(() => ({
      ran: window.injected === true,
      scripts: document.querySelectorAll("#items script").length,
      scriptLinks: document.querySelectorAll('#items a[href^="javascript"]').length,
    }));
    expect(!injected.ran && injected.scripts === 0 && injected.scriptLinks === 0, `the model's markup took effect: ${JSON.stringify(injected)}`);
    expect((await page.textContent(answer)).includes("<script>window.injected = true</script>"), "raw HTML shows as text");
    const link = await page.getAttribute(`${answer} a[href="https://example.com/docs"]`, "rel");
    expect(link === "noopener noreferrer", `the link's rel is ${link}`);
    await page.click(`${answer} .code .copy`);
    await page.waitForFunction((selector) => document.querySelector(selector).textContent === "Copied", `${answer} .code .copy`);
    const copied = await page.evaluate(() => navigator.clipboard.readText());
    expect(copied.includes("let answer = 42;"), `the clipboard holds ${JSON.stringify(copied)}`);
    await themes(page, "answer");
    await page.setViewportSize({ width: 390, height: 844 });
    const widths = await page.evaluate(() => ({
      page: document.scrollingElement.scrollWidth - window.innerWidth,
      table: document.querySelector(".table-wrap").scrollWidth - document.querySelector(".table-wrap").clientWidth,
    }));
    expect(widths.page <= 0, `the page overflows sideways by ${widths.page}px`);
    expect(widths.table > 0, "the wide table scrolls in its own box");
    await themes(page, "answer-390");
    // A reload reads the same answer from the history, rendered the same way.
    await page.reload();
    await page.waitForSelector(`${answer} .table-wrap table`);
    expect((await page.locator(`${answer} .code .hl-keyword`).count()) > 0, "the reloaded code is highlighted");
  },

  // An answer whose code fence runs past the host's tail limit: the host stops sending the
  // open tail rendered, and the page shows each appended piece inside the code as it comes (the
  // stream is held open at a gate to look); once it ends the code is rendered whole, once.
  async longtail(page) {
    await page.goto(authUrl);
    await page.waitForSelector(".hero h1");
    await page.fill("#prompt", "write the long file");
    await page.keyboard.press("Enter");
    const code = ".message.assistant.streaming .markdown pre code";
    await page.waitForFunction((selector) => document.querySelector(selector)?.textContent.includes("// piece 11\n"), code, { timeout: 30000 });
    const shown = await page.evaluate((selector) => {
      const node = document.querySelector(selector);
      return { text: node.textContent, raw: node.querySelectorAll(":scope > .raw-tail").length };
    }, code);
    expect(shown.raw === 1, `the appended text is not inside the code: ${shown.raw} raw tail(s)`);
    const places = [...Array(12).keys()].map((n) => shown.text.indexOf(`// piece ${n}\n`));
    expect(places.every((at, n) => at >= 0 && (n === 0 || at > places[n - 1])), `the pieces show out of order: ${places}`);
    await shoot(page, "long-tail-streaming");
    writeFileSync(process.env.DSH_GATE, "go");
    await page.waitForSelector(".message.assistant:not(.streaming) .markdown p", { timeout: 30000 });
    const done = await page.evaluate(() => ({
      code: document.querySelector(".message.assistant .markdown pre code").textContent,
      raw: document.querySelectorAll(".message.assistant .raw-tail").length,
      after: document.querySelector(".message.assistant .markdown").textContent.includes("Done."),
    }));
    expect(done.raw === 0, "the raw tail stayed after the answer ended");
    expect(done.after, "the text after the code is shown");
    expect(done.code.includes("// piece 0\n") && done.code.includes("// the end") && !done.code.includes("```"), `the code reads ${done.code.slice(-200)}`);
  },

  // A delegation: the subagent's card names its task and result, and opens the child's own
  // conversation (its prompt and answer) read-only beneath it.
  async delegate(page) {
    await page.goto(authUrl);
    await page.waitForSelector(".hero h1");
    await page.fill("#prompt", "delegate it");
    await page.keyboard.press("Enter");
    await page.waitForFunction(() =>
      [...document.querySelectorAll(".message.assistant")].some((node) => node.textContent.includes("PARENT_DONE")),
    );
    const card = page.locator(".tool", { has: page.locator(".subagent") });
    await card.evaluate((node) => (node.open = true));
    expect((await card.locator(".subagent .path").textContent()) === "Say the word", "the card names the task");
    await card.locator(".show-child").click();
    await page.waitForSelector(".child-conversation:not([hidden]) .message.assistant");
    const child = await card.locator(".child-conversation").textContent();
    expect(child.includes("Reply with CHILD_OK.") && child.includes("CHILD_OK"), `the child's conversation reads "${child}"`);
    expect((await card.locator(".child-conversation .fork-here").count()) === 0, "the child's conversation is read-only");
    expect((await page.locator(".session").count()) === 1, "the subagent's session is not listed as a conversation");
    await themes(page, "subagent");
  },

  // A folder whose own configuration waits for trust: the page asks above the conversation,
  // naming what waits; trusted, the question goes and stays gone after a reload (the host
  // remembers the answer), also at phone width.
  async trust(page) {
    await page.goto(authUrl);
    await page.waitForSelector("#trust:not([hidden])");
    const asked = await page.textContent("#trust");
    expect(asked.includes(".mcp.json") && asked.includes(".claude/settings.json"), `the question names "${asked}"`);
    await themes(page, "asked");
    await page.setViewportSize({ width: 390, height: 780 });
    await shoot(page, "asked-narrow");
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.click("#trust-yes");
    await page.waitForSelector("#trust", { state: "hidden" });
    await page.reload();
    // The page asks about trust before it lists the sessions: once they are listed, it has.
    await page.waitForFunction(() => !document.querySelector("#sessions").textContent.includes("Loading"));
    expect(await page.isHidden("#trust"), "the question came back after a reload");
    await shoot(page, "trusted");
  },

  // Background jobs: the header's chip counts the running ones and lists them all; a person
  // stops one from there.
  async jobs(page) {
    await page.goto(authUrl);
    await page.waitForSelector(".hero h1");
    await page.fill("#prompt", "start two jobs");
    await page.keyboard.press("Enter");
    await page.waitForFunction(() => document.getElementById("jobs-summary").textContent === "1 of 2 jobs running");
    await page.click("#jobs-summary");
    // The two calls of one step start side by side, so which gets `bash-1` is not fixed: the
    // jobs are told apart by their state.
    const running = page.locator(".jobs-list li.job-running");
    const runningId = await running.getAttribute("data-job");
    expect((await running.locator(".job-label").textContent()) === "sleep 30", "the running job is named by its command");
    expect(
      (await page.locator(".jobs-list li.job-completed .job-status").textContent()) === "completed, exit code: 0",
      "the finished job says how it ended",
    );
    await themes(page, "jobs");
    await page.setViewportSize({ width: 390, height: 844 });
    await shoot(page, "jobs-narrow");
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth + 1);
    expect(!overflow, "the page scrolls sideways at 390 px with the jobs open");
    await running.locator(".stop-job").click();
    await page.waitForFunction(() => document.getElementById("jobs-summary").textContent === "2 jobs done");
    const status = await page.locator(`.jobs-list li[data-job="${runningId}"] .job-status`).textContent();
    expect(status === "killed", `the stopped job reads "${status}"`);
  },

  // A product child (Codex, behind subagent_codex): its card names the task and shows the
  // child's answer; there is no conversation of ours to open (the product keeps its own).
  async product(page) {
    await page.goto(authUrl);
    await page.waitForSelector(".hero h1");
    await page.fill("#prompt", "ask codex");
    await page.keyboard.press("Enter");
    await page.waitForFunction(() =>
      [...document.querySelectorAll(".message.assistant")].some((node) => node.textContent.includes("PARENT_DONE")),
    );
    const card = page.locator(".tool", { has: page.locator(".subagent") });
    await card.evaluate((node) => (node.open = true));
    expect((await card.locator(".subagent .path").textContent()) === "Review the change", "the card names the task");
    const answer = await card.locator(".subagent > pre.output").textContent();
    expect(answer === "ANSWER: Review the change in src/lib.rs.", `the card shows the child's answer, not "${answer}"`);
    expect((await card.locator(".show-child").count()) === 0, "there is no child conversation of ours to open");
    await themes(page, "product");
  },

  // The settings: a key stored (used at once: the next prompt carries it), and the endpoint
  // saved (its reload is checked over the API, where the host's reload can be waited for).
  async settings(page) {
    await page.goto(authUrl);
    await page.waitForSelector(".hero h1");
    await page.click("#open-settings");
    await page.waitForSelector("#settings[open]");
    // General: the theme (System included) and what Enter does while a turn runs.
    await page.check('#settings input[name="theme"][value="dark"]');
    expect(await page.evaluate(() => document.documentElement.dataset.theme === "dark"), "the dark theme did not apply");
    await page.selectOption("#enter-busy", "steer");
    expect(await page.evaluate(() => localStorage.getItem("dsh-enter-busy") === "steer"), "Enter-while-busy was not kept");
    await shoot(page, "general");
    await page.check('#settings input[name="theme"][value="system"]');
    // The tabs answer the arrow keys.
    await page.focus("#tab-general");
    await page.keyboard.press("ArrowRight");
    await page.waitForSelector("#pane-models:not([hidden])");
    expect((await page.textContent("#key-state")) === "(not set)", "the key starts unset");
    await page.fill("#settings-key", "sk-in-settings");
    await page.click("#save-key");
    await page.waitForFunction(() => document.getElementById("key-state").textContent === "(stored)");
    await page.fill("#settings-url", process.env.DSH_SERVER_URL);
    await page.click("#save-url");
    await page.waitForSelector(".toast");
    await themes(page, "dialog");
    await page.click("#settings button[value=close]");
    await page.click("#open-settings");
    await page.waitForSelector("#settings[open]");
    await page.click("#tab-plugins");
    await page.waitForSelector("#plugin-list .plugin");
    const rows = await page.locator("#plugin-list .plugin").allTextContents();
    expect(rows.some((row) => row.startsWith("ACTIVE") && row.includes("web")), `the Plugins tab lists ${JSON.stringify(rows.slice(0, 5))}`);
    await shoot(page, "plugins");
    await page.click("#tab-about");
    const about = await page.textContent("#about");
    expect(about.includes("Version") && about.includes("on this machine only"), `the About tab reads "${about}"`);
    await page.click("#tab-models");
    const saved = await page.inputValue("#settings-url");
    expect(saved === process.env.DSH_SERVER_URL, `the endpoint reads "${saved}" after reopening`);
    await page.click("#settings button[value=close]");
    await page.fill("#prompt", "hello");
    await page.keyboard.press("Enter");
    await page.waitForFunction(() =>
      [...document.querySelectorAll(".message.assistant")].some((node) => node.textContent.includes("hello back")),
    );
  },

  // For `cargo xtask bench`: open a long session (its id in DSH_BENCH_SESSION) and report, as
  // one JSON line, the time from navigation to its last item painted, the JS heap and the DOM.
  async "bench-history"(page) {
    // In the page, from its navigation's start: the items' arrival in the document and the
    // frame after the one that painted them.
    await page.addInitScript(() => {
      new MutationObserver((_, observer) => {
        if (!document.querySelector("[data-item]")) return;
        observer.disconnect();
        requestAnimationFrame(() => requestAnimationFrame(() => { window.__itemsPaintedAt = performance.now(); }));
      }).observe(document, { childList: true, subtree: true });
    });
    await page.goto(authUrl);
    await page.waitForSelector(".hero h1");
    // The first visit: what the page's own files cost over the wire before any is kept.
    const firstVisitBytes = await page.evaluate(() =>
      [...performance.getEntriesByType("navigation"), ...performance.getEntriesByType("resource")]
        .filter((entry) => new URL(entry.name).pathname === "/" || new URL(entry.name).pathname.startsWith("/assets/"))
        .reduce((sum, entry) => sum + entry.transferSize, 0),
    );
    const target = new URL(page.url());
    target.hash = process.env.DSH_BENCH_SESSION;
    const samples = [];
    const walls = [];
    for (let run = 0; run < 5; run++) {
      const started = Date.now();
      await page.goto("about:blank");
      await page.goto(target.toString());
      await page.waitForFunction(() => window.__itemsPaintedAt !== undefined);
      walls.push(Date.now() - started);
      samples.push(await page.evaluate(() => Math.round(window.__itemsPaintedAt)));
    }
    samples.sort((a, b) => a - b);
    walls.sort((a, b) => a - b);
    // Where the last opening spent its time (ms since its navigation started): the document,
    // the modules, each API call, the last item painted.
    const phases = await page.evaluate(() => {
      const [nav] = performance.getEntriesByType("navigation");
      const resources = performance.getEntriesByType("resource").map((entry) => [
        new URL(entry.name).pathname,
        Math.round(entry.startTime),
        Math.round(entry.responseEnd),
      ]);
      return {
        document: Math.round(nav.responseEnd),
        domContentLoaded: Math.round(nav.domContentLoadedEventEnd),
        resources,
        painted: Math.round(performance.now()),
      };
    });
    console.error(JSON.stringify(phases));
    const figures = await page.evaluate(() => ({
      heapBytes: performance.memory ? performance.memory.usedJSHeapSize : null,
      domNodes: document.getElementsByTagName("*").length,
      items: document.querySelectorAll("[data-item]").length,
    }));
    console.log(JSON.stringify({ paintMs: samples[2], wallMs: walls[2], pageBytes: firstVisitBytes, ...figures }));
  },

  // For `cargo xtask bench`: the open session (DSH_BENCH_SESSION) is prompted and its answer
  // streams at a fixed rate; for every update frame, the time from its commit on the host to
  // the page's next frame painted (a task queued from the animation frame that renders it).
  async "bench-live"(page) {
    await page.addInitScript(() => {
      const Native = window.WebSocket;
      window.__paintMs = [];
      window.WebSocket = class extends Native {
        constructor(...args) {
          super(...args);
          this.addEventListener("message", (event) => {
            const frame = JSON.parse(event.data);
            if (frame.type !== "session/update" || !frame.time) return;
            requestAnimationFrame(() => setTimeout(() => window.__paintMs.push(Date.now() - frame.time), 0));
          });
        }
      };
    });
    await promptBenchSession(page);
    await page.waitForSelector(".turn-end", { state: "attached", timeout: 120000 });
    await page.waitForTimeout(100);
    const samples = await page.evaluate(() => window.__paintMs.slice().sort((a, b) => a - b));
    const at = (q) => samples[Math.min(samples.length - 1, Math.round((samples.length - 1) * q))];
    console.log(JSON.stringify({ frames: samples.length, p50: at(0.5), p95: at(0.95), p99: at(0.99) }));
  },

  // For `cargo xtask bench`: a long Markdown answer streams into the open session
  // (DSH_BENCH_SESSION) at 100 deltas a second; the page's long tasks (over 50 ms) and the time
  // between its animation frames while the answer streams.
  async "bench-stream"(page) {
    await page.addInitScript(() => {
      window.__longTasks = [];
      new PerformanceObserver((list) => window.__longTasks.push(...list.getEntries().map((entry) => entry.duration))).observe({ type: "longtask" });
    });
    await promptBenchSession(page);
    await page.waitForSelector(".message.assistant.streaming", { timeout: 60000 });
    await page.evaluate(() => {
      window.__longTasks = [];
      window.__frames = [];
      let last = performance.now();
      const tick = (now) => {
        window.__frames.push(now - last);
        last = now;
        if (document.querySelector(".message.assistant.streaming")) requestAnimationFrame(tick);
      };
      requestAnimationFrame(tick);
    });
    await page.waitForSelector(".turn-end", { state: "attached", timeout: 120000 });
    const result = await page.evaluate(() => {
      const frames = window.__frames.slice(1).sort((a, b) => a - b);
      return {
        frames: frames.length,
        frameP95: frames[Math.min(frames.length - 1, Math.round((frames.length - 1) * 0.95))],
        longTasks: window.__longTasks.length,
        longestTask: Math.max(0, ...window.__longTasks),
      };
    });
    console.log(JSON.stringify(result));
  },
};

Object.assign(scenarios, frameScenarios({ authUrl, expect, shoot, themes, problems }));
Object.assign(scenarios, goalScenarios({ authUrl, expect, shoot, themes }));
Object.assign(scenarios, effortScenarios({ authUrl, expect, shoot }));
Object.assign(scenarios, planScenarios({ authUrl, expect, shoot, themes }));
Object.assign(scenarios, presetScenarios({ authUrl, expect, shoot, themes }));
Object.assign(scenarios, pluginScenarios({ authUrl, expect, themes }));
Object.assign(scenarios, providerScenarios({ authUrl, expect, shoot, themes }));
Object.assign(scenarios, imageScenarios({ authUrl, expect, shoot, themes }));
Object.assign(scenarios, undoScenarios({ authUrl, expect, shoot, themes }));
Object.assign(scenarios, exportScenarios({ authUrl, expect, shoot }));
Object.assign(scenarios, terminalScenarios({ expect, shoot, openSession }));
Object.assign(scenarios, editorScenarios({ authUrl, expect, themes }));
const run = scenarios[scenario];
if (!run) {
  console.error(`unknown scenario ${scenario}; known: ${Object.keys(scenarios).join(", ")}`);
  process.exit(2);
}
const browser = await chromium.launch({ executablePath, args: ["--no-sandbox", "--disable-gpu"] });
const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
const page = await context.newPage();
page.on("console", (message) => {
  if (message.type() === "error") problems.push(`console error: ${message.text()}`);
});
page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
let code = 0;
try {
  await run(page);
} catch (error) {
  await shoot(page, "failure").catch(() => {});
  problems.push(error.message);
}
if (problems.length) {
  console.error(problems.join("\n"));
  code = 1;
} else {
  console.log(`scenario ${scenario}: ok`);
}
await browser.close();
process.exit(code);
