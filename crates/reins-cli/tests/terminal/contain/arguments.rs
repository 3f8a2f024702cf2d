//! The helper's own arguments, as an attacker would craft them: each stops it before the program
//! runs (exit 125), and the program leaves no trace.

use std::process::Command;

use serde_json::json;

use super::{text, Case};

#[test]
fn the_helper_refuses_arguments_an_attacker_would_craft() -> anyhow::Result<()> {
    let case = Case::new()?;
    let marker = case.at("ws/ran");
    let script = format!("touch {}", marker.display());
    let good = case.profile(json!("none"));
    let mut relative = good.clone();
    relative["write"] = json!(["ws"]);
    let mut parent = good.clone();
    parent["write"] = json!([case.at("ws").join("../..")]);
    let mut unknown = good.clone();
    unknown["unconfined"] = json!(true);
    let mut odd_host = good.clone();
    odd_host["network"] =
        json!({"to": {"endpoints": [{"host": "a b", "port": 443}], "serves_itself": false}});
    // Relay plans: one that names a relative socket, one with a field the helper does not know,
    // one with port 0, one that is not a plan.
    let plan = |name: &str, body: serde_json::Value| -> anyhow::Result<String> {
        let path = case.at(name);
        std::fs::write(&path, body.to_string())?;
        Ok(path.display().to_string())
    };
    let relative_socket = plan(
        "p1.json",
        json!({"socket": "relay.sock", "listen": [], "hosts": null}),
    )?;
    let extra_field = plan(
        "p2.json",
        json!({"socket": "/tmp/r.sock", "listen": [], "hosts": null, "forward_all": true}),
    )?;
    let port_zero = plan(
        "p3.json",
        json!({"socket": "/tmp/r.sock", "listen": ["127.0.0.1:0"], "hosts": null}),
    )?;
    let not_plan = plan("p4.json", json!("everything"))?;
    let mut cases: Vec<Vec<String>> = vec![
        vec!["--profile".into(), relative.to_string(), "--".into()],
        vec!["--profile".into(), parent.to_string(), "--".into()],
        vec!["--profile".into(), unknown.to_string(), "--".into()],
        vec!["--profile".into(), "{not json".into(), "--".into()],
        vec!["--".into()],
        vec![
            "--profile".into(),
            good.to_string(),
            "--no-confine".into(),
            "--".into(),
        ],
        vec![
            "--profile".into(),
            good.to_string(),
            "--profile".into(),
            good.to_string(),
            "--".into(),
        ],
        vec![
            "--profile".into(),
            good.to_string(),
            "--report".into(),
            "rel.json".into(),
            "--".into(),
        ],
        vec!["--profile".into(), odd_host.to_string(), "--".into()],
        // Internet sockets for a staged command, asked for where no staging helper made a
        // namespace of its own: this machine's network is here.
        vec![
            "--profile".into(),
            good.to_string(),
            "--staged-net".into(),
            "--".into(),
        ],
        vec![
            "--profile".into(),
            good.to_string(),
            "--staged-net".into(),
            "--staged-net".into(),
            "--".into(),
        ],
    ];
    for relay in [
        relative_socket,
        extra_field,
        port_zero,
        not_plan,
        "rel.json".into(),
    ] {
        cases.push(vec![
            "--profile".into(),
            good.to_string(),
            "--relay".into(),
            relay,
            "--".into(),
        ]);
    }
    for args in cases {
        let out = Command::new(env!("CARGO_BIN_EXE_reins"))
            .arg("__contain")
            .args(&args)
            .args(["/bin/sh", "-c", &script])
            .output()?;
        assert_eq!(out.status.code(), Some(125), "{args:?}: {}", text(&out));
        assert!(!marker.exists(), "{args:?}: the program ran");
        assert!(text(&out).contains("confinement helper"), "{}", text(&out));
    }
    // No program at all.
    let out = Command::new(env!("CARGO_BIN_EXE_reins"))
        .args(["__contain", "--profile", &good.to_string(), "--"])
        .output()?;
    assert_eq!(out.status.code(), Some(125));
    Ok(())
}
