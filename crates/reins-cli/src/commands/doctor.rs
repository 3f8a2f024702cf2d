//! `reins doctor`

use reins_core::api::Reins;

use crate::exit;
use crate::output::print_json;

#[derive(clap::Args)]
pub struct Args {
    /// The model server to check, an OpenAI-compatible base URL ending in /v1 [default: the
    /// provider setting, else a local Ollama at http://127.0.0.1:11434/v1]
    #[arg(long, env = "REINS_BASE_URL", value_name = "URL")]
    base_url: Option<String>,
}

pub async fn exec(reins: &Reins, args: Args, json: bool) -> reins_core::api::Result<u8> {
    let r = reins.doctor().await?;
    let server = reins.check_model_server(args.base_url).await?;
    if json {
        print_json(&serde_json::json!({ "store": r, "modelServer": server }));
    } else {
        let mark = |ok: bool| if ok { "ok  " } else { "FAIL" };
        println!("data dir        {}", r.data_dir);
        println!("database        {}", r.database);
        println!(
            "[{}] schema version {} (this build knows {})",
            mark(r.schema_version == r.supported_schema),
            r.schema_version,
            r.supported_schema
        );
        println!(
            "[{}] database integrity: {}",
            mark(r.integrity == ["ok"]),
            r.integrity.join("; ")
        );
        match r.wake_ups.as_str() {
            "listening" => println!("[ok  ] wake-ups: listening for the team's changes"),
            "polling" => println!(
                "[warn] wake-ups: cannot LISTEN on the shared database (a pooler in transaction mode?): other machines' changes are seen at the next poll"
            ),
            _ => {}
        }
        if r.confined {
            println!("[ok  ] commands run {}", r.containment);
        } else {
            println!(
                "[warn] commands run {}: the kernel does not hold what the policy allows",
                r.containment
            );
        }
        println!(
            "[{}] blob store: {} blobs, {} bytes, {} damaged",
            mark(r.corrupt_blobs.is_empty()),
            r.blob_count,
            r.blob_bytes,
            r.corrupt_blobs.len()
        );
        for b in &r.corrupt_blobs {
            println!("       damaged blob {b}");
        }
        println!(
            "[{}] blobs referenced by intents and checkpoints: {} missing",
            mark(r.missing_blobs.is_empty()),
            r.missing_blobs.len()
        );
        for b in &r.missing_blobs {
            println!("       missing blob {b}");
        }
        println!(
            "[{}] checkpoints of {} run(s): {} damaged",
            mark(r.damaged_checkpoints.is_empty()),
            r.runs,
            r.damaged_checkpoints.len()
        );
        for c in &r.damaged_checkpoints {
            println!("       {c}");
        }
        println!(
            "[{}] audit chain: {}",
            mark(r.audit_chain == "ok"),
            r.audit_chain
        );
        println!(
            "[{}] secrets sealed at rest: {} row(s){}",
            mark(r.sealed == "ok"),
            r.sealed_rows,
            if r.sealed == "ok" {
                if r.sealed_rows > 0 {
                    ", and this keyring's key opens them".to_owned()
                } else {
                    String::new()
                }
            } else {
                format!(": {}", r.sealed)
            }
        );
        // Only LLM runs need it: a missing server is a warning, not a sick store.
        let models = if server.models.is_empty() {
            String::new()
        } else {
            let shown: Vec<&str> = server.models.iter().take(20).map(String::as_str).collect();
            format!(
                "; models: {}{}",
                shown.join(", "),
                if server.models.len() > shown.len() {
                    ", …"
                } else {
                    ""
                }
            )
        };
        println!(
            "[{}] model server {}: {}{models}",
            if server.problem.is_none() {
                "ok  "
            } else {
                "warn"
            },
            server.base_url,
            match (&server.problem, server.answers) {
                (None, _) => format!("answers, and offers {}", server.model),
                (Some(p), true) => format!("answers, but {p}"),
                (Some(p), false) => format!("{p} (only `reins run --llm` needs it)"),
            }
        );
        if r.leftover_temp_files > 0 {
            println!(
                "note: {} temp file(s) left in the blob store by interrupted writes (harmless)",
                r.leftover_temp_files
            );
        }
        println!(
            "{}",
            if r.healthy {
                "healthy"
            } else {
                "problems found"
            }
        );
    }
    Ok(if r.healthy {
        exit::DONE
    } else {
        exit::RUN_FAILED
    })
}
