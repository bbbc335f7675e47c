//! IANA time zones (`Europe/Paris`, `UTC`) for chrono, from jiff's bundled copy of the tz
//! database.
//!
//! chrono-tz compiled every zone's history into tables of `&'static str` abbreviations.
//! The loader relocates those at every start, so 0.96 MiB of memory was dirtied before `main`
//! whichever zone the owner lives in. jiff keeps the same database as plain TZif bytes and
//! parses only the zones asked for. The bundled copy, not the system's
//! `/usr/share/zoneinfo`, is used, so a zone resolves the same on every machine and a name
//! never becomes a path.

use std::fmt;
use std::str::FromStr;
use std::sync::{Mutex, OnceLock, PoisonError};

use chrono::{FixedOffset, MappedLocalTime, NaiveDate, NaiveDateTime, Offset, TimeZone};
use jiff::tz::AmbiguousOffset;

/// A time zone by IANA name. `Copy`: each zone is read once and kept for the process's
/// life (at most the database's 600-odd zones, a few KiB each).
#[derive(Clone, Copy)]
pub struct Tz(&'static jiff::tz::TimeZone);

static UTC_ZONE: jiff::tz::TimeZone = jiff::tz::TimeZone::UTC;

impl Tz {
    /// Coordinated Universal Time.
    pub const UTC: Tz = Tz(&UTC_ZONE);

    /// The IANA name, as the database spells it (`Europe/Paris` for `europe/paris`).
    pub fn name(&self) -> &str {
        self.0.iana_name().unwrap_or("UTC")
    }

    fn offset_at(self, second: i64) -> TzOffset {
        let offset =
            jiff::Timestamp::from_second(second).map_or(0, |at| self.0.to_offset(at).seconds());
        TzOffset {
            tz: self,
            fixed: fixed(offset),
            at: second,
        }
    }

    fn local_offset(self, offset: jiff::tz::Offset, local: &NaiveDateTime) -> TzOffset {
        let second = local.and_utc().timestamp() - i64::from(offset.seconds());
        TzOffset {
            tz: self,
            fixed: fixed(offset.seconds()),
            at: second,
        }
    }
}

/// The database, read once.
fn database() -> &'static jiff::tz::TimeZoneDatabase {
    static DATABASE: OnceLock<jiff::tz::TimeZoneDatabase> = OnceLock::new();
    DATABASE.get_or_init(jiff::tz::TimeZoneDatabase::bundled)
}

fn fixed(seconds: i32) -> FixedOffset {
    // jiff's offsets stay under 26 hours, inside chrono's 24-hour bound in practice; a
    // zone past it would be a database error, read as UTC.
    FixedOffset::east_opt(seconds).unwrap_or(chrono::Utc.fix())
}

/// A name the database does not hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownTz(pub String);

impl fmt::Display for UnknownTz {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?} is not an IANA time zone name (e.g. Europe/Paris, UTC)",
            self.0
        )
    }
}

impl std::error::Error for UnknownTz {}

impl FromStr for Tz {
    type Err = UnknownTz;

    /// Case-insensitive, as the database compares names.
    fn from_str(name: &str) -> Result<Tz, UnknownTz> {
        let zone = database()
            .get(name)
            .map_err(|_| UnknownTz(name.to_owned()))?;
        let Some(canonical) = zone.iana_name() else {
            return Ok(Tz::UTC);
        };
        static ZONES: Mutex<Vec<&'static jiff::tz::TimeZone>> = Mutex::new(Vec::new());
        let mut zones = ZONES.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(&kept) = zones.iter().find(|z| z.iana_name() == Some(canonical)) {
            return Ok(Tz(kept));
        }
        let kept: &'static jiff::tz::TimeZone = Box::leak(Box::new(zone));
        zones.push(kept);
        Ok(Tz(kept))
    }
}

impl PartialEq for Tz {
    fn eq(&self, other: &Tz) -> bool {
        self.name() == other.name()
    }
}

impl Eq for Tz {}

impl fmt::Display for Tz {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Debug for Tz {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The offset in force in a zone at one instant (kept, so it prints the abbreviation).
#[derive(Clone, PartialEq, Eq)]
pub struct TzOffset {
    tz: Tz,
    fixed: FixedOffset,
    /// The instant, in seconds since the epoch.
    at: i64,
}

impl Offset for TzOffset {
    fn fix(&self) -> FixedOffset {
        self.fixed
    }
}

impl fmt::Display for TzOffset {
    /// The abbreviation in force (`CET`, `CEST`; `+03` where the zone has none).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match jiff::Timestamp::from_second(self.at) {
            Ok(at) => f.write_str(self.tz.0.to_offset_info(at).abbreviation()),
            Err(_) => write!(f, "{}", self.fixed),
        }
    }
}

impl fmt::Debug for TzOffset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self, self.fixed)
    }
}

impl TimeZone for Tz {
    type Offset = TzOffset;

    fn from_offset(offset: &TzOffset) -> Tz {
        offset.tz
    }

    fn offset_from_local_date(&self, local: &NaiveDate) -> MappedLocalTime<TzOffset> {
        self.offset_from_local_datetime(&local.and_time(chrono::NaiveTime::MIN))
    }

    /// One offset; both at a fold (the earlier instant first); none in a gap.
    fn offset_from_local_datetime(&self, local: &NaiveDateTime) -> MappedLocalTime<TzOffset> {
        let Ok(civil) = civil(local) else {
            return MappedLocalTime::Single(self.offset_at(local.and_utc().timestamp()));
        };
        match self.0.to_ambiguous_timestamp(civil).offset() {
            AmbiguousOffset::Unambiguous { offset } => {
                MappedLocalTime::Single(self.local_offset(offset, local))
            }
            AmbiguousOffset::Gap { .. } => MappedLocalTime::None,
            AmbiguousOffset::Fold { before, after } => MappedLocalTime::Ambiguous(
                self.local_offset(before, local),
                self.local_offset(after, local),
            ),
        }
    }

    fn offset_from_utc_date(&self, utc: &NaiveDate) -> TzOffset {
        self.offset_from_utc_datetime(&utc.and_time(chrono::NaiveTime::MIN))
    }

    fn offset_from_utc_datetime(&self, utc: &NaiveDateTime) -> TzOffset {
        self.offset_at(utc.and_utc().timestamp())
    }
}

/// chrono's wall-clock time as jiff's (years −9999..=9999; a leap second reads as :59).
fn civil(local: &NaiveDateTime) -> Result<jiff::civil::DateTime, jiff::Error> {
    use chrono::{Datelike, Timelike};
    let narrow = |n: u32| i8::try_from(n).unwrap_or(i8::MAX);
    let year = i16::try_from(local.year()).unwrap_or(i16::MAX);
    let nanos = i32::try_from(local.nanosecond().min(999_999_999)).unwrap_or(0);
    jiff::civil::DateTime::new(
        year,
        narrow(local.month()),
        narrow(local.day()),
        narrow(local.hour()),
        narrow(local.minute()),
        narrow(local.second()),
        nanos,
    )
}

#[cfg(test)]
mod tests {
    use chrono::{NaiveDate, TimeZone, Utc};

    use super::Tz;

    fn paris() -> Tz {
        "Europe/Paris".parse().unwrap()
    }

    #[test]
    fn names_parse_without_regard_to_case_and_unknown_ones_are_refused() {
        assert_eq!(paris().name(), "Europe/Paris");
        assert_eq!("europe/PARIS".parse::<Tz>().unwrap().name(), "Europe/Paris");
        assert_eq!("UTC".parse::<Tz>().unwrap(), Tz::UTC);
        let err = "Mars/Olympus".parse::<Tz>().unwrap_err();
        assert!(err.to_string().contains("Mars/Olympus"), "{err}");
        // Names are never paths: neither relative, absolute nor the system's own files.
        for path in [
            "../../etc/passwd",
            "/etc/localtime",
            "localtime",
            "posixrules",
        ] {
            assert!(path.parse::<Tz>().is_err(), "{path}");
        }
        assert!("".parse::<Tz>().is_err());
    }

    #[test]
    fn summer_and_winter_have_their_offsets_and_abbreviations() {
        let winter = Utc.with_ymd_and_hms(2026, 1, 15, 12, 0, 0).unwrap();
        let summer = Utc.with_ymd_and_hms(2026, 7, 15, 12, 0, 0).unwrap();
        let w = winter.with_timezone(&paris());
        let s = summer.with_timezone(&paris());
        assert_eq!(w.format("%H:%M %Z").to_string(), "13:00 CET");
        assert_eq!(s.format("%H:%M %Z %z").to_string(), "14:00 CEST +0200");
    }

    #[test]
    fn a_gap_has_no_instant_and_a_fold_has_two_earlier_first() {
        let tz = paris();
        // 2026-03-29 02:30 does not exist in Paris; 2026-10-25 02:30 happens twice.
        let gap = NaiveDate::from_ymd_opt(2026, 3, 29)
            .unwrap()
            .and_hms_opt(2, 30, 0)
            .unwrap();
        assert!(tz.from_local_datetime(&gap).single().is_none());
        assert!(tz.from_local_datetime(&gap).earliest().is_none());
        let fold = NaiveDate::from_ymd_opt(2026, 10, 25)
            .unwrap()
            .and_hms_opt(2, 30, 0)
            .unwrap();
        let chrono::LocalResult::Ambiguous(first, second) = tz.from_local_datetime(&fold) else {
            panic!("a fold is ambiguous");
        };
        assert!(first < second);
        assert_eq!(
            first.with_timezone(&Utc).to_rfc3339(),
            "2026-10-25T00:30:00+00:00"
        );
        assert_eq!(
            second.with_timezone(&Utc).to_rfc3339(),
            "2026-10-25T01:30:00+00:00"
        );
        assert_eq!(first.format("%Z").to_string(), "CEST");
        assert_eq!(second.format("%Z").to_string(), "CET");
    }
}
