import { afterEach, describe, expect, it } from "vitest";
import { cleanup, fireEvent, render, screen, waitFor } from "@testing-library/react";
import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { BackendProvider } from "../../lib/ipc/context";
import { fakeBackend } from "../../lib/ipc/fake";
import type { BudgetView } from "../../lib/ipc/bindings";
import { Spending, amount } from "./Budget";

afterEach(cleanup);

const RUN = "0193aaaa-0000-7000-8000-000000000001";

function show(budget: BudgetView) {
  const fake = fakeBackend();
  render(
    <QueryClientProvider client={new QueryClient()}>
      <BackendProvider backend={fake.backend}>
        <Spending runId={RUN} budget={budget} />
      </BackendProvider>
    </QueryClientProvider>,
  );
  return fake;
}

const waiting: BudgetView = {
  limits: { tokens: 10_000, costUsd: 1, wallSecs: null, steps: null },
  spent: { tokens: 12_000, costUsd: 0.25, wallSecs: 40, steps: 3 },
  reached: { measure: "tokens", limit: 10_000, spent: 12_000 },
  waiting: true,
};

describe("the budget on a run's detail", () => {
  it("shows a bar for each limit against what was spent", () => {
    show({ ...waiting, waiting: false, reached: null, spent: { ...waiting.spent, tokens: 2_500 } });
    const bars = screen.getAllByRole("progressbar");
    expect(bars).toHaveLength(2);
    expect(bars[0].getAttribute("aria-valuenow")).toBe("2500");
    expect(screen.getByTestId("budget-tokens").textContent).toContain("2,500 tokens of 10,000 tokens (25%)");
    expect(screen.getByTestId("budget-cost").textContent).toContain("$0.25 of $1.00 (25%)");
    expect(screen.queryByTestId("budget-card")).toBeNull();
  });

  it("at its limit asks: allow as much again, or stop here", async () => {
    const fake = show(waiting);
    const card = screen.getByTestId("budget-card");
    expect(card.textContent).toContain("It spent 12,000 tokens of a budget of 10,000 tokens");
    fireEvent.click(screen.getByRole("button", { name: "Allow 10,000 tokens more" }));
    await waitFor(() => expect(fake.calls.some((c) => c.name === "allowMore")).toBe(true));
    expect(fake.calls.find((c) => c.name === "allowMore")?.args).toEqual([RUN, "tokens", 10_000]);
    fireEvent.click(screen.getByRole("button", { name: "Stop here" }));
    await waitFor(() => expect(fake.calls.find((c) => c.name === "stopAtBudget")?.args).toEqual([RUN]));
  });

  it("shows nothing for a run without a budget", () => {
    show({ ...waiting, limits: { tokens: null, costUsd: null, wallSecs: null, steps: null }, reached: null, waiting: false });
    expect(screen.queryByTestId("budget")).toBeNull();
  });

  it("reads time as people do", () => {
    expect(amount("wall", 59)).toBe("59s");
    expect(amount("wall", 1800)).toBe("30m 00s");
    expect(amount("wall", 7260)).toBe("2h 01m");
  });
});
