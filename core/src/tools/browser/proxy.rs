//! The browser's SSRF guard: a tiny HTTP/CONNECT proxy on 127.0.0.1 that Chromium is
//! told to send every request through (loopback included). It resolves each host
//! itself, refuses loopback, private, link-local and the other inner ranges `web::ssrf`
//! classifies (unless `[tools.browser] allow_private` lists them), and connects to the
//! very address it checked, so a name that re-resolves to an inner address (DNS
//! rebinding) gains nothing. Each refusal is kept so the tool can tell the model what
//! was blocked and which key allows it. It does not read or change what passes (TLS
//! stays end to end); plain HTTP requests are sent on with `Connection: close` so one
//! client connection never carries a second request to another host.

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::Url;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::tools::web::{Forbidden, Lookup, classify};

/// The longest request or response head the proxy reads.
const MAX_HEAD: usize = 64 * 1024;
/// How long connecting to a site may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
/// Refusals kept for the tool to report (the oldest are dropped).
const MAX_REFUSALS: usize = 50;

/// A `[tools.browser] allow_private` entry that is neither `IP:port` nor a CIDR block.
#[derive(Debug, thiserror::Error)]
#[error(
    "[tools.browser] allow_private has `{0}`, which is neither IP:port (\"127.0.0.1:8080\", \"[::1]:3000\") nor a CIDR block (\"10.1.2.0/24\"); fix or remove it in config.toml"
)]
pub struct AllowError(String);

/// The inner addresses the owner lets the browser reach.
#[derive(Debug, Clone, Default)]
pub struct AllowList {
    entries: Vec<Allowed>,
}

#[derive(Debug, Clone, PartialEq)]
enum Allowed {
    Addr(SocketAddr),
    Net(IpAddr, u8),
}

impl AllowList {
    pub fn parse(entries: &[String]) -> Result<AllowList, AllowError> {
        let entries = entries
            .iter()
            .map(|raw| parse_entry(raw.trim()).ok_or_else(|| AllowError(raw.clone())))
            .collect::<Result<_, _>>()?;
        Ok(AllowList { entries })
    }

    fn permits(&self, ip: IpAddr, port: u16) -> bool {
        self.entries.iter().any(|entry| match entry {
            Allowed::Addr(addr) => addr.ip() == ip && addr.port() == port,
            Allowed::Net(net, bits) => in_net(*net, *bits, ip),
        })
    }
}

fn parse_entry(raw: &str) -> Option<Allowed> {
    if let Ok(addr) = raw.parse::<SocketAddr>() {
        return Some(Allowed::Addr(addr));
    }
    let (ip, bits) = raw.split_once('/')?;
    let ip: IpAddr = ip.parse().ok()?;
    let bits: u8 = bits.parse().ok()?;
    let max = if ip.is_ipv4() { 32 } else { 128 };
    (bits <= max).then_some(Allowed::Net(ip, bits))
}

fn in_net(net: IpAddr, bits: u8, ip: IpAddr) -> bool {
    match (net, ip) {
        (IpAddr::V4(n), IpAddr::V4(i)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(bits)).unwrap_or(0);
            u32::from(n) & mask == u32::from(i) & mask
        }
        (IpAddr::V6(n), IpAddr::V6(i)) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(bits)).unwrap_or(0);
            u128::from(n) & mask == u128::from(i) & mask
        }
        _ => false,
    }
}

/// One request the guard refused: where it went and why, worded for the model.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Refusal {
    /// `host:port` as the page asked for it.
    pub target: String,
    pub reason: String,
}

/// What the proxy checks against, and the refusals it has made since last asked.
pub(super) struct Guard {
    pub allow: AllowList,
    /// A name lookup instead of the system resolver (tests).
    pub lookup: Option<Lookup>,
    refusals: Mutex<Vec<Refusal>>,
}

impl Guard {
    pub(super) fn new(allow: AllowList, lookup: Option<Lookup>) -> Guard {
        Guard {
            allow,
            lookup,
            refusals: Mutex::new(Vec::new()),
        }
    }

    /// The refusals since the last call, oldest first.
    pub(super) fn take_refusals(&self) -> Vec<Refusal> {
        std::mem::take(&mut *self.refusals.lock().unwrap_or_else(|e| e.into_inner()))
    }

    fn refused(&self, target: String, reason: String) {
        tracing::info!(%target, %reason, "the browser's guard refused a request");
        let mut kept = self.refusals.lock().unwrap_or_else(|e| e.into_inner());
        if kept.len() >= MAX_REFUSALS {
            kept.remove(0);
        }
        kept.push(Refusal { target, reason });
    }

    /// Why `ip:port` may not be reached, if it may not.
    pub(super) fn refusal(&self, ip: IpAddr, port: u16) -> Option<Forbidden> {
        classify(ip).filter(|_| !self.allow.permits(ip, port))
    }

    /// Resolve `host`, keep the addresses that may be reached, connect to the first
    /// that answers. `Err` is the refusal (or failure) worded for the model.
    async fn connect(&self, host: &str, port: u16) -> Result<TcpStream, String> {
        let bare = host.trim_matches(['[', ']']);
        let found: Vec<IpAddr> = match bare.parse::<IpAddr>() {
            Ok(ip) => vec![ip],
            Err(_) => match &self.lookup {
                Some(lookup) => lookup(bare),
                None => tokio::net::lookup_host((bare, port))
                    .await
                    .map_err(|err| format!("cannot resolve {host}: {err}"))?
                    .map(|addr| addr.ip())
                    .collect(),
            },
        };
        let mut first_refusal = None;
        for ip in found {
            if let Some(why) = self.refusal(ip, port) {
                first_refusal.get_or_insert((ip, why));
                continue;
            }
            let connect = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect((ip, port)));
            if let Ok(Ok(stream)) = connect.await {
                return Ok(stream);
            }
        }
        Err(match first_refusal {
            Some((ip, why)) => refusal_text(host, port, ip, why),
            None => format!("cannot connect to {host}:{port}"),
        })
    }
}

/// The refusal the model reads: what, why, and the key that would allow it.
pub(super) fn refusal_text(host: &str, port: u16, ip: IpAddr, why: Forbidden) -> String {
    let subject = if host.trim_matches(['[', ']']).parse::<IpAddr>().ok() == Some(ip) {
        format!("{ip} is")
    } else {
        format!("{host} resolves to {ip},")
    };
    let allow = SocketAddr::new(ip, port);
    format!(
        "refused: {subject} {}; the browser reaches only the public internet. If the owner trusts it, they can add \"{allow}\" to allow_private under [tools.browser] in config.toml",
        why.words()
    )
}

/// Serve Chromium's proxy connections until the task is dropped.
pub(super) async fn serve(listener: TcpListener, guard: Arc<Guard>) {
    loop {
        let Ok((client, _)) = listener.accept().await else {
            continue;
        };
        let guard = Arc::clone(&guard);
        tokio::spawn(async move {
            // A connection that fails midway is Chromium's to retry or report.
            let _ = handle(client, &guard).await;
        });
    }
}

/// Read up to the end of an HTTP head; returns the head and what came after it.
async fn read_head(stream: &mut TcpStream) -> std::io::Result<Option<(String, Vec<u8>)>> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = buf.split_off(end + 4);
            return Ok(Some((String::from_utf8_lossy(&buf).into_owned(), rest)));
        }
        if buf.len() > MAX_HEAD {
            return Ok(None);
        }
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

async fn handle(mut client: TcpStream, guard: &Guard) -> std::io::Result<()> {
    let Some((head, rest)) = read_head(&mut client).await? else {
        return Ok(());
    };
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split_whitespace();
    let (Some(method), Some(target), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        return answer(&mut client, 400, "a malformed request").await;
    };
    if method.eq_ignore_ascii_case("CONNECT") {
        let Some((host, port)) = split_host_port(target) else {
            return answer(&mut client, 400, "a malformed CONNECT target").await;
        };
        let mut upstream = match guard.connect(&host, port).await {
            Ok(stream) => stream,
            Err(reason) => {
                guard.refused(format!("{host}:{port}"), reason.clone());
                return answer(&mut client, 403, &reason).await;
            }
        };
        client
            .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            .await?;
        upstream.write_all(&rest).await?;
        tokio::io::copy_bidirectional(&mut client, &mut upstream).await?;
        return Ok(());
    }
    let Some(url) = Url::parse(target).ok().filter(|u| u.scheme() == "http") else {
        return answer(
            &mut client,
            400,
            "only http:// requests and CONNECT go through",
        )
        .await;
    };
    let host = url.host_str().unwrap_or_default().to_owned();
    let port = url.port_or_known_default().unwrap_or(80);
    let mut upstream = match guard.connect(&host, port).await {
        Ok(stream) => stream,
        Err(reason) => {
            guard.refused(format!("{host}:{port}"), reason.clone());
            return answer(&mut client, 403, &reason).await;
        }
    };
    let mut path = url.path().to_owned();
    if let Some(query) = url.query() {
        path.push('?');
        path.push_str(query);
    }
    let mut out = format!("{method} {path} {version}\r\n");
    for line in lines.filter(|l| !l.is_empty()) {
        if !hop_by_hop(line) {
            out.push_str(line);
            out.push_str("\r\n");
        }
    }
    out.push_str("Connection: close\r\n\r\n");
    upstream.write_all(out.as_bytes()).await?;
    upstream.write_all(&rest).await?;
    let (mut from_client, mut to_client) = client.into_split();
    let (mut from_upstream, mut to_upstream) = upstream.into_split();
    let upload = tokio::spawn(async move {
        let _ = tokio::io::copy(&mut from_client, &mut to_upstream).await;
    });
    // The answer's head, marked so Chromium opens a new connection for the next request.
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let body_start = loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
        let n = from_upstream.read(&mut chunk).await?;
        if n == 0 || buf.len() > MAX_HEAD {
            upload.abort();
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..body_start - 4]).into_owned();
    let mut answer_head = String::new();
    for line in head.split("\r\n") {
        if !hop_by_hop(line) {
            answer_head.push_str(line);
            answer_head.push_str("\r\n");
        }
    }
    answer_head.push_str("Connection: close\r\n\r\n");
    to_client.write_all(answer_head.as_bytes()).await?;
    to_client.write_all(&buf[body_start..]).await?;
    tokio::io::copy(&mut from_upstream, &mut to_client).await?;
    to_client.shutdown().await?;
    upload.abort();
    Ok(())
}

/// Headers that describe one connection, not the request: replaced by ours.
fn hop_by_hop(line: &str) -> bool {
    let name = line.split(':').next().unwrap_or_default().trim();
    ["connection", "proxy-connection", "keep-alive"]
        .iter()
        .any(|h| name.eq_ignore_ascii_case(h))
}

fn split_host_port(target: &str) -> Option<(String, u16)> {
    let (host, port) = target.rsplit_once(':')?;
    Some((host.to_owned(), port.parse().ok()?))
}

async fn answer(client: &mut TcpStream, status: u16, text: &str) -> std::io::Result<()> {
    let reason = if status == 403 {
        "Forbidden"
    } else {
        "Bad Request"
    };
    let body = format!("Pincer's browser guard: {text}\n");
    let out = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    client.write_all(out.as_bytes()).await?;
    client.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allow_entries_are_ip_port_or_cidr() {
        let list = AllowList::parse(&[
            "127.0.0.1:8080".into(),
            "10.1.2.0/24".into(),
            "[::1]:3000".into(),
        ])
        .unwrap();
        assert!(list.permits("127.0.0.1".parse().unwrap(), 8080));
        assert!(!list.permits("127.0.0.1".parse().unwrap(), 8081));
        assert!(list.permits("10.1.2.77".parse().unwrap(), 1));
        assert!(!list.permits("10.1.3.1".parse().unwrap(), 1));
        assert!(list.permits("::1".parse().unwrap(), 3000));
        let bad = AllowList::parse(&["localhost".into()]).unwrap_err();
        assert!(bad.to_string().contains("allow_private"), "{bad}");
    }

    #[test]
    fn inner_addresses_are_refused_unless_listed() {
        let guard = Guard::new(AllowList::parse(&["127.0.0.1:8080".into()]).unwrap(), None);
        assert_eq!(guard.refusal("93.184.216.34".parse().unwrap(), 80), None);
        assert_eq!(guard.refusal("127.0.0.1".parse().unwrap(), 8080), None);
        assert_eq!(
            guard.refusal("127.0.0.1".parse().unwrap(), 8081),
            Some(Forbidden::Loopback)
        );
        assert_eq!(
            guard.refusal("169.254.169.254".parse().unwrap(), 80),
            Some(Forbidden::LinkLocal)
        );
    }

    #[tokio::test]
    async fn a_name_resolving_inside_is_refused_before_any_connection() {
        let lookup: Lookup = Arc::new(|_| vec!["10.0.0.7".parse().unwrap()]);
        let guard = Guard::new(AllowList::default(), Some(lookup));
        let err = guard.connect("intranet.example", 80).await.unwrap_err();
        assert!(
            err.contains("intranet.example resolves to 10.0.0.7, a private address"),
            "{err}"
        );
        assert!(err.contains("allow_private"), "{err}");
    }
}
