//! The shared-memory set-up as a state machine per peer: this node's side
//! of [`threadwire_transport::shm::setup`]'s steps 1–4, driven by the
//! setup messages as they arrive on the pair's TCP connection.
//!
//! 1. The pair's higher node, right after connecting, offers a region
//!    (`Idle` → `Offered`) or says it will not (`Idle` → `Done(reason)`).
//! 2. The lower node, on the offer, attaches and accepts (`Idle` →
//!    `Attached`) or declines (`Idle` → `Done(reason)`).
//! 3. The higher node, on the acceptance, completes its channel, installs
//!    it and sends `Ready` (`Offered` → `Done(None)`); on a decline it
//!    stays on TCP (`Offered` → `Done(reason)`).
//! 4. The lower node, on `Ready`, completes and installs its channel
//!    (`Attached` → `Done(None)`).
//!
//! Each channel is given a doorbell on the pair's TCP connection as it is
//! completed; it rings it itself from then on. Any other message in any
//! state is a protocol violation.

use super::Peer;
use crate::config::ChannelChoice;
use crate::lock;
use threadwire_transport::shm::setup::{self, AttachError, Attached, Offering, Pair, Setup};
use threadwire_transport::shm::{Doorbell, ShmChannel, ShmConfig};
use threadwire_transport::{Channel, ChannelError, Frame};

/// Where a pair stands in the shared-memory setup.
pub(super) enum SetupState {
    /// Nothing sent or received yet.
    Idle,
    /// This node offered a region (it is the pair's higher node).
    Offered(Offering),
    /// This node attached to the peer's region and waits for `Ready`.
    Attached(Attached),
    /// Finished: `Some(reason)` when the pair stays on TCP.
    Done(Option<String>),
}

/// What the setup needs to know of this node.
pub(crate) struct SetupContext<'a> {
    pub(crate) pair: Pair,
    pub(crate) choice: ChannelChoice,
    pub(crate) config: &'a ShmConfig,
}

/// A setup message this node cannot follow: a protocol violation.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ShmSetupError {
    #[error(transparent)]
    Message(#[from] setup::SetupMessageError),
    #[error("shared-memory channel: {0}")]
    Channel(std::io::Error),
    #[error("unexpected shared-memory setup message {0:?}")]
    Unexpected(Setup),
    #[error(transparent)]
    Send(ChannelError),
    #[error("no connection to the peer")]
    NotConnected,
}

/// Why this node declines an offer (step 2).
#[derive(Debug, thiserror::Error)]
enum Decline {
    #[error("THREADWIRE_CHANNEL=tcp")]
    ForcedTcp,
    #[error(transparent)]
    Attach(#[from] AttachError),
}

impl Peer {
    fn send_setup(&self, message: &Setup) -> Result<(), ShmSetupError> {
        let (header, bytes) = message.encode();
        self.send_on_tcp(&header, bytes)
            .map_err(|e| e.map_or(ShmSetupError::NotConnected, ShmSetupError::Send))
    }

    fn finish_setup(&self, state: &mut SetupState, outcome: Option<String>) {
        *state = SetupState::Done(outcome);
        self.open();
    }

    /// Step 1, on the pair's higher node right after connecting.
    pub(crate) fn offer_shm(&self, cx: &SetupContext<'_>) {
        let mut state = lock(&self.setup);
        let (message, next) = match cx.choice {
            ChannelChoice::Tcp => {
                let why = Decline::ForcedTcp.to_string();
                (Setup::NoOffer(why.clone()), SetupState::Done(Some(why)))
            }
            _ => match setup::offer(cx.pair, cx.config) {
                Ok((offering, message)) => (message, SetupState::Offered(offering)),
                Err(e) => {
                    let why = format!("cannot create a shared region: {e}");
                    (Setup::NoOffer(why.clone()), SetupState::Done(Some(why)))
                }
            },
        };
        if let Err(e) = self.send_setup(&message) {
            let Pair { me, peer, .. } = cx.pair;
            tracing::warn!("n{me}: shared-memory offer to n{peer}: {e}");
        }
        match next {
            SetupState::Done(why) => self.finish_setup(&mut state, why),
            other => *state = other,
        }
    }

    /// Steps 2–4 as the messages arrive; `Ok(true)` when a shared-memory
    /// channel was installed.
    pub(crate) fn on_shm_setup(
        &self,
        cx: &SetupContext<'_>,
        frame: Frame,
    ) -> Result<bool, ShmSetupError> {
        let message = Setup::decode(&frame.header, &frame.payload)?;
        let Pair { me, peer, .. } = cx.pair;
        let mut state = lock(&self.setup);
        let current = std::mem::replace(&mut *state, SetupState::Idle);
        match (current, message) {
            (SetupState::Idle, Setup::NoOffer(why)) => {
                self.finish_setup(&mut state, Some(format!("n{peer} offered none: {why}")));
            }
            (SetupState::Idle, Setup::Offer(offer)) if peer > me => {
                let attached = match cx.choice {
                    ChannelChoice::Tcp => Err(Decline::ForcedTcp),
                    _ => setup::attach(cx.pair, &offer, cx.config).map_err(Decline::from),
                };
                match attached {
                    Ok((attached, accept)) => {
                        self.send_setup(&accept)?;
                        *state = SetupState::Attached(attached);
                    }
                    Err(why) => {
                        let why = why.to_string();
                        self.send_setup(&Setup::Decline(why.clone()))?;
                        self.finish_setup(&mut state, Some(why));
                    }
                }
            }
            (SetupState::Offered(offering), Setup::Accept(accept)) => {
                let (channel, ready) = offering
                    .complete(&accept, self.doorbell()?)
                    .map_err(ShmSetupError::Channel)?;
                let installed = self.install_shm(cx, channel);
                self.send_setup(&ready)?;
                self.finish_setup(&mut state, None);
                return Ok(installed);
            }
            (SetupState::Offered(_), Setup::Decline(why)) => {
                self.finish_setup(&mut state, Some(format!("n{peer} declined: {why}")));
            }
            (SetupState::Attached(attached), Setup::Ready { can_read }) => {
                let channel = attached
                    .complete(can_read, self.doorbell()?)
                    .map_err(ShmSetupError::Channel)?;
                let installed = self.install_shm(cx, channel);
                self.finish_setup(&mut state, None);
                return Ok(installed);
            }
            (current, message) => {
                *state = current;
                return Err(ShmSetupError::Unexpected(message));
            }
        }
        Ok(false)
    }

    /// The shared-memory channel's way to wake the peer: a doorbell frame
    /// on the pair's TCP connection.
    fn doorbell(&self) -> Result<Doorbell, ShmSetupError> {
        let tcp = self
            .tcp()
            .and_then(Channel::as_tcp)
            .ok_or(ShmSetupError::NotConnected)?;
        Ok(Doorbell::tcp(tcp.clone()))
    }

    fn install_shm(&self, cx: &SetupContext<'_>, channel: ShmChannel) -> bool {
        let Pair { me, peer, .. } = cx.pair;
        if cx.config.cma && !channel.uses_cross_memory() {
            tracing::warn!(
                "n{me}: the kernel refuses cross-memory attach with n{peer}; \
                 large messages to it go in chunks through the shared rings"
            );
        }
        let installed = self.shm.set(Channel::Shm(channel)).is_ok();
        tracing::debug!("n{me}: n{peer} via {}", self.route());
        installed
    }
}
