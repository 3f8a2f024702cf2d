import { describe, expect, it } from "vitest";
import { hasSealed, shownSealed } from "./format";

describe("sealed secrets", () => {
  it("read as a mark, and everything else stays as it was", () => {
    const cmd = "mysql -u root --password ⟦sealed:O8IOn9odj0v2hTOrnvwdCyJAuCx-D1aQ⟧ -h db app";
    expect(shownSealed(cmd)).toBe("mysql -u root --password [sealed secret] -h db app");
    expect(hasSealed(cmd)).toBe(true);
    expect(hasSealed("cargo test")).toBe(false);
    expect(shownSealed("cargo test")).toBe("cargo test");
  });
});
