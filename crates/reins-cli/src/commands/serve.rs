//! `reins serve`: the inbox over HTTP for a browser or a phone; `serve pair`, `serve devices`,
//! `serve revoke`. Adapters over `reins_serve` and the devices of `reins_core::api`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use reins_core::api::{Error, Reins, Silent};
use reins_serve::{Config, Tls};
use serde::Serialize;

use crate::exit;
use crate::output::{print_json, table, time};

#[derive(clap::Args)]
#[command(
    args_conflicts_with_subcommands = true,
    after_help = "Pair a device first: `reins serve pair --name \"my phone\"` prints a one-time code, a link and a QR code.\n\
                  Exposing it beyond this machine: docs/remote-approvals.md (LAN, reverse proxy, SSH port forwarding)."
)]
pub struct Args {
    #[command(subcommand)]
    command: Option<ServeCommand>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(clap::Args)]
struct RunArgs {
    /// Address and port to listen on. Anything but a loopback address is announced as an
    /// exposure, and is served over TLS unless --no-tls.
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:8787")]
    listen: SocketAddr,
    /// A host name (or address) requests may name besides the listening address, e.g. the name a
    /// reverse proxy forwards or the machine's LAN name. Repeatable.
    #[arg(long = "allow-host", value_name = "NAME")]
    allow_hosts: Vec<String>,
    /// The TLS certificate (PEM); with --tls-key.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The TLS private key (PEM); with --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Serve TLS on loopback too, with a self-signed certificate (its key in the OS keyring).
    #[arg(long, conflicts_with = "no_tls")]
    tls: bool,
    /// Plain HTTP on a non-loopback address: only behind a reverse proxy that terminates TLS.
    #[arg(long)]
    no_tls: bool,
    /// Also drive runs in this process (as `reins worker` does), so an approval made from a
    /// phone is carried out without another worker running.
    #[arg(long)]
    worker: bool,
}

#[derive(clap::Subcommand)]
enum ServeCommand {
    /// Make a one-time pairing code (5 minutes, once) and print it with a link and a QR code.
    Pair(PairArgs),
    /// List paired devices.
    Devices,
    /// Revoke a device by id, id prefix or name: its token stops working at once.
    Revoke {
        #[arg(value_name = "DEVICE")]
        device: String,
    },
}

#[derive(clap::Args)]
struct PairArgs {
    /// The device's name, as its decisions are audited ("my phone").
    #[arg(long)]
    name: String,
    /// Also write the QR code to this PNG file.
    #[arg(long, value_name = "FILE")]
    png: Option<PathBuf>,
}

fn invalid(e: impl std::fmt::Display) -> Error {
    Error::Invalid(e.to_string())
}

pub async fn exec(reins: Arc<Reins>, args: Args, json: bool) -> reins_core::api::Result<u8> {
    match args.command {
        Some(ServeCommand::Pair(p)) => pair(&reins, p, json).await,
        Some(ServeCommand::Devices) => devices(&reins, json).await,
        Some(ServeCommand::Revoke { device }) => {
            let d = reins.revoke_device(&device).await?;
            if json {
                print_json(&d);
            } else {
                println!(
                    "revoked device {:?} ({}): its token no longer works",
                    d.name, d.id
                );
            }
            Ok(exit::DONE)
        }
        None => serve(reins, args.run, json).await,
    }
}

async fn serve(reins: Arc<Reins>, a: RunArgs, json: bool) -> reins_core::api::Result<u8> {
    let loopback = a.listen.ip().is_loopback();
    let tls = match (a.tls_cert, a.tls_key) {
        (Some(cert), Some(key)) => Tls::Files { cert, key },
        _ if a.tls || (!loopback && !a.no_tls) => Tls::SelfSigned,
        _ => Tls::Off,
    };
    if let Some(warning) = reins_serve::exposure(a.listen) {
        eprintln!("warning: {warning}");
        if matches!(tls, Tls::Off) {
            eprintln!(
                "warning: plain HTTP (--no-tls): tokens and diffs cross the network unencrypted unless a TLS reverse proxy sits in front"
            );
        }
    }
    let config = Config {
        listen: a.listen,
        allow_hosts: a.allow_hosts,
        tls,
    };
    let running = reins_serve::start(Arc::clone(&reins), config)
        .await
        .map_err(invalid)?;
    if let Err(e) = running.announce(reins.data_dir()) {
        tracing::warn!("cannot note the server's address in the data dir: {e}");
    }
    if json {
        print_json(&serde_json::json!({
            "url": running.url,
            "addr": running.addr.to_string(),
            "fingerprint": running.fingerprint,
        }));
    } else {
        println!(
            "reins serve: {} (the approvals inbox for paired browsers and phones)",
            running.url
        );
        if let Some(note) = &running.tls_note {
            println!("  {note}");
        }
        if let Some(fp) = &running.fingerprint {
            println!("  certificate SHA-256: {fp}");
        }
        println!("  pair a device:  reins serve pair --name \"my phone\"");
        if !a.worker {
            println!("  approved actions are carried out by a worker: the app, `reins worker`, or `reins serve --worker`");
        }
        println!("  stop: Ctrl-C");
    }
    let worker = a.worker.then(|| {
        let reins = Arc::clone(&reins);
        tokio::spawn(async move {
            loop {
                match reins.work(false, Duration::from_millis(500), &Silent).await {
                    Ok(_) => return,
                    Err(e) => {
                        if reins.draining() {
                            return;
                        }
                        tracing::error!("the worker stopped on an error and restarts in 1 s: {e}");
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                }
            }
        })
    });
    let stopped = stop_signal().await;
    reins_serve::Running::retract(reins.data_dir());
    if !json {
        eprintln!("stopping ({stopped})");
    }
    reins
        .drain_flag()
        .store(true, std::sync::atomic::Ordering::Relaxed);
    running.stop().await;
    if let Some(w) = worker {
        let _ = w.await;
    }
    Ok(exit::DONE)
}

async fn stop_signal() -> &'static str {
    use tokio::signal::unix::{signal, SignalKind};
    match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(mut term), Ok(mut int)) => tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "Ctrl-C",
        },
        _ => {
            let _ = tokio::signal::ctrl_c().await;
            "Ctrl-C"
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PairOut {
    code: String,
    name: String,
    expires_at: i64,
    /// None: no server is running on this data dir now.
    link: Option<String>,
    fingerprint: Option<String>,
}

async fn pair(reins: &Reins, p: PairArgs, json: bool) -> reins_core::api::Result<u8> {
    let offer = reins.pairing_offer(&p.name).await?;
    let server = reins_serve::announced(reins.data_dir());
    let link = server
        .as_ref()
        .map(|s| reins_serve::pairing_link(&s.url, &offer.code, s.fingerprint.as_deref()));
    if let Some(png) = &p.png {
        let text = link.clone().unwrap_or_else(|| offer.code.clone());
        reins_serve::qr::png(&text, png).map_err(invalid)?;
    }
    let out = PairOut {
        code: offer.code.clone(),
        name: offer.name.clone(),
        expires_at: offer.expires_at,
        link: link.clone(),
        fingerprint: server.as_ref().and_then(|s| s.fingerprint.clone()),
    };
    if json {
        print_json(&out);
        return Ok(exit::DONE);
    }
    println!(
        "Pairing code for {:?}: {}  (works once, until {})",
        offer.name,
        offer.code,
        time(offer.expires_at)
    );
    match &link {
        Some(link) => {
            println!("Open this on the device, or scan the QR code:\n  {link}\n");
            match reins_serve::qr::terminal(link) {
                Ok(q) => println!("{q}"),
                Err(e) => eprintln!("(no QR code: {e})"),
            }
            if let Some(fp) = &out.fingerprint {
                println!(
                    "The browser will warn about the self-signed certificate. Go on only if its SHA-256 fingerprint is\n  {fp}"
                );
            }
        }
        None => println!(
            "No `reins serve` is running on this data dir: start it, open its address on the device and type the code."
        ),
    }
    if let Some(png) = &p.png {
        println!("QR code written to {}", png.display());
    }
    Ok(exit::DONE)
}

async fn devices(reins: &Reins, json: bool) -> reins_core::api::Result<u8> {
    let list = reins.devices().await?;
    if json {
        print_json(&list);
        return Ok(exit::DONE);
    }
    if list.is_empty() {
        println!("no paired devices (pair one: reins serve pair --name \"my phone\")");
        return Ok(exit::DONE);
    }
    let rows: Vec<Vec<String>> = list
        .iter()
        .map(|d| {
            vec![
                d.id.chars().take(13).collect(),
                d.name.clone(),
                time(d.created_at),
                d.last_used_at.map(time).unwrap_or_else(|| "never".into()),
                d.revoked_at
                    .map(|t| format!("revoked {}", time(t)))
                    .unwrap_or_else(|| "live".into()),
            ]
        })
        .collect();
    print!(
        "{}",
        table(&["ID", "NAME", "PAIRED", "LAST USED", "STATE"], &rows)
    );
    Ok(exit::DONE)
}
