//! `pincer acp` driven by the client side of the `agent-client-protocol` crate, as an
//! editor drives it: a session, a prompt whose tool call the client allows, one it
//! rejects, a cancel mid-stream, plan mode and its way out, and loading the session
//! back.

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    CancelNotification, ContentBlock, InitializeRequest, LoadSessionRequest, NewSessionRequest,
    PromptRequest, RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse,
    SelectedPermissionOutcome, SessionNotification, SessionUpdate, SetSessionModeRequest,
    StopReason, TextContent,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{
    AcpAgent, AcpAgentConfig, Agent, Client, on_receive_notification, on_receive_request,
};
use pincer_fakes::{FakeModel, Step};
use serde_json::json;

use crate::common::{TestHome, openai_config};

fn prompt(session: &agent_client_protocol::v1::schema::SessionId, text: &str) -> PromptRequest {
    PromptRequest::new(
        session.clone(),
        vec![ContentBlock::Text(TextContent::new(text.to_string()))],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_editor_prompts_approves_rejects_cancels_plans_and_loads() {
    let model = FakeModel::start().await;
    let home = TestHome::new();
    home.write_config(&openai_config(&model, ""));
    std::fs::create_dir_all(home.workspace()).expect("workspace");
    model.push_all([
        Step::tool_call("write_file", json!({"path": "a.txt", "content": "one"})),
        Step::text("Wrote a."),
        Step::tool_call("write_file", json!({"path": "b.txt", "content": "two"})),
        Step::text("Did not write b."),
        Step::slow_text("a long answer that the editor cancels before it ends", 300),
        Step::tool_call("exit_plan_mode", json!({"plan": "read, then write"})),
        Step::text("Planned."),
    ]);

    let updates: Arc<Mutex<Vec<SessionUpdate>>> = Arc::default();
    let asked: Arc<Mutex<Vec<RequestPermissionRequest>>> = Arc::default();
    let answers: Arc<Mutex<VecDeque<&'static str>>> =
        Arc::new(Mutex::new(["allow", "reject", "allow"].into()));
    let (seen, questions, script) = (
        Arc::clone(&updates),
        Arc::clone(&asked),
        Arc::clone(&answers),
    );
    let (chunk_tx, mut chunks) = tokio::sync::mpsc::unbounded_channel::<()>();

    let agent = AcpAgent::new(
        AcpAgentConfig::new(env!("CARGO_BIN_EXE_pincer"))
            .arg("--home")
            .arg(home.path().display().to_string())
            .arg("acp"),
    );
    let workspace = home.workspace();
    let updates_after = Arc::clone(&updates);
    Client
        .v1()
        .on_receive_notification(
            async move |notification: SessionNotification, _cx: ConnectionTo<Agent>| {
                if matches!(notification.update, SessionUpdate::AgentMessageChunk(_)) {
                    let _ = chunk_tx.send(());
                }
                seen.lock().unwrap().push(notification.update);
                Ok(())
            },
            on_receive_notification!(),
        )
        .on_receive_request(
            async move |request: RequestPermissionRequest,
                        responder: Responder<RequestPermissionResponse>,
                        _cx: ConnectionTo<Agent>| {
                let choice = script.lock().unwrap().pop_front().unwrap_or("reject");
                questions.lock().unwrap().push(request);
                responder.respond(RequestPermissionResponse::new(
                    RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(choice)),
                ))
            },
            on_receive_request!(),
        )
        .connect_with(agent, async |cx: ConnectionTo<Agent>| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            let session = cx
                .send_request(NewSessionRequest::new(workspace.clone()))
                .block_task()
                .await?;
            let id = session.session_id.clone();
            assert!(session.modes.is_some(), "the modes are offered");

            let first = cx.send_request(prompt(&id, "write a")).block_task().await?;
            assert_eq!(first.stop_reason, StopReason::EndTurn);
            let second = cx.send_request(prompt(&id, "write b")).block_task().await?;
            assert_eq!(second.stop_reason, StopReason::EndTurn);

            // Cancel once the answer is streaming.
            while chunks.try_recv().is_ok() {}
            let running = cx.send_request(prompt(&id, "a long one")).block_task();
            let cancel = async {
                let _ = chunks.recv().await;
                cx.send_notification(CancelNotification::new(id.clone()))
            };
            let (third, cancelled) = tokio::join!(running, cancel);
            cancelled?;
            assert_eq!(third?.stop_reason, StopReason::Cancelled);

            cx.send_request(SetSessionModeRequest::new(id.clone(), "plan"))
                .block_task()
                .await?;
            let fourth = cx.send_request(prompt(&id, "plan it")).block_task().await?;
            assert_eq!(fourth.stop_reason, StopReason::EndTurn);

            // Loading the session replays it.
            let before = updates_after.lock().unwrap().len();
            cx.send_request(LoadSessionRequest::new(id.clone(), workspace.clone()))
                .block_task()
                .await?;
            let replayed = updates_after.lock().unwrap()[before..].to_vec();
            assert!(
                replayed
                    .iter()
                    .any(|u| matches!(u, SessionUpdate::UserMessageChunk(_))),
                "{replayed:#?}"
            );
            Ok(())
        })
        .await
        .expect("the ACP conversation");

    assert!(home.workspace().join("a.txt").exists());
    assert!(
        !home.workspace().join("b.txt").exists(),
        "the rejected write did not run"
    );
    let asked = asked.lock().unwrap();
    assert_eq!(
        asked.len(),
        3,
        "two writes and leaving plan mode were asked"
    );
    assert!(
        format!("{:?}", asked[2]).contains("read, then write"),
        "{:?}",
        asked[2]
    );

    let updates = updates.lock().unwrap();
    // Every update of a tool call follows the call itself.
    let mut calls = HashSet::new();
    for update in updates.iter() {
        match update {
            SessionUpdate::ToolCall(call) => {
                calls.insert(call.tool_call_id.0.to_string());
            }
            SessionUpdate::ToolCallUpdate(update) => assert!(
                calls.contains(&*update.tool_call_id.0),
                "an update before its tool call: {update:?}"
            ),
            _ => {}
        }
    }
    let modes: Vec<String> = updates
        .iter()
        .filter_map(|u| match u {
            SessionUpdate::CurrentModeUpdate(mode) => Some(mode.current_mode_id.0.to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(
        modes,
        ["plan", "default"],
        "set_mode, then leaving plan mode"
    );
    let text: String = updates
        .iter()
        .filter_map(|u| match u {
            SessionUpdate::AgentMessageChunk(chunk) => match &chunk.content {
                ContentBlock::Text(text) => Some(text.text.clone()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert!(
        text.contains("Wrote a.") && text.contains("Did not write b."),
        "{text}"
    );
    assert!(text.contains("Planned."), "{text}");
}
