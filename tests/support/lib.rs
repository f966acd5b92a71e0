pub mod cli;
pub mod conformance;
pub mod objects;
pub mod sim;
