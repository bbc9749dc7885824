// SPDX-License-Identifier: GPL-2.0

//! One RDMA device under cepm's management, with a CM MAD agent on each of its CM ports.

use kernel::{
    prelude::*,
    sync::Arc, //
};

use crate::{
    cep,
    context::Cm,
    port::CmPort,
    shim::{
        self,
        AgentRole,
        DeviceName,
        IbDevice,
        MadAgent,
        Net, //
    },
    uapi, //
};

/// A port and the agents that feed it.
///
/// Dropping it lets go of the port, on every path (device removal, and each error path of
/// [`CmDevice::new`], where a REQ may already have reached a port registered a moment
/// before): the agents are unregistered first (which flushes their sends, and with them every
/// address handle made on the port, and waits out their handlers, so no MAD arrives and no
/// new CEP can be tied to the port), then the CEPs whose peers the port reaches forget them
/// and hear that the device is gone.
struct ManagedPort {
    /// The CM agent and the send-only agent, while registered.
    agents: Option<MadAgent<CmPort>>,
    send_only_agent: Option<MadAgent<CmPort>>,
    port: Arc<CmPort>,
}

impl Drop for ManagedPort {
    fn drop(&mut self) {
        shim::fault_port_release_delay();
        drop(self.agents.take());
        drop(self.send_only_agent.take());
        cep::release_port(&self.port);
    }
}

impl ManagedPort {
    /// Claims the CM class on `port` of `ib`.
    fn register(ib: &IbDevice, port: Arc<CmPort>) -> Result<Self> {
        let mut managed = Self {
            agents: None,
            send_only_agent: None,
            port,
        };
        // On error `managed` is dropped, which releases whatever was registered already.
        let num = managed.port.num();
        managed.agents = Some(MadAgent::register(
            ib,
            num,
            managed.port.clone(),
            AgentRole::Cm,
        )?);
        managed.send_only_agent = Some(MadAgent::register(
            ib,
            num,
            managed.port.clone(),
            AgentRole::SendOnly,
        )?);
        Ok(managed)
    }
}

/// A managed device.
///
/// # Invariants
///
/// `ports` is not empty: a device without a CM port is not managed.
pub(crate) struct CmDevice {
    /// Dropped before `ib`: the agents are unregistered while the device is still valid.
    ports: KVec<ManagedPort>,
    /// The device's name, as read in the `add` and `rename` callbacks (never elsewhere: a
    /// rename may be under way).
    name: DeviceName,
    ib: IbDevice,
}

impl CmDevice {
    /// Registers a CM agent on every port of `ib`, called `raw_name`, that speaks the IB CM
    /// protocol.
    ///
    /// The device is all or nothing: if any port cannot be claimed (typically because the in-tree
    /// `ib_cm` owns it), no agent is kept and the device is skipped with one log line. So is a
    /// device with a native InfiniBand port (`EOPNOTSUPP`): cepm has no IB addressing yet (LIDs,
    /// P_Key indexes, SA path records), and declining the whole device leaves it to `ib_cm`,
    /// which claims all of a device's ports or none.
    pub(crate) fn new(cm: &Arc<Cm>, ib: IbDevice, raw_name: DeviceName) -> Result<Self> {
        let name = CStr::from_bytes_until_nul(&raw_name).unwrap_or(c"?");
        let guid = ib.node_guid();
        let mut ports = KVec::new();
        for num in ib.ports() {
            if !ib.port_has_ib_cm(num) {
                continue;
            }
            if !ib.port_is_roce(num) {
                pr_info!(
                    "{}: port {} is native InfiniBand, which cepm does not serve yet (no LIDs, P_Key indexes or SA path records); left to ib_cm\n",
                    name.to_str().unwrap_or("?"),
                    num
                );
                return Err(EOPNOTSUPP);
            }
            let port = CmPort::new(cm.clone(), raw_name, num, guid, ib.ack_delay())?;
            // Dropping `ports` (any error below) releases the ports registered so far.
            match ManagedPort::register(&ib, port) {
                Ok(managed) => ports.push(managed, GFP_KERNEL)?,
                Err(e) => {
                    pr_warn!(
                        "{}: port {}: cannot register the CM MAD agent ({:?}); another CM such as ib_cm owns it; skipping this device\n",
                        name.to_str().unwrap_or("?"),
                        num,
                        e
                    );
                    return Err(e);
                }
            }
        }
        if ports.is_empty() {
            return Err(ENODEV);
        }
        pr_info!(
            "{}: managing the CM on {} port(s)\n",
            name.to_str().unwrap_or("?"),
            ports.len()
        );
        // INVARIANT: `ports` is not empty.
        Ok(Self {
            ports,
            name: raw_name,
            ib,
        })
    }

    /// The device is now called `name`.
    pub(crate) fn rename(&mut self, name: DeviceName) {
        self.name = name;
        for managed in self.ports.iter() {
            managed.port.set_device_name(name);
        }
    }

    /// The underlying RDMA device.
    pub(crate) fn ib(&self) -> &IbDevice {
        &self.ib
    }

    /// Whether files of `net` may use this device ([`IbDevice::usable_in`]).
    pub(crate) fn usable_in(&self, net: &Net) -> bool {
        self.ib.usable_in(net)
    }

    /// Port `num`, if this device is the one named `name` (NUL-padded) and manages it.
    pub(crate) fn port(&self, name: &[u8], num: u32) -> Option<Arc<CmPort>> {
        let own = &self.name;
        let len = own.iter().position(|&c| c == 0).unwrap_or(own.len());
        let wanted = name.iter().position(|&c| c == 0).unwrap_or(name.len());
        if own.get(..len) != name.get(..wanted) {
            return None;
        }
        self.ports
            .iter()
            .find(|m| m.port.num() == num)
            .map(|m| m.port.clone())
    }

    /// Appends the ABI description of each port to `out`.
    pub(crate) fn port_infos(&self, out: &mut KVec<uapi::cepm_port_info>) -> Result {
        for managed in self.ports.iter() {
            out.push(managed.port.info(&self.name), GFP_KERNEL)?;
        }
        Ok(())
    }
}
