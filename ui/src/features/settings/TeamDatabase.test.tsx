import { afterEach, expect, it } from "vitest";
import { cleanup, fireEvent, render, screen, waitFor } from "@testing-library/react";
import { QueryClient } from "@tanstack/react-query";
import { App } from "../../App";
import { fakeBackend } from "../../lib/ipc/fake";
import { resetUi } from "../../lib/store";

afterEach(cleanup);

it("tests a team database, keeps its password in the keyring, and connects", async () => {
  resetUi({ view: "settings", runId: null, approvalId: null });
  const fake = fakeBackend();
  render(<App backend={fake.backend} client={new QueryClient()} />);
  await waitFor(() => expect(screen.getByTestId("team-now").textContent).toContain("own database"));
  const panel = screen.getByTestId("team-database");
  const input = (name: string) => panel.querySelector(`input[name="${name}"]`) as HTMLInputElement;
  fireEvent.change(input("team-url"), { target: { value: "postgres://reins:hunter2@db/reins" } });
  fireEvent.click(screen.getByText("Test"));
  await waitFor(() => expect(screen.getByTestId("team-check").textContent).toContain("take the password out of the URL"));

  fireEvent.change(input("team-url"), { target: { value: "postgres://reins@db:5432/reins?sslmode=verify-full" } });
  fireEvent.change(input("team-key"), { target: { value: "team-db" } });
  fireEvent.change(input("team-password"), { target: { value: "s3cret" } });
  fireEvent.click(screen.getByText("Test"));
  await waitFor(() => expect(screen.getByTestId("team-check").textContent).toContain("a new database"));
  expect(fake.calls.filter((c) => c.name === "keySet").map((c) => c.args)).toEqual([["team-db", "s3cret"]]);
  expect(input("team-password").value).toBe("");

  fireEvent.click(screen.getByText("Connect and restart"));
  await waitFor(() => expect(screen.getByTestId("team-restarting")).toBeTruthy());
  expect(fake.calls.filter((c) => c.name === "connectTeamDatabase").map((c) => c.args)).toEqual([
    [{ url: "postgres://reins@db:5432/reins?sslmode=verify-full", passwordKey: "team-db" }],
  ]);
});
