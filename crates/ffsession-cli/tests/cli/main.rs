//! CLI tests: one test binary, each test in a sealed environment.

mod common;
mod convert;
mod corpus;
mod diff;
mod durability;
mod profiles;
mod read;
mod rescue;
mod search;
mod store;
mod tidy;
