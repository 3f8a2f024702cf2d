import { afterEach, expect, it } from "vitest";
import { cleanup, fireEvent, render, screen, waitFor } from "@testing-library/react";
import { QueryClient } from "@tanstack/react-query";
import { App } from "../../App";
import { fakeBackend } from "../../lib/ipc/fake";
import { resetUi } from "../../lib/store";

afterEach(cleanup);

it("says whether the model server answers and offers the model, and registers a found agent in one click", async () => {
  resetUi({ view: "settings", runId: null, approvalId: null });
  const fake = fakeBackend({
    modelServer: { baseUrl: "http://127.0.0.1:11434/v1", model: "qwen3-coder", answers: true, models: ["llama3", "mistral"], hasModel: false, problem: "the server does not offer qwen3-coder (for Ollama: `ollama pull qwen3-coder`)" },
    onPath: [
      { agent: { name: "qwen", label: "Qwen Code", path: "/usr/bin/qwen", command: ["/usr/bin/qwen", "--acp"] }, registered: false },
      { agent: { name: "opencode", label: "opencode", path: "/usr/bin/opencode", command: ["/usr/bin/opencode", "acp"] }, registered: true },
    ],
  });
  render(<App backend={fake.backend} client={new QueryClient()} />);
  await waitFor(() => expect(screen.getByTestId("model-server-text").textContent).toContain("answers, but"));
  expect(screen.getByTestId("model-server-text").textContent).toContain("ollama pull qwen3-coder");
  expect(screen.getByTestId("model-server-text").textContent).toContain("it offers llama3, mistral");
  expect(screen.getByTestId("model-server-status").textContent).toBe("not ready");
  await waitFor(() => expect(screen.getByTestId("register-qwen")).toBeTruthy());
  expect(screen.queryByTestId("register-opencode")).toBeNull();
  expect(screen.getByText("registered as opencode")).toBeTruthy();
  fireEvent.click(screen.getByTestId("register-qwen"));
  await waitFor(() => expect(screen.getByText("registered as qwen")).toBeTruthy());
  expect(fake.calls.filter((c) => c.name === "registerFoundAgent").map((c) => c.args)).toEqual([["qwen"]]);
});
