//! `reins show RUN`

use std::fmt::Write as _;

use reins_core::api::{ActionView, Reins, RunDetail};

use crate::exit;
use crate::output::{print_json, table, time};

#[derive(clap::Args)]
pub struct Args {
    /// The run id (or a unique prefix of it).
    run: String,
    /// What went into each model call: every candidate, its tokens, whether it went in and why,
    /// and the profile facts used.
    #[arg(long, conflicts_with = "step")]
    context: bool,
    /// One step in full: its action, result (the whole output) and review.
    #[arg(long, value_name = "N")]
    step: Option<i64>,
}

pub async fn exec(reins: &Reins, args: Args, json: bool) -> reins_core::api::Result<u8> {
    let id = reins.resolve_run(&args.run).await?;
    if args.context {
        let calls = reins.context(id).await?;
        if json {
            print_json(&calls);
        } else {
            print!("{}", render_context(&calls));
        }
        return Ok(exit::DONE);
    }
    let detail = reins.run_detail(id).await?;
    if let Some(n) = args.step {
        let Some(step) = detail.steps.iter().find(|s| s.seq == n) else {
            return Err(reins_core::api::Error::Invalid(format!(
                "run {id} has no step {n} (it has {})",
                detail.steps.len()
            )));
        };
        if json {
            print_json(step);
        } else {
            println!("step {} {} {}", step.seq, step.tool, step.status);
            println!(
                "action: {}",
                serde_json::json!({ "tool": step.action.tool, "args": step.action.args })
            );
            if let Some(why) = &step.why {
                println!("why: {why}");
            }
            if let Some(r) = &step.risk {
                println!("risk: {r}");
            }
            println!(
                "result:\n{}",
                step.result.as_deref().unwrap_or("(none yet)")
            );
        }
        return Ok(exit::DONE);
    }
    if json {
        print_json(&detail);
    } else {
        print!("{}", render(&detail));
        if !detail.budget.limits.is_empty() {
            print!("\n{}", super::budget::lines(id, &detail.budget));
        }
        let usage = reins.usage(id).await?;
        if usage.model_calls > 0 {
            let cost = usage
                .cost_usd
                .map(|c| format!(", ${c:.4}"))
                .unwrap_or_default();
            println!(
                "\nmodel: {} call(s), {} tokens in, {} out{cost} (`reins show {id} --context` for what went in)",
                usage.model_calls, usage.tokens_in, usage.tokens_out
            );
        }
    }
    Ok(exit::DONE)
}

fn render_context(calls: &[reins_core::api::ContextView]) -> String {
    let mut s = String::new();
    if calls.is_empty() {
        let _ = writeln!(s, "no context recorded (LLM runs have one per model call, external agents one for their brief)");
        return s;
    }
    let mut facts: Vec<String> = Vec::new();
    for c in calls {
        let m = &c.manifest;
        let _ = writeln!(
            s,
            "step {}  {}  {} of {} input tokens used (window {}, output {}, tool schemas {}, margin {}; counted with {})",
            c.step,
            c.model,
            m.used,
            m.input_budget,
            m.budget.window,
            m.budget.reserved_output,
            m.budget.tool_schemas,
            m.budget.margin,
            m.counter,
        );
        let rows: Vec<Vec<String>> = m
            .entries
            .iter()
            .map(|e| {
                vec![
                    e.id.clone(),
                    e.kind.as_str().into(),
                    e.tokens.to_string(),
                    e.fate.as_str().into(),
                    e.why.to_string(),
                ]
            })
            .collect();
        for line in table(&["ITEM", "KIND", "TOKENS", "FATE", "WHY"], &rows).lines() {
            let _ = writeln!(s, "  {line}");
        }
        for f in &c.facts {
            let line = match &f.fact {
                Some(text) => format!("{} ({})", text, f.id),
                None => format!("{} (deleted since)", f.id),
            };
            if !facts.contains(&line) {
                facts.push(line);
            }
        }
        let _ = writeln!(s);
    }
    if facts.is_empty() {
        let _ = writeln!(s, "profile facts used: none");
    } else {
        let _ = writeln!(s, "profile facts used:");
        for f in facts {
            let _ = writeln!(s, "  {f}");
        }
    }
    s
}

fn short(hash: &str) -> String {
    hash.chars().take(12).collect()
}

/// The action's arguments in one line, long values cut.
fn action_line(action: &ActionView) -> String {
    let Some(args) = action.args.as_object() else {
        return String::new();
    };
    // Paths first: they say what a step touched.
    let mut fields: Vec<(&String, &serde_json::Value)> = args.iter().collect();
    fields.sort_by_key(|(k, _)| !matches!(k.as_str(), "path" | "from" | "to"));
    fields
        .into_iter()
        .map(|(k, v)| {
            let text = match v {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let one_line: String = text.replace('\n', "⏎").chars().take(40).collect();
            let cut = if text.chars().count() > 40 { "…" } else { "" };
            format!("{k}={one_line}{cut}")
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn render(d: &RunDetail) -> String {
    let r = &d.run;
    let mut s = String::new();
    let _ = writeln!(s, "run {}  {:?}", r.id, r.name);
    let _ = writeln!(s, "  state       {}", r.state);
    if let Some(e) = &r.last_error {
        let _ = writeln!(s, "  reason      {e}");
    }
    let _ = writeln!(s, "  goal        {}", r.goal);
    let _ = writeln!(s, "  workspace   {}", r.workspace);
    match &r.compat.external_agent {
        Some(a) => {
            let mode = a
                .mode
                .as_deref()
                .map(|m| format!(", in mode {m:?}"))
                .unwrap_or_default();
            let _ = writeln!(s, "  agent       {} ({}{mode})", a.label(), r.agent_kind);
        }
        None => {
            let _ = writeln!(s, "  agent       {}", r.agent_kind);
        }
    }
    if let Some(how) = &r.compat.changes_found_by {
        let _ = writeln!(s, "  changes     found by {how}");
    }
    let _ = writeln!(
        s,
        "  created     {}   updated {}",
        time(r.created_at),
        time(r.updated_at)
    );
    let _ = writeln!(
        s,
        "  fence       {}   attempts {}   audit events {}",
        r.fence,
        d.attempts.len(),
        d.audit_events
    );
    let point = d
        .recovery
        .point
        .map(|p| format!("checkpoint {p}"))
        .unwrap_or_else(|| "none (would start over)".into());
    let _ = writeln!(s, "  recovery    {point}");
    if d.recovery.pruned_through > 0 {
        let _ = writeln!(
            s,
            "  retention   checkpoints 1–{} removed (`reins gc`)",
            d.recovery.pruned_through
        );
    }
    for dmg in &d.recovery.damage {
        let ack = if dmg.acknowledged {
            "recovered past"
        } else {
            "not yet recovered"
        };
        let _ = writeln!(
            s,
            "  DAMAGE      checkpoint {}: {} ({ack})",
            dmg.seq,
            dmg.kind.as_str()
        );
    }

    let _ = writeln!(s, "\nsteps");
    let rows: Vec<Vec<String>> = d
        .steps
        .iter()
        .map(|st| {
            vec![
                st.seq.to_string(),
                st.tool.clone(),
                st.status.to_string(),
                action_line(&st.action),
            ]
        })
        .collect();
    if rows.is_empty() {
        let _ = writeln!(s, "  (none)");
    } else {
        let rendered = table(&["#", "TOOL", "STATUS", "ACTION"], &rows);
        let mut lines = rendered.lines();
        if let Some(header) = lines.next() {
            let _ = writeln!(s, "  {header}");
        }
        // Each step's line, then the agent's stated reason for it: what a reviewer sees.
        for (line, step) in lines.zip(&d.steps) {
            let _ = writeln!(s, "  {line}");
            if let Some(why) = &step.why {
                let _ = writeln!(s, "       why: {}", why.replace('\n', "\n            "));
            }
            // How a command ran, and what its profile stopped (the lines its result carries).
            if step.tool == "shell.exec" {
                for line in step.result.as_deref().unwrap_or("").lines().filter(|l| {
                    [
                        "--- confined",
                        "--- partly confined",
                        "--- unconfined",
                        "--- blocked:",
                    ]
                    .iter()
                    .any(|p| l.starts_with(p))
                }) {
                    let _ = writeln!(s, "       {}", &line[4..]);
                }
            }
        }
    }

    let _ = writeln!(s, "\ncheckpoints");
    let rows: Vec<Vec<String>> = d
        .checkpoints
        .iter()
        .map(|c| {
            vec![
                c.seq.to_string(),
                c.level.to_string(),
                format!("{}{}", c.size, if c.in_blob { " (blob)" } else { "" }),
                short(&c.sha256),
                if c.status == "ok" {
                    "ok".into()
                } else {
                    format!("DAMAGED: {}", c.status)
                },
            ]
        })
        .collect();
    for line in table(&["SEQ", "LEVEL", "BYTES", "SHA256", "CHECKSUM"], &rows).lines() {
        let _ = writeln!(s, "  {line}");
    }

    if !d.intents.is_empty() {
        let _ = writeln!(s, "\nintents (effect journal)");
        let rows: Vec<Vec<String>> = d
            .intents
            .iter()
            .map(|i| {
                vec![
                    i.step_seq.to_string(),
                    i.tool.clone(),
                    i.effect_class.to_string(),
                    i.status.to_string(),
                    i.settled_by.clone().unwrap_or_default(),
                ]
            })
            .collect();
        for line in table(&["STEP", "TOOL", "CLASS", "STATUS", "SETTLED BY"], &rows).lines() {
            let _ = writeln!(s, "  {line}");
        }
    }

    if !d.approvals.is_empty() {
        let _ = writeln!(s, "\nreviews");
        let rows: Vec<Vec<String>> = d
            .approvals
            .iter()
            .map(|a| {
                let decision = match (&a.decided_by, &a.note, &a.stale_reason) {
                    (_, _, Some(stale)) => stale.clone(),
                    (Some(by), Some(note), _) => format!("{by}: {note}"),
                    (Some(by), None, _) => by.clone(),
                    _ => format!("`reins approval show {}`", a.id),
                };
                vec![
                    a.step_seq.to_string(),
                    a.tool.clone(),
                    a.risk.to_string(),
                    a.status.to_string(),
                    a.id.clone(),
                    decision,
                ]
            })
            .collect();
        for line in table(
            &["STEP", "TOOL", "RISK", "STATUS", "APPROVAL", "DECISION"],
            &rows,
        )
        .lines()
        {
            let _ = writeln!(s, "  {line}");
        }
    }

    let undecided: Vec<_> = d
        .intents
        .iter()
        .filter(|i| matches!(i.status.as_str(), "unknown" | "pending") && !r.state.is_active())
        .collect();
    if !undecided.is_empty() {
        let _ = writeln!(
            s,
            "\nneeds your decision (the outcome of these effects is not known)"
        );
        for i in undecided {
            let _ = writeln!(
                s,
                "  step {} {}: reins resolve {} --done | --retry | --skip",
                i.step_seq, i.tool, i.id
            );
        }
    }

    if !d.retries.is_empty() {
        let _ = writeln!(s, "\nretries (budget used)");
        let rows: Vec<Vec<String>> = d
            .retries
            .iter()
            .map(|r| {
                vec![
                    r.n.to_string(),
                    time(r.at),
                    r.class.as_str().into(),
                    format!("{:.1}s", r.delay_ms as f64 / 1000.0),
                    r.error.chars().take(100).collect(),
                ]
            })
            .collect();
        for line in table(&["#", "AT", "CLASS", "BACKOFF", "ERROR"], &rows).lines() {
            let _ = writeln!(s, "  {line}");
        }
    }

    if let Some(rs) = &d.recovery_summary {
        let _ = writeln!(s, "\nrecovery (attempt {})", rs.attempt);
        let _ = writeln!(s, "  {}", rs.text);
        if !rs.changed_outside.is_empty() {
            let _ = writeln!(s, "  changed outside the run:");
            for c in &rs.changed_outside {
                let h = c
                    .sha256
                    .as_ref()
                    .map(|h| short(h.as_str()))
                    .unwrap_or_default();
                let _ = writeln!(
                    s,
                    "    {:<8}  {h:<12}  {}",
                    format!("{:?}", c.kind).to_lowercase(),
                    c.path
                );
            }
        }
    }

    render_agent(&mut s, d);

    if !d.files.is_empty() {
        let _ = writeln!(s, "\nfiles touched (at the recovery point)");
        for (path, hash) in &d.files {
            let h = hash
                .as_ref()
                .map(|h| short(h.as_str()))
                .unwrap_or_else(|| "(absent)".into());
            let _ = writeln!(s, "  {h:<12}  {path}");
        }
    }
    s
}

/// What an external agent reported of its own work, and the end of its stderr.
fn render_agent(s: &mut String, d: &RunDetail) {
    let reported: Vec<&reins_core::api::AuditEventView> = d
        .audit
        .iter()
        .filter(|e| matches!(e.kind.as_str(), "agent.reported" | "agent.acted_unasked"))
        .collect();
    if !reported.is_empty() {
        let _ = writeln!(
            s,
            "\nthe agent reported (its own account, not Reins' decisions)"
        );
        for e in reported {
            let p = &e.payload;
            let text = |k: &str| p["detail"][k].as_str().unwrap_or("").to_owned();
            let line = match (e.kind.as_str(), p["what"].as_str()) {
                ("agent.acted_unasked", _) => format!(
                    "ACTED WITHOUT ASKING: {} {}",
                    p["kind"].as_str().unwrap_or(""),
                    p["title"].as_str().unwrap_or("")
                ),
                (_, Some("tool_call")) => {
                    let content = text("content");
                    let content = if content.is_empty() {
                        String::new()
                    } else {
                        format!(
                            ": {}",
                            content
                                .replace('\n', "⏎")
                                .chars()
                                .take(60)
                                .collect::<String>()
                        )
                    };
                    format!(
                        "tool {} {} [{}] {}{content}",
                        text("id"),
                        text("kind"),
                        text("status"),
                        text("title")
                    )
                }
                (_, Some("plan")) => format!(
                    "plan: {}",
                    p["detail"]["entries"]
                        .as_array()
                        .map(|es| es
                            .iter()
                            .map(|e| format!(
                                "[{}] {}",
                                e["status"].as_str().unwrap_or(""),
                                e["content"].as_str().unwrap_or("")
                            ))
                            .collect::<Vec<_>>()
                            .join("; "))
                        .unwrap_or_default()
                ),
                (_, Some("mode")) => format!("mode: {}", text("mode")),
                (_, Some("message")) => {
                    let said = text("text").replace('\n', " ⏎ ");
                    let cut: String = said.chars().take(200).collect();
                    let more = if cut.len() < said.len() { "…" } else { "" };
                    format!("said: {cut}{more}")
                }
                (_, Some(what)) => format!("{what}: {}", p["detail"]),
                _ => p.to_string(),
            };
            let _ = writeln!(s, "  {}  {line}", time(e.at));
        }
    }
    if let Some(log) = &d.agent_log {
        let lines: Vec<&str> = log.tail.lines().collect();
        let from = lines.len().saturating_sub(20);
        let _ = writeln!(s, "\nthe agent's stderr (the end of {})", log.path);
        for line in &lines[from..] {
            let _ = writeln!(s, "  {line}");
        }
    }
}
