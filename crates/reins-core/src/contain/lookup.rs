//! Staging's name server. A staged command runs in a network namespace of its own, where the only
//! device is loopback and `/etc/resolv.conf` names `127.0.0.1`: a name it looks up reaches this
//! server, which notes the name and answers that it does not exist. So the card can say which
//! hosts the command tried to reach ("tried to reach registry.npmjs.org"), where without it the
//! lookup fails before any name leaves the program. Nothing it sends goes further: the namespace
//! has no route out, and Landlock still refuses every TCP connection.
//!
//! The server runs in the staging helper, outside the command's confinement, so what it reads is
//! parsed by a DNS library, bounded in size, and only ever answered, never followed.

use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// At most this many names are kept: a command looking up thousands holds no more memory here.
const MAX_NAMES: usize = 64;

/// The names the command looked up, each once, in order of their first lookup.
#[derive(Clone, Default)]
pub struct Lookups(Arc<Mutex<Vec<String>>>);

impl Lookups {
    /// The names looked up so far.
    pub fn names(&self) -> Vec<String> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn note(&self, name: String) {
        let mut names = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if names.len() < MAX_NAMES && !names.contains(&name) {
            names.push(name);
        }
    }
}

/// In a fresh network namespace (this process's, made by the caller): loopback up, the server
/// listening on 127.0.0.1:53, and `resolv` (a file of Reins' own) written and laid over
/// `/etc/resolv.conf` in this process's mount namespace. Returns what the server hears.
pub fn serve(resolv: &Path) -> std::io::Result<Lookups> {
    super::netns::loopback_up(std::iter::empty())?;
    let socket = UdpSocket::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 53)))?;
    std::fs::write(resolv, "nameserver 127.0.0.1\noptions attempts:1 timeout:1\n")?;
    // A resolv.conf that is a link (systemd-resolved's stub) is covered where it points. Without
    // one, the C library asks 127.0.0.1 anyway.
    if std::fs::symlink_metadata("/etc/resolv.conf").is_ok() {
        use nix::mount::{mount, MsFlags};
        mount(
            Some(resolv),
            "/etc/resolv.conf",
            None::<&str>,
            MsFlags::MS_BIND,
            None::<&str>,
        )
        .map_err(std::io::Error::from)?;
    }
    let lookups = Lookups::default();
    let heard = lookups.clone();
    std::thread::spawn(move || answer(&socket, &heard));
    Ok(lookups)
}

/// Answers every query "no such name", noting the names asked; anything that does not parse as
/// a query is dropped.
fn answer(socket: &UdpSocket, heard: &Lookups) {
    let mut buf = [0u8; 1500];
    while let Ok((n, from)) = socket.recv_from(&mut buf) {
        let Some(reply) = reply_to(&buf[..n], heard) else {
            continue;
        };
        let _ = socket.send_to(&reply, from);
    }
}

/// The "no such name" answer to `query`, with its names noted; None if it is no query.
pub(crate) fn reply_to(query: &[u8], heard: &Lookups) -> Option<Vec<u8>> {
    use simple_dns::{Packet, PacketFlag, RCODE};
    let packet = Packet::parse(query).ok()?;
    if packet.has_flags(PacketFlag::RESPONSE) {
        return None;
    }
    for q in &packet.questions {
        let name = q.qname.to_string();
        let name = name.trim_end_matches('.');
        if !name.is_empty() {
            heard.note(name.to_ascii_lowercase());
        }
    }
    let mut reply = packet.into_reply();
    reply.answers.clear();
    reply.name_servers.clear();
    reply.additional_records.clear();
    *reply.rcode_mut() = RCODE::NameError;
    reply.build_bytes_vec().ok()
}
