// The agent-preset scenario of the browser app (merged into scenarios.mjs): the new-session
// screen offers the presets as chips (the shipped ones and the user's "Reader", a broken one
// shown disabled), the default chosen; arrow keys move the choice; the first prompt makes a
// session of the chosen preset (the test checks what the model was offered and told); the
// header names it; in the settings a copy of minimal is made the default.

export function presetScenarios({ authUrl, expect, shoot, themes }) {
  return {
    async presets(page) {
      await page.goto(authUrl);
      await page.waitForSelector("#presets .preset-chip");
      const names = await page.locator("#presets .preset-chip").allTextContents();
      for (const name of ["Standard", "Code", "Minimal", "Plugin author", "Reader"]) {
        expect(names.includes(name), `the chips offer ${name}: ${JSON.stringify(names)}`);
      }
      const chosen = await page.getAttribute('#presets [aria-checked="true"]', "data-preset");
      expect(chosen === "standard", `the default is chosen first, not ${chosen}`);
      const broken = page.locator('#presets [data-preset="broken"]');
      expect(await broken.isDisabled(), "a broken preset cannot be chosen");
      const why = await broken.getAttribute("title");
      expect(why.includes("agent-presets/broken/preset.yml"), `the broken chip says why: ${why}`);
      // Arrow keys walk the usable presets; a click chooses one.
      await page.focus('#presets [data-preset="standard"]');
      await page.keyboard.press("ArrowRight");
      const moved = await page.getAttribute('#presets [aria-checked="true"]', "data-preset");
      expect(moved === "code", `ArrowRight moves to code, not ${moved}`);
      await page.click('#presets [data-preset="reader"]');
      await themes(page, "chosen");
      // At 390 px the chips wrap inside the page.
      await page.setViewportSize({ width: 390, height: 844 });
      const overflow = await page.evaluate(() => document.scrollingElement.scrollWidth - window.innerWidth);
      expect(overflow <= 0, `the new-session screen overflows sideways by ${overflow}px at 390 px`);
      await themes(page, "chosen-390");
      await page.setViewportSize({ width: 1280, height: 800 });
      await page.fill("#prompt", "what is here?");
      await page.keyboard.press("Enter");
      await page.waitForSelector(".turn-end", { state: "attached" });
      const answer = await page.textContent(".message.assistant");
      expect(answer.includes("only reading"), `the answer arrived: ${answer}`);
      // The header names the preset the session runs.
      await page.waitForSelector("#title .preset-mark");
      const mark = await page.textContent("#title .preset-mark");
      expect(mark === "reader", `the header names the preset: ${mark}`);
      await shoot(page, "header");
      // Settings › Presets: a copy of minimal made the default, shown as such.
      await page.click("#open-settings");
      await page.click("#tab-presets");
      await page.waitForSelector('#preset-list [data-preset="reader"]');
      page.once("dialog", (dialog) => dialog.accept("my-minimal"));
      await page.click('#preset-list [data-preset="minimal"] button.copy');
      await page.waitForSelector('#preset-list [data-preset="my-minimal"]');
      await page.click('#preset-list [data-preset="my-minimal"] button.make-default');
      await page.waitForFunction(() => [...document.querySelectorAll('#preset-list [data-preset="my-minimal"] .fork-mark')].some((mark) => mark.textContent === "default"));
      const marks = await page.locator('#preset-list [data-preset="standard"] .fork-mark').allTextContents();
      expect(!marks.includes("default"), `standard is no longer the default: ${marks}`);
      const brokenRow = await page.textContent('#preset-list [data-preset="broken"]');
      expect(brokenRow.includes("agent-presets/broken/preset.yml"), `the broken preset says why: ${brokenRow}`);
      await themes(page, "settings");
      await page.setViewportSize({ width: 390, height: 844 });
      await themes(page, "settings-390");
    },
  };
}
