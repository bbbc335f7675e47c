//! Runaway replies stopped on the stream: a model that writes its chat template's
//! tokens as text, or repeats itself, is hung up on at once — one model call, no
//! "Continue" — and the person gets what came before plus one sentence saying why.

use pincer_fakes::{FakeModel, Step};

use crate::common::{TestHome, openai_config, wait_until};

/// Run one `chat -m` against `model`; the run, and the model's requests.
async fn chat(model: &FakeModel, step: Step) -> (crate::common::Run, usize) {
    let home = TestHome::new();
    home.write_config(&openai_config(model, ""));
    model.push(step);
    let run = home.run(&["chat", "-m", "hello"]);
    let transcript = home.transcript();
    assert!(!transcript.contains("<|im_"), "{transcript}");
    (run, model.requests().len())
}

/// Wait until the fake saw its client leave mid-stream; how many clients left so.
async fn hung_up(model: &FakeModel) -> u64 {
    wait_until("the client leaving mid-stream", async || {
        model.hung_up() > 0
    })
    .await;
    model.hung_up()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_that_writes_template_tokens_is_cut_at_the_first_one() {
    let model = FakeModel::start().await;
    // The loop issue 34 saw from a model without a fitting chat template, 2,000 times.
    let step = Step::runaway(
        "hello",
        "<|im_end|>\n<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\nhello",
    );
    let (run, requests) = chat(&model, step).await;
    assert!(run.ok(), "{run:?}");
    assert_eq!(run.stdout.trim(), "hello", "{run:?}");
    assert!(
        run.stderr.contains("Reply stopped") && run.stderr.contains("<|im_end|>"),
        "one sentence says why: {run:?}"
    );
    assert_eq!(requests, 1, "one model call, no \"Continue\"");
    assert_eq!(
        hung_up(&model).await,
        1,
        "the stream was cut, not read to its end"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_that_repeats_a_paragraph_is_cut_after_its_first_copy() {
    let model = FakeModel::start().await;
    let step = Step::runaway(
        "Here is the plan.\n\n",
        "I will water the basil every morning before work.\n\n",
    );
    let (run, requests) = chat(&model, step).await;
    assert!(run.ok(), "{run:?}");
    assert_eq!(
        run.stdout.trim(),
        "Here is the plan.\n\nI will water the basil every morning before work.",
        "{run:?}"
    );
    assert!(run.stderr.contains("repeating"), "{run:?}");
    assert_eq!(requests, 1, "one model call, no \"Continue\"");
    assert_eq!(hung_up(&model).await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_cut_by_its_token_limit_is_still_continued() {
    let model = FakeModel::start().await;
    let home = TestHome::new();
    home.write_config(&openai_config(&model, ""));
    model.push(Step::Truncated("The first half".into()));
    model.push(Step::text(" and the second half."));
    let run = home.run(&["chat", "-m", "tell me"]);
    assert!(run.ok(), "{run:?}");
    assert_eq!(model.requests().len(), 2);
    assert_eq!(model.hung_up(), 0);
}
