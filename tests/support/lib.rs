pub mod conformance;
pub mod sim;
