// Reading the harness's unified diffs (the exact preview an approval carries) into rows a viewer
// can draw unified or side by side. The harness already made invisible characters visible (·, ␍,
// ⟨U+200B⟩ …); `marks` finds them so the viewer can highlight them.

export type Kind = "context" | "add" | "del";

export interface Line {
  kind: Kind;
  text: string;
  /** 1-based line numbers in the old / new file (null where the line is absent). */
  old: number | null;
  new: number | null;
}

export interface Hunk {
  header: string;
  lines: Line[];
}

export interface FileDiff {
  from: string;
  to: string;
  hunks: Hunk[];
  /** Lines the harness wrote around the diff: notes, "binary file …", "diff cut …". */
  notes: string[];
  added: number;
  removed: number;
}

const HUNK = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(.*)$/;

export function parseUnified(text: string): FileDiff[] {
  const files: FileDiff[] = [];
  let file: FileDiff | null = null;
  let hunk: Hunk | null = null;
  let o = 0;
  let n = 0;
  const pendingNotes: string[] = [];
  const lines = text.split("\n");
  if (lines.length && lines[lines.length - 1] === "") lines.pop();
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i];
    if (l.startsWith("--- ") && lines[i + 1]?.startsWith("+++ ")) {
      file = { from: strip(l.slice(4)), to: strip(lines[i + 1].slice(4)), hunks: [], notes: pendingNotes.splice(0), added: 0, removed: 0 };
      files.push(file);
      hunk = null;
      i++;
      continue;
    }
    const m = HUNK.exec(l);
    if (m && file) {
      o = Number(m[1]);
      n = Number(m[3]);
      hunk = { header: l, lines: [] };
      file.hunks.push(hunk);
      continue;
    }
    if (hunk && file && (l.startsWith(" ") || l.startsWith("+") || l.startsWith("-"))) {
      const body = l.slice(1);
      if (l[0] === " ") hunk.lines.push({ kind: "context", text: body, old: o++, new: n++ });
      else if (l[0] === "+") {
        hunk.lines.push({ kind: "add", text: body, old: null, new: n++ });
        file.added++;
      } else {
        hunk.lines.push({ kind: "del", text: body, old: o++, new: null });
        file.removed++;
      }
      continue;
    }
    if (l.startsWith("\\")) continue; // "\ No newline at end of file"
    if (file) file.notes.push(l);
    else pendingNotes.push(l);
  }
  if (!files.length && pendingNotes.length) {
    files.push({ from: "", to: "", hunks: [], notes: pendingNotes, added: 0, removed: 0 });
  }
  return files;
}

function strip(name: string): string {
  if (name === "/dev/null") return name;
  return name.replace(/^[ab]\//, "");
}

export interface Row {
  left: Line | null;
  right: Line | null;
}

/** Pairs a hunk's lines for a side-by-side view: deletions face the additions that replace them. */
export function sideBySide(h: Hunk): Row[] {
  const rows: Row[] = [];
  let dels: Line[] = [];
  let adds: Line[] = [];
  const flush = () => {
    const k = Math.max(dels.length, adds.length);
    for (let i = 0; i < k; i++) rows.push({ left: dels[i] ?? null, right: adds[i] ?? null });
    dels = [];
    adds = [];
  };
  for (const l of h.lines) {
    if (l.kind === "del") dels.push(l);
    else if (l.kind === "add") adds.push(l);
    else {
      flush();
      rows.push({ left: l, right: l });
    }
  }
  flush();
  return rows;
}

/** Splits a line into plain runs and invisible characters made visible: the harness's markers
 * (⟨U+200B⟩, ␍), tabs (→) and trailing spaces (·), so a reviewer sees every byte that changes. */
export function marks(text: string): { text: string; invisible: boolean }[] {
  const trailing = /[ ]+$/.exec(text);
  const body = trailing ? text.slice(0, trailing.index) : text;
  const re = /(⟨U\+[0-9A-F]{4,6}⟩|␍|\t)/g;
  const out: { text: string; invisible: boolean }[] = [];
  let last = 0;
  for (const m of body.matchAll(re)) {
    const at = m.index ?? 0;
    if (at > last) out.push({ text: body.slice(last, at), invisible: false });
    out.push({ text: m[0] === "\t" ? "→\t" : m[0], invisible: true });
    last = at + m[0].length;
  }
  if (last < body.length) out.push({ text: body.slice(last), invisible: false });
  if (trailing) out.push({ text: "·".repeat(trailing[0].length), invisible: true });
  return out;
}

/** The language Prism should use for a path, by its extension. */
export function languageOf(path: string): string | null {
  const ext = path.split(".").pop()?.toLowerCase() ?? "";
  const map: Record<string, string> = {
    rs: "rust", ts: "typescript", tsx: "tsx", js: "javascript", jsx: "jsx", py: "python",
    sh: "bash", bash: "bash", json: "json", toml: "toml", yaml: "yaml", yml: "yaml",
    md: "markdown", conf: "nginx", css: "css", html: "markup", xml: "markup", go: "go",
    c: "c", h: "c", cpp: "cpp", java: "java", sql: "sql", ini: "ini",
  };
  return map[ext] ?? null;
}

/**
 * The same change the other way round: what a rollback's diff (now → before) says, told as the
 * change that was made (before → now). Hunks swap sides, with removals kept ahead of additions;
 * a note `file: A -> B` swaps its ends; the head of a file too large to diff is dropped, since it
 * is the other side's.
 */
export function reversed(text: string): string {
  const lines = text.split("\n");
  const out: string[] = [];
  let dels: string[] = [];
  let adds: string[] = [];
  let large = false;
  const flush = () => {
    out.push(...dels, ...adds);
    dels = [];
    adds = [];
  };
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i];
    if (l.startsWith("--- ") && lines[i + 1]?.startsWith("+++ ")) {
      flush();
      out.push(`--- ${lines[i + 1].slice(4)}`, `+++ ${l.slice(4)}`);
      i++;
      continue;
    }
    const m = HUNK.exec(l);
    if (m) {
      flush();
      const side = (start: string, count?: string) => (count === undefined ? start : `${start},${count}`);
      out.push(`@@ -${side(m[3], m[4])} +${side(m[1], m[2])} @@${m[5]}`);
      continue;
    }
    if (l.startsWith("+") && !large) {
      dels.push(`-${l.slice(1)}`);
      continue;
    }
    if (l.startsWith("-")) {
      adds.push(`+${l.slice(1)}`);
      continue;
    }
    if (l.startsWith("+")) continue;
    flush();
    const note = /^((?:binary|large) file .*): (.*) -> (.*)$/.exec(l);
    if (note) {
      large = note[1].startsWith("large");
      out.push(`${note[1]}: ${note[3]} -> ${note[2]}`);
      continue;
    }
    if (large && l.startsWith("(too large")) continue;
    out.push(l);
  }
  flush();
  return out.join("\n");
}
