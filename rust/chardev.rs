// SPDX-License-Identifier: GPL-2.0

//! `/dev/cepm`: the userspace interface.

use core::mem::size_of;
use kernel::{
    fs::File,
    ioctl::_IOC_SIZE,
    miscdevice::{
        MiscDevice,
        MiscDeviceRegistration, //
    },
    prelude::*,
    uaccess::{
        UserPtr,
        UserSlice, //
    },
};

use crate::{
    registry,
    uapi::{
        self,
        cepm_port_info,
        cepm_query, //
    },
};

/// An open file of `/dev/cepm`. Per-file state arrives with connection endpoints.
pub(crate) struct CepmFile;

#[vtable]
impl MiscDevice for CepmFile {
    type Ptr = KBox<Self>;

    fn open(_file: &File, _misc: &MiscDeviceRegistration<Self>) -> Result<KBox<Self>> {
        Ok(KBox::new(CepmFile, GFP_KERNEL)?)
    }

    fn ioctl(_me: &CepmFile, _file: &File, cmd: u32, arg: usize) -> Result<isize> {
        match cmd {
            uapi::CEPM_IOCTL_QUERY => query(UserPtr::from_addr(arg), _IOC_SIZE(cmd))?,
            _ => return Err(ENOTTY),
        }
        Ok(0)
    }
}

/// `CEPM_IOC_QUERY`: the ABI version and the managed ports with their counters.
fn query(arg: UserPtr, size: usize) -> Result {
    let (mut reader, mut writer) = UserSlice::new(arg, size).reader_writer();
    let mut q: cepm_query = reader.read()?;
    if q.reserved != 0 {
        return Err(EINVAL);
    }
    let infos = registry::port_infos()?;
    let filled = infos.len().min(q.port_capacity as usize);
    if filled > 0 {
        let ports = UserPtr::from_addr(usize::try_from(q.ports).map_err(|_| EFAULT)?);
        let len = filled.checked_mul(size_of::<cepm_port_info>()).ok_or(EINVAL)?;
        let mut out = UserSlice::new(ports, len).writer();
        for info in &infos[..filled] {
            out.write(info)?;
        }
    }
    q.abi_version = uapi::CEPM_ABI_VERSION;
    q.num_ports = u32::try_from(infos.len()).map_err(|_| EOVERFLOW)?;
    writer.write(&q)?;
    Ok(())
}
