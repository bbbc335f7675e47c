//! Whether a panel connection comes from a sandboxed command. Every command, hook and
//! stdio MCP server the gateway runs is its descendant (under bubblewrap too: the
//! sandbox's PID namespace is a child of the gateway's, and its processes are listed
//! here with their host pids), and with the network on such a command shares the
//! gateway's network: a prompt-injected script could drive the panel through the
//! loopback. So on accept: the client end of the connection is looked up in
//! `/proc/net/tcp` and `tcp6` (its socket inode), and the gateway's descendants — only
//! they, found through their children files, so the walk stays small — are searched
//! for a file descriptor `socket:[inode]`.
//!
//! It reads `/proc` and decides nothing: `serve` refuses what it finds.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// The pid of a descendant of this process that holds the client end of the TCP
/// connection from `peer` to `local`, if one does.
pub(crate) fn sandboxed_holder(peer: SocketAddr, local: SocketAddr) -> Option<i32> {
    let inode = client_inode(peer, local)?;
    let needle = format!("socket:[{inode}]");
    pincer_core::sandbox::tree::below(std::process::id())
        .into_iter()
        .find(|pid| holds(*pid, &needle))
}

/// The socket inode of the connection whose local end is `peer` and remote end
/// `local` (the client's view of it), from this network namespace's tables.
fn client_inode(peer: SocketAddr, local: SocketAddr) -> Option<u64> {
    let (peer, local) = (canonical(peer), canonical(local));
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|table| std::fs::read_to_string(table).ok())
        .find_map(|text| inode_in(&text, peer, local))
}

/// `inode_in` over one table's text.
fn inode_in(table: &str, peer: SocketAddr, local: SocketAddr) -> Option<u64> {
    table.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (from, to, inode) = (fields.get(1)?, fields.get(2)?, fields.get(9)?);
        (address(from)? == peer && address(to)? == local)
            .then(|| inode.parse::<u64>().ok())
            .flatten()
            .filter(|inode| *inode != 0)
    })
}

/// An IPv4-mapped IPv6 address as the IPv4 one, so both tables compare alike.
fn canonical(addr: SocketAddr) -> SocketAddr {
    SocketAddr::new(addr.ip().to_canonical(), addr.port())
}

/// `0100007F:1F90` (IPv4) or 32 hex digits and a port (IPv6): each 32-bit word as the
/// kernel printed it from memory, so in this machine's byte order.
fn address(text: &str) -> Option<SocketAddr> {
    let (ip, port) = text.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let word = |i: usize| {
        ip.get(i * 8..i * 8 + 8)
            .and_then(|w| u32::from_str_radix(w, 16).ok())
            .map(u32::to_ne_bytes)
    };
    let ip = match ip.len() {
        8 => IpAddr::V4(Ipv4Addr::from(word(0)?)),
        32 => {
            let mut bytes = [0u8; 16];
            for i in 0..4 {
                bytes[i * 4..i * 4 + 4].copy_from_slice(&word(i)?);
            }
            IpAddr::V6(Ipv6Addr::from(bytes))
        }
        _ => return None,
    };
    Some(canonical(SocketAddr::new(ip, port)))
}

/// Whether process `pid` has `needle` (`socket:[inode]`) among its open files.
fn holds(pid: i32, needle: &str) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.flatten()
        .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|target| target.as_os_str() == needle))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_read_from_both_tables_as_the_kernel_prints_them() {
        let v4: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        assert_eq!(address("0100007F:1F90"), Some(v4));
        // ::ffff:127.0.0.1 in tcp6 is the same peer as 127.0.0.1 in tcp.
        assert_eq!(address("0000000000000000FFFF00000100007F:1F90"), Some(v4));
        assert_eq!(
            address("00000000000000000000000001000000:0016"),
            Some("[::1]:22".parse().unwrap())
        );
        assert_eq!(address("zz:1"), None);
    }

    #[test]
    fn the_client_end_of_a_connection_is_found_by_both_of_its_addresses() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 111 1 0\n   1: 0100007F:D431 0100007F:1F90 01 00000000:00000000 00:00000000 00000000     0        0 222 1 0\n   2: 0100007F:1F90 0100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 333 1 0\n";
        let panel: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let client: SocketAddr = "127.0.0.1:54321".parse().unwrap();
        assert_eq!(inode_in(table, client, panel), Some(222));
        assert_eq!(inode_in(table, panel, client), Some(333));
    }

    #[test]
    fn a_connection_from_a_child_process_is_traced_to_it_and_ours_is_not() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let mut child = std::process::Command::new("/usr/bin/python3")
            .args([
                "-c",
                &format!(
                    "import socket,time; s=socket.create_connection(('127.0.0.1',{port})); time.sleep(30)"
                ),
            ])
            .spawn()
            .unwrap();
        let (_stream, peer) = listener.accept().unwrap();
        let local = listener.local_addr().unwrap();
        let found = sandboxed_holder(peer, local);
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(found, Some(child.id() as i32));
        // A connection this process makes itself is nobody's below it.
        let _mine = std::net::TcpStream::connect(local).unwrap();
        let (_stream, peer) = listener.accept().unwrap();
        assert_eq!(sandboxed_holder(peer, local), None);
    }
}
