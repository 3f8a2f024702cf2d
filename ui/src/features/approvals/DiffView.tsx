import { useMemo, useRef, useState } from "react";
import { useVirtualizer } from "@tanstack/react-virtual";
import { languageOf, marks, parseUnified, sideBySide, type FileDiff, type Line } from "../../lib/diff";
import { Highlighted } from "../../lib/highlight";

/** Above this many rows the diff is virtualised (only the visible rows are in the page). */
const VIRTUAL_AFTER = 400;
const ROW_PX = 20;

type Mode = "unified" | "split";

type Row =
  | { t: "hunk"; text: string }
  | { t: "line"; line: Line }
  | { t: "pair"; left: Line | null; right: Line | null };

function rowsOf(f: FileDiff, mode: Mode): Row[] {
  const rows: Row[] = [];
  for (const h of f.hunks) {
    rows.push({ t: "hunk", text: h.header });
    if (mode === "unified") h.lines.forEach((line) => rows.push({ t: "line", line }));
    else sideBySide(h).forEach((p) => rows.push({ t: "pair", ...p }));
  }
  return rows;
}

function Text({ text, lang }: { text: string; lang: string | null }) {
  return (
    <>
      {marks(text).map((m, i) =>
        m.invisible ? (
          <span key={i} className="invisible-char" title="invisible character">
            {m.text}
          </span>
        ) : (
          <Highlighted key={i} text={m.text} language={lang} />
        ),
      )}
    </>
  );
}

const SIGN = { add: "+", del: "-", context: " " } as const;

function RowView({ row, lang }: { row: Row; lang: string | null }) {
  if (row.t === "hunk") return <div className="diff-hunk">{row.text}</div>;
  if (row.t === "line") {
    const l = row.line;
    return (
      <div className={`diff-line ${l.kind}`} data-kind={l.kind}>
        <span className="ln">{l.old ?? ""}</span>
        <span className="ln">{l.new ?? ""}</span>
        <span className="sign">{SIGN[l.kind]}</span>
        <code>
          <Text text={l.text} lang={lang} />
        </code>
      </div>
    );
  }
  const side = (l: Line | null, which: "old" | "new") => (
    <div className={`diff-side ${l ? (l.kind === "context" ? "context" : which === "old" ? "del" : "add") : "empty"}`}>
      <span className="ln">{l ? (which === "old" ? l.old : l.new) : ""}</span>
      <code>{l && <Text text={l.text} lang={lang} />}</code>
    </div>
  );
  return (
    <div className="diff-pair">
      {side(row.left, "old")}
      {side(row.right, "new")}
    </div>
  );
}

function FileView({ file, mode }: { file: FileDiff; mode: Mode }) {
  const rows = useMemo(() => rowsOf(file, mode), [file, mode]);
  const lang = languageOf(file.to !== "/dev/null" ? file.to : file.from);
  const parent = useRef<HTMLDivElement>(null);
  const virtual = rows.length > VIRTUAL_AFTER;
  const v = useVirtualizer({
    count: virtual ? rows.length : 0,
    getScrollElement: () => parent.current,
    estimateSize: () => ROW_PX,
    overscan: 30,
  });
  return (
    <section className="diff-file">
      <header className="diff-file-head">
        <span className="path">
          {file.from === "/dev/null" ? "new file " : file.to === "/dev/null" ? "deleted " : ""}
          {file.to === "/dev/null" ? file.from : file.to}
        </span>
        <span className="stat">
          <span className="add">+{file.added}</span> <span className="del">−{file.removed}</span>
        </span>
      </header>
      {file.notes.map((n, i) => (
        <div key={i} className="diff-note">{n}</div>
      ))}
      {virtual ? (
        <div ref={parent} className="diff-body virtual" data-virtual-rows={rows.length}>
          <div style={{ height: v.getTotalSize(), position: "relative" }}>
            {v.getVirtualItems().map((it) => (
              <div key={it.key} style={{ position: "absolute", top: it.start, left: 0, right: 0, height: ROW_PX }}>
                <RowView row={rows[it.index]} lang={lang} />
              </div>
            ))}
          </div>
        </div>
      ) : (
        <div className="diff-body">
          {rows.map((r, i) => (
            <RowView key={i} row={r} lang={lang} />
          ))}
        </div>
      )}
    </section>
  );
}

/** The exact change an approval would make, as the harness previewed it. */
export function DiffView({ preview }: { preview: string }) {
  const files = useMemo(() => parseUnified(preview), [preview]);
  const [mode, setMode] = useState<Mode>("unified");
  return (
    <div className="diff" data-testid="diff">
      <div className="diff-toolbar" role="group" aria-label="Diff layout">
        <button className={mode === "unified" ? "on" : ""} onClick={() => setMode("unified")}>Unified</button>
        <button className={mode === "split" ? "on" : ""} onClick={() => setMode("split")}>Side by side</button>
      </div>
      {files.map((f, i) => (
        <FileView key={i} file={f} mode={mode} />
      ))}
    </div>
  );
}
