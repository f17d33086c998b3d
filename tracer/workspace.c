/* tracer/workspace.c: makes the task's workspace (a private 0700 directory
 * under $TMPDIR, or the one given) and removes a private one without ever
 * following a link the program planted. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "tracer.h"

int cr_workspace_make(struct cr_run_config *cfg, const char *given)
{
	char path[PATH_MAX];
	struct stat st;

	if (given) {
		if (mkdir(given, 0700) < 0 && errno != EEXIST)
			return -errno;
		if (!realpath(given, path))
			return -errno;
		if (stat(path, &st) < 0)
			return -errno;
		if (!S_ISDIR(st.st_mode))
			return -ENOTDIR;
		cfg->ws_private = false;
	} else {
		const char *tmp = getenv("TMPDIR");

		if (!tmp || tmp[0] != '/')
			tmp = "/tmp";
		if (snprintf(path, sizeof(path), "%s/corral-XXXXXX", tmp) >=
		    (int)sizeof(path))
			return -ENAMETOOLONG;
		if (!mkdtemp(path))	/* mode 0700 */
			return -errno;
		cfg->ws_private = true;
		{
			char real[PATH_MAX];

			if (realpath(path, real))
				memcpy(path, real, strlen(real) + 1);
		}
	}
	cfg->workspace = strdup(path);
	return cfg->workspace ? 0 : -ENOMEM;
}

/* Remove everything under dirfd. Entries are opened with O_NOFOLLOW and
 * O_DIRECTORY relative to their parent's fd, so a symlink is unlinked, never
 * entered, and a rename race cannot steer the removal outside. A directory
 * the program made unreadable (chmod 000) is given back u+rwx first: it is
 * ours, inside our private directory. */
static int empty_dir(int dirfd, int depth)
{
	DIR *d;
	struct dirent *de;
	int rc = 0;

	if (depth > 4096)
		return -ELOOP;
	d = fdopendir(dirfd);
	if (!d) {
		close(dirfd);
		return -errno;
	}
	while ((de = readdir(d))) {
		const char *n = de->d_name;

		if (!strcmp(n, ".") || !strcmp(n, ".."))
			continue;
		if (unlinkat(dirfd, n, 0) == 0)
			continue;
		if (errno != EISDIR && errno != EPERM && errno != EACCES) {
			if (errno != ENOENT && !rc)
				rc = -errno;
			continue;
		}
		{
			int sub = openat(dirfd, n, O_RDONLY | O_DIRECTORY |
					 O_NOFOLLOW | O_CLOEXEC);

			if (sub < 0 && errno == EACCES &&
			    fchmodat(dirfd, n, 0700, 0) == 0)
				sub = openat(dirfd, n, O_RDONLY | O_DIRECTORY |
					     O_NOFOLLOW | O_CLOEXEC);
			if (sub < 0) {
				if (!rc)
					rc = -errno;
				continue;
			}
			fchmod(sub, 0700);
			{
				int r = empty_dir(sub, depth + 1);

				if (r && !rc)
					rc = r;
			}
			if (unlinkat(dirfd, n, AT_REMOVEDIR) < 0 && !rc)
				rc = -errno;
		}
	}
	closedir(d);
	return rc;
}

int cr_workspace_remove(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int rc;

	if (fd < 0)
		return -errno;
	fchmod(fd, 0700);
	rc = empty_dir(fd, 0);
	if (rmdir(path) < 0 && !rc)
		rc = -errno;
	return rc;
}
