import { afterEach, expect, it } from "vitest";
import { act, cleanup, render, screen, waitFor } from "@testing-library/react";
import { QueryClient } from "@tanstack/react-query";
import { App } from "../../App";
import { fakeBackend } from "../../lib/ipc/fake";
import { resetUi } from "../../lib/store";

afterEach(cleanup);

it("verifies the chain once, not again on every change (verifying is itself a change)", async () => {
  resetUi({ view: "audit", runId: null, approvalId: null });
  const fake = fakeBackend();
  render(<App backend={fake.backend} client={new QueryClient()} />);
  await waitFor(() => expect(screen.getByTestId("chain-status").textContent).toContain("intact"));
  for (let i = 0; i < 5; i++) act(() => fake.emitChanged());
  await waitFor(() => expect(fake.calls.filter((c) => c.name === "auditPage").length).toBeGreaterThan(1));
  expect(fake.calls.filter((c) => c.name === "auditVerify")).toHaveLength(1);
});
