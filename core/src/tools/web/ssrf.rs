//! Keeping web_fetch on the public internet. Owns which addresses are forbidden
//! (loopback, private, link-local, CGNAT, multicast …), the check of a URL's scheme and
//! IP-literal host, and the filtering DNS resolver reqwest connects through, so a name
//! that resolves (or re-resolves: DNS rebinding) to an inner address is refused before
//! any connection. It does not fetch anything and knows nothing of web_search.

use std::error::Error as StdError;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use crate::tools::ToolError;

/// A name lookup: host name → its addresses. Tests inject one that maps chosen names
/// to chosen addresses; `None` in a [`super::FetchPolicy`] means the system resolver.
pub type Lookup = Arc<dyn Fn(&str) -> Vec<IpAddr> + Send + Sync>;

/// Why an address is off limits, worded to follow "is a".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Forbidden {
    Loopback,
    Private,
    LinkLocal,
    SharedCgnat,
    Unspecified,
    Multicast,
    Broadcast,
    Reserved,
}

impl Forbidden {
    pub(crate) fn words(self) -> &'static str {
        match self {
            Self::Loopback => "a loopback address",
            Self::Private => "a private address",
            Self::LinkLocal => "a link-local address (cloud metadata services live there)",
            Self::SharedCgnat => "a carrier-grade NAT (shared) address",
            Self::Unspecified => "an unspecified address",
            Self::Multicast => "a multicast address",
            Self::Broadcast => "a broadcast address",
            Self::Reserved => "a reserved address",
        }
    }
}

/// Classify an address; `None` means public and allowed.
pub(crate) fn classify(ip: IpAddr) -> Option<Forbidden> {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn classify_v4(ip: Ipv4Addr) -> Option<Forbidden> {
    let [a, b, ..] = ip.octets();
    if ip.is_broadcast() {
        Some(Forbidden::Broadcast)
    } else if a == 0 {
        // 0.0.0.0/8, "this network": 0.0.0.0 reaches the local host on Linux.
        Some(Forbidden::Unspecified)
    } else if ip.is_loopback() {
        Some(Forbidden::Loopback)
    } else if ip.is_private() {
        Some(Forbidden::Private)
    } else if ip.is_link_local() {
        Some(Forbidden::LinkLocal)
    } else if a == 100 && (64..128).contains(&b) {
        Some(Forbidden::SharedCgnat)
    } else if ip.is_multicast() {
        Some(Forbidden::Multicast)
    } else if a >= 240 {
        Some(Forbidden::Reserved)
    } else {
        None
    }
}

fn classify_v6(ip: Ipv6Addr) -> Option<Forbidden> {
    let seg = ip.segments();
    if ip.is_unspecified() {
        return Some(Forbidden::Unspecified);
    }
    if ip.is_loopback() {
        return Some(Forbidden::Loopback);
    }
    // Forms that carry an IPv4 address: mapped (::ffff:a.b.c.d), compatible
    // (::a.b.c.d), NAT64 (64:ff9b::a.b.c.d) and 6to4 (2002:aabb:ccdd::).
    if let Some(v4) = ip.to_ipv4() {
        return classify_v4(v4);
    }
    if seg[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return classify_v4(embedded_v4(seg[6], seg[7]));
    }
    if seg[0] == 0x2002 {
        return classify_v4(embedded_v4(seg[1], seg[2]));
    }
    match seg[0] {
        s if s & 0xfe00 == 0xfc00 => Some(Forbidden::Private), // fc00::/7 unique local
        s if s & 0xffc0 == 0xfe80 => Some(Forbidden::LinkLocal), // fe80::/10
        s if s & 0xffc0 == 0xfec0 => Some(Forbidden::Private), // fec0::/10 old site-local
        s if s & 0xff00 == 0xff00 => Some(Forbidden::Multicast), // ff00::/8
        _ => None,
    }
}

fn embedded_v4(high: u16, low: u16) -> Ipv4Addr {
    let [a, b] = high.to_be_bytes();
    let [c, d] = low.to_be_bytes();
    Ipv4Addr::new(a, b, c, d)
}

/// What may be reached on one hop: public addresses, plus loopback on the ports a test
/// opened.
#[derive(Debug, Clone)]
pub(super) struct Reach {
    pub port: u16,
    pub loopback_ports: Vec<u16>,
}

impl Reach {
    /// Why `ip` may not be reached on this hop, if it may not.
    pub(super) fn refusal(&self, ip: IpAddr) -> Option<Forbidden> {
        match classify(ip) {
            Some(Forbidden::Loopback) if self.loopback_ports.contains(&self.port) => None,
            other => other,
        }
    }
}

/// The refusal message for `ip`, reached as `host` (the same text when it is a literal).
pub(super) fn refusal_message(host: &str, ip: IpAddr, why: Forbidden) -> String {
    let literal = host.trim_matches(['[', ']']).parse::<IpAddr>().ok();
    let subject = if literal == Some(ip) {
        format!("{ip} is")
    } else {
        format!("{host} resolves to {ip},")
    };
    format!(
        "refused: {subject} {}; web_fetch only reaches the public internet",
        why.words()
    )
}

/// Check a URL before it is requested: http(s) only, and an IP-literal host must be
/// allowed (reqwest does not consult the resolver for literals). Names are left to
/// [`GuardedResolver`].
pub(super) fn check_url(url: &Url, loopback_ports: &[u16]) -> Result<Reach, ToolError> {
    match url.scheme() {
        "http" | "https" => {}
        other => {
            return Err(ToolError::new(format!(
                "refused: `{other}:` URLs are not fetched; web_fetch takes http:// and https:// only"
            )));
        }
    }
    let host = url
        .host_str()
        .ok_or_else(|| ToolError::new(format!("refused: {url} has no host")))?;
    let reach = Reach {
        port: url.port_or_known_default().unwrap_or(80),
        loopback_ports: loopback_ports.to_vec(),
    };
    // The URL parser has already normalised 0x7f.1, 2130706433 and the like to
    // dotted form, and writes IPv6 hosts in brackets.
    if let Ok(ip) = host.trim_matches(['[', ']']).parse::<IpAddr>()
        && let Some(why) = reach.refusal(ip)
    {
        return Err(ToolError::new(refusal_message(host, ip, why)));
    }
    Ok(reach)
}

/// The error the resolver gives when every address of a name is forbidden; found
/// again in reqwest's error chain by [`refusal_in`].
#[derive(Debug)]
pub(super) struct Refused(pub String);

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl StdError for Refused {}

/// The resolver's refusal inside a reqwest error, if that is what failed.
pub(super) fn refusal_in(err: &(dyn StdError + 'static)) -> Option<String> {
    let mut current = Some(err);
    while let Some(e) = current {
        if let Some(refused) = e.downcast_ref::<Refused>() {
            return Some(refused.0.clone());
        }
        current = e.source();
    }
    None
}

/// A reqwest resolver that drops forbidden addresses and fails when none remain.
/// Every connection reqwest makes by name goes through it, so the address checked is
/// the address connected to.
pub(super) struct GuardedResolver {
    pub reach: Reach,
    pub lookup: Option<Lookup>,
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        let reach = self.reach.clone();
        let lookup = self.lookup.clone();
        Box::pin(async move {
            let found: Vec<IpAddr> = match lookup {
                Some(lookup) => lookup(&host),
                // lookup_host runs the system resolver on a blocking thread.
                None => tokio::net::lookup_host((host.as_str(), 0))
                    .await?
                    .map(|addr| addr.ip())
                    .collect(),
            };
            let mut first_refusal = None;
            let mut kept = Vec::new();
            for ip in found {
                match reach.refusal(ip) {
                    None => kept.push(SocketAddr::new(ip, 0)),
                    Some(why) => {
                        tracing::debug!(%host, %ip, ?why, "web_fetch dropped a forbidden address");
                        first_refusal.get_or_insert((ip, why));
                    }
                }
            }
            if kept.is_empty() {
                let message = match first_refusal {
                    Some((ip, why)) => refusal_message(&host, ip, why),
                    None => format!("{host} has no addresses"),
                };
                return Err(Box::new(Refused(message)) as Box<dyn StdError + Send + Sync>);
            }
            Ok(Box::new(kept.into_iter()) as Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(s: &str) -> Option<Forbidden> {
        classify(s.parse().unwrap())
    }

    #[test]
    fn inner_ranges_are_forbidden() {
        use Forbidden::*;
        for (ip, want) in [
            ("127.0.0.1", Loopback),
            ("127.255.0.9", Loopback),
            ("10.0.0.5", Private),
            ("172.16.0.1", Private),
            ("172.31.255.255", Private),
            ("192.168.1.1", Private),
            ("169.254.169.254", LinkLocal),
            ("100.64.0.1", SharedCgnat),
            ("100.127.255.254", SharedCgnat),
            ("0.0.0.0", Unspecified),
            ("224.0.0.1", Multicast),
            ("255.255.255.255", Broadcast),
            ("240.0.0.1", Reserved),
            ("::1", Loopback),
            ("::", Unspecified),
            ("fc00::1", Private),
            ("fd12:3456::1", Private),
            ("fe80::1", LinkLocal),
            ("ff02::1", Multicast),
            ("::ffff:127.0.0.1", Loopback),
            ("::ffff:10.1.2.3", Private),
            ("::ffff:169.254.169.254", LinkLocal),
            ("64:ff9b::a00:1", Private),
            ("2002:a9fe:a9fe::1", LinkLocal),
        ] {
            assert_eq!(class(ip), Some(want), "{ip}");
        }
    }

    #[test]
    fn public_addresses_pass() {
        for ip in [
            "1.1.1.1",
            "93.184.216.34",
            "172.32.0.1",
            "100.128.0.1",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
        ] {
            assert_eq!(class(ip), None, "{ip}");
        }
    }

    #[test]
    fn loopback_is_allowed_only_on_listed_ports() {
        let reach = Reach {
            port: 8080,
            loopback_ports: vec![8080],
        };
        assert_eq!(reach.refusal("127.0.0.1".parse().unwrap()), None);
        assert_eq!(
            reach.refusal("10.0.0.1".parse().unwrap()),
            Some(Forbidden::Private)
        );
        let other = Reach {
            port: 8081,
            ..reach
        };
        assert_eq!(
            other.refusal("127.0.0.1".parse().unwrap()),
            Some(Forbidden::Loopback)
        );
    }

    #[test]
    fn messages_name_the_host_and_the_address() {
        let ip: IpAddr = "10.0.0.5".parse().unwrap();
        assert_eq!(
            refusal_message("10.0.0.5", ip, Forbidden::Private),
            "refused: 10.0.0.5 is a private address; web_fetch only reaches the public internet"
        );
        assert!(
            refusal_message("internal.example", ip, Forbidden::Private)
                .starts_with("refused: internal.example resolves to 10.0.0.5, a private address")
        );
    }
}
