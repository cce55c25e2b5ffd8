// The reasoning-effort scenario of the browser app (merged into scenarios.mjs): once a session
// is open, the composer shows an effort picker beside the model (the model's efforts, its
// default marked); choosing `max` applies from the session's next request, and a reload shows
// the choice again. Screenshot: the picker with `max` chosen.

export function effortScenarios({ authUrl, expect, shoot }) {
  return {
    async effort(page) {
      await page.goto(authUrl);
      await page.waitForSelector(".hero h1");
      await page.fill("#prompt", "first");
      await page.keyboard.press("Enter");
      await page.waitForFunction(() => document.querySelectorAll(".turn-end").length === 1);
      await page.waitForSelector("#effort:not([hidden])");
      const offered = await page.$$eval("#effort option", (options) => options.map((option) => option.textContent));
      expect(
        JSON.stringify(offered) === JSON.stringify(["off", "low", "high (default)", "max"]),
        `the picker offers ${JSON.stringify(offered)}`,
      );
      expect((await page.inputValue("#effort")) === "high", "the default is chosen at first");
      await page.selectOption("#effort", "max");
      await page.waitForSelector(".toast");
      await shoot(page, "max");
      await page.fill("#prompt", "think hard");
      await page.keyboard.press("Enter");
      await page.waitForFunction(() => document.querySelectorAll(".turn-end").length === 2);
      await page.reload();
      await page.waitForSelector("#effort:not([hidden])");
      await page.waitForFunction(() => document.getElementById("effort").value === "max");
    },
  };
}
