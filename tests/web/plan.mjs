// The plan-mode scenario of the browser app (merged into scenarios.mjs): the composer's plan
// chip turns plan mode on before the first prompt, the model's write is refused while it
// plans, its plan comes up as a review card (screenshot), "Keep planning" with a note sends
// the note back, the second plan is approved, the write then runs and the chip goes off.

export function planScenarios({ authUrl, expect, shoot, themes }) {
  return {
    async plan(page) {
      await page.goto(authUrl);
      await page.waitForSelector(".hero h1");
      await page.click("#plan-chip");
      expect((await page.getAttribute("#plan-chip", "aria-pressed")) === "true", "the chip is pressed");
      await page.fill("#prompt", "add notes.txt");
      await page.keyboard.press("Enter");
      await page.waitForSelector(".approval.plan-review.pending");
      const first = await page.textContent(".approval.plan-review.pending .plan-body");
      expect(first.includes("Write notes.txt") && first.includes("Check it"), `the first plan reads "${first}"`);
      expect((await page.getAttribute("#plan-chip", "aria-pressed")) === "true", "the chip shows plan mode on");
      // The write the model tried before planning was refused, and said why.
      const refused = await page.textContent(".tool");
      expect(refused.includes("plan mode"), `the refused call reads "${refused}"`);
      await themes(page, "review");
      await page.fill(".plan-review.pending .plan-note", "say what the file holds");
      await page.click(".plan-review.pending button.reject");
      await page.waitForFunction(() => document.querySelectorAll(".approval.plan-review").length === 2);
      await page.waitForSelector(".approval.plan-review.pending");
      const kept = await page.textContent(".approval.plan-review.decided .approval-outcome");
      expect(kept === "Kept planning: “say what the file holds”", `the first card says "${kept}"`);
      const second = await page.textContent(".approval.plan-review.pending .plan-body");
      expect(second.includes("first line"), `the second plan reads "${second}"`);
      await shoot(page, "second-plan");
      await page.click(".plan-review.pending button.allow");
      await page.waitForSelector(".turn-end", { state: "attached" });
      await page.waitForFunction(() => document.getElementById("plan-chip").getAttribute("aria-pressed") === "false");
      const outcomes = await page.locator(".approval.plan-review .approval-outcome").allTextContents();
      expect(outcomes[1] === "Approved: the agent carries the plan out", `the cards say ${JSON.stringify(outcomes)}`);
      await shoot(page, "approved");
      // The chip turns plan mode on again by itself, and a reload keeps it.
      await page.click("#plan-chip");
      await page.waitForSelector(".notice >> text=Plan mode on");
      await page.reload();
      await page.waitForSelector(".message.user");
      expect((await page.getAttribute("#plan-chip", "aria-pressed")) === "true", "after a reload the chip is on");
    },
  };
}
