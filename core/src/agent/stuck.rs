//! Stuck detection: a turn that goes round in circles is told so once, and stopped if
//! it goes on. Four patterns, each on exact repeats only, so a sequence whose results
//! change (polling a build until it passes) never trips it:
//!
//! - the same tool call with the same arguments getting the same result 3 times in a
//!   row;
//! - two calls taking turns (A, B, A, B, A, B), each with its same result;
//! - the same tool failing with the same error 3 times in the turn (arguments aside);
//! - the same assistant text 3 times in the turn.
//!
//! The first time a pattern shows, `Watch` answers `Verdict::Warn` (the loop tells the
//! model); any pattern showing again after that is `Verdict::Stop`.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

/// How many repeats make a pattern.
const REPEATS: usize = 3;

/// What the loop got stuck on, in words for the model and the person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stuck {
    SameCall { tool: String },
    Alternating { first: String, second: String },
    SameError { tool: String },
    SameText,
}

impl Stuck {
    /// "calling read_file with the same arguments and getting the same result".
    pub fn what(&self) -> String {
        match self {
            Stuck::SameCall { tool } => {
                format!("calling {tool} with the same arguments and getting the same result")
            }
            Stuck::Alternating { first, second } => {
                format!("alternating between {first} and {second} with the same results")
            }
            Stuck::SameError { tool } => format!("calling {tool} and getting the same error"),
            Stuck::SameText => "writing the same reply".to_string(),
        }
    }

    /// The note the model gets the first time.
    pub fn note(&self) -> String {
        format!(
            "[Pincer: you have been {} three times. Change your approach, or stop and tell the user what is blocking you.]",
            self.what()
        )
    }

    /// The one sentence the person gets when the turn is stopped.
    pub fn sentence(&self) -> String {
        format!(
            "I stopped because I was stuck {}, even after noticing it; tell me how you'd like me to go on.",
            self.what()
        )
    }
}

/// What the loop should do after recording a step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Fine,
    Warn(Stuck),
    Stop(Stuck),
}

/// One turn's memory of what it did, one step (model reply) at a time: calls made side
/// by side in one reply are one step, so a batch of different calls failing the same way
/// is never a loop.
#[derive(Debug, Default)]
pub(super) struct Watch {
    /// The calls of the step in progress: (tool, call hash, result hash).
    step: Vec<(String, u64, u64)>,
    /// Each finished step's signature and the tools it called.
    steps: Vec<(u64, String)>,
    /// (tool, error hash) → the steps it failed in so far, and the last of them.
    errors: HashMap<(String, u64), (usize, usize)>,
    texts: HashMap<u64, usize>,
    warned: bool,
}

fn hash_of(value: impl Hash) -> u64 {
    let mut hasher = DefaultHasher::new();
    value.hash(&mut hasher);
    hasher.finish()
}

impl Watch {
    /// A tool call of the current step and what it returned.
    pub(super) fn call(
        &mut self,
        tool: &str,
        args: &serde_json::Value,
        result: &str,
        is_error: bool,
    ) -> Verdict {
        let call = hash_of((tool, args.to_string()));
        self.step.push((tool.to_string(), call, hash_of(result)));
        if !is_error {
            return Verdict::Fine;
        }
        let step = self.steps.len();
        let (count, last) = self
            .errors
            .entry((tool.to_string(), hash_of(result)))
            .or_insert((0, usize::MAX));
        if *last == step {
            return Verdict::Fine; // this step already counted it
        }
        *last = step;
        *count += 1;
        if *count >= REPEATS {
            return self.verdict(Stuck::SameError {
                tool: tool.to_string(),
            });
        }
        Verdict::Fine
    }

    /// The step's calls are all in: look for a step repeated, or two taking turns.
    pub(super) fn end_step(&mut self) -> Verdict {
        if self.step.is_empty() {
            return Verdict::Fine;
        }
        let mut calls = std::mem::take(&mut self.step);
        calls.sort();
        let mut tools: Vec<&str> = calls.iter().map(|(t, ..)| t.as_str()).collect();
        tools.dedup();
        let tools = tools.join(", ");
        let signature = hash_of(calls.iter().map(|(_, c, r)| (c, r)).collect::<Vec<_>>());
        self.steps.push((signature, tools.clone()));
        let n = self.steps.len();
        if n >= REPEATS
            && self.steps[n - REPEATS..]
                .windows(2)
                .all(|w| w[0].0 == w[1].0)
        {
            return self.verdict(Stuck::SameCall { tool: tools });
        }
        let last = &self.steps[n.saturating_sub(2 * REPEATS)..];
        if last.len() == 2 * REPEATS
            && last[0].0 != last[1].0
            && last.iter().step_by(2).all(|s| s.0 == last[0].0)
            && last.iter().skip(1).step_by(2).all(|s| s.0 == last[1].0)
        {
            return self.verdict(Stuck::Alternating {
                first: last[0].1.clone(),
                second: last[1].1.clone(),
            });
        }
        Verdict::Fine
    }

    /// An assistant message's text.
    pub(super) fn text(&mut self, text: &str) -> Verdict {
        let text = text.trim();
        if text.is_empty() {
            return Verdict::Fine;
        }
        let count = self.texts.entry(hash_of(text)).or_default();
        *count += 1;
        if *count >= REPEATS {
            return self.verdict(Stuck::SameText);
        }
        Verdict::Fine
    }

    fn verdict(&mut self, stuck: Stuck) -> Verdict {
        if self.warned {
            Verdict::Stop(stuck)
        } else {
            self.warned = true;
            Verdict::Warn(stuck)
        }
    }
}

/// How often stuck detection fired since the process started, for `/status`.
#[derive(Debug, Default)]
pub struct StuckCount {
    pub warned: AtomicU64,
    pub stopped: AtomicU64,
}

impl StuckCount {
    pub fn record(&self, verdict: &Verdict) {
        match verdict {
            Verdict::Fine => {}
            Verdict::Warn(_) => {
                self.warned.fetch_add(1, Ordering::Relaxed);
            }
            Verdict::Stop(_) => {
                self.stopped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// (warned, stopped).
    pub fn get(&self) -> (u64, u64) {
        (
            self.warned.load(Ordering::Relaxed),
            self.stopped.load(Ordering::Relaxed),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Each call a step of its own; the verdict that step ends with.
    fn calls(watch: &mut Watch, steps: &[(&str, &str, &str, bool)]) -> Vec<Verdict> {
        steps
            .iter()
            .map(|(tool, arg, result, err)| {
                let called = watch.call(tool, &json!({ "a": arg }), result, *err);
                let ended = watch.end_step();
                if called == Verdict::Fine {
                    ended
                } else {
                    called
                }
            })
            .collect()
    }

    #[test]
    fn the_same_call_and_result_three_times_warns_then_stops() {
        let mut watch = Watch::default();
        let v = calls(
            &mut watch,
            &[
                ("read_file", "x", "same", false),
                ("read_file", "x", "same", false),
                ("read_file", "x", "same", false),
                ("read_file", "x", "same", false),
            ],
        );
        assert_eq!(v[0], Verdict::Fine);
        assert_eq!(v[1], Verdict::Fine);
        assert!(matches!(&v[2], Verdict::Warn(Stuck::SameCall { tool }) if tool == "read_file"));
        assert!(matches!(v[3], Verdict::Stop(_)));
    }

    #[test]
    fn an_alternation_is_caught_on_its_third_round() {
        let mut watch = Watch::default();
        let v = calls(
            &mut watch,
            &[
                ("a", "1", "r1", false),
                ("b", "2", "r2", false),
                ("a", "1", "r1", false),
                ("b", "2", "r2", false),
                ("a", "1", "r1", false),
                ("b", "2", "r2", false),
            ],
        );
        assert!(v[..5].iter().all(|v| *v == Verdict::Fine), "{v:?}");
        assert_eq!(
            v[5],
            Verdict::Warn(Stuck::Alternating {
                first: "a".into(),
                second: "b".into()
            })
        );
    }

    #[test]
    fn the_same_error_three_times_is_caught_whatever_the_arguments() {
        let mut watch = Watch::default();
        let v = calls(
            &mut watch,
            &[
                ("exec", "make", "error: no such file", true),
                ("exec", "make all", "error: no such file", true),
                ("exec", "make -C .", "error: no such file", true),
            ],
        );
        assert!(matches!(&v[2], Verdict::Warn(Stuck::SameError { tool }) if tool == "exec"));
    }

    #[test]
    fn the_same_text_three_times_is_caught() {
        let mut watch = Watch::default();
        assert_eq!(watch.text("Let me try again."), Verdict::Fine);
        assert_eq!(watch.text("Let me try again."), Verdict::Fine);
        assert_eq!(
            watch.text("Let me try again."),
            Verdict::Warn(Stuck::SameText)
        );
    }

    #[test]
    fn a_poll_whose_result_changes_is_never_stuck() {
        let mut watch = Watch::default();
        for n in 0..10 {
            let result = format!("build {n}0% done");
            let verdict = watch.call("exec", &json!({"command": "cat build.log"}), &result, false);
            assert_eq!(verdict, Verdict::Fine, "call {n}");
            assert_eq!(watch.end_step(), Verdict::Fine, "step {n}");
        }
        // Nor a list of different files read once each.
        for n in 0..10 {
            let verdict = watch.call("read_file", &json!({"path": n}), "same text", false);
            assert_eq!(verdict, Verdict::Fine);
            assert_eq!(watch.end_step(), Verdict::Fine);
        }
    }

    #[test]
    fn calls_made_side_by_side_in_one_reply_are_one_step() {
        let mut watch = Watch::default();
        // Eleven different fetches refused the same way, all in one reply.
        for n in 0..11 {
            let verdict = watch.call("web_fetch", &json!({"url": n}), "refused: private", true);
            assert_eq!(verdict, Verdict::Fine, "call {n}");
        }
        assert_eq!(watch.end_step(), Verdict::Fine);
        // The same error in two more replies is a third time.
        watch.call("web_fetch", &json!({"url": "x"}), "refused: private", true);
        watch.end_step();
        let third = watch.call("web_fetch", &json!({"url": "y"}), "refused: private", true);
        assert!(matches!(third, Verdict::Warn(Stuck::SameError { .. })));
    }
}
