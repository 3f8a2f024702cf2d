import { useMemo, useState } from "react";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useBackend } from "../../lib/ipc/context";
import { setUi } from "../../lib/store";
import { ago, stateLabel, shortId } from "../../lib/format";
import type { BudgetLimits } from "../../lib/ipc/bindings";
import { BudgetFields, mergeLimits, NO_LIMITS } from "./Budget";

export function Runs() {
  const backend = useBackend();
  const runs = useQuery({ queryKey: ["runs"], queryFn: () => backend.listRuns() });
  const pending = useQuery({ queryKey: ["approvals", "pending"], queryFn: () => backend.listApprovals(null) });
  const perRun = useMemo(() => {
    const m = new Map<string, number>();
    for (const a of pending.data ?? []) m.set(a.runId, (m.get(a.runId) ?? 0) + 1);
    return m;
  }, [pending.data]);
  const [starting, setStarting] = useState(false);
  const list = [...(runs.data ?? [])].sort((a, b) => b.updatedAt - a.updatedAt);
  return (
    <div className="page">
      <header className="page-head">
        <h1>Runs</h1>
        {backend.face === "desktop" && (
          <button className="primary" data-testid="new-run" onClick={() => setStarting(!starting)}>
            {starting ? "Close" : "New run…"}
          </button>
        )}
      </header>
      {starting && <StartRun onStarted={() => setStarting(false)} />}
      {runs.error && <div className="error" role="alert">{(runs.error as Error).message}</div>}
      {list.length === 0 && !runs.isLoading && <div className="empty">No runs yet. Start one, or try the demo from the Approvals view.</div>}
      {list.length > 0 && (
        <table className="table runs" data-testid="runs-table">
          <thead>
            <tr><th>Run</th><th>State</th><th>Agent</th><th>Workspace</th><th>Steps</th><th>Updated</th></tr>
          </thead>
          <tbody>
            {list.map((r) => (
              <tr key={r.id} className="clickable" data-testid="run-row" data-run={r.id} onClick={() => setUi({ runId: r.id })}>
                <td>
                  <button className="link run-name" onClick={(e) => { e.stopPropagation(); setUi({ runId: r.id }); }}>
                    <strong>{r.name}</strong>
                  </button>
                  <div className="muted mono">{shortId(r.id)}</div>
                </td>
                <td>
                  <span className={`state state-${r.state} ${r.waiting ? "waiting" : ""}`}>{stateLabel(r.state)}</span>
                  {(perRun.get(r.id) ?? 0) > 0 && <span className="badge" title="approvals waiting">{perRun.get(r.id)}</span>}
                  {r.lastError && <div className="muted small">{r.lastError}</div>}
                </td>
                <td>{r.agent === "llm" ? "LLM" : r.agent === "acp" ? "external (ACP)" : "plan"}</td>
                <td className="mono small">
                  {r.workspace}
                  {r.machine && <div className="muted" data-testid="run-machine">on {r.machine}</div>}
                </td>
                <td>{r.steps}</td>
                <td>{ago(r.updatedAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}

function StartRun({ onStarted }: { onStarted: () => void }) {
  const backend = useBackend();
  const qc = useQueryClient();
  const [kind, setKind] = useState<"plan" | "llm" | "acp">("plan");
  const [workspace, setWorkspace] = useState("");
  const [plan, setPlan] = useState("");
  const [goal, setGoal] = useState("");
  const [agent, setAgent] = useState("");
  const agents = useQuery({ queryKey: ["agents"], queryFn: () => backend.listAgents(), enabled: kind === "acp" });
  const servers = useQuery({ queryKey: ["mcp-servers"], queryFn: () => backend.listMcpServers(), enabled: kind === "llm" });
  const [mcp, setMcp] = useState<string[]>([]);
  const [budget, setBudget] = useState<BudgetLimits>(NO_LIMITS);
  const defaults = useQuery({ queryKey: ["default-budget"], queryFn: () => backend.defaultBudget(), enabled: kind !== "plan" });
  const start = useMutation({
    mutationFn: () =>
      kind === "plan"
        ? backend.startPlanRun(plan, workspace)
        : kind === "llm"
          ? backend.startLlmRun({ goal, workspace, model: null, maxTurns: null, mcp, budget })
          : backend.startAcpRun({ goal, workspace, agent: agent || agents.data?.[0]?.name || "", budget }),
    onSuccess: (id) => {
      void qc.invalidateQueries();
      onStarted();
      setUi({ runId: id });
    },
  });
  const browse = async (pick: () => Promise<string | null>, set: (s: string) => void) => {
    const p = await pick();
    if (p) set(p);
  };
  return (
    <form className="panel start-run" onSubmit={(e) => { e.preventDefault(); start.mutate(); }}>
      <div className="tabs" role="tablist">
        <button type="button" role="tab" aria-selected={kind === "plan"} className={kind === "plan" ? "on" : ""} onClick={() => setKind("plan")}>From a plan file</button>
        <button type="button" role="tab" aria-selected={kind === "llm"} className={kind === "llm" ? "on" : ""} data-testid="kind-llm" onClick={() => setKind("llm")}>From a goal (LLM agent)</button>
        <button type="button" role="tab" aria-selected={kind === "acp"} className={kind === "acp" ? "on" : ""} data-testid="kind-acp" onClick={() => setKind("acp")}>An agent you run (ACP)</button>
      </div>
      <label className="field">
        <span>Workspace folder — the only place the agent may touch</span>
        <div className="row">
          <input name="workspace" value={workspace} onChange={(e) => setWorkspace(e.target.value)} placeholder="/home/you/project" />
          <button type="button" onClick={() => void browse(() => backend.pickFolder(), setWorkspace)}>Browse…</button>
        </div>
      </label>
      {kind === "plan" ? (
        <label className="field">
          <span>Plan file (.toml)</span>
          <div className="row">
            <input name="plan" value={plan} onChange={(e) => setPlan(e.target.value)} placeholder="/home/you/plans/fix.toml" />
            <button type="button" onClick={() => void browse(() => backend.pickFile(), setPlan)}>Browse…</button>
          </div>
        </label>
      ) : (
        <>
          {kind === "acp" && (
            <label className="field">
              <span>Agent — registered with <code>reins agents add</code>, or its command line; its writes and commands are reviewed by Reins</span>
              {agents.data && agents.data.length > 0 ? (
                <select name="agent" value={agent || agents.data[0].name} onChange={(e) => setAgent(e.target.value)}>
                  {agents.data.map((a) => <option key={a.name} value={a.name}>{a.name} — {a.command}</option>)}
                </select>
              ) : (
                <input name="agent" value={agent} onChange={(e) => setAgent(e.target.value)} placeholder="qwen --acp" />
              )}
              {agents.error && <div className="error" role="alert">{(agents.error as Error).message}</div>}
            </label>
          )}
          {kind === "llm" && servers.data && servers.data.length > 0 && (
            <fieldset className="field">
              <legend>Tools from MCP servers — each call is reviewed with its exact arguments unless a rule allows it</legend>
              {servers.data.map((s) => (
                <label key={s.name} className="row small">
                  <input
                    type="checkbox"
                    data-testid={`mcp-${s.name}`}
                    checked={mcp.includes(s.name)}
                    onChange={(e) => setMcp(e.target.checked ? [...mcp, s.name] : mcp.filter((n) => n !== s.name))}
                  />
                  <code>{s.name}</code> <span className="muted">{s.command}</span>
                </label>
              ))}
            </fieldset>
          )}
          <label className="field">
            <span>{kind === "llm" ? "Goal — what should the agent do? (model and server: Settings)" : "Goal — what should the agent do?"}</span>
            <textarea name="goal" rows={3} value={goal} onChange={(e) => setGoal(e.target.value)} />
          </label>
          <fieldset className="field">
            <legend>Budget — the run pauses and asks when it reaches one (empty: the default from Settings)</legend>
            <BudgetFields value={budget} onChange={setBudget} placeholder={defaults.data ? mergeLimits(defaults.data.settings, defaults.data.policy) : undefined} />
          </fieldset>
        </>
      )}
      <div className="row">
        <button className="primary" type="submit" data-testid="start-run" disabled={start.isPending}>Start run</button>
      </div>
      {start.error && <div className="error" role="alert">{(start.error as Error).message}</div>}
    </form>
  );
}
