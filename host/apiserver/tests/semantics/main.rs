//! One test per row of `spec/apiserver-semantics.md` (rows 1–13, 15–22, 24), over real HTTP.
//! Raw requests where the exact response matters; the kube client where that is how rekon
//! uses the server.

#[path = "../support/mod.rs"]
mod support;

mod deletes;
mod patches;
mod reads;
mod robustness;
mod watches;
mod writes;
