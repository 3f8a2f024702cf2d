//! Judging a network request: the scheme, the host and every address it resolves to. Loopback,
//! private and link-local targets are high (they reach this machine and its network, past any
//! firewall); cloud metadata addresses are refused outright (they hand out credentials).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::{Assessment, Risk};
use crate::action::FetchRequest;

/// What an address is, when it is not an ordinary public one: (refuse outright?, description).
pub fn special_address(ip: IpAddr) -> Option<(bool, &'static str)> {
    match ip {
        IpAddr::V4(v4) => special_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return special_v4(v4);
            }
            let seg = v6.segments();
            if v6
                == "fd00:ec2::254"
                    .parse::<Ipv6Addr>()
                    .unwrap_or(Ipv6Addr::UNSPECIFIED)
            {
                return Some((
                    true,
                    "a cloud metadata service, which hands out credentials",
                ));
            }
            if v6.is_unspecified() {
                return Some((true, "the unspecified address"));
            }
            if v6.is_loopback() {
                return Some((false, "this machine (loopback)"));
            }
            if (seg[0] & 0xfe00) == 0xfc00 {
                return Some((false, "a private network address"));
            }
            if (seg[0] & 0xffc0) == 0xfe80 {
                return Some((false, "a link-local address"));
            }
            if v6.is_multicast() {
                return Some((true, "a multicast address"));
            }
            // 6to4 / NAT64 embeddings of private IPv4 are judged by the embedded address.
            if seg[0] == 0x2002 {
                let v4 = Ipv4Addr::new(
                    (seg[1] >> 8) as u8,
                    seg[1] as u8,
                    (seg[2] >> 8) as u8,
                    seg[2] as u8,
                );
                return special_v4(v4);
            }
            if seg[0] == 0x64 && seg[1] == 0xff9b {
                let v4 = Ipv4Addr::new(
                    (seg[6] >> 8) as u8,
                    seg[6] as u8,
                    (seg[7] >> 8) as u8,
                    seg[7] as u8,
                );
                return special_v4(v4);
            }
            None
        }
    }
}

fn special_v4(v4: Ipv4Addr) -> Option<(bool, &'static str)> {
    let o = v4.octets();
    if v4 == Ipv4Addr::new(169, 254, 169, 254)
        || v4 == Ipv4Addr::new(100, 100, 100, 200)
        || v4 == Ipv4Addr::new(168, 63, 129, 16)
    {
        return Some((
            true,
            "a cloud metadata service, which hands out credentials",
        ));
    }
    if v4.is_unspecified() || o[0] == 0 {
        return Some((true, "the unspecified address (it reaches this machine)"));
    }
    if v4.is_broadcast() || v4.is_multicast() {
        return Some((true, "a broadcast or multicast address"));
    }
    if v4.is_loopback() {
        return Some((false, "this machine (loopback)"));
    }
    if v4.is_private() {
        return Some((false, "a private network address"));
    }
    if v4.is_link_local() {
        return Some((false, "a link-local address"));
    }
    if o[0] == 100 && (o[1] & 0xc0) == 64 {
        return Some((false, "a carrier-grade NAT address"));
    }
    if o[0] == 198 && (o[1] & 0xfe) == 18 {
        return Some((false, "a benchmarking network address"));
    }
    if o[0] >= 240 {
        return Some((true, "a reserved address"));
    }
    None
}

/// Judges one address, adding to the assessment.
pub fn judge_address(host: &str, ip: IpAddr, a: &mut Assessment) {
    if let Some((refuse, what)) = special_address(ip) {
        let literal = host.trim_matches(['[', ']']) == ip.to_string();
        let host = if literal {
            host.to_owned()
        } else {
            format!("{host} ({ip})")
        };
        if refuse {
            a.forbidden = true;
            a.raise(Risk::High, format!("{host} is {what}: refused"));
        } else {
            a.raise(
                Risk::High,
                format!(
                    "{host} is {ip}, {what}: a request there reaches services no website could"
                ),
            );
        }
    }
}

pub fn assess(req: &FetchRequest, resolved: &[IpAddr], a: &mut Assessment) {
    let url = &req.url;
    match url.scheme() {
        "https" => {}
        "http" => a.raise(
            Risk::High,
            format!(
                "{} uses plain http: anyone on the way can read or change it",
                short(url.as_str())
            ),
        ),
        other => {
            a.forbidden = true;
            a.raise(
                Risk::High,
                format!("the scheme {other}: is not allowed; only http and https"),
            );
            return;
        }
    }
    if !url.username().is_empty() || url.password().is_some() {
        a.raise(
            Risk::High,
            "the URL carries credentials (user:password@)".into(),
        );
    }
    let Some(host) = url.host_str() else {
        a.forbidden = true;
        a.raise(Risk::High, "the URL has no host".into());
        return;
    };
    let host_l = host.trim_end_matches('.').to_lowercase();
    match url.host() {
        Some(url::Host::Ipv4(ip)) => judge_address(host, IpAddr::V4(ip), a),
        Some(url::Host::Ipv6(ip)) => judge_address(host, IpAddr::V6(ip), a),
        _ => {
            if host_l == "localhost"
                || host_l.ends_with(".localhost")
                || host_l.ends_with(".local")
                || host_l.ends_with(".internal")
                || host_l.ends_with(".lan")
                || host_l == "metadata"
                || host_l == "metadata.google.internal"
            {
                a.raise(
                    Risk::High,
                    format!("{host} names this machine or a local network"),
                );
            }
            for ip in resolved {
                judge_address(host, *ip, a);
            }
        }
    }
    if let Some(body) = &req.body {
        if let Some(why) = crate::text::invisible_reason("the request body", body) {
            a.raise(Risk::High, why);
        }
    }
    let method = req.method.as_str();
    if matches!(method, "GET" | "HEAD") {
        a.raise(
            Risk::Medium,
            format!("{method} {host}: the URL itself, path and query, is sent to {host}"),
        );
    } else {
        a.raise(
            Risk::Medium,
            format!(
                "{method} {host}: sends {} to a server outside Reins' control",
                match &req.body {
                    Some(b) => format!("{} bytes", b.len()),
                    None => "a request".into(),
                }
            ),
        );
    }
}

fn short(s: &str) -> String {
    if s.chars().count() > 100 {
        s.chars().take(97).collect::<String>() + "…"
    } else {
        s.to_owned()
    }
}
