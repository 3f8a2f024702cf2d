import { useEffect, useMemo, useState } from "react";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import type { ApprovalView, Scope } from "../../lib/ipc/bindings";
import { BackendError } from "../../lib/ipc/backend";
import { useBackend } from "../../lib/ipc/context";
import { isTyping } from "../../lib/keys";
import { setUi, useUi } from "../../lib/store";
import { ago, shortId } from "../../lib/format";
import { Card } from "./Card";
import { Decision, type Mode } from "./Decision";
import { isStaged, RiskBadge } from "./Preview";
import { batchable, nextIndex } from "./triage";

type BatchConflict = { total: number; moved: { id: string; tool: string; subject: string; why: string }[]; message: string };

/** What the core said of one card in a batch's conflict: the text after "ID: ", up to where it
 * names the next card of the batch (`ids`). */
export function movedWhy(message: string, id: string, ids: string[]): string {
  const at = message.indexOf(`${id}: `);
  if (at < 0) return "it was decided elsewhere or changed";
  const rest = message.slice(at + id.length + 2);
  const ends = ids.filter((o) => o !== id).map((o) => rest.indexOf(`; ${o}: `)).filter((i) => i >= 0);
  return ends.length ? rest.slice(0, Math.min(...ends)) : rest;
}

export function Inbox() {
  const backend = useBackend();
  const qc = useQueryClient();
  const ui = useUi();
  const pending = useQuery({ queryKey: ["approvals", "pending"], queryFn: () => backend.listApprovals(null) });
  const runs = useQuery({ queryKey: ["runs"], queryFn: () => backend.listRuns() });
  const list = useMemo(() => pending.data ?? [], [pending.data]);
  const names = useMemo(() => new Map((runs.data ?? []).map((r) => [r.id, r.name])), [runs.data]);
  const [mode, setMode] = useState<Mode>("idle");
  // The checked cards as they were shown when checked: a card replaced or decided meanwhile
  // stays in the batch, so the core refuses the batch rather than approving the rest.
  const [checked, setChecked] = useState<Map<string, ApprovalView>>(new Map());
  const [error, setError] = useState<string | null>(null);
  // What happened to a review the person acted on (replaced, expired, gone): it stays in view
  // until the next decision, even when the queue moves on.
  const [notice, setNotice] = useState<string | null>(null);
  // A batch that approved nothing because a card moved since it was shown: which ones, and why.
  const [conflict, setConflict] = useState<BatchConflict | null>(null);
  // The staged files the person unticked on the open card: they do not land.
  const [leaveOut, setLeaveOut] = useState<string[]>([]);

  const opened = list.findIndex((a) => a.id === ui.approvalId);
  const index = Math.max(0, opened);
  const current: ApprovalView | undefined = list[index];

  useEffect(() => {
    setMode("idle");
    setError(null);
    setLeaveOut([]);
  }, [current?.id]);

  const done = () => {
    setMode("idle");
    setError(null);
    setNotice(null);
    void qc.invalidateQueries();
  };
  // The core says what went wrong by code: a replaced or expired review is not a failure to retry.
  const fail = (e: unknown) => {
    const code = e instanceof BackendError ? e.code : null;
    const message = e instanceof Error ? e.message : String(e);
    switch (code) {
      case "superseded":
        setNotice(`A file changed on disk, so this review was replaced by one with the current diff. Look again before deciding. (${message})`);
        void qc.invalidateQueries();
        break;
      case "expired":
        setNotice(`The review time ran out before your decision; the action did not run. (${message})`);
        void qc.invalidateQueries();
        break;
      case "not_found":
        setNotice(`This approval is gone (${message}).`);
        void qc.invalidateQueries();
        break;
      case "conflict":
        setNotice(`Someone decided it meanwhile, or the run moved on: ${message}`);
        void qc.invalidateQueries();
        break;
      default:
        setError(message);
    }
  };

  const approve = useMutation({
    mutationFn: (v: { a: ApprovalView; scope: Scope; pattern: string | null; edited: Record<string, unknown> | null }) =>
      backend.approve(v.a.id, {
        scope: v.scope,
        pattern: v.pattern,
        editedArgs: v.edited as never,
        note: null,
        expectHash: v.a.actionHash,
        leaveOut: isStaged(v.a) && !v.edited && leaveOut.length > 0 ? leaveOut : null,
      }),
    onSuccess: done,
    onError: fail,
  });
  const reject = useMutation({
    mutationFn: (v: { a: ApprovalView; reason: string; siblings: boolean }) => backend.reject(v.a.id, v.reason, v.siblings),
    onSuccess: done,
    onError: fail,
  });
  // Exactly the checked cards, each bound to the hash it showed: all of them or none.
  const batch = useMutation({
    mutationFn: (items: ApprovalView[]) =>
      backend.approveBatch({ cards: items.map((a) => ({ id: a.id, actionHash: a.actionHash })), note: null }),
    onMutate: () => setConflict(null),
    onSuccess: () => {
      setChecked(new Map());
      done();
    },
    onError: (e, items) => {
      if (!(e instanceof BackendError) || e.code !== "conflict") return fail(e);
      const moved = items
        .filter((a) => e.message.includes(a.id))
        .map((a) => ({ id: a.id, tool: a.tool, subject: a.subject, why: movedWhy(e.message, a.id, items.map((i) => i.id)) }));
      setConflict({ total: items.length, moved, message: e.message });
      setChecked(new Map([...checked].filter(([id]) => !moved.some((m) => m.id === id))));
      void qc.invalidateQueries();
    },
  });
  const busy = approve.isPending || reject.isPending || batch.isPending;

  // Keyboard triage: j/k move through the queue (the card's own keys decide: a, r, e).
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (isTyping(e) || (e.key !== "j" && e.key !== "k")) return;
      const i = nextIndex(index, list.length, e.key === "j" ? 1 : -1);
      if (list[i]) setUi({ approvalId: list[i].id });
      e.preventDefault();
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [index, list]);

  const selected = [...checked.values()];
  const canBatch = selected.length > 0 && batchable(selected);

  if (pending.isLoading) return <div className="empty">Loading…</div>;
  if (pending.error) return <div className="error" role="alert">{String((pending.error as Error).message)}</div>;
  // A decision that ended the last review (it expired, it was decided elsewhere) still says why.
  if (!list.length) return <EmptyInbox notice={notice} />;

  return (
    // At a phone's width the queue and the card take turns: the list, then the card opened from it.
    <div className={`inbox ${opened >= 0 ? "has-open" : ""}`}>
      <aside className="queue" aria-label="Pending approvals">
        <div className="queue-head">
          <strong>{list.length} waiting</strong>
          <button data-testid="batch-approve" disabled={!canBatch || busy}
            title="Approves the checked low- and medium-risk actions, once each"
            onClick={() => batch.mutate(selected)}>
            Approve {selected.length || ""} checked
          </button>
        </div>
        {selected.length > 0 && !canBatch && <div className="hint">High-risk actions are decided one at a time.</div>}
        {conflict && (
          <div className="batch-conflict" role="alert" data-testid="batch-conflict">
            <strong>None of the {conflict.total} checked cards was approved.</strong>{" "}
            {conflict.moved.length === 1 ? "One of them" : `${conflict.moved.length || "Some"} of them`} changed since you saw it; look again, then approve.
            <ul>
              {conflict.moved.map((m) => (
                <li key={m.id}><span className="tool">{m.tool}</span> <code>{m.subject}</code>: {m.why}</li>
              ))}
            </ul>
            {!conflict.moved.length && <div className="muted">{conflict.message}</div>}
          </div>
        )}
        <ul>
          {list.map((a, i) => (
            <li key={a.id} className={`${i === index ? "selected" : ""} ${conflict?.moved.some((m) => m.id === a.id) ? "moved" : ""}`} data-testid="queue-item"
              onClick={() => setUi({ approvalId: a.id })}>
              <input type="checkbox" aria-label="select for batch approval" checked={checked.has(a.id)}
                disabled={a.risk === "high"}
                onClick={(e) => e.stopPropagation()}
                onChange={(e) => {
                  const s = new Map(checked);
                  if (e.target.checked) s.set(a.id, a);
                  else s.delete(a.id);
                  setChecked(s);
                }} />
              <div>
                <div><RiskBadge risk={a.risk} /> <span className="tool">{a.tool}</span>{a.staged && <span className="chip staged-chip" title={a.staged}>staged</span>}</div>
                <code className="target">{a.subject}</code>
                <div className="muted">{names.get(a.runId) ?? shortId(a.runId)} · {a.agent} · {ago(a.createdAt)}</div>
              </div>
            </li>
          ))}
        </ul>
        <div className="keys muted"><kbd>j</kbd>/<kbd>k</kbd> move · <kbd>a</kbd> approve · <kbd>r</kbd> reject · <kbd>e</kbd> edit</div>
      </aside>
      <div className="inbox-main">
        <button className="narrow-only back" data-testid="back-to-list" onClick={() => setUi({ approvalId: null })}>
          ← All approvals ({list.length})
        </button>
        {notice && <div className="notice inbox-notice" role="alert">{notice}</div>}
        {current && (
          <Card key={current.id} a={current} runName={names.get(current.runId) ?? shortId(current.runId)}
            leaveOut={leaveOut} onLeaveOut={setLeaveOut}>
            <Decision
              a={current}
              mode={mode}
              setMode={setMode}
              busy={busy}
              error={error}
              onApprove={(scope, pattern, edited) => approve.mutate({ a: current, scope, pattern, edited })}
              onReject={(reason, siblings) => reject.mutate({ a: current, reason, siblings })}
            />
          </Card>
        )}
      </div>
    </div>
  );
}

function EmptyInbox({ notice }: { notice: string | null }) {
  const backend = useBackend();
  const qc = useQueryClient();
  const runs = useQuery({ queryKey: ["runs"], queryFn: () => backend.listRuns() });
  const demo = useMutation({
    mutationFn: () => backend.startDemo(),
    onSuccess: () => void qc.invalidateQueries(),
  });
  // The demo starts a run on this machine: the desktop app's, not a paired browser's.
  const first = (runs.data?.length ?? 0) === 0 && backend.face === "desktop";
  return (
    <div className="empty" data-testid="inbox-empty">
      {notice && <div className="notice" role="alert">{notice}</div>}
      <h2>Nothing waits for you</h2>
      <p>When an agent wants to do something risky — change a file, run a command, call a server — it stops here, and nothing happens until you decide.</p>
      {first && (
        <div className="welcome">
          <p>New here? The demo copies an example ops workspace and runs a plan that fixes its log rotation. It stops at its first change, so you see the diff and decide.</p>
          <button className="primary" data-testid="start-demo" disabled={demo.isPending} onClick={() => demo.mutate()}>
            Start the demo
          </button>
          {demo.error && <div className="error" role="alert">{(demo.error as Error).message}</div>}
        </div>
      )}
    </div>
  );
}
