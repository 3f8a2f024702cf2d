//! `reins ps`

use reins_core::api::Reins;

use crate::exit;
use crate::output::{print_json, table, time};

pub async fn exec(reins: &Reins, json: bool) -> reins_core::api::Result<u8> {
    let runs = reins.runs().await?;
    if json {
        print_json(&runs);
        return Ok(exit::DONE);
    }
    if runs.is_empty() {
        println!("no runs yet; start one with: reins run --plan FILE --workspace DIR");
        return Ok(exit::DONE);
    }
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            vec![
                r.id.to_string(),
                r.state.to_string(),
                r.steps.to_string(),
                time(r.updated_at),
                r.name.clone(),
            ]
        })
        .collect();
    print!(
        "{}",
        table(&["ID", "STATE", "STEPS", "UPDATED", "NAME"], &rows)
    );
    Ok(exit::DONE)
}
