// The `str_replace_editor` scenario of the browser app (merged into scenarios.mjs): the editor
// records no hunks in its results (as the reference's does not), so its cards are made from
// what each call asked: a created file shows its lines added and numbered, a replacement its
// two strings, an insert its lines numbered from where they go; a view stays a plain card.

export function editorScenarios({ authUrl, expect, themes }) {
  return {
    async editor(page) {
      await page.goto(authUrl);
      await page.waitForSelector(".hero h1");
      await page.fill("#prompt", "edit the notes");
      await page.keyboard.press("Enter");
      await page.waitForSelector(".turn-end", { state: "attached" });
      // Every call succeeded: a card made from the arguments shows for a failed call too.
      const failed = await page.locator(".tool:not(.tool-ok)").count();
      expect(failed === 0, `${failed} of the editor's calls failed`);
      const file = process.env.DSH_EDITOR_PATH;
      const paths = (await page.locator(".tool .path").allTextContents()).filter((path) => path.startsWith(`${file} +`));
      expect(
        JSON.stringify(paths) === JSON.stringify([`${file} +2 −0`, `${file} +1 −1`, `${file} +1 −0`]),
        `the editor's diff cards name ${JSON.stringify(paths)}`,
      );
      const created = await page.locator(".tool >> nth=0 >> .diff .added .dt").allTextContents();
      expect(created.join("|") === "one|two", `the created file's lines are ${JSON.stringify(created)}`);
      const replaced = await page.locator(".tool >> nth=2 >> .diff .dl").evaluateAll((rows) =>
        rows.map((row) => [...row.children].map((cell) => cell.textContent).join("|")),
      );
      expect(
        JSON.stringify(replaced) === JSON.stringify(["||−|two", "||+|TWO"]),
        `the replacement reads ${JSON.stringify(replaced)}`,
      );
      const inserted = await page.locator(".tool >> nth=3 >> .diff .dl").evaluateAll((rows) =>
        rows.map((row) => [...row.children].map((cell) => cell.textContent).join("|")),
      );
      expect(
        JSON.stringify(inserted) === JSON.stringify(["|3|+|three"]),
        `the insert reads ${JSON.stringify(inserted)}`,
      );
      await themes(page, "diffs");
      await page.setViewportSize({ width: 390, height: 844 });
      const overflow = await page.evaluate(() => document.scrollingElement.scrollWidth - window.innerWidth);
      expect(overflow <= 0, `the page overflows sideways by ${overflow}px at 390 px`);
      await themes(page, "diffs-390");
    },
  };
}
