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

it("on a team database, narrows this machine's tray and notifications to its own runs", async () => {
  resetUi({ view: "settings", runId: null, approvalId: null });
  const fake = fakeBackend({ teamConnected: "postgres://reins@db:5432/reins" });
  render(<App backend={fake.backend} client={new QueryClient()} />);
  const choice = await screen.findByTestId("team-alerts");
  const radio = (value: string) => choice.querySelector(`input[value="${value}"]`) as HTMLInputElement;
  expect(radio("team").checked).toBe(true);
  expect(choice.textContent).toContain("laptop");
  fireEvent.click(radio("mine"));
  await waitFor(() => expect(radio("mine").checked).toBe(true));
  expect(fake.calls.filter((c) => c.name === "setAlertScope").map((c) => c.args)).toEqual([["mine"]]);
});

it("offers no tray choice on this machine's own database", async () => {
  resetUi({ view: "settings", runId: null, approvalId: null });
  const fake = fakeBackend();
  render(<App backend={fake.backend} client={new QueryClient()} />);
  await waitFor(() => expect(screen.getByTestId("team-now").textContent).toContain("own database"));
  expect(screen.queryByTestId("team-alerts")).toBeNull();
});

it("says so when it cannot tell which database the app is on, instead of claiming its own", async () => {
  resetUi({ view: "settings", runId: null, approvalId: null });
  const fake = fakeBackend({ teamError: { code: "invalid_input", message: "/home/u/.config/reins/alerts.toml: unknown variant `everyone`" } });
  render(<App backend={fake.backend} client={new QueryClient({ defaultOptions: { queries: { retry: false } } })} />);
  await waitFor(() => expect(screen.getByTestId("team-now").textContent).toContain("alerts.toml: unknown variant"));
  expect(screen.getByTestId("team-now").textContent).not.toContain("own database");
});
