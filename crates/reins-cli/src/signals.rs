//! SIGTERM and Ctrl-C drain the worker: runs it drives pause at their next safe point, then it exits.
//! A second signal stops at once, which is a crash as far as the runs are concerned (they recover).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tokio::signal::unix::{signal, SignalKind};

pub fn drain_on_signal(flag: Arc<AtomicBool>) {
    tokio::spawn(async move {
        let (Ok(mut term), Ok(mut int)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) else {
            tracing::warn!(
                "cannot listen for signals; SIGTERM will stop the worker without draining"
            );
            return;
        };
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
        flag.store(true, Ordering::Relaxed);
        eprintln!(
            "draining: runs in flight pause at their next safe point (signal again to stop now)"
        );
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
        eprintln!("stopping now: runs in flight recover from their last checkpoint");
        std::process::exit(130);
    });
}
