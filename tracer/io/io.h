/* tracer/io/io.h: data in and out of the workspace: inputs copied or
 * extracted beneath it before the program starts, artifacts exported after. */
#ifndef CORRAL_IO_H
#define CORRAL_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "corral/digest.h"
#include "../tracer.h"

#define CR_SHA256_HEX (CR_SHA256_HEX_LEN + 1)

/* openat2 beneath dirfd, no link followed anywhere (place.c): an fd, or
 * -errno. */
int cr_io_beneath(int dirfd, const char *path, int flags, mode_t mode);

/* ---- digest.c: the tree digest (SHA-256: include/corral/digest.h) ---- */

void cr_sha256_buf(const void *p, size_t n, unsigned char out[CR_SHA256_LEN]);
/* SHA-256 of an argument vector: each argument followed by one NUL byte. */
void cr_sha256_argv(char *const *argv, unsigned char out[CR_SHA256_LEN]);

/* One object placed in the workspace by an input (docs/interface.md,
 * "Digests"). */
enum cr_io_kind { CR_IO_DIR, CR_IO_FILE, CR_IO_SYMLINK };

struct cr_io_entry {
	char *path;		/* owned: relative to the workspace */
	size_t skip;		/* path + skip: relative to the input's DEST;
				 * == strlen(path) for DEST itself */
	enum cr_io_kind kind;
	bool exec;		/* files: the owner's execute bit */
	bool hardlink;		/* a second name of an earlier file */
	uint64_t size;
	unsigned char sha[CR_SHA256_LEN];
	char *target;		/* owned: symlinks */
};

/* The digest of the entries [from, n) over their DEST-relative paths; the
 * entry for DEST itself is left out. Sorts that range. */
void cr_io_tree_digest(struct cr_io_entry *e, size_t n,
		       unsigned char out[CR_SHA256_LEN]);

/* ---- place.c: writing beneath the workspace, never through a link ---- */

struct cr_io_place {
	int ws_fd;		/* the workspace, O_PATH directory; borrowed */
	mode_t umask;		/* the caller's */
	struct cr_io_entry *e;	/* owned: everything created, in order */
	size_t n, cap;
	uint64_t bytes, max_bytes;	/* every input together: disk budget */
	uint64_t skipped;	/* decoded, never written: counted with bytes */
	uint64_t files, max_files;	/* and files budget */
	uint64_t entries;	/* archive entries read, placing or not */
	size_t scope;		/* hard links name entries from here on only */
	size_t *ix;		/* owned: files of the scope by path, index + 1 */
	size_t ixcap, ixn;	/* slots (a power of two, or 0), used */
	/* Between blocks and entries (inputs.c): 0, -ETIME or -ECANCELED. */
	int (*check)(struct cr_io_place *p);
	uint64_t deadline_ns;	/* placing ends by then (CLOCK_MONOTONIC) */
	uint64_t deadline_ms;	/* the budget behind it, for the message */
	uint64_t sig_ns;	/* the signalfd was last read then */
	int sigfd;		/* the run's signalfd, borrowed; or -1 */
	int signo;		/* the signal that cancelled placing */
	struct cr_run *run;	/* borrowed (its sigfd), or NULL */
	struct cr_sha256 *h;	/* owned: the file being written */
	uint64_t hoff;		/* bytes of it digested */
	char why[512];		/* the refusal, one line */
};

/* Is this a name an input may create? Normalises raw ("./a//b/" ->
 * "a/b") into out; "" is DEST itself. 0, or -EPERM with the reason in
 * why (absolute, "..", too long). */
int cr_io_name_norm(const char *raw, char *out, size_t outlen, char *why,
		    size_t whylen);
/* Does a symbolic link at rel (DEST-relative) with this target stay inside
 * DEST, whatever the other links of DEST point at? */
bool cr_io_link_inside(const char *rel, const char *target);

/* Directory rel (workspace-relative, normalised) and its missing parents,
 * each made 0700|mode and recorded; returns an O_PATH fd of it or -errno.
 * A component that is a symlink is -ELOOP. */
int cr_io_place_dir(struct cr_io_place *p, const char *rel, size_t skip,
		    mode_t mode);
/* The parent of rel made (as above): its fd, and *leaf the last name. */
int cr_io_place_parent(struct cr_io_place *p, const char *rel, size_t skip,
		       const char **leaf);
/* A new regular file (never an existing name): a writable fd or -errno;
 * the entry is recorded as the last one (p->e[p->n - 1]). */
int cr_io_place_file(struct cr_io_place *p, const char *rel, size_t skip,
		     mode_t mode);
/* Write len bytes at off into fd, counting them (the entry's size and the
 * bytes budget) before they are written: -EFBIG past the budget. */
int cr_io_place_write(struct cr_io_place *p, int fd, const void *buf,
		      size_t len, uint64_t off);
/* The file is complete at size bytes (at least what was written): its
 * digest is taken. */
int cr_io_place_file_end(struct cr_io_place *p, int fd, uint64_t size);
int cr_io_place_symlink(struct cr_io_place *p, const char *rel, size_t skip,
			const char *target);
/* A second name for an earlier file entry (workspace-relative). */
int cr_io_place_link(struct cr_io_place *p, const char *rel, size_t skip,
		     const char *earlier);
/* Count one more entry: -EDQUOT past the files budget. */
int cr_io_place_count(struct cr_io_place *p);
/* Count n bytes decoded and never written (an archive's data that is
 * skipped) against the same budget as written bytes: -EFBIG past it. */
int cr_io_place_skip(struct cr_io_place *p, uint64_t n);
/* Between blocks and entries: p->check's answer (-ETIME past the
 * deadline, -ECANCELED once a signal that cancels the run is read, with
 * p->signo), else 0. */
int cr_io_place_check(struct cr_io_place *p);
/* Hard links made from now on may name only files placed from now on. */
void cr_io_place_scope(struct cr_io_place *p);
/* p->why says why placing entry (NULL: the input itself) of input label
 * failed with rc; returns -EPERM when the input is refused for what it
 * holds, rc for a failure of the host. */
int cr_io_place_error(struct cr_io_place *p, const char *label,
		      const char *entry, int rc);
/* Remove everything placed, newest first (a refused input leaves nothing). */
void cr_io_place_undo(struct cr_io_place *p);
void cr_io_place_free(struct cr_io_place *p);

/* ---- archive.c ---- */

/* Extract the archive open at fd into DEST (workspace-relative, may be "")
 * under the place's rules. 0, -EPERM (refused: p->why names the entry) or
 * another -errno (p->why says what failed). */
int cr_io_archive_extract(struct cr_io_place *p, int fd, const char *label,
			  const char *dest);

/* ---- inputs.c ---- */

/* --input SRC[:DEST] into malloc'd halves (DEST defaults to SRC's last
 * name); 0, or -EINVAL with the reason in err. */
int cr_io_input_split(const char *arg, char **from, char **to, char *err,
		      size_t errlen);

struct cr_io_input {
	char *from;		/* owned: as given */
	char *to;		/* owned: normalised DEST, "" for the workspace */
	bool extract;
	bool from_request;	/* the agent's data: must be readable by the class */
	const char *kind;	/* "file", "directory", "archive" once placed */
	unsigned char sha[CR_SHA256_LEN];
	unsigned char archive_sha[CR_SHA256_LEN];	/* archives: the file */
	uint64_t files, bytes;
};

/* ---- artifacts.c ---- */

struct cr_io_artifact {
	char *path;		/* owned: workspace-relative */
	uint64_t bytes;
	unsigned char sha[CR_SHA256_LEN];
	const char *skipped;	/* static: why it was not exported, or NULL */
};

void cr_io_artifacts_collect(struct cr_run *run);

/* ---- io.c: the area's state and its hooks into the run ---- */

struct cr_io {
	struct cr_io_input *in;	/* owned */
	size_t nin;
	struct cr_io_artifact *art;	/* owned: exported and skipped */
	size_t nart;
	size_t nskipped;		/* of them skipped */
	uint64_t skipped_dropped;	/* skipped past the listed ones */
	unsigned char command_sha[CR_SHA256_LEN];
	int out_fd;		/* --output-dir, O_PATH directory; owned, or -1 */
	int ws_fd;		/* the workspace, O_PATH, opened before the
				 * program ran; owned, or -1 */
};

/* Before the budgets' baseline: every input placed, or the run ended
 * (policy_denied for a refused input) and -EPERM/-errno returned. */
int cr_io_setup(struct cr_run *run);
/* Copies or extracts the inputs (inputs.c). */
int cr_io_inputs_place(struct cr_run *run);
void cr_io_finish(struct cr_run *run);
/* The result's and the audit start event's fields (cJSON objects). */
void cr_io_result(const struct cr_run *run, void *result);
void cr_io_audit_start(const struct cr_run *run, void *fields);
void cr_io_free(struct cr_run *run);

#endif
