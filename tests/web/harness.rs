//! The panel in-process: the real core (store, dispatcher, agent against the fake
//! model) and the real router, driven without a socket (`oneshot`), logged in the way a
//! browser is (the login link's cookie, the page's CSRF token).

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use pincer::web::{WebChat, WebState};
use pincer_fakes::FakeModel;
use secrecy::SecretString;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use crate::common::{TestHome, openai_config};

pub(super) const TOKEN: &str = "test-web-token-0123456789abcdef-0123456789";

pub(super) struct Panel {
    pub home: TestHome,
    pub fake: FakeModel,
    pub state: Arc<WebState>,
    pub cookie: String,
    pub csrf: String,
    shutdown: CancellationToken,
}

impl Drop for Panel {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// A response's status and body text.
pub(super) struct Page {
    pub status: StatusCode,
    pub headers: axum::http::HeaderMap,
    pub text: String,
}

impl Panel {
    /// Start the core with `extra` config (TOML before `[router]`) and log in.
    pub(super) async fn start(extra: &str) -> Panel {
        let fake = FakeModel::start().await;
        let home = TestHome::new();
        let text = openai_config(&fake, extra);
        home.write_config(&text);
        let paths = pincer::Home::resolve(Some(home.path().to_path_buf()), None);
        let config = pincer_config::load_str(&text, &paths.config_file, &paths.security_file, &[])
            .expect("config");
        let secrets = pincer_config::Secrets::default();
        let shutdown = CancellationToken::new();
        let running =
            pincer::start(&paths, &config, &secrets, &[], shutdown.clone()).expect("start");
        let chat = Arc::new(WebChat::default());
        let (to_channels, mut channels) = tokio::sync::mpsc::channel(64);
        tokio::spawn(pincer::web::tee(
            running.outbound,
            Arc::clone(&chat),
            to_channels,
        ));
        tokio::spawn(async move { while channels.recv().await.is_some() {} });
        let scheduler = Arc::new(pincer::cron::Scheduler {
            store: running.agent.store().clone(),
            bus: running.inbound.clone(),
            outbound: running.agent.outbound().clone(),
            clock: Arc::new(pincer::cron::SystemClock),
            grace: std::time::Duration::from_secs(60),
            wake: Arc::clone(&running.wake),
            heartbeat: None,
        });
        let state = Arc::new(WebState {
            home: paths,
            config: Arc::new(config),
            agent: Arc::clone(&running.agent),
            registry: Arc::new(pincer_channels::Registry::default()),
            inbound: running.inbound.clone(),
            scheduler: Some(scheduler),
            wake: Arc::clone(&running.wake),
            chat,
            token: SecretString::from(TOKEN),
            metrics_token: None,
            sessions: Default::default(),
            started: std::time::Instant::now(),
        });
        // The core runs as long as the panel: its task ends with `shutdown`.
        std::mem::forget(running.dispatcher);
        let mut panel = Panel {
            home,
            fake,
            state,
            cookie: String::new(),
            csrf: String::new(),
            shutdown,
        };
        panel.login().await;
        panel
    }

    async fn login(&mut self) {
        let page = self.request(get(&format!("/login?token={TOKEN}"))).await;
        assert_eq!(page.status, StatusCode::OK, "{}", page.text);
        let set = page.headers[header::SET_COOKIE]
            .to_str()
            .expect("cookie")
            .to_string();
        assert!(
            set.contains("HttpOnly") && set.contains("SameSite=Strict"),
            "{set}"
        );
        self.cookie = set.split(';').next().expect("pair").to_string();
        let home = self.get("/").await;
        assert_eq!(home.status, StatusCode::OK, "{}", home.text);
        self.csrf = meta_csrf(&home.text);
    }

    pub(super) fn app(&self) -> axum::Router {
        pincer::web::app(Arc::clone(&self.state))
    }

    pub(super) async fn request(&self, mut request: Request<Body>) -> Page {
        // As a browser sends it, to the panel's default address.
        if !request.headers().contains_key(header::HOST) {
            request
                .headers_mut()
                .insert(header::HOST, "127.0.0.1:8790".parse().expect("host"));
        }
        let response = self.app().oneshot(request).await.expect("response");
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = axum::body::to_bytes(response.into_body(), 16 << 20)
            .await
            .expect("body");
        Page {
            status,
            headers,
            text: String::from_utf8_lossy(&bytes).into_owned(),
        }
    }

    /// GET `path` as the logged-in browser.
    pub(super) async fn get(&self, path: &str) -> Page {
        let mut request = get(path);
        request
            .headers_mut()
            .insert(header::COOKIE, self.cookie.parse().expect("cookie"));
        self.request(request).await
    }

    /// POST a form to `path` as the logged-in browser, with the page's CSRF token.
    pub(super) async fn post(&self, path: &str, fields: &[(&str, &str)]) -> Page {
        let mut all: Vec<(&str, &str)> = vec![("csrf", &self.csrf)];
        all.extend_from_slice(fields);
        self.post_raw(path, &all, true).await
    }

    /// POST a form, with the session cookie when `logged_in`, and only `fields`.
    pub(super) async fn post_raw(
        &self,
        path: &str,
        fields: &[(&str, &str)],
        logged_in: bool,
    ) -> Page {
        let body = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(fields)
            .finish();
        let mut request = Request::post(path)
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(Body::from(body))
            .expect("request");
        if logged_in {
            request
                .headers_mut()
                .insert(header::COOKIE, self.cookie.parse().expect("cookie"));
        }
        self.request(request).await
    }
}

impl Panel {
    /// Say `text` in the web chat as the owner (a `useChat` request) and read the whole
    /// streamed reply.
    pub(super) async fn chat(&self, text: &str) -> Page {
        let body = serde_json::json!({
            "id": "web",
            "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": text}]}],
            "trigger": "submit-message",
        });
        let request = Request::post("/api/chat")
            .header(header::COOKIE, &self.cookie)
            .header("x-csrf-token", &self.csrf)
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(body.to_string()))
            .expect("request");
        self.request(request).await
    }
}

pub(super) fn get(path: &str) -> Request<Body> {
    Request::get(path).body(Body::empty()).expect("request")
}

/// The CSRF token a page carries in its meta tag.
pub(super) fn meta_csrf(html: &str) -> String {
    let needle = "name=\"csrf-token\" content=\"";
    let at = html.find(needle).expect("csrf meta") + needle.len();
    html[at..].split('"').next().expect("token").to_string()
}
