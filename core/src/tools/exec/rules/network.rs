//! Rules for the groups that guard the network edge: `exfiltration`, `reverse_shell`,
//! `remote_script`, `network_listen` and `mining`.

use super::super::command::{Invocation, Stage};
use super::super::deny::Ctx;
use super::super::paths;
use super::secrets::secret_name;
use super::{all_words, reads_file};

const NETCATS: &[&str] = &["nc", "ncat", "netcat"];

/// `curl -d @file`, `curl -T`, `wget --post-file`, `scp`/`rsync` to a remote host,
/// `nc host port < file`, `… | ssh host`.
pub(super) fn exfiltration(ctx: &Ctx) -> Option<String> {
    let stage = ctx.stage();
    let fed = ctx.piped_in() || reads_file(stage);
    for inv in &stage.invocations {
        let reason = match inv.program {
            "curl" => curl_sends(inv),
            "wget" => wget_sends(inv),
            "scp" | "rsync" | "sftp" | "rclone" if copies_out(inv, paths::remote) => {
                Some("copies files to another host".into())
            }
            "aws" | "gsutil"
                if copies_out(inv, |p| p.starts_with("s3://") || p.starts_with("gs://")) =>
            {
                Some("copies files to cloud storage".into())
            }
            p if NETCATS.contains(&p) && fed && !inv.flag("lz", &["--listen"]) => {
                Some("sends data to another host".into())
            }
            "ssh" | "telnet" | "mail" | "mailx" | "sendmail" | "mutt" if fed => {
                Some("sends data to another host".into())
            }
            "socat" if socat_has(inv, &["file:", "open:", "gopen:", "create:"]) => {
                Some("sends a file to another host".into())
            }
            _ => None,
        };
        if reason.is_some() {
            return reason;
        }
    }
    None
}

fn curl_sends(inv: &Invocation) -> Option<String> {
    let data = inv.values(
        Some('d'),
        &["--data", "--data-binary", "--data-ascii", "--json"],
    );
    let encoded = inv.values(None, &["--data-urlencode"]);
    for (value, word) in data.iter().chain(&encoded) {
        // `@file`, and `name@file` for --data-urlencode.
        let encoded_file = (encoded.iter().any(|(v, _)| v == value))
            .then(|| value.split_once('@').filter(|(n, _)| !n.contains('=')))
            .flatten()
            .map(|(_, f)| f);
        if let Some(file) = value.strip_prefix('@').or(encoded_file) {
            return Some(format!("uploads `{file}`"));
        }
        if word.substituted {
            return Some("sends a command's output".into());
        }
        if let Some(name) = word.vars.iter().find(|v| secret_name(v)) {
            return Some(format!("sends `${name}`, which looks like a secret"));
        }
    }
    let forms = inv.values(Some('F'), &["--form"]);
    if forms
        .iter()
        .any(|(v, _)| v.contains("=@") || v.contains("=<"))
    {
        return Some("uploads a file in a form".into());
    }
    let uploads = inv.values(Some('T'), &["--upload-file"]);
    uploads.first().map(|(file, _)| format!("uploads `{file}`"))
}

fn wget_sends(inv: &Invocation) -> Option<String> {
    let files = inv.values(None, &["--post-file", "--body-file"]);
    if let Some((file, _)) = files.first() {
        return Some(format!("uploads `{file}`"));
    }
    let data = inv.values(None, &["--post-data", "--body-data"]);
    data.iter()
        .any(|(_, w)| w.substituted)
        .then(|| "sends a command's output".into())
}

/// The last operand is remote and another one is not: an upload.
fn copies_out(inv: &Invocation, remote: impl Fn(&str) -> bool) -> bool {
    let ops = inv.operands();
    match ops.split_last() {
        Some((last, sources)) => remote(&last.text) && sources.iter().any(|s| !remote(&s.text)),
        None => false,
    }
}

/// Whether a socat address starts with one of `kinds` (lower case, with the colon).
fn socat_has(inv: &Invocation, kinds: &[&str]) -> bool {
    let ops = inv.operands();
    let network = ops.iter().any(|w| {
        let t = w.text.to_ascii_lowercase();
        ["tcp", "udp", "ssl:", "openssl"]
            .iter()
            .any(|k| t.starts_with(k))
    });
    network
        && ops.iter().any(|w| {
            let t = w.text.to_ascii_lowercase();
            kinds
                .iter()
                .any(|k| t.starts_with(k) || t.contains(&format!(",{k}")))
        })
}

/// `bash -i >& /dev/tcp/…`, `nc -e /bin/sh`, `socat … exec:`, socket-and-shell code,
/// a network tool and a shell in one pipeline.
pub(super) fn reverse_shell(ctx: &Ctx) -> Option<String> {
    let stage = ctx.stage();
    if all_words(stage).any(|w| w.text.contains("/dev/tcp/") || w.text.contains("/dev/udp/")) {
        return Some("opens a raw network connection through /dev/tcp".into());
    }
    for inv in &stage.invocations {
        let hands_shell = match inv.program {
            p if NETCATS.contains(&p) => inv.flag("ec", &["--exec", "--sh-exec", "--lua-exec"]),
            "socat" => socat_has(inv, &["exec:", "system:"]),
            _ => inv.inline_code().iter().any(|code| socket_and_shell(code)),
        };
        if hands_shell {
            return Some("gives a remote host a shell".into());
        }
    }
    let net = |s: &Stage| s.invocations.iter().any(|i| network_tool(i));
    let shell = |s: &Stage| s.invocations.iter().any(|i| i.reads_script_from_stdin());
    let pipeline = ctx.stages;
    (net(stage) && pipeline.iter().any(shell) || shell(stage) && pipeline.iter().any(net))
        .then(|| "pipes a shell through a network connection".into())
}

fn network_tool(inv: &Invocation) -> bool {
    NETCATS.contains(&inv.program)
        || inv.is(&["socat", "telnet"])
        || (inv.program == "openssl" && inv.verb() == "s_client")
}

/// Code that opens a socket and starts a shell or a process.
fn socket_and_shell(code: &str) -> bool {
    let code = code.to_ascii_lowercase();
    let socket = [
        "socket",
        "fsockopen",
        "net.connect",
        "tcpsocket",
        "require('net')",
        "require(\"net\")",
    ];
    let shell = [
        "subprocess",
        "pty",
        "dup2",
        "/bin/sh",
        "/bin/bash",
        "exec",
        "spawn",
        "child_process",
        "system",
        "popen",
        "proc_open",
        "passthru",
    ];
    socket.iter().any(|s| code.contains(s)) && shell.iter().any(|s| code.contains(s))
}

/// `curl … | sh`, `wget -O- … | bash`, `curl … | sudo python3`.
pub(super) fn remote_script(ctx: &Ctx) -> Option<String> {
    let runs_stdin = ctx
        .stage()
        .invocations
        .iter()
        .any(|i| i.reads_script_from_stdin());
    let downloads = ctx.stages[..ctx.at].iter().any(|s| {
        s.invocations
            .iter()
            .any(|i| i.is(&["curl", "wget", "fetch", "http", "xh", "aria2c"]))
    });
    (runs_stdin && downloads).then(|| {
        "runs a downloaded script without anyone reading it (save it to a file and read it first)"
            .into()
    })
}

/// `nc -l`, `python -m http.server`, `php -S`, `ssh -R`/`-L`/`-D`, `ngrok`.
pub(super) fn network_listen(ctx: &Ctx) -> Option<String> {
    for inv in &ctx.stage().invocations {
        let reason = match inv.program {
            p if NETCATS.contains(&p) && inv.flag("l", &["--listen"]) => {
                Some("listens for connections on a port")
            }
            "socat"
                if socat_has(
                    inv,
                    &[
                        "tcp-listen",
                        "tcp4-listen",
                        "tcp6-listen",
                        "udp-listen",
                        "openssl-listen",
                    ],
                ) =>
            {
                Some("listens for connections on a port")
            }
            "http.server" | "SimpleHTTPServer" | "http-server" | "httpd" => {
                Some("serves files on a port")
            }
            "php" if inv.flag("S", &[]) => Some("serves files on a port"),
            "ruby"
                if inv
                    .values(Some('e'), &[])
                    .iter()
                    .any(|(c, _)| *c == "httpd") =>
            {
                Some("serves files on a port")
            }
            "openssl" if inv.verb() == "s_server" => Some("listens for connections on a port"),
            "iperf" | "iperf3" if inv.flag("s", &["--server"]) => {
                Some("listens for connections on a port")
            }
            "ssh" if ssh_forwards(inv) => Some("opens an SSH tunnel"),
            "ngrok" | "cloudflared" | "lt" | "localtunnel" | "bore" | "frpc" | "frps"
            | "chisel" => Some("opens a tunnel from the internet"),
            _ => None,
        };
        if let Some(reason) = reason {
            return Some(reason.into());
        }
    }
    None
}

fn ssh_forwards(inv: &Invocation) -> bool {
    let options = inv.values(Some('o'), &[]);
    let forward_option = options.iter().any(|(v, _)| {
        let v = v.to_ascii_lowercase();
        ["remoteforward", "localforward", "dynamicforward"]
            .iter()
            .any(|o| v.starts_with(o))
    });
    forward_option || inv.flag("RLDw", &[])
}

/// `xmrig`, `minerd`, `cpuminer`, `stratum+tcp://` pools.
pub(super) fn mining(ctx: &Ctx) -> Option<String> {
    const MINERS: &[&str] = &[
        "xmrig",
        "xmr-stak",
        "minerd",
        "cpuminer",
        "cpuminer-opt",
        "cgminer",
        "bfgminer",
        "ethminer",
        "t-rex",
        "nbminer",
        "lolminer",
        "phoenixminer",
        "nanominer",
        "gminer",
        "teamredminer",
        "srbminer",
        "nheqminer",
    ];
    let stage = ctx.stage();
    if let Some(inv) = stage
        .invocations
        .iter()
        .find(|i| MINERS.contains(&i.program.to_ascii_lowercase().as_str()))
    {
        return Some(format!("runs the cryptocurrency miner `{}`", inv.program));
    }
    all_words(stage)
        .any(|w| w.text.contains("stratum+") || w.text.contains("stratum2+"))
        .then(|| "connects to a mining pool".into())
}
