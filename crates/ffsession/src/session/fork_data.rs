//! The one place a tab or a window keeps a fork's data: the raw JSON of the
//! keys the forks registered (`crate::forks`), borrowed from the buffer.

use serde::de::Error;

/// A fork's keys of a tab or a window and the raw JSON of their values, as
/// the file has them (whitespace around a value left out). Empty in
/// Firefox's files; read by the fork's module, which decides what a value
/// of an unexpected type means (absent, as the model's own fields).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ForkData<'a> {
    raw: Vec<(&'static str, &'a str)>,
}

impl<'a> ForkData<'a> {
    /// The raw JSON value of `key`, if the object has it.
    pub fn get(&self, key: &str) -> Option<&'a str> {
        self.raw.iter().find(|(k, _)| *k == key).map(|&(_, v)| v)
    }

    /// No fork key in the object.
    pub fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }

    /// Every key kept and its raw value, in file order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, &'a str)> + '_ {
        self.raw.iter().copied()
    }

    /// Keep `raw` for `key`; a key given twice is an error, as a duplicate
    /// of any named field is.
    pub(crate) fn insert<E: Error>(&mut self, key: &'static str, raw: &'a str) -> Result<(), E> {
        if self.get(key).is_some() {
            return Err(E::duplicate_field(key));
        }
        self.raw.push((key, raw));
        Ok(())
    }
}
