//! The plimsoll.v1 wire: JSON messages (ProtoJSON), Connect error bodies and
//! their binary details.

pub mod connect;
/// The ProtoJSON rules (a leaf module, re-exported here where the messages are).
pub use crate::json;
pub mod messages;

pub use messages::*;
