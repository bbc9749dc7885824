// SPDX-License-Identifier: GPL-2.0

//! One RDMA device under cepm's management, with a CM MAD agent on each of its CM ports.

use kernel::{
    prelude::*,
    sync::Arc, //
};

use crate::{
    cep,
    port::CmPort,
    shim::{
        AgentRole,
        IbDevice,
        MadAgent, //
    },
    uapi, //
};

/// A port and the agent that feeds it.
struct ManagedPort {
    /// Unregistered first, so that no MAD reaches `port` once it is dropped.
    _agent: MadAgent,
    /// Send-only, for REPs.
    _rep_agent: MadAgent,
    port: Arc<CmPort>,
}

/// A managed device.
///
/// # Invariants
///
/// `ports` is not empty: a device without a CM port is not managed.
pub(crate) struct CmDevice {
    /// Dropped before `ib`: the agents are unregistered while the device is still valid.
    ports: KVec<ManagedPort>,
    ib: IbDevice,
}

impl Drop for CmDevice {
    /// Runs inside the `ib_client`'s `remove`, which must leave nothing of ours on the device.
    fn drop(&mut self) {
        release_ports(core::mem::take(&mut self.ports));
    }
}

/// Lets go of `ports`: each agent is unregistered (which flushes its sends and waits out its
/// handlers, so no MAD arrives and no new CEP can be tied to the port), then the CEPs still
/// tied to the port drop their address handles and hear that the device is gone.
fn release_ports(ports: KVec<ManagedPort>) {
    for managed in ports {
        let ManagedPort {
            _agent: agent,
            _rep_agent: rep_agent,
            port,
        } = managed;
        drop(agent);
        drop(rep_agent);
        cep::release_port(&port);
    }
}

impl CmDevice {
    /// Registers a CM agent on every port of `ib` that speaks the IB CM protocol.
    ///
    /// The device is all or nothing: if any port cannot be claimed (typically because the in-tree
    /// `ib_cm` owns it), no agent is kept and the device is skipped with one log line.
    pub(crate) fn new(ib: IbDevice) -> Result<Self> {
        let raw_name = ib.name();
        let name = CStr::from_bytes_until_nul(&raw_name).unwrap_or(c"?");
        let guid = ib.node_guid();
        let mut ports = KVec::new();
        for num in ib.ports() {
            if !ib.port_has_ib_cm(num) {
                continue;
            }
            let port = CmPort::new(raw_name, num, ib.port_is_roce(num), guid, ib.ack_delay())?;
            let agents = MadAgent::register(&ib, port.clone(), AgentRole::Cm)
                .and_then(|cm| Ok((cm, MadAgent::register(&ib, port.clone(), AgentRole::Rep)?)));
            match agents {
                Ok((agent, rep_agent)) => ports.push(
                    ManagedPort {
                        _agent: agent,
                        _rep_agent: rep_agent,
                        port,
                    },
                    GFP_KERNEL,
                )?,
                Err(e) => {
                    // Ports registered so far may already have CEPs (a REQ can arrive at once).
                    release_ports(ports);
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
        Ok(Self { ports, ib })
    }

    /// The underlying RDMA device.
    pub(crate) fn ib(&self) -> &IbDevice {
        &self.ib
    }

    /// Port `num`, if this device is the one named `name` (NUL-padded) and manages it.
    pub(crate) fn port(&self, name: &[u8], num: u32) -> Option<Arc<CmPort>> {
        let own = self.ib.name();
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
        let name = self.ib.name();
        for managed in self.ports.iter() {
            out.push(managed.port.info(&name), GFP_KERNEL)?;
        }
        Ok(())
    }
}
