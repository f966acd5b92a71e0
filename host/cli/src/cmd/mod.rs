//! One module per subcommand; each exposes `Args` and `async fn run(Args) -> anyhow::Result<ExitCode>`.

pub mod apiserver;
pub mod diff;
pub mod eval;
pub mod generate_key;
pub mod inspect;
pub mod new;
pub mod pull;
pub mod push;
pub mod rbac;
pub mod registry;
pub mod run;
pub mod sign;
pub mod simulate;
pub mod test;
pub mod verify;
