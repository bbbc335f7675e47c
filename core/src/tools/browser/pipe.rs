//! Chromium's DevTools over a pipe, never over a port anyone may connect to. A DevTools
//! port on 127.0.0.1 answers whoever asks, with no password, and its `/json/version`
//! hands out the socket's address: a sandboxed command (the network is on by default)
//! could drive the browser to read `file:///…/.security.yml` or download anywhere.
//!
//! So Chromium is started with `--remote-debugging-pipe`: it reads commands on its fd 3
//! and writes answers and events on its fd 4, each message ended by a NUL. `/bin/sh`
//! puts our pipes there (`exec … 3<&0 4>&1`), so no unsafe `pre_exec` is needed.
//! chromiumoxide speaks only WebSocket, so it is given a one-time bridge: a listener on
//! 127.0.0.1 that answers only at a path holding 128 random bits, takes one connection
//! and closes. A process that connects first is refused (its handshake has 2 s), and the
//! bridge lives in the gateway's memory, where no command can read the secret.

use std::time::Duration;

use async_tungstenite::tungstenite::Message;
use async_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use async_tungstenite::tungstenite::http::StatusCode;
use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use tokio::process::{ChildStdin, ChildStdout};
use tokio::task::JoinHandle;

/// How long a connection to the bridge may take to say what it wants.
const HANDSHAKE: Duration = Duration::from_secs(2);

/// The flag that makes Chromium speak DevTools on fds 3 and 4.
pub(super) const FLAG: &str = "--remote-debugging-pipe";

/// `exe` with `args`, its stdin and stdout moved to fds 3 and 4 (and then closed).
pub(super) fn command(exe: &std::path::Path, args: &[String]) -> tokio::process::Command {
    let mut command = tokio::process::Command::new("/bin/sh");
    command
        .arg("-c")
        .arg("exec \"$0\" \"$@\" 3<&0 4>&1 </dev/null >/dev/null")
        .arg(exe)
        .args(args);
    command
}

/// The WebSocket address chromiumoxide connects to once, and the task that carries the
/// messages between it and Chromium's pipes until either side ends.
pub(super) struct Bridge {
    pub url: String,
    pub task: JoinHandle<()>,
}

pub(super) async fn bridge(to: ChildStdin, from: ChildStdout) -> std::io::Result<Bridge> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    let mut secret = [0u8; 16];
    getrandom::fill(&mut secret).map_err(std::io::Error::other)?;
    let secret: String = secret.iter().map(|b| format!("{b:02x}")).collect();
    let path = format!("/devtools/browser/{secret}");
    let url = format!("ws://127.0.0.1:{port}{path}");
    let task = tokio::spawn(async move {
        let ws = loop {
            let Ok((stream, peer)) = listener.accept().await else {
                return;
            };
            let wanted = path.clone();
            // The error's shape is tungstenite's callback signature, not ours to box.
            #[allow(clippy::result_large_err)]
            let check = move |request: &Request, response: Response| {
                if request.uri().path() == wanted {
                    Ok(response)
                } else {
                    let mut refused = ErrorResponse::new(None);
                    *refused.status_mut() = StatusCode::NOT_FOUND;
                    Err(refused)
                }
            };
            let handshake = async_tungstenite::tokio::accept_hdr_async(stream, check);
            match tokio::time::timeout(HANDSHAKE, handshake).await {
                Ok(Ok(ws)) => break ws,
                _ => tracing::warn!(%peer, "refused a connection to the browser's DevTools bridge"),
            }
        };
        drop(listener);
        carry(ws, to, from).await;
    });
    Ok(Bridge { url, task })
}

/// Messages both ways until one side closes: WebSocket text to NUL-ended pipe writes,
/// NUL-ended pipe reads to WebSocket text.
async fn carry<S>(ws: S, mut to: ChildStdin, from: ChildStdout)
where
    S: futures_util::Stream<Item = Result<Message, async_tungstenite::tungstenite::Error>>
        + futures_util::Sink<Message>
        + Unpin,
{
    let (mut sink, mut stream) = ws.split();
    let down = async {
        while let Some(Ok(message)) = stream.next().await {
            let bytes = match message {
                Message::Text(text) => text.as_bytes().to_vec(),
                Message::Binary(bytes) => bytes.to_vec(),
                Message::Close(_) => break,
                _ => continue,
            };
            if to.write_all(&bytes).await.is_err() || to.write_all(b"\0").await.is_err() {
                break;
            }
        }
    };
    let up = async {
        let mut reader = BufReader::new(from);
        let mut message = Vec::new();
        loop {
            message.clear();
            match reader.read_until(0, &mut message).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            if message.last() == Some(&0) {
                message.pop();
            }
            let text = String::from_utf8_lossy(&message).into_owned();
            if sink.send(Message::Text(text.into())).await.is_err() {
                break;
            }
        }
    };
    tokio::select! {
        () = down => {}
        () = up => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `cat` stands in for Chromium: what goes down the pipe comes back up. The bridge
    /// answers only at its secret path, and only once.
    #[tokio::test]
    async fn the_bridge_carries_messages_only_for_the_one_who_knows_its_path() {
        let mut child = command(
            std::path::Path::new("/bin/sh"),
            &["-c".into(), "cat <&3 >&4".into()],
        )
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
        let bridge = bridge(child.stdin.take().unwrap(), child.stdout.take().unwrap())
            .await
            .unwrap();
        let guessed = bridge.url.rsplit_once('/').unwrap().0.to_string() + "/0000";
        assert!(
            async_tungstenite::tokio::connect_async(&guessed)
                .await
                .is_err()
        );
        let json_version =
            bridge.url.split("/devtools").next().unwrap().to_string() + "/json/version";
        assert!(
            async_tungstenite::tokio::connect_async(&json_version)
                .await
                .is_err()
        );

        let (mut ws, _) = async_tungstenite::tokio::connect_async(&bridge.url)
            .await
            .unwrap();
        ws.send(Message::Text("{\"id\":1}".into())).await.unwrap();
        ws.send(Message::Text("{\"id\":2}".into())).await.unwrap();
        let first = ws.next().await.unwrap().unwrap();
        let second = ws.next().await.unwrap().unwrap();
        assert_eq!(first.into_text().unwrap().as_str(), "{\"id\":1}");
        assert_eq!(second.into_text().unwrap().as_str(), "{\"id\":2}");
        // Taken once: nobody connects after.
        assert!(
            async_tungstenite::tokio::connect_async(&bridge.url)
                .await
                .is_err()
        );
    }
}
