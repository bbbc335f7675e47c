//! `fake-mcp` — a tiny MCP server for Pincer's tests, written by hand so the fakes
//! crate needs no MCP library. It speaks the stdio transport: newline-delimited
//! JSON-RPC 2.0 on stdin/stdout.
//!
//! Tools:
//! - `echo {text}` → the text
//! - `add {a, b}`  → the sum
//! - `env {name}`  → the server's value of that environment variable, or `<unset>`
//! - `cwd {}`      → the server's working directory
//! - `read {path}` → the file's text as the server can read it, or the error
//! - `fail {}`     → a result with `isError: true`
//! - `crash {}`    → the process exits at once (code 3) without answering
//!
//! With `--extra-tools N` it also lists N tools `city_weather_1` … (each answers
//! "weather in city N: sunny"), for tests of many tools.
//!
//! With `--slow-start MS` it sleeps that long before reading stdin, like a server that
//! takes a while to start (an `npx` download, a JVM).
//!
//! `FAKE_MCP_PROTOCOL` in its environment replaces the protocol version it answers
//! `initialize` with (a draft, an unknown one), for tests of version negotiation.
//!
//! With `--http PORT` it serves the streamable HTTP transport instead, on
//! 127.0.0.1:PORT (0 picks a free port), printing `listening on 127.0.0.1:N` first:
//! each POST carries one JSON-RPC message and gets a plain JSON answer (202 for
//! notifications); GET (the optional event stream) is refused with 405. One thread per
//! connection, `Connection: close` on every answer.
//!
//! It must not be used for anything but tests: it trusts its input completely.

// Test code: it may sleep on the real clock.
#![allow(clippy::disallowed_methods)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};

use serde_json::{Value, json};

/// How many `city_weather_N` tools to list (`--extra-tools`).
static EXTRA: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// The protocol version answered to `initialize` (one every MCP client accepts).
const PROTOCOL_VERSION: &str = "2025-06-18";

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let [_, flag, port] = args.as_slice()
        && flag == "--http"
    {
        return serve_http(port);
    }
    let extra = match args.as_slice() {
        [_, flag, n] if flag == "--extra-tools" => n.parse().unwrap_or(0),
        _ => 0,
    };
    EXTRA.store(extra, std::sync::atomic::Ordering::Relaxed);
    if let [_, flag, ms] = args.as_slice()
        && flag == "--slow-start"
    {
        let ms = ms.parse().unwrap_or(0);
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { return };
        if line.trim().is_empty() {
            continue;
        }
        let reply = match serde_json::from_str::<Value>(&line) {
            Ok(message) => handle(&message),
            Err(e) => Some(error(Value::Null, -32700, &format!("parse error: {e}"))),
        };
        if let Some(reply) = reply {
            // A closed stdout means the client is gone: nothing left to do.
            if writeln!(stdout, "{reply}")
                .and_then(|()| stdout.flush())
                .is_err()
            {
                return;
            }
        }
    }
}

fn serve_http(port: &str) {
    let Ok(listener) = TcpListener::bind(format!("127.0.0.1:{port}")) else {
        eprintln!("cannot listen on port {port}");
        std::process::exit(2);
    };
    if let Ok(addr) = listener.local_addr() {
        println!("listening on {addr}");
        let _ = std::io::stdout().flush(); // the test reads this line; nothing to do if it fails
    }
    for stream in listener.incoming().flatten() {
        std::thread::spawn(move || {
            // A broken connection is the client's business: drop it.
            let _ = answer_http(stream);
        });
    }
}

/// Read one HTTP request and answer it.
fn answer_http(stream: TcpStream) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let mut length = 0;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 || header.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    let (status, json) = if !request_line.starts_with("POST ") {
        ("405 Method Not Allowed", None)
    } else {
        match serde_json::from_slice::<Value>(&body) {
            Ok(message) => match handle(&message) {
                Some(reply) => ("200 OK", Some(reply)),
                None => ("202 Accepted", None),
            },
            Err(_) => ("400 Bad Request", None),
        }
    };
    let body = json.map(|j| j.to_string()).unwrap_or_default();
    let mut out = stream;
    write!(
        out,
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nMcp-Session-Id: fake-session\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    out.flush()
}

/// Answer one JSON-RPC message; `None` for notifications and responses.
fn handle(message: &Value) -> Option<Value> {
    let id = message.get("id")?.clone();
    let method = message.get("method").and_then(Value::as_str)?;
    let params = message.get("params").cloned().unwrap_or(Value::Null);
    let result = match method {
        "initialize" => json!({
            "protocolVersion": std::env::var("FAKE_MCP_PROTOCOL")
                .unwrap_or_else(|_| PROTOCOL_VERSION.to_string()),
            "capabilities": { "tools": {} },
            "serverInfo": { "name": "fake-mcp", "version": "0.1.0" }
        }),
        "ping" => json!({}),
        "tools/list" => {
            let mut tools = tool_list();
            let extra = EXTRA.load(std::sync::atomic::Ordering::Relaxed);
            if let Some(list) = tools.as_array_mut() {
                for n in 1..=extra {
                    list.push(json!({ "name": format!("city_weather_{n}"),
                        "description": format!("The weather in city number {n}"),
                        "inputSchema": { "type": "object", "properties": {}, "required": [] } }));
                }
            }
            json!({ "tools": tools })
        }
        "tools/call" => call(&params),
        other => return Some(error(id, -32601, &format!("method not found: {other}"))),
    };
    Some(json!({ "jsonrpc": "2.0", "id": id, "result": result }))
}

fn error(id: Value, code: i64, message: &str) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } })
}

fn tool_list() -> Value {
    let object = |props: Value, required: Value| json!({ "type": "object", "properties": props, "required": required });
    json!([
        { "name": "echo", "description": "Echo the text back",
          "inputSchema": object(json!({ "text": { "type": "string" } }), json!(["text"])) },
        { "name": "add", "description": "Add two numbers",
          "inputSchema": object(json!({ "a": { "type": "number" }, "b": { "type": "number" } }), json!(["a", "b"])) },
        { "name": "env", "description": "Read an environment variable",
          "inputSchema": object(json!({ "name": { "type": "string" } }), json!(["name"])) },
        { "name": "cwd", "description": "The working directory",
          "inputSchema": object(json!({}), json!([])) },
        { "name": "read", "description": "Read a file",
          "inputSchema": object(json!({ "path": { "type": "string" } }), json!(["path"])) },
        { "name": "fail", "description": "Always fails",
          "inputSchema": object(json!({}), json!([])) },
        { "name": "crash", "description": "Exit the server process",
          "inputSchema": object(json!({}), json!([])) },
    ])
}

fn call(params: &Value) -> Value {
    let name = params.get("name").and_then(Value::as_str).unwrap_or("");
    let args = params.get("arguments").cloned().unwrap_or(json!({}));
    let arg = |key: &str| args.get(key).cloned().unwrap_or(Value::Null);
    let text = match name {
        "echo" => arg("text").as_str().unwrap_or("").to_string(),
        "add" => {
            let sum = arg("a").as_f64().unwrap_or(0.0) + arg("b").as_f64().unwrap_or(0.0);
            if sum.fract() == 0.0 {
                format!("{}", sum as i64)
            } else {
                sum.to_string()
            }
        }
        "env" => {
            let key = arg("name").as_str().unwrap_or("").to_string();
            std::env::var(key).unwrap_or_else(|_| "<unset>".into())
        }
        "cwd" => std::env::current_dir()
            .map(|d| d.display().to_string())
            .unwrap_or_default(),
        "read" => match std::fs::read_to_string(arg("path").as_str().unwrap_or("")) {
            Ok(text) => text,
            Err(err) => return tool_result(&format!("cannot read: {err}"), true),
        },
        "fail" => return tool_result("it failed on purpose", true),
        "crash" => std::process::exit(3),
        other if other.starts_with("city_weather_") => {
            format!(
                "weather in city {}: sunny",
                other.trim_start_matches("city_weather_")
            )
        }
        other => return tool_result(&format!("unknown tool {other}"), true),
    };
    tool_result(&text, false)
}

fn tool_result(text: &str, is_error: bool) -> Value {
    json!({ "content": [{ "type": "text", "text": text }], "isError": is_error })
}
