//! The byte budget of one guest decision: how much guest-chosen text the host
//! prints, publishes or keeps because of one decision (docs/src/security.md,
//! "Byte budget"). Each part has its own cap so that no part can starve another.

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
