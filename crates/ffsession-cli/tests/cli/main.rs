//! CLI tests: one test binary, each test in a sealed environment.

mod check;
mod common;
mod convert;
mod corpus;
mod diff;
mod durability;
mod durability_ops;
mod errors;
mod heal_durability;
mod help;
mod hints;
mod outside;
mod platforms;
mod profiles;
mod read;
mod remote;
mod rescue;
mod safety;
mod search;
mod standalone;
mod stats;
mod stderr;
mod store;
mod tidy;
mod windows;
mod writers;
