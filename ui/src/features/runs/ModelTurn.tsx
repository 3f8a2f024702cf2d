import { useState } from "react";
import Markdown from "react-markdown";
import type { ModelTurnView } from "../../lib/ipc/bindings";

/** Arguments in a chip: short, and never more than a line. */
function shortArgs(args: string): string {
  let text = args;
  try {
    const v = JSON.parse(args) as Record<string, unknown>;
    const first = Object.values(v).find((x) => typeof x === "string") as string | undefined;
    if (first !== undefined) text = first;
  } catch {
    // Invalid JSON is shown as the model sent it.
  }
  const line = text.split("\n")[0];
  return line.length > 48 ? `${line.slice(0, 48)}…` : line;
}

/** What a model or an agent wrote: its Markdown rendered to elements, raw HTML dropped. */
export function Words({ text }: { text: string }) {
  return (
    <div className="model-text" data-testid="model-text">
      <Markdown skipHtml>{text}</Markdown>
    </div>
  );
}

/**
 * A model call in words: what the model said (its Markdown rendered to elements; raw HTML is
 * dropped, never injected), the calls it made as chips that jump to their steps, then tokens and
 * cost. `Show raw` keeps the journaled JSON for whoever wants it.
 */
export function ModelTurn({ turn, raw }: { turn: ModelTurnView; raw: string | null }) {
  const [showRaw, setShowRaw] = useState(false);
  const jump = (seq: number) => document.getElementById(`step-${seq}`)?.scrollIntoView({ block: "center" });
  const tokens =
    turn.tokensIn !== null || turn.tokensOut !== null ? `${turn.tokensIn ?? "?"} tokens in, ${turn.tokensOut ?? "?"} out` : null;
  return (
    <div className="model-turn" data-testid="model-turn">
      {turn.text.trim() ? (
        <Words text={turn.text} />
      ) : (
        <div className="muted small">(no words, only calls)</div>
      )}
      {turn.calls.length > 0 && (
        <div className="chips">
          {turn.calls.map((c, i) => (
            <button
              key={i}
              className="chip"
              data-testid="call-chip"
              data-step={c.step ?? ""}
              title={c.arguments}
              disabled={c.step === null}
              onClick={() => c.step !== null && jump(c.step)}
            >
              <span className="mono">{c.name}</span> <span className="muted">{shortArgs(c.arguments)}</span>
              {c.step !== null && <span className="muted"> → #{c.step}</span>}
            </button>
          ))}
        </div>
      )}
      <div className="muted small">
        {turn.model}
        {tokens && ` · ${tokens}`}
        {turn.costUsd !== null && ` · $${turn.costUsd.toFixed(4)}`}
        {" · "}
        <button className="link" data-testid="show-raw" onClick={() => setShowRaw(!showRaw)}>
          {showRaw ? "Hide raw" : "Show raw"}
        </button>
      </div>
      {showRaw && raw && <pre className="mono small raw" data-testid="raw-result">{raw}</pre>}
    </div>
  );
}
