import { useQuery } from "@tanstack/react-query";
import { useBackend } from "../../lib/ipc/context";

/** The MCP servers registered with `reins mcp add`, and how their calls are judged. */
export function McpServers() {
  const backend = useBackend();
  const mcp = useQuery({ queryKey: ["mcp-servers"], queryFn: () => backend.listMcpServers() });
  return (
    <section className="panel" data-testid="mcp-servers">
      <h2>MCP servers</h2>
      <p className="muted">
        Tool servers an LLM run may be offered (New run). Every call is reviewed with its exact arguments unless a rule in the
        policy file allows it (<code>server</code>, <code>mcp_tool</code>, <code>arguments</code>); a server&apos;s hints are its
        claims. Register one with <code>reins mcp add NAME -- PROGRAM ARGS…</code>; its keys stay in the OS keyring.
      </p>
      {mcp.data && mcp.data.length > 0 ? (
        <table className="table small">
          <thead><tr><th>Name</th><th>Transport</th><th>Command or address</th><th>Keys (from the keyring)</th></tr></thead>
          <tbody>
            {mcp.data.map((s) => (
              <tr key={s.name}><td><code>{s.name}</code></td><td>{s.transport}</td><td><code>{s.command}</code></td><td>{s.keys.join(" ") || "—"}</td></tr>
            ))}
          </tbody>
        </table>
      ) : (
        <p className="small">{mcp.isLoading ? "Loading…" : "None registered."}</p>
      )}
      {mcp.error && <div className="error" role="alert">{(mcp.error as Error).message}</div>}
    </section>
  );
}
