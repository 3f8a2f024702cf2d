//! `reins serve` under load, against baselines measured in the same run on the same server:
//!
//! - **A new card reaches a browser**: from the card's creation (its `createdAt`) to the moment a
//!   client holding `/api/events` has the event *and* has fetched the list that shows it (what the
//!   web UI does), over 7 runs; against a client polling the list every second.
//!   Goal: ≤ 300 ms median.
//! - **The approvals list with 1,000 pending cards**: requests per second and p50/p99 latency from 4
//!   concurrent clients; against `/api/session` (the same auth and routing, a tiny body).
//!   Goal: p99 ≤ 50 ms.
//! - **Memory**: the server's resident set idle, and after the load.
//!
//! `cargo bench -p reins-cli --bench serve [-- CARDS SECONDS]`

use std::io::{BufRead as _, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures_util::StreamExt as _;

const PLAN: &str = r#"
name = "bench card"
goal = "make a card"

[[steps]]
tool = "fs.write"
why  = "a change that needs a review"
args = { path = "note.txt", content = "hello\n" }
"#;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn pct(mut v: Vec<f64>, p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i.min(v.len() - 1)]
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

struct Env {
    tmp: tempfile::TempDir,
    reins: &'static str,
}

impl Env {
    fn cmd(&self) -> Command {
        let mut c = Command::new(self.reins);
        c.arg("--data-dir")
            .arg(self.tmp.path().join("data"))
            .env("REINS_CONFIG_DIR", self.tmp.path().join("config"))
            .env_remove("REINS_POLICY");
        c
    }

    /// A plan run that stops at its card (`run --no-wait`), on its own workspace.
    fn card(&self, n: usize) -> anyhow::Result<Child> {
        let ws = self.tmp.path().join(format!("ws{n}"));
        std::fs::create_dir_all(&ws)?;
        Ok(self
            .cmd()
            .args(["run", "--no-wait", "--plan"])
            .arg(self.tmp.path().join("plan.toml"))
            .arg("--workspace")
            .arg(&ws)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?)
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .filter_map(|a| a.parse().ok())
        .collect();
    let cards = args.first().copied().unwrap_or(1000);
    let seconds = args.get(1).copied().unwrap_or(10) as u64;
    let env = Env {
        tmp: tempfile::tempdir()?,
        reins: env!("CARGO_BIN_EXE_reins"),
    };
    std::fs::write(env.tmp.path().join("plan.toml"), PLAN)?;

    let mut server = env
        .cmd()
        .args(["serve", "--listen", "127.0.0.1:0", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let mut text = String::new();
    if let Some(out) = server.stdout.take() {
        for line in BufReader::new(out).lines() {
            let line = line?;
            text.push_str(&line);
            if line == "}" {
                break;
            }
        }
    }
    let started: serde_json::Value = serde_json::from_str(&text)?;
    let base = format!("http://{}", started["addr"].as_str().unwrap_or_default());
    tokio::time::sleep(Duration::from_millis(500)).await;
    let idle = rss_kib(server.id());

    let pair = env
        .cmd()
        .args(["serve", "pair", "--name", "bench", "--json"])
        .output()?;
    let code = serde_json::from_slice::<serde_json::Value>(&pair.stdout)?["code"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let client = reqwest::Client::new();
    let paired: serde_json::Value = serde_json::from_slice(
        &client
            .post(format!("{base}/api/pair"))
            .body(serde_json::json!({ "code": code }).to_string())
            .send()
            .await?
            .bytes()
            .await?,
    )?;
    let token = paired["token"].as_str().unwrap_or_default().to_owned();
    let list = |c: &reqwest::Client| {
        c.get(format!("{base}/api/approvals"))
            .bearer_auth(&token)
            .send()
    };

    // 1. A new card reaching a browser: events + the refetch, against polling every second.
    let mut pushed = Vec::new();
    let mut polled = Vec::new();
    for n in 0..7 {
        let events = client
            .get(format!("{base}/api/events"))
            .bearer_auth(&token)
            .send()
            .await?;
        let mut stream = events.bytes_stream();
        // The `ready` event: connected.
        let _ = stream.next().await;
        let mut child = env.card(n)?;
        let seen_at;
        loop {
            let chunk = tokio::time::timeout(Duration::from_secs(30), stream.next())
                .await?
                .ok_or_else(|| anyhow::anyhow!("the event stream ended"))??;
            if String::from_utf8_lossy(&chunk).contains("\"newApprovals\":[\"") {
                let body = list(&client).await?.bytes().await?;
                seen_at = reins_core::api::now_ms();
                let cards: serde_json::Value = serde_json::from_slice(&body)?;
                let newest = cards
                    .as_array()
                    .and_then(|a| a.iter().map(|c| c["createdAt"].as_i64().unwrap_or(0)).max())
                    .unwrap_or(0);
                pushed.push((seen_at - newest) as f64);
                break;
            }
        }
        child.wait()?;
        // The poller: a list every second. Its clock does not know when the card comes, so the
        // card is created at a spread of phases within the poller's second.
        let known =
            serde_json::from_slice::<serde_json::Value>(&list(&client).await?.bytes().await?)?
                .as_array()
                .map(Vec::len)
                .unwrap_or(0);
        let phase = (n as u64 * 137 + 70) % 1000;
        let mut child = env.card(100 + n)?;
        let mut next = Duration::from_millis(1000 - phase);
        loop {
            tokio::time::sleep(next).await;
            next = Duration::from_secs(1);
            let cards: serde_json::Value =
                serde_json::from_slice(&list(&client).await?.bytes().await?)?;
            let arr = cards.as_array().cloned().unwrap_or_default();
            if arr.len() > known {
                let newest = arr
                    .iter()
                    .map(|c| c["createdAt"].as_i64().unwrap_or(0))
                    .max()
                    .unwrap_or(0);
                polled.push((reins_core::api::now_ms() - newest) as f64);
                break;
            }
        }
        child.wait()?;
    }

    // 2. The list with `cards` pending: fill the inbox, two runs at a time.
    let have = 14;
    let fill = Instant::now();
    let mut n = have;
    while n < cards {
        let batch: Vec<Child> = (n..(n + 2).min(cards))
            .map(|i| env.card(1000 + i))
            .collect::<anyhow::Result<_>>()?;
        for mut c in batch {
            c.wait()?;
        }
        n += 2;
        if n % 200 == 0 {
            eprintln!(
                "  {n}/{cards} cards ({:.0} s)",
                fill.elapsed().as_secs_f64()
            );
        }
    }
    let body = list(&client).await?.bytes().await?;
    let count = serde_json::from_slice::<serde_json::Value>(&body)?
        .as_array()
        .map(Vec::len)
        .unwrap_or(0);
    anyhow::ensure!(count >= cards, "only {count} cards pending");

    async fn load(
        client: &reqwest::Client,
        url: String,
        token: &str,
        seconds: u64,
    ) -> anyhow::Result<(f64, Vec<f64>)> {
        let until = Instant::now() + Duration::from_secs(seconds);
        let started = Instant::now();
        let mut tasks = Vec::new();
        for _ in 0..4 {
            let (c, url, token) = (client.clone(), url.clone(), token.to_owned());
            tasks.push(tokio::spawn(async move {
                let mut lat = Vec::new();
                while Instant::now() < until {
                    let t = Instant::now();
                    let r = c.get(&url).bearer_auth(&token).send().await?;
                    anyhow::ensure!(r.status().is_success(), "{}", r.status());
                    let _ = r.bytes().await?;
                    lat.push(t.elapsed().as_secs_f64() * 1000.0);
                }
                anyhow::Ok(lat)
            }));
        }
        let mut all = Vec::new();
        for t in tasks {
            all.extend(t.await??);
        }
        Ok((all.len() as f64 / started.elapsed().as_secs_f64(), all))
    }
    // The list built afresh after a change (the server keeps it while nothing changes): a pairing
    // offer from the CLI is a change (an audit event) that shows nowhere in the inbox.
    let mut rebuilt = Vec::new();
    for _ in 0..7 {
        env.cmd()
            .args(["serve", "pair", "--name", "change", "--json"])
            .output()?;
        let t = Instant::now();
        let _ = list(&client).await?.bytes().await?;
        rebuilt.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    let (base_rps, base_lat) =
        load(&client, format!("{base}/api/session"), &token, seconds).await?;
    let (rps, lat) = load(&client, format!("{base}/api/approvals"), &token, seconds).await?;
    let loaded = rss_kib(server.id());
    let _ = rustix::process::kill_process(
        rustix::process::Pid::from_raw(server.id() as i32).ok_or_else(|| anyhow::anyhow!("pid"))?,
        rustix::process::Signal::TERM,
    );
    let _ = server.wait();

    let (p, q) = (median(pushed.clone()), median(polled.clone()));
    println!("reins serve (release), 2 cores, shared machine");
    println!(
        "card to browser, events + refetch: median {p:.0} ms over {} (goal <= 300 ms: {})",
        pushed.len(),
        if p <= 300.0 { "met" } else { "NOT met" }
    );
    println!(
        "  baseline, polling every 1 s:      median {q:.0} ms; ratio {:.2}",
        p / q
    );
    println!(
        "approvals list, {count} pending, {} B: {rps:.0} req/s, p50 {:.1} ms, p99 {:.1} ms (goal p99 <= 50 ms: {})",
        body.len(),
        pct(lat.clone(), 0.5),
        pct(lat.clone(), 0.99),
        if pct(lat.clone(), 0.99) <= 50.0 { "met" } else { "NOT met" }
    );
    println!(
        "  baseline, /api/session:          {base_rps:.0} req/s, p50 {:.1} ms, p99 {:.1} ms; throughput ratio {:.2}",
        pct(base_lat.clone(), 0.5),
        pct(base_lat, 0.99),
        rps / base_rps
    );
    println!(
        "  built afresh after a change:     median {:.1} ms over {} (one client)",
        median(rebuilt.clone()),
        rebuilt.len()
    );
    println!(
        "memory (VmRSS): idle {:.1} MiB, after the load {:.1} MiB",
        idle as f64 / 1024.0,
        loaded as f64 / 1024.0
    );
    Ok(())
}
