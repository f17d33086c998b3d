/* tracer/io/io.c: the inputs-and-artifacts area's state and its hooks into
 * the run: set-up, collection at cleanup, result and audit fields. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <cJSON.h>

#include "io.h"
#include "corral/fsrules.h"

static int add_input(struct cr_io *io, const char *from, const char *to,
		     bool extract, bool from_request, char *err, size_t errlen)
{
	struct cr_io_input *in = &io->in[io->nin];
	char norm[PATH_MAX], why[128];

	if (cr_io_name_norm(to, norm, sizeof(norm), why, sizeof(why))) {
		cr_errf(err, errlen, "input %s: destination %s: %s", from, to, why);
		return -EINVAL;
	}
	memset(in, 0, sizeof(*in));
	in->from = strdup(from);
	in->to = strdup(norm);
	if (!in->from || !in->to) {
		free(in->from);
		free(in->to);
		return -ENOMEM;
	}
	in->extract = extract;
	in->from_request = from_request;
	io->nin++;
	return 0;
}

/* The output directory must not lie where the program could write: it
 * could plant files there that would pass for artifacts, or links. */
static int check_out_dir(struct cr_run *run, const char *real, char *err,
			 size_t errlen)
{
	const struct cr_run_config *cfg = run->cfg;
	char which[PATH_MAX + 128];
	size_t len;

	len = strlen(real);
	if (cr_path_within(cfg->workspace, strlen(cfg->workspace), real, len) ||
	    cr_path_within(real, len, cfg->workspace, strlen(cfg->workspace))) {
		cr_errf(err, errlen, "--output-dir %s: inside or around the workspace, which the program writes",
			cfg->output_dir);
		return -EINVAL;
	}
	/* Judged on real paths both ways (a root written "DIR/" or through
	 * "..", or a link, is the same directory; an output directory
	 * around a root gets the program's files under its names). */
	if (cr_audit_path_writable(cfg, NULL, real, which, sizeof(which)) ||
	    cr_audit_path_holds_writable(cfg, real, which, sizeof(which))) {
		cr_errf(err, errlen, "--output-dir %s: %s",
			cfg->output_dir, which);
		return -EINVAL;
	}
	/* What the program made lands there, modes kept: the places a
	 * workspace may not be (the caller's home, a denied root), and an
	 * exec root or around one or a read root, would put its files where
	 * the caller or a later run takes them for their own (a probing
	 * session planted ~/.bash_login, an authorized_keys in a denied
	 * ~/.ssh and a tool in an exec root). --workspace-unsafe lifts it,
	 * as it does for -w. */
	if (!cfg->ws_unsafe &&
	    (cr_workspace_judge(cfg, real, which, sizeof(which)) ||
	     cr_audit_path_near_roots(cfg, real, which, sizeof(which)))) {
		cr_errf(err, errlen, "--output-dir %s: %s (--workspace-unsafe to use it anyway)",
			cfg->output_dir, which);
		return -EINVAL;
	}
	return 0;
}

static int open_out_dir(struct cr_run *run, char *err, size_t errlen)
{
	const struct cr_run_config *cfg = run->cfg;
	char real[PATH_MAX], why[PATH_MAX + 256] = "";
	bool made;
	int rc, fd = -1;

	rc = cr_oppath_mkdir(cfg->output_dir, why, sizeof(why), &made);
	if (rc && rc != -EPERM) {
		cr_errf(err, errlen, "--output-dir %s: cannot make it: %s",
			cfg->output_dir, strerror(-rc));
		return rc;
	}
	/* Judged on the directory opened, which is where artifacts go; a
	 * file or a fifo there is refused now, not met at the export (a
	 * run went on and exported nothing with no word but a skipped
	 * entry: found by a probing session). */
	if (!rc)
		rc = cr_oppath_open(cfg->output_dir, &fd, why, sizeof(why));
	if (!rc) {
		struct stat st;

		rc = fstat(fd, &st) < 0 ? -errno :
		     !S_ISDIR(st.st_mode) ? -ENOTDIR : 0;
	}
	if (!rc)
		rc = cr_fd_realpath(fd, real, sizeof(real));
	if (rc) {
		cr_errf(err, errlen, "--output-dir %s: %s", cfg->output_dir,
			rc == -EPERM && why[0] ? why : strerror(-rc));
		if (fd >= 0)
			close(fd);
		return rc == -EPERM ? -EINVAL : rc;
	}
	rc = check_out_dir(run, real, err, errlen);
	if (rc) {
		if (made)
			rmdir(real);
		close(fd);
		return rc;
	}
	run->io->out_fd = fd;
	return 0;
}

int cr_io_setup(struct cr_run *run)
{
	const struct cr_run_config *cfg = run->cfg;
	const struct cr_request *req = cfg->req;
	struct cr_io *io = calloc(1, sizeof(*io));
	size_t n = cfg->inputs.n + (req ? req->ninputs : 0);
	char err[512] = "";
	int rc = 0;

	if (!io)
		return -ENOMEM;
	run->io = io;
	io->out_fd = io->ws_fd = -1;
	cr_sha256_argv(cfg->argv, io->command_sha);
	io->in = calloc(n ? n : 1, sizeof(*io->in));
	if (!io->in)
		return -ENOMEM;
	for (size_t i = 0; !rc && i < cfg->inputs.n; i++) {
		cr_autofree char *from = NULL;
		cr_autofree char *to = NULL;

		rc = cr_io_input_split(cfg->inputs.v[i], &from, &to, err, sizeof(err));
		/* SRC:DEST/ extracts when SRC is a file (inputs.c). */
		if (!rc)
			rc = add_input(io, from, to, to[strlen(to) - 1] == '/',
				       false, err, sizeof(err));
	}
	for (size_t i = 0; !rc && req && i < req->ninputs; i++)
		rc = add_input(io, req->inputs[i].from, req->inputs[i].to,
			       req->inputs[i].extract, true, err, sizeof(err));
	if (!rc && cfg->output_dir)
		rc = open_out_dir(run, err, sizeof(err));
	if (!rc) {
		/* Taken before the program runs: a workspace path swapped
		 * later is not where artifacts are read from. */
		io->ws_fd = cr_workspace_fd(cfg);
		if (io->ws_fd < 0) {
			rc = io->ws_fd;
			cr_errf(err, sizeof(err), "cannot open the workspace: %s",
				strerror(-rc));
		}
	}
	if (rc) {
		cr_run_end(run, CR_ST_PLATFORM_FAILURE, NULL, "%s", err);
		return rc;
	}
	return cr_io_inputs_place(run);
}

static void add_hex(cJSON *o, const char *k, const unsigned char d[CR_SHA256_LEN]);

/* What left the workspace, for the audit trail: names and digests, never
 * contents. */
static void audit_artifacts(struct cr_run *run)
{
	const struct cr_io *io = run->io;
	cJSON *f = cJSON_CreateObject(), *a;

	if (!f)
		return;
	a = cJSON_AddArrayToObject(f, "artifacts");
	for (size_t i = 0; a && i < io->nart; i++) {
		cJSON *o;

		if (io->art[i].skipped || !(o = cJSON_CreateObject()))
			continue;
		cr_json_add_bytes(o, "path", io->art[i].path, strlen(io->art[i].path));
		cJSON_AddNumberToObject(o, "bytes", (double)io->art[i].bytes);
		add_hex(o, "sha256", io->art[i].sha);
		cJSON_AddItemToArray(a, o);
	}
	cJSON_AddNumberToObject(f, "skipped",
				(double)(io->nskipped + io->skipped_dropped));
	cr_audit_event(run, "artifacts", f);
}

void cr_io_finish(struct cr_run *run)
{
	/* Only a program that ran leaves artifacts; the tree is dead. */
	if (!run->io || !run->start_ns || run->io->out_fd < 0)
		return;
	cr_io_artifacts_collect(run);
	audit_artifacts(run);
}

static void add_hex(cJSON *o, const char *k, const unsigned char d[CR_SHA256_LEN])
{
	char hex[CR_SHA256_HEX];

	cr_sha256_tohex(d, hex);
	cJSON_AddStringToObject(o, k, hex);
}

static cJSON *inputs_json(const struct cr_run *run)
{
	const struct cr_io *io = run->io;
	cJSON *a = cJSON_CreateArray();

	for (size_t i = 0; a && io && i < io->nin; i++) {
		const struct cr_io_input *in = &io->in[i];
		cJSON *o;

		if (!in->kind)
			continue;	/* not placed: the run was refused */
		o = cJSON_CreateObject();
		if (!o)
			break;
		cr_json_add_bytes(o, "from", in->from, strlen(in->from));
		cr_json_add_bytes(o, "to", in->to, strlen(in->to));
		cJSON_AddStringToObject(o, "kind", in->kind);
		add_hex(o, "sha256", in->sha);
		if (!strcmp(in->kind, "archive"))
			add_hex(o, "archive_sha256", in->archive_sha);
		cJSON_AddNumberToObject(o, "files", (double)in->files);
		cJSON_AddNumberToObject(o, "bytes", (double)in->bytes);
		cJSON_AddItemToArray(a, o);
	}
	return a;
}

static cJSON *digests_json(const struct cr_run *run)
{
	const struct cr_run_config *cfg = run->cfg;
	cJSON *o = cJSON_CreateObject();
	unsigned char d[CR_SHA256_LEN];

	if (!o)
		return NULL;
	if (run->io) {
		add_hex(o, "command", run->io->command_sha);
	} else if (cfg->argv) {
		cr_sha256_argv(cfg->argv, d);
		add_hex(o, "command", d);
	} else {
		cJSON_AddNullToObject(o, "command");
	}
	if (cfg->req)
		add_hex(o, "request", cfg->request_sha256);
	else
		cJSON_AddNullToObject(o, "request");
	if (cfg->policy)
		add_hex(o, "policy", cfg->policy_sha256);
	else
		cJSON_AddNullToObject(o, "policy");
	return o;
}

void cr_io_result(const struct cr_run *run, void *result)
{
	const struct cr_io *io = run->io;
	cJSON *r = result, *a, *s;

	cJSON_AddItemToObject(r, "inputs", inputs_json(run));
	cJSON_AddItemToObject(r, "digests", digests_json(run));
	a = cJSON_AddArrayToObject(r, "artifacts");
	s = cJSON_AddArrayToObject(r, "artifacts_skipped");
	for (size_t i = 0; a && s && io && i < io->nart; i++) {
		const struct cr_io_artifact *art = &io->art[i];
		cJSON *o = cJSON_CreateObject();

		if (!o)
			break;
		cr_json_add_bytes(o, "path", art->path, strlen(art->path));
		if (art->skipped) {
			cJSON_AddStringToObject(o, "reason", art->skipped);
			cJSON_AddItemToArray(s, o);
		} else {
			cJSON_AddNumberToObject(o, "bytes", (double)art->bytes);
			add_hex(o, "sha256", art->sha);
			cJSON_AddItemToArray(a, o);
		}
	}
	cJSON_AddNumberToObject(r, "artifacts_skipped_dropped",
				io ? (double)io->skipped_dropped : 0);
}

void cr_io_audit_start(const struct cr_run *run, void *fields)
{
	cJSON_AddItemToObject(fields, "inputs", inputs_json(run));
	cJSON_AddItemToObject(fields, "digests", digests_json(run));
}

void cr_io_free(struct cr_run *run)
{
	struct cr_io *io = run->io;

	if (!io)
		return;
	for (size_t i = 0; i < io->nin; i++) {
		free(io->in[i].from);
		free(io->in[i].to);
	}
	free(io->in);
	for (size_t i = 0; i < io->nart; i++)
		free(io->art[i].path);
	free(io->art);
	if (io->out_fd >= 0)
		close(io->out_fd);
	if (io->ws_fd >= 0)
		close(io->ws_fd);
	free(io);
	run->io = NULL;
}
