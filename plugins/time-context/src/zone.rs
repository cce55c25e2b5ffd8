//! Wall-clock time in a named zone, from the system's zone files (TZif, `/usr/share/zoneinfo`)
//! without a time library: the offset in force at an instant is that of the last transition
//! before it. Limits, said plainly: a "slim" zone file that leaves future transitions to its
//! footer rule is read as if its last listed offset held on; a zone with no file reads as UTC
//! (and is named so).

use std::path::{Path, PathBuf};

/// Why a zone cannot be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ZoneError {
    #[error("`{0}` is not a time zone name")]
    BadName(String),
    #[error("time zone `{name}`: no zone file {path}: {error}")]
    Unreadable {
        name: String,
        path: String,
        error: std::io::Error,
    },
    #[error("time zone `{0}`: not a zone file")]
    NotAZoneFile(String),
}

/// A zone: its name and its transitions (`(from, offset)`, seconds), sorted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Zone {
    pub(crate) name: String,
    /// Offset before the first transition (or always, with none).
    initial: i64,
    transitions: Vec<(i64, i64)>,
}

impl Zone {
    pub(crate) fn utc() -> Self {
        Self {
            name: "UTC".to_owned(),
            initial: 0,
            transitions: Vec::new(),
        }
    }

    /// The zone named `name` (an IANA name such as `Europe/Berlin`), from `root`.
    pub(crate) fn named(root: &Path, name: &str) -> Result<Self, ZoneError> {
        let safe = !name.is_empty()
            && !name.starts_with('/')
            && name
                .split('/')
                .all(|part| !part.is_empty() && part != "." && part != "..");
        if !safe {
            return Err(ZoneError::BadName(name.to_owned()));
        }
        let path = root.join(name);
        let bytes = std::fs::read(&path).map_err(|error| ZoneError::Unreadable {
            name: name.to_owned(),
            path: path.display().to_string(),
            error,
        })?;
        let (initial, transitions) =
            parse(&bytes).ok_or_else(|| ZoneError::NotAZoneFile(name.to_owned()))?;
        Ok(Self {
            name: name.to_owned(),
            initial,
            transitions,
        })
    }

    /// The process's zone: `TZ` when it names a zone, else what `/etc/localtime` links to,
    /// else UTC.
    pub(crate) fn local(root: &Path) -> Self {
        let from_tz = std::env::var("TZ")
            .ok()
            .map(|tz| tz.trim_start_matches(':').to_owned())
            .filter(|tz| !tz.is_empty());
        let from_link = std::fs::read_link("/etc/localtime")
            .ok()
            .and_then(|target| {
                let target: PathBuf = target;
                let text = target.to_string_lossy().into_owned();
                text.split_once("zoneinfo/")
                    .map(|(_, name)| name.to_owned())
            });
        from_tz
            .into_iter()
            .chain(from_link)
            .find_map(|name| Self::named(root, &name).ok())
            .unwrap_or_else(Self::utc)
    }

    /// The offset from UTC at `seconds` since the epoch.
    pub(crate) fn offset_at(&self, seconds: i64) -> i64 {
        match self
            .transitions
            .partition_point(|(from, _)| *from <= seconds)
        {
            0 => self.initial,
            at => self.transitions[at - 1].1,
        }
    }

    /// `2026-12-02T10:40:05+01:00[Europe/Berlin]`, for `millis` since the epoch.
    pub(crate) fn format(&self, millis: i64) -> String {
        let seconds = millis.div_euclid(1000);
        let offset = self.offset_at(seconds);
        let local = seconds + offset;
        let (days, in_day) = (local.div_euclid(86_400), local.rem_euclid(86_400));
        let (year, month, day) = civil(days);
        let sign = if offset < 0 { '-' } else { '+' };
        let abs = offset.abs();
        format!(
            "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}{sign}{:02}:{:02}[{}]",
            in_day / 3600,
            in_day % 3600 / 60,
            in_day % 60,
            abs / 3600,
            abs % 3600 / 60,
            self.name
        )
    }
}

/// Year, month, day of `days` since 1970-01-01 (Howard Hinnant's civil-from-days).
fn civil(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

fn be32(bytes: &[u8], at: usize) -> Option<i64> {
    let slice: [u8; 4] = bytes.get(at..at + 4)?.try_into().ok()?;
    Some(i64::from(i32::from_be_bytes(slice)))
}

fn be64(bytes: &[u8], at: usize) -> Option<i64> {
    let slice: [u8; 8] = bytes.get(at..at + 8)?.try_into().ok()?;
    Some(i64::from_be_bytes(slice))
}

/// The initial offset and the transitions of a TZif file (the 64-bit block when there is one).
fn parse(bytes: &[u8]) -> Option<(i64, Vec<(i64, i64)>)> {
    if bytes.get(..4)? != b"TZif" {
        return None;
    }
    let counts = |at: usize| -> Option<[usize; 6]> {
        let mut out = [0; 6];
        for (index, slot) in out.iter_mut().enumerate() {
            *slot = usize::try_from(be32(bytes, at + 20 + index * 4)?).ok()?;
        }
        Some(out)
    };
    let [isut, isstd, leap, time, types, chars] = counts(0)?;
    let version = *bytes.get(4)?;
    let (start, width, [_, _, leap, time, types, _]) = match version {
        b'2'..=b'9' => {
            let first = 44 + time * 5 + types * 6 + chars + leap * 8 + isstd + isut;
            (first + 44, 8, counts(first)?)
        }
        _ => (44, 4, [isut, isstd, leap, time, types, chars]),
    };
    let _ = leap;
    let read = |at: usize| match width {
        8 => be64(bytes, at),
        _ => be32(bytes, at),
    };
    let indexes = start + time * width;
    let infos = indexes + time;
    let offset_of = |index: usize| be32(bytes, infos + index * 6);
    let mut transitions = Vec::with_capacity(time);
    for n in 0..time {
        let from = read(start + n * width)?;
        let index = usize::from(*bytes.get(indexes + n)?);
        if index >= types {
            return None;
        }
        transitions.push((from, offset_of(index)?));
    }
    // The first standard-time type holds before the first transition (type 0 by convention).
    let initial = offset_of(0)?;
    Some((initial, transitions))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_and_offsets() {
        assert_eq!(civil(0), (1970, 1, 1));
        assert_eq!(civil(20_424), (2025, 12, 2));
        assert_eq!(civil(-1), (1969, 12, 31));
        assert_eq!(
            Zone::utc().format(1_764_672_005_123),
            "2025-12-02T10:40:05+00:00[UTC]"
        );
        let root = Path::new("/usr/share/zoneinfo");
        if let Ok(berlin) = Zone::named(root, "Europe/Berlin") {
            // Winter (CET, +1) and summer (CEST, +2).
            assert_eq!(berlin.offset_at(1_764_672_005), 3600);
            assert_eq!(berlin.offset_at(1_751_328_000), 7200);
            assert!(
                berlin
                    .format(1_764_672_005_000)
                    .starts_with("2025-12-02T11:40:05+01:00")
            );
        }
        assert!(Zone::named(root, "../etc/passwd").is_err());
    }
}
