import { afterEach, expect, it } from "vitest";
import { cleanup, fireEvent, render } from "@testing-library/react";
import { DiffView } from "./DiffView";

afterEach(cleanup);

function bigDiff(lines: number): string {
  const body = Array.from({ length: lines }, (_, i) => `+line ${i}`).join("\n");
  return `--- /dev/null\n+++ b/big.txt\n@@ -0,0 +1,${lines} @@\n${body}\n`;
}

it("virtualises a large diff: only the visible rows are in the page", () => {
  const { container } = render(<DiffView preview={bigDiff(5000)} />);
  const body = container.querySelector(".diff-body.virtual");
  expect(body?.getAttribute("data-virtual-rows")).toBe("5001");
  expect(container.querySelectorAll(".diff-line").length).toBeLessThan(200);
});

it("draws a small diff whole, unified or side by side, with invisible characters marked", () => {
  const preview = "--- a/x.sh\n+++ b/x.sh\n@@ -1,1 +1,1 @@\n-echo hi\n+echo ⟨U+202E⟩hi\t\n";
  const { container, getByText } = render(<DiffView preview={preview} />);
  expect(container.querySelectorAll(".diff-line").length).toBe(2);
  expect(container.querySelectorAll(".invisible-char").length).toBe(2);
  fireEvent.click(getByText("Side by side"));
  const pair = container.querySelector(".diff-pair");
  expect(pair?.querySelector(".diff-side.del")?.textContent).toContain("echo hi");
  expect(pair?.querySelector(".diff-side.add")?.textContent).toContain("hi");
});
