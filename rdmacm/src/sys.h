/* What bindgen reads (build.rs): librdmacm's public API and the verbs types it names. */
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include <infiniband/ib.h>
