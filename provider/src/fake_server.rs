//! A scripted HTTP/1.1 model server on 127.0.0.1:0 for the provider tests: each request
//! gets the next scripted reply (status, headers, body chunks with pauses, then a clean
//! end, a cut connection or a stall), and every request is recorded.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// How a scripted reply ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// The terminating chunk is sent and the connection closed.
    Complete,
    /// The connection is closed without the terminating chunk.
    Cut,
    /// Nothing more is sent; the connection stays open.
    Stall,
}

#[derive(Debug, Clone)]
pub(crate) struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    /// Body pieces, each sent after its pause.
    pub chunks: Vec<(Duration, String)>,
    pub end: End,
}

impl Reply {
    /// A 200 event stream, each piece sent `pause` after the previous one.
    pub(crate) fn sse(pieces: &[&str], pause: Duration) -> Self {
        Self {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            chunks: pieces.iter().map(|p| (pause, p.to_string())).collect(),
            end: End::Complete,
        }
    }

    /// A complete JSON answer.
    pub(crate) fn json(status: u16, body: &str) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            chunks: vec![(Duration::ZERO, body.to_string())],
            end: End::Complete,
        }
    }

    pub(crate) fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    pub(crate) fn ending(mut self, end: End) -> Self {
        self.end = end;
        self
    }
}

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub(crate) struct Captured {
    pub path: String,
    /// Header names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Captured {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

pub(crate) struct FakeServer {
    pub base: String,
    requests: Arc<Mutex<Vec<Captured>>>,
}

impl FakeServer {
    pub(crate) async fn start(replies: Vec<Reply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let replies = Arc::new(Mutex::new(VecDeque::from(replies)));
        let seen = requests.clone();
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                tokio::spawn(serve(socket, replies.clone(), seen.clone()));
            }
        });
        Self { base, requests }
    }

    pub(crate) fn requests(&self) -> Vec<Captured> {
        self.requests.lock().unwrap().clone()
    }
}

async fn serve(
    mut socket: TcpStream,
    replies: Arc<Mutex<VecDeque<Reply>>>,
    seen: Arc<Mutex<Vec<Captured>>>,
) {
    let Some(captured) = read_request(&mut socket).await else {
        return;
    };
    seen.lock().unwrap().push(captured);
    let reply = replies.lock().unwrap().pop_front();
    let reply = reply.unwrap_or_else(|| Reply::json(500, r#"{"error":"script ran out"}"#));
    let mut head = format!("HTTP/1.1 {} Scripted\r\n", reply.status);
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("transfer-encoding: chunked\r\nconnection: close\r\n\r\n");
    if socket.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    for (pause, piece) in &reply.chunks {
        tokio::time::sleep(*pause).await;
        let chunk = format!("{:x}\r\n{piece}\r\n", piece.len());
        if socket.write_all(chunk.as_bytes()).await.is_err() {
            return;
        }
    }
    match reply.end {
        End::Complete => {
            let _ = socket.write_all(b"0\r\n\r\n").await;
        }
        End::Cut => {}
        End::Stall => tokio::time::sleep(Duration::from_secs(60)).await,
    }
}

async fn read_request(socket: &mut TcpStream) -> Option<Captured> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos + 4;
        }
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let mut lines = head.split("\r\n");
    let path = lines.next()?.split(' ').nth(1)?.to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_lowercase(), v.trim().to_string()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    while buf.len() < head_end + length {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = serde_json::from_slice(&buf[head_end..head_end + length]).unwrap_or(Value::Null);
    Some(Captured {
        path,
        headers,
        body,
    })
}
