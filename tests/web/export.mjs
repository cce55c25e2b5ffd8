// The export scenario of the browser app (merged into scenarios.mjs): after a turn, the
// session's menu offers Export (screenshot), and taking it downloads the session's archive
// under its own name; the file is saved in the working directory for the Rust side to import.

export function exportScenarios({ authUrl, expect, shoot }) {
  return {
    async export(page) {
      await page.goto(authUrl);
      await page.waitForSelector(".hero h1");
      await page.fill("#prompt", "remember PERSIMMON");
      await page.keyboard.press("Enter");
      await page.waitForSelector(".turn-end", { state: "attached" });
      const id = decodeURIComponent((await page.evaluate(() => location.hash)).slice(1));
      await page.click("#more");
      await page.waitForSelector(".popup-menu");
      await shoot(page, "menu");
      const [download] = await Promise.all([
        page.waitForEvent("download"),
        page.click(".popup-menu button >> text=Export"),
      ]);
      const name = download.suggestedFilename();
      expect(name === `dsh-session-${id}.tar.zst`, `the download is named "${name}" (session ${id})`);
      expect((await download.failure()) === null, "the download completed");
      await download.saveAs(`${process.cwd()}/downloaded.tar.zst`);
      console.log(`downloaded session ${id}`);
    },
  };
}
