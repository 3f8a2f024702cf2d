//! The escape hatch, end to end: a command runs without the network unless a person chooses, on
//! its card, to run it with the network; that choice is high risk, made once, and never a lasting
//! grant.

use super::common::{text, Cli};

/// A command runs without the network unless a person chooses, on its card, to run it with the
/// network: once, high risk, never a lasting grant. The card says how it will run.
#[test]
fn the_network_is_a_choice_on_the_card_made_once() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    listener.set_nonblocking(true)?;
    let port = listener.local_addr()?.port();
    let policy = cli.tmp.path().join("allow-python.toml");
    std::fs::write(
        &policy,
        "[[rules]]\ndecision = \"allow\"\ntool = \"shell.exec\"\nprogram = \"python3\"\n",
    )?;
    std::fs::write(
        cli.ws().join("connect.py"),
        format!("import socket\nsocket.create_connection(('127.0.0.1', {port}))\n"),
    )?;
    let plan = cli.tmp.path().join("connect.toml");
    std::fs::write(
        &plan,
        "name = \"connect\"\ngoal = \"reach a server\"\n\
         [[steps]]\ntool = \"shell.exec\"\nexpect = \"any\"\n\
         args = { argv = [\"python3\", \"connect.py\"] }\n",
    )?;
    let connections = || {
        let mut n = 0;
        while listener.accept().is_ok() {
            n += 1;
        }
        n
    };
    let reins = || {
        let mut c = cli.cmd();
        c.env("REINS_POLICY", &policy);
        c
    };
    // Allowed by a rule, it runs at once, confined: no connection.
    let out = reins()
        .args(["run", "--no-wait", "--plan"])
        .arg(&plan)
        .arg("--workspace")
        .arg(cli.ws())
        .output()?;
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(connections(), 0, "{}", text(&out));
    // Asking for the network makes it the person's choice: a card, high risk, that says how.
    let net_plan = cli.tmp.path().join("connect-net.toml");
    std::fs::write(
        &net_plan,
        std::fs::read_to_string(&plan)?.replace("] }", "], sandbox = \"network\" }"),
    )?;
    let out = reins()
        .args(["run", "--no-wait", "--plan"])
        .arg(&net_plan)
        .arg("--workspace")
        .arg(cli.ws())
        .output()?;
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let cards = reins().args(["approvals", "--json"]).output()?;
    let cards: serde_json::Value = serde_json::from_slice(&cards.stdout)?;
    let card = &cards[0];
    assert_eq!(card["risk"], "high", "{card}");
    let how = card["runs"].as_str().unwrap_or_default();
    assert!(how.contains("with the network"), "{card}");
    let id = card["id"].as_str().unwrap_or_default().to_owned();
    let lasting = reins()
        .args(["approve", &id, "--scope", "always"])
        .output()?;
    assert!(!lasting.status.success(), "{}", text(&lasting));
    assert!(
        text(&lasting).contains("approved once"),
        "{}",
        text(&lasting)
    );
    let out = reins().args(["approve", &id, "--drive"]).output()?;
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(connections(), 1, "{}", text(&out));
    let grants = cli.json(&["grants"])?;
    assert_eq!(grants.as_array().map(Vec::len), Some(0), "{grants}");
    Ok(())
}

/// A policy file named through `..` (as `REINS_POLICY=../policy.toml` would be) is one of Reins'
/// own places every confined process is kept from; the helper takes only resolved paths, so Reins
/// resolves it first, and the command runs.
#[test]
fn a_policy_named_through_dot_dot_still_lets_confined_commands_run() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let dir = cli.tmp.path().join("policies");
    std::fs::create_dir_all(&dir)?;
    std::fs::write(
        dir.join("allow-echo.toml"),
        "[[rules]]\ndecision = \"allow\"\ntool = \"shell.exec\"\nprogram = \"python3\"\n",
    )?;
    std::fs::write(
        cli.ws().join("echo.py"),
        "open('out.txt', 'w').write('ran\\n')\n",
    )?;
    let plan = cli.tmp.path().join("echo.toml");
    std::fs::write(
        &plan,
        "name = \"echo\"\ngoal = \"write a file\"\n[[steps]]\ntool = \"shell.exec\"\n\
         args = { argv = [\"python3\", \"echo.py\"] }\n",
    )?;
    let out = cli
        .cmd()
        .env("REINS_POLICY", dir.join("../policies/allow-echo.toml"))
        .args(["run", "--no-wait", "--plan"])
        .arg(&plan)
        .arg("--workspace")
        .arg(cli.ws())
        .output()?;
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(cli.read("out.txt")?, "ran\n", "{}", text(&out));
    Ok(())
}
