// SPDX-License-Identifier: GPL-2.0

//! One port on which cepm owns the CM class: its MAD agent, as far as senders are concerned,
//! and its traffic counters.

use kernel::{
    new_spinlock,
    prelude::*,
    rbtree::{
        RBTree,
        RBTreeNodeReservation, //
    },
    sync::{
        atomic::{
            Atomic,
            Relaxed, //
        },
        Arc, SpinLock,
    },
};

mod sidr_answers;

use sidr_answers::SidrAnswers;

use crate::{
    cep::Cep,
    context::Cm,
    proto::{
        mad::{
            AttrId,
            MadHeader,
            MAD_SIZE, //
        },
        sidr_rep::SidrRep,
        timing::RetryTimer,
        wire,
    },
    recv,
    shim::{
        AgentRef,
        AgentRole,
        AhInfo,
        AttachedAgent,
        DeviceName,
        MadHandler,
        NetId,
        OutstandingSend,
        ReceivedMad,
        SendOwner, //
    },
    tables::PeerId,
    uapi, //
};

/// Number of per-attribute counters: every CM attribute ID is below this.
const ATTR_SLOTS: usize = uapi::CEPM_ATTR_SLOTS as usize;

/// One counter per attribute ID. Relaxed atomics: each is an independent statistic.
struct AttrCounters([Atomic<u64>; ATTR_SLOTS]);

impl AttrCounters {
    const fn new() -> Self {
        Self([const { Atomic::new(0) }; ATTR_SLOTS])
    }

    /// The counter for `attr_id`, if it has a slot.
    fn get(&self, attr_id: u16) -> Option<&Atomic<u64>> {
        self.0.get(usize::from(attr_id))
    }

    fn snapshot(&self) -> [u64; ATTR_SLOTS] {
        let mut out = [0; ATTR_SLOTS];
        for (dst, src) in out.iter_mut().zip(self.0.iter()) {
            *dst = src.load(Relaxed);
        }
        out
    }
}

/// A port's agents, and the CEPs whose peers are reached through it.
struct Agents {
    cm: Option<AttachedAgent>,
    send_only: Option<AttachedAgent>,
    /// Every CEP whose peer is reached through this port, by comm ID. Recorded under this
    /// lock when the peer is attached, so that device removal ([`CmPort::release_users`])
    /// finds every one to tell; `None` from then on, and no peer can be attached here any
    /// more. (They hold no address handle: each send makes its own.)
    users: Option<RBTree<u32, Arc<Cep>>>,
}

impl Default for Agents {
    fn default() -> Self {
        Self {
            cm: None,
            send_only: None,
            users: Some(RBTree::new()),
        }
    }
}

impl Agents {
    fn slot(&mut self, role: AgentRole) -> &mut Option<AttachedAgent> {
        match role {
            AgentRole::Cm => &mut self.cm,
            AgentRole::SendOnly => &mut self.send_only,
        }
    }
}

/// A CM port of a managed device.
#[pin_data]
pub(crate) struct CmPort {
    /// The CM the port feeds.
    cm: Arc<Cm>,
    /// The device's name: as added, then as renamed (`CmDevice::rename`).
    #[pin]
    device_name: SpinLock<DeviceName>,
    num: u32,
    /// The device's node GUID, the CA GUID our CM messages carry.
    ca_guid: u64,
    /// The CA's local ACK delay exponent.
    ack_delay: u8,
    /// The agents, while registered: the CM agent and the send-only agent. Senders take
    /// this lock, so none is mid-send when an agent goes away.
    #[pin]
    agents: SpinLock<Agents>,
    /// The SIDR_REPs sent lately, for the retries of requests whose answer was lost.
    #[pin]
    sidr_answers: SpinLock<SidrAnswers>,
    rx: AttrCounters,
    /// Attribute ID at or above [`ATTR_SLOTS`].
    rx_other_attr: Atomic<u64>,
    /// Shorter than a whole MAD (256 bytes): no header, or cut short.
    rx_malformed: Atomic<u64>,
    /// A whole MAD, but not a valid CM message.
    rx_invalid: Atomic<u64>,
    rx_duplicates: Atomic<u64>,
    tx: AttrCounters,
    tx_errors: Atomic<u64>,
}

impl CmPort {
    /// A port with no agent yet and all counters at zero.
    pub(crate) fn new(
        cm: Arc<Cm>,
        device_name: DeviceName,
        num: u32,
        ca_guid: u64,
        ack_delay: u8,
    ) -> Result<Arc<Self>> {
        let sidr_answers = SidrAnswers::new()?;
        Arc::pin_init(
            pin_init!(Self {
                cm,
                device_name <- new_spinlock!(device_name, "CmPort::device_name"),
                num,
                ca_guid,
                ack_delay,
                agents <- new_spinlock!(Agents::default(), "CmPort::agents"),
                sidr_answers <- new_spinlock!(sidr_answers, "CmPort::sidr_answers"),
                rx: AttrCounters::new(),
                rx_other_attr: Atomic::new(0),
                rx_malformed: Atomic::new(0),
                rx_invalid: Atomic::new(0),
                rx_duplicates: Atomic::new(0),
                tx: AttrCounters::new(),
                tx_errors: Atomic::new(0),
            }),
            GFP_KERNEL,
        )
    }

    /// The CM the port feeds.
    pub(crate) fn cm(&self) -> &Arc<Cm> {
        &self.cm
    }

    /// The port number on its device.
    pub(crate) fn num(&self) -> u32 {
        self.num
    }

    /// The name of the port's device, as it is now called.
    pub(crate) fn device_name(&self) -> DeviceName {
        *self.device_name.lock()
    }

    /// The device is now called `name`.
    pub(crate) fn set_device_name(&self, name: DeviceName) {
        *self.device_name.lock() = name;
    }

    /// The CA GUID of this port's device.
    pub(crate) fn ca_guid(&self) -> u64 {
        self.ca_guid
    }

    /// The CA's local ACK delay exponent.
    pub(crate) fn ack_delay(&self) -> u8 {
        self.ack_delay
    }

    /// The TID of a request from the CEP with comm ID `local_id` (Linux's `cm_form_tid`:
    /// the agent's high bits, then the comm ID).
    pub(crate) fn tid(&self, local_id: u32) -> u64 {
        let hi = self.with_agent(|a| Ok(a.hi_tid())).unwrap_or(0);
        (u64::from(hi) << 32) | u64::from(local_id)
    }

    /// Sends `mad` (attribute `attr`) once to the peer `to` describes; may be called under a
    /// spinlock. Failures are counted, not returned: the protocol recovers from a lost MAD by
    /// retrying.
    pub(crate) fn send_once(&self, to: &AhInfo, mad: &[u8; MAD_SIZE], attr: AttrId) {
        match self.with_agent(|agent| agent.send_once(to, mad, false)) {
            Ok(()) => self.count_tx(attr),
            Err(_) => self.count_tx_error(),
        }
    }

    /// The CM agent, or `ENODEV` once the device is going away.
    fn with_agent<T>(&self, f: impl FnOnce(AgentRef<'_>) -> Result<T>) -> Result<T> {
        self.with_agent_for(AgentRole::Cm, f)
    }

    /// The agent for `role`, or `ENODEV` once the device is going away.
    fn with_agent_for<T>(
        &self,
        role: AgentRole,
        f: impl FnOnce(AgentRef<'_>) -> Result<T>,
    ) -> Result<T> {
        let mut agents = self.agents.lock();
        match agents.slot(role) {
            Some(agent) => f(agent.get()),
            None => Err(ENODEV),
        }
    }

    /// Sends `mad` (attribute `attr`) to the peer `to` describes, retried by `retry` until
    /// cancelled; callable under a spinlock. Through the send-only agent, outside the MAD
    /// layer's window of unanswered requests ([`AgentRole::SendOnly`]).
    pub(crate) fn send_retried(
        &self,
        to: &AhInfo,
        mad: &[u8; MAD_SIZE],
        attr: AttrId,
        retry: RetryTimer,
        owner: SendOwner,
    ) -> Result<OutstandingSend> {
        let sent = self.with_agent_for(AgentRole::SendOnly, |agent| {
            agent.send_retried(to, mad, retry.timeout_ms, retry.retries, owner)
        });
        match &sent {
            Ok(_) => self.count_tx(attr),
            Err(_) => self.count_tx_error(),
        }
        sent
    }

    /// Makes `cep`, whose peer `info` describes, a user of the port until
    /// [`CmPort::forget_user`], once an AH to that peer can be made here (the check a user's
    /// request gets before its first send). Callable under a spinlock; `node` is the room
    /// `cep` takes in the port's set. `ENODEV` once the device is going.
    pub(crate) fn attach_user(
        &self,
        cep: &Arc<Cep>,
        info: &AhInfo,
        node: RBTreeNodeReservation<u32, Arc<Cep>>,
    ) -> Result {
        let mut agents = self.agents.lock();
        let Agents { cm, users, .. } = &mut *agents;
        let agent = cm.as_ref().ok_or(ENODEV)?.get();
        let users = users.as_mut().ok_or(ENODEV)?;
        agent.check_reachable(info)?;
        users.insert(node.into_node(cep.local_id, cep.clone()));
        Ok(())
    }

    /// Records `cep` as a user of the port: its peer, which sent it a request, is reached
    /// through it. `ENODEV` once the device is going (the CEP must then go at once).
    pub(crate) fn adopt_user(
        &self,
        cep: &Arc<Cep>,
        node: RBTreeNodeReservation<u32, Arc<Cep>>,
    ) -> Result {
        let mut agents = self.agents.lock();
        let users = agents.users.as_mut().ok_or(ENODEV)?;
        users.insert(node.into_node(cep.local_id, cep.clone()));
        Ok(())
    }

    /// `cep`'s peer is no longer reached through this port.
    pub(crate) fn forget_user(&self, cep: &Cep) {
        let removed = self
            .agents
            .lock()
            .users
            .as_mut()
            .and_then(|users| users.remove(&cep.local_id));
        drop(removed);
    }

    /// Device removal, with the agents unregistered (every send completed, and with it its
    /// AH): every CEP whose peer is reached through this port, to be cut off
    /// ([`Cep::device_removed`]). No peer can be attached here after.
    pub(crate) fn release_users(&self) -> Option<RBTree<u32, Arc<Cep>>> {
        self.agents.lock().users.take()
    }

    /// Our GID at `index` on this port.
    pub(crate) fn gid(&self, index: u8) -> Result<[u8; 16]> {
        self.with_agent(|agent| agent.gid(index))
    }

    /// Our GID at `index`, checked as the source of a user's path, with its network namespace
    /// ([`AgentRef::source_gid`]).
    pub(crate) fn source_gid(&self, index: u8) -> Result<([u8; 16], NetId)> {
        self.with_agent(|agent| agent.source_gid(index))
    }

    /// The MAC of the next hop from our GID at `sgid_index` to `dgid`
    /// ([`AgentRef::next_hop_mac`]).
    pub(crate) fn next_hop_mac(
        &self,
        sgid_index: u8,
        dgid: &[u8; 16],
        mac: &mut [u8; 6],
    ) -> Result {
        self.with_agent(|agent| agent.next_hop_mac(sgid_index, dgid, mac))
    }

    /// The network namespace that owns our GID `gid` ([`AgentRef::gid_net`]); `ENOENT` if
    /// the port lacks it, `ENODEV` once the device is going away.
    pub(crate) fn gid_net(&self, gid: &[u8; 16]) -> Result<NetId> {
        self.with_agent(|agent| agent.gid_net(gid))
    }

    /// The network namespace that owns our GID at `index` ([`AgentRef::gid_index_net`]).
    pub(crate) fn gid_index_net(&self, index: u8) -> Result<NetId> {
        self.with_agent(|agent| agent.gid_index_net(index))
    }

    /// Counts a received MAD that the protocol core refused.
    pub(crate) fn count_invalid(&self) {
        self.rx_invalid.add(1, Relaxed);
    }

    /// Remembers `rep`, sent from this port in answer to the SIDR_REQ `key` (see
    /// [`crate::tables::PeerId::by_gid`]). Never allocates; callable under a CEP's lock.
    pub(crate) fn remember_sidr_answer(&self, key: PeerId, rep: SidrRep) {
        self.sidr_answers.lock().remember(key, rep);
    }

    /// The answer this port sent lately to the SIDR_REQ `key` for `service_id`, if any.
    pub(crate) fn sidr_answer(&self, key: PeerId, service_id: u64) -> Option<SidrRep> {
        self.sidr_answers.lock().find(key, service_id)
    }

    /// Counts a duplicate of a message already handled.
    pub(crate) fn count_duplicate(&self) {
        self.rx_duplicates.add(1, Relaxed);
    }

    /// Counts a MAD handed to the MAD layer.
    pub(crate) fn count_tx(&self, attr: AttrId) {
        if let Some(counter) = self.tx.get(attr.to_u16()) {
            counter.add(1, Relaxed);
        }
    }

    /// Counts a MAD that could not be sent.
    pub(crate) fn count_tx_error(&self) {
        self.tx_errors.add(1, Relaxed);
    }

    /// The port's description and counters in the ABI's format.
    pub(crate) fn info(&self, device_name: &DeviceName) -> uapi::cepm_port_info {
        let mut info: uapi::cepm_port_info = pin_init::zeroed();
        for (dst, src) in info.dev_name.iter_mut().zip(device_name.iter()) {
            *dst = *src;
        }
        info.port_num = self.num;
        // Every managed port is RoCE: devices with native IB ports are declined.
        info.flags = uapi::CEPM_PORT_ROCE;
        info.rx_by_attr = self.rx.snapshot();
        info.rx_other_attr = self.rx_other_attr.load(Relaxed);
        info.rx_malformed = self.rx_malformed.load(Relaxed);
        info.rx_invalid = self.rx_invalid.load(Relaxed);
        info.rx_duplicates = self.rx_duplicates.load(Relaxed);
        info.tx_by_attr = self.tx.snapshot();
        info.tx_errors = self.tx_errors.load(Relaxed);
        info
    }
}

/// The port's agents feed it: each received MAD is counted, then handled by the CM.
// SAFETY: The agents live in `self.agents`, replaced (with `None` too) under its spinlock
// in `attach_agent`, and lent out only as an `AgentRef` borrowed from that lock's guard
// (`CmPort::with_agent`), so no send uses an agent once it is detached.
unsafe impl MadHandler for CmPort {
    fn attach_agent(&self, role: AgentRole, agent: Option<AttachedAgent>) {
        *self.agents.lock().slot(role) = agent;
    }

    fn mad_received(self: &Arc<Self>, mad: &ReceivedMad<'_>) {
        // A MAD cut short is counted by its form, not by the attribute its header claims.
        let counter = match wire::as_mad(mad.bytes()).and_then(|m| MadHeader::decode(m)) {
            Ok(hdr) => self.rx.get(hdr.attr_id).unwrap_or(&self.rx_other_attr),
            Err(_) => &self.rx_malformed,
        };
        counter.add(1, Relaxed);
        recv::mad_received(self, mad);
    }

    fn send_done(&self, status: c_int) {
        if status != 0 && status != ECANCELED.to_errno() {
            self.count_tx_error();
        }
    }
}
