import { useMemo, useState } from "react";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import type { FactView } from "../../lib/ipc/bindings";
import { useBackend } from "../../lib/ipc/context";
import { setUi } from "../../lib/store";
import { ago, time, shortId } from "../../lib/format";

export function Memory() {
  const backend = useBackend();
  const qc = useQueryClient();
  const [search, setSearch] = useState("");
  const [confirmClear, setConfirmClear] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const facts = useQuery({ queryKey: ["memory", search], queryFn: () => backend.memoryList(null, search || null) });
  const settings = useQuery({ queryKey: ["memory", "settings"], queryFn: () => backend.memorySettings() });
  const suggestions = useQuery({ queryKey: ["memory", "suggestions"], queryFn: () => backend.memorySuggestions() });
  const after = { onSuccess: () => { setError(null); void qc.invalidateQueries(); }, onError: (e: unknown) => setError((e as Error).message) };
  const toggle = useMutation({ mutationFn: (on: boolean) => backend.memorySetEnabled(on), ...after });
  const clear = useMutation({ mutationFn: () => backend.memoryClear(), ...after, onSettled: () => setConfirmClear(false) });
  const accept = useMutation({ mutationFn: (id: string) => backend.memoryAccept(id), ...after });
  const dismiss = useMutation({ mutationFn: (id: string) => backend.memoryDismiss(id), ...after });

  const groups = useMemo(() => {
    const m = new Map<string, FactView[]>();
    for (const f of facts.data ?? []) m.set(f.category, [...(m.get(f.category) ?? []), f]);
    return [...m.entries()].sort(([a], [b]) => a.localeCompare(b));
  }, [facts.data]);
  const enabled = settings.data?.enabled ?? true;

  return (
    <div className="page">
      <header className="page-head">
        <div>
          <h1>Memory</h1>
          <div className="muted">What agents remember about you across runs. Every fact here can reach an agent's context; nothing else does.</div>
        </div>
        <div className="row">
          <label className="switch">
            <input type="checkbox" data-testid="memory-enabled" checked={enabled} onChange={(e) => toggle.mutate(e.target.checked)} />
            {enabled ? "Memory on" : "Memory off"}
          </label>
          {!confirmClear ? (
            <button className="danger" disabled={!facts.data?.length} onClick={() => setConfirmClear(true)}>Clear all…</button>
          ) : (
            <span className="confirm">
              Delete every fact and suggestion?{" "}
              <button className="danger" data-testid="confirm-clear" onClick={() => clear.mutate()}>Delete all</button>
              <button onClick={() => setConfirmClear(false)}>Keep</button>
            </span>
          )}
        </div>
      </header>
      {error && <div className="error" role="alert">{error}</div>}
      {(suggestions.data?.length ?? 0) > 0 && (
        <section className="panel suggestions">
          <h2>Suggested by agents — not remembered until you accept</h2>
          {suggestions.data?.map((s) => (
            <div key={s.id} className="fact">
              <div>
                <span className="chip">{s.category}</span> <strong>{s.key}</strong>: <span className="agent-text">{s.value}</span>
                <div className="muted small">{s.reason} · confidence {(s.confidence ?? 0).toFixed(2)}</div>
              </div>
              <div className="row">
                <button onClick={() => accept.mutate(s.id)}>Accept</button>
                <button onClick={() => dismiss.mutate(s.id)}>Dismiss</button>
              </div>
            </div>
          ))}
        </section>
      )}
      <input className="search" type="search" placeholder="Search facts…" value={search} onChange={(e) => setSearch(e.target.value)} />
      {facts.data?.length === 0 && <div className="empty">{search ? "No fact matches." : "Nothing remembered yet."}</div>}
      {groups.map(([cat, list]) => (
        <section key={cat} className="panel">
          <h2>{cat}</h2>
          {list.map((f) => <Fact key={f.id} f={f} onError={setError} />)}
        </section>
      ))}
    </div>
  );
}

function Fact({ f, onError }: { f: FactView; onError: (e: string | null) => void }) {
  const backend = useBackend();
  const qc = useQueryClient();
  const [editing, setEditing] = useState(false);
  const [value, setValue] = useState(f.value);
  const [open, setOpen] = useState(false);
  const history = useQuery({ queryKey: ["memory", "fact", f.id], queryFn: () => backend.memoryShow(f.id), enabled: open });
  const after = { onSuccess: () => { onError(null); setEditing(false); void qc.invalidateQueries(); }, onError: (e: unknown) => onError((e as Error).message) };
  const save = useMutation({ mutationFn: () => backend.memoryEdit(f.id, value), ...after });
  const del = useMutation({ mutationFn: () => backend.memoryDelete(f.id), ...after });
  return (
    <div className="fact" data-testid="fact" data-fact={f.id}>
      <div className="fact-main">
        <strong>{f.key}</strong>
        {editing ? (
          <form className="row" onSubmit={(e) => { e.preventDefault(); save.mutate(); }}>
            <input name="fact-value" value={value} onChange={(e) => setValue(e.target.value)} autoFocus />
            <button className="primary" type="submit">Save</button>
            <button type="button" onClick={() => { setEditing(false); setValue(f.value); }}>Cancel</button>
          </form>
        ) : (
          <span className="agent-text" data-testid="fact-value">{f.value}</span>
        )}
        <div className="muted small">
          v{f.version} · {f.origin}
          {f.runId && <> · from <button className="link" onClick={() => setUi({ view: "runs", runId: f.runId })}>run {shortId(f.runId)}</button>{f.stepSeq != null && ` step ${f.stepSeq}`}</>}
          {" · "}updated {ago(f.updatedAt)} ·{" "}
          <button className="link" onClick={() => setOpen(!open)}>{open ? "hide history" : "history"}</button>
        </div>
        {open && history.data && (
          <ol className="history small">
            {history.data.history.map((v) => (
              <li key={v.version}>v{v.version} · {time(v.createdAt)} · <span className="agent-text">{v.value}</span></li>
            ))}
          </ol>
        )}
      </div>
      {!editing && (
        <div className="row">
          <button onClick={() => setEditing(true)}>Edit</button>
          <button className="danger" data-testid="delete-fact" onClick={() => del.mutate()}>Delete</button>
        </div>
      )}
    </div>
  );
}
