//! The `greeter` seam: the interface the example greeter plugins provide and the consumer
//! injects. Provider and consumers depend on this crate, never on each other; the host checks
//! at inject time that both sides agree on its layout.
#![allow(unsafe_code, reason = "sabi_trait emits unsafe impls")]
#![allow(
    non_local_definitions,
    reason = "sabi_trait expands impls inside consts"
)]
#![allow(non_camel_case_types, reason = "sabi_trait generates `Greeter_TO`")]

use abi_stable::sabi_trait;
use abi_stable::std_types::{RBox, RStr, RString};

/// Greets someone.
#[sabi_trait]
pub trait Greeter: Send + Sync {
    fn greet(&self, who: RStr<'_>) -> RString;
}

/// The service value registered under `greeter`.
pub type GreeterService = Greeter_TO<'static, RBox<()>>;

pub use abi_stable::sabi_trait::TD_Opaque;

/// Greets with a fixed word: `<greeting>, <who>!`.
struct Greeting(String);

impl Greeter for Greeting {
    fn greet(&self, who: RStr<'_>) -> RString {
        format!("{}, {who}!", self.0).into()
    }
}

/// The `greeter` service value both example providers register.
pub fn service(greeting: String) -> GreeterService {
    Greeter_TO::from_value(Greeting(greeting), TD_Opaque)
}
