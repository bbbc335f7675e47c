//! `question {question, options?}`: the model asks the person and waits for the answer.
//! Who answers depends on where the conversation is:
//!
//! - a program driving it (`pincer agent`: `can_use_tool` with the answer in
//!   `updatedInput.answer`; runner: `user_question_request`; `pincer acp`: a permission
//!   request with one option per choice) or the REPL (a prompt): the pipeline asks and
//!   the answer is the call's result, without the tool running;
//! - a chat with buttons (Telegram, Discord, Slack), when there are choices: the
//!   question is posted with one button per choice, and the person who asked the turn
//!   answers by pressing one or by typing; the answer is the call's result;
//! - another chat, or a question without choices: the question is posted there, and
//!   the answer comes as the person's next message (the model is told to end its turn);
//! - nobody (`chat -m`, piped input, a scheduled run): an error saying so.

use std::sync::Arc;

use async_trait::async_trait;
use pincer_channels::approval::MAX_OPTIONS;
use pincer_channels::{OutboundBody, OutboundMessage};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::{Caller, Effects, ToolContext, ToolError, TypedTool};
use crate::outbox::Outbox;

pub const QUESTION: &str = "question";

/// Whether a question in this turn is answered through the pipeline (the approver of
/// the terminal: the REPL, or a host) rather than posted as a message.
pub fn answered_here(caller: &Caller) -> bool {
    caller.origin.answered_locally()
}

/// Whether the channel's approver asks this question (when it has one): always at
/// the terminal, and in a chat when there are choices to put on buttons.
pub fn asked_by_approver(caller: &Caller, args: &Value) -> bool {
    answered_here(caller) || !options(args).is_empty()
}

/// The question's choices.
pub fn options(args: &Value) -> Vec<String> {
    args["options"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

pub struct Question {
    pub outbox: Outbox,
}

impl Question {
    pub fn new(outbox: Outbox) -> Arc<Self> {
        Arc::new(Self { outbox })
    }
}

/// The question and its choices with every configured secret taken out: they are
/// shown to people as the model wrote them.
pub fn scrubbed(args: &Value, scrubber: &crate::scrub::Scrubber) -> Value {
    let mut args = args.clone();
    if let Some(question) = args["question"].as_str() {
        args["question"] = Value::String(scrubber.scrub(question).into_owned());
    }
    if let Some(options) = args["options"].as_array_mut() {
        for option in options.iter_mut() {
            if let Some(text) = option.as_str() {
                *option = Value::String(scrubber.scrub(text).into_owned());
            }
        }
    }
    args
}

/// The question as a person reads it: the text, then the choices numbered.
pub fn shown(args: &Value) -> String {
    layout(
        args["question"].as_str().unwrap_or_default(),
        &options(args),
    )
}

fn layout(question: &str, options: &[String]) -> String {
    let question = question.trim().to_string();
    let options: Vec<String> = options
        .iter()
        .enumerate()
        .map(|(n, o)| format!("{}. {o}", n + 1))
        .collect();
    if options.is_empty() {
        question
    } else {
        format!("{question}\n{}", options.join("\n"))
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QuestionArgs {
    question: String,
    options: Option<Vec<String>>,
}

#[async_trait]
impl TypedTool for Question {
    type Args = QuestionArgs;
    const NAME: &'static str = QUESTION;
    const EFFECTS: Effects = Effects::PLAN.union(Effects::SUBAGENT);

    fn description(&self) -> String {
        "Ask the user a question and wait for the answer; give options when the answer is one of a few.".into()
    }

    fn validate(&self, args: &QuestionArgs) -> Result<(), ToolError> {
        if args.options.as_ref().map_or(0, Vec::len) > MAX_OPTIONS {
            return Err(ToolError::new(format!(
                "at most {MAX_OPTIONS} options; ask a broader question, or one without options"
            )));
        }
        Ok(())
    }

    async fn run(&self, args: QuestionArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let question = args.question.as_str();
        if question.trim().is_empty() {
            return Err(ToolError::new("the question is empty"));
        }
        match &ctx.origin {
            Some(origin) if !answered_here(&ctx.caller) => {
                let message = OutboundMessage {
                    target: origin.clone(),
                    body: OutboundBody::Text(layout(
                        question,
                        args.options.as_deref().unwrap_or_default(),
                    )),
                    reply_to: None,
                    entry: None,
                };
                self.outbox.send_unkept(message).await.map_err(|_| {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_question_shown_to_people_carries_no_secret() {
        let secret = "sk-live-0123456789abcdef";
        let scrubber = crate::scrub::Scrubber::new(vec![secret.to_string()]);
        let args = json!({"question": format!("Is {secret} your key?"),
                          "options": [format!("yes, {secret}"), "no"]});
        let shown = scrubbed(&args, &scrubber).to_string();
        assert!(!shown.contains(secret), "{shown}");
        assert!(
            shown.contains("your key?") && shown.contains("\"no\""),
            "{shown}"
        );
    }
}
