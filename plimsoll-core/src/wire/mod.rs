//! The plimsoll.v1 wire: JSON messages (ProtoJSON), Connect error bodies and
//! their binary details.

pub mod connect;
pub mod json;
pub mod messages;

pub use messages::*;
