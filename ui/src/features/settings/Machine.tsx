import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useBackend } from "../../lib/ipc/context";

/**
 * The query key of the model server check: it asks the user's server over the network, so it runs
 * when Settings opens, when the provider is saved, and when asked, not on every change.
 */
export const MODEL_CHECK_KEY = "model-server-check";

/** Whether the model server new LLM runs use answers, and whether it offers their model. */
export function ModelServerStatus() {
  const backend = useBackend();
  const check = useQuery({
    queryKey: [MODEL_CHECK_KEY],
    queryFn: () => backend.checkModelServer(null),
    retry: false,
    refetchOnWindowFocus: false,
  });
  const c = check.data;
  let text: string;
  let good = false;
  if (check.isLoading) text = "asking the server…";
  else if (check.error) text = (check.error as Error).message;
  else if (!c) text = "not checked";
  else if (c.answers && c.hasModel) {
    good = true;
    text = `${c.baseUrl} answers and offers ${c.model}`;
  } else if (c.answers) text = `${c.baseUrl} answers, but ${c.problem ?? `does not offer ${c.model}`}${c.models.length ? ` (it offers ${c.models.slice(0, 6).join(", ")}${c.models.length > 6 ? ", …" : ""})` : ""}`;
  else text = c.problem ?? `nothing answers at ${c.baseUrl}`;
  return (
    <div className="row small" data-testid="model-server">
      <span className={`pill ${good ? "pill-done" : c ? "pill-failed" : ""}`} data-testid="model-server-status">
        {good ? "answers" : check.isLoading ? "checking" : "not ready"}
      </span>
      <span data-testid="model-server-text">{text}</span>
      <button type="button" onClick={() => void check.refetch()}>Check again</button>
    </div>
  );
}

/** The agents Reins knows how to run that are installed here, each registered in one click. */
export function AgentsOnThisMachine() {
  const backend = useBackend();
  const qc = useQueryClient();
  const found = useQuery({ queryKey: ["agents", "on-path"], queryFn: () => backend.agentsOnPath() });
  const register = useMutation({
    mutationFn: (name: string) => backend.registerFoundAgent(name),
    onSuccess: () => void qc.invalidateQueries({ queryKey: ["agents"] }),
  });
  const list = found.data ?? [];
  return (
    <section className="panel" data-testid="agents-found">
      <h2>Agents on this machine</h2>
      <p className="muted">
        Agents you already use, found on your <code>PATH</code>. Registered, they appear in New run; Reins starts them over
        the Agent Client Protocol and answers every permission they ask for with its own policy.
      </p>
      {found.isLoading && <div className="muted">Looking…</div>}
      {found.error && <div className="error" role="alert">{(found.error as Error).message}</div>}
      {!found.isLoading && list.length === 0 && (
        <div className="muted">None of qwen, opencode, gemini, claude-code-acp, codex-acp or goose is on PATH.</div>
      )}
      {list.length > 0 && (
        <table className="table">
          <thead><tr><th>Agent</th><th>Command</th><th></th></tr></thead>
          <tbody>
            {list.map(({ agent, registered }) => (
              <tr key={agent.name} data-agent={agent.name}>
                <td>{agent.label}</td>
                <td className="mono small">{agent.command.join(" ")}</td>
                <td>
                  {registered ? (
                    <span className="pill pill-done">registered as {agent.name}</span>
                  ) : (
                    <button className="primary" data-testid={`register-${agent.name}`} disabled={register.isPending} onClick={() => register.mutate(agent.name)}>
                      Register
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {register.error && <div className="error" role="alert">{(register.error as Error).message}</div>}
    </section>
  );
}
