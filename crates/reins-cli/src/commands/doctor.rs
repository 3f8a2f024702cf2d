//! `reins doctor`

use reins_core::api::Reins;

use crate::exit;
use crate::output::print_json;

pub async fn exec(reins: &Reins, json: bool) -> reins_core::api::Result<u8> {
    let r = reins.doctor().await?;
    if json {
        print_json(&r);
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
