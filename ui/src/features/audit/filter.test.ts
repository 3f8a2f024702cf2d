import { expect, it } from "vitest";
import { toFilter } from "./Audit";

it("leaves empty fields out and turns times into Unix ms", () => {
  expect(toFilter({ run: " ", kind: "approval", actor: "", since: "", until: "" })).toEqual({ kind: "approval" });
  const f = toFilter({ run: "01a2", kind: "", actor: "user", since: "2026-11-29T10:00", until: "" });
  expect(f.run).toBe("01a2");
  expect(f.actor).toBe("user");
  expect(f.since).toBe(new Date("2026-11-29T10:00").getTime());
});
