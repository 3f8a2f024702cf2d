import { afterEach, expect, it } from "vitest";
import { cleanup, fireEvent, render, screen } from "@testing-library/react";
import type { ModelTurnView } from "../../lib/ipc/bindings";
import { ModelTurn } from "./ModelTurn";

afterEach(cleanup);

const turn = (over: Partial<ModelTurnView> = {}): ModelTurnView => ({
  model: "qwen3-coder",
  text: "I'll read the **rotation config** first.\n\n- then the log",
  calls: [
    { name: "fs_read", arguments: '{"path":"config/logrotate.conf"}', step: 2 },
    { name: "fs_write", arguments: "{not json", step: null },
  ],
  tokensIn: 1200,
  tokensOut: 85,
  costUsd: 0.0012,
  finishReason: "tool_calls",
  ...over,
});

it("shows the model's words as Markdown, its calls as chips, then tokens and cost", () => {
  render(<ModelTurn turn={turn()} raw='{"model":"qwen3-coder"}' />);
  const text = screen.getByTestId("model-text");
  expect(text.querySelector("strong")?.textContent).toBe("rotation config");
  expect(text.querySelector("li")?.textContent).toBe("then the log");
  const chips = screen.getAllByTestId("call-chip");
  expect(chips.map((c) => c.textContent)).toEqual(["fs_read config/logrotate.conf → #2", "fs_write {not json"]);
  expect(chips[0].getAttribute("data-step")).toBe("2");
  expect((chips[1] as HTMLButtonElement).disabled).toBe(true);
  expect(screen.getByTestId("model-turn").textContent).toContain("1200 tokens in, 85 out · $0.0012");
  expect(screen.queryByTestId("raw-result")).toBeNull();
  fireEvent.click(screen.getByTestId("show-raw"));
  expect(screen.getByTestId("raw-result").textContent).toBe('{"model":"qwen3-coder"}');
});

it("never turns the model's HTML into elements", () => {
  render(<ModelTurn turn={turn({ text: 'Done <img src=x onerror="alert(1)"> <script>alert(2)</script>' })} raw={null} />);
  const text = screen.getByTestId("model-text");
  expect(text.querySelector("img")).toBeNull();
  expect(text.querySelector("script")).toBeNull();
  expect(text.textContent).toContain("Done");
});
