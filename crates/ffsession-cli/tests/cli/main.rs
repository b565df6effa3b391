//! CLI tests: one test binary, each test in a sealed environment.

mod common;
mod convert;
mod corpus;
mod diff;
mod durability;
mod profiles;
mod read;
mod search;
mod store;
