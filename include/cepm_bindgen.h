/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bindgen input shared by cepm.ko (rust/uapi.rs) and the cepm crate
 * (cepm/build.rs): the UAPI header, plus its ioctl numbers as constants
 * because bindgen cannot expand the _IOWR() macros itself.
 */
#include "uapi/cepm.h"

const unsigned int CEPM_IOCTL_QUERY = CEPM_IOC_QUERY;
const unsigned int CEPM_IOCTL_CREATE = CEPM_IOC_CREATE;
const unsigned int CEPM_IOCTL_DESTROY = CEPM_IOC_DESTROY;
const unsigned int CEPM_IOCTL_LISTEN = CEPM_IOC_LISTEN;
const unsigned int CEPM_IOCTL_GET_REQUEST = CEPM_IOC_GET_REQUEST;
const unsigned int CEPM_IOCTL_REJECT = CEPM_IOC_REJECT;
const unsigned int CEPM_IOCTL_QUERY_CEP = CEPM_IOC_QUERY_CEP;
const unsigned int CEPM_IOCTL_GET_PRIVATE_DATA = CEPM_IOC_GET_PRIVATE_DATA;
const unsigned int CEPM_IOCTL_CONNECT = CEPM_IOC_CONNECT;
const unsigned int CEPM_IOCTL_PREPARE_REP = CEPM_IOC_PREPARE_REP;
const unsigned int CEPM_IOCTL_SEND_REP = CEPM_IOC_SEND_REP;
const unsigned int CEPM_IOCTL_SEND_RTU = CEPM_IOC_SEND_RTU;
const unsigned int CEPM_IOCTL_INIT_QP_ATTR = CEPM_IOC_INIT_QP_ATTR;
const unsigned int CEPM_IOCTL_SEND_DREQ = CEPM_IOC_SEND_DREQ;
const unsigned int CEPM_IOCTL_SEND_DREP = CEPM_IOC_SEND_DREP;
const unsigned int CEPM_IOCTL_PREPARE_MRA = CEPM_IOC_PREPARE_MRA;
const unsigned int CEPM_IOCTL_SIDR_REQ = CEPM_IOC_SIDR_REQ;
const unsigned int CEPM_IOCTL_SIDR_REP = CEPM_IOC_SIDR_REP;
const unsigned int CEPM_IOCTL_LIST_CEPS = CEPM_IOC_LIST_CEPS;
const unsigned int CEPM_IOCTL_ESTABLISH = CEPM_IOC_ESTABLISH;
const unsigned int CEPM_IOCTL_MONITOR = CEPM_IOC_MONITOR;
const unsigned int CEPM_IOCTL_MIGRATE = CEPM_IOC_MIGRATE;
const unsigned int CEPM_IOCTL_POST_EVENT = CEPM_IOC_POST_EVENT;
const unsigned int CEPM_IOCTL_BIND = CEPM_IOC_BIND;
