//! The running host: what a tree is and how it is composed (`boot`), the mounted application
//! (`mounting`), following it as files change (`reload`), running or checking it (`run`), the
//! `host` service (`control`), the fiber table (`diagnostics`), the status socket (`status`) and
//! signals (`signals`), and the layered `.env` files read before all of it (`env_layers`).
//! Below it the runtime, the library loader and the built-in plugins; above it only the
//! command line.

pub mod boot;
pub mod control;
pub mod diagnostics;
pub mod env_layers;
mod mounting;
pub mod reload;
pub mod run;
pub mod signals;
pub mod status;

pub use mounting::App;
