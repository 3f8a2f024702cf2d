//! Host filtering for a process whose network is [`Network::To`] some endpoints. The helper puts
//! the process in a network namespace of its own, where only loopback exists, and listens there
//! on each endpoint's address and port; it hands those listening sockets to the Reins that started
//! it, which accepts on them from outside and connects each connection to the endpoint it stands
//! for. So the process reaches its endpoints, unchanged as it names them (TLS and all), and no
//! other host: there is no route out of its namespace at all, UDP and DNS included.
//!
//! Where an endpoint is a host name, the process finds it through a hosts file laid over
//! `/etc/hosts` in its mount namespace, which gives the name a loopback address of its own
//! (`127.0.2.N`); Reins resolves the name itself, outside, for each connection.
//!
//! [`Network::To`]: super::profile::Network::To

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::profile::Endpoint;

/// What the helper sets up inside the new namespace: written by Reins beside the process's temp
/// dir, read by the helper (`--relay FILE`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// Where Reins waits for the listening sockets (a Unix socket only the helper can reach: the
    /// process itself makes no Unix sockets).
    pub socket: PathBuf,
    /// Where to listen inside the namespace.
    pub listen: Vec<SocketAddr>,
    /// A hosts file to lay over `/etc/hosts`, when an endpoint is a name.
    pub hosts: Option<PathBuf>,
}

impl Plan {
    /// Every path absolute and plain, as the profile's are.
    pub fn check(&self) -> Result<(), String> {
        for p in std::iter::once(&self.socket).chain(&self.hosts) {
            if !p.is_absolute()
                || p.components()
                    .any(|c| matches!(c, std::path::Component::ParentDir))
            {
                return Err(format!("{} is not a plain absolute path", p.display()));
            }
        }
        if self.listen.iter().any(|a| a.port() == 0) {
            return Err("port 0 is not a port".into());
        }
        Ok(())
    }
}

/// Where each endpoint is listened for inside the namespace, and the hosts-file lines that
/// send its names there. Pure: the same endpoints give the same layout.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Layout {
    /// Address inside → the endpoint it stands for.
    pub at: BTreeMap<SocketAddr, Endpoint>,
    /// `(address, name)` for the hosts file.
    pub names: Vec<(Ipv4Addr, String)>,
}

pub fn layout(endpoints: &[Endpoint]) -> Layout {
    let mut out = Layout::default();
    for e in endpoints {
        let inside: Vec<IpAddr> = if let Ok(ip) = e.host.parse::<IpAddr>() {
            vec![ip]
        } else if e.host == "localhost" {
            vec![Ipv4Addr::LOCALHOST.into(), Ipv6Addr::LOCALHOST.into()]
        } else {
            let known = out.names.iter().find(|(_, n)| *n == e.host).map(|(a, _)| *a);
            let ip = known.unwrap_or_else(|| {
                let n = u8::try_from(out.names.len() + 1).unwrap_or(u8::MAX);
                let ip = Ipv4Addr::new(127, 0, 2, n);
                out.names.push((ip, e.host.clone()));
                ip
            });
            vec![ip.into()]
        };
        for ip in inside {
            out.at
                .entry(SocketAddr::new(ip, e.port))
                .or_insert_with(|| e.clone());
        }
    }
    out
}

/// The hosts file for `names`: theirs first (the resolver takes the first line that names a
/// host), then the machine's own.
fn hosts_file(names: &[(Ipv4Addr, String)]) -> String {
    let mut text = String::from("# Reins: this process reaches these hosts through Reins only\n");
    for (ip, name) in names {
        text.push_str(&format!("{ip}\t{name}\n"));
    }
    text.push_str(&std::fs::read_to_string("/etc/hosts").unwrap_or_default());
    text
}

/// The Reins side of a relay: accepting the helper's sockets, then every connection on them. It
/// ends, and every connection with it, when dropped.
pub struct Running {
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Prepares the relay for a process whose files live in `dir`: the plan the helper is handed
/// (written to `dir/relay.json`) and the task that serves it. None outside a Tokio runtime (a
/// caller with no runtime gets the port filter alone).
pub fn start(dir: &Path, endpoints: &[Endpoint]) -> std::io::Result<Option<(PathBuf, Running)>> {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return Ok(None);
    };
    let layout = layout(endpoints);
    let socket = dir.join("relay.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket)?;
    listener.set_nonblocking(true)?;
    let hosts = if layout.names.is_empty() {
        None
    } else {
        let path = dir.join("hosts");
        std::fs::write(&path, hosts_file(&layout.names))?;
        Some(path)
    };
    let plan = Plan {
        socket,
        listen: layout.at.keys().copied().collect(),
        hosts,
    };
    let file = dir.join("relay.json");
    std::fs::write(&file, serde_json::to_vec(&plan).map_err(std::io::Error::other)?)?;
    let task = runtime.spawn(serve(listener, layout.at));
    Ok(Some((file, Running { task })))
}

/// Takes the one connection the helper makes, its listening sockets, and relays each connection
/// on them to the endpoint its address stands for. A socket for an address not in `at` is
/// dropped: only what Reins planned is relayed.
async fn serve(listener: std::os::unix::net::UnixListener, at: BTreeMap<SocketAddr, Endpoint>) {
    let Ok(listener) = tokio::net::UnixListener::from_std(listener) else { return };
    let Ok((stream, _)) = listener.accept().await else { return };
    drop(listener);
    let Some(sockets) = receive(&stream).await else { return };
    let mut tasks = tokio::task::JoinSet::new();
    for (addr, fd) in sockets {
        let Some(endpoint) = at.get(&addr).cloned() else { continue };
        let std_listener = std::net::TcpListener::from(fd);
        if std_listener.set_nonblocking(true).is_err() {
            continue;
        }
        let Ok(listener) = tokio::net::TcpListener::from_std(std_listener) else { continue };
        tasks.spawn(accept(listener, endpoint));
    }
    while tasks.join_next().await.is_some() {}
}

async fn accept(listener: tokio::net::TcpListener, endpoint: Endpoint) {
    let mut conns = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((mut inside, _)) = accepted else { return };
                let endpoint = endpoint.clone();
                conns.spawn(async move {
                    if let Ok(mut out) =
                        tokio::net::TcpStream::connect((endpoint.host.as_str(), endpoint.port)).await
                    {
                        let _ = tokio::io::copy_bidirectional(&mut inside, &mut out).await;
                    }
                });
            }
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
}

/// The message the helper sends: the addresses, as JSON, and one listening socket per address,
/// in order.
async fn receive(
    stream: &tokio::net::UnixStream,
) -> Option<Vec<(SocketAddr, std::os::fd::OwnedFd)>> {
    use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags};
    let mut bytes = vec![0u8; 64 * 1024];
    let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_SOCKETS))];
    loop {
        stream.readable().await.ok()?;
        let mut control = RecvAncillaryBuffer::new(&mut space);
        let got = stream.try_io(tokio::io::Interest::READABLE, || {
            rustix::net::recvmsg(
                stream,
                &mut [std::io::IoSliceMut::new(&mut bytes)],
                &mut control,
                RecvFlags::CMSG_CLOEXEC,
            )
            .map_err(std::io::Error::from)
        });
        match got {
            Ok(msg) => {
                let mut fds = Vec::new();
                for m in control.drain() {
                    if let RecvAncillaryMessage::ScmRights(rights) = m {
                        fds.extend(rights);
                    }
                }
                let addrs: Vec<SocketAddr> = serde_json::from_slice(bytes.get(..msg.bytes)?).ok()?;
                if addrs.len() != fds.len() {
                    return None;
                }
                return Some(addrs.into_iter().zip(fds).collect());
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(_) => return None,
        }
    }
}

/// At most this many listening sockets in one relay.
pub const MAX_SOCKETS: usize = 64;

/// The helper's side, inside the new network namespace: loopback up, each non-loopback address
/// put on it, a listening socket on each planned address, all handed to Reins.
pub fn enter(plan: &Plan) -> Result<(), String> {
    use rustix::net::{SendAncillaryBuffer, SendAncillaryMessage, SendFlags};
    use std::os::fd::AsFd as _;
    if plan.listen.len() > MAX_SOCKETS {
        return Err(format!("more than {MAX_SOCKETS} endpoints"));
    }
    super::netns::loopback_up(plan.listen.iter().map(SocketAddr::ip))
        .map_err(|e| format!("loopback: {e}"))?;
    let mut bound = Vec::new();
    for addr in &plan.listen {
        match std::net::TcpListener::bind(addr) {
            Ok(l) => bound.push((*addr, l)),
            // A machine without IPv6 has no ::1 to listen on; the name still reaches 127.0.0.1.
            Err(_) if addr.ip() == IpAddr::V6(Ipv6Addr::LOCALHOST) => {}
            Err(e) => return Err(format!("cannot listen on {addr}: {e}")),
        }
    }
    let addrs: Vec<SocketAddr> = bound.iter().map(|(a, _)| *a).collect();
    let text = serde_json::to_vec(&addrs).map_err(|e| e.to_string())?;
    let fds: Vec<_> = bound.iter().map(|(_, l)| l.as_fd()).collect();
    let stream = std::os::unix::net::UnixStream::connect(&plan.socket)
        .map_err(|e| format!("cannot reach Reins' relay: {e}"))?;
    let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_SOCKETS))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if !control.push(SendAncillaryMessage::ScmRights(&fds)) {
        return Err("too many sockets for one message".into());
    }
    rustix::net::sendmsg(&stream, &[std::io::IoSlice::new(&text)], &mut control, SendFlags::empty())
        .map_err(|e| format!("cannot hand the sockets to Reins: {e}"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_endpoint_is_listened_for_where_the_process_looks_for_it() {
        let l = layout(&[
            Endpoint::loopback(8080),
            Endpoint::new("localhost", 9),
            Endpoint::new("api.x.com", 443),
            Endpoint::new("api.x.com", 8443),
            Endpoint::new("10.1.2.3", 11434),
            Endpoint::new("other.y.org", 443),
        ]);
        let at: Vec<String> = l.at.keys().map(SocketAddr::to_string).collect();
        assert_eq!(
            at,
            [
                "10.1.2.3:11434",
                "127.0.0.1:9",
                "127.0.0.1:8080",
                "127.0.2.1:443",
                "127.0.2.1:8443",
                "127.0.2.2:443",
                "[::1]:9",
            ]
        );
        assert_eq!(
            l.names,
            [
                (Ipv4Addr::new(127, 0, 2, 1), "api.x.com".to_owned()),
                (Ipv4Addr::new(127, 0, 2, 2), "other.y.org".to_owned())
            ]
        );
        assert_eq!(l.at[&"127.0.2.2:443".parse().unwrap()], Endpoint::new("other.y.org", 443));
        let text = hosts_file(&l.names);
        assert!(text.find("127.0.2.1\tapi.x.com").unwrap() < text.find("localhost").unwrap_or(usize::MAX));
    }

    #[test]
    fn a_plan_names_plain_absolute_paths_and_real_ports() {
        let good = Plan {
            socket: "/tmp/reins-1-0/relay.sock".into(),
            listen: vec!["127.0.0.1:80".parse().unwrap()],
            hosts: None,
        };
        assert!(good.check().is_ok());
        let mut bad = good.clone();
        bad.socket = "relay.sock".into();
        assert!(bad.check().is_err());
        let mut bad = good.clone();
        bad.hosts = Some("/tmp/../etc/hosts".into());
        assert!(bad.check().is_err());
        let mut bad = good;
        bad.listen = vec!["127.0.0.1:0".parse().unwrap()];
        assert!(bad.check().is_err());
    }
}
