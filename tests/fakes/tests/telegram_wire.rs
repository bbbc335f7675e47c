//! The fake Telegram over raw HTTP: body encodings teloxide does not use, exact error
//! bodies, and the `pincer-fakes telegram` binary with its `/_fake/*` control routes.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use pincer_fakes::telegram::{FakeTelegram, Fault, Incoming, Sent};
use pincer_fakes::{PATIENCE, wait_until};
use serde_json::{Value, json};

fn method_url(api_url: &str, token: &str, method: &str) -> String {
    format!("{api_url}/bot{token}/{method}")
}

async fn json_of(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

#[tokio::test]
async fn form_query_and_any_case_method_names() {
    let fake = FakeTelegram::start().await;
    let client = reqwest::Client::new();
    let url = method_url(&fake.api_url(), fake.token(), "SENDMESSAGE");
    let response = client
        .post(&url)
        .form(&[
            ("chat_id", "42"),
            ("text", "a+b & c"),
            ("reply_markup", "{\"remove_keyboard\":true}"),
        ])
        .send()
        .await
        .unwrap();
    let (status, body) = json_of(response).await;
    assert_eq!(status, 200);
    assert_eq!(body["ok"], true);
    assert_eq!(body["result"]["text"], "a+b & c");
    assert_eq!(body["result"]["chat"]["type"], "private");
    let call = &fake.calls()[0];
    assert_eq!(call.method, "sendMessage");
    assert_eq!(call.param("reply_markup")["remove_keyboard"], true);
    assert_eq!(call.param_i64("chat_id"), Some(42));

    fake.inject(Incoming::dm(42, "hi"));
    let url = method_url(&fake.api_url(), fake.token(), "getUpdates");
    let response = client.get(format!("{url}?offset=2")).send().await.unwrap();
    let (_, body) = json_of(response).await;
    assert_eq!(body, json!({"ok": true, "result": []}));
    assert_eq!(fake.confirmed_offset(), 2);
}

#[tokio::test]
async fn errors_have_telegrams_shape() {
    let fake = FakeTelegram::start().await;
    let client = reqwest::Client::new();
    let unknown = method_url(&fake.api_url(), fake.token(), "sendGift");
    let (status, body) = json_of(client.post(&unknown).send().await.unwrap()).await;
    assert_eq!(status, 404);
    assert_eq!(
        body,
        json!({"ok": false, "error_code": 404, "description": "Not Found: method not found"})
    );

    let wrong = method_url(&fake.api_url(), "1:NOPE", "getMe");
    let (status, body) = json_of(client.post(&wrong).send().await.unwrap()).await;
    assert_eq!(status, 401);
    assert_eq!(
        body,
        json!({"ok": false, "error_code": 401, "description": "Unauthorized"})
    );

    fake.fail_next("getMe", Fault::ServerError(502));
    fake.fail_next("getMe", Fault::TooManyRequests { retry_after: 2 });
    let get_me = method_url(&fake.api_url(), fake.token(), "getMe");
    let (status, body) = json_of(client.post(&get_me).send().await.unwrap()).await;
    assert_eq!((status, &body["description"]), (502, &json!("Bad Gateway")));
    let (status, body) = json_of(client.post(&get_me).send().await.unwrap()).await;
    assert_eq!(status, 429);
    assert_eq!(body["parameters"], json!({"retry_after": 2}));

    let send = method_url(&fake.api_url(), fake.token(), "sendMessage");
    let empty = client.post(&send).json(&json!({"chat_id": 1, "text": " "}));
    let (status, body) = json_of(empty.send().await.unwrap()).await;
    assert_eq!(
        (status, &body["description"]),
        (400, &json!("Bad Request: message text is empty"))
    );
    let long = json!({"chat_id": 1, "text": "x".repeat(4097)});
    let (_, body) = json_of(client.post(&send).json(&long).send().await.unwrap()).await;
    assert_eq!(body["description"], "Bad Request: message is too long");
    let orphan = json!({"chat_id": 1, "text": "x", "reply_parameters": {"message_id": 77}});
    let (_, body) = json_of(client.post(&send).json(&orphan).send().await.unwrap()).await;
    assert_eq!(
        body["description"],
        "Bad Request: message to be replied not found"
    );
    assert!(fake.sent().is_empty());
}

#[tokio::test]
async fn a_raw_multipart_photo_with_caption() {
    let fake = FakeTelegram::start().await;
    // Bigger than axum's default 2 MB body limit; Telegram takes up to 50 MB.
    let photo = vec![7u8; 3 * 1024 * 1024];
    let part = reqwest::multipart::Part::bytes(photo.clone()).file_name("cat.jpg");
    let form = reqwest::multipart::Form::new()
        .text("chat_id", "-100123")
        .text("message_thread_id", "4")
        .text("caption", "a cat")
        .text("photo", "attach://upload")
        .part("upload", part);
    let url = method_url(&fake.api_url(), fake.token(), "sendPhoto");
    let response = reqwest::Client::new()
        .post(url)
        .multipart(form)
        .send()
        .await
        .unwrap();
    let (status, body) = json_of(response).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["caption"], "a cat");
    assert_eq!(body["result"]["photo"][0]["file_size"], photo.len());
    assert_eq!(body["result"]["message_thread_id"], 4);
    let sent = fake.wait_for_sent(1, PATIENCE).await;
    assert_eq!(sent[0].chat_id, -100123);
    assert_eq!(sent[0].file_name.as_deref(), Some("cat.jpg"));
    assert_eq!(sent[0].message_thread_id, Some(4));
}

/// The binary, stopped when dropped.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn the_binary_is_driven_through_control_routes() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_pincer-fakes"))
        .arg("telegram")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let child = Child(child);
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    let words: Vec<&str> = line.split_whitespace().collect();
    let [name, api_url, token] = words[..] else {
        panic!("unexpected first line {line:?}");
    };
    assert_eq!(name, "telegram");
    let client = reqwest::Client::new();

    let inject = json!({"chat_id": -100555, "user_id": 7, "text": "hi", "thread_id": 3,
                        "mention": true, "document": {"name": "a.txt", "text": "abc"}});
    let response = client
        .post(format!("{api_url}/_fake/inject"))
        .json(&inject)
        .send()
        .await
        .unwrap();
    let (status, ids) = json_of(response).await;
    assert_eq!(status, 200, "{ids}");
    assert_eq!(ids, json!({"message_id": 1, "update_id": 1}));
    let bad = client
        .post(format!("{api_url}/_fake/inject"))
        .json(&json!({"text": "no user"}))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);

    let updates = method_url(api_url, token, "getUpdates");
    let (_, body) = json_of(client.post(&updates).send().await.unwrap()).await;
    let message = &body["result"][0]["message"];
    assert_eq!(message["chat"]["is_forum"], true);
    assert_eq!(message["caption"], "@pincer_test_bot hi");
    assert_eq!(message["document"]["file_name"], "a.txt");

    let fail = json!({"method": "sendMessage", "fault": {"bad_request": "chat not found"}});
    let response = client
        .post(format!("{api_url}/_fake/fail"))
        .json(&fail)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 204);
    let send = method_url(api_url, token, "sendMessage");
    let body = json!({"chat_id": -100555, "text": "hello", "message_thread_id": 3});
    let (status, _) = json_of(client.post(&send).json(&body).send().await.unwrap()).await;
    assert_eq!(status, 400);
    let (status, _) = json_of(client.post(&send).json(&body).send().await.unwrap()).await;
    assert_eq!(status, 200);
    client
        .post(&updates)
        .json(&json!({"offset": 2}))
        .send()
        .await
        .unwrap();

    let sent: Vec<Sent> = client
        .get(format!("{api_url}/_fake/sent"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(sent.len(), 1);
    assert_eq!(
        (sent[0].text.as_str(), sent[0].message_thread_id),
        ("hello", Some(3))
    );
    let calls: Value = client
        .get(format!("{api_url}/_fake/calls"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let methods: Vec<&str> = calls
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["method"].as_str().unwrap())
        .collect();
    assert_eq!(
        methods,
        ["getUpdates", "sendMessage", "sendMessage", "getUpdates"]
    );
    let state: Value = client
        .get(format!("{api_url}/_fake/updates"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(state, json!({"confirmed_offset": 2, "pending": 0}));

    let get_me = method_url(api_url, token, "getMe");
    let response = client
        .post(format!("{api_url}/_fake/outage"))
        .json(&json!({"ms": 500}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 202);
    tokio::time::sleep(Duration::from_millis(250)).await;
    assert!(client.post(&get_me).send().await.is_err());
    wait_until("the fake listening again on the same port", async || {
        client.post(&get_me).send().await.is_ok()
    })
    .await;
    drop(child);
}
