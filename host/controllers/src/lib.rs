//! The controllers: which events enqueue which keys, how a key becomes a decision
//! input, and how the decision's actions are validated and written.

pub mod cache;
pub mod decider;
pub mod journal;
pub mod writes;
