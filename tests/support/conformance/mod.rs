//! The differential conformance suite: request sequences written once as data
//! (`tests/conformance/*.yaml`) and run against the embedded API server and a
//! real kube-apiserver v1.20.2, comparing status codes, reasons, messages and
//! the fields controllers rely on.

pub mod compare;
pub mod matcher;
pub mod runner;
pub mod scenario;
pub mod suite;
pub mod transport;
pub mod vars;
