//! CLI tests: one test binary, each test in a sealed environment.

mod check;
mod common;
mod convert;
mod corpus;
mod diff;
mod durability;
mod durability_ops;
mod errors;
mod extract;
mod family;
mod heal_durability;
mod help;
mod hints;
mod names;
#[cfg(target_os = "linux")]
mod notify;
mod outside;
mod platforms;
mod printed;
mod profiles;
mod promises;
mod read;
mod remote;
mod remote_common;
mod remote_errors;
mod remote_faults;
mod remote_kept;
mod remote_keys;
#[cfg(unix)]
mod remote_machines;
mod remote_prune;
mod remote_unreadable;
mod rescue;
mod roots;
mod safety;
mod search;
mod standalone;
mod stats;
#[cfg(target_os = "linux")]
mod status;
mod stderr;
mod store;
mod tidy;
mod ui;
mod ui_add;
mod ui_guard;
mod ui_meaning;
mod ui_page;
mod windows;
mod writers;
mod zen;
