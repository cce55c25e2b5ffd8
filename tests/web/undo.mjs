// The undo scenario of the browser app (merged into scenarios.mjs): two turns each write a
// file; the person edits the first file by hand, then takes "Rewind to here" on the second
// prompt, is asked to confirm (screenshot), confirms, and the page says which file was put back
// (screenshot) while the file is gone from the workspace; "Rewind to here" on the first prompt
// is then refused naming the file the person changed. The Rust side checks the files after.

import { existsSync, writeFileSync } from "node:fs";

async function askRewind(page, index) {
  const prompt = page.locator(".message.user").nth(index);
  await prompt.hover();
  await prompt.locator(".rewind-here").click();
  await prompt.locator(".rewind-confirm").waitFor();
  return prompt;
}

export function undoScenarios({ authUrl, expect, shoot, themes }) {
  return {
    async undo(page) {
      await page.goto(authUrl);
      await page.waitForSelector(".hero h1");
      for (const [prompt, turns] of [["write mine.txt", 1], ["write notes.txt", 2]]) {
        await page.fill("#prompt", prompt);
        await page.keyboard.press("Enter");
        await page.waitForFunction((count) => document.querySelectorAll(".turn-end").length === count, turns);
      }
      expect(existsSync("notes.txt") && existsSync("mine.txt"), "both turns wrote their file");
      // Only prompts of ended turns offer it, one each.
      await page.waitForFunction(() => document.querySelectorAll(".message.user .rewind-here").length === 2);
      writeFileSync("mine.txt", "a person's edit\n");

      const second = await askRewind(page, 1);
      const asked = await second.locator(".rewind-confirm").textContent();
      expect(asked.includes("Rewind to here?") && asked.includes("turn 2") && asked.includes("notes.txt"), `the confirmation says "${asked}"`);
      await themes(page, "confirm");
      await second.locator(".rewind-go").click();
      await page.waitForSelector(".toast.rewind-result:not(.refused)");
      const done = await page.textContent(".toast.rewind-result");
      expect(done.startsWith("Undid turn 2") && done.includes("notes.txt"), `the page says "${done}"`);
      expect(!existsSync("notes.txt"), "notes.txt is gone from the workspace");
      expect((await second.locator(".rewind-confirm").count()) === 0, "the confirmation closed");
      await shoot(page, "rewound");
      await page.evaluate(() => document.querySelectorAll(".toast").forEach((node) => node.remove()));

      // Cancel leaves everything as it was.
      const first = await askRewind(page, 0);
      await first.locator(".rewind-cancel").click();
      expect((await first.locator(".rewind-confirm").count()) === 0, "Cancel closes the confirmation");
      // The first turn's file was changed since by the person: refused, naming it.
      await askRewind(page, 0);
      await first.locator(".rewind-go").click();
      await page.waitForSelector(".toast.rewind-result.refused");
      const refused = await page.textContent(".toast.rewind-result.refused");
      expect(refused.startsWith("Not undone") && refused.includes("mine.txt"), `the refusal says "${refused}"`);
      await shoot(page, "refused");
    },
  };
}
