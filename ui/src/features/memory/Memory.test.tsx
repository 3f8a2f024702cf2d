import { afterEach, beforeEach, expect, it } from "vitest";
import { cleanup, fireEvent, render, screen, waitFor } from "@testing-library/react";
import { QueryClient } from "@tanstack/react-query";
import { App } from "../../App";
import { fakeBackend } from "../../lib/ipc/fake";
import { resetUi } from "../../lib/store";
import type { FactView } from "../../lib/ipc/bindings";

const fact = (id: string, value: string): FactView => ({
  id, category: "preferences", key: `k-${id}`, version: 1, value, confidence: 0.9, origin: "user",
  runId: null, stepSeq: null, sourceText: null, createdAt: Date.now(), updatedAt: Date.now(),
});

beforeEach(() => resetUi({ view: "memory", runId: null, approvalId: null }));
afterEach(cleanup);

it("deletes one fact and shows the rest", async () => {
  const fake = fakeBackend({ facts: [fact("0193f000-0000-7000-8000-000000000001", "prefers tabs"), fact("0193f000-0000-7000-8000-000000000002", "uses Debian")] });
  render(<App backend={fake.backend} client={new QueryClient()} />);
  const facts = await screen.findAllByTestId("fact");
  expect(facts).toHaveLength(2);
  fireEvent.click(facts[0].querySelector('[data-testid="delete-fact"]') as Element);
  await waitFor(() => expect(screen.getAllByTestId("fact")).toHaveLength(1));
  expect(fake.calls.find((c) => c.name === "memoryDelete")?.args).toEqual(["0193f000-0000-7000-8000-000000000001"]);
  expect(screen.getByTestId("fact-value").textContent).toBe("uses Debian");
});
