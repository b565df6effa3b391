//! The backup store: snapshots of session files, stored once, catalogued in SQLite.
//!
//! (Being built; see issue "Rotating, verified backups and safe restore".)
