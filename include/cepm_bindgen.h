/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bindgen input shared by cepm.ko (rust/uapi.rs) and the userspace crate
 * (cepmctl/build.rs): the UAPI header, plus its ioctl numbers as constants
 * because bindgen cannot expand the _IOWR() macros itself.
 */
#include "uapi/cepm.h"

const unsigned int CEPM_IOCTL_QUERY = CEPM_IOC_QUERY;
