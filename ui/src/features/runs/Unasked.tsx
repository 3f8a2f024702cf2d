import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import type { RunDetail } from "../../lib/ipc/bindings";
import { useBackend } from "../../lib/ipc/context";
import { reversed } from "../../lib/diff";
import { DiffView } from "../approvals/DiffView";

type Caught = { changes: { path: string; kind: string; undoable: boolean }[]; undo: number | null };

const how: Record<string, string> = { added: "created", modified: "changed", removed: "deleted" };

/**
 * The run stopped because its agent changed the workspace without asking: the card shows the
 * change as a diff, and the person undoes it (a rollback to the checkpoint written before it) or
 * keeps it and lets the run go on.
 */
export function ChangedUnasked({ d }: { d: RunDetail }) {
  const backend = useBackend();
  const qc = useQueryClient();
  const id = d.run.id;
  const event = d.audit.reduce<RunDetail["audit"][number] | null>(
    (last, e) => (e.kind === "workspace.changed_unasked" && (!last || e.seq > last.seq) ? e : last),
    null,
  );
  const caught = (event?.payload ?? null) as Caught | null;
  const undo = caught?.undo ?? null;
  const after = (kind: string) => d.audit.some((e) => e.kind === kind && event !== null && e.seq > event.seq);
  const open = caught !== null && d.run.state === "suspended" && !after("run.resumed");
  const undone = after("rollback.performed");
  const look = useQuery({
    queryKey: ["run", id, "unasked", undo],
    queryFn: () => backend.rollbackRun(id, undo ?? 0, true),
    enabled: open && undo !== null && !undone,
  });
  const refresh = () => void qc.invalidateQueries();
  const apply = useMutation({ mutationFn: () => backend.rollbackRun(id, undo ?? 0, false), onSuccess: refresh });
  const keep = useMutation({ mutationFn: () => backend.resumeRun(id), onSuccess: refresh });
  if (!open || !caught) return null;
  const failed = (look.error ?? apply.error ?? keep.error) as Error | null;
  return (
    <section className="panel card-unasked" data-testid="changed-unasked">
      <h2>The agent changed {caught.changes.length === 1 ? "a file" : `${caught.changes.length} files`} without asking</h2>
      <div className="muted">
        No approval covered these changes, so the run stopped here. Undo them, or keep them and let the run go on.
      </div>
      <ul className="small mono">
        {caught.changes.map((c) => (
          <li key={c.path}>
            {c.path} ({how[c.kind] ?? c.kind}){c.undoable ? "" : " — too large to have been kept: cannot be undone"}
          </li>
        ))}
      </ul>
      {undone ? (
        <div className="notice" data-testid="unasked-undone">Undone: the files are as they were before. Resume to go on, or cancel the run.</div>
      ) : (
        (look.data?.changes ?? []).map((c) => <DiffView key={c.path} preview={reversed(c.diff)} />)
      )}
      {failed && <div className="error" role="alert">{failed.message}</div>}
      <div className="row">
        {undo !== null && !undone && (
          <button className="danger" disabled={apply.isPending} onClick={() => apply.mutate()}>
            Undo these changes
          </button>
        )}
        <button disabled={keep.isPending} onClick={() => keep.mutate()}>
          {undone ? "Resume" : "Keep them and resume"}
        </button>
      </div>
    </section>
  );
}
