import { describe, expect, it } from "vitest";
import { marks, parseUnified, reversed, sideBySide } from "./diff";

const DIFF = `--- a/config/logrotate.conf
+++ b/config/logrotate.conf
@@ -1,4 +1,5 @@
 /var/log/app/*.log {
-    weekly
+    daily
+    maxsize 100M
     rotate 4
 }
`;

describe("parseUnified", () => {
  it("numbers lines on both sides and counts changes", () => {
    const [f] = parseUnified(DIFF);
    expect(f.to).toBe("config/logrotate.conf");
    expect(f.added).toBe(2);
    expect(f.removed).toBe(1);
    const lines = f.hunks[0].lines;
    expect(lines.map((l) => [l.kind, l.old, l.new])).toEqual([
      ["context", 1, 1],
      ["del", 2, null],
      ["add", null, 2],
      ["add", null, 3],
      ["context", 3, 4],
      ["context", 4, 5],
    ]);
  });

  it("keeps the harness's notes (binary, cut, line endings)", () => {
    const files = parseUnified("binary file x.bin: 3 bytes -> 4 bytes\n");
    expect(files[0].notes).toEqual(["binary file x.bin: 3 bytes -> 4 bytes"]);
    const noted = parseUnified("note: line endings change\n" + DIFF);
    expect(noted[0].notes[0]).toMatch(/line endings/);
  });
});

describe("sideBySide", () => {
  it("puts a deletion beside the addition that replaces it", () => {
    const rows = sideBySide(parseUnified(DIFF)[0].hunks[0]);
    expect(rows[1].left?.text).toBe("    weekly");
    expect(rows[1].right?.text).toBe("    daily");
    expect(rows[2].left).toBeNull();
    expect(rows[2].right?.text).toBe("    maxsize 100M");
  });
});

describe("marks", () => {
  it("makes invisible characters visible", () => {
    expect(marks("echo ⟨U+202E⟩txt\t ")).toEqual([
      { text: "echo ", invisible: false },
      { text: "⟨U+202E⟩", invisible: true },
      { text: "txt", invisible: false },
      { text: "→\t", invisible: true },
      { text: "·", invisible: true },
    ]);
  });
});

describe("reversed", () => {
  it("tells a rollback's diff as the change that was made", () => {
    const back = `--- a/NOTES.md
+++ b/NOTES.md
@@ -1,3 +1,2 @@
 title
-new line
-and another
+old line
 end
`;
    const [f] = parseUnified(reversed(back));
    expect(f.hunks[0].header).toBe("@@ -1,2 +1,3 @@");
    expect(f.hunks[0].lines.map((l) => [l.kind, l.text])).toEqual([
      ["context", "title"],
      ["del", "old line"],
      ["add", "new line"],
      ["add", "and another"],
      ["context", "end"],
    ]);
  });

  it("swaps a created file's sides and a binary note's ends", () => {
    const [created] = parseUnified(reversed("--- a/x.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-hi\n"));
    expect([created.from, created.to]).toEqual(["/dev/null", "x.txt"]);
    expect(created.hunks[0].lines.map((l) => l.kind)).toEqual(["add"]);
    expect(reversed("binary file x.bin: 4 bytes -> absent")).toBe("binary file x.bin: absent -> 4 bytes");
  });
});
