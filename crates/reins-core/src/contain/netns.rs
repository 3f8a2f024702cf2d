//! The inside of a new network namespace, over route netlink: loopback brought up (a new namespace
//! starts with it down), and each address the relay listens on that loopback does not already
//! answer for put on it, so the process finds an endpoint such as `10.1.2.3:11434` where it
//! looks for it.

use std::net::IpAddr;

use netlink_packet_core::{
    NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_ACK, NLM_F_CREATE, NLM_F_EXCL,
    NLM_F_REQUEST,
};
use netlink_packet_route::address::{AddressAttribute, AddressMessage, AddressScope};
use netlink_packet_route::link::{LinkFlags, LinkMessage};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use netlink_sys::{protocols::NETLINK_ROUTE, Socket, SocketAddr};

/// Loopback's index: the first device of every namespace.
const LOOPBACK: u32 = 1;

/// Brings loopback up and puts on it each of `addrs` outside 127.0.0.0/8 and `::1`.
pub fn loopback_up(addrs: impl Iterator<Item = IpAddr>) -> std::io::Result<()> {
    let mut socket = Socket::new(NETLINK_ROUTE)?;
    socket.bind_auto()?;
    socket.connect(&SocketAddr::new(0, 0))?;
    let mut link = LinkMessage::default();
    link.header.index = LOOPBACK;
    link.header.flags = LinkFlags::Up;
    link.header.change_mask = LinkFlags::Up;
    ask(&socket, RouteNetlinkMessage::SetLink(link), 0)?;
    let mut done: Vec<IpAddr> = Vec::new();
    for ip in addrs.filter(|ip| !ip.is_loopback()) {
        if done.contains(&ip) {
            continue;
        }
        done.push(ip);
        let mut msg = AddressMessage::default();
        msg.header.family = match ip {
            IpAddr::V4(_) => AddressFamily::Inet,
            IpAddr::V6(_) => AddressFamily::Inet6,
        };
        msg.header.prefix_len = if ip.is_ipv4() { 32 } else { 128 };
        msg.header.scope = AddressScope::Host;
        msg.header.index = LOOPBACK;
        msg.attributes = vec![AddressAttribute::Local(ip), AddressAttribute::Address(ip)];
        ask(
            &socket,
            RouteNetlinkMessage::NewAddress(msg),
            NLM_F_CREATE | NLM_F_EXCL,
        )?;
    }
    Ok(())
}

/// Whether this process's network namespace has no device but loopback: one made for it, with no
/// route out. A staged command is given Internet sockets only there.
pub fn isolated() -> bool {
    std::fs::read_to_string("/proc/self/net/dev").is_ok_and(|t| {
        let mut devices = t.lines().skip(2).map(|l| l.trim_start().split(':').next());
        devices.all(|d| d == Some("lo"))
    })
}

/// Sends one request and waits for the kernel's answer: an acknowledgement, or its error.
fn ask(socket: &Socket, request: RouteNetlinkMessage, flags: u16) -> std::io::Result<()> {
    let mut header = NetlinkHeader::default();
    header.flags = NLM_F_REQUEST | NLM_F_ACK | flags;
    let mut msg = NetlinkMessage::new(header, NetlinkPayload::from(request));
    msg.finalize();
    let mut buf = vec![0u8; msg.buffer_len()];
    msg.serialize(&mut buf);
    socket.send(&buf, 0)?;
    let mut answer = vec![0u8; 8192];
    let n = socket.recv(&mut &mut answer[..], 0)?;
    let reply = NetlinkMessage::<RouteNetlinkMessage>::deserialize(&answer[..n])
        .map_err(|e| std::io::Error::other(format!("netlink answer: {e}")))?;
    match reply.payload {
        NetlinkPayload::Error(e) => match e.code {
            None => Ok(()),
            Some(code) => Err(std::io::Error::from_raw_os_error(-code.get())),
        },
        _ => Ok(()),
    }
}
