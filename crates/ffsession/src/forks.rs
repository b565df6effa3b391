//! The keys Firefox's forks add to Firefox's own session objects, which
//! the session model keeps for them.
//!
//! The session model ([`crate::session`]) knows Firefox's keys only. A key
//! named here is kept, unread, as the raw JSON of its value in the tab's or
//! window's [`ForkData`](crate::session::ForkData); the fork's own module
//! reads it from there when asked. Every other key the model does not read
//! is skipped, as before, so a Firefox file costs nothing more. A next fork
//! adds its module and its keys here, and nothing in `session/`.
//!
//! A list of names rather than keeping every unknown key: a Firefox tab has
//! a dozen keys the model skips (form data, storage, attributes, ...), and
//! keeping them all would cost an allocation per tab in every reader.

/// Keys of a tab object a fork reads: Zen's space (`zenWorkspace`) and
/// essential flag (`zenEssential`), [`crate::zen::ZenTab`].
pub const TAB_KEYS: &[&str] = &["zenWorkspace", "zenEssential"];

/// Keys of a window object a fork reads: Zen's spaces (`spaces`),
/// [`crate::zen::ZenWindow`].
pub const WINDOW_KEYS: &[&str] = &["spaces"];

/// `key` as named in `keys`, if it is one of them.
#[inline]
pub(crate) fn find(keys: &'static [&'static str], key: &[u8]) -> Option<&'static str> {
    keys.iter().copied().find(|k| k.as_bytes() == key)
}
