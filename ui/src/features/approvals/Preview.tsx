import type { ApprovalView, Segment } from "../../lib/ipc/bindings";
import { DiffView } from "./DiffView";
import { marks } from "../../lib/diff";
import { shownSealed } from "../../lib/format";

export function RiskBadge({ risk }: { risk: string }) {
  return <span className={`risk risk-${risk}`} data-risk={risk}>{risk}</span>;
}

/** The arguments of what runs on approval: the person's edit when there is one. */
export function argsOf(a: ApprovalView): Record<string, unknown> {
  const args = (a.edited?.action ?? a.action).args;
  return args && typeof args === "object" && !Array.isArray(args) ? (args as Record<string, unknown>) : {};
}

function Visible({ text }: { text: string }) {
  return (
    <>
      {marks(text).map((m, i) =>
        m.invisible ? <span key={i} className="invisible-char">{m.text}</span> : <span key={i}>{m.text}</span>,
      )}
    </>
  );
}

export function commandText(args: Record<string, unknown>): string {
  if (typeof args.command === "string") return args.command;
  if (Array.isArray(args.argv)) return args.argv.map(String).join(" ");
  return "";
}

/** What staging saw of a command it could not capture whole (or why it was not staged): the lines
 * of the harness's preview above the command itself ("$ make"). */
export function stagingNote(preview: string): string[] {
  if (!/^(staged first|not staged)/.test(preview)) return [];
  const lines = preview.split("\n");
  const end = lines.findIndex((l) => l.startsWith("$ "));
  return lines.slice(0, end < 0 ? lines.length : end).map((l) => l.trim()).filter((l) => l !== "");
}

function CommandView({ a }: { a: ApprovalView }) {
  const args = argsOf(a);
  const segs: Segment[] = a.segments;
  const [first, ...seen] = a.edited || a.staged ? [] : stagingNote(a.preview);
  return (
    <div className="command" data-testid="command">
      {first && (
        <div className="staging-note" data-testid="staging-note">
          <p><Visible text={first} /></p>
          {seen.length > 0 && <ul>{seen.map((l, i) => <li key={i}><Visible text={l} /></li>)}</ul>}
        </div>
      )}
      <pre className="command-text"><Visible text={shownSealed(commandText(args))} /></pre>
      {segs.length > 0 && (
        <table className="segments">
          <thead>
            <tr><th>Segment</th><th>Program</th><th>Risk</th><th>Why</th></tr>
          </thead>
          <tbody>
            {segs.map((s, i) => (
              <tr key={i}>
                <td><code><Visible text={s.text} /></code></td>
                <td>{s.program ?? <em>not a literal name</em>}</td>
                <td><RiskBadge risk={s.risk} /></td>
                <td>{s.reasons.join("; ") || "—"}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}

function HttpView({ a }: { a: ApprovalView }) {
  const args = argsOf(a);
  // Headers and body come from the harness's preview, where credentials are already masked.
  return (
    <div className="http" data-testid="http">
      <div className="http-line">
        <strong>{String(args.method ?? "GET")}</strong> <code><Visible text={String(args.url ?? "")} /></code>
      </div>
      <pre className="command-text"><Visible text={a.edited?.preview ?? a.preview} /></pre>
    </div>
  );
}

/** Whether approving applies what the command did when staged (it does not run again). */
export function isStaged(a: ApprovalView): boolean {
  return a.tool === "shell.exec" && !!a.staged && !a.edited;
}

/** The lines of a staged diff that are no hunk: mode changes, binaries, folders, links. */
function notes(diff: string): string[] {
  return diff.split("\n").filter((l) => l !== "" && !/^(---|\+\+\+|@@|[-+ \\])/.test(l));
}

/** A staged command: what it did in a copy of the workspace, which approving applies as it is. */
function StagedView({ a, leaveOut, onLeaveOut }: LeaveOut & { a: ApprovalView }) {
  const [head, run = ""] = a.preview.split("\n--- the staged run\n");
  const diff = head.split("\n").slice(2).join("\n");
  const other = notes(diff);
  const out = new Set(leaveOut ?? []);
  const files = a.stagedFiles ?? [];
  return (
    <div className="staged" data-testid="staged">
      <CommandView a={a} />
      <p className="staged-line" data-testid="staged-line">
        {a.staged}. Approving applies exactly these changes; the command does not run again.
      </p>
      {onLeaveOut && files.length > 1 && (
        <fieldset className="staged-files" data-testid="staged-files">
          <legend>What lands ({files.length - out.size} of {files.length}): untick a file to leave it out</legend>
          {files.map((p) => (
            <label key={p} className="staged-file">
              <input type="checkbox" data-testid="staged-file" data-path={p} checked={!out.has(p)}
                onChange={(e) => onLeaveOut(e.target.checked ? [...out].filter((o) => o !== p) : [...out, p])} />
              <code>{p}</code>
            </label>
          ))}
          {out.size === files.length && <p className="error small">Nothing would land: reject instead.</p>}
        </fieldset>
      )}
      {other.length > 0 && (
        <ul className="staged-notes">{other.map((n, i) => <li key={i}><Visible text={n} /></li>)}</ul>
      )}
      {diff.includes("@@") ? <DiffView preview={diff} /> : other.length === 0 && <p className="muted">It changed no file.</p>}
      <details className="staged-run">
        <summary>Its exit status and output</summary>
        <pre className="command-text" data-testid="staged-output"><Visible text={run} /></pre>
      </details>
    </div>
  );
}

/** A staged card's files the person unticked, and how to change that (none: no choice). */
type LeaveOut = { leaveOut?: string[]; onLeaveOut?: (paths: string[]) => void };

/** The exact thing that runs on approval: a diff, a parsed command, or an HTTP request. */
export function Preview({ a, leaveOut, onLeaveOut }: LeaveOut & { a: ApprovalView }) {
  const preview = a.edited?.preview ?? a.preview;
  if (isStaged(a)) return <StagedView a={a} leaveOut={leaveOut} onLeaveOut={onLeaveOut} />;
  if (a.tool === "shell.exec") return <CommandView a={a} />;
  if (a.tool === "http.fetch") return <HttpView a={a} />;
  if (a.tool.startsWith("fs.") && preview.includes("@@")) return <DiffView preview={preview} />;
  if (a.tool === "agent.permission") return <PermissionView preview={preview} />;
  return <pre className="command-text" data-testid="preview-text"><Visible text={preview} /></pre>;
}

/** An external agent's permission request: what Reins reads it as, then the diff or command it
 * reported (the harness's preview puts the reading first, then a blank line). */
function PermissionView({ preview }: { preview: string }) {
  const cut = preview.indexOf("\n\n");
  const head = cut >= 0 ? preview.slice(0, cut) : preview;
  const rest = cut >= 0 ? preview.slice(cut + 2) : "";
  return (
    <div data-testid="permission">
      <p className="muted"><Visible text={head} /></p>
      {rest.includes("@@") ? <DiffView preview={rest} /> : rest && <pre className="command-text"><Visible text={rest} /></pre>}
    </div>
  );
}
