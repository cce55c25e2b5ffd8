// The plugins scenario of the browser app (merged into scenarios.mjs): Settings › Plugins lists
// the tree's rows with their state, a disabled row among them; a row is turned on and another
// off from there, and the list shows each change once the host has reloaded it; the rows the
// page runs on have no switch.

export function pluginScenarios({ authUrl, expect, themes }) {
  const state = (page, row) => page.textContent(`#plugin-list [data-row="${row}"] .plugin-state`);
  const waitState = (page, row, wanted) =>
    page.waitForFunction(
      ([row, wanted]) => document.querySelector(`#plugin-list [data-row="${row}"] .plugin-state`)?.textContent === wanted,
      [row, wanted],
      { timeout: 15000 },
    );
  return {
    async plugins(page) {
      await page.goto(authUrl);
      await page.waitForSelector(".hero h1");
      await page.click("#open-settings");
      await page.click("#tab-plugins");
      await page.waitForSelector('#plugin-list [data-row="session-title"]');
      expect((await state(page, "time-context")) === "DISABLED", "time-context is off in the web profile");
      expect((await state(page, "session-title")) === "ACTIVE", "session-title runs");
      const webRow = await page.locator('#plugin-list [data-row="web"] button').count();
      expect(webRow === 0, "the page's own row has no switch");
      await themes(page, "before");
      // On: the disabled row starts.
      await page.click('#plugin-list [data-row="time-context"] button.plugin-toggle');
      await waitState(page, "time-context", "ACTIVE");
      const label = await page.textContent('#plugin-list [data-row="time-context"] button.plugin-toggle');
      expect(label === "Turn off", `the switch now turns it off: ${label}`);
      // Off: a running row stops.
      await page.click('#plugin-list [data-row="session-title"] button.plugin-toggle');
      await waitState(page, "session-title", "DISABLED");
      await themes(page, "after");
      await page.setViewportSize({ width: 390, height: 844 });
      await themes(page, "after-390");
    },
  };
}
