//! What the planner learned, as the text it is saved in between
//! slurmctld's runs (`StateSaveLocation/fairmatch_state`): attained
//! service per fair-share party, and the learned run times with their
//! errors. The plugin writes it atomically (`crate::plugin`); this module
//! only turns it into text and back, and refuses a file that is torn or
//! altered rather than half-reading it.
//!
//! ```text
//! fairmatch-state 1
//! learned <latest end time of the finished jobs learned>
//! service <until> <n>            then n lines: s <party> <service>
//! history <n>                    then n lines: h <user> <name> <partition>
//!                                  <count> <mean> <judged> <error sum>
//! end <FNV-1a 64 of every byte before this line, in hex>
//! ```
//!
//! Fields are separated by tabs; a tab, newline or backslash in a name is
//! written `\t`, `\n`, `\\`. Numbers are written so they read back exactly.

use super::history::HistoryEntry;

/// The first line of a state file.
pub const HEADER: &str = "fairmatch-state 1";

/// What a state file holds.
#[derive(Clone, Debug, PartialEq)]
pub struct SavedState {
    /// Attained service per fair-share party, as of `service_until`.
    pub service: Vec<(String, f64)>,
    /// The time of that service (the last plan before the save).
    pub service_until: f64,
    /// Learned run times, least recently learned first.
    pub history: Vec<HistoryEntry>,
    /// The latest end time of the finished jobs learned (so none is
    /// learned twice).
    pub learned_through: f64,
}

/// The text of `state`.
pub fn encode(state: &SavedState) -> String {
    let mut out = String::new();
    out.push_str(HEADER);
    out.push('\n');
    out.push_str(&format!("learned\t{:?}\n", state.learned_through));
    out.push_str(&format!(
        "service\t{:?}\t{}\n",
        state.service_until,
        state.service.len()
    ));
    for (party, service) in &state.service {
        out.push_str(&format!("s\t{}\t{service:?}\n", escape(party)));
    }
    out.push_str(&format!("history\t{}\n", state.history.len()));
    for e in &state.history {
        out.push_str(&format!(
            "h\t{}\t{}\t{}\t{}\t{:?}\t{}\t{:?}\n",
            escape(&e.user),
            escape(&e.name),
            escape(&e.flavor),
            e.count,
            e.mean,
            e.judged,
            e.error_sum
        ));
    }
    let sum = fnv1a(out.as_bytes());
    out.push_str(&format!("end\t{sum:016x}\n"));
    out
}

/// The state in `text`, or what is wrong with it (`line N: ...`): a file
/// cut short, altered, or of another version is refused whole.
pub fn decode(text: &str) -> Result<SavedState, String> {
    let body_end = text
        .trim_end_matches('\n')
        .rfind('\n')
        .map(|i| i + 1)
        .ok_or("the file is empty or cut short")?;
    let (body, last) = text.split_at(body_end);
    let sum = last
        .trim_end_matches('\n')
        .strip_prefix("end\t")
        .ok_or("the file is cut short: no end line")?;
    if sum != format!("{:016x}", fnv1a(body.as_bytes())) {
        return Err("the checksum does not match: the file was cut short or altered".into());
    }
    let mut lines = body.lines().enumerate().map(|(i, l)| (i + 1, l));
    let mut next = |what: &str| lines.next().ok_or(format!("no {what} line"));
    let (n, header) = next("header")?;
    if header != HEADER {
        return Err(format!(
            "line {n}: not a fairmatch state file of this version: {header:?}"
        ));
    }
    let (n, line) = next("learned")?;
    let f = fields(line, "learned", 2).map_err(|e| format!("line {n}: {e}"))?;
    let learned_through = number(&f[1]).map_err(|e| format!("line {n}: {e}"))?;
    let (n, line) = next("service")?;
    let f = fields(line, "service", 3).map_err(|e| format!("line {n}: {e}"))?;
    let service_until = number(&f[1]).map_err(|e| format!("line {n}: {e}"))?;
    let services: usize = count(&f[2]).map_err(|e| format!("line {n}: {e}"))?;
    let mut service = Vec::with_capacity(services.min(1 << 16));
    for _ in 0..services {
        let (n, line) = next("service entry")?;
        let f = fields(line, "s", 3).map_err(|e| format!("line {n}: {e}"))?;
        service.push((
            f[1].clone(),
            number(&f[2]).map_err(|e| format!("line {n}: {e}"))?,
        ));
    }
    let (n, line) = next("history")?;
    let f = fields(line, "history", 2).map_err(|e| format!("line {n}: {e}"))?;
    let entries: usize = count(&f[1]).map_err(|e| format!("line {n}: {e}"))?;
    let mut history = Vec::with_capacity(entries.min(1 << 16));
    for _ in 0..entries {
        let (n, line) = next("history entry")?;
        let at = |e: String| format!("line {n}: {e}");
        let f = fields(line, "h", 8).map_err(at)?;
        history.push(HistoryEntry {
            user: f[1].clone(),
            name: f[2].clone(),
            flavor: f[3].clone(),
            count: count_u64(&f[4]).map_err(at)?,
            mean: number(&f[5]).map_err(at)?,
            judged: count_u64(&f[6]).map_err(at)?,
            error_sum: number(&f[7]).map_err(at)?,
        });
    }
    if let Some((n, _)) = lines.next() {
        return Err(format!("line {n}: more lines than the counts say"));
    }
    Ok(SavedState {
        service,
        service_until,
        history,
        learned_through,
    })
}

fn fields(line: &str, tag: &str, want: usize) -> Result<Vec<String>, String> {
    let f: Vec<String> = line.split('\t').map(unescape).collect();
    if f.first().map(String::as_str) != Some(tag) || f.len() != want {
        return Err(format!("expected a '{tag}' line of {want} fields"));
    }
    Ok(f)
}

fn number(s: &str) -> Result<f64, String> {
    s.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .ok_or(format!("'{s}' is not a finite number"))
}

fn count(s: &str) -> Result<usize, String> {
    s.parse().map_err(|_| format!("'{s}' is not a count"))
}

fn count_u64(s: &str) -> Result<u64, String> {
    s.parse().map_err(|_| format!("'{s}' is not a count"))
}

fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

/// FNV-1a, 64 bits: enough to tell a torn or edited file from a whole one.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> SavedState {
        SavedState {
            service: vec![("alice".into(), 12.5), ("b\tob\\x".into(), 0.1)],
            service_until: 1_700_000_000.25,
            history: vec![HistoryEntry {
                user: "alice".into(),
                name: "train\nlong".into(),
                flavor: "gpu".into(),
                count: 3,
                mean: 1.0 / 3.0,
                judged: 2,
                error_sum: 0.7,
            }],
            learned_through: 1_700_000_000.0,
        }
    }

    #[test]
    fn round_trips_exactly() {
        let text = encode(&state());
        assert_eq!(decode(&text), Ok(state()));
        let empty = SavedState {
            service: Vec::new(),
            service_until: 0.0,
            history: Vec::new(),
            learned_through: 0.0,
        };
        assert_eq!(decode(&encode(&empty)), Ok(empty));
    }

    #[test]
    fn a_torn_or_altered_file_is_refused_whole() {
        let text = encode(&state());
        for cut in 0..text.len() - 1 {
            assert!(decode(&text[..cut]).is_err(), "cut at {cut} was read");
        }
        let altered = text.replace("12.5", "99.5");
        assert!(decode(&altered).unwrap_err().contains("checksum"));
        assert!(decode("").is_err());
        assert!(decode("\u{0}\u{1}garbage\nend\t0\n").is_err());
    }
}
