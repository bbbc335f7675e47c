//! How fast each model reads and writes, measured on its earlier calls: prompt tokens
//! read per second and output tokens written per second, per model label
//! ("local/qwen2.5-coder"). One table per provider by default; `ProviderSettings::pace`
//! can hand every provider the same one. The whole-call limit and the per-call
//! `max_tokens` are sized from it (`budget`); this file only measures and remembers.
//!
//! A speed falls at once when a call is slower than remembered and rises slowly when it
//! is faster, so a model that slowed down (a loaded machine, a cold cache) is not given
//! too little time on the strength of one quick call. Samples too small to time (a
//! prompt served almost wholly from the server's cache, a three-token reply) are
//! ignored: fixed overheads would pass for speed.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// Fewest prompt tokens read in one call for its reading time to count as a speed.
pub(crate) const MIN_PROMPT_SAMPLE: u64 = 64;
/// Fewest output tokens for their writing time to count as a speed.
pub(crate) const MIN_OUTPUT_SAMPLE: u64 = 16;
/// Share of a faster sample taken into the remembered speed.
const RISE: f64 = 0.3;

/// A model's measured speeds, in tokens per second; `None` until measured.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Speeds {
    pub prompt_per_sec: Option<f64>,
    pub output_per_sec: Option<f64>,
}

/// What one finished call showed.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Sample {
    /// Prompt tokens the server actually read (not those it had cached).
    pub prompt_tokens: u64,
    /// From sending the request to the first piece of the reply.
    pub reading: Duration,
    pub output_tokens: u64,
    /// From the first piece of the reply to its end.
    pub writing: Duration,
}

/// The table of speeds, by model label.
#[derive(Debug, Default)]
pub struct Pace {
    models: Mutex<HashMap<String, Speeds>>,
}

impl Pace {
    pub fn new() -> Self {
        Self::default()
    }

    /// What is known of `label`'s speeds.
    pub fn speeds(&self, label: &str) -> Speeds {
        let models = self.models.lock().unwrap_or_else(PoisonError::into_inner);
        models.get(label).copied().unwrap_or_default()
    }

    /// Learn from one finished call.
    pub fn record(&self, label: &str, sample: Sample) {
        let mut models = self.models.lock().unwrap_or_else(PoisonError::into_inner);
        let speeds = models.entry(label.to_string()).or_default();
        if sample.prompt_tokens >= MIN_PROMPT_SAMPLE {
            blend(
                &mut speeds.prompt_per_sec,
                rate(sample.prompt_tokens, sample.reading),
            );
        }
        if sample.output_tokens >= MIN_OUTPUT_SAMPLE {
            blend(
                &mut speeds.output_per_sec,
                rate(sample.output_tokens, sample.writing),
            );
        }
    }

    /// A call gave up after `waited` while the model was still reading about `tokens`
    /// prompt tokens: it reads no faster than `tokens / waited`.
    pub fn record_slow_read(&self, label: &str, tokens: u64, waited: Duration) {
        if tokens == 0 {
            return;
        }
        let mut models = self.models.lock().unwrap_or_else(PoisonError::into_inner);
        let speeds = models.entry(label.to_string()).or_default();
        blend(&mut speeds.prompt_per_sec, rate(tokens, waited));
    }
}

/// Tokens per second, or `None` when the time is too short to measure.
fn rate(tokens: u64, took: Duration) -> Option<f64> {
    let secs = took.as_secs_f64();
    (secs >= 0.001).then(|| tokens as f64 / secs)
}

/// Fold a new measurement into the remembered speed: a slower one replaces it, a
/// faster one moves it part of the way.
fn blend(speed: &mut Option<f64>, measured: Option<f64>) {
    let Some(measured) = measured.filter(|m| m.is_finite() && *m > 0.0) else {
        return;
    };
    *speed = Some(match *speed {
        Some(old) if measured > old => old + (measured - old) * RISE,
        _ => measured,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(prompt: u64, reading: u64, output: u64, writing: u64) -> Sample {
        Sample {
            prompt_tokens: prompt,
            reading: Duration::from_secs(reading),
            output_tokens: output,
            writing: Duration::from_secs(writing),
        }
    }

    #[test]
    fn speeds_are_measured_per_model() {
        let pace = Pace::new();
        assert_eq!(pace.speeds("local/a"), Speeds::default());
        pace.record("local/a", sample(2300, 100, 200, 40));
        let a = pace.speeds("local/a");
        assert_eq!(a.prompt_per_sec, Some(23.0));
        assert_eq!(a.output_per_sec, Some(5.0));
        assert_eq!(pace.speeds("local/b"), Speeds::default());
    }

    #[test]
    fn slower_calls_count_at_once_and_faster_ones_slowly() {
        let pace = Pace::new();
        pace.record("m", sample(1000, 10, 100, 10)); // 100 read/s, 10 written/s
        pace.record("m", sample(1000, 20, 100, 20)); // half as fast: taken whole
        assert_eq!(pace.speeds("m").prompt_per_sec, Some(50.0));
        assert_eq!(pace.speeds("m").output_per_sec, Some(5.0));
        pace.record("m", sample(1000, 5, 100, 5)); // 200/s and 20/s: 30% of the way
        assert_eq!(pace.speeds("m").prompt_per_sec, Some(50.0 + 150.0 * 0.3));
        assert_eq!(pace.speeds("m").output_per_sec, Some(5.0 + 15.0 * 0.3));
    }

    #[test]
    fn samples_too_small_to_time_are_ignored() {
        let pace = Pace::new();
        // llama.cpp served 2,927 of 2,928 prompt tokens from its cache: one token read
        // in 0.23 s is overhead, not a reading speed; four output tokens likewise.
        pace.record("m", sample(1, 1, 4, 1));
        assert_eq!(pace.speeds("m"), Speeds::default());
        pace.record("m", sample(MIN_PROMPT_SAMPLE, 0, MIN_OUTPUT_SAMPLE, 2));
        assert_eq!(
            pace.speeds("m").prompt_per_sec,
            None,
            "no time to divide by"
        );
        assert_eq!(pace.speeds("m").output_per_sec, Some(8.0));
    }

    #[test]
    fn a_read_that_ran_out_of_time_bounds_the_speed() {
        let pace = Pace::new();
        pace.record("m", sample(1000, 10, 0, 0)); // 100/s remembered
        pace.record_slow_read("m", 2400, Duration::from_secs(120)); // at most 20/s
        assert_eq!(pace.speeds("m").prompt_per_sec, Some(20.0));
    }
}
