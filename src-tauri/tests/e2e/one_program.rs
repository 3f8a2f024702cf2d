//! The package installs one program under two names: `/usr/bin/reins` links to the app. Started
//! under the CLI's name, the app binary must be the CLI (no window, no display needed).

use std::process::Command;

use anyhow::Result;

#[test]
fn the_app_started_as_reins_is_the_cli() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let link = dir.path().join("reins");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_reins-app"), &link)?;
    let version = Command::new(&link).arg("--version").output()?;
    let text = String::from_utf8_lossy(&version.stdout);
    assert!(
        version.status.success() && text.starts_with("reins "),
        "`reins --version` through the link: {version:?}"
    );
    let data = dir.path().join("data");
    let ps = Command::new(&link)
        .args(["ps", "--data-dir"])
        .arg(&data)
        .env_remove("DISPLAY")
        .output()?;
    assert!(ps.status.success(), "`reins ps` through the link: {ps:?}");
    assert!(
        data.join("reins.db").is_file(),
        "the CLI opened its data dir: {ps:?}"
    );
    Ok(())
}
