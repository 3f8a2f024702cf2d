//! `reins serve` through a real HTTP client on 127.0.0.1: every route needs a paired device, a
//! pairing code works once and expires, guessing is throttled, a revoked device is locked out,
//! bodies, Host and Origin are checked, a stale card answers "superseded", a race between the
//! terminal and the web gives one decision, and the audit log names the device.

use std::io::{BufRead as _, BufReader};
use std::process::{Child, Stdio};

use serde_json::{json, Value};

use crate::common::{self, Cli};

/// A `reins serve` on a free port of 127.0.0.1, stopped (SIGTERM) when dropped.
pub struct Server {
    child: Child,
    pub base: String,
    pub port: u16,
}

impl Server {
    pub fn start(cli: &Cli, extra: &[&str]) -> anyhow::Result<Self> {
        let mut child = cli
            .strict_cmd()
            .args(["serve", "--listen", "127.0.0.1:0", "--json"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| anyhow::anyhow!("no stdout"))?;
        // The first thing printed is the address, as one JSON object.
        let mut text = String::new();
        for line in BufReader::new(stdout).lines() {
            let line = line?;
            text.push_str(&line);
            if line == "}" {
                break;
            }
        }
        let started: Value = serde_json::from_str(&text)
            .map_err(|e| anyhow::anyhow!("reins serve said {text:?}: {e}"))?;
        let addr: std::net::SocketAddr = started["addr"].as_str().unwrap_or_default().parse()?;
        Ok(Self {
            child,
            base: format!("http://127.0.0.1:{}", addr.port()),
            port: addr.port(),
        })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = common::signal(&self.child, rustix::process::Signal::TERM);
        let _ = self.child.wait();
    }
}

pub struct Http {
    client: reqwest::Client,
    base: String,
}

pub struct Answer {
    pub status: u16,
    pub body: Value,
    pub headers: reqwest::header::HeaderMap,
}

impl Http {
    pub fn new(server: &Server) -> Self {
        Self {
            client: reqwest::Client::new(),
            base: server.base.clone(),
        }
    }

    pub async fn call(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: Option<Vec<u8>>,
    ) -> anyhow::Result<Answer> {
        let method = reqwest::Method::from_bytes(method.as_bytes())?;
        let mut req = self.client.request(method, format!("{}{path}", self.base));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        if let Some(b) = body {
            req = req.header("content-type", "application/json").body(b);
        }
        let r = req.send().await?;
        let status = r.status().as_u16();
        let headers = r.headers().clone();
        let bytes = r.bytes().await?;
        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Ok(Answer {
            status,
            body,
            headers,
        })
    }

    pub async fn get(&self, path: &str, token: &str) -> anyhow::Result<Answer> {
        self.call("GET", path, Some(token), None).await
    }

    pub async fn post(
        &self,
        path: &str,
        token: Option<&str>,
        body: Value,
    ) -> anyhow::Result<Answer> {
        self.call("POST", path, token, Some(serde_json::to_vec(&body)?))
            .await
    }

    /// Pairs with a fresh code from `reins serve pair`; the device's token.
    pub async fn pair(&self, cli: &Cli, name: &str) -> anyhow::Result<String> {
        let code = pairing_code(cli, name)?;
        let a = self
            .post("/api/pair", None, json!({ "code": code }))
            .await?;
        anyhow::ensure!(a.status == 200, "pairing failed: {} {}", a.status, a.body);
        Ok(a.body["token"].as_str().unwrap_or_default().to_owned())
    }
}

pub fn pairing_code(cli: &Cli, name: &str) -> anyhow::Result<String> {
    let out = cli.json(&["serve", "pair", "--name", name])?;
    Ok(out["code"].as_str().unwrap_or_default().to_owned())
}

/// Every route of the API but pairing.
const ROUTES: &[(&str, &str)] = &[
    ("GET", "/api/session"),
    ("GET", "/api/events"),
    ("GET", "/api/approvals"),
    ("GET", "/api/approvals/0193a1b2"),
    ("POST", "/api/approvals/0193a1b2/approve"),
    ("POST", "/api/approvals/0193a1b2/reject"),
    ("GET", "/api/grants"),
    ("POST", "/api/grants/0193a1b2/revoke"),
    ("GET", "/api/runs"),
    ("GET", "/api/runs/0193a1b2-0000-7000-8000-000000000001"),
    (
        "GET",
        "/api/runs/0193a1b2-0000-7000-8000-000000000001/context",
    ),
    (
        "GET",
        "/api/runs/0193a1b2-0000-7000-8000-000000000001/usage",
    ),
    (
        "POST",
        "/api/runs/0193a1b2-0000-7000-8000-000000000001/pause",
    ),
    (
        "POST",
        "/api/runs/0193a1b2-0000-7000-8000-000000000001/resume",
    ),
    (
        "POST",
        "/api/runs/0193a1b2-0000-7000-8000-000000000001/cancel",
    ),
    (
        "POST",
        "/api/runs/0193a1b2-0000-7000-8000-000000000001/budget/allow",
    ),
    (
        "POST",
        "/api/runs/0193a1b2-0000-7000-8000-000000000001/budget/stop",
    ),
    ("GET", "/api/memory"),
    ("GET", "/api/memory/settings"),
    ("GET", "/api/memory/suggestions"),
    ("POST", "/api/memory/suggestions/0193a1b2/accept"),
    ("POST", "/api/memory/suggestions/0193a1b2/dismiss"),
    ("GET", "/api/memory/0193a1b2"),
    ("PUT", "/api/memory/0193a1b2"),
    ("DELETE", "/api/memory/0193a1b2"),
    ("POST", "/api/audit/page"),
    ("GET", "/api/audit/verify"),
    ("POST", "/api/audit/export"),
    ("GET", "/api/keys?names=openai"),
    ("GET", "/api/provider"),
    ("GET", "/api/no-such-route"),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_needs_a_paired_device_and_pairing_is_once_short_and_throttled(
) -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let server = Server::start(&cli, &[])?;
    let http = Http::new(&server);

    for (method, path) in ROUTES {
        let a = http.call(method, path, None, Some(b"{}".to_vec())).await?;
        assert_eq!(a.status, 401, "{method} {path} without a token: {}", a.body);
        assert_eq!(a.body["code"], "unauthorized", "{method} {path}");
        let a = http
            .call(method, path, Some("reins_dev_madeup"), Some(b"{}".to_vec()))
            .await?;
        assert_eq!(a.status, 401, "{method} {path} with a made-up token");
    }
    // The UI itself needs no token (it shows the pairing page).
    let page = reqwest::get(format!("{}/", server.base)).await?;
    assert_eq!(page.status(), 200);

    // A code works once. (Attempt 1 and 2 of the throttle's five.)
    let code = pairing_code(&cli, "my phone")?;
    let a = http
        .post("/api/pair", None, json!({ "code": code }))
        .await?;
    assert_eq!(a.status, 200, "{}", a.body);
    let token = a.body["token"].as_str().unwrap_or_default().to_owned();
    assert!(token.starts_with("reins_dev_") && token.len() > 40);
    assert_eq!(a.body["device"]["name"], "my phone");
    let again = http
        .post("/api/pair", None, json!({ "code": code }))
        .await?;
    assert_eq!(again.status, 400, "a used code: {}", again.body);

    let me = http.get("/api/session", &token).await?;
    assert_eq!(me.status, 200);
    assert_eq!(me.body["device"]["name"], "my phone");
    let list = http.get("/api/approvals", &token).await?;
    assert_eq!((list.status, list.body.clone()), (200, json!([])));

    // Only a hash of the token is stored.
    let db = std::fs::read(cli.data().join("reins.db"))?;
    let wal = std::fs::read(cli.data().join("reins.db-wal")).unwrap_or_default();
    let needle = token.as_bytes();
    assert!(
        !db.windows(needle.len()).any(|w| w == needle)
            && !wal.windows(needle.len()).any(|w| w == needle),
        "the token is not in the database"
    );

    // A code expires (attempt 3): five minutes pass, as far as the database knows.
    let late = pairing_code(&cli, "late")?;
    let pool = sqlx::SqlitePool::connect(&format!(
        "sqlite://{}",
        cli.data().join("reins.db").display()
    ))
    .await?;
    sqlx::query("UPDATE pairings SET expires_at = 1 WHERE name = 'late'")
        .execute(&pool)
        .await?;
    pool.close().await;
    let a = http
        .post("/api/pair", None, json!({ "code": late }))
        .await?;
    assert_eq!(a.status, 400, "an expired code: {}", a.body);

    // Guessing (attempts 4 and 5, then throttled): even a good code waits.
    for guess in ["AAAAA-AAAAA", "BBBBB-BBBBB"] {
        let a = http
            .post("/api/pair", None, json!({ "code": guess }))
            .await?;
        assert_eq!(a.status, 400, "{}", a.body);
    }
    let good = pairing_code(&cli, "tablet")?;
    let a = http
        .post("/api/pair", None, json!({ "code": good }))
        .await?;
    assert_eq!(a.status, 429, "throttled: {}", a.body);
    assert_eq!(a.body["code"], "throttled");
    assert!(a.headers.get("retry-after").is_some());

    // Revoked from the terminal: locked out at once.
    let devices = cli.json(&["serve", "devices"])?;
    assert_eq!(devices.as_array().map(Vec::len), Some(1));
    assert!(devices[0].get("token").is_none() && devices[0].get("tokenSha256").is_none());
    let out = cli.run(&["serve", "revoke", "my phone"])?;
    assert!(out.status.success(), "{}", common::text(&out));
    let a = http.get("/api/approvals", &token).await?;
    assert_eq!(a.status, 401, "a revoked token");
    let audit = audit_kinds(&cli)?;
    for kind in ["device.pairing_offered", "device.paired", "device.revoked"] {
        assert!(audit.iter().any(|k| k == kind), "{kind} in {audit:?}");
    }
    Ok(())
}

fn audit_kinds(cli: &Cli) -> anyhow::Result<Vec<String>> {
    let events = audit_lines(cli)?;
    Ok(events
        .iter()
        .filter_map(|e| e["kind"].as_str().map(str::to_owned))
        .collect())
}

fn audit_lines(cli: &Cli) -> anyhow::Result<Vec<Value>> {
    let out = cli.tmp.path().join("audit.jsonl");
    let o = cli.run(&[
        "audit",
        "export",
        "--force",
        "--out",
        &out.to_string_lossy(),
    ])?;
    anyhow::ensure!(o.status.success(), "{}", common::text(&o));
    Ok(std::fs::read_to_string(&out)?
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect())
}

fn curl_status(args: &[&str]) -> anyhow::Result<String> {
    let out = std::process::Command::new("curl")
        .args(["-s", "-o", "/dev/null", "-w", "%{http_code}"])
        .args(args)
        .output()?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_hosts_and_origins_are_checked() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let server = Server::start(&cli, &[])?;
    let http = Http::new(&server);
    let token = http.pair(&cli, "laptop").await?;
    let approve = "/api/approvals/0193a1b2/approve";

    let huge = vec![b'x'; reins_serve::MAX_BODY + 1024];
    let a = http.call("POST", approve, Some(&token), Some(huge)).await?;
    assert_eq!(a.status, 400, "oversized: {}", a.body);
    assert_eq!(a.body["code"], "invalid_input");
    let a = http
        .call("POST", approve, Some(&token), Some(b"{\"scope\":".to_vec()))
        .await?;
    assert_eq!(a.status, 400, "malformed: {}", a.body);
    let a = http
        .post(
            approve,
            Some(&token),
            json!({ "scope": "once", "expectHash": "ab".repeat(32), "sql": "DROP TABLE runs" }),
        )
        .await?;
    assert_eq!(a.status, 400, "an unknown field: {}", a.body);
    let a = http
        .post(
            approve,
            Some(&token),
            json!({ "scope": "once", "expectHash": "short" }),
        )
        .await?;
    assert_eq!(a.status, 400, "the IPC layer's checks apply: {}", a.body);
    let a = http
        .post(
            "/api/approvals/..%2F..%2Fetc/reject",
            Some(&token),
            json!({ "reason": "x" }),
        )
        .await?;
    assert_eq!(a.status, 400, "not an id: {}", a.body);
    let a = http.get("/api/approvals?status=bogus", &token).await?;
    assert_eq!(a.status, 400);

    let url = format!("{}/api/approvals", server.base);
    let auth = format!("Authorization: Bearer {token}");
    assert_eq!(
        curl_status(&["-H", &auth, &url])?,
        "200",
        "curl as it should be"
    );
    assert_eq!(
        curl_status(&["-H", &auth, "-H", "Host: evil.example", &url])?,
        "403",
        "a wrong Host (DNS rebinding)"
    );
    assert_eq!(
        curl_status(&["-H", &auth, "-H", "Origin: https://evil.example", &url])?,
        "403",
        "another site's page"
    );
    let own = format!("Origin: http://localhost:{}", server.port);
    assert_eq!(curl_status(&["-H", &auth, "-H", &own, &url])?, "200");
    // Keys: only whether they are set.
    let a = http.get("/api/keys?names=openai", &token).await?;
    assert!(
        a.status == 200 || a.body["code"] == "keyring_unavailable",
        "{}",
        a.body
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_web_decision_is_bound_to_the_card_single_and_audited_with_the_device(
) -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let plan = Cli::plan("fix-logrotate.toml");
    let out = cli
        .strict_cmd()
        .args(["run", "--no-wait", "--plan"])
        .arg(&plan)
        .arg("--workspace")
        .arg(cli.ws())
        .output()?;
    assert_eq!(out.status.code(), Some(3), "{}", common::text(&out));
    let server = Server::start(&cli, &[])?;
    let http = Http::new(&server);
    let token = http.pair(&cli, "my phone").await?;

    let cards = http.get("/api/approvals", &token).await?.body;
    let card = &cards[0];
    let id = card["id"].as_str().unwrap_or_default().to_owned();
    let hash = card["actionHash"].as_str().unwrap_or_default().to_owned();
    assert!(card["preview"]
        .as_str()
        .unwrap_or_default()
        .contains("+    daily"));

    // Not the action the card showed.
    let a = http
        .post(
            &format!("/api/approvals/{id}/approve"),
            Some(&token),
            json!({ "scope": "once", "expectHash": "0".repeat(64) }),
        )
        .await?;
    assert_eq!(
        (a.status, a.body["code"].as_str()),
        (409, Some("conflict")),
        "{}",
        a.body
    );
    // The file changed underneath the card.
    let conf = cli.ws().join("config/logrotate.conf");
    std::fs::write(
        &conf,
        format!("{}\n# edited by hand\n", std::fs::read_to_string(&conf)?),
    )?;
    let a = http
        .post(
            &format!("/api/approvals/{id}/approve"),
            Some(&token),
            json!({ "scope": "once", "expectHash": hash }),
        )
        .await?;
    assert_eq!(a.status, 409, "{}", a.body);
    assert_eq!(a.body["code"], "superseded", "{}", a.body);

    // The fresh card: the terminal approves while the browser rejects; one wins.
    let cards = http.get("/api/approvals", &token).await?.body;
    let fresh = cards[0]["id"].as_str().unwrap_or_default().to_owned();
    assert_ne!(fresh, id);
    let mut terminal = cli.strict_cmd();
    terminal.args(["approve", &fresh]);
    let terminal = tokio::task::spawn_blocking(move || terminal.output());
    let web = http
        .post(
            &format!("/api/approvals/{fresh}/reject"),
            Some(&token),
            json!({ "reason": "not during the freeze" }),
        )
        .await?;
    let terminal = terminal.await??;
    let web_won = web.status == 200;
    assert!(
        web_won != terminal.status.success(),
        "exactly one decision: web {} {}, terminal {}",
        web.status,
        web.body,
        common::text(&terminal)
    );
    if !web_won {
        assert_eq!(web.status, 409, "{}", web.body);
    }
    let events = audit_lines(&cli)?;
    let decisions: Vec<&Value> = events
        .iter()
        .filter(|e| {
            matches!(
                e["kind"].as_str(),
                Some("approval.approved" | "approval.rejected")
            ) && e.to_string().contains(&fresh)
        })
        .collect();
    assert_eq!(decisions.len(), 1, "{decisions:?}");
    if web_won {
        assert!(
            decisions[0].to_string().contains("device:my phone@"),
            "the audit log names the device: {}",
            decisions[0]
        );
    }

    // Exported, each review says who decided it: the phone or the terminal, and the harness for
    // the card the file's change replaced.
    let sink = reins_tests::otlp_sink::Sink::start()?;
    let mut flush = cli.strict_cmd();
    flush
        .env(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            format!("http://127.0.0.1:{}", sink.port),
        )
        .env("OTEL_METRICS_EXPORTER", "none")
        .env_remove("OTEL_SDK_DISABLED")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .args(["otel", "flush"]);
    let out = tokio::task::spawn_blocking(move || flush.output()).await??;
    assert!(out.status.success(), "{}", common::text(&out));
    let reviews = sink.span_attributes()?;
    let decider = |card: &str| {
        reviews
            .iter()
            .find(|(_, a)| a.iter().any(|kv| kv == &format!("reins.review.id={card}")))
            .and_then(|(_, a)| {
                a.iter()
                    .find_map(|kv| kv.strip_prefix("reins.review.decider="))
            })
            .map(str::to_owned)
    };
    let want = if web_won { "device" } else { "user" };
    assert_eq!(decider(&fresh).as_deref(), Some(want), "{reviews:?}");
    assert_eq!(decider(&id).as_deref(), Some("harness"), "{reviews:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_with_a_made_certificate_checks_the_host_over_http2_too() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let server = Server::start(&cli, &["--tls"])?;
    let url = format!("https://127.0.0.1:{}/api/approvals", server.port);
    // A browser over TLS speaks HTTP/2: the host is in the request's authority, not a header.
    let code = |extra: &[&str]| -> anyhow::Result<String> {
        curl_status(&[&["-k", "--http2"], extra, &[url.as_str()]].concat())
    };
    assert_eq!(code(&[])?, "401", "reaches the token check");
    assert_eq!(code(&["-H", "Host: evil.example"])?, "403");
    assert_eq!(code(&["--http1.1"])?, "401");
    let plain = format!("http://127.0.0.1:{}/api/approvals", server.port);
    assert_ne!(curl_status(&[&plain])?, "401", "no plain HTTP beside TLS");
    // The pairing link carries the certificate's fingerprint.
    let pairing = cli.json(&["serve", "pair", "--name", "tablet"])?;
    let fp = pairing["fingerprint"]
        .as_str()
        .unwrap_or_default()
        .replace(':', "");
    assert_eq!(fp.len(), 64, "{pairing}");
    assert!(pairing["link"]
        .as_str()
        .unwrap_or_default()
        .ends_with(&format!("&fp={fp}")));
    Ok(())
}

/// Red team N11: a device revoked while its event stream is open hears nothing more: the stream
/// asks again before each event (and every few seconds) and ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_devices_event_stream_ends_before_its_next_event() -> anyhow::Result<()> {
    use std::time::Duration;
    let cli = Cli::new()?;
    let server = Server::start(&cli, &[])?;
    let http = Http::new(&server);
    let token = http.pair(&cli, "phone").await?;
    let mut stream = reqwest::Client::new()
        .get(format!("{}/api/events", server.base))
        .bearer_auth(&token)
        .send()
        .await?;
    assert_eq!(stream.status().as_u16(), 200);
    let first = tokio::time::timeout(Duration::from_secs(10), stream.chunk()).await??;
    let first = String::from_utf8_lossy(first.as_deref().unwrap_or_default()).into_owned();
    assert!(first.contains("ready"), "{first}");
    // What the pairing itself changed may still be on its way: heard before the revocation.
    while let Ok(Ok(Some(_))) =
        tokio::time::timeout(Duration::from_millis(1500), stream.chunk()).await
    {}
    let out = cli.run(&["serve", "revoke", "phone"])?;
    assert!(out.status.success(), "{}", common::text(&out));
    // Something changes: a run waits on a card.
    let plan = Cli::plan("fix-logrotate.toml");
    let ws = cli.ws();
    let out = cli
        .strict_cmd()
        .args(["run", "--no-wait", "--plan"])
        .arg(&plan)
        .arg("--workspace")
        .arg(&ws)
        .output()?;
    assert_eq!(out.status.code(), Some(3), "{}", common::text(&out));
    let mut rest = String::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        match tokio::time::timeout_at(deadline, stream.chunk()).await {
            Ok(Ok(Some(c))) => rest.push_str(&String::from_utf8_lossy(&c)),
            Ok(Ok(None) | Err(_)) => break,
            Err(_) => anyhow::bail!("the stream is still open after 30 s: {rest:?}"),
        }
    }
    assert!(!rest.contains("changed"), "{rest:?}");
    Ok(())
}
