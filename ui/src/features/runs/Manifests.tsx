import { useQuery } from "@tanstack/react-query";
import { useBackend } from "../../lib/ipc/context";

interface Item { id?: string; kind?: string; tokens?: number; used?: number; fate?: string; why?: unknown }

/** Each model call's context, and an external agent's brief: what went in, what was digested or cut, and why. */
export function ContextManifests({ id }: { id: string }) {
  const backend = useBackend();
  const ctx = useQuery({ queryKey: ["run", id, "context"], queryFn: () => backend.runContext(id) });
  const calls = ctx.data ?? [];
  return (
    <section className="panel">
      <h2>Context of each model call or agent brief</h2>
      {calls.length === 0 && <div className="muted">No model calls or agent brief yet.</div>}
      {calls.map((c) => {
        const m = c.manifest as { entries?: Item[]; used?: number; inputBudget?: number; counter?: string };
        return (
          <details key={c.step} className="manifest">
            <summary>
              Step #{c.step} · {c.model} · {m.used ?? "?"} of {m.inputBudget ?? "?"} input tokens ({m.counter ?? "counter unknown"})
            </summary>
            <table className="table small">
              <thead><tr><th>Part</th><th>Kind</th><th>Tokens</th><th>Used</th><th>Fate</th><th>Why</th></tr></thead>
              <tbody>
                {(m.entries ?? []).map((it, i) => (
                  <tr key={i}><td className="mono">{it.id}</td><td>{it.kind}</td><td>{it.tokens}</td><td>{it.used}</td><td>{it.fate}</td><td>{typeof it.why === "string" ? it.why : JSON.stringify(it.why)}</td></tr>
                ))}
              </tbody>
            </table>
            {c.facts.length > 0 && (
              <div className="small">Profile facts used: {c.facts.map((f) => f.fact ?? "(deleted since)").join("; ")}</div>
            )}
          </details>
        );
      })}
    </section>
  );
}
