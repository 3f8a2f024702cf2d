//! Settings → Remote approvals as a person uses it: start `reins serve` inside the app, pair a
//! device with the code the app shows (the device being a plain HTTP client here), see it listed,
//! revoke it, stop serving.

use super::*;

async fn status(url: &str, token: Option<&str>) -> Result<u16> {
    let mut req = reqwest::Client::new().get(url);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    Ok(req.send().await?.status().as_u16())
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs a display: run scripts/e2e"]
async fn k_the_app_serves_remote_approvals_and_pairs_and_revokes_devices() -> Result<()> {
    let home = Home::new()?;
    let app = App::launch(&home).await?;
    app.view("settings").await?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    app.fill("input[name='listen']", &format!("127.0.0.1:{port}"))
        .await?;
    app.click("[data-testid='remote-start']").await?;
    let url = app
        .find(By::Css("[data-testid='remote-url']"))
        .await?
        .text()
        .await?;
    assert_eq!(url, format!("http://127.0.0.1:{port}/"));
    let api = format!("{url}api/approvals");
    assert_eq!(status(&url, None).await?, 200, "the page itself");
    assert_eq!(status(&api, None).await?, 401, "the API needs a device");

    app.fill("input[name='device-name']", "desk phone").await?;
    app.click("[data-testid='pair-device']").await?;
    let code = app
        .find(By::Css("[data-testid='pairing-code']"))
        .await?
        .text()
        .await?;
    app.d()
        .execute(
            "document.querySelector('[data-testid=remote-approvals]').scrollIntoView()",
            vec![],
        )
        .await?;
    app.screenshot("settings-remote").await?;
    let paired: serde_json::Value = serde_json::from_slice(
        &reqwest::Client::new()
            .post(format!("{url}api/pair"))
            .body(serde_json::json!({ "code": code }).to_string())
            .send()
            .await?
            .bytes()
            .await?,
    )?;
    let token = paired["token"].as_str().context("a token")?.to_owned();
    assert_eq!(status(&api, Some(&token)).await?, 200);

    // The device shows up (the app hears of the change) and can be revoked from there.
    app.click("[data-testid='revoke-device']").await?;
    app.until("the revoked token is refused", || async {
        Ok(status(&api, Some(&token)).await? == 401)
    })
    .await?;
    let devices: serde_json::Value =
        serde_json::from_str(&home.reins(&["serve", "devices", "--json"], &[])?)?;
    assert_eq!(devices[0]["name"], "desk phone");
    assert!(devices[0]["revokedAt"].is_i64(), "{devices}");

    app.click("[data-testid='remote-stop']").await?;
    app.until("nothing listens any more", || async {
        Ok(std::net::TcpStream::connect(("127.0.0.1", port)).is_err())
    })
    .await?;
    app.quit().await
}
