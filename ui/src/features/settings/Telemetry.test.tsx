import { afterEach, expect, it } from "vitest";
import { cleanup, fireEvent, render, screen, waitFor } from "@testing-library/react";
import { QueryClient } from "@tanstack/react-query";
import { App } from "../../App";
import { fakeBackend } from "../../lib/ipc/fake";
import { resetUi } from "../../lib/store";

afterEach(cleanup);

const open = (fake: ReturnType<typeof fakeBackend>) => {
  resetUi({ view: "settings", runId: null, approvalId: null });
  render(<App backend={fake.backend} client={new QueryClient({ defaultOptions: { queries: { retry: false } } })} />);
  const panel = screen.getByTestId("telemetry");
  const input = (name: string) => panel.querySelector(`input[name="${name}"]`) as HTMLInputElement;
  return { panel, input };
};

it("turns export on with the credential in the keyring, sends now, and turns it off", async () => {
  const fake = fakeBackend();
  const { panel, input } = open(fake);
  await waitFor(() => expect(screen.getByTestId("telemetry-now").textContent).toContain("Off: no trace leaves this machine"));
  fireEvent.change(input("otel-endpoint"), { target: { value: "https://cloud.langfuse.com/api/public/otel" } });
  fireEvent.click(screen.getByText("Add header"));
  fireEvent.change(input("otel-header-0"), { target: { value: "authorization" } });
  // Typed as a plain value, a credential is refused, and nothing is saved.
  fireEvent.change(input("otel-value-0"), { target: { value: "Basic cGs6c2s=" } });
  fireEvent.click(screen.getByText("Save and start"));
  await waitFor(() => expect(panel.querySelector("[role=alert]")?.textContent).toContain("a credential is not kept in a file"));
  expect(fake.calls.filter((c) => c.name === "keySet")).toEqual([]);

  fireEvent.change(panel.querySelector("select") as HTMLSelectElement, { target: { value: "key" } });
  fireEvent.change(panel.querySelector('input[aria-label="Prefix"]') as HTMLInputElement, { target: { value: "Basic " } });
  fireEvent.change(input("otel-key-0"), { target: { value: "langfuse" } });
  fireEvent.change(input("otel-secret-0"), { target: { value: "cGs6c2s=" } });
  fireEvent.click(screen.getByLabelText(/Send content/));
  fireEvent.click(screen.getByText("Save and start"));
  await waitFor(() => expect(screen.getByTestId("telemetry-now").textContent).toContain("Sending to https://cloud.langfuse.com/api/public/otel/v1/traces"));
  expect(screen.getByTestId("telemetry-now").textContent).toContain("content on, redacted");
  expect(fake.calls.filter((c) => c.name === "keySet").map((c) => c.args)).toEqual([["langfuse", "cGs6c2s="]]);
  const saved = fake.calls.filter((c) => c.name === "saveTelemetrySettings").map((c) => c.args[0]);
  expect(saved.at(-1)).toEqual({
    endpoint: "https://cloud.langfuse.com/api/public/otel",
    content: true,
    metrics: true,
    serviceName: null,
    grpc: false,
    headers: [{ name: "authorization", value: null, key: "langfuse", prefix: "Basic " }],
  });
  expect(input("otel-secret-0").value).toBe("");

  fireEvent.click(screen.getByText("Send now"));
  await waitFor(() => expect(screen.getByTestId("otel-sent").textContent).toContain("Sent 12 spans for 30 events; caught up."));
  await waitFor(() => expect(screen.getByTestId("telemetry-now").textContent).toContain("12 spans sent"));

  fireEvent.click(screen.getByText("Turn off"));
  await waitFor(() => expect(screen.getByTestId("telemetry-now").textContent).toContain("Off"));
  expect(saved.length + 1).toBe(fake.calls.filter((c) => c.name === "saveTelemetrySettings").length);
});

it("shows what is saved, and an endpoint that is not a URL as Rust's error", async () => {
  const fake = fakeBackend({ telemetry: { endpoint: "http://localhost:6006", content: false, metrics: false, serviceName: "team-a", grpc: false, headers: [{ name: "x-team", value: "a", key: null, prefix: "" }] } });
  const { input } = open(fake);
  await waitFor(() => expect(input("otel-endpoint").value).toBe("http://localhost:6006"));
  expect(input("otel-service").value).toBe("team-a");
  expect(input("otel-value-0").value).toBe("a");
  expect(screen.getByTestId("telemetry-now").textContent).toContain("content off · metrics off");
  fireEvent.change(input("otel-endpoint"), { target: { value: "localhost:4318" } });
  fireEvent.click(screen.getByText("Save and start"));
  await waitFor(() => expect(screen.getByTestId("telemetry").querySelector("[role=alert]")?.textContent).toContain("is not a URL"));
});

it("sends over gRPC when asked, with the address as it is", async () => {
  const fake = fakeBackend();
  const { input } = open(fake);
  await waitFor(() => expect(screen.getByTestId("telemetry-now").textContent).toContain("Off"));
  fireEvent.click(input("otel-grpc"));
  expect(screen.getByTestId("telemetry").textContent).toContain("OTLP over gRPC: the address, usually port 4317");
  fireEvent.change(input("otel-endpoint"), { target: { value: "http://tempo:4317" } });
  fireEvent.click(screen.getByText("Save and start"));
  await waitFor(() => expect(screen.getByTestId("telemetry-now").textContent).toContain("Sending to http://tempo:4317 over gRPC"));
  expect(fake.calls.filter((c) => c.name === "saveTelemetrySettings").map((c) => (c.args[0] as { grpc: boolean }).grpc)).toEqual([true]);
});
