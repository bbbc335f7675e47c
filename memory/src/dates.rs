//! Relative dates ("next Thursday", "tomorrow", "in 3 days") written as absolute ones,
//! so a memory or a log line read weeks later still means the same day. Used on what
//! goes into memory files and daily logs; it rewrites text, it decides nothing.

use std::sync::OnceLock;

use chrono::{Datelike, Duration, NaiveDate, Weekday};
use regex::{Captures, Regex};

const WEEKDAYS: &str = "monday|tuesday|wednesday|thursday|friday|saturday|sunday";
const NUMBERS: &str = r"\d{1,3}|one|two|three|four|five|six|seven|eight|nine|ten|a|an";

fn pattern() -> Option<&'static Regex> {
    static PATTERN: OnceLock<Option<Regex>> = OnceLock::new();
    PATTERN.get_or_init(|| {
        let text = format!(
            r"(?i)\b(?:(?P<dat>the day after tomorrow)|(?P<dby>the day before yesterday)|(?P<rel>next|this|last|on|coming) (?P<wd>{WEEKDAYS})|in (?P<n>{NUMBERS}) (?P<unit>days?|weeks?)|(?P<ago_n>{NUMBERS}) (?P<ago_unit>days?|weeks?) ago|(?P<week>next|last|this) week|(?P<month>next|last|this) month|(?P<word>today|tonight|tomorrow|yesterday))\b"
        );
        // The pattern is a constant: if it did not compile, the tests would say so.
        Regex::new(&text).ok()
    })
    .as_ref()
}

/// `text` with its relative dates made absolute against `today`, and the changes made
/// ("next Thursday" → "Thursday 2026-11-26").
pub fn absolute(text: &str, today: NaiveDate) -> (String, Vec<(String, String)>) {
    let mut changes = Vec::new();
    let Some(pattern) = pattern() else {
        return (text.to_string(), changes);
    };
    let out = pattern.replace_all(text, |caps: &Captures<'_>| {
        let found = caps[0].to_string();
        let new = resolve(caps, today).unwrap_or_else(|| found.clone());
        if new != found {
            changes.push((found, new.clone()));
        }
        new
    });
    (out.into_owned(), changes)
}

fn resolve(caps: &Captures<'_>, today: NaiveDate) -> Option<String> {
    let day = |d: NaiveDate| d.format("%Y-%m-%d").to_string();
    if caps.name("dat").is_some() {
        return Some(day(today + Duration::days(2)));
    }
    if caps.name("dby").is_some() {
        return Some(day(today - Duration::days(2)));
    }
    if let (Some(rel), Some(wd)) = (caps.name("rel"), caps.name("wd")) {
        let weekday: Weekday = wd.as_str().parse().ok()?;
        let name = capitalised(wd.as_str());
        let date = match rel.as_str().to_ascii_lowercase().as_str() {
            "last" => previous(today, weekday),
            _ => following(today, weekday),
        };
        let on = if rel.as_str().eq_ignore_ascii_case("on") {
            "on "
        } else {
            ""
        };
        return Some(format!("{on}{name} {}", day(date)));
    }
    if let (Some(n), Some(unit)) = (caps.name("n"), caps.name("unit")) {
        return Some(day(today + span(n.as_str(), unit.as_str())?));
    }
    if let (Some(n), Some(unit)) = (caps.name("ago_n"), caps.name("ago_unit")) {
        return Some(day(today - span(n.as_str(), unit.as_str())?));
    }
    if let Some(which) = caps.name("week") {
        let monday = today - Duration::days(i64::from(today.weekday().num_days_from_monday()));
        let monday = match which.as_str().to_ascii_lowercase().as_str() {
            "next" => monday + Duration::days(7),
            "last" => monday - Duration::days(7),
            _ => monday,
        };
        return Some(format!("the week of {}", day(monday)));
    }
    if let Some(which) = caps.name("month") {
        let (mut year, mut month) = (today.year(), today.month() as i32);
        match which.as_str().to_ascii_lowercase().as_str() {
            "next" => month += 1,
            "last" => month -= 1,
            _ => {}
        }
        if month > 12 {
            (year, month) = (year + 1, 1);
        } else if month < 1 {
            (year, month) = (year - 1, 12);
        }
        let first = NaiveDate::from_ymd_opt(year, month as u32, 1)?;
        return Some(first.format("%B %Y").to_string());
    }
    let word = caps.name("word")?.as_str().to_ascii_lowercase();
    Some(match word.as_str() {
        "today" => day(today),
        "tonight" => format!("the night of {}", day(today)),
        "tomorrow" => day(today + Duration::days(1)),
        "yesterday" => day(today - Duration::days(1)),
        _ => return None,
    })
}

fn span(n: &str, unit: &str) -> Option<Duration> {
    let n: i64 = match n.to_ascii_lowercase().as_str() {
        "a" | "an" | "one" => 1,
        "two" => 2,
        "three" => 3,
        "four" => 4,
        "five" => 5,
        "six" => 6,
        "seven" => 7,
        "eight" => 8,
        "nine" => 9,
        "ten" => 10,
        digits => digits.parse().ok()?,
    };
    let days = if unit.to_ascii_lowercase().starts_with("week") {
        n * 7
    } else {
        n
    };
    Some(Duration::days(days))
}

/// The first `weekday` strictly after `today`.
fn following(today: NaiveDate, weekday: Weekday) -> NaiveDate {
    let ahead = (7 + weekday.num_days_from_monday() as i64
        - today.weekday().num_days_from_monday() as i64)
        % 7;
    today + Duration::days(if ahead == 0 { 7 } else { ahead })
}

/// The last `weekday` strictly before `today`.
fn previous(today: NaiveDate, weekday: Weekday) -> NaiveDate {
    let back = (7 + today.weekday().num_days_from_monday() as i64
        - weekday.num_days_from_monday() as i64)
        % 7;
    today - Duration::days(if back == 0 { 7 } else { back })
}

fn capitalised(word: &str) -> String {
    let lower = word.to_ascii_lowercase();
    let mut chars = lower.chars();
    match chars.next() {
        Some(first) => first.to_ascii_uppercase().to_string() + chars.as_str(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> String {
        // Sunday 22 November 2026.
        absolute(text, "2026-11-22".parse().unwrap()).0
    }

    #[test]
    fn relative_dates_become_absolute() {
        assert_eq!(at("dentist next Thursday"), "dentist Thursday 2026-11-26");
        assert_eq!(at("call mum tomorrow"), "call mum 2026-11-23");
        assert_eq!(at("Yesterday was rainy"), "2026-11-21 was rainy");
        assert_eq!(at("due in 3 days"), "due 2026-11-25");
        assert_eq!(at("due in two weeks"), "due 2026-12-06");
        assert_eq!(at("met 5 days ago"), "met 2026-11-17");
        assert_eq!(at("back last Friday"), "back Friday 2026-11-20");
        assert_eq!(at("party on Sunday"), "party on Sunday 2026-11-29");
        assert_eq!(at("trip next week"), "trip the week of 2026-11-23");
        assert_eq!(at("move next month"), "move December 2026");
        assert_eq!(at("nothing relative here"), "nothing relative here");
    }

    #[test]
    fn the_changes_are_reported() {
        let (_, changes) = absolute("see you tomorrow", "2026-11-22".parse().unwrap());
        assert_eq!(
            changes,
            [("tomorrow".to_string(), "2026-11-23".to_string())]
        );
    }
}
