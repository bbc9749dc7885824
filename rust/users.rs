// SPDX-License-Identifier: GPL-2.0

//! Who a file belongs to, and what each file and each user holds: the rules of docs/abi.md,
//! "Privileges and limits".
//!
//! A file belongs to the user who opened it, with the capabilities its opener had then (as a
//! socket keeps its creator's). Each file counts its CEPs, listens and events in a [`Usage`];
//! all the files of one account share a second one, found through [`Users`] while any of them
//! is open, which also counts the account's monitors. An account is a user, with every uid of
//! the user namespaces that user made ([`shim::current_account`]). A [`Charge`] is one CEP or
//! listen counted in both, given back when it is dropped; a [`UserCharge`] one counted against
//! the account alone.

use kernel::{
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
        Arc,
    },
    task::Kuid,
};

use crate::{
    context::Cm,
    sharded::Sharded,
    shim::{
        self,
        Net,
        NetId, //
    },
};

/// What a file, or all the files of one user, hold.
pub(crate) struct Usage {
    ceps: Atomic<u32>,
    listens: Atomic<u32>,
    events: Atomic<u32>,
    monitors: Atomic<u32>,
    ports: Atomic<u32>,
}

/// The things a [`Usage`] counts.
#[derive(Clone, Copy)]
pub(crate) enum Resource {
    /// CEPs owned (handles).
    Ceps,
    /// CEPs that listen.
    Listens,
    /// Events queued, not yet read.
    Events,
    /// Files that monitor (a user's only).
    Monitors,
    /// Ports held (`CEPM_IOC_BIND`, or `CEPM_IOC_LISTEN` of a CEP with no port).
    Ports,
}

impl Usage {
    /// Nothing held.
    pub(crate) fn new() -> Result<Arc<Self>> {
        Ok(Arc::new(
            Self {
                ceps: Atomic::new(0),
                listens: Atomic::new(0),
                events: Atomic::new(0),
                monitors: Atomic::new(0),
                ports: Atomic::new(0),
            },
            GFP_KERNEL_ACCOUNT,
        )?)
    }

    fn counter(&self, resource: Resource) -> &Atomic<u32> {
        match resource {
            Resource::Ceps => &self.ceps,
            Resource::Listens => &self.listens,
            Resource::Events => &self.events,
            Resource::Monitors => &self.monitors,
            Resource::Ports => &self.ports,
        }
    }

    /// Counts one more of `resource`, unless `limit` are held already. Never sleeps.
    pub(crate) fn try_take(&self, resource: Resource, limit: u32) -> bool {
        let counter = self.counter(resource);
        let mut held = counter.load(Relaxed);
        loop {
            if held >= limit {
                return false;
            }
            match counter.cmpxchg(held, held + 1, Relaxed) {
                Ok(_) => return true,
                Err(now) => held = now,
            }
        }
    }

    /// Counts `n` of `resource` fewer.
    pub(crate) fn give_back(&self, resource: Resource, n: u32) {
        if n > 0 {
            self.counter(resource).fetch_sub(n, Relaxed);
        }
    }
}

/// One CEP or listen, counted against a file and against its user.
///
/// # Invariants
///
/// `file` and `user` each count this one of `resource` until it is dropped.
pub(crate) struct Charge {
    file: Arc<Usage>,
    user: Arc<Usage>,
    resource: Resource,
}

impl Charge {
    /// Counts one more `resource` for `opener`'s file `file`: `EMFILE` if the file holds
    /// `file_limit` already, `EDQUOT` if its user holds `user_limit`.
    pub(crate) fn take(
        file: &Arc<Usage>,
        opener: &Opener,
        resource: Resource,
        file_limit: u32,
        user_limit: u32,
    ) -> Result<Self> {
        if !file.try_take(resource, file_limit) {
            return Err(EMFILE);
        }
        if !opener.user.try_take(resource, user_limit) {
            file.give_back(resource, 1);
            return Err(EDQUOT);
        }
        // INVARIANT: both counted it just now.
        Ok(Self {
            file: file.clone(),
            user: opener.user.clone(),
            resource,
        })
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        // By the type invariant both count this one.
        self.file.give_back(self.resource, 1);
        self.user.give_back(self.resource, 1);
    }
}

/// One `resource` counted against a user alone, given back when dropped: what belongs to no
/// file of the user's yet (a request waiting in a listener's backlog, which may move between
/// the user's files with its listener).
///
/// # Invariants
///
/// `user` counts this one of `resource` until it is dropped.
pub(crate) struct UserCharge {
    user: Arc<Usage>,
    resource: Resource,
}

impl UserCharge {
    /// Counts one more `resource` for `opener`'s user: `EDQUOT` if it holds `limit` already.
    /// Never sleeps.
    pub(crate) fn take(opener: &Opener, resource: Resource, limit: u32) -> Result<Self> {
        if !opener.user.try_take(resource, limit) {
            return Err(EDQUOT);
        }
        // INVARIANT: counted just now.
        Ok(Self {
            user: opener.user.clone(),
            resource,
        })
    }
}

impl Drop for UserCharge {
    fn drop(&mut self) {
        // By the type invariant the user counts this one.
        self.user.give_back(self.resource, 1);
    }
}

/// The user a file belongs to: its opener's effective uid and capabilities at `open`, and the
/// account whose limits it counts against. While it exists, its account's entry in [`Users`]
/// does too.
pub(crate) struct Opener {
    cm: Arc<Cm>,
    /// Whose CEPs these are: what another file must be to see them, or to take a listener.
    pub(crate) uid: Kuid,
    /// Whose limits they count against ([`shim::current_account`]): `uid`, or the user who
    /// made the opener's user namespace or one it lies in.
    account: Kuid,
    /// `CAP_NET_ADMIN`: listens under a mask, over other users' service IDs too, and sees
    /// every CEP.
    pub(crate) net_admin: bool,
    /// `CAP_NET_BIND_SERVICE`: listens on the privileged ports of rdma_cm's port spaces.
    pub(crate) net_bind_service: bool,
    /// The network namespace the file was opened in: all it sees or makes is of it.
    pub(crate) net: Net,
    /// What all of this account's files hold together.
    pub(crate) user: Arc<Usage>,
}

impl Opener {
    /// The current task, as the opener of a file of `cm`. May sleep.
    pub(crate) fn current(cm: &Arc<Cm>) -> Result<Self> {
        let uid = Kuid::current_euid();
        let account = shim::current_account();
        let caps = shim::current_caps();
        let net = Net::current()?;
        let user = cm.users.join(account)?;
        Ok(Self {
            cm: cm.clone(),
            uid,
            account,
            net_admin: caps.net_admin,
            net_bind_service: caps.net_bind_service,
            net,
            user,
        })
    }

    /// Whether this file may see a CEP of network namespace `net` that `owner` owns (`None`:
    /// nobody owns it yet): one of its own namespace, and of its own user unless it has
    /// `CAP_NET_ADMIN`; any CEP if it is the host's operator ([`Self::sees_every_net`]).
    pub(crate) fn sees(&self, net: NetId, owner: Option<Kuid>) -> bool {
        self.sees_every_net()
            || (net == self.net.id() && (self.sees_all() || owner == Some(self.uid)))
    }

    /// Whether every user's CEPs of its namespace, and every port's traffic, are its to see
    /// (`CAP_NET_ADMIN`).
    pub(crate) fn sees_all(&self) -> bool {
        self.net_admin
    }

    /// Whether the CEPs of every network namespace are its to see: `CAP_NET_ADMIN` in the
    /// initial namespace, as `rdma resource show cm_id` shows the host every namespace's
    /// IDs in the shared RDMA netns mode.
    pub(crate) fn sees_every_net(&self) -> bool {
        self.net_admin && self.net.is_initial()
    }

    /// Whether this file's account is `other`'s: their files count against the same limits.
    pub(crate) fn shares_limits_with(&self, other: &Opener) -> bool {
        Arc::ptr_eq(&self.user, &other.user)
    }
}

impl Drop for Opener {
    fn drop(&mut self) {
        self.cm.users.leave(self.account);
    }
}

/// One account's entry: its files' shared [`Usage`], and how many files share it.
struct UserEntry {
    usage: Arc<Usage>,
    files: usize,
}

/// The accounts with a file open, by uid, owned by the CM's [`Cm`].
#[pin_data]
pub(crate) struct Users {
    #[pin]
    by_uid: Sharded<RBTree<u32, UserEntry>>,
}

/// The key of `uid` in [`Users`]: the kernel's own value, the same in every namespace.
fn key(uid: Kuid) -> u32 {
    uid.into_raw().val
}

impl Users {
    /// No user yet.
    pub(crate) fn new() -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            by_uid <- Sharded::new(RBTree::new),
        }? Error)
    }

    /// One more file of account `uid`; returns the usage all of its files share. May sleep.
    fn join(&self, uid: Kuid) -> Result<Arc<Usage>> {
        let key = key(uid);
        // Allocated first, where sleeping is allowed; unused if the user has an entry.
        let fresh = Usage::new()?;
        let node = RBTreeNodeReservation::new(GFP_KERNEL_ACCOUNT)?;
        let usage = self.by_uid.with_key(key.into(), |users| {
            if let Some(entry) = users.get_mut(&key) {
                entry.files += 1;
                return entry.usage.clone();
            }
            users.insert(node.into_node(
                key,
                UserEntry {
                    usage: fresh.clone(),
                    files: 1,
                },
            ));
            fresh.clone()
        });
        Ok(usage)
    }

    /// One file of account `uid` fewer: the entry goes with its last file.
    fn leave(&self, uid: Kuid) {
        let key = key(uid);
        let gone = self.by_uid.with_key(key.into(), |users| {
            let entry = users.get_mut(&key)?;
            entry.files -= 1;
            if entry.files == 0 {
                users.remove_node(&key)
            } else {
                None
            }
        });
        // Freed outside the shard's lock.
        drop(gone);
    }

    /// How many accounts have a file open.
    pub(crate) fn count(&self) -> usize {
        (0..crate::sharded::SHARDS)
            .map(|i| self.by_uid.with(i, |users| users.iter().count()))
            .sum()
    }
}
