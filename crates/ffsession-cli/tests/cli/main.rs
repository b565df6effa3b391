//! CLI tests: one test binary, each test in a sealed environment.

mod check;
mod common;
mod convert;
mod corpus;
mod diff;
mod durability;
mod durability_ops;
mod heal_durability;
mod outside;
mod profiles;
mod read;
mod remote;
mod rescue;
mod safety;
mod search;
mod standalone;
mod store;
mod tidy;
mod writers;
