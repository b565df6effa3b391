//! The names of Zen's spaces, for tab listings: a tab names its space by
//! uuid (`zenWorkspace`), the name is in a list of spaces.
//!
//! A Zen profile has that list twice over: in each window of Firefox's own
//! session file (`windows[].spaces`: Zen collects it into the state Firefox
//! writes, and reads it back from there) and in `zen-sessions.jsonlz4` of the
//! same save. The first list added for a uuid wins, so a caller adds the
//! lists of the same moment first, then older ones as a fallback; a uuid no
//! list names is shown as it is.

use std::borrow::Cow;
use std::collections::HashMap;

use super::{Space, ZenSessions, ZenWindow};
use crate::session::{Session, TabRecord};

/// Space names by uuid, borrowed from the parsed files (copied only where
/// the file escapes a character).
#[derive(Debug, Default)]
pub struct SpaceNames<'n> {
    names: HashMap<Cow<'n, str>, Cow<'n, str>>,
}

impl<'n> SpaceNames<'n> {
    /// The names of the spaces of a Zen sessions file.
    pub fn of_zen(zen: &'n ZenSessions<'_>) -> Self {
        let mut names = SpaceNames::default();
        names.add_spaces(&zen.spaces);
        names
    }

    /// The names of the spaces a Firefox session of a Zen profile lists in
    /// its windows (open ones first, then closed ones).
    pub fn of_session(session: &'n Session<'_>) -> Self {
        let mut names = SpaceNames::default();
        for w in session.windows.iter().chain(&session.closed_windows) {
            names.add_spaces(&w.zen_spaces());
        }
        names
    }

    /// Add the names of `spaces` whose uuid has none yet.
    pub fn add_spaces(&mut self, spaces: &[Space<'n>]) {
        for s in spaces {
            if let (Some(uuid), Some(name)) = (&s.uuid, &s.name) {
                self.names
                    .entry(uuid.clone())
                    .or_insert_with(|| name.clone());
            }
        }
    }

    /// Add the names of a Zen sessions file's spaces whose uuid has none yet.
    pub fn add_zen(&mut self, zen: &'n ZenSessions<'_>) {
        self.add_spaces(&zen.spaces);
    }

    /// No space named.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The name of the space `uuid`, or `uuid` itself when none is known.
    pub fn name<'s>(&self, uuid: impl Into<Cow<'s, str>>) -> Cow<'s, str>
    where
        'n: 's,
    {
        let uuid = uuid.into();
        match self.names.get(&*uuid) {
            Some(Cow::Borrowed(name)) => Cow::Borrowed(name),
            Some(Cow::Owned(name)) => Cow::Owned(name.clone()),
            None => uuid,
        }
    }

    /// `record` with its space's name in place of the uuid.
    pub fn resolve<'s>(&self, mut record: TabRecord<'s>) -> TabRecord<'s>
    where
        'n: 's,
    {
        record.space = record.space.map(|uuid| self.name(uuid));
        record
    }
}
