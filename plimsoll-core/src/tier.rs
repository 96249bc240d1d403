//! Isolation tiers: the load line painted on every answer.
//!
//! A tier is configuration plus the provider's startup proof. It is never
//! attestation: nothing here proves which kernel or hypervisor actually ran.

use std::fmt;
use std::str::FromStr;

/// How strong the wall around a run is, weakest first.
///
/// The order is total: `None < Process < Container < Kernel < Vm`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Isolation {
    /// Nothing runs (the disabled provider).
    None,
    /// An engine inside the daemon's own process (QuickJS on wasmtime).
    Process,
    /// A container sharing the host kernel (docker on runc, OpenShell).
    Container,
    /// A user-space kernel answers the guest's system calls (docker on verified runsc).
    Kernel,
    /// A hosted microVM with its own kernel (E2B, Docker Cloud Sandboxes).
    Vm,
}

impl Isolation {
    /// Every tier, weakest first.
    pub const ALL: [Isolation; 5] = [
        Isolation::None,
        Isolation::Process,
        Isolation::Container,
        Isolation::Kernel,
        Isolation::Vm,
    ];

    /// The wire name: `none`, `process`, `container`, `kernel` or `vm`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Isolation::None => "none",
            Isolation::Process => "process",
            Isolation::Container => "container",
            Isolation::Kernel => "kernel",
            Isolation::Vm => "vm",
        }
    }

    /// The one-letter mark (`·`, `P`, `C`, `K`, `V`).
    pub const fn mark(self) -> &'static str {
        match self {
            Isolation::None => "·",
            Isolation::Process => "P",
            Isolation::Container => "C",
            Isolation::Kernel => "K",
            Isolation::Vm => "V",
        }
    }

    /// Whether this tier is at least `floor`. `None` as a floor is met by every tier,
    /// but [`Floor`] never holds it.
    pub fn meets(self, floor: Floor) -> bool {
        match floor.0 {
            Some(f) => self >= f,
            None => true,
        }
    }
}

impl fmt::Display for Isolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A tier name that is not one of the five.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown isolation tier (want one of none, process, container, kernel, vm)")]
pub struct UnknownTier;

impl FromStr for Isolation {
    type Err = UnknownTier;
    /// Parses an exact lowercase tier name.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Isolation::ALL
            .into_iter()
            .find(|t| t.as_str() == s)
            .ok_or(UnknownTier)
    }
}

/// The weakest tier a caller accepts (`minimum_isolation`), or no floor.
///
/// `none` is never a floor: asking for "at least nothing" is a malformed request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct Floor(Option<Isolation>);

/// A floor that is not `""`, `process`, `container`, `kernel` or `vm`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("minimum isolation must be empty or one of process, container, kernel, vm")]
pub struct BadFloor;

impl Floor {
    /// No floor: every tier meets it.
    pub const NONE: Floor = Floor(None);

    /// Parses the wire form: `""` is no floor; `none` and unknown names are refused.
    pub fn parse(s: &str) -> Result<Floor, BadFloor> {
        if s.is_empty() {
            return Ok(Floor(None));
        }
        match s.parse::<Isolation>() {
            Ok(Isolation::None) | Err(_) => Err(BadFloor),
            Ok(t) => Ok(Floor(Some(t))),
        }
    }

    /// A floor at `tier`; `Isolation::None` gives no floor.
    pub fn at(tier: Isolation) -> Floor {
        if tier == Isolation::None {
            Floor(None)
        } else {
            Floor(Some(tier))
        }
    }

    /// The tier, if a floor is set.
    pub fn tier(self) -> Option<Isolation> {
        self.0
    }

    /// The stronger of two floors.
    pub fn max(self, other: Floor) -> Floor {
        Floor(self.0.max(other.0))
    }

    /// The wire form (`""` when no floor).
    pub fn as_str(self) -> &'static str {
        self.0.map(Isolation::as_str).unwrap_or("")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_and_names_round_trip() {
        for w in Isolation::ALL.windows(2) {
            assert!(w[0] < w[1]);
        }
        for t in Isolation::ALL {
            assert_eq!(t.as_str().parse::<Isolation>(), Ok(t));
        }
        assert!("Kernel".parse::<Isolation>().is_err());
    }

    #[test]
    fn floors() {
        assert_eq!(Floor::parse(""), Ok(Floor::NONE));
        assert_eq!(Floor::parse("none"), Err(BadFloor));
        assert_eq!(Floor::parse("VM"), Err(BadFloor));
        let k = Floor::parse("kernel").unwrap();
        assert!(Isolation::Vm.meets(k));
        assert!(Isolation::Kernel.meets(k));
        assert!(!Isolation::Container.meets(k));
        assert!(Isolation::None.meets(Floor::NONE));
        assert!(!Isolation::None.meets(Floor::parse("process").unwrap()));
        assert_eq!(Floor::parse("process").unwrap().max(k), k);
        assert_eq!(Floor::at(Isolation::None), Floor::NONE);
    }
}
