//! The published guest of one world, swapped atomically.
//!
//! A decision takes the current [`GuestPre`] (an `Arc`) and finishes on it even
//! if a newer one is published meanwhile. Hot swap from files, rollback history
//! and metrics build on this slot.

use std::sync::Arc;

use arc_swap::ArcSwap;

use crate::decide::RuntimeError;
use crate::guest::GuestPre;
use crate::world::World;

#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("guest {guest} is a {found} guest; this slot serves {expected}")]
    WrongWorld {
        guest: crate::GuestId,
        found: World,
        expected: World,
    },
    #[error("guest failed its instantiation check: {0}")]
    Unhealthy(#[from] RuntimeError),
}

/// The current guest of one world.
pub struct GuestSlot {
    world: World,
    current: ArcSwap<GuestPre>,
}

impl GuestSlot {
    pub fn new(guest: GuestPre) -> Self {
        Self {
            world: guest.world(),
            current: ArcSwap::from_pointee(guest),
        }
    }

    pub fn world(&self) -> World {
        self.world
    }

    /// The guest to run the next decision on.
    pub fn current(&self) -> Arc<GuestPre> {
        self.current.load_full()
    }

    /// Checks `guest` (same world, instantiates) and makes it current.
    /// Returns the guest it replaced.
    pub fn publish(&self, guest: GuestPre) -> Result<Arc<GuestPre>, RegistryError> {
        if guest.world() != self.world {
            return Err(RegistryError::WrongWorld {
                guest: guest.id().clone(),
                found: guest.world(),
                expected: self.world,
            });
        }
        guest.instantiate()?;
        Ok(self.current.swap(Arc::new(guest)))
    }
}
