// SPDX-License-Identifier: GPL-2.0
/*
 * The workqueue calls the Rust kernel crate does not wrap and cannot call
 * itself: alloc_workqueue is a varargs macro, and to_delayed_work a static
 * inline.
 */
#include <linux/workqueue.h>

#include "cepm_shim.h"

/*
 * Unbound: timewait's end has no CPU to stay on (and the kernel warns unless
 * a workqueue says which it is).
 */
struct workqueue_struct *cepm_shim_alloc_workqueue(const char *name)
{
	return alloc_workqueue("%s", WQ_UNBOUND, 0, name);
}

/*
 * Cancels the delayed work whose work_struct is @work and waits for a running
 * instance to finish; true if it was pending (its queued reference is then the
 * caller's to drop).
 */
bool cepm_shim_cancel_delayed_work_sync(void *work)
{
	return cancel_delayed_work_sync(to_delayed_work(work));
}
