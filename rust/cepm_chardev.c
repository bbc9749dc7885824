// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/cepm: the misc device and its file operations, each of which calls
 * the Rust side (rust/shim/glue.rs) with the file's context.
 */
#include <linux/err.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/poll.h>

#include "cepm_shim.h"

/* The misc device, and the Rust context its open callback gets. */
struct cepm_chardev {
	struct miscdevice misc;
	void *ctx;
};

static int cepm_fop_open(struct inode *inode, struct file *file)
{
	/* misc_open() put the miscdevice in private_data. */
	struct cepm_chardev *chardev =
		container_of(file->private_data, struct cepm_chardev, misc);
	void *ctx = cepm_rust_open(chardev->ctx);

	if (IS_ERR(ctx))
		return PTR_ERR(ctx);
	file->private_data = ctx;
	return nonseekable_open(inode, file);
}

static int cepm_fop_release(struct inode *inode, struct file *file)
{
	cepm_rust_release(file->private_data);
	return 0;
}

static long cepm_fop_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	return cepm_rust_ioctl(file->private_data, cmd, arg);
}

static ssize_t cepm_fop_read(struct file *file, char __user *buf, size_t len, loff_t *pos)
{
	return cepm_rust_read(file->private_data, (unsigned long)buf, len,
			      file->f_flags & O_NONBLOCK);
}

static __poll_t cepm_fop_poll(struct file *file, struct poll_table_struct *wait)
{
	return (__force __poll_t)cepm_rust_poll(file->private_data, file, wait);
}

static const struct file_operations cepm_fops = {
	.owner = THIS_MODULE,
	.open = cepm_fop_open,
	.release = cepm_fop_release,
	.unlocked_ioctl = cepm_fop_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.read = cepm_fop_read,
	.poll = cepm_fop_poll,
};

void *cepm_shim_get_file_ctx(int fd, struct file **filp)
{
	struct file *file = fget(fd);

	if (!file)
		return ERR_PTR(-EBADF);
	/* Only our own files have a context of ours in private_data. */
	if (file->f_op != &cepm_fops) {
		fput(file);
		return ERR_PTR(-EINVAL);
	}
	*filp = file;
	return file->private_data;
}

void cepm_shim_put_file(struct file *filp)
{
	fput(filp);
}

static struct cepm_chardev cepm_chardev = {
	.misc = {
		.minor = MISC_DYNAMIC_MINOR,
		.name = "cepm",
		.fops = &cepm_fops,
		.mode = 0600,
	},
};

int cepm_shim_chardev_register(void *ctx)
{
	int ret;

	/* One device, one context, as for the client. */
	if (cepm_chardev.ctx)
		return -EBUSY;
	cepm_chardev.ctx = ctx;
	ret = misc_register(&cepm_chardev.misc);
	if (ret)
		cepm_chardev.ctx = NULL;
	return ret;
}

void cepm_shim_chardev_unregister(void)
{
	misc_deregister(&cepm_chardev.misc);
	cepm_chardev.ctx = NULL;
}