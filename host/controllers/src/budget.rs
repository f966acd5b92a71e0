//! The byte budget of one guest decision: how much guest-chosen text the host
//! prints, publishes or keeps because of one decision (docs/src/security.md,
//! "Byte budget"). Each part has its own cap so that no part can starve another.

use std::io::Write;

use serde::Serialize;
use serde_json::{Value, json};

/// Longest Warning Event note: the `events.k8s.io/v1` limit on `note`.
pub const EVENT_NOTE_BYTES: usize = 1024;

/// Longest journaled decision (its `outcome` as JSON); a longer one is
/// journaled as its size and a cut prefix.
pub const JOURNAL_DECISION_BYTES: usize = 16 * 1024;

/// Longest shadow difference kept (both decisions as JSON); a longer side is
/// kept as its size and a cut prefix.
pub const SHADOW_DIFFERENCE_BYTES: usize = 16 * 1024;

/// Bytes of shadow differences kept by one tally, oldest dropped first.
pub const SHADOW_RETAINED_BYTES: usize = 256 * 1024;

/// Longest guest text one error carries (an error the guest reported, a
/// refusal, a trap message): errors reach log lines and Event notes.
pub const ERROR_TEXT_BYTES: usize = 1024;

/// Longest decision (as JSON) in one log line; a longer one is logged as its
/// size and a cut prefix.
pub const LOG_DECISION_BYTES: usize = 2 * 1024;

/// `text` as a field of a log line or an error: cut to [`ERROR_TEXT_BYTES`].
pub fn error_text(text: &str) -> String {
    cut(text, ERROR_TEXT_BYTES)
}

/// `decision` as a field of a log line: within [`LOG_DECISION_BYTES`].
pub fn logged<T: Serialize + ?Sized>(decision: &T) -> Value {
    bounded_json(decision, LOG_DECISION_BYTES)
}

/// `text` cut to at most `max` bytes on a character boundary, marked with `…`
/// when cut.
pub fn cut(text: &str, max: usize) -> String {
    const MARK: &str = "…";
    if text.len() <= max {
        return text.to_string();
    }
    let end = text.floor_char_boundary(max.saturating_sub(MARK.len()));
    format!("{}{MARK}", &text[..end])
}

/// `value` as JSON if it serializes to at most `max` bytes; otherwise its size
/// and a cut prefix. Memory stays within `max` whatever the value's size.
pub fn bounded_json<T: Serialize + ?Sized>(value: &T, max: usize) -> Value {
    let mut out = Capped {
        kept: Vec::new(),
        max,
        total: 0,
    };
    if let Err(err) = serde_json::to_writer(&mut out, value) {
        return json!({ "error": format!("not serializable: {err}") });
    }
    if out.total <= max
        && let Ok(whole) = serde_json::from_slice(&out.kept)
    {
        return whole;
    }
    let head = String::from_utf8_lossy(&out.kept);
    json!({ "bytes": out.total, "head": cut(&head, max / 4) })
}

/// Keeps the first `max` bytes written and counts them all.
struct Capped {
    kept: Vec<u8>,
    max: usize,
    total: usize,
}

impl Write for Capped {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let room = self.max.saturating_sub(self.kept.len());
        self.kept.extend_from_slice(&buf[..buf.len().min(room)]);
        self.total += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_cut_on_a_character_boundary_and_marked() {
        assert_eq!(cut("short", 10), "short");
        let long = "é".repeat(1000);
        let shown = cut(&long, EVENT_NOTE_BYTES);
        assert!(shown.len() <= EVENT_NOTE_BYTES, "{}", shown.len());
        assert!(shown.ends_with('…'));
    }

    #[test]
    fn small_json_is_kept_whole_and_large_json_as_its_size() {
        assert_eq!(bounded_json(&["a", "b"], 100), json!(["a", "b"]));
        let big = vec!["x".repeat(100); 1000];
        let summary = bounded_json(&big, 1024);
        assert_eq!(
            summary["bytes"],
            json!(serde_json::to_string(&big).unwrap().len())
        );
        assert!(summary.to_string().len() < 1024);
    }
}
