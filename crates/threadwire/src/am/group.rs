//! Active messages to every member of a group: the handler runs once per
//! member, at the member's node, and [`ActiveMessage::target`] says which
//! member (`AmAt` frames: the payload ends with the member's thread).

use super::{AmError, AmRequest, Handler};
use crate::Group;
use threadwire_wire::Payload;

impl Group {
    /// Runs `handler` once for every member of the group (the caller
    /// included), one-way, with a copy of `data`: at the member's node,
    /// with [`ActiveMessage::target`](super::ActiveMessage::target) the
    /// member. Messages go in rank order; back-pressure waits as
    /// [`Endpoint::am_send`](crate::Endpoint::am_send) does.
    ///
    /// # Errors
    ///
    /// The first member's failure, as [`Endpoint::am_send`](crate::Endpoint::am_send)
    /// gives it; members after it get nothing.
    pub fn am_send_all(&self, handler: &Handler, data: impl Into<Payload>) -> Result<(), AmError> {
        let data = data.into();
        let ep = self.endpoint();
        for member in self.members() {
            let copy = Payload::from_wire(data.format(), data.to_vec());
            ep.am_post(member.node, handler, 0, copy, Some(member.thread), true)?;
        }
        Ok(())
    }

    /// Sends `handler` a request for every member, as
    /// [`am_send_all`](Self::am_send_all) does, and returns the requests in
    /// rank order: each completes with its member's answer.
    pub fn am_request_all(&self, handler: &Handler, data: impl Into<Payload>) -> Vec<AmRequest> {
        let data = data.into();
        let ep = self.endpoint();
        self.members()
            .iter()
            .map(|member| {
                let copy = Payload::from_wire(data.format(), data.to_vec());
                ep.am_request_at(member.node, Some(member.thread), handler, copy)
            })
            .collect()
    }
}
