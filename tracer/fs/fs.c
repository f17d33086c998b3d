/* tracer/fs/fs.c: sets up the run's filesystem view (roots from the class,
 * the options and the workspace), records fs denials, ends what it made. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/stat.h>
#include <cJSON.h>

#include "fs.h"

/* Directories seen not to be links while the roots are set up. */
struct real_memo {
	char *dir[32];		/* owned */
	size_t len[32];
	size_t n;
	/* Read and exec roots that do not exist: where they would be made
	 * (nesting_refused), and the root as written. */
	char **unmade;		/* owned, pairs */
	size_t nunmade;
	/* Links a root's name passes on the way to its real path, each
	 * with the rest of the name after it, and the root's access: added
	 * once every list is in (add_hops). */
	struct hop {
		char *path;	/* owned */
		unsigned acc;
	} *hops;		/* owned */
	size_t nhops;
};

static bool memo_has(const struct real_memo *m, const char *p, size_t len)
{
	for (size_t i = 0; i < m->n; i++)
		if (m->len[i] == len && !memcmp(m->dir[i], p, len))
			return true;
	return false;
}

static void memo_free(struct real_memo *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->dir[i]);
	m->n = 0;
	for (size_t i = 0; i < 2 * m->nunmade; i++)
		free(m->unmade[i]);
	free(m->unmade);
	m->unmade = NULL;
	m->nunmade = 0;
	for (size_t i = 0; i < m->nhops; i++)
		free(m->hops[i].path);
	free(m->hops);
	m->hops = NULL;
	m->nhops = 0;
}

/* A clean absolute path: no empty, "." or ".." component, no trailing
 * slash. Only such a path is its own real path when nothing in it is a
 * link. */
static bool clean_abs(const char *p)
{
	if (p[0] != '/')
		return false;
	if (!p[1])
		return true;
	for (const char *c = p; *c; c++) {
		if (*c != '/')
			continue;
		if (c[1] == '/' || !c[1] ||
		    (c[1] == '.' && (!c[2] || c[2] == '/' ||
				     (c[2] == '.' && (!c[3] || c[3] == '/')))))
			return false;
	}
	return true;
}

/* realpath(3) for the roots: the policy's ~90 roots lie beneath a few
 * directories, and realpath asks the kernel about every prefix of every
 * one (readlink of /etc once per file under it: ~170 calls per run). Here
 * a clean path whose every prefix answers EINVAL to readlink (exists, not
 * a link) is its own real path, and a directory found so is not asked
 * again. A missing or unreachable prefix fails as realpath fails; a link
 * or a dot is realpath's. */
static char *real_path(struct real_memo *m, const char *path,
		       char out[PATH_MAX])
{
	size_t len = strlen(path);
	char buf[PATH_MAX], c;

	if (len >= PATH_MAX || !clean_abs(path))
		return realpath(path, out);
	for (size_t i = 1; i <= len; i++) {
		if (i < len && path[i] != '/')
			continue;
		if (i < len && memo_has(m, path, i))
			continue;
		memcpy(buf, path, i);
		buf[i] = 0;
		if (readlink(buf, &c, 1) >= 0)
			return realpath(path, out);	/* a link */
		if (errno == ENOENT || errno == ENOTDIR || errno == EACCES)
			return NULL;	/* as realpath would fail */
		if (errno != EINVAL)
			return realpath(path, out);
		if (i < len && m->n < CR_ARRAY_SIZE(m->dir) &&
		    (m->dir[m->n] = strdup(buf)))
			m->len[m->n++] = i;
	}
	memcpy(out, path, len + 1);
	return out;
}

/* A read or exec root that does not exist yet, as it would be reached
 * once made: its longest existing ancestor's real path (a link to the
 * workspace, say) and the names below. Kept with the root as written. */
static int note_unmade(struct real_memo *m, const char *path)
{
	char head[PATH_MAX], real[PATH_MAX], *cut, **nu, *made = NULL;

	if (strlen(path) >= sizeof(head) || path[0] != '/')
		return 0;
	strcpy(head, path);
	while ((cut = strrchr(head, '/')) && cut != head) {
		*cut = 0;
		if (real_path(m, head, real)) {
			if (asprintf(&made, "%s%s", strcmp(real, "/") ? real : "",
				     path + (cut - head)) < 0)
				return -ENOMEM;
			break;
		}
	}
	if (!made && !(made = strdup(path)))	/* only "/" above it */
		return -ENOMEM;
	nu = realloc(m->unmade, 2 * (m->nunmade + 1) * sizeof(*nu));
	if (!nu || !(nu[2 * m->nunmade + 1] = strdup(path))) {
		free(made);
		if (nu)
			m->unmade = nu;
		return -ENOMEM;
	}
	m->unmade = nu;
	nu[2 * m->nunmade] = made;
	m->nunmade++;
	return 0;
}

/* Is path (real) strictly inside a writable root of the rules? That root,
 * or NULL. */
static const struct cr_fsroot *inside_writable(const struct cr_fsrules *r,
					       const char *path, size_t len)
{
	for (size_t j = 0; j < r->nroots; j++)
		if ((r->roots[j].acc & CR_FS_W) && r->roots[j].len < len &&
		    cr_path_within(r->roots[j].path, r->roots[j].len, path, len))
			return &r->roots[j];
	return NULL;
}

/* Is the root the name of a link (its real path is a root of its own)?
 * Then it is judged where it leads: a link in the workspace naming a read
 * root outside is the program's to re-point, and paths through it are
 * judged where they lead at each call. */
static bool named_through_link(const struct cr_fsstate *fs,
			       const struct cr_fsroot *root)
{
	for (size_t k = 0; k < fs->nalias; k++)
		if (fs->alias[k].flen == root->len &&
		    !memcmp(fs->alias[k].from, root->path, root->len))
			return true;
	return false;
}

/*
 * A read or exec root strictly inside the workspace or a writable root:
 * roots add up (a path has the access of every root it is in), so the
 * program could write it all the same (found by a probing session: -w ws
 * --ro ws/vendor let it append to, rename and remove vendor). Judged on
 * the rules as made, each root at its real path, and a root not made
 * yet where it would be: the run is refused. One equal to
 * a writable root has merged with it and adds nothing.
 */
static int nesting_refused(struct cr_run *run, const struct real_memo *m)
{
	const struct cr_fsrules *r = &run->fs->rules;
	const char *ws = run->cfg->workspace;
	const struct cr_fsroot *w = NULL;
	const char *root = NULL;
	unsigned acc = 0;

	for (size_t i = 0; !w && i < r->nroots; i++)
		if (!(r->roots[i].acc & CR_FS_W) &&
		    !named_through_link(run->fs, &r->roots[i]) &&
		    (w = inside_writable(r, r->roots[i].path, r->roots[i].len))) {
			root = r->roots[i].path;
			acc = r->roots[i].acc;
		}
	for (size_t i = 0; !w && i < m->nunmade; i++)
		if ((w = inside_writable(r, m->unmade[2 * i],
					 strlen(m->unmade[2 * i])))) {
			root = m->unmade[2 * i + 1];
			acc = cr_fsrules_access(r, root, strlen(root));
		}
	if (!w)
		return 0;
	{
		char real[PATH_MAX];
		bool is_ws = !strcmp(w->path, ws) ||
			     (realpath(ws, real) && !strcmp(w->path, real));

		cr_run_end(run, CR_ST_POLICY_DENIED, NULL,
			   "the %s root %s is inside %s %s, which the program may write: roots add up, so it would be writable too (name read roots outside the writable ones)",
			   acc & CR_FS_X ? "exec" : "read", root,
			   is_ws ? "the workspace" : "the writable root",
			   is_ws ? ws : w->path);
	}
	return -EPERM;
}

/*
 * A root named through a chain of links (d2 -> d1 -> ../real/data, or a
 * venv's bin/python -> python3 -> /usr/bin/python3) passes links that are
 * neither its name nor its real path; the walk steps on each and judges
 * where it lies, so each must be a root too (found by a probing session:
 * the middle link was "outside every root", and a venv's interpreter
 * named by --exec could not start). The name is walked as the kernel
 * walks it, by text: every link met is noted with the rest of the name
 * after it. The notes are kept only if the walk ends at the real path the
 * root was given (the chain did not change meanwhile); 0 or -ENOMEM.
 */
static int note_hops(struct real_memo *m, const char *path, const char *real,
		     unsigned acc)
{
	char done[PATH_MAX] = "", rest[2][PATH_MAX], link[PATH_MAX];
	const char *r = path;
	struct hop *found[40];
	size_t nfound = 0, dlen = 0;
	int k = 0, rc = 0, links = 0;

	if (path[0] != '/')
		return 0;
	for (;;) {
		const char *end;
		size_t n;
		struct stat st;
		ssize_t t;

		while (*r == '/')
			r++;
		if (!*r)
			break;
		end = strchrnul(r, '/');
		n = (size_t)(end - r);
		if (n == 1 && r[0] == '.') {
			r = end;
			continue;
		}
		if (n == 2 && r[0] == '.' && r[1] == '.') {
			while (dlen && done[dlen - 1] != '/')
				dlen--;
			if (dlen)
				dlen--;		/* done holds no link */
			done[dlen] = 0;
			r = end;
			continue;
		}
		if (dlen + 1 + n >= sizeof(done))
			goto drop;
		done[dlen] = '/';
		memcpy(done + dlen + 1, r, n);
		done[dlen + 1 + n] = 0;
		r = end;
		if (lstat(done, &st) < 0)
			goto drop;
		if (!S_ISLNK(st.st_mode)) {
			dlen += 1 + n;
			continue;
		}
		/* A link: noted with what is left of the name after it,
		 * unless that is the name as written (a root already). At
		 * most 40 followed, as the kernel's walk (a chain made a
		 * loop since the root was found would never end). */
		if (++links > 40 || nfound == CR_ARRAY_SIZE(found) ||
		    snprintf(link, sizeof(link), "%s%s", done, r) >=
		    (int)sizeof(link))
			goto drop;
		if (strcmp(link, path)) {
			struct hop *h = malloc(sizeof(*h));

			if (!h || !(h->path = strdup(link))) {
				free(h);
				rc = -ENOMEM;
				goto drop;
			}
			h->acc = acc;
			found[nfound++] = h;
		}
		t = readlink(done, link, sizeof(link) - 1);
		if (t <= 0 || (size_t)t + strlen(r) + 1 >= sizeof(rest[0]))
			goto drop;
		link[t] = 0;
		snprintf(rest[k], sizeof(rest[k]), "%s%s", link, r);
		r = rest[k];
		k ^= 1;
		done[dlen] = 0;
		if (link[0] == '/')
			dlen = done[0] = 0;
	}
	if (strcmp(dlen ? done : "/", real))
		goto drop;		/* not where the root was found */
	{
		struct hop *nh = realloc(m->hops, (m->nhops + nfound) * sizeof(*nh));

		if (!nh && nfound) {
			rc = -ENOMEM;
			goto drop;
		}
		m->hops = nh;
		for (size_t i = 0; i < nfound; i++) {
			m->hops[m->nhops++] = *found[i];
			free(found[i]);
		}
	}
	return 0;
drop:
	for (size_t i = 0; i < nfound; i++) {
		free(found[i]->path);
		free(found[i]);
	}
	return rc;
}

/* The noted links, once every root is in: each a root with the access of
 * the root it leads to, unless a writable root holds it already (its
 * program may change it; nothing is granted there that is not). */
static int add_hops(struct cr_fsstate *fs, struct real_memo *m)
{
	int rc = 0;

	for (size_t i = 0; !rc && i < m->nhops; i++) {
		const char *p = m->hops[i].path;

		if (cr_fsrules_access(&fs->rules, p, strlen(p)) & CR_FS_W) {
			free(m->hops[i].path);
			m->hops[i].path = NULL;
			continue;
		}
		rc = cr_fsrules_add(&fs->rules, p, m->hops[i].acc);
	}
	return rc;
}

/* Is path a link a root's name passes (note_hops)? Such a root is never
 * opened by name: its text goes through links a writer outside the run
 * could re-point at any time, so no descriptor may stand for it (a hop
 * opened after the chain was checked served another user's re-pointed
 * directory under its name, found by a probing session); the walk
 * judges where each of its links leads at each call. */
static bool is_hop(const struct real_memo *m, const char *path)
{
	for (size_t i = 0; i < m->nhops; i++)
		if (m->hops[i].path && !strcmp(m->hops[i].path, path))
			return true;
	return false;
}

/* A root is added as written and as its real path: "/bin" on a merged-/usr
 * system is a link to "/usr/bin". The walk only ever produces real paths,
 * but it must be allowed to step on the link named in the policy. The pair
 * is remembered, for the resolver's fast path (resolve.c). */
static int add_root(struct cr_fsstate *fs, struct real_memo *m,
		    const struct cr_run_config *cfg, const char *path,
		    unsigned acc)
{
	char real[PATH_MAX];
	struct cr_fsalias *na;
	const struct cr_pin *pin = cr_pin_find(cfg, path);
	int rc = cr_fsrules_add(&fs->rules, path, acc);
	bool found = false;

	/* Walked before anything ran: where the walk led, not where the
	 * name leads now. */
	if (!rc && pin && pin->fd < 0) {
		found = false;		/* absent at the walk: stays a name */
	} else if (!rc && pin && strlen(pin->real) < sizeof(real)) {
		strcpy(real, pin->real);
		found = true;
	} else if (!rc) {
		found = real_path(m, path, real) != NULL;
	}

	if (!rc && !found && !(acc & CR_FS_W))
		return note_unmade(m, path);
	if (rc || !found || !strcmp(real, path))
		return rc;
	rc = cr_fsrules_add(&fs->rules, real, acc);
	if (!rc)
		rc = note_hops(m, path, real, acc);
	if (rc || path[0] != '/')
		return rc;
	na = realloc(fs->alias, (fs->nalias + 1) * sizeof(*na));
	if (!na)
		return -ENOMEM;
	fs->alias = na;
	na += fs->nalias;
	na->from = strdup(path);
	na->to = strdup(real);
	if (!na->from || !na->to) {
		free(na->from);
		free(na->to);
		return -ENOMEM;
	}
	na->flen = strlen(na->from);
	na->tlen = strlen(na->to);
	/* "/usr/" and "/usr" name one directory: the walk's form. */
	while (na->flen > 1 && na->from[na->flen - 1] == '/')
		na->from[--na->flen] = 0;
	fs->nalias++;
	return 0;
}

/* Drop the pairs whose link the program could change or must not step
 * on: inside a writable root, or touching a deny entry. */
static void keep_fixed_aliases(struct cr_fsstate *fs)
{
	const struct cr_fsrules *r = &fs->rules;
	size_t k = 0;

	for (size_t i = 0; i < fs->nalias; i++) {
		struct cr_fsalias *a = &fs->alias[i];
		bool keep = true;

		for (size_t j = 0; keep && j < r->nroots; j++)
			if ((r->roots[j].acc & CR_FS_W) &&
			    cr_path_within(r->roots[j].path, r->roots[j].len,
					   a->from, a->flen))
				keep = false;
		for (size_t j = 0; keep && j < r->ndeny; j++) {
			size_t dl = strlen(r->deny[j]);

			if (cr_path_within(r->deny[j], dl, a->from, a->flen) ||
			    cr_path_within(a->from, a->flen, r->deny[j], dl))
				keep = false;
		}
		if (keep) {
			fs->alias[k++] = *a;
		} else {
			free(a->from);
			free(a->to);
		}
	}
	fs->nalias = k;
}

static bool same_file(int a, int b)
{
	struct stat sa, sb;

	return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 &&
	       sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static int add_list(struct cr_fsstate *fs, struct real_memo *m,
		    const struct cr_run_config *cfg,
		    const struct cr_strlist *l, unsigned acc)
{
	for (size_t i = 0; i < l->n; i++) {
		int rc = add_root(fs, m, cfg, l->v[i], acc);

		if (rc)
			return rc;
	}
	return 0;
}

/* One cgroup directory: the files of controller ctrl (all of them for
 * v2, ctrl NULL) that exist there as regular files. */
static int add_cgroup_dir(struct cr_fsrules *r, const char *top,
			  const char *ctrl, const char *path,
			  const char *const *files, size_t nfiles)
{
	char dir[PATH_MAX], file[PATH_MAX];
	size_t clen = ctrl ? strlen(ctrl) : 0;
	struct stat st;
	int l, rc = 0;

	l = snprintf(dir, sizeof(dir), "/sys/fs/cgroup%s%s%s", top,
		     ctrl ? ctrl : "", strcmp(path, "/") ? path : "");
	if (l <= 0 || (size_t)l >= sizeof(dir))
		return 0;
	for (size_t i = 0; !rc && i < nfiles; i++) {
		if (ctrl && (strncmp(files[i], ctrl, clen) || files[i][clen] != '.'))
			continue;
		l = snprintf(file, sizeof(file), "%s/%s", dir, files[i]);
		if (l > 0 && (size_t)l < sizeof(file) && !lstat(file, &st) &&
		    S_ISREG(st.st_mode))
			rc = cr_fsrules_add(r, file, CR_FS_R);
	}
	return rc;
}

/* The limit files of the run's own cgroup (the run shares corral's), read
 * only: runtimes size their heaps and thread pools from them (a JVM, Go,
 * Node, `nproc` in a container). They say what the run may use, nothing
 * about anyone else; the directories stay unlisted and every other file
 * of the hierarchy stays outside. */
static int add_cgroup_limits(struct cr_fsrules *r)
{
	static const char *const files[] = {
		"cpu.max", "cpu.weight", "cpu.cfs_quota_us", "cpu.cfs_period_us",
		"cpu.shares", "cpuset.cpus", "cpuset.cpus.effective",
		"cpuset.mems", "cpuset.mems.effective", "memory.max",
		"memory.high", "memory.swap.max", "memory.limit_in_bytes",
		"memory.soft_limit_in_bytes", "memory.memsw.limit_in_bytes",
		"pids.max",
	};
	char line[512];
	FILE *f = fopen("/proc/self/cgroup", "re");
	int rc = 0;

	if (!f)
		return 0;	/* no cgroups: nothing to show */
	while (!rc && fgets(line, sizeof(line), f)) {
		char *ctrls = strchr(line, ':'), *path, *save = NULL, *c;

		if (!ctrls || !(path = strchr(++ctrls, ':')))
			continue;
		*path++ = 0;
		path[strcspn(path, "\n")] = 0;
		if (path[0] != '/' || strstr(path, "/.."))
			continue;
		/* v2 ("0::/path", no controller) sits at the top or under
		 * "unified" on a hybrid host; v1 under each controller's
		 * name, and only that controller's files are looked for
		 * there: probing all sixteen in every directory cost ~440
		 * failed lstat calls per run on a v1 host, a start-up cost
		 * of its own (docs/performance.md). */
		bool v1 = false;

		for (c = strtok_r(ctrls, ",", &save); !rc && c;
		     c = strtok_r(NULL, ",", &save)) {
			if (!strncmp(c, "name=", 5))
				continue;
			v1 = true;
			rc = add_cgroup_dir(r, "/", c, path, files,
					    CR_ARRAY_SIZE(files));
		}
		if (!v1 && !*ctrls) {
			static const char *const v2[] = { "", "/unified" };

			for (size_t v = 0; !rc && v < CR_ARRAY_SIZE(v2); v++)
				rc = add_cgroup_dir(r, v2[v], NULL, path, files,
						    CR_ARRAY_SIZE(files));
		}
	}
	fclose(f);
	return rc;
}

/* corral's own records, when the caller put them in a root: absent to the
 * program, as a deny entry (a shared trail holds every run's commands,
 * denials and destinations, and a program with --ro of its directory
 * read them; found by a probing session). Other runs naming the same
 * root are the operator's to keep away (docs/threat-model.md). */
static int hide_records(struct cr_run *run, struct cr_fsstate *fs)
{
	const struct cr_run_config *cfg = run->cfg;
	char real[PATH_MAX];
	int rc = 0;

	/* Where they are cannot be told: no run (fail closed). */
	if (run->audit_fd >= 0 &&
	    (rc = cr_fd_realpath(run->audit_fd, real, sizeof(real))))
		return rc;
	if (run->audit_fd >= 0 &&
	    cr_fsrules_access(&fs->rules, real, strlen(real)))
		rc = cr_fsrules_add_deny(&fs->rules, real);
	if (!rc && cfg->result_dirfd >= 0 && cfg->result_file &&
	    (rc = cr_fd_realpath(cfg->result_dirfd, real, sizeof(real))))
		return rc;
	if (!rc && cfg->result_dirfd >= 0 && cfg->result_file) {
		const char *slash = strrchr(cfg->result_file, '/');
		const char *base = slash ? slash + 1 : cfg->result_file;
		size_t n = strlen(real);

		if (n + 1 + strlen(base) < sizeof(real)) {
			if (n > 1)
				real[n++] = '/';
			strcpy(real + n, base);
			if (cr_fsrules_access(&fs->rules, real, strlen(real)))
				rc = cr_fsrules_add_deny(&fs->rules, real);
		}
	}
	/* The file --json writes the record to (`>> records.jsonl`): every
	 * earlier run's whole record, stdout included, which a program with
	 * --ro of its directory read (found by a probing session). */
	if (!rc && cfg->json) {
		struct stat st;
		bool file = fstat(STDOUT_FILENO, &st) == 0 &&
			    S_ISREG(st.st_mode);

		/* One without a name (removed since) cannot be read by it. */
		if (file && !cr_fd_realpath(STDOUT_FILENO, real, sizeof(real)) &&
		    st.st_nlink &&
		    cr_fsrules_access(&fs->rules, real, strlen(real)))
			rc = cr_fsrules_add_deny(&fs->rules, real);
	}
	return rc;
}

int cr_fs_setup(struct cr_run *run)
{
	const struct cr_run_config *cfg = run->cfg;
	const struct cr_class *c = cfg->cls;
	struct cr_fsstate *fs = calloc(1, sizeof(*fs));
	struct real_memo memo = { .n = 0 };
	int rc;

	if (!fs)
		return -ENOMEM;
	run->fs = fs;
	fs->root_fd = fs->proc_fd = fs->shm_fd = fs->shm_priv = -1;
	fs->pty_weak = -1;
	fs->linkfd_in = -1;
	fs->rmheld_in = -1;
	fs->rules.hide = c->fs_hide;
	{
		struct stat in;

		if (fstat(0, &in) == 0 && S_ISFIFO(in.st_mode)) {
			fs->stdin_pipe_dev = in.st_dev;
			fs->stdin_pipe_ino = in.st_ino;
		}
	}
	rc = add_list(fs, &memo, cfg, &c->fs_read, CR_FS_R);
	if (!rc)
		rc = add_list(fs, &memo, cfg, &c->fs_write, CR_FS_R | CR_FS_W);
	if (!rc)
		rc = add_list(fs, &memo, cfg, &c->fs_exec, CR_FS_R | CR_FS_X);
	if (!rc)
		rc = add_list(fs, &memo, cfg, &cfg->extra_ro, CR_FS_R);
	if (!rc)
		rc = add_list(fs, &memo, cfg, &cfg->extra_rw, CR_FS_R | CR_FS_W);
	if (!rc)
		rc = add_list(fs, &memo, cfg, &cfg->extra_exec, CR_FS_R | CR_FS_X);
	if (!rc)
		rc = add_root(fs, &memo, cfg, cfg->workspace,
			      CR_FS_R | CR_FS_W | CR_FS_X);
	if (!rc)
		rc = add_hops(fs, &memo);
	if (!rc)
		rc = nesting_refused(run, &memo);
	if (!rc)
		rc = add_cgroup_limits(&fs->rules);
	for (size_t i = 0; !rc && i < c->fs_deny.n; i++) {
		const struct cr_pin *pin = cr_pin_find(cfg, c->fs_deny.v[i]);
		char real[PATH_MAX];
		const char *r = NULL;

		/* A policy file's deny entries are walked as its roots are
		 * (run.c): where the walk led, never the name again (a live
		 * run's program flipping a link on it got later runs what
		 * the entry denies, found by a probing session). */
		rc = cr_fsrules_add_deny(&fs->rules, c->fs_deny.v[i]);
		/* /proc/self and /proc/thread-self name each process's own
		 * (resolve.c): resolved here they would name corral's, and
		 * its fds, cwd and root (a deny of /proc/self/cwd denied the
		 * workspace, of /proc/self/fd/0 /dev/null; found by a probing
		 * session). The text alone. */
		if (cr_path_within("/proc/self", 10, c->fs_deny.v[i],
				   strlen(c->fs_deny.v[i])) ||
		    cr_path_within("/proc/thread-self", 17, c->fs_deny.v[i],
				   strlen(c->fs_deny.v[i])))
			r = NULL;
		else if (pin)
			r = pin->real;	/* NULL: absent then, the name only */
		else if (real_path(&memo, c->fs_deny.v[i], real))
			r = real;
		if (!rc && r && strcmp(r, c->fs_deny.v[i]))
			rc = cr_fsrules_add_deny(&fs->rules, r);
	}
	if (!rc)
		rc = hide_records(run, fs);
	if (rc) {
		memo_free(&memo);
		return rc;
	}
	/* An fd per directory root, for the one-call fast path (resolve.c). */
	fs->root_fds = calloc(fs->rules.nroots ? fs->rules.nroots : 1, sizeof(int));
	fs->root_deny = calloc(fs->rules.nroots ? fs->rules.nroots : 1, sizeof(bool));
	fs->root_dev = calloc(fs->rules.nroots ? fs->rules.nroots : 1, sizeof(dev_t));
	fs->leaf_fds = calloc(fs->rules.nroots ? fs->rules.nroots : 1, sizeof(int));
	if (!fs->root_fds || !fs->root_deny || !fs->root_dev || !fs->leaf_fds) {
		memo_free(&memo);
		return -ENOMEM;
	}
	for (size_t i = 0; i < fs->rules.nroots; i++)
		fs->leaf_fds[i] = -1;
	for (size_t i = 0; i < fs->rules.nroots; i++) {
		const struct cr_fsroot *r = &fs->rules.roots[i];
		const struct cr_pin *pin = cr_pin_find(cfg, r->path);
		bool opened = false;

		/* The workspace is the directory judged when it was made,
		 * whatever its name leads to now; a walked root the
		 * directory its walk opened. */
		if (!strcmp(r->path, cfg->workspace))
			fs->root_fds[i] = cr_workspace_fd(cfg);
		else if (pin && pin->fd < 0)
			fs->root_fds[i] = -1;	/* absent at the walk */
		else if (pin && !strcmp(pin->real, r->path))
			fs->root_fds[i] = pin->dir ?
				fcntl(pin->fd, F_DUPFD_CLOEXEC, 0) : -1;
		else if (!pin && is_hop(&memo, r->path)) {
			fs->root_fds[i] = -1;
			fs->leaf_fds[i] = -2;	/* no Landlock rule either */
		} else {
			fs->root_fds[i] = open(r->path, O_PATH | O_NOFOLLOW |
					       O_CLOEXEC);
			opened = true;
			if (fs->root_fds[i] < 0 && errno == ENOENT)
				fs->leaf_fds[i] = -2;
		}
		/* A root named through a link keeps no fd unless the name
		 * still leads where the walk went: paths through it then
		 * take the walk, which judges where each link leads now. */
		if (pin && fs->root_fds[i] >= 0 &&
		    !same_file(fs->root_fds[i], pin->fd)) {
			close(fs->root_fds[i]);
			fs->root_fds[i] = -1;
		}
		{
			struct stat rst;
			bool known = fs->root_fds[i] >= 0 &&
				     !cr_quiet_fstat(fs->root_fds[i], &rst);

			/* Opened without O_DIRECTORY: a file or a link is
			 * the Landlock ruleset's, as opened here, and no
			 * root fd (one open per root, not three: ~60 of
			 * the default class's roots are files, and each
			 * cost a failed open here and another open and a
			 * close for the ruleset, at every start-up). */
			if (opened && fs->root_fds[i] >= 0 &&
			    (!known || !S_ISDIR(rst.st_mode))) {
				if (known)
					fs->leaf_fds[i] = fs->root_fds[i];
				else
					close(fs->root_fds[i]);
				fs->root_fds[i] = -1;
				known = false;
			}
			/* What a parent met without crossing a mount
			 * shares (resolve.c fast): asked once, quietly. */
			if (known)
				fs->root_dev[i] = rst.st_dev;
		}
		for (size_t j = 0; j < fs->rules.ndeny; j++)
			if (cr_path_within(r->path, r->len, fs->rules.deny[j],
					   strlen(fs->rules.deny[j])))
				fs->root_deny[i] = true;
		/* A root named through a link holds the directory it leads
		 * to: a deny entry inside that directory's own path is inside
		 * this root too, whatever its text (a policy's deny carved
		 * out of a/real was read and written as link/secret, found by
		 * a probing session). Such a root takes the walk, which judges
		 * real paths. Asked only when there are deny entries. */
		if (fs->rules.ndeny && fs->root_fds[i] >= 0 &&
		    !fs->root_deny[i]) {
			char real[PATH_MAX];

			if (cr_fd_realpath(fs->root_fds[i], real, sizeof(real)))
				fs->root_deny[i] = true;	/* unknown: the walk */
			else if (strcmp(real, r->path))
				for (size_t j = 0; j < fs->rules.ndeny; j++)
					if (cr_path_within(real, strlen(real),
							   fs->rules.deny[j],
							   strlen(fs->rules.deny[j])))
						fs->root_deny[i] = true;
		}
	}
	memo_free(&memo);
	keep_fixed_aliases(fs);
	if ((rc = cr_fs_tops_setup(fs)))
		return rc;
	fs->root_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	fs->proc_fd = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fs->root_fd < 0 || fs->proc_fd < 0)
		return -errno;
	{
		struct stat st;

		if (fstat(fs->proc_fd, &st) < 0)
			return -errno;
		fs->proc_dev = st.st_dev;
	}
	fs->shm_fd = open("/dev/shm", O_PATH | O_DIRECTORY | O_CLOEXEC);
	{
		/* /dev/shm's own filesystem, when it is a mount of its own
		 * (not merely a directory of its parent's, as with a link to
		 * /run/shm on /run's tmpfs): its objects met anywhere else
		 * are refused (resolve.c). */
		struct stat shm, up;

		if (fs->shm_fd >= 0 && fstat(fs->shm_fd, &shm) == 0 &&
		    fstatat(fs->shm_fd, "..", &up, 0) == 0 &&
		    shm.st_dev != up.st_dev) {
			char real[PATH_MAX];

			fs->shm_dev = shm.st_dev;
			/* Met through the link, a path names the target. */
			if (realpath("/dev/shm", real) && strcmp(real, "/dev/shm"))
				fs->shm_real = strdup(real);
		}
	}
	/* What a supervisor killed with -9 left in /dev/shm goes now. */
	cr_fs_shm_sweep();
	cr_fs_held_setup(run);
	/* The supervisor creates files for the program under the program's
	 * umask, set around each creation (cr_fs_umask_enter); in between,
	 * none of ours applies. */
	run->caller_umask = umask(0);
	return 0;
}

mode_t cr_fs_safe_mode(struct cr_run *run, const struct seccomp_notif *n,
		       const char *sys, const char *target, mode_t mode,
		       bool dir)
{
	/* A set-user-ID file left in a kept workspace runs as the agent's
	 * user for anyone on the host who can reach it (as root, a
	 * set-uid-root shell). The kernel clears set-group-ID silently in
	 * some cases too; a program sees the bit gone, not an error. */
	mode_t strip = S_ISUID | (dir ? 0 : S_ISGID);

	if (mode & strip) {
		cr_deny(run, (pid_t)n->pid, sys, target, "fs",
			"set-user-ID and set-group-ID bits are not set");
		mode &= ~strip;
	}
	return mode;
}

void cr_fs_leaf_fds_drop(struct cr_fsstate *fs)
{
	if (!fs)
		return;
	for (size_t i = 0; fs->leaf_fds && i < fs->rules.nroots; i++)
		if (fs->leaf_fds[i] >= 0)
			close(fs->leaf_fds[i]);
	free(fs->leaf_fds);
	fs->leaf_fds = NULL;
}

void cr_fs_finish(struct cr_run *run)
{
	struct cr_fsstate *fs = run->fs;

	if (!fs)
		return;
	cr_fs_fifo_finish(run);
	cr_fs_held_finish(fs);
	/* POSIX shm objects and semaphores of the run die with it: its
	 * private directory in /dev/shm goes, with all in it (shm.c). */
	cr_fs_shm_finish(fs);
	cr_fs_tops_finish(fs);
	free(fs->shm_real);
	for (size_t i = 0; fs->root_fds && i < fs->rules.nroots; i++)
		if (fs->root_fds[i] >= 0)
			close(fs->root_fds[i]);
	free(fs->root_fds);
	cr_fs_leaf_fds_drop(fs);
	free(fs->root_deny);
	free(fs->root_dev);
	for (size_t i = 0; i < fs->nalias; i++) {
		free(fs->alias[i].from);
		free(fs->alias[i].to);
	}
	free(fs->alias);
	free(fs->tops);
	free(fs->ptys);
	free(fs->pty_held);
	cr_fsrules_free(&fs->rules);
	if (fs->root_fd >= 0)
		close(fs->root_fd);
	if (fs->proc_fd >= 0)
		close(fs->proc_fd);
	if (fs->shm_fd >= 0)
		close(fs->shm_fd);
	if (fs->pty_weak >= 0)
		close(fs->pty_weak);
	cr_fs_linkfd_free(fs);
	cr_fs_rmheld_free(fs);
	free(fs);
	run->fs = NULL;
}

void cr_fs_deny(struct cr_run *run, const struct seccomp_notif *n,
		const char *syscall, const struct cr_fsres *res,
		const char *why)
{
	cr_deny(run, (pid_t)n->pid, syscall, res->path[0] ? res->path : NULL,
		res->layer ? res->layer : "fs", why);
}

/* The task's umask from /proc/<tid>/status; -1 when unreadable. */
static int task_umask(pid_t tid)
{
	char path[64], buf[2048], *p;

	snprintf(path, sizeof(path), "/proc/%d/status", tid);
	if (cr_read_small(AT_FDCWD, path, buf, sizeof(buf)) < 0)
		return -1;
	p = strstr(buf, "\nUmask:");
	return p ? (int)(strtoul(p + 7, NULL, 8) & 0777) : -1;
}

mode_t cr_fs_umask_enter(struct cr_run *run, pid_t tid)
{
	mode_t m;
	int u;

	if (!cr_tasks_umask_get(&run->tasks, tid, &m)) {
		u = task_umask(tid);
		m = u < 0 ? 022 : (mode_t)u;
		if (u >= 0)
			cr_tasks_umask_put(&run->tasks, tid, m);
	}
	/* Ours is 0 between creations: 0 needs no call either way. */
	if (m)
		umask(m);
	return m;
}

void cr_fs_umask_leave(mode_t entered)
{
	if (entered)
		umask(0);
}

int cr_fs_task_fsuid(pid_t tid, uid_t *fsuid)
{
	char path[64], buf[4096], *p;
	unsigned long r, e, sv, f;

	snprintf(path, sizeof(path), "/proc/%d/status", tid);
	if (cr_read_small(AT_FDCWD, path, buf, sizeof(buf)) < 0)
		return -1;
	p = strstr(buf, "\nUid:");
	if (!p || sscanf(p + 5, "%lu %lu %lu %lu", &r, &e, &sv, &f) != 4)
		return -1;
	/* A capability (CAP_FOWNER, CAP_CHOWN) would let the kernel allow
	 * what the owner check refuses: then nothing is said. */
	p = strstr(buf, "\nCapEff:");
	if (!p || strtoull(p + 8, NULL, 16) != 0)
		return -1;
	*fsuid = (uid_t)f;
	return 0;
}
