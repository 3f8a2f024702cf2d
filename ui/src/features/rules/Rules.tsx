import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useBackend } from "../../lib/ipc/context";
import { ago, shortId } from "../../lib/format";
import { McpServers } from "../settings/McpServers";

export function Rules() {
  const backend = useBackend();
  const qc = useQueryClient();
  const grants = useQuery({ queryKey: ["grants"], queryFn: () => backend.listGrants() });
  const revoke = useMutation({ mutationFn: (id: string) => backend.revokeGrant(id), onSuccess: () => void qc.invalidateQueries() });
  const list = grants.data ?? [];
  const live = list.filter((g) => g.revokedAt == null);
  const gone = list.filter((g) => g.revokedAt != null);
  return (
    <div className="page">
      <header className="page-head">
        <div>
          <h1>Rules</h1>
          <div className="muted">Standing permissions you gave when approving with a wider scope. A grant never covers high risk, and you can revoke it any time.</div>
        </div>
      </header>
      {revoke.error && <div className="error" role="alert">{(revoke.error as Error).message}</div>}
      {live.length === 0 && <div className="empty">No standing grants: every risky action asks you.</div>}
      {live.length > 0 && (
        <table className="table" data-testid="grants">
          <thead><tr><th>Tool</th><th>Matches</th><th>Scope</th><th>Origin</th><th>Used</th><th>Created</th><th></th></tr></thead>
          <tbody>
            {live.map((g) => (
              <tr key={g.id}>
                <td className="mono">{g.tool}</td>
                <td>
                  {g.matcher === "exact" ? (
                    <>this exact action <code className="muted" title={g.pattern}>#{g.pattern.slice(0, 12)}</code></>
                  ) : (
                    <><code>{g.pattern}</code> <span className="muted small">({g.matcher}{g.matcher === "prefix" ? (g.options.length ? `; options: ${g.options.join(" ")}` : "; no further options") : ""})</span></>
                  )}
                </td>
                <td>{g.scope}{g.workspace ? <div className="muted small mono">{g.workspace}</div> : null}{g.runId ? <div className="muted small mono">run {shortId(g.runId)}</div> : null}</td>
                <td className="small mono" title={g.origin}>{/^[0-9a-f-]{36}$/.test(g.origin) ? `approval ${shortId(g.origin)}` : g.origin}</td>
                <td>{g.uses}×{g.lastUsedAt ? <div className="muted small">last {ago(g.lastUsedAt)}</div> : null}</td>
                <td>{ago(g.createdAt)}</td>
                <td><button className="danger" onClick={() => revoke.mutate(g.id)}>Revoke</button></td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {gone.length > 0 && <div className="muted small">{gone.length} revoked grant{gone.length === 1 ? "" : "s"} kept for the record.</div>}
      <McpServers />
    </div>
  );
}
