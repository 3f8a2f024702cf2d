import { useState } from "react";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useBackend } from "../../lib/ipc/context";

/**
 * Claude Code under Reins through its hooks: whether `claude` is installed here, and Reins' hooks
 * in the user's settings (every project) or one project's, installed or taken out in one click.
 */
export function ClaudeCodeHooks() {
  const backend = useBackend();
  const qc = useQueryClient();
  const [project, setProject] = useState("");
  const [scope, setScope] = useState<string | null>(null);
  const key = ["claude-hooks", scope];
  // A project not named yet is not looked at (an empty name would be read as the user's settings).
  const view = useQuery({ queryKey: key, queryFn: () => backend.claudeHooks(scope), retry: false, enabled: scope !== "" });
  const set = useMutation({
    mutationFn: (install: boolean) => backend.setClaudeHooks(scope, install),
    onSuccess: (v) => qc.setQueryData(key, v),
  });
  const v = view.data;
  const error = (set.error ?? view.error) as Error | null;
  return (
    <section className="panel" data-testid="claude-code">
      <h2>Claude Code</h2>
      <p className="muted">
        Claude Code keeps running in your terminal; with Reins' hooks installed it asks Reins before each tool call. The
        policy decides, and what needs you waits here as a card. Errors block the call rather than let it through.
      </p>
      <div className="row small" data-testid="claude-found">
        {!v && view.isFetching ? (
          <span className="muted">looking for <code>claude</code>…</span>
        ) : v?.claude ? (
          <span><span className="pill pill-done">found</span> <code>{v.claude}</code></span>
        ) : (
          <span><span className="pill">not on PATH</span> <code>claude</code> is not installed here (the hooks still work once it is)</span>
        )}
      </div>
      <div className="row">
        <label>
          <input type="radio" name="claude-scope" checked={scope === null} onChange={() => setScope(null)} /> Every project
          (<code>~/.claude/settings.json</code>)
        </label>
        <label>
          <input type="radio" name="claude-scope" checked={scope !== null} onChange={() => setScope(project.trim() || "")} /> One
          project:
        </label>
        <input
          aria-label="project folder"
          placeholder="/path/to/project"
          value={project}
          onChange={(e) => {
            setProject(e.target.value);
            if (scope !== null) setScope(e.target.value.trim());
          }}
        />
      </div>
      {v && scope !== "" && (
        <div className="row small" data-testid="claude-hooks-state">
          <span className={`pill ${v.installed ? "pill-done" : ""}`}>{v.installed ? "installed" : "not installed"}</span>
          <code>{v.file}</code>
        </div>
      )}
      {v && scope !== "" && v.warnings.length > 0 && (
        <div className="error" role="alert" data-testid="claude-hooks-off">
          <strong>Claude Code started here does not call Reins.</strong>
          <ul>
            {v.warnings.map((w) => <li key={w}>{w}</li>)}
          </ul>
          Installing the hooks in Claude Code's managed settings (<code>sudo reins hooks install claude-code --managed</code>)
          puts them where no project or user setting can switch them off.
        </div>
      )}
      {error && <div className="error" role="alert">{error.message}</div>}
      <div className="row">
        <button className="primary" data-testid="claude-install" disabled={!v || scope === "" || !!v.installed || set.isPending} onClick={() => set.mutate(true)}>
          Install hooks
        </button>
        <button data-testid="claude-uninstall" disabled={!v || scope === "" || !v.installed || set.isPending} onClick={() => set.mutate(false)}>
          Uninstall
        </button>
      </div>
    </section>
  );
}
