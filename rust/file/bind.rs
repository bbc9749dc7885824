// SPDX-License-Identifier: GPL-2.0

//! `CEPM_IOC_BIND`: an idle CEP takes a port of an rdma_cm port space, as `rdma_bind_addr`
//! does in the kernel's rdma_cm (drivers/infiniband/core/cma.c, `cma_get_port`), and keeps it
//! until its destroy; and LISTEN's port (`rdma_listen`): a bound CEP's, or the one an
//! unbound CEP's LISTEN takes.
//!
//! The port is counted against the file's account (`max_ports_per_user`, `EDQUOT`) in its
//! handle, as a listen is: MIGRATE moves the count with the CEP.

use kernel::{
    prelude::*,
    sync::Arc, //
};

use super::{
    CepmFile,
    IoctlArg, //
};
use crate::{
    cep::Cep,
    ports::PortKey,
    proto::{
        listen_scope::{
            IpAddr,
            ListenScope, //
        },
        port_rules::PortOwner,
        service_id::{
            ip_service_id,
            parse_ip_service_id,
            PortSpace,
            ServiceRange, //
        },
    },
    shim, uapi,
    users::{
        Charge,
        Resource, //
    },
};

/// Ports below this need `CAP_NET_BIND_SERVICE` (`PROT_SOCK`).
const PROT_SOCK: u16 = 1024;

impl CepmFile {
    pub(super) fn bind(&self, arg: IoctlArg) -> Result {
        let mut req: uapi::cepm_bind = arg.read()?;
        const KNOWN: u8 = (uapi::CEPM_BIND_REUSEADDR | uapi::CEPM_BIND_AFONLY) as u8;
        let v6 = match req.family {
            4 => false,
            6 => true,
            _ => return Err(EINVAL),
        };
        if req.reserved != 0
            || req.reserved2 != [0; 10]
            || req.flags & !KNOWN != 0
            || PortSpace::from_value(req.port_space).is_none()
        {
            return Err(EINVAL);
        }
        let reuseaddr = req.flags & uapi::CEPM_BIND_REUSEADDR as u8 != 0;
        let src = IpAddr::checked_slot(v6, &req.addr).ok_or(EINVAL)?;
        let dst = IpAddr::checked_slot(v6, &req.dst_addr).ok_or(EINVAL)?;
        if req.port != 0 && req.port < PROT_SOCK && !self.opener.net_bind_service {
            return Err(EACCES);
        }
        let cep = self.cep(req.handle)?;
        let me = (self, req.handle);
        if let Some(key) = cep.bound_port(me)? {
            self.bind_again(&cep, &key, &req, &src)?;
            req.port = key.port;
            return arg.write(&req);
        }
        let owner = PortOwner {
            id: cep.local_id,
            src,
            dst,
            dst_port: req.dst_port,
            reuseaddr,
            afonly: req.flags & uapi::CEPM_BIND_AFONLY as u8 != 0,
            listen_only: false,
        };
        let key = self.hold_port(&cep, req.handle, req.port_space, req.port, owner)?;
        req.port = key.port;
        let written = arg.write(&req);
        // The caller cannot learn the port: the CEP must not hold it.
        if written.is_err() {
            self.give_back_port(&cep, key);
        }
        written
    }

    /// Makes the idle, unbound CEP the file names `handle` an owner of `port` of `ps` (0: one
    /// chosen), counted against the file's account. Returns the port held.
    fn hold_port(
        &self,
        cep: &Arc<Cep>,
        handle: u32,
        ps: u16,
        port: u16,
        owner: PortOwner,
    ) -> Result<PortKey> {
        // Refused before a port is taken; checked again as the port is recorded.
        if !cep.may_bind() {
            return Err(EINVAL);
        }
        let counted = Charge::take(
            &self.usage,
            &self.opener,
            Resource::Ports,
            u32::MAX,
            shim::params().max_ports_per_user,
        )?;
        let port = self.cm.ports.bind(self.net(), ps, port, owner)?;
        let key = PortKey {
            net: self.net().id(),
            ps,
            port,
        };
        // The count joins the handle under the CEP's lock, as LISTEN's does.
        let recorded = cep.set_bound(key, (self, handle), || {
            if let Some(handle) = self.inner.lock().handles.get_mut(&handle) {
                handle.port = Some(counted);
            }
        });
        if let Err(e) = recorded {
            self.cm.ports.release(&key, cep.local_id);
            return Err(e);
        }
        Ok(key)
    }

    /// BIND on a CEP that holds `key` already: only REUSEADDR may be added, for the same
    /// port space, port (or 0) and address, and not to a listener (`rdma_set_reuseaddr`).
    fn bind_again(
        &self,
        cep: &Arc<Cep>,
        key: &PortKey,
        req: &uapi::cepm_bind,
        src: &IpAddr,
    ) -> Result {
        let same = key.ps == req.port_space
            && (req.port == 0 || req.port == key.port)
            && self.cm.ports.holds_with(key, cep.local_id, src);
        if !same || req.flags & uapi::CEPM_BIND_REUSEADDR as u8 == 0 || cep.is_listener() {
            return Err(EINVAL);
        }
        self.cm.ports.set_reuseaddr(key, cep.local_id)
    }

    /// LISTEN's port, for the CEP the file names `handle`. If it holds one, only that port's
    /// service ID, and only for the address and AFONLY it holds it with (`EINVAL`), as
    /// rdma_cm's listen takes the scope of its bind; and only if it may hold the port alone
    /// (`rdma_listen`'s check without REUSEADDR: `EADDRINUSE`, `EADDRNOTAVAIL`). If it holds
    /// none, and `range` is one port of an rdma_cm port space, it takes that port for its
    /// scope's address, as `rdma_listen` binds an unbound ID first, so that no LISTEN takes
    /// an address whose port a BIND holds, nor the reverse. A port taken here is given back
    /// ([`Self::give_back_port`]) if the listen then fails.
    pub(super) fn listen_port(
        &self,
        cep: &Arc<Cep>,
        handle: u32,
        range: &ServiceRange,
        scope: &ListenScope,
    ) -> Result<ListenPort> {
        let Some(key) = cep.bound_port((self, handle))? else {
            let key = self.hold_listen_port(cep, handle, range, scope)?;
            return Ok(ListenPort {
                key,
                taken: key.is_some(),
            });
        };
        let ps = PortSpace::from_value(key.ps).ok_or(EINVAL)?;
        if range.mask != u64::MAX || range.id != ip_service_id(ps, key.port) {
            return Err(EINVAL);
        }
        let owner = self.cm.ports.owner(&key, cep.local_id).ok_or(EINVAL)?;
        // A port a LISTEN took: any scope that takes it for the same address may listen.
        let fits = if owner.listen_only {
            listen_address(scope) == (owner.src, owner.afonly)
        } else {
            *scope == ListenScope::of(owner.src, owner.afonly)
        };
        if !fits {
            return Err(EINVAL);
        }
        self.cm.ports.claim_for_listen(&key, cep.local_id)?;
        Ok(ListenPort {
            key: Some(key),
            taken: false,
        })
    }

    /// The port an unbound CEP's exact LISTEN on an rdma_cm service ID takes; none for
    /// another service ID, a masked range (for `CAP_NET_ADMIN` only) or port 0, which no
    /// BIND holds.
    fn hold_listen_port(
        &self,
        cep: &Arc<Cep>,
        handle: u32,
        range: &ServiceRange,
        scope: &ListenScope,
    ) -> Result<Option<PortKey>> {
        let Some((ps, port)) = parse_ip_service_id(range.id) else {
            return Ok(None);
        };
        if range.mask != u64::MAX || port == 0 {
            return Ok(None);
        }
        let (src, afonly) = listen_address(scope);
        let owner = PortOwner {
            id: cep.local_id,
            src,
            afonly,
            listen_only: true,
            ..Default::default()
        };
        self.hold_port(cep, handle, ps.value(), port, owner)
            .map(Some)
    }

    /// Gives back `key`, which this call took for `cep` (a BIND that could not answer, a
    /// LISTEN that failed: [`Self::listen_port`]), with its count, wherever the CEP is now
    /// (a MIGRATE may have moved it). A CEP that another call has made a listener meanwhile
    /// keeps it.
    pub(super) fn give_back_port(&self, cep: &Arc<Cep>, key: PortKey) {
        if let Ok(counted) = cep.clear_bound(key) {
            drop(counted);
            self.cm.ports.release(&key, cep.local_id);
        }
    }
}

/// The port a LISTEN listens with ([`CepmFile::listen_port`]).
pub(super) struct ListenPort {
    /// The port its CEP holds for it, if any: the listen goes ahead only if the CEP still
    /// holds it then.
    pub(super) key: Option<PortKey>,
    /// Whether this LISTEN took it, and so gives it back if it fails.
    pub(super) taken: bool,
}

/// The address and AFONLY for which a LISTEN of `scope` holds its port: an unscoped listen
/// takes requests to every address, as a wildcard of either family does.
fn listen_address(scope: &ListenScope) -> (IpAddr, bool) {
    match *scope {
        ListenScope::Unscoped => (IpAddr::default(), false),
        ListenScope::Wildcard { v6: false, afonly } => (IpAddr::default(), afonly),
        ListenScope::Wildcard { v6: true, afonly } => (IpAddr::V6([0; 16]), afonly),
        ListenScope::Addr(addr) => (addr, false),
    }
}
