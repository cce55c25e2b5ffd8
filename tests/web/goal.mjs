// The goal-bar scenario of the browser app (merged into scenarios.mjs): `/goal TEXT` from the
// composer puts the bar up (active, round 1 of 256) while the first round runs; Pause stops the
// rounds, Resume starts round 2, Complete marks the goal achieved and Clear takes the bar down.
// Screenshots: the bar running, paused and complete.

export function goalScenarios({ authUrl, expect, shoot, themes }) {
  const barText = (page) => page.textContent("#goal-bar");
  return {
    async goal(page) {
      await page.goto(authUrl);
      await page.waitForSelector(".hero h1");
      await page.fill("#prompt", "/goal Write the release notes");
      await page.keyboard.press("Enter");
      await page.waitForSelector("#goal-bar.active:not([hidden])");
      await page.waitForFunction(() => document.getElementById("goal-bar").textContent.includes("Round 1/256"));
      const running = await barText(page);
      expect(running.includes("Write the release notes") && running.includes("active"), `the bar reads "${running}"`);
      await themes(page, "running");
      await page.click('#goal-bar [data-goal-action="pause"]');
      await page.waitForSelector("#goal-bar.paused");
      await page.waitForSelector(".turn-end", { state: "attached" });
      const paused = await barText(page);
      expect(paused.includes("paused") && paused.includes("Round 1/256"), `the paused bar reads "${paused}"`);
      expect((await page.$('#goal-bar [data-goal-action="pause"]')) === null, "a paused goal offers no Pause");
      await shoot(page, "paused");
      await page.click('#goal-bar [data-goal-action="resume"]');
      await page.waitForFunction(() => {
        const bar = document.getElementById("goal-bar");
        return bar.classList.contains("active") && bar.textContent.includes("Round 2/256");
      });
      await page.click('#goal-bar [data-goal-action="complete"]');
      await page.waitForSelector("#goal-bar.complete");
      const complete = await barText(page);
      expect(complete.includes("complete") && complete.includes("Round 2/256"), `the complete bar reads "${complete}"`);
      await themes(page, "complete");
      // A reload reads the goal back.
      await page.reload();
      await page.waitForSelector("#goal-bar.complete:not([hidden])");
      await page.click('#goal-bar [data-goal-action="clear"]');
      await page.waitForSelector("#goal-bar", { state: "hidden" });
    },
  };
}
