import { useEffect, useMemo, useRef, useState } from "react";
import { useInfiniteQuery, useMutation, useQuery } from "@tanstack/react-query";
import { useVirtualizer } from "@tanstack/react-virtual";
import type { ExportFormat, Filter } from "../../lib/ipc/bindings";
import { useBackend } from "../../lib/ipc/context";
import { shortId, time } from "../../lib/format";
import { VERIFY_KEY, chainLabel } from "./verify";

const PAGE = 500;
const ROW_PX = 30;

/** The filter as the form holds it, turned into what Rust accepts (empty fields left out). */
export function toFilter(f: { run: string; kind: string; actor: string; since: string; until: string }): Filter {
  const out: Filter = {};
  if (f.run.trim()) out.run = f.run.trim();
  if (f.kind.trim()) out.kind = f.kind.trim();
  if (f.actor.trim()) out.actor = f.actor.trim();
  if (f.since) out.since = new Date(f.since).getTime();
  if (f.until) out.until = new Date(f.until).getTime();
  return out;
}

export function Audit() {
  const backend = useBackend();
  const [form, setForm] = useState({ run: "", kind: "", actor: "", since: "", until: "" });
  const filter = useMemo(() => toFilter(form), [form]);
  const pages = useInfiniteQuery({
    queryKey: ["audit", filter],
    queryFn: ({ pageParam }) => backend.auditPage({ filter, before: pageParam, oldestFirst: false, limit: PAGE }),
    initialPageParam: null as number | null,
    getNextPageParam: (last) => last.next ?? undefined,
  });
  const rows = useMemo(() => pages.data?.pages.flatMap((p) => p.events) ?? [], [pages.data]);
  const verify = useQuery({ queryKey: [VERIFY_KEY], queryFn: () => backend.auditVerify(), staleTime: Infinity });
  const [exported, setExported] = useState<string | null>(null);
  const [open, setOpen] = useState<number | null>(null);
  const opened = rows.find((e) => e.seq === open) ?? null;
  const exp = useMutation({
    mutationFn: (format: ExportFormat) => backend.auditExport(format, filter),
    onSuccess: (s) => setExported(s ? `Exported ${s.count} events to ${s.path} (sha256 ${s.sha256.slice(0, 12)}…)` : null),
  });

  const parent = useRef<HTMLDivElement>(null);
  const v = useVirtualizer({ count: rows.length, getScrollElement: () => parent.current, estimateSize: () => ROW_PX, overscan: 20 });
  const items = v.getVirtualItems();
  const lastIndex = items.length ? items[items.length - 1].index : 0;
  useEffect(() => {
    if (lastIndex >= rows.length - 50 && pages.hasNextPage && !pages.isFetchingNextPage) void pages.fetchNextPage();
  }, [lastIndex, rows.length, pages]);

  const set = (k: keyof typeof form) => (e: React.ChangeEvent<HTMLInputElement>) => setForm({ ...form, [k]: e.target.value });
  const vd = verify.data;
  return (
    <div className="page audit">
      <header className="page-head">
        <div>
          <h1>Audit log</h1>
          <div className="muted">Every decision, step and change, hash-chained: editing, deleting or reordering an event breaks the chain.</div>
        </div>
        <div className="row">
          <span className={`pill ${vd ? (vd.intact ? "pill-done" : "pill-failed") : ""}`} data-testid="chain-status">
            {verify.isLoading ? "verifying…" : vd ? chainLabel(vd, rows) : "not verified"}
          </span>
          <button onClick={() => void verify.refetch()}>Verify</button>
          <button data-testid="export-jsonl" onClick={() => exp.mutate("jsonl")}>Export JSONL…</button>
          <button onClick={() => exp.mutate("csv")}>Export CSV…</button>
        </div>
      </header>
      {exported && <div className="notice" data-testid="export-done">{exported}</div>}
      {exp.error && <div className="error" role="alert">{(exp.error as Error).message}</div>}
      <form className="filters row" onSubmit={(e) => e.preventDefault()}>
        <input placeholder="run id" value={form.run} onChange={set("run")} />
        <input placeholder="kind (approval, run.state …)" value={form.kind} onChange={set("kind")} />
        <input placeholder="actor (user, agent, harness)" value={form.actor} onChange={set("actor")} />
        <label>since <input type="datetime-local" value={form.since} onChange={set("since")} /></label>
        <label>until <input type="datetime-local" value={form.until} onChange={set("until")} /></label>
      </form>
      {pages.error && <div className="error" role="alert">{(pages.error as Error).message}</div>}
      <div className="audit-head audit-row">
        <span>Seq</span><span>Time</span><span>Run</span><span>Kind</span><span>What happened</span>
      </div>
      <div ref={parent} className="audit-body" data-testid="audit-table" data-rows={rows.length}>
        <div style={{ height: v.getTotalSize(), position: "relative" }}>
          {items.map((it) => {
            const e = rows[it.index];
            return (
              <div
                key={e.seq}
                className={`audit-row clickable${e.seq === open ? " selected" : ""}`}
                data-testid="audit-row"
                role="button"
                tabIndex={0}
                aria-expanded={e.seq === open}
                onClick={() => setOpen(e.seq === open ? null : e.seq)}
                onKeyDown={(k) => {
                  if (k.key === "Enter" || k.key === " ") setOpen(e.seq === open ? null : e.seq);
                }}
                style={{ position: "absolute", top: it.start, height: ROW_PX, left: 0, right: 0 }}
              >
                <span className="mono">{e.seq}</span>
                <span>{time(e.at)}</span>
                <span className="ellipsis" title={e.runId ?? undefined}>{e.runName ?? (e.runId ? shortId(e.runId) : "—")}</span>
                <span className="mono small">{e.kind}</span>
                <span className="ellipsis" data-testid="audit-sentence" title={e.sentence}>{e.sentence}</span>
              </div>
            );
          })}
        </div>
      </div>
      {rows.length === 0 && !pages.isLoading && <div className="empty">No events match.</div>}
      {opened && (
        <section className="audit-detail" data-testid="audit-detail">
          <header className="row">
            <strong>#{opened.seq}</strong>
            <span>{opened.sentence}</span>
            <button onClick={() => setOpen(null)}>Close</button>
          </header>
          <div className="muted small">
            {opened.kind} · by {opened.actor} · {time(opened.at)}
            {opened.runId && ` · run ${opened.runName ?? ""} ${shortId(opened.runId)}`}
            {opened.stepSeq !== null && ` · step ${opened.stepSeq}`}
          </div>
          <pre className="mono small" data-testid="audit-payload">{JSON.stringify(opened.payload, null, 2)}</pre>
          <div className="muted small mono">hash {opened.hash.slice(0, 16)}… · previous {opened.prevHash.slice(0, 16)}…</div>
        </section>
      )}
    </div>
  );
}
