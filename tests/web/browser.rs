//! The panel in a real browser: headless Chromium (Debian's `chromium`, driven over
//! WebDriver by `chromedriver`) against the real `pincer run` with the fake Telegram
//! and the fake model. Log in by the link, approve a stranger's pairing code (and see
//! them answered on Telegram), send a chat message and watch the streamed reply, open
//! its transcript, and check the usage chart is drawn. Screenshots go to
//! `target/screenshots/`.
//!
//! Without chromedriver the test says so and passes, except under CI (`CI` set), where
//! a missing browser is a failure.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use fantoccini::{Client, ClientBuilder, Locator};
use pincer_fakes::telegram::Incoming;

use crate::common::telegram::setup;
use crate::common::{pairing_code, wait_for, wait_until};

const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
const CHROMIUM: &str = "/usr/bin/chromium";
const TOKEN: &str = "browser-test-token-5f1c0a9e-2b7d4c81e06f93a5";
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// chromedriver on a free port, killed when dropped.
struct Driver {
    child: Child,
    port: u16,
    profile: tempfile::TempDir,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Driver {
    async fn start() -> Option<Driver> {
        if !std::path::Path::new(CHROMEDRIVER).exists() {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI needs Chromium: apt-get install -y chromium chromium-driver"
            );
            eprintln!("skipped: no {CHROMEDRIVER} (apt-get install chromium chromium-driver)");
            return None;
        }
        let port = free_port();
        let child = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        wait_until("chromedriver listening", async || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        })
        .await;
        Some(Driver {
            child,
            port,
            profile: tempfile::tempdir().expect("profile dir"),
        })
    }

    async fn browser(&self) -> Client {
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".into(),
            serde_json::json!({
                "binary": CHROMIUM,
                "args": [
                    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--disable-quic", "--no-first-run", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync", "--window-size=1100,900",
                    format!("--user-data-dir={}", self.profile.path().display()),
                ],
            }),
        );
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        ClientBuilder::new(connector)
            .capabilities(caps)
            .connect(&format!("http://127.0.0.1:{}", self.port))
            .await
            .expect("a browser session")
    }
}

async fn screenshot(browser: &Client, name: &str) {
    let png = browser.screenshot().await.expect("screenshot");
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/screenshots");
    std::fs::create_dir_all(&dir).expect("screenshot dir");
    std::fs::write(dir.join(format!("{name}.png")), png).expect("write screenshot");
}

/// Wait for `css` to match an element whose text contains `needle`.
async fn wait_text(browser: &Client, css: &str, needle: &str) -> String {
    // The page as last seen, for the failure message (which cannot ask the browser).
    let last_page = std::cell::RefCell::new(String::new());
    wait_for(
        async || {
            for element in browser
                .find_all(Locator::Css(css))
                .await
                .unwrap_or_default()
            {
                if let Ok(text) = element.text().await
                    && text.contains(needle)
                {
                    return Some(text);
                }
            }
            *last_page.borrow_mut() = browser.source().await.unwrap_or_default();
            None
        },
        || format!("no `{css}` saying `{needle}` in:\n{}", last_page.borrow()),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_owner_uses_the_panel_in_chromium() {
    let Some(driver) = Driver::start().await else {
        return;
    };
    let port = free_port();
    let s = setup(
        &format!("dm_policy = \"pairing\"\n[web]\nenabled = true\nlisten = \"127.0.0.1:{port}\""),
        "owners = [\"telegram:42\"]",
    )
    .await;
    s.home.write_secrets(&format!(
        "channels:\n  telegram:\n    bot_token: \"{}\"\nweb:\n  token: \"{TOKEN}\"\n",
        s.platform.token()
    ));
    let _gateway = s.start();
    let base = format!("http://127.0.0.1:{port}");
    // The gateway is up when /healthz says every channel is.
    wait_until("the panel coming up", async || {
        reqwest::get(format!("{base}/healthz"))
            .await
            .is_ok_and(|r| r.status().is_success())
    })
    .await;
    // A stranger asks to pair.
    s.platform
        .inject(Incoming::dm(7, "hello, who are you?").from(7, "Ana", None));
    let code = pairing_code(&s.wait_for_text(7, "pairing code").await.text);

    let browser = driver.browser().await;
    browser
        .goto(&format!("{base}/login?token={TOKEN}"))
        .await
        .expect("login");
    wait_text(&browser, "main h1", "Overview").await;
    wait_text(&browser, "#today-cost", "Spent today").await;

    // Approve the code on the Access page: the stranger is let in and answered.
    browser
        .goto(&format!("{base}/access"))
        .await
        .expect("access");
    let approve = format!("//tr[td[contains(., '{code}')]]//button[normalize-space()='Approve']");
    browser
        .find(Locator::XPath(&approve))
        .await
        .expect("an Approve button beside the code")
        .click()
        .await
        .expect("click Approve");
    wait_text(&browser, ".flash", "Approved").await;
    s.platform
        .inject(Incoming::dm(7, "now may I talk?").from(7, "Ana", None));
    s.wait_for_text(7, "now may I talk?").await;

    // Chat: the reply streams into the page.
    browser.goto(&format!("{base}/chat")).await.expect("chat");
    let input = browser
        .find(Locator::Css("#chat-form textarea"))
        .await
        .expect("chat box");
    input
        .send_keys("hello from the browser")
        .await
        .expect("type");
    browser
        .find(Locator::Css("#chat-form button"))
        .await
        .expect("send button")
        .click()
        .await
        .expect("send");
    wait_text(
        &browser,
        ".msg.assistant[data-done=true]",
        "hello from the browser",
    )
    .await;
    screenshot(&browser, "chat").await;

    // Its transcript.
    browser
        .goto(&format!("{base}/conversations"))
        .await
        .expect("conversations");
    browser
        .find(Locator::LinkText("web:dm:owner"))
        .await
        .expect("the web chat's session")
        .click()
        .await
        .expect("open it");
    wait_text(&browser, ".msg.user", "hello from the browser").await;

    // The usage chart is drawn: today's bar has a height on the page.
    browser.goto(&format!("{base}/usage")).await.expect("usage");
    let drawn = browser
        .execute(
            "return Array.from(document.querySelectorAll('#tokens-per-day rect.bar')).filter(r => r.getBBox().height > 0).length",
            vec![],
        )
        .await
        .expect("measure the chart");
    assert!(drawn.as_u64().unwrap_or(0) >= 1, "no bar drawn: {drawn}");
    screenshot(&browser, "usage").await;
    browser.goto(&base).await.expect("overview");
    wait_text(&browser, "main h1", "Overview").await;
    screenshot(&browser, "overview").await;
    browser.close().await.expect("close the browser");
}
