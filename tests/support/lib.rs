pub mod conformance;
