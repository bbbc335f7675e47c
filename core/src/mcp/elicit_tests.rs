use std::sync::Mutex;

use serde_json::json;

use super::*;

/// Answers from a script, in order, keeping every question and its choices.
struct Scripted {
    answers: Mutex<Vec<Approval>>,
    asked: Mutex<Vec<(String, Vec<String>)>>,
}

impl Scripted {
    fn new(answers: Vec<Approval>) -> Self {
        Self {
            answers: Mutex::new(answers.into_iter().rev().collect()),
            asked: Mutex::new(Vec::new()),
        }
    }

    fn asked(&self) -> Vec<(String, Vec<String>)> {
        self.asked.lock().unwrap().clone()
    }
}

#[async_trait]
impl Ask for Scripted {
    async fn ask(&self, question: String, options: Vec<String>) -> Approval {
        self.asked.lock().unwrap().push((question, options));
        self.answers
            .lock()
            .unwrap()
            .pop()
            .unwrap_or(Approval::Unavailable("no more answers".into()))
    }
}

fn said(text: &str) -> Approval {
    Approval::Answered(text.into())
}

fn request(params: Value) -> ElicitRequestParams {
    serde_json::from_value(params).unwrap()
}

fn defaults_form() -> ElicitRequestParams {
    request(json!({
        "mode": "form",
        "message": "Test client default value handling",
        "requestedSchema": { "type": "object", "properties": {
            "name": { "type": "string", "description": "User name", "default": "John Doe" },
            "age": { "type": "integer", "description": "User age", "default": 30 },
            "score": { "type": "number", "default": 95.5 },
            "status": { "type": "string", "enum": ["active", "inactive", "pending"], "default": "active" },
            "verified": { "type": "boolean", "default": true }
        }, "required": [] }
    }))
}

#[tokio::test]
async fn each_field_is_asked_with_its_default_first() {
    // A host answers with a choice's label (the terminal turns "1" into the first).
    let labels = [
        "John Doe (default)",
        "30 (default)",
        "95.5 (default)",
        "active (default)",
        "yes (default)",
    ];
    let owner = Scripted::new(labels.iter().map(|l| said(l)).collect());
    let result = answer("conf", defaults_form(), &owner).await;
    assert_eq!(result.action, ElicitationAction::Accept);
    assert_eq!(
        result.content.unwrap(),
        json!({"name": "John Doe", "age": 30, "score": 95.5, "status": "active", "verified": true})
    );
    let asked = owner.asked();
    assert_eq!(asked.len(), 5);
    for (n, label) in labels.iter().enumerate() {
        assert_eq!(asked[n].1[0], *label);
    }
    assert!(
        asked[0]
            .0
            .starts_with("MCP server conf asks: Test client default value handling\n(1 of 5) name — User name [text]"),
        "{}",
        asked[0].0
    );
    assert_eq!(
        asked[3].1,
        ["active (default)", "inactive", "pending", "Decline"]
    );
    assert_eq!(asked[4].1, ["yes (default)", "no", "Decline"]);
}

#[tokio::test]
async fn typed_answers_are_read_as_the_field_type_and_asked_again_when_they_do_not_fit() {
    let owner = Scripted::new(vec![
        said("Ana"),
        said("thirty"),
        said("31"),
        said("7"),
        said("Pending"),
        said("no"),
    ]);
    let result = answer("conf", defaults_form(), &owner).await;
    assert_eq!(
        result.content.unwrap(),
        json!({"name": "Ana", "age": 31, "score": 7.0, "status": "pending", "verified": false})
    );
    let asked = owner.asked();
    assert!(
        asked[2].0.starts_with(
            "That answer does not fit: a whole number is needed. MCP server conf asks:"
        ),
        "{}",
        asked[2].0
    );
}

#[tokio::test]
async fn a_no_declines_and_no_answer_cancels() {
    let declined = Scripted::new(vec![said("Ana"), said("decline")]);
    let result = answer("conf", defaults_form(), &declined).await;
    assert_eq!(result.action, ElicitationAction::Decline);
    assert_eq!(result.content, None);

    let refused = Scripted::new(vec![Approval::Refused("the host said no".into())]);
    let result = answer("conf", defaults_form(), &refused).await;
    assert_eq!(result.action, ElicitationAction::Decline);

    let gone = Scripted::new(vec![said("Ana")]);
    let result = answer("conf", defaults_form(), &gone).await;
    assert_eq!(result.action, ElicitationAction::Cancel);
    assert_eq!(gone.asked().len(), 2);

    let stubborn = Scripted::new((0..5).map(|_| said("lots")).collect());
    let form = request(json!({"message": "How many?", "requestedSchema": {
        "type": "object", "properties": { "n": { "type": "integer" } }, "required": ["n"] }}));
    let result = answer("conf", form, &stubborn).await;
    assert_eq!(result.action, ElicitationAction::Cancel);
    assert_eq!(stubborn.asked().len(), TRIES);
    assert_eq!(
        stubborn.asked()[0].1,
        ["Decline"],
        "a required field has no Skip"
    );
}

#[tokio::test]
async fn an_optional_field_without_a_default_can_be_skipped() {
    let owner = Scripted::new(vec![said("skip"), said("b, A")]);
    let form = request(json!({"message": "Details", "requestedSchema": {
        "type": "object", "properties": {
            "nick": { "type": "string", "title": "Nickname" },
            "tags": { "type": "array", "items": { "anyOf": [
                { "const": "a", "title": "A" }, { "const": "b", "title": "B" } ] } }
        } }}));
    let result = answer("conf", form, &owner).await;
    assert_eq!(result.action, ElicitationAction::Accept);
    assert_eq!(result.content.unwrap(), json!({"tags": ["b", "a"]}));
    let asked = owner.asked();
    assert_eq!(asked[0].1, ["Skip", "Decline"]);
    assert!(asked[1].0.ends_with("Choices: A, B"), "{}", asked[1].0);
}

#[tokio::test]
async fn the_servers_text_is_shown_escaped() {
    let owner = Scripted::new(vec![said("x")]);
    let form = request(
        json!({"message": "Pay \u{202E}001$ \u{1b}[2Jnow", "requestedSchema": {
        "type": "object", "properties": { "memo": { "type": "string", "title": "Memo\u{200B}" } } }}),
    );
    answer("shop", form, &owner).await;
    let question = &owner.asked()[0].0;
    assert!(
        question.starts_with(
            "MCP server shop asks: Pay \\u{202e}001$ \\u{1b}[2Jnow\nMemo\\u{200b} [text]"
        ),
        "{question}"
    );
    assert!(!question.contains('\u{202E}') && !question.contains('\u{1b}'));
}

#[tokio::test]
async fn a_link_is_shown_with_its_host_and_only_http_links_are_asked_about() {
    let owner = Scripted::new(vec![said(OPEN)]);
    let link = request(json!({"mode": "url", "message": "Sign in to GitHub",
        "url": "https://github.com/login/device?code=1", "elicitationId": "e1"}));
    let result = answer("gh", link, &owner).await;
    assert_eq!(result.action, ElicitationAction::Accept);
    let (question, options) = &owner.asked()[0];
    assert!(
        question.contains("https://github.com/login/device?code=1"),
        "{question}"
    );
    assert!(question.contains("It goes to github.com."), "{question}");
    assert_eq!(options, &[OPEN, DECLINE]);

    let no = Scripted::new(vec![said("Decline")]);
    let link = request(
        json!({"mode": "url", "message": "m", "url": "https://x.example/", "elicitationId": "e2"}),
    );
    assert_eq!(
        answer("gh", link, &no).await.action,
        ElicitationAction::Decline
    );

    let nobody = Scripted::new(vec![]);
    let script = request(
        json!({"mode": "url", "message": "m", "url": "javascript:alert(1)", "elicitationId": "e3"}),
    );
    assert_eq!(
        answer("gh", script, &nobody).await.action,
        ElicitationAction::Decline
    );
    assert!(nobody.asked().is_empty());
}
