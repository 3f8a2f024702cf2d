//! `http.fetch`: one HTTP request. The host is resolved and every address checked before connecting,
//! the connection is pinned to the checked addresses (no second lookup can swap them), redirects are
//! followed by hand and each hop checked again, proxies from the environment are ignored, and the
//! response body is capped.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use crate::action::{Action, FetchRequest};
use crate::digest::Digest;
use crate::policy::network::special_address;

pub const RESPONSE_CAP: usize = 1024 * 1024;
const MAX_REDIRECTS: usize = 5;
const TIMEOUT: Duration = Duration::from_secs(30);

/// The addresses an action's host resolves to (none for actions that are not requests).
pub async fn addresses_of(action: &Action) -> Result<Vec<IpAddr>, String> {
    match action {
        Action::Fetch(req) => resolve(&req.url).await,
        _ => Ok(Vec::new()),
    }
}

/// The addresses a URL's host resolves to (an IP literal resolves to itself).
pub async fn resolve(url: &url::Url) -> Result<Vec<IpAddr>, String> {
    // Other schemes are refused by the policy; there is nothing to look up.
    if !matches!(url.scheme(), "http" | "https") {
        return Ok(Vec::new());
    }
    let host = url.host_str().ok_or("the URL has no host")?;
    let port = url.port_or_known_default().unwrap_or(443);
    match url.host() {
        Some(url::Host::Ipv4(ip)) => return Ok(vec![IpAddr::V4(ip)]),
        Some(url::Host::Ipv6(ip)) => return Ok(vec![IpAddr::V6(ip)]),
        _ => {}
    }
    let found = tokio::time::timeout(
        Duration::from_secs(10),
        tokio::net::lookup_host((host, port)),
    )
    .await
    .map_err(|_| format!("resolving {host} timed out"))?
    .map_err(|e| format!("cannot resolve {host}: {e}"))?;
    let mut ips: Vec<IpAddr> = found.map(|a| a.ip()).collect();
    ips.sort();
    ips.dedup();
    if ips.is_empty() {
        return Err(format!("{host} resolves to no address"));
    }
    Ok(ips)
}

/// Refuses an address Reins never connects to on a redirect or after a new lookup.
fn check_hop(url: &url::Url, ips: &[IpAddr], first: bool) -> Result<(), String> {
    if !matches!(url.scheme(), "https" | "http") {
        return Err(format!("refused: {url} is not http or https"));
    }
    for ip in ips {
        if let Some((refuse, what)) = special_address(*ip) {
            // The first hop was reviewed with these addresses (or denied); a redirect or a changed
            // lookup to a special address was not.
            if refuse || !first {
                return Err(format!(
                    "refused: {} is {ip}, {what}",
                    url.host_str().unwrap_or("?")
                ));
            }
        }
    }
    Ok(())
}

/// The text the agent gets back.
pub async fn send(req: &FetchRequest, reviewed: &[IpAddr]) -> Result<String, String> {
    let mut url = req.url.clone();
    let mut method = req.method.clone();
    let mut body = req.body.clone();
    let mut hops = Vec::new();
    for hop in 0..=MAX_REDIRECTS {
        let ips = resolve(&url).await?;
        if hop == 0 {
            // A lookup that now gives special addresses the review never saw is refused.
            let new_special: Vec<_> = ips
                .iter()
                .filter(|ip| special_address(**ip).is_some() && !reviewed.contains(ip))
                .collect();
            if !new_special.is_empty() {
                return Err(format!(
                    "refused: {} now resolves to {new_special:?}, which the review did not see",
                    url.host_str().unwrap_or("?")
                ));
            }
        }
        check_hop(&url, &ips, hop == 0)?;
        if hop > 0 && req.url.scheme() == "https" && url.scheme() == "http" {
            return Err(format!(
                "refused: redirect from https down to plain http ({url})"
            ));
        }
        let host = url.host_str().unwrap_or("").to_owned();
        let port = url.port_or_known_default().unwrap_or(443);
        let addrs: Vec<SocketAddr> = ips.iter().map(|ip| SocketAddr::new(*ip, port)).collect();
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .timeout(TIMEOUT)
            .resolve_to_addrs(&host, &addrs)
            .user_agent(concat!("reins/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
        let m = reqwest::Method::from_bytes(method.as_bytes()).map_err(|e| e.to_string())?;
        let mut rb = client.request(m, url.clone());
        for (k, v) in &req.headers {
            rb = rb.header(k, v);
        }
        if let Some(b) = &body {
            rb = rb.body(b.clone());
        }
        let resp = rb
            .send()
            .await
            .map_err(|e| format!("request to {url} failed: {e}"))?;
        let status = resp.status();
        if status.is_redirection() {
            let Some(loc) = resp
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|l| l.to_str().ok())
            else {
                return Err(format!("{status} from {url} without a Location"));
            };
            let next = url
                .join(loc)
                .map_err(|e| format!("bad redirect Location {loc:?}: {e}"))?;
            hops.push(format!("{status} → {next}"));
            if matches!(status.as_u16(), 301..=303) && method != "HEAD" {
                method = "GET".into();
                body = None;
            }
            url = next;
            continue;
        }
        let content_type = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        let mut bytes = Vec::new();
        let mut total = 0u64;
        let mut resp = resp;
        while let Some(chunk) = resp
            .chunk()
            .await
            .map_err(|e| format!("reading the response failed: {e}"))?
        {
            total += chunk.len() as u64;
            let room = RESPONSE_CAP.saturating_sub(bytes.len());
            bytes.extend_from_slice(&chunk[..room.min(chunk.len())]);
        }
        let mut out = String::new();
        for h in &hops {
            out.push_str(&format!("redirect: {h}\n"));
        }
        out.push_str(&format!(
            "{} {}\ncontent-type: {content_type}\n\n",
            status.as_u16(),
            status.canonical_reason().unwrap_or("")
        ));
        match std::str::from_utf8(&bytes) {
            Ok(text) => out.push_str(text),
            Err(_) => out.push_str(&format!(
                "(binary body, {total} bytes, sha256 {})",
                Digest::of(&bytes)
            )),
        }
        if total > bytes.len() as u64 {
            out.push_str(&format!("\n… body cut at {RESPONSE_CAP} of {total} bytes"));
        }
        return Ok(out);
    }
    Err(format!("more than {MAX_REDIRECTS} redirects"))
}
