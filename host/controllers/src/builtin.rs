//! The controllers built into the host, in start order: the one list. Each
//! lives in its own folder; everything else reaches them through this list.

#[cfg(feature = "native")]
use std::sync::Arc;

#[cfg(feature = "native")]
use crate::decider::{Deciders, Slot};
use crate::reconciler::Builtin;
use crate::running::{Running, Shared, StartError, start};

/// One built-in controller: its name, the APIs it needs, how to start it.
pub struct Registration {
    pub name: &'static str,
    /// The WIT world its decisions come from.
    pub world: &'static str,
    pub apis: &'static [&'static str],
    pub(crate) start: fn(&Shared) -> Result<Running, StartError>,
    #[cfg(feature = "native")]
    native: fn(&mut Deciders),
}

impl Registration {
    pub const fn of<R: Builtin>() -> Self {
        Self {
            name: R::NAME,
            world: <R::World as rekon_contract::WitWorld>::NAME,
            apis: R::APIS,
            start: start::<R>,
            #[cfg(feature = "native")]
            native: insert_native::<R>,
        }
    }
}

/// The controllers, in start order. Adding a controller is one line here.
pub const CONTROLLERS: &[Registration] = &[
    Registration::of::<crate::pvc_protection::PvcProtection>(),
    Registration::of::<crate::resource_claim::ResourceClaimController>(),
    Registration::of::<crate::ephemeral_volume::EphemeralVolumeController>(),
];

/// The names of every controller.
pub fn names() -> impl Iterator<Item = &'static str> {
    CONTROLLERS.iter().map(|c| c.name)
}

/// Every controller's reference logic linked natively, each in its world's
/// slot (feature `native`: benches and tests).
#[cfg(feature = "native")]
pub fn native_deciders() -> Deciders {
    let mut deciders = Deciders::new();
    for controller in CONTROLLERS {
        (controller.native)(&mut deciders);
    }
    deciders
}

#[cfg(feature = "native")]
fn insert_native<R: Builtin>(deciders: &mut Deciders) {
    if let Some(native) = R::native() {
        deciders.insert(Arc::new(Slot::new(native)));
    }
}
