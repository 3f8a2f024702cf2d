import { useEffect, useRef, useState } from "react";
import type { ApprovalView, Scope } from "../../lib/ipc/bindings";
import { isTyping } from "../../lib/keys";
import { hasSealed } from "../../lib/format";
import { isStaged } from "./Preview";

/** Fields a person may change before approving; long text gets a text area. */
const LONG = new Set(["content", "new", "old", "command", "body", "value"]);

export type Mode = "idle" | "reject" | "edit";

export interface DecisionProps {
  a: ApprovalView;
  mode: Mode;
  setMode: (m: Mode) => void;
  busy: boolean;
  error: string | null;
  onApprove: (scope: Scope, pattern: string | null, edited: Record<string, unknown> | null) => void;
  /** `siblings`: the calls queued after it in the same turn are rejected with it. */
  onReject: (reason: string, siblings: boolean) => void;
}

const SCOPES: { scope: Scope; label: string; hint: string }[] = [
  { scope: "once", label: "Once", hint: "only this exact action" },
  { scope: "run", label: "This run", hint: "the same action again in this run" },
  { scope: "workspace", label: "This workspace", hint: "in any run on this folder" },
  { scope: "always", label: "Always", hint: "everywhere, until you revoke it in Rules" },
];

/** The agent's proposed arguments (an edit starts from these). */
function proposedArgs(a: ApprovalView): Record<string, unknown> {
  const args = a.action.args;
  return args && typeof args === "object" && !Array.isArray(args) ? { ...(args as Record<string, unknown>) } : {};
}

function editableCount(a: ApprovalView): number {
  return Object.values(proposedArgs(a)).filter((v) => typeof v === "string").length;
}

export function Decision({ a, mode, setMode, busy, error, onApprove, onReject }: DecisionProps) {
  const [scope, setScope] = useState<Scope>("once");
  const [pattern, setPattern] = useState("");
  const [reason, setReason] = useState("");
  const [siblings, setSiblings] = useState(false);
  const queued = a.context.pending ?? [];
  const original = proposedArgs(a);
  const [edited, setEdited] = useState<Record<string, unknown>>(original);
  const reasonRef = useRef<HTMLTextAreaElement>(null);
  const editRef = useRef<HTMLTextAreaElement>(null);

  useEffect(() => {
    setScope("once");
    setPattern("");
    setReason("");
    setSiblings(false);
    setEdited(proposedArgs(a));
  }, [a]);

  useEffect(() => {
    if (mode === "reject") reasonRef.current?.focus();
    if (mode === "edit") editRef.current?.focus();
  }, [mode]);

  // a approve (with the scope chosen), r reject, e edit: while no text field has the keys.
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (isTyping(e) || mode !== "idle" || busy) return;
      if (e.key === "a") onApprove(scope, pattern.trim() || null, null);
      else if (e.key === "r") setMode("reject");
      else if (e.key === "e" && editableCount(a) > 0) setMode("edit");
      else return;
      e.preventDefault();
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [a, mode, busy, scope, pattern, onApprove, setMode]);

  const changed = JSON.stringify(edited) !== JSON.stringify(original);
  const editable = Object.entries(original).filter(([, v]) => typeof v === "string");

  return (
    <div className="decision">
      {mode === "edit" && (
        <div className="edit-box" data-testid="edit-box">
          <p className="hint">Change the action, then approve: what you approve is exactly what runs, and the audit log records your edit.</p>
          {Object.values(original).some((v) => typeof v === "string" && hasSealed(v)) && (
            <p className="hint" data-testid="sealed-hint">A <code>⟦sealed:…⟧</code> mark is a secret Reins keeps sealed: leave it in place and the secret it stands for runs; `reins approval show --action` shows it whole.</p>
          )}
          {editable.map(([k], i) => (
            <label key={k} className="field">
              <span>{k}</span>
              {LONG.has(k) ? (
                <textarea
                  ref={i === editable.findIndex(([n]) => LONG.has(n)) ? editRef : undefined}
                  name={`edit-${k}`}
                  rows={Math.min(16, Math.max(3, String(edited[k] ?? "").split("\n").length + 1))}
                  value={String(edited[k] ?? "")}
                  onChange={(e) => setEdited({ ...edited, [k]: e.target.value })}
                  spellCheck={false}
                />
              ) : (
                <input
                  name={`edit-${k}`}
                  value={String(edited[k] ?? "")}
                  onChange={(e) => setEdited({ ...edited, [k]: e.target.value })}
                  spellCheck={false}
                />
              )}
            </label>
          ))}
          <div className="row">
            <button className="primary" data-testid="approve-edited" disabled={busy || !changed}
              onClick={() => onApprove(scope, null, edited)}>
              Approve edited action
            </button>
            <button onClick={() => setMode("idle")}>Cancel edit</button>
          </div>
        </div>
      )}
      {mode === "reject" && (
        <div className="reject-box">
          <label className="field">
            <span>Why? The agent reads this and tries another way.</span>
            <textarea
              ref={reasonRef}
              name="reject-reason"
              rows={2}
              value={reason}
              onChange={(e) => setReason(e.target.value)}
              onKeyDown={(e) => {
                if (e.key === "Enter" && (e.ctrlKey || e.metaKey) && reason.trim()) onReject(reason.trim(), siblings);
                if (e.key === "Escape") setMode("idle");
              }}
            />
          </label>
          {queued.length > 0 && (
            <label className="row small" data-testid="reject-siblings">
              <input type="checkbox" checked={siblings} onChange={(e) => setSiblings(e.target.checked)} />
              Also reject the {queued.length === 1 ? "call" : `${queued.length} calls`} queued after it in this turn
              ({queued.join(", ")}): none of them runs, and the agent is told why
            </label>
          )}
          <div className="row">
            <button className="danger" data-testid="confirm-reject" disabled={busy || !reason.trim()}
              onClick={() => onReject(reason.trim(), siblings)}>
              Reject
            </button>
            <button onClick={() => setMode("idle")}>Cancel</button>
          </div>
        </div>
      )}
      {mode === "idle" && (
        <>
          <fieldset className="scopes">
            <legend>Approve for</legend>
            {SCOPES.map((s) => (
              <label key={s.scope} title={s.hint} className={scope === s.scope ? "on" : ""}>
                <input type="radio" name="scope" value={s.scope} checked={scope === s.scope}
                  onChange={() => setScope(s.scope)} />
                {s.label}
              </label>
            ))}
            {scope !== "once" && (
              <input className="pattern" placeholder="pattern (optional): a command prefix or a path glob"
                value={pattern} onChange={(e) => setPattern(e.target.value)} />
            )}
          </fieldset>
          <div className="row actions">
            <button className="primary" data-testid="approve" disabled={busy}
              onClick={() => onApprove(scope, pattern.trim() || null, null)}>
              Approve <kbd>a</kbd>
            </button>
            <button className="danger" data-testid="reject" disabled={busy} onClick={() => setMode("reject")}>
              Reject… <kbd>r</kbd>
            </button>
            <button data-testid="edit" disabled={busy || editable.length === 0} onClick={() => setMode("edit")}>
              Edit, then approve… <kbd>e</kbd>
            </button>
          </div>
          {a.tool === "shell.exec" && (original.sandbox ?? "confined") === "confined" && !isStaged(a) && (
            // The escape hatch: its own choice, high risk, this once (no lasting grant covers it).
            // Not on a staged card: its command did all it does confined and without the network,
            // and approving applies that without running it again.
            <div className="row actions escape" data-testid="escape">
              <button className="danger" disabled={busy} data-testid="approve-network"
                title="The command runs with the network this once: the kernel then lets it reach any host."
                onClick={() => onApprove("once", null, { ...original, sandbox: "network" })}>
                Approve with the network, once
              </button>
              <button className="danger" disabled={busy} data-testid="approve-unconfined"
                title="The command runs outside the sandbox this once: nothing but your review holds it."
                onClick={() => onApprove("once", null, { ...original, sandbox: "unconfined" })}>
                Approve unconfined, once
              </button>
            </div>
          )}
        </>
      )}
      {error && <div className="error" role="alert">{error}</div>}
    </div>
  );
}
