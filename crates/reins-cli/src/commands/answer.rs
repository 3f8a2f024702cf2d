//! `reins answer RUN TEXT`: answer the question an agent asked (`ask_user`).

use std::io::Read as _;

use reins_core::api::Reins;

use crate::exit;
use crate::output::print_json;

#[derive(clap::Args)]
pub struct Args {
    /// The run id (or a unique prefix of it).
    run: String,
    /// The answer; `-` reads it from stdin. Without it, the question is shown.
    text: Option<String>,
}

pub async fn exec(reins: &Reins, args: Args, json: bool) -> reins_core::api::Result<u8> {
    let id = reins.resolve_run(&args.run).await?;
    let Some(text) = args.text else {
        let q = reins.question(id).await?;
        if json {
            print_json(&serde_json::json!({
                "run": id, "step": q.as_ref().map(|q| q.0), "question": q.map(|q| q.1),
            }));
        } else {
            match q {
                Some((step, question)) => {
                    println!(
                        "run {id} step {step} asks: {question}\nanswer: reins answer {id} \"…\""
                    )
                }
                None => println!("run {id} is not waiting for an answer"),
            }
        }
        return Ok(exit::DONE);
    };
    let text = if text == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .map_err(|e| reins_core::api::Error::Invalid(format!("cannot read the answer: {e}")))?;
        s
    } else {
        text
    };
    let step = reins.answer(id, &text).await?;
    if json {
        print_json(&serde_json::json!({ "run": id, "step": step, "answered": true }));
    } else {
        println!("answered step {step}; the run is queued: `reins worker` (or the desktop app) carries it on");
    }
    Ok(exit::DONE)
}
