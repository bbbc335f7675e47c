//! When a scheduled job runs: parsing the `--cron` / `--every` / `--at` forms, their
//! stored form, and the next run after a given instant in an IANA time zone.
//!
//! Pure logic: no clock, no store, no I/O. Callers pass "now" and the job's creation time.
//!
//! Cron expressions are the standard 5 fields (`minute hour day month weekday`, `1-5` =
//! Monday–Friday, `0` or `7` = Sunday), evaluated by `croner` on local wall-clock time:
//! - a time skipped by a DST gap: an expression with one fixed minute and hour (`30 2 * * *`)
//!   runs at the first instant after the gap (03:00 that night in Europe/Paris); any other
//!   expression (`*/30 * * * *`, `30 2,14 * * *`) skips the missing times (croner's rule);
//! - a time repeated by a DST fold runs once, at its first instant (enforced here for every
//!   expression; croner alone would run non-fixed expressions on both instants).

use crate::tz::Tz;
use chrono::{DateTime, LocalResult, NaiveDateTime, TimeDelta, TimeZone, Timelike, Utc};
use croner::Cron;
use croner::errors::CronError;
use croner::parser::{CronParser, Seconds, Year};

const CRON_HINT: &str =
    "use 5 fields, minute hour day month weekday, e.g. \"30 8 * * 1-5\" for 8:30 on weekdays";
const STORED_TIME: &str = "%Y-%m-%dT%H:%M:%S";
/// Interval units, largest first: `every` reads them, `describe` writes them.
const UNIT_NAMES: [&str; 5] = ["w", "d", "h", "m", "s"];
const UNIT_SECS: [u64; 5] = [604_800, 86_400, 3600, 60, 1];
const WEEKDAYS: &str = "Sunday Monday Tuesday Wednesday Thursday Friday Saturday";

/// When a job runs. Parsed from the CLI/tool forms: --cron "EXPR" | --every 30m |
/// --at 2026-11-23T09:00[:SS], each with an IANA zone.
#[derive(Debug, Clone, PartialEq)]
pub enum Schedule {
    /// A validated 5-field expression, fields separated by single spaces.
    Cron { expr: String },
    /// A fixed interval of at least 60 seconds, counted from the job's creation.
    Every { secs: u64 },
    /// Once, at this wall-clock time in the job's zone.
    At { local: NaiveDateTime },
}

/// A schedule or zone that cannot be used; each message shows the right form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    #[error("`{expr}` is not a cron expression ({reason}): {CRON_HINT}")]
    BadCron { expr: String, reason: String },
    #[error("`{text}` is not an interval: use a number and a unit, e.g. 30m, 2h, 1d")]
    BadInterval { text: String },
    #[error("`{text}` is too short an interval: use at least 1m, e.g. 1m, 30m or 2h")]
    IntervalTooShort { text: String },
    #[error("`{name}` is not a time zone: use an IANA name such as Europe/Paris or UTC")]
    BadTimeZone { name: String },
    #[error("`{text}` is not a time: use YYYY-MM-DDTHH:MM[:SS], e.g. 2026-11-23T09:00")]
    BadTime { text: String },
    #[error("stored schedule `{0}` is unreadable: delete the job and add it again")]
    BadStored(String),
}

impl Schedule {
    /// A standard 5-field cron expression, validated now.
    pub fn cron(expr: &str) -> Result<Schedule, ScheduleError> {
        let expr = expr.split_whitespace().collect::<Vec<_>>().join(" ");
        let reason = match parse_cron(&expr) {
            Err(err) => cron_reason(&expr, &err),
            Ok(cron) => match cron.find_next_occurrence(&NaiveDateTime::default(), false) {
                Ok(_) => return Ok(Schedule::Cron { expr }),
                // A date that never exists (`0 0 30 2 *`) makes every search fail.
                Err(_) => "no date ever matches it".into(),
            },
        };
        Err(ScheduleError::BadCron { expr, reason })
    }

    /// An interval such as `30m`, `2h`, `1d` or `1h30m` (units s, m, h, d, w); at least 1m.
    pub fn every(text: &str) -> Result<Schedule, ScheduleError> {
        let bad = || ScheduleError::BadInterval { text: text.into() };
        let compact = text.to_ascii_lowercase().replace(' ', "");
        if compact.is_empty() || !compact.is_ascii() {
            return Err(bad());
        }
        let mut secs = 0u64;
        // "1h30m" → "1h", "30m"; a number without a unit fails on its last digit.
        for piece in compact.split_inclusive(|c: char| !c.is_ascii_digit()) {
            let (count, unit) = piece.split_at(piece.len() - 1);
            let unit = UNIT_NAMES.iter().position(|u| *u == unit).ok_or_else(bad)?;
            let count: u64 = count.parse().map_err(|_| bad())?;
            let part = count.checked_mul(UNIT_SECS[unit]).ok_or_else(bad)?;
            secs = secs.checked_add(part).ok_or_else(bad)?;
        }
        match secs {
            0..60 => Err(ScheduleError::IntervalTooShort { text: text.into() }),
            _ => Ok(Schedule::Every { secs }),
        }
    }

    /// A local time `YYYY-MM-DDTHH:MM[:SS]` (a space instead of `T` is accepted too).
    pub fn at(text: &str) -> Result<Schedule, ScheduleError> {
        let with_t = text.trim().replacen(' ', "T", 1);
        [STORED_TIME, "%Y-%m-%dT%H:%M"]
            .iter()
            .find_map(|format| NaiveDateTime::parse_from_str(&with_t, format).ok())
            .map(|local| Schedule::At { local })
            .ok_or_else(|| ScheduleError::BadTime { text: text.into() })
    }

    /// The stored kind: `cron`, `every` or `at`.
    pub fn kind(&self) -> &'static str {
        match self {
            Schedule::Cron { .. } => "cron",
            Schedule::Every { .. } => "every",
            Schedule::At { .. } => "at",
        }
    }

    /// The stored form: `30 8 * * 1-5`, `1800` (seconds), `2026-11-23T09:00:00`.
    pub fn expr(&self) -> String {
        match self {
            Schedule::Cron { expr } => expr.clone(),
            Schedule::Every { secs } => secs.to_string(),
            Schedule::At { local } => local.format(STORED_TIME).to_string(),
        }
    }

    /// Parses back what [`Schedule::kind`] and [`Schedule::expr`] stored.
    pub fn from_stored(kind: &str, expr: &str) -> Result<Schedule, ScheduleError> {
        let bad = || ScheduleError::BadStored(format!("{kind} {expr}"));
        match kind {
            "cron" => Schedule::cron(expr),
            "every" if expr.bytes().all(|b| b.is_ascii_digit()) => {
                Schedule::every(&format!("{expr}s")).map_err(|_| bad())
            }
            "at" => Schedule::at(expr).map_err(|_| bad()),
            _ => Err(bad()),
        }
    }

    /// The first run strictly after `after`, in zone `tz`; `None` if there is none.
    ///
    /// - Every: `anchor + k*secs` for the smallest `k >= 1` with a result after `after`
    ///   (`anchor` is when the job was created, so the first run is one interval later).
    /// - At: the local time in `tz` (the earlier instant at a DST fold, the first instant
    ///   after a DST gap) if it is after `after`.
    /// - Cron: the next matching local wall-clock time; DST rules in the module doc.
    pub fn next_after(
        &self,
        after: DateTime<Utc>,
        tz: Tz,
        anchor: DateTime<Utc>,
    ) -> Option<DateTime<Utc>> {
        match self {
            Schedule::Cron { expr } => next_cron(&parse_cron(expr).ok()?, after, tz),
            Schedule::Every { secs } => {
                let secs = i64::try_from(*secs).ok().filter(|secs| *secs > 0)?;
                let k = (after - anchor).num_seconds().max(0) / secs + 1;
                anchor.checked_add_signed(TimeDelta::try_seconds(k.checked_mul(secs)?)?)
            }
            Schedule::At { local } => resolve_local(*local, tz).filter(|when| *when > after),
        }
    }

    /// A short human description, e.g. "at 08:30 on Monday–Friday (cron 30 8 * * 1-5,
    /// Europe/Paris)", "every 30m", "once at 2026-11-23 09:00 Europe/Paris".
    pub fn describe(&self, tz: Tz) -> String {
        match self {
            Schedule::Cron { expr } => format!("{} (cron {expr}, {tz})", describe_cron(expr)),
            Schedule::Every { secs } => format!("every {}", format_interval(*secs)),
            Schedule::At { local } => {
                let secs = if local.second() == 0 { "" } else { ":%S" };
                let pattern = format!("%Y-%m-%d %H:%M{secs}");
                format!("once at {} {tz}", local.format(&pattern))
            }
        }
    }
}

/// An IANA time zone name such as `Europe/Paris` or `UTC`.
pub fn parse_tz(name: &str) -> Result<Tz, ScheduleError> {
    let bad = |_| ScheduleError::BadTimeZone { name: name.into() };
    name.trim().parse().map_err(bad)
}

/// Standard 5-field syntax only: no seconds, no year (croner allows both by default).
fn parse_cron(expr: &str) -> Result<Cron, CronError> {
    let parser = CronParser::builder().seconds(Seconds::Disallowed);
    parser.year(Year::Disallowed).build().parse(expr)
}

/// Why croner refused `expr`, naming the field when a number is out of its range.
fn cron_reason(expr: &str, err: &CronError) -> String {
    const NAMES: [&str; 5] = ["minute", "hour", "day", "month", "weekday"];
    const RANGES: [(u32, u32); 5] = [(0, 59), (0, 23), (1, 31), (1, 12), (0, 7)];
    let fields: Vec<&str> = expr.split_whitespace().collect();
    match fields.len() {
        5 => {}
        6 => return "it has 6 fields; a seconds field is not supported".into(),
        n => return format!("it has {n} fields, not 5"),
    }
    for ((field, name), (low, high)) in fields.iter().zip(NAMES).zip(RANGES) {
        let mut numbers = field.split(|c: char| !c.is_ascii_digit());
        let out_of_range = |n: &u32| *n < low || *n > high;
        if let Some(n) = numbers.find_map(|s| s.parse::<u32>().ok().filter(out_of_range)) {
            return format!("{name} {n} is out of range {low}–{high}");
        }
    }
    // Otherwise croner's own words, e.g. "Pattern contains illegal characters: ...".
    err.to_string()
}

/// croner's next match, skipping the second instant of a wall-clock time a fold repeats.
fn next_cron(cron: &Cron, after: DateTime<Utc>, tz: Tz) -> Option<DateTime<Utc>> {
    // A fold repeats at most a couple of hours: one skip per repeated minute suffices.
    const MAX_REPEATS_SKIPPED: usize = 3 * 60;
    let mut from = after.with_timezone(&tz);
    for _ in 0..MAX_REPEATS_SKIPPED {
        let next = cron.find_next_occurrence(&from, false).ok()?;
        match tz.from_local_datetime(&next.naive_local()) {
            LocalResult::Ambiguous(first, _) if first < next => from = next,
            _ => return Some(next.with_timezone(&Utc)),
        }
    }
    None
}

/// `local` in `tz`, resolved as croner resolves a fixed-time cron job (so `At` and `Cron`
/// agree): the earlier instant at a DST fold, the first instant after a DST gap.
fn resolve_local(local: NaiveDateTime, tz: Tz) -> Option<DateTime<Utc>> {
    let parser = CronParser::builder().seconds(Seconds::Required);
    let pattern = local.format("%S %M %H %d %m * %Y").to_string();
    let cron = parser.year(Year::Required).build().parse(&pattern).ok()?;
    // Any instant before `local` (offsets stay within a day) starts the search.
    let start = (local - TimeDelta::days(2)).and_utc().with_timezone(&tz);
    let found = cron.find_next_occurrence(&start, false).ok()?;
    Some(found.with_timezone(&Utc))
}

/// "at 08:30 on Monday–Friday" for common shapes, else croner's own description.
fn describe_cron(expr: &str) -> String {
    let fields: Vec<&str> = expr.split(' ').collect();
    let fixed = |i: usize| fields.get(i).and_then(|f| f.parse::<u32>().ok());
    let days = match fields.get(2..5) {
        Some(["*", "*", "*"]) => Some("every day".to_string()),
        Some(["*", "*", dow]) => weekday_names(dow).map(|names| format!("on {names}")),
        _ => None,
    };
    // Otherwise croner's words, e.g. "At 00:00, on day 1, in January."
    let croner = parse_cron(expr).map_or(String::new(), |c| c.describe());
    let croner = croner.trim_end_matches('.').replace("At every", "every");
    match (fixed(0), fixed(1), days) {
        (Some(m), Some(h), Some(days)) if m < 60 && h < 24 => format!("at {h:02}:{m:02} {days}"),
        _ => croner.replacen("At ", "at ", 1),
    }
}

/// "Monday–Friday", "Sunday", "Monday, Wednesday, Friday" for numeric weekday lists.
fn weekday_names(field: &str) -> Option<String> {
    let name = |text: &str| -> Option<&str> {
        let n: usize = text.parse().ok().filter(|n| *n <= 7)?;
        WEEKDAYS.split(' ').nth(n % 7)
    };
    let mut names = vec![];
    for item in field.split(',') {
        names.push(match item.split_once('-') {
            Some((a, b)) => format!("{}–{}", name(a)?, name(b)?),
            None => name(item)?.to_string(),
        });
    }
    Some(names.join(", "))
}

/// 5400 → "1h30m", 86400 → "1d".
fn format_interval(mut secs: u64) -> String {
    let mut out = String::new();
    for (unit, size) in UNIT_NAMES.into_iter().zip(UNIT_SECS) {
        if secs >= size {
            out.push_str(&format!("{}{unit}", secs / size));
            secs %= size;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paris() -> Tz {
        "Europe/Paris".parse().unwrap()
    }

    /// A UTC instant in 2026 from "MM-DD HH:MM".
    fn z(text: &str) -> DateTime<Utc> {
        format!("2026-{text}:00Z").parse().unwrap()
    }

    /// The `N` trimmed cells of a table row "a | b | c".
    fn cells<const N: usize>(row: &str) -> [&str; N] {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        cells.try_into().unwrap()
    }

    /// A schedule from "cron EXPR", "every TEXT" or "at TIME", or a zone from "tz NAME".
    fn parse(form: &str) -> Result<Schedule, ScheduleError> {
        match form.split_once(' ').unwrap() {
            ("cron", expr) => Schedule::cron(expr),
            ("every", text) => Schedule::every(text),
            ("at", text) => Schedule::at(text),
            (_, zone) => parse_tz(zone).map(|_| Schedule::Every { secs: 60 }),
        }
    }

    #[test]
    fn runs_follow_local_wall_clock_time() {
        // schedule | zone | created and searched from (UTC) | all runs up to the last (UTC)
        // Europe/Paris: 2026-03-29 02:00 CET → 03:00 CEST; 2026-10-25 03:00 CEST → 02:00 CET.
        let cases = [
            "cron 0 3 * * *     | UTC          | 05-01 03:00 | 05-02 03:00,05-03 03:00",
            // From Friday 09:00 local to Monday 08:30 local.
            "cron 30 8 * * 1-5  | Europe/Paris | 11-20 08:00 | 11-23 07:30",
            // 0 and 7 are Sunday: from Wednesday 2026-11-18 to Sunday.
            "cron 0 9 * * 0     | UTC          | 11-18 12:00 | 11-22 09:00",
            "cron 0 9 * * 7     | UTC          | 11-18 12:00 | 11-22 09:00",
            // Spring gap: a fixed 02:30 runs at 03:00 CEST (01:00 UTC), the end of the gap...
            "cron 30 2 * * *    | Europe/Paris | 03-28 00:00 | 03-28 01:30,03-29 01:00,03-30 00:30",
            // ...while a list of hours skips the missing 02:30.
            "cron 30 2,14 * * * | Europe/Paris | 03-29 00:00 | 03-29 12:30",
            // Autumn fold: 02:30 happens twice but runs once, at its first (CEST) instant.
            "cron 30 2 * * *    | Europe/Paris | 10-24 12:00 | 10-25 00:30,10-26 01:30",
            "cron 30 2,14 * * * | Europe/Paris | 10-25 00:00 | 10-25 00:30,10-25 13:30",
            "cron */30 2 * * *  | Europe/Paris | 10-24 12:00 | 10-25 00:00,10-25 00:30,10-26 01:00",
            // 08:00 stays 08:00 local, so its UTC instant moves by an hour.
            "cron 0 8 * * *     | Europe/Paris | 03-28 00:00 | 03-28 07:00,03-29 06:00",
            "cron 0 8 * * *     | Europe/Paris | 10-24 00:00 | 10-24 06:00,10-25 07:00",
            "every 30m          | Europe/Paris | 01-01 10:00 | 01-01 10:30,01-01 11:00",
            "at 2026-11-23T09:00 | Europe/Paris | 01-01 00:00 | 11-23 08:00",
            "at 2026-11-23T09:00 | Europe/Paris | 11-23 08:00 |",
            // In the spring gap: the end of the gap; in the autumn fold: the first 02:30.
            "at 2026-03-29T02:30:00 | Europe/Paris | 01-01 00:00 | 03-29 01:00",
            "at 2026-10-25 02:30 | Europe/Paris | 01-01 00:00 | 10-25 00:30",
        ];
        for case in cases {
            let [form, zone, from, runs] = cells(case);
            let (schedule, tz, from) = (parse(form).unwrap(), parse_tz(zone).unwrap(), z(from));
            let expected: Vec<_> = runs.split(',').filter(|r| !r.is_empty()).map(z).collect();
            let last = expected.last().copied().unwrap_or(from);
            let (mut got, mut after) = (vec![], from);
            while let Some(next) = schedule.next_after(after, tz, from).filter(|n| *n <= last) {
                got.push(next);
                after = next;
            }
            assert_eq!(got, expected, "{case}");
        }
        // An interval job that slept past several slots runs at the next one on its grid.
        let every = parse("every 30m").unwrap();
        let late = every.next_after(z("01-01 13:07"), paris(), z("01-01 10:00"));
        assert_eq!(late, Some(z("01-01 13:30")));
    }

    #[test]
    fn stored_form_round_trips_and_describes() {
        let cases = [
            "cron  | 30 8 * * 1-5 | at 08:30 on Monday–Friday (cron 30 8 * * 1-5, Europe/Paris)",
            "cron  | 0 9 * * 7 | at 09:00 on Sunday (cron 0 9 * * 7, Europe/Paris)",
            "every | 5400 | every 1h30m",
            "at    | 2026-11-23T09:00:00 | once at 2026-11-23 09:00 Europe/Paris",
        ];
        for case in cases {
            let [kind, expr, description] = cells(case);
            let s = Schedule::from_stored(kind, expr).unwrap();
            assert_eq!((s.kind(), s.expr().as_str()), (kind, expr));
            assert_eq!(s.describe(paris()), description);
        }
        assert_eq!(parse("every 1h30m"), Ok(Schedule::Every { secs: 5400 }));
        let spaced = parse("cron  30  8 * * 1-5 ").unwrap();
        assert_eq!(spaced.expr(), "30 8 * * 1-5");
        assert!(Schedule::from_stored("every", "30").is_err());
        assert!(Schedule::from_stored("weekly", "1").is_err());
    }

    #[test]
    fn bad_inputs_show_the_right_form() {
        // input | what the message says (parts separated by " & ")
        let cases = [
            "cron 0 25 * * *     | `0 25 * * *` is not a cron expression (hour 25 is out of range",
            "cron 0 0 3 * * *    | it has 6 fields; a seconds field is not supported",
            "cron 0 0 * * 8      | (weekday 8 is out of range",
            "cron 0 0 0 * *      | (day 0 is out of range",
            "cron 0 0 30 2 *     | (no date ever matches it)",
            "every fortnightly   | `fortnightly` is not an interval & e.g. 30m, 2h, 1d",
            "every 45s           | `45s` is too short an interval: use at least 1m",
            "at 2026-13-01T09:00 | `2026-13-01T09:00` is not a time & e.g. 2026-11-23T09:00",
            "tz Mars/Olympus     | `Mars/Olympus` is not a time zone & such as Europe/Paris or UTC",
        ];
        let cron_example = "e.g. \"30 8 * * 1-5\" for 8:30 on weekdays";
        for case in cases {
            let [input, wanted] = cells(case);
            let message = parse(input).unwrap_err().to_string();
            let example = input.starts_with("cron").then_some(cron_example);
            for part in wanted.split(" & ").chain(example) {
                assert!(message.contains(part), "{message:?} lacks {part:?}");
            }
        }
    }
}
