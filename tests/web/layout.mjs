// Browser scenarios of the page's frame: the layout at three widths (the composer's text box
// owns its row, the session list is a drawer below 900 px, the conversation's header stays in
// view, new content while reading further up offers a way back), Back and Forward between
// sessions, controls that follow the session whoever changed it, and a page whose sign-in the
// host no longer takes.

import { existsSync } from "node:fs";

const WIDTHS = [
  [390, 844],
  [768, 1024],
  [1440, 900],
];

async function prompt(page, text) {
  await page.fill("#prompt", text);
  await page.keyboard.press("Enter");
}

async function measure(page) {
  return page.evaluate(() => {
    const box = (selector) => document.querySelector(selector).getBoundingClientRect();
    const visible = (selector) => {
      const node = document.querySelector(selector);
      const style = getComputedStyle(node);
      const rect = node.getBoundingClientRect();
      return style.display !== "none" && style.visibility !== "hidden" && rect.right > 0 && rect.width > 0;
    };
    return {
      width: window.innerWidth,
      main: box(".main").width,
      prompt: box("#prompt").width,
      send: box("#send").right,
      overflow: document.documentElement.scrollWidth > window.innerWidth + 1,
      sidebar: visible(".sidebar"),
      menu: visible("#menu"),
    };
  });
}

export function frameScenarios({ authUrl, expect, shoot, themes, problems }) {
  return {
    async layout(page) {
      await page.goto(authUrl);
      await page.waitForSelector(".hero h1");
      await prompt(page, "write a long answer");
      await page.waitForSelector(".turn-end", { state: "attached" });
      for (const [width, height] of WIDTHS) {
        await page.setViewportSize({ width, height });
        await page.waitForTimeout(300);
        const shape = await measure(page);
        expect(!shape.overflow, `${width} px: the page scrolls sideways`);
        expect(shape.prompt >= 0.6 * shape.main, `${width} px: the text box is ${shape.prompt} of ${shape.main} px`);
        expect(shape.send <= shape.width, `${width} px: Send ends at ${shape.send}, past the screen`);
        if (width < 900) {
          expect(!shape.sidebar && shape.menu, `${width} px: the session list is a drawer behind the menu`);
          await page.click("#menu");
          await page.waitForTimeout(300);
          expect((await measure(page)).sidebar, `${width} px: the menu opens the session list`);
          await shoot(page, `drawer-${width}`);
          await page.click(".session");
          await page.waitForTimeout(300);
          expect(!(await measure(page)).sidebar, `${width} px: choosing a session closes the drawer`);
        } else {
          expect(shape.sidebar && !shape.menu, `${width} px: the session list sits beside the conversation`);
        }
        // The header stays at the top of the conversation while it scrolls.
        const stuck = await page.evaluate(() => {
          const scroller = document.getElementById("conversation");
          scroller.scrollTop = scroller.scrollHeight;
          const header = document.querySelector(".chat-header").getBoundingClientRect();
          return {
            scrolled: scroller.scrollTop > 0,
            offset: Math.abs(header.top - scroller.getBoundingClientRect().top),
          };
        });
        expect(stuck.scrolled, `${width} px: the long answer scrolls`);
        expect(stuck.offset <= 1, `${width} px: the header is ${stuck.offset} px off the top while scrolled`);
        await themes(page, `frame-${width}`);
      }
      // Reading further up while another tab's prompt is answered: a button, not a jump.
      await page.setViewportSize({ width: 1280, height: 800 });
      await page.evaluate(() => {
        document.getElementById("conversation").scrollTop = 0;
      });
      const other = await page.context().newPage();
      await other.goto(page.url());
      await other.waitForSelector("#chat:not([hidden])");
      await prompt(other, "and one more");
      await page.waitForSelector("#jump:not([hidden])");
      const top = await page.evaluate(() => document.getElementById("conversation").scrollTop);
      expect(top === 0, `the conversation moved to ${top} while the person read at the top`);
      await shoot(page, "jump");
      await page.click("#jump");
      await page.waitForFunction(() => {
        const scroller = document.getElementById("conversation");
        return scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 48;
      });
      expect(await page.isHidden("#jump"), "the button goes once at the newest message");
      await other.close();
    },

    async navigation(page) {
      await page.goto(authUrl);
      await page.waitForSelector(".hero h1");
      await prompt(page, "first");
      await page.waitForSelector(".turn-end", { state: "attached" });
      const first = await page.evaluate(() => location.hash);
      await page.click("#new");
      await page.waitForFunction((before) => location.hash && location.hash !== before, first);
      await prompt(page, "second");
      await page.waitForSelector(".turn-end", { state: "attached" });
      const second = await page.evaluate(() => location.hash);
      const shows = (text) =>
        page.waitForFunction((wanted) => document.querySelector(".message.user .bubble")?.textContent === wanted, text);
      await page.goBack();
      await page.waitForFunction((wanted) => location.hash === wanted, first);
      await shows("first");
      await page.goForward();
      await page.waitForFunction((wanted) => location.hash === wanted, second);
      await shows("second");
      // A session's address typed in the bar opens it.
      await page.evaluate((hash) => {
        location.hash = hash;
      }, first);
      await shows("first");
      await shoot(page, "back");
    },

    // The list holds conversations only, newest activity first (an open is no activity), a
    // title cut from a longer first message says so, and the search finds a word said in a
    // conversation when asked to look in the messages.
    async sessions(page) {
      await page.goto(authUrl);
      await page.waitForSelector(".hero h1");
      await prompt(page, "please look at the failing integration tests in the web crate and fix them");
      await page.waitForSelector(".turn-end", { state: "attached" });
      const first = await page.evaluate(() => location.hash);
      await page.click("#new");
      await page.waitForFunction((before) => location.hash && location.hash !== before, first);
      await page.waitForTimeout(300);
      const listed = () => page.locator("#sessions .session .title").allTextContents();
      let titles = await listed();
      expect(titles.length === 1, `a session with no message is listed: ${JSON.stringify(titles)}`);
      expect(titles[0].endsWith("…"), `the cut title reads "${titles[0]}"`);
      await prompt(page, "hi there");
      await page.waitForSelector(".turn-end", { state: "attached" });
      await page.waitForFunction(() => document.querySelectorAll("#sessions .session").length === 2);
      titles = await listed();
      expect(titles[0] === "hi there", `the newest conversation is not first: ${JSON.stringify(titles)}`);
      // Opening the older one changes nothing in the order.
      await page.click("#sessions .session >> nth=1");
      await page.waitForFunction((wanted) => location.hash === wanted, first);
      await page.waitForFunction(() => document.querySelector(".chat-title")?.textContent.endsWith("…"));
      await page.waitForTimeout(300);
      const reopened = await listed();
      expect(JSON.stringify(reopened) === JSON.stringify(titles), `opening re-ordered the list: ${JSON.stringify(reopened)}`);
      // A word of the first answer: not in any title, found in the messages.
      await page.fill("#search", "PARIS");
      await page.waitForSelector("#sessions .muted");
      expect((await page.textContent("#sessions")).includes("No title matches."), "a title matched");
      await page.check("#search-text");
      await page.waitForSelector("#sessions .session .hit");
      const hits = await page.locator("#sessions .session").allTextContents();
      expect(hits.length === 1 && hits[0].includes("Paris"), `the search found ${JSON.stringify(hits)}`);
      await themes(page, "search");
      await page.fill("#search", "");
      await page.uncheck("#search-text");
      await page.waitForFunction(() => document.querySelectorAll("#sessions .session").length === 2);
      // The older conversation's menu, by keyboard: Archive puts it away, listed apart.
      await page.hover("#sessions .session-row >> nth=1");
      await page.click("#sessions .session-row >> nth=1 >> .row-menu");
      await page.waitForSelector(".popup-menu[role=menu]");
      await shoot(page, "row-menu");
      await page.keyboard.press("ArrowDown");
      await page.keyboard.press("ArrowDown");
      expect((await page.evaluate(() => document.activeElement.textContent)) === "Export", "the third item is not Export");
      await page.keyboard.press("ArrowDown");
      expect((await page.evaluate(() => document.activeElement.textContent)) === "Archive", "the fourth item is not Archive");
      await page.keyboard.press("Enter");
      await page.waitForFunction(() => document.querySelectorAll("#sessions .session").length === 1);
      await page.click(".archived-toggle");
      await page.waitForFunction(() => document.querySelectorAll("#sessions .session").length === 2);
      expect((await page.textContent("#sessions")).includes("archived"), "the archived session is not marked");
      // Narrow: the header's actions fold into its menu, which Escape closes.
      await page.setViewportSize({ width: 390, height: 844 });
      expect(!(await page.isVisible("#rename")) && (await page.isVisible("#more")), "the header keeps Rename at 390 px");
      await page.click("#more");
      await page.waitForSelector(".popup-menu[role=menu]");
      await shoot(page, "header-menu-390");
      await page.keyboard.press("Escape");
      await page.waitForSelector(".popup-menu", { state: "detached" });
      expect(await page.evaluate(() => document.activeElement.id === "more"), "the focus did not go back to the menu's button");
      await page.click("#menu");
      await themes(page, "list-390");
    },

    // `@` lists the folder's files as git would (the ignored build output left out), the keys
    // work the list, and the path taken goes to the model as typed.
    async mentions(page) {
      await page.goto(authUrl);
      await page.waitForSelector(".hero h1");
      await prompt(page, "/help");
      await page.waitForSelector("#chat:not([hidden])");
      await page.fill("#prompt", "look at @mai");
      await page.waitForSelector("#command-menu.files:not([hidden]) .command");
      const listed = await page.locator("#command-menu .command").allTextContents();
      expect(JSON.stringify(listed) === JSON.stringify(["@src/main.rs", "@src/domain.rs"]), `@mai lists ${JSON.stringify(listed)}`);
      await themes(page, "files");
      await page.keyboard.press("ArrowDown");
      await page.keyboard.press("Enter");
      await page.waitForSelector("#command-menu", { state: "hidden" });
      let typed = await page.inputValue("#prompt");
      expect(typed === "look at @src/main.rs ", `the prompt reads "${typed}"`);
      await page.keyboard.type("please");
      // A text file dropped on the composer lands in the prompt as a named block; a binary one
      // is refused with a word of why. (The prompt is put back as it was before sending.)
      const kept = await page.inputValue("#prompt");
      await page.evaluate(() => {
        const drop = (file) => {
          const data = new DataTransfer();
          data.items.add(file);
          document.getElementById("composer").dispatchEvent(new DragEvent("drop", { dataTransfer: data, bubbles: true, cancelable: true }));
        };
        drop(new File(["fn main() {}\n"], "main.rs", { type: "text/plain" }));
        drop(new File([new Uint8Array([0, 1, 2])], "blob.bin"));
      });
      await page.waitForFunction(() => document.getElementById("prompt").value.includes("```rs main.rs\nfn main() {}\n```"));
      await page.waitForSelector(".toast:has-text('blob.bin is not text')");
      await shoot(page, "dropped");
      await page.fill("#prompt", kept);
      await page.keyboard.press("Enter");
      await page.waitForFunction(() => [...document.querySelectorAll(".message.assistant")].some((node) => node.textContent.includes("I will read it.")));
    },

    async controls(page) {
      await page.goto(authUrl);
      await page.waitForSelector(".hero h1");
      await prompt(page, "/permission read-only");
      await page.waitForSelector("#chat:not([hidden])");
      await page.waitForFunction(() => document.getElementById("preset").value === "read-only");
      const models = await page.evaluate(() => ({
        current: document.getElementById("model").value,
        all: [...document.getElementById("model").options].map((option) => option.value).filter((value) => !value.startsWith("\u0000")),
      }));
      const other = models.all.find((route) => route !== models.current);
      expect(other, `a second model to switch to among ${models.all.join(", ")}`);
      await prompt(page, `/model ${other}`);
      await page.waitForFunction((wanted) => document.getElementById("model").value === wanted, other);
      // Another tab changes the session: this one follows.
      const second = await page.context().newPage();
      await second.goto(page.url());
      await second.waitForSelector("#chat:not([hidden])");
      await second.waitForFunction(() => document.getElementById("preset").value === "read-only");
      await second.selectOption("#preset", "danger-full-access");
      await page.waitForFunction(() => document.getElementById("preset").value === "danger-full-access");
      await second.selectOption("#model", models.current);
      await page.waitForFunction((wanted) => document.getElementById("model").value === wanted, models.current);
      await second.close();
      await themes(page, "followed");
      // A model no catalog lists, typed: the session takes it and the picker shows it.
      const provider = models.current.split("/")[0];
      await page.selectOption("#model", { label: "Other model…" });
      await page.waitForSelector(".model-box");
      await page.fill(".model-box", `${provider}/my-own-model`);
      await page.keyboard.press("Enter");
      await page.waitForFunction((wanted) => document.getElementById("model").value === wanted, `${provider}/my-own-model`);
      await page.selectOption("#model", models.current);
      // A new session starts from the defaults, not from what this one was switched to.
      await page.click("#new");
      await page.waitForFunction(() => document.getElementById("preset").value === "workspace-write");
      await shoot(page, "new-session");
    },

    // The host restarts under the page (the test stops it and starts it again on the same port
    // once this says it is ready, then leaves a file `restarted`): the page comes back by
    // itself, still signed in, with the conversation, and the next prompt is answered.
    async restart(page) {
      await page.goto(authUrl);
      await page.waitForSelector(".hero h1");
      await prompt(page, "before the restart");
      await page.waitForFunction(() =>
        [...document.querySelectorAll(".message.assistant")].some((node) => node.textContent.includes("first answer")),
      );
      const session = await page.evaluate(() => {
        window.beforeTheRestart = true;
        return location.hash;
      });
      console.log("ready for the restart");
      const deadline = Date.now() + 60000;
      while (!existsSync("restarted")) {
        expect(Date.now() < deadline, "the host was not restarted within 60 s");
        await page.waitForTimeout(100);
      }
      // The heartbeat of the new launch reloads the page; it opens the same session.
      await page.waitForFunction(() => !window.beforeTheRestart, null, { timeout: 60000 });
      await page.waitForFunction(
        (before) => document.querySelector(".message.user .bubble")?.textContent === before,
        "before the restart",
        { timeout: 30000 },
      );
      expect((await page.evaluate(() => location.hash)) === session, "the page came back on another session");
      expect(await page.isHidden("#signed-out"), "the kept sign-in was not taken after the restart");
      await page.waitForSelector("#connection", { state: "hidden", timeout: 30000 });
      await prompt(page, "after the restart");
      await page.waitForFunction(() =>
        [...document.querySelectorAll(".message.assistant")].some((node) => node.textContent.includes("after the restart")),
      );
      await shoot(page, "after");
      // The browser reports the refused socket while the host was down; that is the point here.
      for (let index = problems.length - 1; index >= 0; index -= 1) {
        if (/WebSocket|ERR_CONNECTION_REFUSED|Failed to load resource/.test(problems[index])) problems.splice(index, 1);
      }
    },

    async signedout(page) {
      await page.goto(authUrl);
      await page.waitForSelector(".hero h1");
      await page.context().clearCookies();
      await page.click("#new");
      await page.waitForSelector("#signed-out:not([hidden])");
      const words = await page.textContent("#signed-out");
      expect(words.includes("no longer signed in") && words.includes("auth?token="), `the notice says "${words}"`);
      expect(await page.isHidden("#connection"), "no endless Reconnecting while signed out");
      await themes(page, "notice");
      // The browser reports each refused call and socket on the console; they are this
      // scenario's point.
      for (let index = problems.length - 1; index >= 0; index -= 1) {
        if (/401|Authentication failed/.test(problems[index])) problems.splice(index, 1);
      }
    },
  };
}
