import { afterEach, describe, expect, it } from "vitest";
import { cleanup, fireEvent, render, screen, waitFor } from "@testing-library/react";
import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { BackendProvider } from "../../lib/ipc/context";
import { fakeBackend } from "../../lib/ipc/fake";
import { RemoteApprovals } from "./RemoteApprovals";

afterEach(cleanup);

function mount() {
  const fake = fakeBackend();
  const client = new QueryClient({ defaultOptions: { queries: { retry: false } } });
  render(
    <BackendProvider backend={fake.backend}>
      <QueryClientProvider client={client}>
        <RemoteApprovals />
      </QueryClientProvider>
    </BackendProvider>,
  );
  return fake;
}

describe("Settings → Remote approvals", () => {
  it("starts serving, pairs a device with a code and a QR code, and revokes a device", async () => {
    const fake = mount();
    fireEvent.click(await screen.findByText("Start"));
    expect((await screen.findByTestId("remote-url")).textContent).toBe("http://127.0.0.1:8787/");
    fireEvent.change(screen.getByPlaceholderText("my phone"), { target: { value: "my phone" } });
    fireEvent.click(screen.getByText("Pair…"));
    expect((await screen.findByTestId("pairing-code")).textContent).toBe("7KQ2M-XD4PA");
    expect(screen.getByAltText("QR code of the pairing link").getAttribute("src")).toMatch(/^data:image\/png;base64,/);
    expect(screen.getByTestId("pairing").textContent).toContain("#pair=7KQ2M-XD4PA");
    fireEvent.click(await screen.findByText("Revoke"));
    await waitFor(() => expect(screen.queryByTestId("devices")).toBeNull());
    expect(fake.calls.map((c) => c.name)).toEqual(expect.arrayContaining(["remoteStart", "remotePair", "revokeDevice"]));
  });
});
