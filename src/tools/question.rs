//! `question {question, options?}`: the model asks the person and waits for the answer.
//! Who answers depends on where the conversation is:
//!
//! - a program driving it (`pincer agent`: `can_use_tool` with the answer in
//!   `updatedInput.answer`; runner: `user_question_request`; `pincer acp`: a permission
//!   request with one option per choice) or the REPL (a prompt): the pipeline asks and
//!   the answer is the call's result, without the tool running;
//! - a chat: the question is posted there, and the answer comes as the person's next
//!   message (the model is told to end its turn);
//! - nobody (`chat -m`, piped input, a scheduled run): an error saying so.

use std::sync::Arc;

use async_trait::async_trait;
use pincer_channels::{OutboundBody, OutboundMessage, Target};
use serde_json::{Value, json};

use super::{Tool, ToolContext, ToolError, string_arg};
use crate::provider::ToolSpec;
use crate::scrub::Outbox;

pub const QUESTION: &str = "question";

/// Whether a question in this chat is answered through the pipeline (an approver of
/// the local channel: the REPL, or a host) rather than posted as a message.
pub fn answered_here(origin: &Target) -> bool {
    origin.channel == pincer_channels::terminal::CHANNEL
}

pub struct Question {
    pub outbox: Outbox,
}

impl Question {
    pub fn new(outbox: Outbox) -> Arc<Self> {
        Arc::new(Self { outbox })
    }
}

/// The question as a person reads it: the text, then the choices numbered.
pub fn shown(args: &Value) -> String {
    let question = args["question"]
        .as_str()
        .unwrap_or_default()
        .trim()
        .to_string();
    let options: Vec<String> = args["options"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .enumerate()
        .map(|(n, o)| format!("{}. {o}", n + 1))
        .collect();
    if options.is_empty() {
        question
    } else {
        format!("{question}\n{}", options.join("\n"))
    }
}

#[async_trait]
impl Tool for Question {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: QUESTION.into(),
            description: "Ask the user a question and wait for the answer; give options when the answer is one of a few.".into(),
            input_schema: json!({"type": "object", "properties": {
                "question": {"type": "string"},
                "options": {"type": "array", "items": {"type": "string"}}
            }, "required": ["question"]}),
        }
    }

    fn read_only(&self, _args: &Value) -> bool {
        true
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let question = string_arg(&args, "question")?;
        if question.trim().is_empty() {
            return Err(ToolError::new("the question is empty"));
        }
        match &ctx.origin {
            Some(origin) if !answered_here(origin) => {
                let message = OutboundMessage {
                    target: origin.clone(),
                    body: OutboundBody::Text(shown(&args)),
                    reply_to: None,
                };
                self.outbox.send(message).await.map_err(|_| {
                    ToolError::new("the question could not be sent: the assistant is shutting down")
                })?;
                Ok("Asked in the chat. End your turn now: the answer comes as the user's next message.".into())
            }
            // Here the pipeline asks whoever answers; reaching the tool means nobody could.
            _ => Err(ToolError::new(
                "nobody can answer a question here (a script or a scheduled run); decide for yourself, or say what you need to know",
            )),
        }
    }
}
